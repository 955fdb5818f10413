"""Articulated-Body Algorithm: forward dynamics, RBDA Table 7.1 in its
world-frame variant (Pinocchio's arrangement); a second forward-dynamics path.
Table 7.1 as written (body frames, a congruence X_i^T I^a X_i per body) is the
twin, ``reference/aba.py`` (``fdab``), pass for pass.

Every quantity below is in world coordinates, moments about the world
origin: X0_i is the world -> body-i transform, S_i the joint's motion
subspace mapped to the world (S_i = X0_i^-1 S_i^body), I_i = X0_i^T I_i^body
X0_i.  The kernel runs (1-DOF joints; the free joint below):

    v_0 = 0,  a_0 = -a_g
    forward pass, i = 1..N:
        X_i = X_J(q_i) X_T(i);  X0_i = X_i X0_λ
        vJ_i = X0_i^-1 S_i^body qd_i;  v_i = v_λ + vJ_i;  c_i = v_λ x vJ_i
        I^A_i = I_i;  p^A_i = v_i x* I_i v_i - f_i^ext      (f^ext mapped to world if local)
    backward pass, i = N..1:
        U_i = I^A_i S_i;  D_i = S_i^T U_i + armature_i;  u_i = tau_i - S_i^T p^A_i
        if λ(i) != 0:
            I^A_λ += I^A_i - U_i D_i^-1 U_i^T                       (no congruence)
            p^A_λ += p^A_i + (I^A_i - U_i D_i^-1 U_i^T) c_i + U_i D_i^-1 u_i
    forward pass, i = 1..N:
        a' = a_λ + c_i
        qdd_i = D_i^-1 (u_i - U_i^T a')
        a_i = a' + S_i qdd_i

Because all spatial quantities share one frame, a child's articulated
inertia adds to its parent's directly; c_i = v_λ x vJ_i equals the
textbook v_i x S_i qd_i (vJ_i x vJ_i = 0), and a_0 = -a_g applies the
gravity.  A free joint (S invertible) passes no inertia to its parent
(I^a = 0) and the world force p^a = X0_i^T tau_i^body; its acceleration is
a_i = (I^A_i)^-1 (p^a - p^A_i) by a 6x6 Cholesky solve, and qdd_i is
X0_i (a_i - a') in the body frame.

Mimic joints (``mimic=True``) are kinematic constraints qdd_dep = m qdd_master,
which ABA cannot eliminate on the way.  It runs on the *full* coordinates
(every mimic joint a DOF, tau = 0 on it) and adds the constraint forces J^T λ
(J qdd_full = 0, J G = 0): with Y = H_full^-1 J^T from one bias-free ABA
sweep per constraint (the articulated inertias are reused),

    qdd_full = qdd_0 + Y λ,   (J Y) λ = -J qdd_0

which is the reduced dynamics exactly, at O(n (1 + n_mimic)).

The armature (rotor inertia) of a DOF adds to its joint's D_i (Pinocchio's
``StU += armature``); mimic joints have none in the full coordinates (their
master's counts), so the reduced H gets exactly diag(armature).

Fallback.  The full coordinates can be singular where the reduced ones are
not (a mimic joint moving a massless child, or a massless free body whose
only motion the mimic hinge also produces), and world-frame sweeps lose
precision in nearly singular articulated inertias.  Every pivot is therefore
tested relative to its own scale: D_i <= PIVOT_TOL sum_r S_r^2 I^A_rr for
1-DOF joints, each Cholesky pivot of a free joint's I^A against its diagonal
entry.  When one fails (or the mimic system K is not positive definite), the
kernel returns SINGULAR and its caller (``dynamics.aba``, single calls and
each such batch row) computes the result by CRBA + LᵀDL instead
(``forward_dynamics``), which reports SINGULAR only if H itself is singular.
With mimic joints a pivot is also tested against the largest one, D_i <=
PIVOT_TOL max_j D_j: a body much lighter than the rest (a finger of 1e-12 kg
on a mimic master) makes the full coordinates ill-conditioned although the
reduced H is not (scaled cond(H) ~ 15 on panda), and the constraint solve
through Y = H_full^-1 J^T then loses eps / ratio of accuracy.  (D_i is a
scalar, the same in every frame.)
So aba returns what forward_dynamics returns wherever that works; only the
rare fallback costs the CRBA path's time.  (The kernel does not call the
CRBA path itself: numba would then re-optimise all of forward dynamics
inside every ABA kernel, seconds of compile for a path that rarely runs.)
The tolerance is 1e-6, not ~eps: a pivot ratio r
costs ABA about eps / r of relative accuracy, and the world-frame sweeps
meet small ratios far from the world origin (a robot 1 km away: r ~ 1e-8,
errors ~ 4e-8 without the fallback).  Real robots near the origin stay
above ~1e-3 (panda, ur5, talos, solo12, anymal: no fallback).
"""
import numpy as np
from numba import njit

