"""Recursive Newton-Euler Algorithm: inverse dynamics, RBDA Table 5.1
(spatial_v2 ``ID.m``; the numpy twin is ``reference/rnea.py``, pass for pass).

    v_0 = 0,  a_0 = -a_g
    forward pass, i = 1..N (body i's frame):
        X_i  = X_J(q_i) X_T(i)
        v_i  = X_i v_λ(i) + S_i qd_i
        a_i  = X_i a_λ(i) + S_i qdd_i + v_i x S_i qd_i
        f_i  = I_i a_i + v_i x* I_i v_i - f_i^ext
    backward pass, i = N..1:
        tau_i = S_i^T f_i
        f_λ(i) += X_i^T f_i

The armature (rotor inertia, per DOF) adds ``armature_k * qdd_k`` to tau_k.
A mimic joint's qd/qdd are ``multiplier * master``; its tau_i is folded into
the master's (``tau_master += multiplier * S_i^T f_i``), i.e. tau = G^T tau_full.

``gravity`` and ``bias`` are the same passes with qd = qdd = 0 and qdd = 0
(``use_v``, ``use_a`` False: not read).  With gravity alone every a_i is [0; l]
(a_0 = [0; -g], no joint motion), so X_i a_λ(i) = [0; E_i l] and I_i a_i =
[h x l; m l]: 3x3 products instead of the 6-D ones.
"""
import numpy as np
from numba import njit

from .common import (
    BAD_FEXT,
    BAD_QUAT,
    BAD_RESULT,
    OK,
    add_joint_force,
    add_joint_motion,
    all_finite,
    check_state,
    fext_fits,
    fext_row,
    fill,
    jcalc,
    no_fext,
    sub,
    world_transform,
)
from .layout import H_NV, armature, bodies, gravity, offsets, rnea_slots, scratch, vector, workspace_size, world_slots
from .spatial import ENTRY, INLINE, JIT, I_m, Xm, Xstar_f, XT_f_add, crf_add
from .views import borrow


@njit(**INLINE)
def parent_motion(Xi, v, a, p, g, use_v, use_a, vi, ai):
    """vi = X_i v_λ, ai = X_i a_λ (the root's v_λ = 0, a_λ = -a_g = [0; -g]); vi is
    written only if use_v.  With neither, a_λ = [0; l] and X_i a_λ = [0; E_i l]."""
    if p < 0:
        fill(vi, 0.0)
        for k in range(3):
            ai[k] = 0.0
            ai[3 + k] = -(Xi[3 * k] * g[0] + Xi[3 * k + 1] * g[1] + Xi[3 * k + 2] * g[2])
        return
    if use_v:
        Xm(Xi, v[p], vi)
    if use_v or use_a:
        Xm(Xi, a[p], ai)
    else:
        ap = a[p]
        for k in range(3):
            ai[k] = 0.0
            ai[3 + k] = Xi[3 * k] * ap[3] + Xi[3 * k + 1] * ap[4] + Xi[3 * k + 2] * ap[5]


@njit(**INLINE)
def body_force(I, vi, ai, use_v, use_a, Iv, fi):
    """fi = I ai + vi x* I vi (Iv: 6 numbers of scratch); vi is read only if use_v.
    With neither flag ai = [0; l] and I ai = [h x l; m l]."""
    if use_v or use_a:
        I_m(I, ai, fi)
    else:
        fi[0] = I[2] * ai[5] - I[3] * ai[4]
        fi[1] = I[3] * ai[3] - I[1] * ai[5]
        fi[2] = I[1] * ai[4] - I[2] * ai[3]
        fi[3] = I[0] * ai[3]
        fi[4] = I[0] * ai[4]
        fi[5] = I[0] * ai[5]
    if use_v:
        I_m(I, vi, Iv)
        crf_add(vi, Iv, fi)


