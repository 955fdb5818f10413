"""Joint-torque regressor Y(q, v, a): tau = Y pi, pi the bodies' inertial
parameters [m, m c, Ixx Ixy Iyy Ixz Iyz Izz] (about each body's origin, body
frame; Pinocchio's ``dynamicParameters`` order).  The readable form, with the
derivation, is ``reference/regressor.py``; this kernel computes the same
numbers as follows:

    forward (body frames, as RNEA, a_0 = -a_g):  v_i, a_i;  X0_i;  S_j^w = X0_j^-1 S_j
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
    BAD_A,
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
    C_MULT,
    C_PARENT,
    CO_S,
    H_GRAV,
    H_NB,
    H_NMIM,
    H_NQ,
    H_NV,
    H_NVF,
    R_COR,
    R_END,
    R_RNEA,
    R_TMP,
    R_WORLD,
    RN_A,
    RN_V,
    RN_X,
    WO_X,
    body_row,
    cor_slot,
    region_offsets,
    rnea_slot,
    workspace_size,
    world_slot,
)
from .rnea import world_placement
from .spatial import JIT, cross_motion, x_motion, x_motion_inv

N_PARAMS = 10
# the unit symmetric matrices of [Ixx, Ixy, Iyy, Ixz, Iyz, Izz]: (row, col) of each
_ROW = (0, 0, 1, 0, 1, 2)
_COL = (0, 1, 1, 2, 2, 2)


@njit(**JIT)
def _cross3(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(**JIT)
def _body_force_columns(ws, x, A):
    """A[0:60] = the 6 x 10 matrix A_i (column-major: column k at A[6k:6k+6]) of body
    i's net force f_i = A_i pi_i, from v_i, a_i at ws[x + RN_V], ws[x + RN_A] (body frame)."""
    w0, w1, w2 = ws[x + RN_V], ws[x + RN_V + 1], ws[x + RN_V + 2]
    v0, v1, v2 = ws[x + RN_V + 3], ws[x + RN_V + 4], ws[x + RN_V + 5]
    al0, al1, al2 = ws[x + RN_A], ws[x + RN_A + 1], ws[x + RN_A + 2]
    a0, a1, a2 = ws[x + RN_A + 3], ws[x + RN_A + 4], ws[x + RN_A + 5]
    for k in range(60):
        A[k] = 0.0
    # m: [0; a_l + w x v_l]
    c0, c1, c2 = _cross3(w0, w1, w2, v0, v1, v2)
    A[3] = a0 + c0
    A[4] = a1 + c1
    A[5] = a2 + c2
    # h = e_c (c = 0, 1, 2)
    for c in range(3):
        e0 = 1.0 if c == 0 else 0.0
        e1 = 1.0 if c == 1 else 0.0
        e2 = 1.0 if c == 2 else 0.0
        o = 6 * (1 + c)
        ea0, ea1, ea2 = _cross3(e0, e1, e2, a0, a1, a2)          # e x a_l
        ev0, ev1, ev2 = _cross3(e0, e1, e2, v0, v1, v2)          # e x v_l
        ew0, ew1, ew2 = _cross3(e0, e1, e2, w0, w1, w2)          # e x w
        t0, t1, t2 = _cross3(w0, w1, w2, ev0, ev1, ev2)          # w x (e x v_l)
        s0, s1, s2 = _cross3(v0, v1, v2, ew0, ew1, ew2)          # v_l x (e x w)
        A[o] = ea0 + t0 - s0
        A[o + 1] = ea1 + t1 - s1
        A[o + 2] = ea2 + t2 - s2
        eal0, eal1, eal2 = _cross3(e0, e1, e2, al0, al1, al2)    # e x alpha
        u0, u1, u2 = _cross3(w0, w1, w2, ew0, ew1, ew2)          # w x (e x w)
        A[o + 3] = -eal0 - u0
        A[o + 4] = -eal1 - u1
        A[o + 5] = -eal2 - u2
    # Ibar entries [Ixx, Ixy, Iyy, Ixz, Iyz, Izz]: [E alpha + w x (E w); 0], E the unit
    # symmetric matrix of the entry (E x = e_r x_c + e_c x_r for r != c, e_r x_r for r == c)
    for k in range(6):
        r = _ROW[k]
        c = _COL[k]
        ea0 = 0.0
        ea1 = 0.0
        ea2 = 0.0
        ew0 = 0.0
        ew1 = 0.0
        ew2 = 0.0
        xc_a = al0 if c == 0 else (al1 if c == 1 else al2)
        xc_w = w0 if c == 0 else (w1 if c == 1 else w2)
        if r == 0:
            ea0 += xc_a
            ew0 += xc_w
        elif r == 1:
            ea1 += xc_a
            ew1 += xc_w
        else:
            ea2 += xc_a
            ew2 += xc_w
        if r != c:
            xr_a = al0 if r == 0 else (al1 if r == 1 else al2)
            xr_w = w0 if r == 0 else (w1 if r == 1 else w2)
            if c == 0:
                ea0 += xr_a
                ew0 += xr_w
            elif c == 1:
                ea1 += xr_a
                ew1 += xr_w
            else:
                ea2 += xr_a
                ew2 += xr_w
        x0, x1, x2 = _cross3(w0, w1, w2, ew0, ew1, ew2)
        o = 6 * (4 + k)
        A[o] = ea0 + x0
        A[o + 1] = ea1 + x1
        A[o + 2] = ea2 + x2


