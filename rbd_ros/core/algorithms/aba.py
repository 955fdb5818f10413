"""Articulated-Body Algorithm, world-frame variant (Pinocchio's arrangement);
a second forward-dynamics path.  RBDA Table 7.1 as written (body frames, a
congruence X_i^T I^a X_i per body) is in ``rbd_ros/core/reference/aba.py``.

Every quantity below is in world coordinates, moments about the world
origin: X0_i is the world -> body-i transform, S_i the joint's motion
subspace mapped to the world (S_i = X0_i^-1 S_i^body), I_i = X0_i^T I_i^body
X0_i.  The kernel runs (1-DOF joints; the free joint below):

    v_0 = 0,  a_0 = -a_g
    for i = 1..N:                                   (forward)
        X_i = X_J(q_i) X_T(i);  X0_i = X_i X0_λ
        vJ_i = X0_i^-1 S_i^body qd_i;  v_i = v_λ + vJ_i;  c_i = v_λ x vJ_i
        I^A_i = I_i;  p^A_i = v_i x* I_i v_i - f_i^ext      (f^ext mapped to world if local)
    for i = N..1:                                   (backward)
        U_i = I^A_i S_i;  D_i = S_i^T U_i + armature_i;  u_i = tau_i - S_i^T p^A_i
        if λ(i) != 0:
            I^A_λ += I^A_i - U_i D_i^-1 U_i^T                       (no congruence)
            p^A_λ += p^A_i + (I^A_i - U_i D_i^-1 U_i^T) c_i + U_i D_i^-1 u_i
    for i = 1..N:                                   (forward)
        a' = a_λ + c_i
        qdd_i = D_i^-1 (u_i - U_i^T a')
        a_i = a' + S_i qdd_i

Because all spatial quantities share one frame, a child's articulated
inertia adds to its parent's directly; c_i = v_λ x vJ_i equals the
textbook v_i x S_i qd_i (vJ_i x vJ_i = 0), and a_0 = -a_g applies the
gravity.  A free joint (S invertible) passes no inertia to its parent
(I^a = 0) and the world force p^a = X0_i^T tau_i^body; its acceleration is
a_i = (I^A_i)^-1 (p^a - p^A_i) by a 6x6 Cholesky solve, and qdd_i is
X0_i (a_i - a') in the body frame.

Mimic joints (``mimic=True``) are kinematic constraints qdd_dep = m qdd_master,
which ABA cannot eliminate on the way.  It runs on the *full* coordinates
(every mimic joint a DOF, tau = 0 on it) and adds the constraint forces J^T λ
(J qdd_full = 0, J G = 0): with Y = H_full^-1 J^T from one bias-free ABA
sweep per constraint (the articulated inertias are reused),

    qdd_full = qdd_0 + Y λ,   (J Y) λ = -J qdd_0

which is the reduced dynamics exactly, at O(n (1 + n_mimic)).

The armature (rotor inertia) of a DOF adds to its joint's D_i (Pinocchio's
``StU += armature``); mimic joints have none in the full coordinates (their
master's counts), so the reduced H gets exactly diag(armature).

Fallback.  The full coordinates can be singular where the reduced ones are
not (a mimic joint moving a massless child, or a massless free body whose
only motion the mimic hinge also produces), and world-frame sweeps lose
precision in nearly singular articulated inertias.  Every pivot is therefore
tested relative to its own scale: D_i <= PIVOT_TOL sum_r S_r^2 I^A_rr for
1-DOF joints, each Cholesky pivot of a free joint's I^A against its diagonal
entry.  When one fails (or the mimic system K is not positive definite), the
kernel returns SINGULAR and its caller (``dynamics.aba``, single calls and
each such batch row) computes the result by CRBA + LᵀDL instead
(``forward_dynamics``), which reports SINGULAR only if H itself is singular.
With mimic joints a pivot is also tested against the largest one, D_i <=
PIVOT_TOL max_j D_j: a body much lighter than the rest (a finger of 1e-12 kg
on a mimic master) makes the full coordinates ill-conditioned although the
reduced H is not (scaled cond(H) ~ 15 on panda), and the constraint solve
through Y = H_full^-1 J^T then loses eps / ratio of accuracy.  (D_i is a
scalar, the same in every frame.)
So aba returns what forward_dynamics returns wherever that works; only the
rare fallback costs the CRBA path's time.  (The kernel does not call the
CRBA path itself: numba would then re-optimise all of forward dynamics
inside every ABA kernel, seconds of compile for a path that rarely runs.)
The tolerance is 1e-6, not ~eps: a pivot ratio r
costs ABA about eps / r of relative accuracy, and the world-frame sweeps
meet small ratios far from the world origin (a robot 1 km away: r ~ 1e-8,
errors ~ 4e-8 without the fallback).  Real robots near the origin stay
above ~1e-3 (panda, ur5, talos, solo12, anymal: no fallback).
"""
import numpy as np
from numba import njit

