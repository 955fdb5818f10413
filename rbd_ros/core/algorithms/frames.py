"""Frame kinematics: the Jacobian, velocity and classical acceleration of a frame
(a URDF link, possibly merged into its moving parent by fixed joints); the twin is
``reference/frames.py``.

Every spatial quantity below is in world coordinates at the world origin,
Featherstone's [ω; v_O] order (X0_i: world -> body i, S_i^w = X0_i^-1 S_i):

    forward pass, for every ancestor i of the frame's body b (root first):
        X0_i = X_J(q_i) X_T(i) X0_λ(i)
        vJ_i = S_i^w qd_i,   v_i = v_λ + vJ_i                       (velocity)
        a_i  = a_λ + S_i^w qdd_i + v_λ × vJ_i                        (no gravity)
    J = [S_i^w columns at the joints' DOFs]  (a mimic joint's, times its
                                              multiplier, at its master's DOF)

and then, with the frame's origin p and orientation R in the world, the
result in Pinocchio's reference frames, rows [linear; angular]:

    world                 [v_O; ω]                        (spatial, at the world origin)
    local_world_aligned   [v_O + ω × p; ω]                (at the frame origin, world axes)
    local                 Rᵀ [v_O + ω × p; ω]             (at the frame origin, frame axes)

The acceleration is the *classical* one (Pinocchio's
``getFrameClassicalAcceleration``): the spatial acceleration in the same
reference plus [ω × v_lin; 0], with v_lin the velocity's linear part there.
With qdd = 0 it is J̇ qd.  Bodies that are not ancestors of b are skipped
(i is an ancestor of b, or b itself, iff i <= b <= subtree_end(i)).
"""
import numpy as np
from numba import njit

from .common import (
    BAD_QUAT,
    OK,
    S_column,
    add,
    check_state,
    fill,
    finite_result,
    jcalc,
    joint_velocity,
    world_transform,
)
from .joints import FREE
from .layout import H_NV, bodies, offsets, rnea_slots, scratch, vector, world_slots
from .spatial import ENTRY, INLINE, JIT, Xinv_m, crm
from .views import borrow, strided

WORLD, LOCAL, LOCAL_WORLD_ALIGNED = 0, 1, 2     # api.REFERENCES order


@njit(**INLINE)
def to_reference(m, X0b, placement, reference, out):
    """The world-origin motion m = [ω; v_O] as [linear; angular] in ``reference`` for
    the frame at ``placement`` (12 numbers: R row-major, then p, in body b whose X0 is
    X0b) into out (6, any stride)."""
    w0 = m[0]
    w1 = m[1]
    w2 = m[2]
    l0 = m[3]
    l1 = m[4]
    l2 = m[5]
    E = X0b
    P = placement
    if reference != WORLD:
        # p = r0 + E0ᵀ p_bF (the frame origin, world);  v_p = v_O + ω × p
        p0 = E[9] + E[0] * P[9] + E[3] * P[10] + E[6] * P[11]
        p1 = E[10] + E[1] * P[9] + E[4] * P[10] + E[7] * P[11]
        p2 = E[11] + E[2] * P[9] + E[5] * P[10] + E[8] * P[11]
        l0 += w1 * p2 - w2 * p1
        l1 += w2 * p0 - w0 * p2
        l2 += w0 * p1 - w1 * p0
    if reference == LOCAL:
        # R_F = E0ᵀ R_bF:  x_local = R_Fᵀ x = R_bFᵀ (E0 x)
        a0 = E[0] * l0 + E[1] * l1 + E[2] * l2
        a1 = E[3] * l0 + E[4] * l1 + E[5] * l2
        a2 = E[6] * l0 + E[7] * l1 + E[8] * l2
        b0 = E[0] * w0 + E[1] * w1 + E[2] * w2
        b1 = E[3] * w0 + E[4] * w1 + E[5] * w2
        b2 = E[6] * w0 + E[7] * w1 + E[8] * w2
        l0 = P[0] * a0 + P[3] * a1 + P[6] * a2
        l1 = P[1] * a0 + P[4] * a1 + P[7] * a2
        l2 = P[2] * a0 + P[5] * a1 + P[8] * a2
        w0 = P[0] * b0 + P[3] * b1 + P[6] * b2
        w1 = P[1] * b0 + P[4] * b1 + P[7] * b2
        w2 = P[2] * b0 + P[5] * b1 + P[8] * b2
    out[0] = l0
    out[1] = l1
    out[2] = l2
    out[3] = w0
    out[4] = w1
    out[5] = w2


