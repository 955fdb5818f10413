"""Composite Rigid Body Algorithm, world-frame variant (as Pinocchio does).
RBDA Table 6.2 as written (F carried down the chain by X_j^T one body at a
time) is in ``rbd_ros/core/reference/crba.py``; this kernel computes the same
numbers as follows:

    I^c_i = I_i                                       (body frame)
    for i = N..1:
        I^c_λ(i) += X_i^T I^c_i X_i
    for i = 1..N:                                     (X0_i: world -> body i)
        S_i^0 = X0_i^-1 S_i;   F_i^0 = X0_i^T (I^c_i S_i)   (world coordinates)
    for i = 1..N:
        H_ii = S_i^0T F_i^0
        for j = i+1 .. subtree_end(i):                (i's descendants)
            H_ij = H_ji^T = S_i^0T F_j^0

S_i^0T F_j^0 equals Table 6.2's S_i^T F (F = I^c_j S_j carried from body j
up to body i by the X^T's) because the product of a motion and a force does
not depend on the frame both are written in: each H entry is one 6-term dot
product, and i's descendants are contiguous in the depth-first body order
(no walking up parent pointers).  Only ancestor-descendant pairs are
visited: H has branch-induced sparsity.  Mimic joints scale by their
multipliers m_i m_j and add into their masters' rows and columns, which is
H = G^T H_full G.  The armature (rotor inertia, per DOF) is added to the
diagonal.
"""
import numpy as np
from numba import njit

from ..joints import PRISMATIC, REVOLUTE, free_transform, prismatic_transform, revolute_transform
from ..layout import (
    C_AXIS,
    C_ET,
    C_JTYPE,
    C_MASS,
    C_MULT,
    C_OFFSET,
    C_PARENT,
    C_QI,
    C_SUBEND,
    CR_F,
    CR_S,
    H_NB,
    H_NMIM,
    H_NVF,
    H_OFF_ARM,
    IC_I,
    R_CRBA,
    R_IC,
    R_RNEA,
    R_TMP,
    R_WORLD,
    RN_X,
    WO_X,
    body_row,
    crba_slot,
    ic_slot,
    region_offsets,
    rnea_slot,
    workspace_size,
    world_slot,
)
from ..spatial import JIT, inertia_mul, inertia_xT_add, x_motion_inv, xT_force_add
from .common import BAD_Q, BAD_QUAT, OK, S_column, all_finite, dof, finite_result, ncols
from .rnea import world_placement


@njit(**JIT)
def crba_into(md, ws, q, H):
    """H(q) into ``H`` (nv x nv).  Returns a status code."""
    nb = int(md[H_NB])
    if not all_finite(q):
        return BAD_Q
    offs = region_offsets(nb, int(md[H_NVF]), int(md[H_NMIM]))
    oR = offs[R_RNEA]            # X_j (RN_X)
    oW = offs[R_WORLD]           # X0_j (WO_X)
    oI = offs[R_IC]              # I^c_j, body frame (IC_I)
    oS = offs[R_CRBA] + CR_S     # with crba_slot: S_j in world coordinates (6 per column)
    oF = offs[R_CRBA] + CR_F     # with crba_slot: I^c_j S_j in world coordinates (6 per column)
    t = offs[R_TMP]              # scratch: S at t, I^c S at t+6
    for i in range(nb):
        o = body_row(md, i)
        jt = int(md[o + C_JTYPE])
        qi = int(md[o + C_QI])
        if jt == REVOLUTE:
            revolute_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                               ws, rnea_slot(oR, i) + RN_X)
        elif jt == PRISMATIC:
            prismatic_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                                ws, rnea_slot(oR, i) + RN_X)
        elif not free_transform(md, o + C_ET, q, qi, ws, rnea_slot(oR, i) + RN_X):
            return BAD_QUAT
        for k in range(13):
            ws[ic_slot(oI, i) + IC_I + k] = md[o + C_MASS + k]
    for i in range(nb - 1, -1, -1):
        p = int(md[body_row(md, i) + C_PARENT])
        if p >= 0:
            inertia_xT_add(ws, rnea_slot(oR, i) + RN_X, ws, ic_slot(oI, i) + IC_I, ws, ic_slot(oI, p) + IC_I)
    for a in range(H.shape[0]):
        for b in range(H.shape[1]):
            H[a, b] = 0.0
    # S_i and F_i = I^c_i S_i in world coordinates, one 6-vector per column
    for i in range(nb):
        o = body_row(md, i)
        world_placement(md, ws, i, oR, oW)
        w = world_slot(oW, i) + WO_X
        for c in range(ncols(md, o)):
            S_column(md, o, c, ws, t)
            x_motion_inv(ws, w, ws, t, ws, crba_slot(oS, i) + 6 * c)
            inertia_mul(ws, ic_slot(oI, i) + IC_I, ws, t, ws, t + 6)
            for k in range(6):
                ws[crba_slot(oF, i) + 6 * c + k] = 0.0
            xT_force_add(ws, w, ws, t + 6, ws, crba_slot(oF, i) + 6 * c)
    # H_ij = S_i . F_j for j = i and every descendant j (bodies i+1..subtree end:
    # contiguous, no walking up parent pointers), then mirrored
    for i in range(nb):
        o = body_row(md, i)
        mi = md[o + C_MULT]
        end = int(md[o + C_SUBEND])
        for c in range(ncols(md, o)):
            si = crba_slot(oS, i) + 6 * c
            s0 = ws[si]
            s1 = ws[si + 1]
            s2 = ws[si + 2]
            s3 = ws[si + 3]
            s4 = ws[si + 4]
            s5 = ws[si + 5]
            di = dof(md, o, c)
            for c2 in range(ncols(md, o)):
                f = crba_slot(oF, i) + 6 * c2
                H[di, dof(md, o, c2)] += mi * mi * (s0 * ws[f] + s1 * ws[f + 1] + s2 * ws[f + 2] + s3 * ws[f + 3]
                                                    + s4 * ws[f + 4] + s5 * ws[f + 5])
            for j in range(i + 1, end + 1):
                oj = body_row(md, j)
                mm = mi * md[oj + C_MULT]
                for c2 in range(ncols(md, oj)):
                    f = crba_slot(oF, j) + 6 * c2
                    val = mm * (s0 * ws[f] + s1 * ws[f + 1] + s2 * ws[f + 2] + s3 * ws[f + 3] + s4 * ws[f + 4]
                                + s5 * ws[f + 5])
                    dj = dof(md, oj, c2)
                    H[di, dj] += val
                    H[dj, di] += val
    oa = int(md[H_OFF_ARM])
    for k in range(H.shape[0]):
        H[k, k] += md[oa + k]
    return OK


@njit(**JIT)
def crba_k(md, ws, q, H):
    return finite_result(crba_into(md, ws, q, H), H)


@njit(**JIT)
def crba_batch_k(md, Q, OUT, status, start, stop):
    """OUT[n] = H(Q[n]) for start <= n < stop.
    Serial, one workspace: ``dynamics._run_batch`` gives each thread one range (the
    kernel releases the GIL, so Python threads run the ranges in parallel; a serial
    kernel is cached by numba, a ``prange`` one would be recompiled in every process)."""
    ws = np.empty(workspace_size(md))
    for n in range(start, stop):
        status[n] = crba_into(md, ws, Q[n], OUT[n])
