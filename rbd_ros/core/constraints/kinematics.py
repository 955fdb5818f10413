"""Constraint kinematics (compiled): the error e, the Jacobian J, the drift γ = J̇ q̇ and J q̇.

One forward pass over the bodies gives each body's world transform X0_i and, with a
velocity, its spatial velocity V_i and bias acceleration A_i (q̈ = 0, no gravity),
all in world coordinates at the world origin, [ω; v_O] (as ``algorithms/frames.py``).
Frame a of a constraint is at p_a with axes R_a in the world (frame b: p_b, R_b).
With Δ = (body a's) − (body b's) and everything finally expressed in frame a's axes
(Pinocchio's ``RigidConstraintModel`` with ``ReferenceFrame.LOCAL``):

point (mask 1 1 1 0 0 0):
    e   = R_aᵀ (p_a − p_b)                          (Pinocchio: −ᵃMᵦ.translation)
    J q̇ = R_aᵀ (ṗ_a − ṗ_b),   ṗ = v_O + ω × p
    γ   = R_aᵀ [(p̈_a − p̈_b) − ω_a × (ṗ_a − ṗ_b)],   p̈ = A_v + A_ω × p + ω × ṗ
every other mask (the masked rows of the weld):
    e   = −log6(ᵃMᵦ)                                 [v; ω], ᵃMᵦ = (R_aᵀ R_b, R_aᵀ (p_b − p_a))
    J q̇ = R_aᵀ [ΔV_v + ΔV_ω × p_a;  ΔV_ω]            (frame b's motion seen from frame a)
    γ   = R_aᵀ [ΔA_v + ΔA_ω × p_a + ΔV_ω × ṗ_a − ω_a × (ΔV_v + ΔV_ω × p_a);  ΔA_ω − ω_a × ΔV_ω]

γ is the exact time derivative of J(q) q̇ at q̈ = 0 (J q̈ + γ = d/dt (J q̇)).  Where
J q̇ = 0 it equals Pinocchio's drift; elsewhere Pinocchio's point-constraint drift
is γ + ω_a × (J q̇) (ω_a in frame a's axes) and its weld drift differs likewise
(test_constraints_oracle.py).  J equals de/dq where the loop is closed (e = 0).
"""
import numpy as np
from numba import njit

