"""Recursive Newton-Euler Algorithm (RBDA Table 5.1).

    v_0 = 0,  a_0 = -a_g
    for i = 1..N:
        X_i  = X_J(q_i) X_T(i)
        v_i  = X_i v_λ(i) + S_i qd_i
        a_i  = X_i a_λ(i) + S_i qdd_i + v_i x S_i qd_i
        f_i  = I_i a_i + v_i x* I_i v_i - f_i^ext
    for i = N..1:
        tau_i = S_i^T f_i
        f_λ(i) += X_i^T f_i

The armature (rotor inertia, per DOF) adds ``armature_k * qdd_k`` to tau_k.

A mimic joint's qd/qdd are ``multiplier * master``; its tau_i is folded into
the master's (``tau_master += multiplier * S_i^T f_i``), i.e. tau = G^T tau_full.
"""
import numpy as np
from numba import njit

from .common import BAD_A, BAD_FEXT, BAD_Q, BAD_QUAT, BAD_RESULT, BAD_SHAPE, BAD_V, OK, all_finite, fext_fits
from .joints import FREE, PRISMATIC, REVOLUTE, free_transform, prismatic_transform, revolute_transform
from .layout import (
    C_AXIS,
    C_ET,
    C_H,
    C_JTYPE,
    C_MASS,
    C_MULT,
    C_OFFSET,
    C_PARENT,
    C_QI,
    C_VI,
    H_GRAV,
    H_NB,
    H_NMIM,
    H_NQ,
    H_NV,
    H_NVF,
    H_OFF_ARM,
    R_END,
    R_RNEA,
    R_TMP,
    R_WORLD,
    RN_A,
    RN_F,
    RN_V,
    RN_X,
    WO_X,
    body_row,
    region_offsets,
    rnea_slot,
    workspace_size,
    world_slot,
)
from .spatial import INLINE, JIT, cross_force_add, inertia_mul, x_force, x_motion, xT_force_add


@njit(**INLINE)
def world_placement(mi, ws, i, oX, oW):
    """World -> body i transform into the world region (needs the parent's):
    E0_i = E_i E0_p,  r0_i = r0_p + E0_p^T r_i.  (A leaf: no spatial helper calls.)"""
    p = mi[body_row(mi, i) + C_PARENT]
    x = rnea_slot(oX, i) + RN_X
    w = world_slot(oW, i) + WO_X
    if p < 0:
        for k in range(12):
            ws[w + k] = ws[x + k]
    else:
        wp = world_slot(oW, p) + WO_X
        for r in range(3):
            a0 = ws[x + 3 * r]
            a1 = ws[x + 3 * r + 1]
            a2 = ws[x + 3 * r + 2]
            for c in range(3):
                ws[w + 3 * r + c] = a0 * ws[wp + c] + a1 * ws[wp + 3 + c] + a2 * ws[wp + 6 + c]
        for k in range(3):
            ws[w + 9 + k] = (ws[wp + 9 + k] + ws[wp + k] * ws[x + 9] + ws[wp + 3 + k] * ws[x + 10]
                             + ws[wp + 6 + k] * ws[x + 11])