from .common import (
    BAD_A,
    BAD_FEXT,
    BAD_Q,
    BAD_QUAT,
    BAD_RESULT,
    BAD_SHAPE,
    BAD_V,
    OK,
    SINGULAR,
    S_column,
    all_finite,
    fext_fits,
    joint_motion,
)
from .joints import FREE, PRISMATIC, REVOLUTE, free_transform, prismatic_transform, revolute_transform
from .layout import (
    AB_C,
    AB_D,
    AB_IA,
    AB_PA,
    AB_S,
    AB_TAU,
    AB_U,
    C_AXIS,
    C_ET,
    C_FV,
    C_JTYPE,
    C_MASS,
    C_MIMIC,
    C_MULT,
    C_OFFSET,
    C_PARENT,
    C_QI,
    C_VI,
    H_GRAV,
    H_NB,
    H_NMIM,
    H_NQ,
    H_NV,
    H_NVF,
    H_OFF_ARM,
    R_ABA,
    R_END,
    R_K,
    R_RNEA,
    R_TMP,
    R_VEC,
    R_WORLD,
    R_Y,
    RN_A,
    RN_V,
    RN_X,
    WO_X,
    aba_slot,
    body_row,
    mimic_pair,
    region_offsets,
    rnea_slot,
    workspace_size,
    world_slot,
)
from .rnea import world_placement
from .spatial import (
    JIT,
    chol6_solve,
    cross_force_add,
    cross_motion,
    inertia_mul,
    inertia_to_mat6,
    inertia_xT_add,
    x_motion,
    x_motion_inv,
    xT_force_add,
)

PIVOT_TOL = 1e-6        # relative pivot below which the CRBA path is used (module docstring)


@njit(**JIT)
def _articulated_inertias(md, mi, ws, oA):
    """Backward sweep for I^A, U, D (independent of v, tau, f_ext), world frame.
    Returns False if some D is not positive relative to its scale (and, with mimic
    joints, to the largest D: see the module docstring)."""
    nb = mi[H_NB]
    dmax = 0.0
    for i in range(nb - 1, -1, -1):
        o = body_row(mi, i)
        b = aba_slot(oA, i)
        p = mi[o + C_PARENT]
        if mi[o + C_JTYPE] == FREE:
            # S invertible: I^a = 0, nothing reaches the parent; keep I^A for the solve
            for k in range(36):
                ws[b + AB_D + k] = ws[b + AB_IA + k]
            continue
        s = aba_slot(oA, i) + AB_S
        D = 0.0
        scale = 0.0
        for r in range(6):
            ur = 0.0
            for k in range(6):
                ur += ws[b + AB_IA + 6 * r + k] * ws[s + k]
            ws[b + AB_U + r] = ur
            D += ws[s + r] * ur
            scale += ws[s + r] * ws[s + r] * ws[b + AB_IA + 7 * r]
        if mi[o + C_MIMIC] == 0:
            D += md[mi[H_OFF_ARM] + mi[o + C_VI]]
        if not D > PIVOT_TOL * scale:
            return False
        ws[b + AB_D] = D
        if D > dmax:
            dmax = D
        if p >= 0:
            bp = aba_slot(oA, p)
            for r in range(6):
                ur = ws[b + AB_U + r] / D
                for c in range(6):
                    ws[bp + AB_IA + 6 * r + c] += ws[b + AB_IA + 6 * r + c] - ur * ws[b + AB_U + c]
    if mi[H_NMIM] > 0:
        for i in range(nb):
            if mi[body_row(mi, i) + C_JTYPE] != FREE and not ws[aba_slot(oA, i) + AB_D] > PIVOT_TOL * dmax:
                return False
    return True