from ..algorithms.common import BAD_QUAT, OK, cross_motion, joint_motion, joint_transform, world_placement, x_motion_inv
from ..algorithms.joints import FREE, REVOLUTE
from ..algorithms.layout import (
    C_AXIS,
    C_JTYPE,
    C_MULT,
    C_PARENT,
    C_SUBEND,
    C_VI,
    H_NB,
    H_NMIM,
    H_NVF,
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
from ..algorithms.spatial import INLINE, JIT
from .layout import (
    CF_N,
    CF_RA,
    CF_RB,
    CI_A,
    CI_B,
    CI_HEAD,
    CI_KIND,
    CI_M,
    CI_MASK,
    CI_N,
    CI_NBK,
    CI_NC,
    CI_ROW,
    FR_AA,
    FR_AB,
    FR_N,
    FR_PA,
    FR_PB,
    FR_RA,
    FR_RB,
    FR_VA,
    FR_VB,
    O_E,
    O_FR,
    O_G,
    O_J,
    O_JV,
    POINT,
    offsets,
)


@njit(**INLINE)
def cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(**INLINE)
def rt_mul(R, o, x0, x1, x2):
    """Rᵀ x for R row-major at R[o:o+9]."""
    return (R[o] * x0 + R[o + 3] * x1 + R[o + 6] * x2,
            R[o + 1] * x0 + R[o + 4] * x1 + R[o + 7] * x2,
            R[o + 2] * x0 + R[o + 5] * x1 + R[o + 8] * x2)


@njit(**JIT)
def log3(r00, r01, r02, r10, r11, r12, r20, r21, r22):
    """The rotation vector ω of a rotation matrix, |ω| <= π (accurate at 0 and near π)."""
    s0 = r21 - r12
    s1 = r02 - r20
    s2 = r10 - r01
    s = 0.5 * np.sqrt(s0 * s0 + s1 * s1 + s2 * s2)          # sin θ
    c = 0.5 * (r00 + r11 + r22 - 1.0)                         # cos θ
    th = np.arctan2(s, c)
    if c >= 0.0:
        f = 0.5 * (1.0 + th * th / 6.0) if s < 1e-8 else 0.5 * th / s
        return f * s0, f * s1, f * s2
    # θ > π/2: the axis from the symmetric part, (R + Rᵀ)/2 − c I = (1 − c) n nᵀ
    d = 1.0 - c
    n0 = np.sqrt(max(0.0, (r00 - c) / d))
    n1 = np.sqrt(max(0.0, (r11 - c) / d))
    n2 = np.sqrt(max(0.0, (r22 - c) / d))
    if n0 >= n1 and n0 >= n2:
        n1 = 0.5 * (r01 + r10) / (d * n0)
        n2 = 0.5 * (r02 + r20) / (d * n0)
    elif n1 >= n2:
        n0 = 0.5 * (r01 + r10) / (d * n1)
        n2 = 0.5 * (r12 + r21) / (d * n1)
    else:
        n0 = 0.5 * (r02 + r20) / (d * n2)
        n1 = 0.5 * (r12 + r21) / (d * n2)
    if n0 * s0 + n1 * s1 + n2 * s2 < 0.0:
        n0, n1, n2 = -n0, -n1, -n2
    k = th / np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    return k * n0, k * n1, k * n2


@njit(**JIT)
def log6_into(R, p0, p1, p2, out, oo):
    """out[oo:oo+6] = log6 of (R row-major 9-array at 0, p) as [v; ω] (Pinocchio's order):
    ω = log3(R), v = V(ω)⁻¹ p, V⁻¹ = I − ½[ω]× + α [ω]×², α = (1 − (θ/2) cot(θ/2)) / θ²."""
    w0, w1, w2 = log3(R[0], R[1], R[2], R[3], R[4], R[5], R[6], R[7], R[8])
    t2 = w0 * w0 + w1 * w1 + w2 * w2
    th = np.sqrt(t2)
    if th < 1e-4:
        alpha = 1.0 / 12.0 + t2 / 720.0
    else:
        alpha = (1.0 - 0.5 * th * np.sin(th) / (1.0 - np.cos(th))) / t2
    c0, c1, c2 = cross(w0, w1, w2, p0, p1, p2)
    d0, d1, d2 = cross(w0, w1, w2, c0, c1, c2)
    out[oo] = p0 - 0.5 * c0 + alpha * d0
    out[oo + 1] = p1 - 0.5 * c1 + alpha * d1
    out[oo + 2] = p2 - 0.5 * c2 + alpha * d2
    out[oo + 3] = w0
    out[oo + 4] = w1
    out[oo + 5] = w2


@njit(**INLINE)
def _jl3_inv(p0, p1, p2, c, x0, x1, x2):
    """Jl⁻¹(φ) x = x − ½ φ × x + c φ × (φ × x), the inverse left Jacobian of SO(3)."""
    a0, a1, a2 = cross(p0, p1, p2, x0, x1, x2)
    b0, b1, b2 = cross(p0, p1, p2, a0, a1, a2)
    return x0 - 0.5 * a0 + c * b0, x1 - 0.5 * a1 + c * b1, x2 - 0.5 * a2 + c * b2


@njit(**JIT)
def _q_apply(p0, p1, p2, r0, r1, r2, c1, c2, c3, x0, x1, x2):
    """Q(ρ, φ) x, the off-diagonal block of SE(3)'s left Jacobian (Barfoot's Q): with
    [a]× b = a × b, Q = ½ρ× + c1 (φ×ρ× + ρ×φ× + φ×ρ×φ×) + c2 (φ×φ×ρ× + ρ×φ×φ× − 3 φ×ρ×φ×)
    + c3 (φ×ρ×φ×φ× + φ×φ×ρ×φ×)."""
    rx = cross(r0, r1, r2, x0, x1, x2)                  # ρ×x
    px = cross(p0, p1, p2, x0, x1, x2)                  # φ×x
    prx = cross(p0, p1, p2, rx[0], rx[1], rx[2])        # φ×ρ×x
    rpx = cross(r0, r1, r2, px[0], px[1], px[2])        # ρ×φ×x
    prpx = cross(p0, p1, p2, rpx[0], rpx[1], rpx[2])    # φ×ρ×φ×x
    pprx = cross(p0, p1, p2, prx[0], prx[1], prx[2])    # φ×φ×ρ×x
    ppx = cross(p0, p1, p2, px[0], px[1], px[2])        # φ×φ×x
    rppx = cross(r0, r1, r2, ppx[0], ppx[1], ppx[2])    # ρ×φ×φ×x
    prppx = cross(p0, p1, p2, rppx[0], rppx[1], rppx[2])    # φ×ρ×φ×φ×x
    pprpx = cross(p0, p1, p2, prpx[0], prpx[1], prpx[2])    # φ×φ×ρ×φ×x
    out0 = (0.5 * rx[0] + c1 * (prx[0] + rpx[0] + prpx[0]) + c2 * (pprx[0] + rppx[0] - 3.0 * prpx[0])
            + c3 * (prppx[0] + pprpx[0]))
    out1 = (0.5 * rx[1] + c1 * (prx[1] + rpx[1] + prpx[1]) + c2 * (pprx[1] + rppx[1] - 3.0 * prpx[1])
            + c3 * (prppx[1] + pprpx[1]))
    out2 = (0.5 * rx[2] + c1 * (prx[2] + rpx[2] + prpx[2]) + c2 * (pprx[2] + rppx[2] - 3.0 * prpx[2])
            + c3 * (prppx[2] + pprpx[2]))
    return out0, out1, out2


@njit(**JIT)
def jlog6_inv_into(xi, o, B, ob):
    """B[ob:ob+36] (6 x 6, row-major) = Jl⁻¹(ξ) for ξ = xi[o:o+6] = [ρ; φ], the inverse left
    Jacobian of SE(3): d/dt log6(M) = Jl⁻¹(log6 M) ν for the spatial twist ν (Ṁ = ν^ M).
    Jl⁻¹ = [[Jl₃⁻¹, −Jl₃⁻¹ Q Jl₃⁻¹], [0, Jl₃⁻¹]] (Barfoot, State Estimation for Robotics
    §7.1.5), series below θ = |φ| = 1e-2; singular at θ = π as log6 itself."""
    r0, r1, r2 = xi[o], xi[o + 1], xi[o + 2]
    p0, p1, p2 = xi[o + 3], xi[o + 4], xi[o + 5]
    t2 = p0 * p0 + p1 * p1 + p2 * p2
    th = np.sqrt(t2)
    if th < 1e-2:
        c = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0
        c1 = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
        c2 = 1.0 / 24.0 - t2 / 720.0 + t2 * t2 / 40320.0
        c3 = 1.0 / 120.0 - t2 / 2520.0 + t2 * t2 / 120960.0
    else:
        sn, cs = np.sin(th), np.cos(th)
        c = 1.0 / t2 - (1.0 + cs) / (2.0 * th * sn)
        c1 = (th - sn) / (t2 * th)
        c2 = (0.5 * t2 + cs - 1.0) / (t2 * t2)
        c3 = (2.0 * th - 3.0 * sn + th * cs) / (2.0 * t2 * t2 * th)
    for j in range(3):
        x0, x1, x2 = (1.0 if j == 0 else 0.0), (1.0 if j == 1 else 0.0), (1.0 if j == 2 else 0.0)
        y0, y1, y2 = _jl3_inv(p0, p1, p2, c, x0, x1, x2)         # column j: [Jl₃⁻¹ e_j; 0]
        B[ob + j], B[ob + 6 + j], B[ob + 12 + j] = y0, y1, y2
        B[ob + 18 + j], B[ob + 24 + j], B[ob + 30 + j] = 0.0, 0.0, 0.0
        # column 3 + j: [−Jl₃⁻¹ Q Jl₃⁻¹ e_j; Jl₃⁻¹ e_j]
        B[ob + 21 + j], B[ob + 27 + j], B[ob + 33 + j] = y0, y1, y2
        z0, z1, z2 = _q_apply(p0, p1, p2, r0, r1, r2, c1, c2, c3, y0, y1, y2)
        w0, w1, w2 = _jl3_inv(p0, p1, p2, c, z0, z1, z2)
        B[ob + 3 + j], B[ob + 9 + j], B[ob + 15 + j] = -w0, -w1, -w2


@njit(**JIT)
def _frames(md, mi, ws, oR, oW, ci, cf, cws, ofr, use_v):
    """Each constraint's frames in the world (and its bodies' motion) into the FR region."""
    nc = ci[CI_NC]
    for k in range(nc):
        o = CI_HEAD + k * CI_N
        f = ofr + k * FR_N
        for side in range(2):
            b = ci[o + CI_A + side]
            pl = k * CF_N + (CF_RA if side == 0 else CF_RB)
            fr = f + (FR_RA if side == 0 else FR_RB)
            fp = f + (FR_PA if side == 0 else FR_PB)
            fv = f + (FR_VA if side == 0 else FR_VB)
            fa = f + (FR_AA if side == 0 else FR_AB)
            if b < 0:
                for j in range(12):
                    cws[fr + j] = cf[pl + j]        # R then p: FR_PA = FR_RA + 9
                for j in range(6):
                    cws[fv + j] = 0.0
                    cws[fa + j] = 0.0
                continue
            E = world_slot(oW, b) + WO_X            # E0 (world -> body, row-major), then r0
            # R = E0ᵀ R_bF, p = r0 + E0ᵀ p_bF
            for r in range(3):
                for c in range(3):
                    cws[fr + 3 * r + c] = (ws[E + r] * cf[pl + c] + ws[E + 3 + r] * cf[pl + 3 + c]
                                           + ws[E + 6 + r] * cf[pl + 6 + c])
            for r in range(3):
                cws[fp + r] = ws[E + 9 + r] + (ws[E + r] * cf[pl + 9] + ws[E + 3 + r] * cf[pl + 10]
                                               + ws[E + 6 + r] * cf[pl + 11])
            if use_v:
                x = rnea_slot(oR, b)
                for j in range(6):
                    cws[fv + j] = ws[x + RN_V + j]
                    cws[fa + j] = ws[x + RN_A + j]


@njit(**JIT)
def _forward(md, mi, ws, offs, q, v, use_v, nbk):
    """X0_i (and world V_i, A_i at q̈ = 0) of bodies 0..nbk-1.  False for a zero quaternion."""
    oR = offs[R_RNEA]
    oW = offs[R_WORLD]
    t = offs[R_TMP]
    for i in range(nbk):
        o = body_row(mi, i)
        x = rnea_slot(oR, i)
        if not joint_transform(md, mi, o, q, ws, x + RN_X):
            return False
        world_placement(mi, ws, i, oR, oW)
        if use_v:
            w = world_slot(oW, i) + WO_X
            p = mi[o + C_PARENT]
            joint_motion(md, mi, o, v, ws, t)
            x_motion_inv(ws, w, ws, t, ws, t + 6)                  # vJ, world
            if p >= 0:
                cross_motion(ws, rnea_slot(oR, p) + RN_V, ws, t + 6, ws, t)
                for k in range(6):
                    ws[x + RN_A + k] = ws[rnea_slot(oR, p) + RN_A + k] + ws[t + k]
                    ws[x + RN_V + k] = ws[rnea_slot(oR, p) + RN_V + k] + ws[t + 6 + k]
            else:
                for k in range(6):
                    ws[x + RN_A + k] = 0.0
                    ws[x + RN_V + k] = ws[t + 6 + k]
    return True


@njit(**JIT)
def _jacobian(md, mi, ws, offs, ci, cws, oj, ofr, nv, nbk):
    """J (m x nv, row-major) into cws[oj:]: each joint's world motion columns S^w
    (times the mimic multiplier, at its master's DOF) moved to the constraint frames."""
    m = ci[CI_M]
    nc = ci[CI_NC]
    for k in range(m * nv):
        cws[oj + k] = 0.0
    oW = offs[R_WORLD]
    t = offs[R_TMP]
    for i in range(nbk):
        o = body_row(mi, i)
        end = mi[o + C_SUBEND]
        jt = mi[o + C_JTYPE]
        w = world_slot(oW, i) + WO_X
        ncol = 6 if jt == FREE else 1
        mult = md[o + C_MULT]
        vi = mi[o + C_VI]
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
            x_motion_inv(ws, w, ws, t, ws, t + 6)
            w0, w1, w2 = ws[t + 6], ws[t + 7], ws[t + 8]
            l0, l1, l2 = ws[t + 9], ws[t + 10], ws[t + 11]
            col = vi + c
            for kc in range(nc):
                oc = CI_HEAD + kc * CI_N
                ba = ci[oc + CI_A]
                bb = ci[oc + CI_B]
                sa = 1.0 if (ba >= 0 and i <= ba and ba <= end) else 0.0
                sb = 1.0 if (bb >= 0 and i <= bb and bb <= end) else 0.0
                if sa == sb:
                    continue
                f = ofr + kc * FR_N
                row = ci[oc + CI_ROW]
                if ci[oc + CI_KIND] == POINT:
                    pa0, pa1, pa2 = cws[f + FR_PA], cws[f + FR_PA + 1], cws[f + FR_PA + 2]
                    pb0, pb1, pb2 = cws[f + FR_PB], cws[f + FR_PB + 1], cws[f + FR_PB + 2]
                    ca0, ca1, ca2 = cross(w0, w1, w2, pa0, pa1, pa2)
                    cb0, cb1, cb2 = cross(w0, w1, w2, pb0, pb1, pb2)
                    d0 = sa * (l0 + ca0) - sb * (l0 + cb0)
                    d1 = sa * (l1 + ca1) - sb * (l1 + cb1)
                    d2 = sa * (l2 + ca2) - sb * (l2 + cb2)
                    y0, y1, y2 = rt_mul(cws, f + FR_RA, d0, d1, d2)
                    cws[oj + row * nv + col] += y0
                    cws[oj + (row + 1) * nv + col] += y1
                    cws[oj + (row + 2) * nv + col] += y2
                else:
                    s = sa - sb
                    c0, c1, c2 = cross(w0, w1, w2, cws[f + FR_PA], cws[f + FR_PA + 1], cws[f + FR_PA + 2])
                    y0, y1, y2 = rt_mul(cws, f + FR_RA, s * (l0 + c0), s * (l1 + c1), s * (l2 + c2))
                    z0, z1, z2 = rt_mul(cws, f + FR_RA, s * w0, s * w1, s * w2)
                    r = row
                    for d in range(6):
                        if ci[oc + CI_MASK + d]:
                            val = y0 if d == 0 else y1 if d == 1 else y2 if d == 2 else \
                                z0 if d == 3 else z1 if d == 4 else z2
                            cws[oj + r * nv + col] += val
                            r += 1


@njit(**JIT)
def _error_and_drift(ci, cws, oe, og, ojv, ofr, use_v, tmp):
    """e (and γ, J q̇ if ``use_v``) of every constraint into cws (tmp: 6 scratch entries
    followed by 9 for a rotation)."""
    nc = ci[CI_NC]
    for k in range(nc):
        oc = CI_HEAD + k * CI_N
        f = ofr + k * FR_N
        row = ci[oc + CI_ROW]
        pa0, pa1, pa2 = cws[f + FR_PA], cws[f + FR_PA + 1], cws[f + FR_PA + 2]
        pb0, pb1, pb2 = cws[f + FR_PB], cws[f + FR_PB + 1], cws[f + FR_PB + 2]
        Ra = f + FR_RA
        point = ci[oc + CI_KIND] == POINT
        if point:
            e0, e1, e2 = rt_mul(cws, Ra, pa0 - pb0, pa1 - pb1, pa2 - pb2)
            cws[oe + row] = e0
            cws[oe + row + 1] = e1
            cws[oe + row + 2] = e2
        else:
            # ᵃMᵦ: R_aᵀ R_b (row-major into tmp[6:15]) and R_aᵀ (p_b − p_a)
            Rb = f + FR_RB
            for r in range(3):
                for c in range(3):
                    tmp[6 + 3 * r + c] = (cws[Ra + r] * cws[Rb + c] + cws[Ra + 3 + r] * cws[Rb + 3 + c]
                                          + cws[Ra + 6 + r] * cws[Rb + 6 + c])
            q0, q1, q2 = rt_mul(cws, Ra, pb0 - pa0, pb1 - pa1, pb2 - pa2)
            log6_into(tmp[6:15], q0, q1, q2, tmp, 0)
            r = row
            for d in range(6):
                if ci[oc + CI_MASK + d]:
                    cws[oe + r] = -tmp[d]
                    r += 1
        if not use_v:
            continue
        va, vb, aa, ab = f + FR_VA, f + FR_VB, f + FR_AA, f + FR_AB
        wa0, wa1, wa2 = cws[va], cws[va + 1], cws[va + 2]
        x0, x1, x2 = cross(wa0, wa1, wa2, pa0, pa1, pa2)
        pda0, pda1, pda2 = cws[va + 3] + x0, cws[va + 4] + x1, cws[va + 5] + x2      # ṗ_a
        if point:
            wb0, wb1, wb2 = cws[vb], cws[vb + 1], cws[vb + 2]
            x0, x1, x2 = cross(wb0, wb1, wb2, pb0, pb1, pb2)
            pdb0, pdb1, pdb2 = cws[vb + 3] + x0, cws[vb + 4] + x1, cws[vb + 5] + x2  # ṗ_b
            # p̈ = A_v + A_ω × p + ω × ṗ
            x0, x1, x2 = cross(cws[aa], cws[aa + 1], cws[aa + 2], pa0, pa1, pa2)
            y0, y1, y2 = cross(wa0, wa1, wa2, pda0, pda1, pda2)
            g0 = cws[aa + 3] + x0 + y0
            g1 = cws[aa + 4] + x1 + y1
            g2 = cws[aa + 5] + x2 + y2
            x0, x1, x2 = cross(cws[ab], cws[ab + 1], cws[ab + 2], pb0, pb1, pb2)
            y0, y1, y2 = cross(wb0, wb1, wb2, pdb0, pdb1, pdb2)
            g0 -= cws[ab + 3] + x0 + y0
            g1 -= cws[ab + 4] + x1 + y1
            g2 -= cws[ab + 5] + x2 + y2
            d0, d1, d2 = pda0 - pdb0, pda1 - pdb1, pda2 - pdb2
            x0, x1, x2 = cross(wa0, wa1, wa2, d0, d1, d2)
            y0, y1, y2 = rt_mul(cws, Ra, g0 - x0, g1 - x1, g2 - x2)
            z0, z1, z2 = rt_mul(cws, Ra, d0, d1, d2)
            cws[og + row], cws[og + row + 1], cws[og + row + 2] = y0, y1, y2
            cws[ojv + row], cws[ojv + row + 1], cws[ojv + row + 2] = z0, z1, z2
            continue
        dw0, dw1, dw2 = wa0 - cws[vb], wa1 - cws[vb + 1], wa2 - cws[vb + 2]
        dv0, dv1, dv2 = cws[va + 3] - cws[vb + 3], cws[va + 4] - cws[vb + 4], cws[va + 5] - cws[vb + 5]
        daw0, daw1, daw2 = cws[aa] - cws[ab], cws[aa + 1] - cws[ab + 1], cws[aa + 2] - cws[ab + 2]
        dav0, dav1, dav2 = cws[aa + 3] - cws[ab + 3], cws[aa + 4] - cws[ab + 4], cws[aa + 5] - cws[ab + 5]
        x0, x1, x2 = cross(dw0, dw1, dw2, pa0, pa1, pa2)
        u0, u1, u2 = dv0 + x0, dv1 + x1, dv2 + x2                     # ΔV_v + ΔV_ω × p_a
        x0, x1, x2 = cross(daw0, daw1, daw2, pa0, pa1, pa2)
        y0, y1, y2 = cross(dw0, dw1, dw2, pda0, pda1, pda2)
        z0, z1, z2 = cross(wa0, wa1, wa2, u0, u1, u2)
        gl0, gl1, gl2 = rt_mul(cws, Ra, dav0 + x0 + y0 - z0, dav1 + x1 + y1 - z1, dav2 + x2 + y2 - z2)
        z0, z1, z2 = cross(wa0, wa1, wa2, dw0, dw1, dw2)
        ga0, ga1, ga2 = rt_mul(cws, Ra, daw0 - z0, daw1 - z1, daw2 - z2)
        jl0, jl1, jl2 = rt_mul(cws, Ra, u0, u1, u2)
        ja0, ja1, ja2 = rt_mul(cws, Ra, dw0, dw1, dw2)
        r = row
        for d in range(6):
            if ci[oc + CI_MASK + d]:
                cws[og + r] = gl0 if d == 0 else gl1 if d == 1 else gl2 if d == 2 else \
                    ga0 if d == 3 else ga1 if d == 4 else ga2
                cws[ojv + r] = jl0 if d == 0 else jl1 if d == 1 else jl2 if d == 2 else \
                    ja0 if d == 3 else ja1 if d == 4 else ja2
                r += 1


@njit(**JIT)
def kinematics(md, ws, ci, cf, cws, q, v, use_v, want_j):
    """e, and J if ``want_j``, and γ and J q̇ if ``use_v``, into their cws regions.
    Lengths are the caller's to check.  Returns OK or BAD_QUAT."""
    mi = md.view(np.int64)
    offs = region_offsets(mi[H_NB], mi[H_NVF], mi[H_NMIM])
    nbk = ci[CI_NBK]
    nv = ci[2]
    co = offsets(ci[CI_NC], ci[CI_M], nv)
    if not _forward(md, mi, ws, offs, q, v, use_v, nbk):
        return BAD_QUAT
    _frames(md, mi, ws, offs[R_RNEA], offs[R_WORLD], ci, cf, cws, co[O_FR], use_v)
    t = offs[R_TMP]
    _error_and_drift(ci, cws, co[O_E], co[O_G], co[O_JV], co[O_FR], use_v, ws[t:t + 16])
    if want_j:
        _jacobian(md, mi, ws, offs, ci, cws, co[O_J], co[O_FR], nv, nbk)
    return OK