@njit(**ENTRY)
def rnea_into(md, ws, q, qd, qdd, fext, fext_world, use_v, use_a, tau):
    """tau = ID(q, qd, qdd, fext) into ``tau`` (length nv).

    ``fext`` is (nb, 6) per *body* ([n; f] order) in the body frame, or in the
    world frame about the world origin if ``fext_world``; a (0, 6) array means
    none.  ``use_v``/``use_a`` False treat qd/qdd as zero without reading them.
    Returns a status code (common.OK on success; BAD_SHAPE, having read nothing,
    if an argument's length does not fit the model)."""
    md, ws, q, qd, qdd = borrow(md), borrow(ws), borrow(q), borrow(qd), borrow(qdd)  # no reference counts below
    fext, tau = borrow(fext), borrow(tau)
    B = bodies(md)
    nv = tau.shape[0]
    st = check_state(md, ws, q, qd, qdd, use_v, use_a, nv == md.view(np.int64)[H_NV] and fext_fits(fext, B.n))
    if st != OK:
        return st
    has_fext = fext.shape[0] == B.n
    if has_fext:
        for i in range(B.n):
            if not all_finite(fext[i]):
                return BAD_FEXT
    offs = offsets(md)
    X, v, a, f = rnea_slots(ws, offs, B.n)
    X0 = world_slots(ws, offs, B.n)          # with world-frame f_ext
    t = scratch(ws, offs)
    Iv = vector(t, 0, 6)
    fw = vector(t, 6, 6)
    g = gravity(md)

    # ---- forward pass: X_i, v_i, a_i, f_i
    for i in range(B.n):
        if not jcalc(B, i, q, X[i]):                                        # X_i = X_J(q_i) X_T(i)
            return BAD_QUAT
        parent_motion(X[i], v, a, B.parent[i], g, use_v, use_a, v[i], a[i])  # X_i v_λ(i), X_i a_λ(i)
        add_joint_motion(B, i, qd, qdd, use_v, use_a, v[i], a[i])           # + S_i qd_i, + S_i qdd_i + v_i x S_i qd_i
        body_force(B.I[i], v[i], a[i], use_v, use_a, Iv, f[i])              # f_i = I_i a_i + v_i x* I_i v_i
        if has_fext and fext_world:                                         # f_i -= X0_i* f_i^ext (world)
            world_transform(B, i, X, X0)
            Xstar_f(X0[i], fext[i], fw)
            sub(f[i], fw)
        elif has_fext:                                                      # f_i -= f_i^ext (body frame)
            sub(f[i], fext[i])

    # ---- backward pass: tau_i = S_i^T f_i,  f_λ(i) += X_i^T f_i
    fill(tau, 0.0)
    for i in range(B.n - 1, -1, -1):
        add_joint_force(B, i, f[i], tau)
        p = B.parent[i]
        if p >= 0:
            XT_f_add(X[i], f[i], f[p])
    if use_a:
        arm = armature(md)
        for k in range(nv):
            tau[k] += arm[k] * qdd[k]
    if not all_finite(tau):     # finite arguments so large that tau overflowed
        return BAD_RESULT
    return OK


# ---- entry points (few arguments: the call overhead is part of the budget)
#
# The flags are passed as ``bool(0)`` / ``bool(1)``, not ``False`` / ``True``: numba
# types a constant as ``Literal[bool]`` and would compile a separate copy of the
# whole RNEA body for every combination of constant flags (gravity, bias, rnea,
# compensation, forward dynamics: five copies); ``bool(c)`` is a plain ``boolean``,
# so every caller shares one compiled ``rnea_into`` (LLVM still sees the constant).

@njit(**ENTRY)
def rnea_k(md, ws, q, v, a, out):
    return rnea_into(md, ws, q, v, a, no_fext(ws), bool(0), bool(1), bool(1), out)


# with f_ext: rnea_into itself (no wrapper kernel, ~0.5 s less compile: see aba.aba_k)
rnea_fext_k = rnea_into


@njit(**ENTRY)
def gravity_k(md, ws, q, out):
    return rnea_into(md, ws, q, q, q, no_fext(ws), bool(0), bool(0), bool(0), out)


@njit(**ENTRY)
def bias_k(md, ws, q, v, out):
    return rnea_into(md, ws, q, v, v, no_fext(ws), bool(0), bool(1), bool(0), out)


@njit(**JIT)
def rnea_batch_k(md, Q, V, A, fext, fext_world, use_v, use_a, OUT, status, start, stop):
    """Row n of OUT = rnea(Q[n], V[n], A[n], fext[n]) for start <= n < stop; fext is
    (N, nb, 6) or (0, nb, 6) (serial, one workspace: ``batch.run_batch`` runs row ranges
    on threads: the kernel releases the GIL, and a serial kernel is cached by numba, a
    ``prange`` one would be recompiled in every process)."""
    md, Q, V = borrow(md), borrow(Q), borrow(V)
    A, fext, OUT, status = borrow(A), borrow(fext), borrow(OUT), borrow(status)
    ws = np.empty(workspace_size(md))     # owned here (not borrowed): kept alive by its uses
    none = no_fext(ws)
    for n in range(start, stop):
        status[n] = rnea_into(md, ws, Q[n], V[n], A[n], fext_row(fext, n, none), fext_world, use_v, use_a, OUT[n])