from .common import (
    BAD_FEXT,
    BAD_QUAT,
    OK,
    SINGULAR,
    S_column,
    add,
    all_finite,
    check_state,
    fext_fits,
    fext_row,
    fill,
    finite_result,
    jcalc,
    joint_velocity,
    ncols,
    no_fext,
    sub,
    world_transform,
)
from .joints import FREE
from .layout import (
    H_NMIM,
    H_NV,
    H_NVF,
    R_K,
    R_VEC,
    R_Y,
    aba_slots,
    armature,
    bodies,
    gravity,
    mimic_pair,
    offsets,
    rnea_slots,
    rows,
    scratch,
    vector,
    workspace_size,
    world_slots,
)
from .spatial import ENTRY, INLINE, JIT, XT_I_X, I_m, I_to_mat6, Xinv_m, Xm, XT_f_add, cholesky_solve, crf_add, crm
from .views import borrow, contiguous

PIVOT_TOL = 1e-6        # relative pivot below which the CRBA path is used (module docstring)


@njit(**INLINE)
def world_velocity(B, i, X0i, qd, v, c, S, t):
    """Body i's world velocity v[i] = v_λ + vJ_i and c[i] = v_λ x vJ_i, with vJ_i =
    X0_i^-1 S_i qd_i; S[i] = X0_i^-1 S_i (1-DOF joints).  ``t``: 12 numbers of scratch."""
    vJ_body = vector(t, 0, 6)
    vJ = vector(t, 6, 6)
    joint_velocity(B, i, qd, vJ_body)
    Xinv_m(X0i, vJ_body, vJ)
    if B.jtype[i] != FREE:
        S_column(B, i, 0, vJ_body)
        Xinv_m(X0i, vJ_body, S[i])
    p = B.parent[i]
    if p >= 0:
        crm(v[p], vJ, c[i])
        for k in range(6):
            v[i, k] = v[p, k] + vJ[k]
    else:
        fill(c[i], 0.0)
        for k in range(6):
            v[i, k] = vJ[k]


@njit(**INLINE)
def bias_force(B, i, X0i, vi, fext, fext_world, IAi, pAi, t):
    """I^A_i = X0_i^T I_i X0_i (6 x 6), p^A_i = v_i x* I^A_i v_i - f_i^ext (world, about
    the world origin; a body-frame f^ext moved there by X0_i^T; ``fext`` (0, 6): none).
    ``t``: 19 numbers of scratch."""
    I0 = vector(t, 6, 13)
    Iv = vector(t, 0, 6)
    XT_I_X(X0i, B.I[i], I0)
    I_to_mat6(I0, IAi)
    I_m(I0, vi, Iv)
    fill(pAi, 0.0)
    crf_add(vi, Iv, pAi)
    if fext.shape[0] > 0 and fext_world:
        sub(pAi, fext[i])
    elif fext.shape[0] > 0:
        fill(Iv, 0.0)
        XT_f_add(X0i, fext[i], Iv)
        sub(pAi, Iv)


