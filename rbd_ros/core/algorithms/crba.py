"""Composite Rigid Body Algorithm, world-frame variant (as Pinocchio does).
RBDA Table 6.2 as written (composites in body frames, F carried down the
chain by X_j^T one body at a time) is in ``rbd_ros/core/reference/crba.py``;
this kernel computes the same numbers as follows, every spatial quantity in
world coordinates (moments about the world origin):

    for i = 1..N:                             (X0_i: world -> body i)
        X0_i = X_i X0_λ(i);   I^c_i = X0_i^T I_i X0_i
    for i = N..1:                             (I^c_i is complete: its subtree, i+1.., is done)
        S'_i = m_i X0_i^-1 S_i;   F'_i = I^c_i S'_i
        H_ii += S'_i^T F'_i
        for j = i+1 .. subtree_end(i):        (i's descendants)
            H_ij += S'_i^T F'_j;   H_ji = H_ij
        I^c_λ(i) += I^c_i                     (a plain sum: one frame for all)

S_i^T F_j in world coordinates equals Table 6.2's S_i^T F (F = I^c_j S_j
carried from body j up to body i by the X^T's) because the product of a motion and a force does
not depend on the frame both are written in: each H entry is one 6-term dot
product, and i's descendants are contiguous in the depth-first body order
(no walking up parent pointers).  Only ancestor-descendant pairs are
visited: H has branch-induced sparsity.  m_i is body i's mimic multiplier
(1 for ordinary joints), folded into S' and hence F': a mimic joint's
entries, m_i m_j S_i^T F_j, add into its master's rows and columns, which
is H = G^T H_full G.  Each pair adds its value to H_ab and stores the sum
in H_ba too (H stays symmetric; a pair landing on the diagonal, a mimic
joint and its master one below the other, adds twice).  Without mimic joints each entry is
written once, and a subtree without free joints has one column per body,
DOFs in body order: that loop reads no model data per pair.  The armature
(rotor inertia, per DOF) is added to the diagonal.
"""
import numpy as np
from numba import njit

from .common import BAD_Q, BAD_QUAT, BAD_SHAPE, OK, S_column, all_finite, finite_result
from .joints import FREE, PRISMATIC, REVOLUTE, free_transform, prismatic_transform, revolute_transform
from .layout import (
    C_AXIS,
    C_ET,
    C_JTYPE,
    C_MASS,
    C_MULT,
    C_OFFSET,
    C_PARENT,
    C_QI,
    C_SUBEND,
    C_VI,
    CR_F,
    CR_S,
    H_NB,
    H_NMIM,
    H_NQ,
    H_NV,
    H_NVF,
    H_OFF_ARM,
    H_OFF_BODY,
    IC_I,
    NCOL,
    R_CRBA,
    R_END,
    R_IC,
    R_RNEA,
    R_TMP,
    R_WORLD,
    RN_X,
    W_CRBA,
    WO_X,
    crba_slot,
    ic_slot,
    region_offsets,
    rnea_slot,
    workspace_size,
    world_slot,
)
from .rnea import world_placement
from .spatial import JIT, inertia_mul, inertia_xT_set, x_motion_inv


