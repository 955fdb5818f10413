"""Composite Rigid Body Algorithm (RBDA Table 6.2).

    I^c_i = I_i
    for i = N..1:
        I^c_λ(i) += X_i^T I^c_i X_i
    for i = 1..N:
        F = I^c_i S_i
        H_ii = S_i^T F
        j = i
        while λ(j) != 0:
            F = X_j^T F;  j = λ(j)
            H_ij = F^T S_j;  H_ji = H_ij^T

Only ancestor pairs are visited: H has branch-induced sparsity.  Instead of
carrying F down the chain one X_j^T at a time, F and every S_j are expressed
once in the world frame, where H_ij = F^T S_j is a 6-term dot product (the
same numbers; Pinocchio does the same).  Mimic joints
add ``m_a m_b`` times their entry to their masters' rows and columns, which
is H = G^T H_full G.
"""
import numpy as np
from numba import njit, prange

from ..joints import PRISMATIC, REVOLUTE, free_transform, prismatic_transform, revolute_transform
from ..layout import (C_AXIS, C_ET, C_JTYPE, C_MASS, C_MULT, C_OFFSET, C_PARENT, C_QI, H_NB, H_NMIM, H_NVF, W_COR,
                      W_IC, W_RNEA, W_WORLD, body_row, region_offsets, workspace_size)
from ..spatial import JIT, inertia_mul, inertia_xT_add, x_motion_inv, xT_force_add
from .rnea import world_placement
from .common import BAD_Q, BAD_QUAT, OK, S_column, S_dot, all_finite, dof, ncols


@njit(**JIT)
def crba_into(md, ws, q, H):
    """H(q) into ``H`` (nv x nv).  Returns a status code."""
    nb = int(md[H_NB])
    if not all_finite(q):
        return BAD_Q
    offs = region_offsets(nb, int(md[H_NVF]), int(md[H_NMIM]))
    oR = offs[0]
    oW = offs[1]
    oI = offs[2]
    oS = offs[4]                # S_j in world coordinates (6 per column)
    t = offs[5]                 # scratch: S at t, F at t+6, X^T F at t+12
    for i in range(nb):
        o = body_row(md, i)
        jt = int(md[o + C_JTYPE])
        qi = int(md[o + C_QI])
        if jt == REVOLUTE:
            revolute_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                               ws, oR + i * W_RNEA)
        elif jt == PRISMATIC:
            prismatic_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                                ws, oR + i * W_RNEA)
        elif not free_transform(md, o + C_ET, q, qi, ws, oR + i * W_RNEA):
            return BAD_QUAT
        for k in range(13):
            ws[oI + i * W_IC + k] = md[o + C_MASS + k]
    for i in range(nb - 1, -1, -1):
        p = int(md[body_row(md, i) + C_PARENT])
        if p >= 0:
            inertia_xT_add(ws, oR + i * W_RNEA, ws, oI + i * W_IC, ws, oI + p * W_IC)
    for a in range(H.shape[0]):
        for b in range(H.shape[1]):
            H[a, b] = 0.0
    for i in range(nb):
        o = body_row(md, i)
        world_placement(md, ws, i, oR, oW)
        for c in range(ncols(md, o)):       # S_i in world coordinates
            S_column(md, o, c, ws, t)
            x_motion_inv(ws, oW + i * W_WORLD, ws, t, ws, oS + i * W_COR + 6 * c)
    for i in range(nb):
        o = body_row(md, i)
        mi = md[o + C_MULT]
        for c in range(ncols(md, o)):
            # F = I^c_i S_i, then in world coordinates
            S_column(md, o, c, ws, t)
            inertia_mul(ws, oI + i * W_IC, ws, t, ws, t + 6)
            di = dof(md, o, c)
            for c2 in range(ncols(md, o)):
                H[dof(md, o, c2), di] += mi * mi * S_dot(md, o, c2, ws, t + 6)
            p = int(md[o + C_PARENT])
            if p < 0:
                continue
            for k in range(6):
                ws[t + 12 + k] = 0.0
            xT_force_add(ws, oW + i * W_WORLD, ws, t + 6, ws, t + 12)
            j = p
            while j >= 0:
                oj = body_row(md, j)
                mm = mi * md[oj + C_MULT]
                for c2 in range(ncols(md, oj)):
                    sj = oS + j * W_COR + 6 * c2
                    val = mm * (ws[sj] * ws[t + 12] + ws[sj + 1] * ws[t + 13] + ws[sj + 2] * ws[t + 14]
                                + ws[sj + 3] * ws[t + 15] + ws[sj + 4] * ws[t + 16] + ws[sj + 5] * ws[t + 17])
                    dj = dof(md, oj, c2)
                    H[dj, di] += val
                    H[di, dj] += val
                j = int(md[oj + C_PARENT])
    return OK


@njit(**JIT)
def crba_k(md, ws, q, H):
    return crba_into(md, ws, q, H)


@njit(**dict(JIT, parallel=True))
def crba_batch_k(md, Q, OUT, status, nthreads):
    N = Q.shape[0]
    nth = min(nthreads, max(N, 1))
    chunk = (N + nth - 1) // nth
    wsize = workspace_size(md)
    for t in prange(nth):
        ws = np.empty(wsize)
        for n in range(t * chunk, min(N, (t + 1) * chunk)):
            status[n] = crba_into(md, ws, Q[n], OUT[n])