@njit(**JIT)
def articulated_inertias(md, ws):
    """Backward pass for I^A, U, D (independent of v, tau, f_ext), world frame.
    Returns False if some D is not positive relative to its scale (and, with mimic
    joints, to the largest D: see the module docstring)."""
    B = bodies(md)
    IA, _, _, U, D, _, S = aba_slots(ws, offsets(md), B.n)
    arm = armature(md)
    dmax = 0.0
    for i in range(B.n - 1, -1, -1):
        if B.jtype[i] == FREE:
            # S invertible: I^a = 0, nothing reaches the parent; keep I^A for the solve
            for r in range(6):
                for k in range(6):
                    D[i, r, k] = IA[i, r, k]
            continue
        d = 0.0              # D_i = S_i^T U_i (+ armature), U_i = I^A_i S_i
        scale = 0.0
        for r in range(6):
            ur = 0.0
            for k in range(6):
                ur += IA[i, r, k] * S[i, k]
            U[i, r] = ur
            d += S[i, r] * ur
            scale += S[i, r] * S[i, r] * IA[i, r, r]
        if B.mimic[i] == 0:
            d += arm[B.vi[i]]
        if not d > PIVOT_TOL * scale:
            return False
        D[i, 0, 0] = d
        dmax = max(dmax, d)
        p = B.parent[i]
        if p >= 0:           # I^A_λ += I^A_i - U_i D_i^-1 U_i^T
            for r in range(6):
                ur = U[i, r] / d
                for k in range(6):
                    IA[p, r, k] += IA[i, r, k] - ur * U[i, k]
    if md.view(np.int64)[H_NMIM] > 0:
        for i in range(B.n):
            if B.jtype[i] != FREE and not D[i, 0, 0] > PIVOT_TOL * dmax:
                return False
    return True


@njit(**JIT)
def force_and_accel_sweeps(md, ws, tau_full, with_bias, qdd_full):
    """Backward pass for u and p^A, forward pass for the accelerations (world frame).
    ``p^A`` and ``c`` must hold the bias terms (or zeros when not ``with_bias``).
    Writes qdd_full (user order per body).  False if a free joint's I^A is not
    positive definite."""
    B = bodies(md)
    offs = offsets(md)
    IA, pA, c, U, D, u, S = aba_slots(ws, offs, B.n)
    a = rnea_slots(ws, offs, B.n)[2]
    X0 = world_slots(ws, offs, B.n)
    t = scratch(ws, offs)
    # ---- backward pass: u_i = tau_i - S_i^T p^A_i;  p^A_λ += p^A_i + I^a c_i + U_i D_i^-1 u_i
    for i in range(B.n - 1, -1, -1):
        p = B.parent[i]
        fv = B.fv[i]
        if B.jtype[i] == FREE:
            # tau as a world force F = X0^T tau_body; p^a = F goes to the parent
            tb = vector(t, 0, 6)
            for k in range(6):
                tb[(k + 3) % 6] = tau_full[fv + k]
            fill(u[i], 0.0)
            XT_f_add(X0[i], tb, u[i])
            if p >= 0:
                add(pA[p], u[i])
            continue
        ui = tau_full[fv]
        for k in range(6):
            ui -= S[i, k] * pA[i, k]
        u[i, 0] = ui
        if p >= 0:           # I^a c = I^A c - U (U^T c) / D
            d = D[i, 0, 0]
            Uc = 0.0
            for k in range(6):
                Uc += U[i, k] * c[i, k]
            for r in range(6):
                s_r = pA[i, r] + U[i, r] * (ui - Uc) / d
                for k in range(6):
                    s_r += IA[i, r, k] * c[i, k]
                pA[p, r] += s_r
    # ---- forward pass: a' = a_λ + c_i;  qdd_i = D_i^-1 (u_i - U_i^T a');  a_i = a' + S_i qdd_i
    g = gravity(md)
    ap = vector(t, 6, 6)
    for i in range(B.n):
        p = B.parent[i]
        for k in range(6):
            ap[k] = (a[p, k] if p >= 0 else 0.0) + c[i, k]
        if p < 0 and with_bias:             # a_0 = -a_g, world frame
            for k in range(3):
                ap[3 + k] -= g[k]
        if B.jtype[i] == FREE:
            if not free_joint_accel(X0[i], IA[i], D[i], pA[i], u[i], ap, a[i], vector(t, 12, 60),
                                    qdd_full, B.fv[i]):
                return False
            continue
        Ua = 0.0
        for k in range(6):
            Ua += U[i, k] * ap[k]
        qdd = (u[i, 0] - Ua) / D[i, 0, 0]
        qdd_full[B.fv[i]] = qdd
        for k in range(6):
            a[i, k] = ap[k] + S[i, k] * qdd
    return True


