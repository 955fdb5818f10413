"""Joint-torque regressor Y(q, v, a): tau = Y pi, pi the bodies' inertial
parameters [m, m c, Ixx Ixy Iyy Ixz Iyz Izz] (about each body's origin, body
frame; Pinocchio's ``dynamicParameters`` order).  The readable form, with the
derivation, is ``reference/regressor.py``; this kernel computes the same
numbers as follows:

    forward pass (body frames, as RNEA, a_0 = -a_g):  v_i, a_i;  X0_i;  S_j^w = X0_j^-1 S_j
    body i's net force is linear in pi_i:  f_i = I_i a_i + v_i x* I_i v_i = A_i pi_i, with
        A_m    = [0; a_l + w x v_l]
        A_h(e) = [e x a_l + w x (e x v_l) - v_l x (e x w);  -e x alpha - w x (e x w)]
        A_I(E) = [E alpha + w x (E w); 0]      (E: the unit symmetric matrix of the entry)
    (v_i = [w; v_l], a_i = [alpha; a_l]); then in world coordinates A^w_i = X0_iᵀ A_i and
        Y[dofs_j, 10 i + k] += S_j^wᵀ A^w_i[:, k]      for every j on the path i -> root

(the product of a motion and a force is the same in every frame: one 6-term dot
product per entry, no transform down the chain).  A mimic joint's S carries its
multiplier and sits at its master's DOF (tau = Gᵀ tau_full), as everywhere.
"""
import numpy as np
from numba import njit

from .common import (
    BAD_QUAT,
    OK,
    S_column,
    add_joint_motion,
    check_state,
    dot6,
    fill,
    fill_matrix,
    finite_result,
    jcalc,
    ncols,
    world_transform,
)
from .layout import H_NV, bodies, cor_slots, gravity, offsets, rnea_slots, scratch, vector, workspace_size, world_slots
from .rnea import parent_motion
from .spatial import ENTRY, INLINE, JIT, Xinv_m, XT_f_add
from .views import borrow, contiguous

N_PARAMS = 10
# the unit symmetric matrices of [Ixx, Ixy, Iyy, Ixz, Iyz, Izz]: (row, col) of each
_ROW = (0, 0, 1, 0, 1, 2)
_COL = (0, 1, 1, 2, 2, 2)


