"""Constrained dynamics kernels (compiled, allocation-free): forward and inverse.

    M q̈ + b = Sᵀτ + Jᵀλ,    J q̈ + γ = −kp e − kd J q̇               (Baumgarte)

Forward (τ given; every DOF actuated, S = I), RBDA §8.? / Featherstone's
"constrained dynamics via LᵀDL":

    M = Lᵀ D L                       (CRBA, LᵀDL with branch-induced sparsity: no M⁻¹)
    q̈₀ = M⁻¹ (τ − b)
    W  = L⁻ᵀ Jᵀ,   K = Wᵀ D⁻¹ W + ε I  (= J M⁻¹ Jᵀ + ε I)
    K λ = −γ − kp e − kd J q̇ − J q̈₀
    q̈ = q̈₀ + L⁻¹ D⁻¹ W λ

K is factorised by Cholesky; if it is rank-deficient (redundant constraints, ε = 0)
λ is K's minimum-norm least-squares solution instead (``solve.lstsq_min_norm``): the
smallest λ with the same Jᵀλ, so q̈ is the same as with any other solution.

Inverse (q̈ = a given; τ on the actuated DOFs A, none on the passive ones P):

    f = M a + b                      (RNEA)
    λ = W^-1/2 μ,  μ = argmin ‖μ‖ among the minimisers of ‖J_Pᵀ W^-1/2 μ − f_P‖
    τ_A = f_A − J_Aᵀ λ,   τ_P = 0

(exactly determined: the unique solution; over-determined: least squares, the
residual reported; under-determined: the λ of least ‖λ‖²_W).
"""
import numpy as np
from numba import njit

from ..algorithms.common import BAD_A, BAD_Q, BAD_RESULT, BAD_SHAPE, BAD_V, OK, SINGULAR, all_finite
from ..algorithms.crba import crba_into
from ..algorithms.layout import H_NB, H_NMIM, H_NQ, H_NV, H_NVF, R_END, R_MAT, region_offsets
from ..algorithms.ltdl import ltdl_factor, ltdl_solve_inplace
from ..algorithms.rnea import rnea_into
from ..algorithms.spatial import JIT, ll_solve
from .kinematics import kinematics
from .layout import (
    CI_M,
    CI_NC,
    ENTRY,
    O_B,
    O_C,
    O_COD,
    O_E,
    O_END,
    O_F,
    O_G,
    O_J,
    O_JV,
    O_K,
    O_K2,
    O_R,
    O_W,
    O_X,
    O_Y,
    offsets,
)
from .solve import cholesky, l_sweep, lstsq_min_norm, lt_sweep

BAD_GAINS = 101         # kp, kd or ε not a number in [0, MAX_GAIN] (the fast path's check)
MAX_GAIN = 1e12
CHOL_TOL = 1e-12        # K's pivots below this times its largest diagonal: rank-deficient
RANK_TOL = 1e-12        # least squares: |R_kk| <= RANK_TOL |R_00| counts as rank lost


@njit(**JIT)
def _sizes_ok(md, ws, ci, cws, q, v, use_v):
    mi = md.view(np.int64)
    offs = region_offsets(mi[H_NB], mi[H_NVF], mi[H_NMIM])
    co = offsets(ci[CI_NC], ci[CI_M], mi[H_NV])
    return (q.shape[0] == mi[H_NQ] and (not use_v or v.shape[0] == mi[H_NV]) and ws.shape[0] >= offs[R_END]
            and cws.shape[0] >= co[O_END] and ci[2] == mi[H_NV])