@njit(**JIT)
def _force_and_accel_sweeps(md, mi, ws, oR, oW, oA, t, tau_full, with_bias, qdd_full):
    """Backward sweep for u and p^A, forward sweep for the accelerations (world
    frame).  ``p^A`` and ``c`` must hold the bias terms (or zeros when not
    ``with_bias``).  Writes qdd_full (user order per body).  False if a free
    joint's I^A is not positive definite."""
    nb = mi[H_NB]
    for i in range(nb - 1, -1, -1):
        o = body_row(mi, i)
        b = aba_slot(oA, i)
        fv = mi[o + C_FV]
        p = mi[o + C_PARENT]
        if mi[o + C_JTYPE] == FREE:
            # tau as a world force F = X0^T tau_body; p^a = F goes to the parent
            for k in range(6):
                ws[t + (k + 3) % 6] = tau_full[fv + k]
            for k in range(6):
                ws[b + AB_TAU + k] = 0.0
            xT_force_add(ws, world_slot(oW, i) + WO_X, ws, t, ws, b + AB_TAU)
            if p >= 0:
                for k in range(6):
                    ws[aba_slot(oA, p) + AB_PA + k] += ws[b + AB_TAU + k]
        else:
            s = aba_slot(oA, i) + AB_S
            u = tau_full[fv]
            for k in range(6):
                u -= ws[s + k] * ws[b + AB_PA + k]
            ws[b + AB_TAU] = u
            if p >= 0:
                # p^a = p^A + I^a c + U D^-1 u,  I^a c = I^A c - U (U^T c) / D
                D = ws[b + AB_D]
                Uc = 0.0
                for k in range(6):
                    Uc += ws[b + AB_U + k] * ws[b + AB_C + k]
                bp = aba_slot(oA, p)
                for r in range(6):
                    s_r = ws[b + AB_PA + r] + ws[b + AB_U + r] * (u - Uc) / D
                    for k in range(6):
                        s_r += ws[b + AB_IA + 6 * r + k] * ws[b + AB_C + k]
                    ws[bp + AB_PA + r] += s_r
    g0 = md[H_GRAV]
    g1 = md[H_GRAV + 1]
    g2 = md[H_GRAV + 2]
    ap = t + 6         # a' = a_λ + c
    for i in range(nb):
        o = body_row(mi, i)
        b = aba_slot(oA, i)
        x = rnea_slot(oR, i)
        p = mi[o + C_PARENT]
        fv = mi[o + C_FV]
        if p >= 0:
            for k in range(6):
                ws[ap + k] = ws[rnea_slot(oR, p) + RN_A + k] + ws[b + AB_C + k]
        else:
            for k in range(3):
                ws[ap + k] = ws[b + AB_C + k]
                ws[ap + 3 + k] = ws[b + AB_C + 3 + k]
            if with_bias:          # a_0 = -a_g, world frame
                ws[ap + 3] -= g0
                ws[ap + 4] -= g1
                ws[ap + 5] -= g2
        if mi[o + C_JTYPE] == FREE:
            # a_i = (I^A)^-1 (F - p^A);  qdd = X0 (a_i - a') in the body frame
            for k in range(6):
                ws[t + 12 + k] = ws[b + AB_TAU + k] - ws[b + AB_PA + k]
            if not chol6_solve(ws, b + AB_D, ws, t + 12, ws, t + 18, ws, x + RN_A):
                return False
            for k in range(6):      # pivots L_kk^2 relative to the diagonal of I^A
                if not ws[t + 18 + 7 * k] * ws[t + 18 + 7 * k] > PIVOT_TOL * ws[b + AB_D + 7 * k]:
                    return False
            for k in range(6):
                ws[t + 12 + k] = ws[x + RN_A + k] - ws[ap + k]
            x_motion(ws, world_slot(oW, i) + WO_X, ws, t + 12, ws, t + 54)
            for k in range(6):
                qdd_full[fv + k] = ws[t + 54 + (k + 3) % 6]
        else:
            s = aba_slot(oA, i) + AB_S
            Ua = 0.0
            for k in range(6):
                Ua += ws[b + AB_U + k] * ws[ap + k]
            qdd = (ws[b + AB_TAU] - Ua) / ws[b + AB_D]
            qdd_full[fv] = qdd
            for k in range(6):
                ws[x + RN_A + k] = ws[ap + k] + ws[s + k] * qdd
    return True