@njit(**JIT)
def rnea_into(md, ws, q, v, a, fext, fext_world, use_v, use_a, out):
    """tau = ID(q, v, a, fext) into ``out`` (length nv).

    ``fext`` is (nb, 6) per *body* ([n; f] order) in the body frame, or in the
    world frame about the world origin if ``fext_world``; a (0, 6) array means
    none.  ``use_v``/``use_a`` False treat v/a as zero without reading them.
    Returns a status code (common.OK on success; BAD_SHAPE, having read nothing,
    if an argument's length does not fit the model)."""
    mi = md.view(np.int64)      # the model's integer entries (layout.py)
    nb = mi[H_NB]
    nv = mi[H_NV]
    offs = region_offsets(nb, mi[H_NVF], mi[H_NMIM])
    if (q.shape[0] != mi[H_NQ] or out.shape[0] != nv or (use_v and v.shape[0] != nv)
            or (use_a and a.shape[0] != nv) or ws.shape[0] < offs[R_END] or not fext_fits(fext, nb)):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if use_v and not all_finite(v):
        return BAD_V
    if use_a and not all_finite(a):
        return BAD_A
    has_fext = fext.shape[0] == nb
    if has_fext:
        for i in range(nb):
            if not all_finite(fext[i]):
                return BAD_FEXT
    oR = offs[R_RNEA]
    oW = offs[R_WORLD]
    t = offs[R_TMP]                # scratch: I v at t, X* fext at t + 6
    g0 = md[H_GRAV]
    g1 = md[H_GRAV + 1]
    g2 = md[H_GRAV + 2]

    # ---- forward pass: X_i, v_i, a_i, f_i
    for i in range(nb):
        o = body_row(mi, i)
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
        p = mi[o + C_PARENT]
        if p >= 0:
            xp = rnea_slot(oR, p)
            if use_v:
                x_motion(ws, x + RN_X, ws, xp + RN_V, ws, x + RN_V)
            if use_v or use_a:
                x_motion(ws, x + RN_X, ws, xp + RN_A, ws, x + RN_A)
            else:
                # gravity alone: every a_i is [0; l] (a_0 = [0; -g], no joint motion),
                # and X [0; l] = [0; E l]: a 3x3 product instead of the 6-D transform
                l0 = ws[xp + RN_A + 3]
                l1 = ws[xp + RN_A + 4]
                l2 = ws[xp + RN_A + 5]
                for k in range(3):
                    ws[x + RN_A + k] = 0.0
                    ws[x + RN_A + 3 + k] = ws[x + 3 * k] * l0 + ws[x + 3 * k + 1] * l1 + ws[x + 3 * k + 2] * l2
        else:
            # v_0 = 0 and a_0 = -a_g:  X a_0 = [0; -E g]
            for k in range(6):
                ws[x + RN_V + k] = 0.0
            for k in range(3):
                ws[x + RN_A + k] = 0.0
                ws[x + RN_A + 3 + k] = -(ws[x + RN_X + 3 * k] * g0 + ws[x + RN_X + 3 * k + 1] * g1
                                       + ws[x + RN_X + 3 * k + 2] * g2)
        vi = mi[o + C_VI]
        if jt == FREE:
            if use_a:
                for k in range(6):
                    ws[x + RN_A + (k + 3) % 6] += a[vi + k]
            if use_v:
                # a_i += v_i x (S qd); with v_i = X v_p + S qd that is (X v_p) x (S qd)
                w0 = ws[x + RN_V]
                w1 = ws[x + RN_V + 1]
                w2 = ws[x + RN_V + 2]
                l0 = ws[x + RN_V + 3]
                l1 = ws[x + RN_V + 4]
                l2 = ws[x + RN_V + 5]
                s0 = v[vi + 3]
                s1 = v[vi + 4]
                s2 = v[vi + 5]
                s3 = v[vi]
                s4 = v[vi + 1]
                s5 = v[vi + 2]
                ws[x + RN_A] += w1 * s2 - w2 * s1
                ws[x + RN_A + 1] += w2 * s0 - w0 * s2
                ws[x + RN_A + 2] += w0 * s1 - w1 * s0
                ws[x + RN_A + 3] += w1 * s5 - w2 * s4 + l1 * s2 - l2 * s1
                ws[x + RN_A + 4] += w2 * s3 - w0 * s5 + l2 * s0 - l0 * s2
                ws[x + RN_A + 5] += w0 * s4 - w1 * s3 + l0 * s1 - l1 * s0
                ws[x + RN_V] += s0
                ws[x + RN_V + 1] += s1
                ws[x + RN_V + 2] += s2
                ws[x + RN_V + 3] += s3
                ws[x + RN_V + 4] += s4
                ws[x + RN_V + 5] += s5
        else:
            m = md[o + C_MULT]
            u0 = md[o + C_AXIS]
            u1 = md[o + C_AXIS + 1]
            u2 = md[o + C_AXIS + 2]
            # revolute: S = [u; 0] at slot 0, prismatic: S = [0; u] at slot 3
            s = 0 if jt == REVOLUTE else 3
            if use_a:
                qdd = m * a[vi]
                ws[x + RN_A + s] += u0 * qdd
                ws[x + RN_A + s + 1] += u1 * qdd
                ws[x + RN_A + s + 2] += u2 * qdd
            if use_v:
                qd = m * v[vi]
                s0 = u0 * qd
                s1 = u1 * qd
                s2 = u2 * qd
                ws[x + RN_V + s] += s0
                ws[x + RN_V + s + 1] += s1
                ws[x + RN_V + s + 2] += s2
                w0 = ws[x + RN_V]
                w1 = ws[x + RN_V + 1]
                w2 = ws[x + RN_V + 2]
                c0 = w1 * s2 - w2 * s1
                c1 = w2 * s0 - w0 * s2
                c2 = w0 * s1 - w1 * s0
                if jt == REVOLUTE:
                    # v_i x [s; 0] = [w x s; l x s]
                    l0 = ws[x + RN_V + 3]
                    l1 = ws[x + RN_V + 4]
                    l2 = ws[x + RN_V + 5]
                    ws[x + RN_A] += c0
                    ws[x + RN_A + 1] += c1
                    ws[x + RN_A + 2] += c2
                    ws[x + RN_A + 3] += l1 * s2 - l2 * s1
                    ws[x + RN_A + 4] += l2 * s0 - l0 * s2
                    ws[x + RN_A + 5] += l0 * s1 - l1 * s0
                else:
                    # v_i x [0; s] = [0; w x s]
                    ws[x + RN_A + 3] += c0
                    ws[x + RN_A + 4] += c1
                    ws[x + RN_A + 5] += c2
        if use_v or use_a:
            inertia_mul(md, o + C_MASS, ws, x + RN_A, ws, x + RN_F)
        else:
            # I [0; l] = [h x l; m l]
            m = md[o + C_MASS]
            h0 = md[o + C_H]
            h1 = md[o + C_H + 1]
            h2 = md[o + C_H + 2]
            l0 = ws[x + RN_A + 3]
            l1 = ws[x + RN_A + 4]
            l2 = ws[x + RN_A + 5]
            ws[x + RN_F] = h1 * l2 - h2 * l1
            ws[x + RN_F + 1] = h2 * l0 - h0 * l2
            ws[x + RN_F + 2] = h0 * l1 - h1 * l0
            ws[x + RN_F + 3] = m * l0
            ws[x + RN_F + 4] = m * l1
            ws[x + RN_F + 5] = m * l2
        if use_v:
            inertia_mul(md, o + C_MASS, ws, x + RN_V, ws, t)
            cross_force_add(ws, x + RN_V, ws, t, ws, x + RN_F)
        if has_fext:
            if fext_world:
                world_placement(mi, ws, i, oR, oW)
                x_force(ws, world_slot(oW, i) + WO_X, fext[i], 0, ws, t + 6)
                for k in range(6):
                    ws[x + RN_F + k] -= ws[t + 6 + k]
            else:
                for k in range(6):
                    ws[x + RN_F + k] -= fext[i, k]

    # ---- backward pass: tau_i = S_i^T f_i,  f_λ += X_i^T f_i
    for k in range(out.shape[0]):
        out[k] = 0.0
    for i in range(nb - 1, -1, -1):
        o = body_row(mi, i)
        x = rnea_slot(oR, i)
        jt = mi[o + C_JTYPE]
        vi = mi[o + C_VI]
        if jt == FREE:
            for k in range(6):
                out[vi + k] += ws[x + RN_F + (k + 3) % 6]
        else:
            s = x + RN_F if jt == REVOLUTE else x + RN_F + 3
            out[vi] += md[o + C_MULT] * (md[o + C_AXIS] * ws[s] + md[o + C_AXIS + 1] * ws[s + 1]
                                         + md[o + C_AXIS + 2] * ws[s + 2])
        p = mi[o + C_PARENT]
        if p >= 0:
            xT_force_add(ws, x + RN_X, ws, x + RN_F, ws, rnea_slot(oR, p) + RN_F)
    if use_a:
        oa = mi[H_OFF_ARM]
        for k in range(out.shape[0]):
            out[k] += md[oa + k] * a[k]
    if not all_finite(out):     # finite arguments so large that tau overflowed
        return BAD_RESULT
    return OK