@njit(**JIT)
def regressor_into(md, ws, q, v, a, out):
    """Y (nv x 10 nb) into ``out``.  Returns a status (BAD_SHAPE, having read
    nothing, if a length does not fit the model)."""
    mi = md.view(np.int64)      # the model's integer entries (layout.py)
    nb = mi[H_NB]
    nv = mi[H_NV]
    offs = region_offsets(nb, mi[H_NVF], mi[H_NMIM])
    if (q.shape[0] != mi[H_NQ] or v.shape[0] != nv or a.shape[0] != nv or out.shape[0] != nv
            or out.shape[1] != N_PARAMS * nb or ws.shape[0] < offs[R_END]):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    if not all_finite(a):
        return BAD_A
    oR = offs[R_RNEA]
    oW = offs[R_WORLD]
    oC = offs[R_COR]            # S_j^w columns (CO_S)
    t = offs[R_TMP]             # A_i at t (60), its world form at t + 60 (60), scratch at t + 120
    g0 = md[H_GRAV]
    g1 = md[H_GRAV + 1]
    g2 = md[H_GRAV + 2]
    for r in range(nv):
        for c in range(out.shape[1]):
            out[r, c] = 0.0
    for i in range(nb):
        o = body_row(mi, i)
        x = rnea_slot(oR, i)
        if not joint_transform(md, mi, o, q, ws, x + RN_X):
            return BAD_QUAT
        world_placement(mi, ws, i, oR, oW)
        w = world_slot(oW, i) + WO_X
        for c in range(ncols(mi, o)):
            S_column(md, mi, o, c, ws, t + 120)     # the joint's own S (the multiplier: below)
            x_motion_inv(ws, w, ws, t + 120, ws, cor_slot(oC, i) + CO_S + 6 * c)
        # v_i = X v_p + S qd,  a_i = X a_p + S qdd + v_i x S qd  (body frame, a_0 = -a_g)
        p = mi[o + C_PARENT]
        joint_motion(md, mi, o, v, ws, t + 126)
        joint_motion(md, mi, o, a, ws, t + 132)
        if p >= 0:
            x_motion(ws, x + RN_X, ws, rnea_slot(oR, p) + RN_V, ws, x + RN_V)
            x_motion(ws, x + RN_X, ws, rnea_slot(oR, p) + RN_A, ws, x + RN_A)
        else:
            for k in range(6):
                ws[x + RN_V + k] = 0.0
            for k in range(3):
                ws[x + RN_A + k] = 0.0
                ws[x + RN_A + 3 + k] = -(ws[x + RN_X + 3 * k] * g0 + ws[x + RN_X + 3 * k + 1] * g1
                                       + ws[x + RN_X + 3 * k + 2] * g2)
        for k in range(6):
            ws[x + RN_V + k] += ws[t + 126 + k]
            ws[x + RN_A + k] += ws[t + 132 + k]
        cross_motion(ws, x + RN_V, ws, t + 126, ws, t + 138)
        for k in range(6):
            ws[x + RN_A + k] += ws[t + 138 + k]
        # A_i, then in world coordinates: X0ᵀ f = [Eᵀ n + r x Eᵀ f; Eᵀ f] per column
        _body_force_columns(ws, x, ws[t:t + 60])
        for k in range(N_PARAMS):
            c = t + 6 * k
            cw = t + 60 + 6 * k
            for r in range(3):
                ws[cw + 3 + r] = ws[w + r] * ws[c + 3] + ws[w + 3 + r] * ws[c + 4] + ws[w + 6 + r] * ws[c + 5]
                ws[cw + r] = ws[w + r] * ws[c] + ws[w + 3 + r] * ws[c + 1] + ws[w + 6 + r] * ws[c + 2]
            f0, f1, f2 = ws[cw + 3], ws[cw + 4], ws[cw + 5]
            r0, r1, r2 = ws[w + 9], ws[w + 10], ws[w + 11]
            y0, y1, y2 = _cross3(r0, r1, r2, f0, f1, f2)
            ws[cw] += y0
            ws[cw + 1] += y1
            ws[cw + 2] += y2
        # Y[dofs_j, 10 i + k] += m_j S_j^w . A^w_i[:, k] for j = i and its ancestors
        j = i
        while j >= 0:
            oj = body_row(mi, j)
            mult = md[oj + C_MULT]
            for c in range(ncols(mi, oj)):
                s = cor_slot(oC, j) + CO_S + 6 * c
                d = dof(mi, oj, c)
                for k in range(N_PARAMS):
                    cw = t + 60 + 6 * k
                    acc = 0.0
                    for r in range(6):
                        acc += ws[s + r] * ws[cw + r]
                    out[d, N_PARAMS * i + k] += mult * acc
            j = mi[oj + C_PARENT]
    return finite_result(OK, out)


@njit(**JIT)
def regressor_k(md, ws, q, v, a, out):
    return regressor_into(md, ws, q, v, a, out)


@njit(**JIT)
def regressor_batch_k(md, Q, V, A, OUT, status, start, stop):
    """OUT[n] = Y(Q[n], V[n], A[n]) for start <= n < stop (serial, one workspace;
    ``batch.run_batch`` gives each thread one range)."""
    ws = np.empty(workspace_size(md))
    for n in range(start, stop):
        status[n] = regressor_into(md, ws, Q[n], V[n], A[n], OUT[n])