@njit(**JIT)
def aba_into(md, ws, q, v, tau, fext, fext_world, out):
    """ABA; SINGULAR where a pivot is (nearly) singular, for the caller's CRBA + LᵀDL
    fallback (module docstring).  One function, not a wrapper around the sweeps: numba
    re-optimises a callee in each caller, ~1.7 s of compile per layer."""
    mi = md.view(np.int64)      # the model's integer entries (layout.py)
    nb = mi[H_NB]
    nvf = mi[H_NVF]
    nmim = mi[H_NMIM]
    nv = mi[H_NV]
    offs = region_offsets(nb, nvf, nmim)
    if (q.shape[0] != mi[H_NQ] or v.shape[0] != nv or tau.shape[0] != nv or out.shape[0] != nv
            or ws.shape[0] < offs[R_END] or not fext_fits(fext, nb)):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    if not all_finite(tau):
        return BAD_A
    has_fext = fext.shape[0] == nb
    if has_fext:
        for i in range(nb):
            if not all_finite(fext[i]):
                return BAD_FEXT
    oR = offs[R_RNEA]
    oW = offs[R_WORLD]                 # X0
    oA = offs[R_ABA]
    t = offs[R_TMP]
    ov = offs[R_VEC]                   # full vectors: tau_full, qdd_full, rhs
    tau_full = ws[ov:ov + nvf]
    qdd_full = ws[ov + nvf:ov + 2 * nvf]
    rhs = ws[ov + 2 * nvf:ov + 3 * nvf]

    # ---- forward sweep (world frame): X0, S, v, c, I^A = I, p^A
    for i in range(nb):
        o = body_row(mi, i)
        x = rnea_slot(oR, i)
        b = aba_slot(oA, i)
        w = world_slot(oW, i)
        jt = mi[o + C_JTYPE]
        qi = mi[o + C_QI]
        if jt == REVOLUTE:
            revolute_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                               ws, x + RN_X)
        elif jt == PRISMATIC:
            prismatic_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                                ws, x + RN_X)
        elif not free_transform(md, o + C_ET, q, qi, ws, x + RN_X):
            return BAD_QUAT
        p = mi[o + C_PARENT]
        world_placement(mi, ws, i, oR, oW)
        # vJ = S qd (body frame) -> world; S itself -> world (1-DOF joints)
        joint_motion(md, mi, o, v, ws, t)
        x_motion_inv(ws, w + WO_X, ws, t, ws, t + 6)
        if jt != FREE:
            S_column(md, mi, o, 0, ws, t)
            x_motion_inv(ws, w + WO_X, ws, t, ws, b + AB_S)
        if p >= 0:
            cross_motion(ws, rnea_slot(oR, p) + RN_V, ws, t + 6, ws, b + AB_C)   # c = v_λ x vJ = v_i x vJ
            for k in range(6):
                ws[x + RN_V + k] = ws[rnea_slot(oR, p) + RN_V + k] + ws[t + 6 + k]
        else:
            for k in range(6):
                ws[b + AB_C + k] = 0.0
                ws[x + RN_V + k] = ws[t + 6 + k]
        # I^A = X0^T I X0 (about the world origin), p^A = v x* I v - f_ext
        for k in range(13):
            ws[t + 12 + k] = 0.0
        inertia_xT_add(ws, w + WO_X, md, o + C_MASS, ws, t + 12)
        inertia_to_mat6(ws, t + 12, ws, b + AB_IA)
        inertia_mul(ws, t + 12, ws, x + RN_V, ws, t)
        for k in range(6):
            ws[b + AB_PA + k] = 0.0
        cross_force_add(ws, x + RN_V, ws, t, ws, b + AB_PA)
        if has_fext:
            if fext_world:
                for k in range(6):
                    ws[b + AB_PA + k] -= fext[i, k]
            else:
                for k in range(6):
                    ws[t + k] = 0.0
                xT_force_add(ws, w + WO_X, fext[i], 0, ws, t)
                for k in range(6):
                    ws[b + AB_PA + k] -= ws[t + k]
        # tau in full coordinates: the user's for DOF joints, 0 on mimic joints
        fv = mi[o + C_FV]
        vi = mi[o + C_VI]
        if mi[o + C_JTYPE] == FREE:
            for k in range(6):
                tau_full[fv + k] = tau[vi + k]
        else:
            tau_full[fv] = 0.0 if mi[o + C_MIMIC] != 0 else tau[vi]

    # ok False: a pivot failed -> SINGULAR (the caller falls back to CRBA + LᵀDL)
    ok = _articulated_inertias(md, mi, ws, oA) and \
        _force_and_accel_sweeps(md, mi, ws, oR, oW, oA, t, tau_full, bool(1), qdd_full)
    if ok and nmim > 0:
        # Y = H_full^-1 J^T, one bias-free sweep per constraint row
        oY = offs[R_Y]
        oK = offs[R_K]
        for c in range(nmim):
            ib, kb = mimic_pair(mi, c)
            for k in range(nvf):
                rhs[k] = 0.0
            rhs[mi[body_row(mi, ib) + C_FV]] = 1.0
            rhs[mi[body_row(mi, kb) + C_FV]] -= md[body_row(mi, ib) + C_MULT]
            for i in range(nb):
                b = aba_slot(oA, i)
                for k in range(6):
                    ws[b + AB_PA + k] = 0.0
                    ws[b + AB_C + k] = 0.0
            if not _force_and_accel_sweeps(md, mi, ws, oR, oW, oA, t, rhs, bool(0),
                                           ws[oY + c * nvf:oY + (c + 1) * nvf]):
                ok = False
                break
        if ok:
            # K = J Y (symmetric positive definite), rhs = -J qdd_0
            for r in range(nmim):
                ib, kb = mimic_pair(mi, r)
                fi = mi[body_row(mi, ib) + C_FV]
                fk = mi[body_row(mi, kb) + C_FV]
                m = md[body_row(mi, ib) + C_MULT]
                for c in range(nmim):
                    ws[oK + r * nmim + c] = ws[oY + c * nvf + fi] - m * ws[oY + c * nvf + fk]
                rhs[r] = -(qdd_full[fi] - m * qdd_full[fk])
            K = ws[oK:oK + nmim * nmim].reshape((nmim, nmim))
            lam = rhs[:nmim]
            ok = _cholesky_solve(K, lam)
            if ok:
                for c in range(nmim):
                    for k in range(nvf):
                        qdd_full[k] += ws[oY + c * nvf + k] * lam[c]
    if not ok:
        return SINGULAR

    for i in range(nb):
        o = body_row(mi, i)
        if mi[o + C_MIMIC] != 0:
            continue
        fv = mi[o + C_FV]
        vi = mi[o + C_VI]
        for k in range(6 if mi[o + C_JTYPE] == FREE else 1):
            out[vi + k] = qdd_full[fv + k]
    if not all_finite(out):
        return BAD_RESULT
    return OK


