"""Frame kinematics: the Jacobian, velocity and classical acceleration of a frame
(a URDF link, possibly merged into its moving parent by fixed joints).

Every spatial quantity below is in world coordinates at the world origin,
Featherstone's [ω; v_O] order (X0_i: world -> body i, S_i^w = X0_i^-1 S_i):

    for every ancestor i of the frame's body b (root first):
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

from .common import BAD_A, BAD_Q, BAD_QUAT, BAD_SHAPE, BAD_V, OK, all_finite, finite_result, joint_motion
from .joints import FREE, PRISMATIC, REVOLUTE, free_transform, prismatic_transform, revolute_transform
from .layout import (
    C_AXIS,
    C_ET,
    C_JTYPE,
    C_MULT,
    C_OFFSET,
    C_PARENT,
    C_QI,
    C_SUBEND,
    C_VI,
    H_NB,
    H_NMIM,
    H_NQ,
    H_NV,
    H_NVF,
    R_END,
    R_RNEA,
    R_TMP,
    R_WORLD,
    RN_A,
    RN_V,
    RN_X,
    WO_X,
    body_row,
    region_offsets,
    rnea_slot,
    world_slot,
)
from .rnea import world_placement
from .spatial import JIT, cross_motion, x_motion_inv

WORLD, LOCAL, LOCAL_WORLD_ALIGNED = 0, 1, 2     # api.REFERENCES order


@njit(**JIT)
def _to_reference(ws, m, E0, placement, reference, out, oo, stride):
    """The world-origin motion [ω; v_O] at ws[m:m+6] as [linear; angular] in
    ``reference`` for the frame at ``placement`` (12 numbers, R row-major then p, in
    body b whose X0 is at ws[E0:E0+12]) into out[oo], out[oo + stride], ... (6 entries)."""
    w0 = ws[m]
    w1 = ws[m + 1]
    w2 = ws[m + 2]
    l0 = ws[m + 3]
    l1 = ws[m + 4]
    l2 = ws[m + 5]
    if reference != WORLD:
        # p = r0 + E0ᵀ p_bF (the frame origin, world);  v_p = v_O + ω × p
        p0 = ws[E0 + 9] + ws[E0] * placement[9] + ws[E0 + 3] * placement[10] + ws[E0 + 6] * placement[11]
        p1 = ws[E0 + 10] + ws[E0 + 1] * placement[9] + ws[E0 + 4] * placement[10] + ws[E0 + 7] * placement[11]
        p2 = ws[E0 + 11] + ws[E0 + 2] * placement[9] + ws[E0 + 5] * placement[10] + ws[E0 + 8] * placement[11]
        l0 += w1 * p2 - w2 * p1
        l1 += w2 * p0 - w0 * p2
        l2 += w0 * p1 - w1 * p0
    if reference == LOCAL:
        # R_F = E0ᵀ R_bF:  x_local = R_Fᵀ x = R_bFᵀ (E0 x)
        a0 = ws[E0] * l0 + ws[E0 + 1] * l1 + ws[E0 + 2] * l2
        a1 = ws[E0 + 3] * l0 + ws[E0 + 4] * l1 + ws[E0 + 5] * l2
        a2 = ws[E0 + 6] * l0 + ws[E0 + 7] * l1 + ws[E0 + 8] * l2
        b0 = ws[E0] * w0 + ws[E0 + 1] * w1 + ws[E0 + 2] * w2
        b1 = ws[E0 + 3] * w0 + ws[E0 + 4] * w1 + ws[E0 + 5] * w2
        b2 = ws[E0 + 6] * w0 + ws[E0 + 7] * w1 + ws[E0 + 8] * w2
        l0 = placement[0] * a0 + placement[3] * a1 + placement[6] * a2
        l1 = placement[1] * a0 + placement[4] * a1 + placement[7] * a2
        l2 = placement[2] * a0 + placement[5] * a1 + placement[8] * a2
        w0 = placement[0] * b0 + placement[3] * b1 + placement[6] * b2
        w1 = placement[1] * b0 + placement[4] * b1 + placement[7] * b2
        w2 = placement[2] * b0 + placement[5] * b1 + placement[8] * b2
    out[oo] = l0
    out[oo + stride] = l1
    out[oo + 2 * stride] = l2
    out[oo + 3 * stride] = w0
    out[oo + 4 * stride] = w1
    out[oo + 5 * stride] = w2


@njit(**JIT)
def frame_into(md, ws, q, v, a, use_v, use_a, body, placement, reference, out):
    """Frame kinematics into ``out``: the Jacobian (6, nv) if neither ``use_v`` nor
    ``use_a``; the velocity (6,) if ``use_v`` only; the classical acceleration (6,)
    if both.  Returns a status (BAD_SHAPE, having read nothing, if a length does
    not fit the model or ``body`` is no body)."""
    mi = md.view(np.int64)      # the model's integer entries (layout.py)
    nb = mi[H_NB]
    nv = mi[H_NV]
    offs = region_offsets(nb, mi[H_NVF], mi[H_NMIM])
    jac = not use_v and not use_a
    if (q.shape[0] != mi[H_NQ] or (use_v and v.shape[0] != nv) or (use_a and a.shape[0] != nv)
            or ws.shape[0] < offs[R_END] or placement.shape[0] != 12 or body < -1 or body >= nb
            or out.size != (6 * nv if jac else 6) or reference < 0 or reference > 2):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if use_v and not all_finite(v):
        return BAD_V
    if use_a and not all_finite(a):
        return BAD_A
    flat = out.reshape(-1)
    for k in range(flat.shape[0]):
        flat[k] = 0.0
    if body < 0:                # a link fixed to the world: it does not move
        return OK
    oR = offs[R_RNEA]
    oW = offs[R_WORLD]
    t = offs[R_TMP]             # scratch: S qd / S qdd at t, their world forms at t + 6, a column at t + 12
    for i in range(body + 1):
        o = body_row(mi, i)
        if mi[o + C_SUBEND] < body:
            continue            # not an ancestor of body
        x = rnea_slot(oR, i)
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
        world_placement(mi, ws, i, oR, oW)
        w = world_slot(oW, i) + WO_X
        p = mi[o + C_PARENT]
        if use_v:
            joint_motion(md, mi, o, v, ws, t)
            x_motion_inv(ws, w, ws, t, ws, t + 6)                  # vJ, world
            if use_a:
                joint_motion(md, mi, o, a, ws, t)
                x_motion_inv(ws, w, ws, t, ws, x + RN_A)           # S qdd, world
                if p >= 0:
                    cross_motion(ws, rnea_slot(oR, p) + RN_V, ws, t + 6, ws, t)
                    for k in range(6):
                        ws[x + RN_A + k] += ws[rnea_slot(oR, p) + RN_A + k] + ws[t + k]
            for k in range(6):
                ws[x + RN_V + k] = ws[t + 6 + k] + (ws[rnea_slot(oR, p) + RN_V + k] if p >= 0 else 0.0)
        else:
            # the Jacobian's columns of joint i: S^w, times the mimic multiplier, at the DOFs
            vi = mi[o + C_VI]
            ncol = 6 if jt == FREE else 1
            mult = md[o + C_MULT]
            for c in range(ncol):
                for k in range(6):
                    ws[t + k] = 0.0
                if jt == FREE:
                    ws[t + (c + 3) % 6] = 1.0
                elif jt == REVOLUTE:
                    for k in range(3):
                        ws[t + k] = mult * md[o + C_AXIS + k]
                else:
                    for k in range(3):
                        ws[t + 3 + k] = mult * md[o + C_AXIS + k]
                x_motion_inv(ws, w, ws, t, ws, t + 12)
                # (the frame's placement is known only at the end: columns are world-origin
                # motions for now, converted below)
                for k in range(6):
                    flat[k * nv + vi + c] += ws[t + 12 + k]
    E0 = world_slot(oW, body) + WO_X
    if jac:
        # each column [ω; v_O] (stored in rows 0..5 so far) -> [linear; angular] in the reference
        for col in range(nv):
            for k in range(6):
                ws[t + k] = flat[k * nv + col]
            _to_reference(ws, t, E0, placement, reference, flat, col, nv)
        return finite_result(OK, flat)
    x = rnea_slot(oR, body)
    if not use_a:
        _to_reference(ws, x + RN_V, E0, placement, reference, flat, 0, 1)
        return finite_result(OK, flat)
    # classical: the spatial acceleration and velocity in the reference, + [ω × v_lin; 0]
    _to_reference(ws, x + RN_A, E0, placement, reference, ws, t, 1)
    _to_reference(ws, x + RN_V, E0, placement, reference, ws, t + 6, 1)
    flat[0] = ws[t] + ws[t + 10] * ws[t + 8] - ws[t + 11] * ws[t + 7]
    flat[1] = ws[t + 1] + ws[t + 11] * ws[t + 6] - ws[t + 9] * ws[t + 8]
    flat[2] = ws[t + 2] + ws[t + 9] * ws[t + 7] - ws[t + 10] * ws[t + 6]
    flat[3] = ws[t + 3]
    flat[4] = ws[t + 4]
    flat[5] = ws[t + 5]
    return finite_result(OK, flat)


# ---- entry points (flags as bool(0) / bool(1): one compiled frame_into, see rnea.py)

@njit(**JIT)
def frame_jacobian_k(md, ws, q, body, placement, reference, out):
    return frame_into(md, ws, q, q, q, bool(0), bool(0), body, placement, reference, out)


@njit(**JIT)
def frame_velocity_k(md, ws, q, v, body, placement, reference, out):
    return frame_into(md, ws, q, v, v, bool(1), bool(0), body, placement, reference, out)


@njit(**JIT)
def frame_acceleration_k(md, ws, q, v, a, body, placement, reference, out):
    return frame_into(md, ws, q, v, a, bool(1), bool(1), body, placement, reference, out)