@njit(**INLINE)
def _cross3(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(**INLINE)
def _put3(x, o, a):
    x[o] = a[0]
    x[o + 1] = a[1]
    x[o + 2] = a[2]


@njit(**JIT)
def body_force_columns(vi, ai, A):
    """A (10 x 6): row k is column k of the 6 x 10 matrix A_i of body i's net force
    f_i = A_i pi_i, from its velocity vi = [w; v_l] and acceleration ai = [alpha; a_l]
    (body frame; module docstring)."""
    w0, w1, w2 = vi[0], vi[1], vi[2]
    v0, v1, v2 = vi[3], vi[4], vi[5]
    al0, al1, al2 = ai[0], ai[1], ai[2]
    a0, a1, a2 = ai[3], ai[4], ai[5]
    fill_matrix(A, 0.0)
    c = _cross3(w0, w1, w2, v0, v1, v2)          # m: [0; a_l + w x v_l]
    A[0, 3] = a0 + c[0]
    A[0, 4] = a1 + c[1]
    A[0, 5] = a2 + c[2]
    for k in range(3):                           # h = e_k
        e0 = 1.0 if k == 0 else 0.0
        e1 = 1.0 if k == 1 else 0.0
        e2 = 1.0 if k == 2 else 0.0
        ea = _cross3(e0, e1, e2, a0, a1, a2)     # e x a_l
        ev = _cross3(e0, e1, e2, v0, v1, v2)     # e x v_l
        ew = _cross3(e0, e1, e2, w0, w1, w2)     # e x w
        wev = _cross3(w0, w1, w2, ev[0], ev[1], ev[2])     # w x (e x v_l)
        vew = _cross3(v0, v1, v2, ew[0], ew[1], ew[2])     # v_l x (e x w)
        eal = _cross3(e0, e1, e2, al0, al1, al2)           # e x alpha
        wew = _cross3(w0, w1, w2, ew[0], ew[1], ew[2])     # w x (e x w)
        _put3(A[1 + k], 0, (ea[0] + wev[0] - vew[0], ea[1] + wev[1] - vew[1], ea[2] + wev[2] - vew[2]))
        _put3(A[1 + k], 3, (-eal[0] - wew[0], -eal[1] - wew[1], -eal[2] - wew[2]))
    # Ibar entries [Ixx, Ixy, Iyy, Ixz, Iyz, Izz]: [E alpha + w x (E w); 0], E the unit
    # symmetric matrix of the entry (E x = e_r x_c + e_c x_r for r != c, e_r x_r for r == c)
    for k in range(6):
        r = _ROW[k]
        c = _COL[k]
        ea0, ea1, ea2 = _unit_sym(r, c, al0, al1, al2)     # E alpha
        ew0, ew1, ew2 = _unit_sym(r, c, w0, w1, w2)        # E w
        x = _cross3(w0, w1, w2, ew0, ew1, ew2)
        _put3(A[4 + k], 0, (ea0 + x[0], ea1 + x[1], ea2 + x[2]))


@njit(**INLINE)
def _unit_sym(r, c, x0, x1, x2):
    """E x for E the unit symmetric matrix of entry (r, c): e_r x_c + e_c x_r (r != c),
    e_r x_r (r == c)."""
    xc = x0 if c == 0 else (x1 if c == 1 else x2)
    y0 = xc if r == 0 else 0.0
    y1 = xc if r == 1 else 0.0
    y2 = xc if r == 2 else 0.0
    if r != c:
        xr = x0 if r == 0 else (x1 if r == 1 else x2)
        y0 += xr if c == 0 else 0.0
        y1 += xr if c == 1 else 0.0
        y2 += xr if c == 2 else 0.0
    return y0, y1, y2


@njit(**JIT)
def regressor_into(md, ws, q, qd, qdd, Y):
    """Y (nv x 10 nb) into ``Y``.  Returns a status (BAD_SHAPE, having read
    nothing, if a length does not fit the model)."""
    md, ws, q, qd, qdd, Y = borrow(md), borrow(ws), borrow(q), borrow(qd), borrow(qdd), borrow(Y)
    B = bodies(md)
    nv = md.view(np.int64)[H_NV]
    st = check_state(md, ws, q, qd, qdd, bool(1), bool(1), Y.shape[0] == nv and Y.shape[1] == N_PARAMS * B.n)
    if st != OK:
        return st
    offs = offsets(md)
    X, v, a, _ = rnea_slots(ws, offs, B.n)
    X0 = world_slots(ws, offs, B.n)
    S = cor_slots(ws, offs, B.n)[0]              # S_j^w columns
    t = scratch(ws, offs)
    A = contiguous(t, 0, (N_PARAMS, 6))          # A_i's columns, then (Aw) their world forms
    Aw = contiguous(t, 60, (N_PARAMS, 6))
    col = vector(t, 120, 6)
    g = gravity(md)
    fill_matrix(Y, 0.0)

    # ---- forward pass: X_i, X0_i, S_i^w, v_i, a_i (body frame), A_i, A^w_i = X0_i^T A_i
    for i in range(B.n):
        if not jcalc(B, i, q, X[i]):
            return BAD_QUAT
        world_transform(B, i, X, X0)
        for c in range(ncols(B, i)):
            S_column(B, i, c, col)               # the joint's own S (the multiplier: below)
            Xinv_m(X0[i], col, S[i, c])
        parent_motion(X[i], v, a, B.parent[i], g, bool(1), bool(1), v[i], a[i])
        add_joint_motion(B, i, qd, qdd, bool(1), bool(1), v[i], a[i])
        body_force_columns(v[i], a[i], A)
        for k in range(N_PARAMS):
            fill(Aw[k], 0.0)
            XT_f_add(X0[i], A[k], Aw[k])
        # Y[dofs_j, 10 i + k] += m_j S_j^w . A^w_i[:, k] for j = i and its ancestors
        j = i
        while j >= 0:
            for c in range(ncols(B, j)):
                d = B.vi[j] + c
                for k in range(N_PARAMS):
                    Y[d, N_PARAMS * i + k] += B.mult[j] * dot6(S[j, c], Aw[k])
            j = B.parent[j]
    return finite_result(OK, Y)


@njit(**ENTRY)
def regressor_k(md, ws, q, v, a, out):
    return regressor_into(md, ws, q, v, a, out)


@njit(**JIT)
def regressor_batch_k(md, Q, V, A, OUT, status, start, stop):
    """OUT[n] = Y(Q[n], V[n], A[n]) for start <= n < stop (serial, one workspace;
    ``batch.run_batch`` gives each thread one range)."""
    md, Q, V, A, OUT, status = borrow(md), borrow(Q), borrow(V), borrow(A), borrow(OUT), borrow(status)
    ws = np.empty(workspace_size(md))     # owned here (not borrowed): kept alive by its uses
    for n in range(start, stop):
        status[n] = regressor_into(md, ws, Q[n], V[n], A[n], OUT[n])
