"""Coriolis matrix C(q, v): C v = bias - gravity and Hdot - 2 C skew-symmetric.

The Christoffel-consistent factorisation of Echeandia & Wensing (2021),
everything in world coordinates.  For body k with world velocity V_k and
inertia I_k,

    B_k = ½ (V_k x* I_k - I_k V_k x + (I_k V_k) x̄),   (h x̄) y := y x* h

and with composites I^c_i = Σ_{k in subtree(i)} I_k, B^c_i likewise, for j an
ancestor of i (or j = i):

    C_ji = S_j^T (I^c_i Ṡ_i + B^c_i S_i)
    C_ij = Ṡ_j^T I^c_i S_i + S_j^T B^c_i^T S_i

where S, Ṡ = V x S are the joints' motion subspaces in world coordinates.
Mimic joints fold in as C = G^T C_full G.
"""
import numpy as np
from numba import njit

from .common import (
    BAD_Q,
    BAD_QUAT,
    BAD_SHAPE,
    BAD_V,
    OK,
    S_column,
    all_finite,
    dof,
    finite_result,
    joint_motion,
    joint_transform,
    ncols,
)
from .layout import (
    C_MASS,
    C_MULT,
    C_PARENT,
    CO_BC,
    CO_IC,
    CO_S,
    CO_SDOT,
    H_NB,
    H_NMIM,
    H_NQ,
    H_NV,
    H_NVF,
    R_COR,
    R_END,
    R_MAT,
    R_RNEA,
    R_TMP,
    R_WORLD,
    RN_V,
    RN_X,
    WO_X,
    body_row,
    cor_slot,
    region_offsets,
    rnea_slot,
    world_slot,
)
from .rnea import world_placement
from .spatial import JIT, cross_motion, inertia_to_mat6, mat6_xT_X_add, x_motion_inv


@njit(**JIT)
def _dot6(a, oa, b, ob):
    s = 0.0
    for k in range(6):
        s += a[oa + k] * b[ob + k]
    return s


@njit(**JIT)
def _mat6_mul_vec(M, om, x, ox, transpose, out, oo):
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += (M[om + 6 * k + r] if transpose else M[om + 6 * r + k]) * x[ox + k]
        out[oo + r] = s