@njit(**ENTRY)
def kinematics_k(md, ws, ci, cf, cws, q, v, use_v, want_j, e, J, gamma, jv):
    """Public entry of the constraint kinematics: e (m), J (m x nv) if ``want_j``, γ and
    J q̇ (m) if ``use_v``, copied out of the workspace."""
    if not _sizes_ok(md, ws, ci, cws, q, v, use_v):
        return BAD_SHAPE
    m = ci[CI_M]
    nv = ci[2]
    if e.shape[0] != m or (want_j and J.size != m * nv) or (use_v and (gamma.shape[0] != m or jv.shape[0] != m)):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if use_v and not all_finite(v):
        return BAD_V
    st = kinematics(md, ws, ci, cf, cws, q, v, use_v, want_j)
    if st != OK:
        return st
    co = offsets(ci[CI_NC], m, nv)
    for r in range(m):
        e[r] = cws[co[O_E] + r]
        if use_v:
            gamma[r] = cws[co[O_G] + r]
            jv[r] = cws[co[O_JV] + r]
    if want_j:
        flat = J.reshape(-1)
        for k in range(m * nv):
            flat[k] = cws[co[O_J] + k]
        if not all_finite(flat):
            return BAD_RESULT
    if not all_finite(e) or (use_v and not (all_finite(gamma) and all_finite(jv))):
        return BAD_RESULT
    return OK


@njit(**ENTRY)
def cfd_into(md, ws, ci, cf, cws, q, v, tau, kp, kd, eps, qdd, lam, info):
    """Constrained forward dynamics (module docstring) into ``qdd`` (nv) and ``lam`` (m).
    info[0] = 1 if K was rank-deficient (λ the minimum-norm one), info[1] = K's rank.
    BAD_GAINS (nothing read) unless kp, kd and eps are in [0, MAX_GAIN]."""
    mi = md.view(np.int64)
    nv = mi[H_NV]
    m = ci[CI_M]
    if (not _sizes_ok(md, ws, ci, cws, q, v, True) or tau.shape[0] != nv or qdd.shape[0] != nv
            or lam.shape[0] != m or info.shape[0] < 3):
        return BAD_SHAPE
    if not (0.0 <= kp <= MAX_GAIN and 0.0 <= kd <= MAX_GAIN and 0.0 <= eps <= MAX_GAIN):
        return BAD_GAINS
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    if not all_finite(tau):
        return BAD_A
    st = kinematics(md, ws, ci, cf, cws, q, v, True, True)
    if st != OK:
        return st
    co = offsets(ci[CI_NC], m, nv)
    x = cws[co[O_X]:co[O_X] + nv]
    st = rnea_into(md, ws, q, v, v, ws[:0].reshape((0, 6)), False, bool(1), bool(0), x)   # b
    if st != OK:
        return st
    o_mat = region_offsets(mi[H_NB], mi[H_NVF], mi[H_NMIM])[R_MAT]
    LD = ws[o_mat:o_mat + nv * nv].reshape((nv, nv))
    st = crba_into(md, ws, q, LD)
    if st != OK:
        return st
    if not ltdl_factor(mi, LD):
        return SINGULAR
    for k in range(nv):
        x[k] = tau[k] - x[k]
    ltdl_solve_inplace(mi, LD, x)                                   # q̈₀
    oj = co[O_J]
    ow = co[O_W]
    for r in range(m):                                              # W = L⁻ᵀ Jᵀ, row r = column r
        for k in range(nv):
            cws[ow + r * nv + k] = cws[oj + r * nv + k]
        lt_sweep(mi, LD, cws[ow + r * nv:ow + (r + 1) * nv])
    K = cws[co[O_K]:co[O_K] + m * m].reshape((m, m))
    K2 = cws[co[O_K2]:co[O_K2] + m * m].reshape((m, m))
    for r in range(m):
        for s in range(r + 1):
            acc = 0.0
            for k in range(nv):
                acc += cws[ow + r * nv + k] * cws[ow + s * nv + k] / LD[k, k]
            K[r, s] = acc
            K[s, r] = acc
        K[r, r] += eps
    rhs = cws[co[O_R]:co[O_R] + m]
    for r in range(m):
        acc = 0.0
        for k in range(nv):
            acc += cws[oj + r * nv + k] * x[k]
        rhs[r] = -cws[co[O_G] + r] - kp * cws[co[O_E] + r] - kd * cws[co[O_JV] + r] - acc
    for r in range(m):
        for s in range(m):
            K2[r, s] = K[r, s]
    if cholesky(K, m, CHOL_TOL):
        ll_solve(K, m, rhs)
        for r in range(m):
            lam[r] = rhs[r]
        info[0] = 0.0
        info[1] = m
    else:
        cod = cws[co[O_COD]:co[O_COD] + 3 * m]
        lstsq_min_norm(K2, m, m, rhs, lam, cod, RANK_TOL, info[:3])
        info[0] = 1.0
    y = cws[co[O_Y]:co[O_Y] + nv]
    for k in range(nv):
        y[k] = 0.0
    for r in range(m):
        lr = lam[r]
        for k in range(nv):
            y[k] += cws[ow + r * nv + k] * lr
    for k in range(nv):
        y[k] /= LD[k, k]
    l_sweep(mi, LD, y)
    for k in range(nv):
        qdd[k] = x[k] + y[k]
    if not (all_finite(qdd) and all_finite(lam)):
        return BAD_RESULT
    return OK