# ---- entry points (few arguments: the call overhead is part of the budget)
#
# The flags are passed as ``bool(0)`` / ``bool(1)``, not ``False`` / ``True``: numba
# types a constant as ``Literal[bool]`` and would compile a separate copy of the
# whole RNEA body for every combination of constant flags (gravity, bias, rnea,
# compensation, forward dynamics: five copies); ``bool(c)`` is a plain ``boolean``,
# so every caller shares one compiled ``rnea_into`` (LLVM still sees the constant).

@njit(**JIT)
def rnea_k(md, ws, q, v, a, out):
    return rnea_into(md, ws, q, v, a, ws[:0].reshape((0, 6)), bool(0), bool(1), bool(1), out)


# with f_ext: rnea_into itself (no wrapper kernel, ~0.5 s less compile: see aba.aba_k)
rnea_fext_k = rnea_into


@njit(**JIT)
def gravity_k(md, ws, q, out):
    return rnea_into(md, ws, q, q, q, ws[:0].reshape((0, 6)), bool(0), bool(0), bool(0), out)


@njit(**JIT)
def bias_k(md, ws, q, v, out):
    return rnea_into(md, ws, q, v, v, ws[:0].reshape((0, 6)), bool(0), bool(1), bool(0), out)


@njit(**JIT)
def rnea_batch_k(md, Q, V, A, fext, fext_world, use_v, use_a, OUT, status, start, stop):
    """Row n of OUT = rnea(Q[n], V[n], A[n], fext[n]) for start <= n < stop; fext is
    (N, nb, 6) or (0, nb, 6).
    Serial, one workspace: ``batch.run_batch`` gives each thread one range (the
    kernel releases the GIL, so Python threads run the ranges in parallel; a serial
    kernel is cached by numba, a ``prange`` one would be recompiled in every process)."""
    N = Q.shape[0]
    ws = np.empty(workspace_size(md))
    nofext = ws[:0].reshape((0, 6))
    for n in range(start, stop):
        if fext.shape[0] == N:
            status[n] = rnea_into(md, ws, Q[n], V[n], A[n], fext[n], fext_world, use_v, use_a, OUT[n])
        else:
            status[n] = rnea_into(md, ws, Q[n], V[n], A[n], nofext, fext_world, use_v, use_a, OUT[n])