@njit(**JIT)
def coriolis_into(md, ws, q, v, C):
    mi = md.view(np.int64)      # the model's integer entries (layout.py)
    nb = mi[H_NB]
    nv = mi[H_NV]
    offs = region_offsets(nb, mi[H_NVF], mi[H_NMIM])
    if (q.shape[0] != mi[H_NQ] or v.shape[0] != nv or C.shape[0] != nv or C.shape[1] != nv
            or ws.shape[0] < offs[R_END]):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    oR = offs[R_RNEA]           # X (RN_X), world velocity V (RN_V)
    oW = offs[R_WORLD]          # X0 (WO_X)
    oC = offs[R_COR]            # S and Ṡ in world coordinates, I, B (composites after the backward sweep)
    t = offs[R_TMP]
    # scratch: vJ t..t+6, columns t+6.., 6x6 matrices at t+12 (I), t+48 (crm V), t+84 (tmp), mat6 scratch t+120
    for i in range(nb):
        o = body_row(mi, i)
        x = rnea_slot(oR, i)
        c = cor_slot(oC, i)
        if not joint_transform(md, mi, o, q, ws, x + RN_X):
            return BAD_QUAT
        world_placement(mi, ws, i, oR, oW)
        w = world_slot(oW, i)
        p = mi[o + C_PARENT]
        # world velocity V_i = V_p + X0^-1 S qd
        joint_motion(md, mi, o, v, ws, t)
        x_motion_inv(ws, w + WO_X, ws, t, ws, x + RN_V)
        if p >= 0:
            for k in range(6):
                ws[x + RN_V + k] += ws[rnea_slot(oR, p) + RN_V + k]
        for col in range(ncols(mi, o)):
            S_column(md, mi, o, col, ws, t)
            x_motion_inv(ws, w + WO_X, ws, t, ws, c + CO_S + 6 * col)
            cross_motion(ws, x + RN_V, ws, c + CO_S + 6 * col, ws, c + CO_SDOT + 6 * col)
        # world inertia I = X0^T I_body X0
        inertia_to_mat6(md, o + C_MASS, ws, t + 84)
        for k in range(36):
            ws[c + CO_IC + k] = 0.0
        mat6_xT_X_add(ws, w + WO_X, ws, t + 84, ws, t + 120, ws, c + CO_IC)
        # B = ½ (V x* I - I V x + (I V) x̄);  V x* = -(V x)^T
        cm = t + 48
        for k in range(36):
            ws[cm + k] = 0.0
        for k in range(6):
            ws[t + 6 + k] = 0.0
        for col in range(6):                       # columns of crm(V): V x e_col
            ws[t + 6 + col] = 1.0
            cross_motion(ws, x + RN_V, ws, t + 6, ws, t)
            ws[t + 6 + col] = 0.0
            for r in range(6):
                ws[cm + 6 * r + col] = ws[t + r]
        I6 = c + CO_IC
        for r in range(6):
            for col in range(6):
                s = 0.0
                for k in range(6):
                    # (V x*) I = -crm^T I ;  - I crm
                    s -= ws[cm + 6 * k + r] * ws[I6 + 6 * k + col] + ws[I6 + 6 * r + k] * ws[cm + 6 * k + col]
                ws[c + CO_BC + 6 * r + col] = 0.5 * s
        # (h x̄) with h = I V = [n; f]:  [[-[n]x, -[f]x], [-[f]x, 0]]
        _mat6_mul_vec(ws, I6, ws, x + RN_V, bool(0), ws, t)
        n0, n1, n2 = ws[t], ws[t + 1], ws[t + 2]
        f0, f1, f2 = ws[t + 3], ws[t + 4], ws[t + 5]
        Bc = c + CO_BC
        for (r, col, val) in ((0, 1, n2), (0, 2, -n1), (1, 0, -n2), (1, 2, n0), (2, 0, n1), (2, 1, -n0)):
            ws[Bc + 6 * r + col] += 0.5 * val
        for (r, col, val) in ((0, 1, f2), (0, 2, -f1), (1, 0, -f2), (1, 2, f0), (2, 0, f1), (2, 1, -f0)):
            ws[Bc + 6 * r + 3 + col] += 0.5 * val
            ws[Bc + 6 * (3 + r) + col] += 0.5 * val
    # composites
    for i in range(nb - 1, -1, -1):
        p = mi[body_row(mi, i) + C_PARENT]
        if p >= 0:
            cp = cor_slot(oC, p)
            ci = cor_slot(oC, i)
            for k in range(36):
                ws[cp + CO_IC + k] += ws[ci + CO_IC + k]
                ws[cp + CO_BC + k] += ws[ci + CO_BC + k]
    for a in range(C.shape[0]):
        for b in range(C.shape[1]):
            C[a, b] = 0.0
    f1 = t
    f2 = t + 6
    f3 = t + 12
    tmp = t + 18
    for i in range(nb):
        o = body_row(mi, i)
        c = cor_slot(oC, i)
        mu = md[o + C_MULT]
        for col in range(ncols(mi, o)):
            S = c + CO_S + 6 * col
            Sd = c + CO_SDOT + 6 * col
            _mat6_mul_vec(ws, c + CO_IC, ws, Sd, bool(0), ws, f1)
            _mat6_mul_vec(ws, c + CO_BC, ws, S, bool(0), ws, tmp)
            for k in range(6):
                ws[f1 + k] += ws[tmp + k]
            _mat6_mul_vec(ws, c + CO_IC, ws, S, bool(0), ws, f2)
            _mat6_mul_vec(ws, c + CO_BC, ws, S, bool(1), ws, f3)
            di = dof(mi, o, col)
            for c2 in range(ncols(mi, o)):
                C[dof(mi, o, c2), di] += mu * mu * _dot6(ws, c + CO_S + 6 * c2, ws, f1)
            j = mi[o + C_PARENT]
            while j >= 0:
                oj = body_row(mi, j)
                cj = cor_slot(oC, j)
                mm = mu * md[oj + C_MULT]
                for c2 in range(ncols(mi, oj)):
                    dj = dof(mi, oj, c2)
                    C[dj, di] += mm * _dot6(ws, cj + CO_S + 6 * c2, ws, f1)
                    C[di, dj] += mm * (_dot6(ws, cj + CO_SDOT + 6 * c2, ws, f2)
                                   + _dot6(ws, cj + CO_S + 6 * c2, ws, f3))
                j = mi[oj + C_PARENT]
    return finite_result(OK, C)     # BAD_RESULT if finite arguments overflowed


coriolis_k = coriolis_into   # the entry point (no wrapper kernel: see aba.aba_k)


@njit(**JIT)
def coriolis_transpose_v_k(md, ws, q, v, out):
    """out = C(q, v)ᵀ v, exactly (the momentum observer's term: along any motion
    d/dt (H v) = tau + tau_ext + Cᵀ v - g, because Ḣ = C + Cᵀ).  C is built in the
    workspace's matrix region (which coriolis_into does not use), then multiplied."""
    mi = md.view(np.int64)      # the model's integer entries (layout.py)
    nv = mi[H_NV]
    offs = region_offsets(mi[H_NB], mi[H_NVF], mi[H_NMIM])
    if out.shape[0] != nv or v.shape[0] != nv or ws.shape[0] < offs[R_END]:
        return BAD_SHAPE        # q: coriolis_into checks it
    o = offs[R_MAT]
    C = ws[o:o + nv * nv].reshape((nv, nv))
    st = coriolis_into(md, ws, q, v, C)
    if st != OK:
        return st
    for j in range(nv):
        s = 0.0
        for i in range(nv):
            s += C[i, j] * v[i]
        out[j] = s
    return finite_result(OK, out)