@njit(**INLINE)
def free_joint_accel(X0i, IAi, Di, pAi, Fi, ap, ai, t, qdd_full, fv):
    """a_i = (I^A_i)^-1 (F_i - p^A_i) (a 6x6 Cholesky solve of the copy D_i of I^A_i);
    qdd = X0_i (a_i - a') in the body frame, into qdd_full[fv:fv+6] (user order [v; w]).
    False if a pivot is not positive relative to I^A_i's diagonal.  ``t``: 60 numbers."""
    L = rows(t, 6, 6, 6, 6)
    for k in range(6):
        ai[k] = Fi[k] - pAi[k]
    if not cholesky_solve(Di, L, ai):
        return False
    for k in range(6):      # pivots L_kk^2 relative to the diagonal of I^A
        if not L[k, k] * L[k, k] > PIVOT_TOL * Di[k, k]:
            return False
    rel = vector(t, 42, 6)
    body = vector(t, 48, 6)
    for k in range(6):
        rel[k] = ai[k] - ap[k]
    Xm(X0i, rel, body)
    for k in range(6):
        qdd_full[fv + k] = body[(k + 3) % 6]
    return True


@njit(**JIT)
def mimic_constraints(md, ws, qdd_full, rhs):
    """qdd_full += Y λ with Y = H_full^-1 J^T (one bias-free sweep per constraint row) and
    (J Y) λ = -J qdd_full: the mimic joints' constraint forces (module docstring).  False
    if a sweep or the solve meets a (nearly) singular pivot."""
    B = bodies(md)
    mi = md.view(np.int64)
    nvf = mi[H_NVF]
    nmim = mi[H_NMIM]
    offs = offsets(md)
    _, pA, c, _, _, _, _ = aba_slots(ws, offs, B.n)
    Y = rows(ws, offs[R_Y], nmim, nvf, nvf)
    K = contiguous(ws, offs[R_K], (nmim, nmim))
    for r in range(nmim):    # column r of J^T: +1 at the mimic joint, -m at its master
        ib, kb = mimic_pair(mi, r)
        fill(rhs, 0.0)
        rhs[B.fv[ib]] = 1.0
        rhs[B.fv[kb]] -= B.mult[ib]
        for i in range(B.n):
            fill(pA[i], 0.0)
            fill(c[i], 0.0)
        if not force_and_accel_sweeps(md, ws, rhs, bool(0), Y[r]):
            return False
    lam = vector(rhs, 0, nmim)
    for r in range(nmim):    # K = J Y (symmetric positive definite), lam = -J qdd_0
        ib, kb = mimic_pair(mi, r)
        fi = B.fv[ib]
        fk = B.fv[kb]
        m = B.mult[ib]
        for k in range(nmim):
            K[r, k] = Y[k, fi] - m * Y[k, fk]
        lam[r] = -(qdd_full[fi] - m * qdd_full[fk])
    if not cholesky_solve(K, K, lam):
        return False
    for r in range(nmim):
        for k in range(nvf):
            qdd_full[k] += Y[r, k] * lam[r]
    return True