@njit(**ENTRY)
def cid_into(md, ws, ci, cf, cws, q, v, a, passive, active, scale, tau, lam, info):
    """Constrained inverse dynamics (module docstring) into ``tau`` (nv; 0 on the passive
    DOFs) and ``lam`` (m).  info: [‖Sᵀτ + Jᵀλ − (M a + b)‖, ‖J a + γ‖, rank of J_Pᵀ,
    its condition estimate (solve.lstsq_min_norm)] and, if it has a fifth entry,
    max |(M a + b)_P| (the scale of the passive equations)."""
    mi = md.view(np.int64)
    nv = mi[H_NV]
    m = ci[CI_M]
    npas = passive.shape[0]
    if (not _sizes_ok(md, ws, ci, cws, q, v, True) or a.shape[0] != nv or tau.shape[0] != nv or lam.shape[0] != m
            or scale.shape[0] != m or npas + active.shape[0] != nv or info.shape[0] < 4):
        return BAD_SHAPE
    for k in range(npas):
        if passive[k] < 0 or passive[k] >= nv:
            return BAD_SHAPE
    for k in range(active.shape[0]):
        if active[k] < 0 or active[k] >= nv:
            return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    if not all_finite(a):
        return BAD_A
    st = kinematics(md, ws, ci, cf, cws, q, v, True, True)
    if st != OK:
        return st
    co = offsets(ci[CI_NC], m, nv)
    f = cws[co[O_F]:co[O_F] + nv]
    st = rnea_into(md, ws, q, v, a, ws[:0].reshape((0, 6)), False, bool(1), bool(1), f)   # M a + b
    if st != OK:
        return st
    oj = co[O_J]
    acc2 = 0.0
    for r in range(m):                                  # ‖J a + γ‖
        acc = cws[co[O_G] + r]
        for k in range(nv):
            acc += cws[oj + r * nv + k] * a[k]
        acc2 += acc * acc
    B = cws[co[O_B]:co[O_B] + npas * m].reshape((npas, m))
    c = cws[co[O_C]:co[O_C] + max(npas, m)]
    fmax = 0.0
    for i in range(npas):
        p = passive[i]
        c[i] = f[p]
        fmax = max(fmax, abs(f[p]))
        for r in range(m):
            B[i, r] = cws[oj + r * nv + p] * scale[r]
    mu = cws[co[O_R]:co[O_R] + m]
    cod = cws[co[O_COD]:co[O_COD] + 3 * m]
    sol = cws[co[O_COD] + 3 * m:co[O_COD] + 3 * m + 4]
    lstsq_min_norm(B, npas, m, c, mu, cod, RANK_TOL, sol)
    for r in range(m):
        lam[r] = mu[r] * scale[r]
    for k in range(nv):
        tau[k] = 0.0
    for i in range(active.shape[0]):
        p = active[i]
        acc = f[p]
        for r in range(m):
            acc -= cws[oj + r * nv + p] * lam[r]
        tau[p] = acc
    info[0] = sol[0]
    info[1] = np.sqrt(acc2)
    info[2] = sol[1]
    info[3] = sol[2]
    if info.shape[0] > 4:
        info[4] = fmax
    if not (all_finite(tau) and all_finite(lam)):
        return BAD_RESULT
    return OK