@njit(**INLINE)
def frame_motion(B, i, X0i, qd, qdd, use_a, v, a, t):
    """v[i] = v_λ + vJ_i and (if use_a) a[i] = a_λ + X0_i^-1 S_i qdd_i + v_λ x vJ_i, world
    frame, vJ_i = X0_i^-1 S_i qd_i.  ``t``: 18 numbers of scratch."""
    body = vector(t, 0, 6)
    vJ = vector(t, 6, 6)
    p = B.parent[i]
    joint_velocity(B, i, qd, body)
    Xinv_m(X0i, body, vJ)                       # vJ, world
    if use_a:
        joint_velocity(B, i, qdd, body)
        Xinv_m(X0i, body, a[i])                 # S qdd, world
        if p >= 0:
            c = vector(t, 12, 6)
            crm(v[p], vJ, c)
            add(a[i], a[p])
            add(a[i], c)
    for k in range(6):
        v[i, k] = vJ[k] + (v[p, k] if p >= 0 else 0.0)


@njit(**INLINE)
def add_jacobian_columns(B, i, X0i, J, t):
    """J[:, dofs of i] += the columns of X0_i^-1 S_i (world-origin motions [ω; v_O]; a
    mimic joint's times its multiplier, at its master's DOF).  ``t``: 12 numbers."""
    col = vector(t, 0, 6)
    w = vector(t, 6, 6)
    n = 6 if B.jtype[i] == FREE else 1
    for c in range(n):
        S_column(B, i, c, col)
        Xinv_m(X0i, col, w)
        d = B.vi[i] + c
        m = B.mult[i]
        for k in range(6):
            J[k, d] += m * w[k]


@njit(**JIT)
def frame_into(md, ws, q, qd, qdd, use_v, use_a, body, placement, reference, out):
    """Frame kinematics into ``out``: the Jacobian (6, nv) if neither ``use_v`` nor
    ``use_a``; the velocity (6,) if ``use_v`` only; the classical acceleration (6,)
    if both.  Returns a status (BAD_SHAPE, having read nothing, if a length does
    not fit the model or ``body`` is no body)."""
    md, ws, q, qd, qdd = borrow(md), borrow(ws), borrow(q), borrow(qd), borrow(qdd)    # no reference counts
    placement, out = borrow(placement), borrow(out)
    B = bodies(md)
    nv = md.view(np.int64)[H_NV]
    jac = not use_v and not use_a
    st = check_state(md, ws, q, qd, qdd, use_v, use_a, placement.shape[0] == 12 and -1 <= body < B.n
                     and out.size == (6 * nv if jac else 6) and 0 <= reference <= 2)
    if st != OK:
        return st
    flat = vector(out, 0, out.size)
    fill(flat, 0.0)
    if body < 0:                # a link fixed to the world: it does not move
        return OK
    offs = offsets(md)
    X, v, a, _ = rnea_slots(ws, offs, B.n)
    X0 = world_slots(ws, offs, B.n)
    t = scratch(ws, offs)
    J = strided(flat, 0, (6, nv), (nv, 1))

    # ---- forward pass over the body's ancestors: X_i, X0_i, then v_i, a_i or J's columns
    for i in range(body + 1):
        if B.subend[i] < body:
            continue            # not an ancestor of body
        if not jcalc(B, i, q, X[i]):
            return BAD_QUAT
        world_transform(B, i, X, X0)
        if use_v:
            frame_motion(B, i, X0[i], qd, qdd, use_a, v, a, t)
        else:
            add_jacobian_columns(B, i, X0[i], J, t)

    # ---- the result in the reference frame, rows [linear; angular]
    if jac:
        m = vector(t, 0, 6)
        for col in range(nv):
            for k in range(6):
                m[k] = J[k, col]
            to_reference(m, X0[body], placement, reference, J[:, col])
    elif not use_a:
        to_reference(v[body], X0[body], placement, reference, flat)
    else:
        classical_acceleration(v[body], a[body], X0[body], placement, reference, flat, t)
    return finite_result(OK, out)


@njit(**INLINE)
def classical_acceleration(vb, ab, X0b, placement, reference, out, t):
    """The spatial acceleration ab and velocity vb in the reference, + [ω × v_lin; 0]."""
    acc = vector(t, 0, 6)
    vel = vector(t, 6, 6)
    to_reference(ab, X0b, placement, reference, acc)
    to_reference(vb, X0b, placement, reference, vel)
    out[0] = acc[0] + vel[4] * vel[2] - vel[5] * vel[1]
    out[1] = acc[1] + vel[5] * vel[0] - vel[3] * vel[2]
    out[2] = acc[2] + vel[3] * vel[1] - vel[4] * vel[0]
    out[3] = acc[3]
    out[4] = acc[4]
    out[5] = acc[5]


# ---- entry points (flags as bool(0) / bool(1): one compiled frame_into, see rnea.py)

@njit(**ENTRY)
def frame_jacobian_k(md, ws, q, body, placement, reference, out):
    return frame_into(md, ws, q, q, q, bool(0), bool(0), body, placement, reference, out)


@njit(**ENTRY)
def frame_velocity_k(md, ws, q, v, body, placement, reference, out):
    return frame_into(md, ws, q, v, v, bool(1), bool(0), body, placement, reference, out)


@njit(**ENTRY)
def frame_acceleration_k(md, ws, q, v, a, body, placement, reference, out):
    return frame_into(md, ws, q, v, a, bool(1), bool(1), body, placement, reference, out)