@njit(**JIT)
def crba_into(md, ws, q, H):
    """H(q) into ``H`` (nv x nv).  Returns a status code (BAD_SHAPE: see rnea_into)."""
    mi = md.view(np.int64)      # the model's integer entries (layout.py)
    nb = mi[H_NB]
    nv = mi[H_NV]
    offs = region_offsets(nb, mi[H_NVF], mi[H_NMIM])
    if q.shape[0] != mi[H_NQ] or H.shape[0] != nv or H.shape[1] != nv or ws.shape[0] < offs[R_END]:
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    oR = offs[R_RNEA]            # X_j (RN_X)
    oW = offs[R_WORLD]           # X0_j (WO_X)
    oI = offs[R_IC]              # I^c_j, world coordinates (IC_I)
    oS = offs[R_CRBA] + CR_S     # with crba_slot: m_j S_j in world coordinates (6 per column)
    oF = offs[R_CRBA] + CR_F     # with crba_slot: I^c_j m_j S_j in world coordinates (6 per column)
    t = offs[R_TMP]              # scratch: a free joint's S column at t
    ob = mi[H_OFF_BODY]     # body i's row is md[ob + NCOL i:] (layout.body_row, read once)
    for i in range(nb):
        o = ob + NCOL * i
        jt = mi[o + C_JTYPE]
        qi = mi[o + C_QI]
        if jt == REVOLUTE:
            revolute_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                               ws, rnea_slot(oR, i) + RN_X)
        elif jt == PRISMATIC:
            prismatic_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                                ws, rnea_slot(oR, i) + RN_X)
        elif not free_transform(md, o + C_ET, q, qi, ws, rnea_slot(oR, i) + RN_X):
            return BAD_QUAT
        world_placement(mi, ws, i, oR, oW)
        inertia_xT_set(ws, world_slot(oW, i) + WO_X, md, o + C_MASS, ws, ic_slot(oI, i) + IC_I)
    for a in range(H.shape[0]):
        for b in range(H.shape[1]):
            H[a, b] = 0.0
    nomimic = mi[H_NMIM] == 0
    free_min = nb                # lowest index of a free-joint body among those done (i+1..)
    for i in range(nb - 1, -1, -1):
        o = ob + NCOL * i
        jt = mi[o + C_JTYPE]
        w = world_slot(oW, i) + WO_X
        c = ic_slot(oI, i) + IC_I
        si = crba_slot(oS, i)
        fi = crba_slot(oF, i)
        n = 1
        if jt == FREE:
            n = 6
            for a in range(6):
                S_column(md, mi, o, a, ws, t)
                x_motion_inv(ws, w, ws, t, ws, si + 6 * a)
                inertia_mul(ws, c, ws, si + 6 * a, ws, fi + 6 * a)
        else:
            # m X0^-1 S: axis u' = m E0^T u; revolute [u'; r0 x u'], prismatic [0; u']
            m = md[o + C_MULT]
            u0 = md[o + C_AXIS]
            u1 = md[o + C_AXIS + 1]
            u2 = md[o + C_AXIS + 2]
            e0 = m * (ws[w] * u0 + ws[w + 3] * u1 + ws[w + 6] * u2)
            e1 = m * (ws[w + 1] * u0 + ws[w + 4] * u1 + ws[w + 7] * u2)
            e2 = m * (ws[w + 2] * u0 + ws[w + 5] * u1 + ws[w + 8] * u2)
            if jt == REVOLUTE:
                r0 = ws[w + 9]
                r1 = ws[w + 10]
                r2 = ws[w + 11]
                ws[si] = e0
                ws[si + 1] = e1
                ws[si + 2] = e2
                ws[si + 3] = r1 * e2 - r2 * e1
                ws[si + 4] = r2 * e0 - r0 * e2
                ws[si + 5] = r0 * e1 - r1 * e0
            else:
                ws[si] = 0.0
                ws[si + 1] = 0.0
                ws[si + 2] = 0.0
                ws[si + 3] = e0
                ws[si + 4] = e1
                ws[si + 5] = e2
            inertia_mul(ws, c, ws, si, ws, fi)
        di = mi[o + C_VI]
        end = mi[o + C_SUBEND]
        fast = nomimic and free_min > end
        if jt == FREE:
            free_min = i
        for a in range(n):
            sa = si + 6 * a
            s0 = ws[sa]
            s1 = ws[sa + 1]
            s2 = ws[sa + 2]
            s3 = ws[sa + 3]
            s4 = ws[sa + 4]
            s5 = ws[sa + 5]
            da = di + a
            # i's own block, upper triangle (a free joint's 6x6 block; a 1-DOF joint's H_ii)
            for b in range(n):
                f = fi + 6 * b
                H[da, di + b] += (s0 * ws[f] + s1 * ws[f + 1] + s2 * ws[f + 2] + s3 * ws[f + 3]
                                  + s4 * ws[f + 4] + s5 * ws[f + 5])
            if fast:
                # no mimic joint, no free joint below i: body j's one column is DOF di + n + (j - i - 1)
                for j in range(i + 1, end + 1):
                    f = fi + W_CRBA * (j - i)
                    val = (s0 * ws[f] + s1 * ws[f + 1] + s2 * ws[f + 2] + s3 * ws[f + 3] + s4 * ws[f + 4]
                           + s5 * ws[f + 5])
                    db = di + n + (j - i - 1)
                    H[da, db] = val
                    H[db, da] = val
                continue
            for j in range(i + 1, end + 1):
                oj = ob + NCOL * j
                dj = mi[oj + C_VI]
                nj = 6 if mi[oj + C_JTYPE] == FREE else 1
                fj = crba_slot(oF, j)
                for b in range(nj):
                    f = fj + 6 * b
                    val = (s0 * ws[f] + s1 * ws[f + 1] + s2 * ws[f + 2] + s3 * ws[f + 3] + s4 * ws[f + 4]
                           + s5 * ws[f + 5])
                    db = dj + b
                    if da == db:                # a mimic joint and its master: H_ij + H_ji
                        val += val
                    x = H[da, db] + val         # H stays symmetric: H_ab == H_ba before and after
                    H[da, db] = x
                    H[db, da] = x
        p = mi[o + C_PARENT]
        if p >= 0:
            cp = ic_slot(oI, p) + IC_I
            for k in range(13):
                ws[cp + k] += ws[c + k]
    oa = mi[H_OFF_ARM]
    for a in range(H.shape[0]):
        H[a, a] += md[oa + a]
    return finite_result(OK, H)     # BAD_RESULT if finite arguments overflowed


# the entry point is crba_into itself (no wrapper kernel to compile: see aba.aba_k)
crba_k = crba_into


@njit(**JIT)
def crba_batch_k(md, Q, OUT, status, start, stop):
    """OUT[n] = H(Q[n]) for start <= n < stop.
    Serial, one workspace: ``batch.run_batch`` gives each thread one range (the
    kernel releases the GIL, so Python threads run the ranges in parallel; a serial
    kernel is cached by numba, a ``prange`` one would be recompiled in every process)."""
    ws = np.empty(workspace_size(md))
    for n in range(start, stop):
        status[n] = crba_into(md, ws, Q[n], OUT[n])