@njit(**JIT)
def _cholesky_solve(K, x):
    """Solve K y = x in place (K symmetric positive definite, overwritten)."""
    n = K.shape[0]
    for i in range(n):
        for j in range(i + 1):
            s = K[i, j]
            for k in range(j):
                s -= K[i, k] * K[j, k]
            if i == j:
                if not s > 0.0:
                    return False
                K[i, i] = np.sqrt(s)
            else:
                K[i, j] = s / K[j, j]
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= K[i, k] * x[k]
        x[i] = s / K[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= K[k, i] * x[k]
        x[i] = s / K[i, i]
    return True


# The single-call entry point is aba_into itself, with or without f_ext (a (0, 6) fext:
# none): a wrapper kernel would cost ~1.6 s of compile (numba re-optimises the whole
# linked callee in every caller) for ~50 ns less argument passing.
aba_k = aba_into


@njit(**JIT)
def aba_batch_k(md, Q, V, T, fext, fext_world, OUT, status, start, stop):
    """Row n of OUT = aba(Q[n], V[n], T[n], fext[n]) for start <= n < stop.
    Serial, one workspace: ``batch.run_batch`` gives each thread one range (the
    kernel releases the GIL, so Python threads run the ranges in parallel; a serial
    kernel is cached by numba, a ``prange`` one would be recompiled in every process)."""
    N = Q.shape[0]
    ws = np.empty(workspace_size(md))
    nofext = ws[:0].reshape((0, 6))
    for n in range(start, stop):
        if fext.shape[0] == N:
            status[n] = aba_into(md, ws, Q[n], V[n], T[n], fext[n], fext_world, OUT[n])
        else:
            status[n] = aba_into(md, ws, Q[n], V[n], T[n], nofext, fext_world, OUT[n])
