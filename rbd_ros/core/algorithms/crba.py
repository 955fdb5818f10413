"""Composite Rigid Body Algorithm: the joint-space inertia H(q), RBDA Table 6.2
in its world-frame variant (as Pinocchio does).  Table 6.2 as written
(composites in body frames, F carried down the chain by X_j^T one body at a
time) is the twin, ``reference/crba.py``; this kernel computes the same numbers
as follows, every spatial quantity in world coordinates (moments about the
world origin):

    forward pass, i = 1..N:                   (X0_i: world -> body i)
        X_i = X_J(q_i) X_T(i);  X0_i = X_i X0_λ(i);   I^c_i = X0_i^T I_i X0_i
    backward pass, i = N..1:                  (I^c_i is complete: its subtree, i+1.., is done)
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

from .common import (
    BAD_QUAT,
    OK,
    S_column,
    add,
    check_state,
    dot6,
    fill_matrix,
    finite_result,
    jcalc,
    ncols,
    tuple6,
    world_transform,
)
from .joints import FREE, REVOLUTE
from .layout import (
    H_NMIM,
    H_NV,
    armature,
    bodies,
    crba_slots,
    ic_slots,
    offsets,
    rnea_slots,
    scratch,
    vector,
    workspace_size,
    world_slots,
)
from .spatial import ENTRY, INLINE, JIT, XT_I_X, I_m, Xinv_m
from .views import borrow


@njit(**INLINE)
def world_subspace(B, i, X0i, S, t):
    """S[c] = m_i X0_i^-1 (column c of S_i), world coordinates (m_i: the mimic
    multiplier); returns the number of columns.  ``t``: 6 numbers of scratch."""
    jt = B.jtype[i]
    if jt == FREE:
        for c in range(6):
            S_column(B, i, c, t)
            Xinv_m(X0i, t, S[c])
        return 6
    # axis u' = m E0^T u; revolute [u'; r0 x u'], prismatic [0; u']
    m = B.mult[i]
    u = B.axis[i]
    e0 = m * (X0i[0] * u[0] + X0i[3] * u[1] + X0i[6] * u[2])
    e1 = m * (X0i[1] * u[0] + X0i[4] * u[1] + X0i[7] * u[2])
    e2 = m * (X0i[2] * u[0] + X0i[5] * u[1] + X0i[8] * u[2])
    s = S[0]
    if jt == REVOLUTE:
        s[0] = e0
        s[1] = e1
        s[2] = e2
        s[3] = X0i[10] * e2 - X0i[11] * e1
        s[4] = X0i[11] * e0 - X0i[9] * e2
        s[5] = X0i[9] * e1 - X0i[10] * e0
    else:
        s[0] = 0.0
        s[1] = 0.0
        s[2] = 0.0
        s[3] = e0
        s[4] = e1
        s[5] = e2
    return 1


@njit(**INLINE)
def add_H_entries(B, i, n, S, F, fast, H):
    """H entries of body i's n DOFs with its own and with each descendant's
    j = i+1..subend(i): S'_i^T F'_j (``fast``: no mimic joint, no free joint below i,
    so body j's one column is DOF vi(i) + n + (j - i - 1), written once)."""
    di = B.vi[i]
    end = B.subend[i]
    for a in range(n):
        s = tuple6(S[i, a])
        da = di + a
        for b in range(n):              # i's own block, upper triangle
            H[da, di + b] += dot6(s, F[i, b])
        if fast:
            for j in range(i + 1, end + 1):
                val = dot6(s, F[j, 0])
                db = di + n + (j - i - 1)
                H[da, db] = val
                H[db, da] = val
            continue
        for j in range(i + 1, end + 1):
            dj = B.vi[j]
            for b in range(ncols(B, j)):
                val = dot6(s, F[j, b])
                db = dj + b
                if da == db:            # a mimic joint and its master: H_ij + H_ji
                    val += val
                x = H[da, db] + val     # H stays symmetric: H_ab == H_ba before and after
                H[da, db] = x
                H[db, da] = x


@njit(**ENTRY)
def crba_into(md, ws, q, H):
    """H(q) into ``H`` (nv x nv).  Returns a status code (BAD_SHAPE: see rnea_into)."""
    md, ws, q, H = borrow(md), borrow(ws), borrow(q), borrow(H)     # no reference counts below
    B = bodies(md)
    nv = md.view(np.int64)[H_NV]
    st = check_state(md, ws, q, q, q, bool(0), bool(0), H.shape[0] == nv and H.shape[1] == nv)
    if st != OK:
        return st
    offs = offsets(md)
    X = rnea_slots(ws, offs, B.n)[0]
    X0 = world_slots(ws, offs, B.n)
    Ic = ic_slots(ws, offs, B.n)        # I_i, then I^c_i: world coordinates
    S, F = crba_slots(ws, offs, B.n)    # S'_i, F'_i columns: world coordinates
    t = vector(scratch(ws, offs), 0, 6)

    # ---- forward pass: X_i, X0_i, I^c_i = X0_i^T I_i X0_i
    for i in range(B.n):
        if not jcalc(B, i, q, X[i]):
            return BAD_QUAT
        world_transform(B, i, X, X0)
        XT_I_X(X0[i], B.I[i], Ic[i])

    # ---- backward pass: S'_i, F'_i = I^c_i S'_i, H_ij = S'_i^T F'_j, I^c_λ(i) += I^c_i
    fill_matrix(H, 0.0)
    nomimic = md.view(np.int64)[H_NMIM] == 0
    free_min = B.n                      # lowest index of a free-joint body among those done (i+1..)
    for i in range(B.n - 1, -1, -1):
        n = world_subspace(B, i, X0[i], S[i], t)
        for c in range(n):
            I_m(Ic[i], S[i, c], F[i, c])
        add_H_entries(B, i, n, S, F, nomimic and free_min > B.subend[i], H)
        if n == 6:
            free_min = i
        p = B.parent[i]
        if p >= 0:
            add(Ic[p], Ic[i])
    arm = armature(md)
    for k in range(nv):
        H[k, k] += arm[k]
    return finite_result(OK, H)     # BAD_RESULT if finite arguments overflowed


# the entry point is crba_into itself (no wrapper kernel to compile: see aba.aba_k)
crba_k = crba_into


@njit(**JIT)
def crba_batch_k(md, Q, OUT, status, start, stop):
    """OUT[n] = H(Q[n]) for start <= n < stop.
    Serial, one workspace: ``batch.run_batch`` gives each thread one range (the
    kernel releases the GIL, so Python threads run the ranges in parallel; a serial
    kernel is cached by numba, a ``prange`` one would be recompiled in every process)."""
    md, Q, OUT, status = borrow(md), borrow(Q), borrow(OUT), borrow(status)
    ws = np.empty(workspace_size(md))     # owned here (not borrowed): kept alive by its uses
    for n in range(start, stop):
        status[n] = crba_into(md, ws, Q[n], OUT[n])