@njit(**ENTRY)
def aba_into(md, ws, q, qd, tau, fext, fext_world, qdd):
    """ABA into ``qdd``; SINGULAR where a pivot is (nearly) singular, for the caller's
    CRBA + LᵀDL fallback (module docstring).  fext, fext_world: as rnea_into."""
    md, ws, q, qd, tau = borrow(md), borrow(ws), borrow(q), borrow(qd), borrow(tau)    # no reference counts
    fext, qdd = borrow(fext), borrow(qdd)
    B = bodies(md)
    mi = md.view(np.int64)
    st = check_state(md, ws, q, qd, tau, bool(1), bool(1), qdd.shape[0] == mi[H_NV] and fext_fits(fext, B.n))
    if st != OK:
        return st
    for i in range(fext.shape[0]):
        if not all_finite(fext[i]):
            return BAD_FEXT
    offs = offsets(md)
    X, v, _, _ = rnea_slots(ws, offs, B.n)
    X0 = world_slots(ws, offs, B.n)
    IA, pA, c, _, _, _, S = aba_slots(ws, offs, B.n)
    nvf = mi[H_NVF]
    tau_full = vector(ws, offs[R_VEC], nvf)
    qdd_full = vector(ws, offs[R_VEC] + nvf, nvf)
    t = scratch(ws, offs)

    # ---- forward pass (world frame): X0_i, S_i, v_i, c_i, I^A_i = I_i, p^A_i
    for i in range(B.n):
        if not jcalc(B, i, q, X[i]):
            return BAD_QUAT
        world_transform(B, i, X, X0)
        world_velocity(B, i, X0[i], qd, v, c, S, t)
        bias_force(B, i, X0[i], v[i], fext, fext_world, IA[i], pA[i], vector(t, 12, 19))
        for k in range(ncols(B, i)):    # tau in full coordinates: 0 on mimic joints
            tau_full[B.fv[i] + k] = 0.0 if B.mimic[i] != 0 else tau[B.vi[i] + k]

    # ---- backward pass, forward pass (and the mimic joints' constraint forces)
    ok = articulated_inertias(md, ws) and force_and_accel_sweeps(md, ws, tau_full, bool(1), qdd_full)
    if ok and mi[H_NMIM] > 0:
        ok = mimic_constraints(md, ws, qdd_full, vector(ws, offs[R_VEC] + 2 * nvf, nvf))
    if not ok:
        return SINGULAR       # the caller falls back to CRBA + LᵀDL
    for i in range(B.n):
        if B.mimic[i] == 0:
            for k in range(ncols(B, i)):
                qdd[B.vi[i] + k] = qdd_full[B.fv[i] + k]
    return finite_result(OK, qdd)


# The single-call entry point is aba_into itself, with or without f_ext (a (0, 6) fext:
# none): a wrapper kernel would cost ~1.6 s of compile (numba re-optimises the whole
# linked callee in every caller) for ~50 ns less argument passing.
aba_k = aba_into


@njit(**JIT)
def aba_batch_k(md, Q, V, T, fext, fext_world, OUT, status, start, stop):
    """Row n of OUT = aba(Q[n], V[n], T[n], fext[n]) for start <= n < stop (serial, one
    workspace: ``batch.run_batch`` runs row ranges on threads)."""
    md, Q, V = borrow(md), borrow(Q), borrow(V)
    T, fext, OUT, status = borrow(T), borrow(fext), borrow(OUT), borrow(status)
    ws = np.empty(workspace_size(md))     # owned here (not borrowed): kept alive by its uses
    none = no_fext(ws)
    for n in range(start, stop):
        status[n] = aba_into(md, ws, Q[n], V[n], T[n], fext_row(fext, n, none), fext_world, OUT[n])
