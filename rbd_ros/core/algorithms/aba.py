"""Articulated-Body Algorithm (RBDA Table 7.1), a second forward-dynamics path.

    v_0 = 0,  a_0 = -a_g
    for i = 1..N:
        X_i = X_J(q_i) X_T(i);  v_i = X_i v_λ + S_i qd_i;  c_i = v_i x S_i qd_i
        I^A_i = I_i;  p^A_i = v_i x* I_i v_i - f_i^ext
    for i = N..1:
        U_i = I^A_i S_i;  D_i = S_i^T U_i;  u_i = tau_i - S_i^T p^A_i
        if λ(i) != 0:
            I^a = I^A_i - U_i D_i^-1 U_i^T
            p^a = p^A_i + I^a c_i + U_i D_i^-1 u_i
            I^A_λ += X_i^T I^a X_i;   p^A_λ += X_i^T p^a
    for i = 1..N:
        a' = X_i a_λ + c_i
        qdd_i = D_i^-1 (u_i - U_i^T a')
        a_i = a' + S_i qdd_i

Mimic joints (``mimic=True``) are kinematic constraints qdd_dep = m qdd_master,
which ABA cannot eliminate on the way.  It runs on the *full* coordinates
(every mimic joint a DOF, tau = 0 on it) and adds the constraint forces J^T λ
(J qdd_full = 0, J G = 0): with Y = H_full^-1 J^T from one bias-free ABA
sweep per constraint (the articulated inertias are reused),

    qdd_full = qdd_0 + Y λ,   (J Y) λ = -J qdd_0

which is the reduced dynamics exactly, at O(n (1 + n_mimic)).
"""
import numpy as np
from numba import njit, prange

from ..joints import (FREE, PRISMATIC, REVOLUTE, free_transform, prismatic_transform,
                      revolute_transform)
from ..layout import (C_AXIS, C_ET, C_FV, C_JTYPE, C_MASS, C_MIMIC, C_MULT, C_OFFSET, C_PARENT, C_QI, C_VI, H_GRAV,
                      H_NB, H_NMIM, H_NVF, W_ABA, W_RNEA, body_row, mimic_pair, region_offsets, workspace_size)
from ..spatial import (JIT, chol6_solve, cross_force_add, cross_motion, inertia_mul, inertia_to_mat6,
                       mat6_vec, mat6_xT_X_add, x_force, x_motion, xT_force_add)
from .common import (BAD_A, BAD_FEXT, BAD_Q, BAD_QUAT, BAD_V, OK, SINGULAR, S_column, S_dot, all_finite,
                     joint_motion)
from .rnea import world_placement

X_, V_ = 0, 12                          # slots in the RNEA region
IA_, PA_, C_, U_, D_, u_ = 0, 36, 42, 48, 84, 120   # slots in the ABA region


@njit(**JIT)
def _articulated_inertias(md, ws, oR, oA, t):
    """Backward sweep for I^A, U, D (independent of v, tau, f_ext).
    Returns False if some D is not positive definite."""
    nb = int(md[H_NB])
    for i in range(nb - 1, -1, -1):
        o = body_row(md, i)
        b = oA + i * W_ABA
        p = int(md[o + C_PARENT])
        if int(md[o + C_JTYPE]) == FREE:
            # S = 1: U = D = I^A, I^a = 0 -> nothing reaches the parent's inertia
            for k in range(36):
                ws[b + U_ + k] = ws[b + IA_ + k]
                ws[b + D_ + k] = ws[b + IA_ + k]
            continue
        # U = I^A S with S = [u; 0] (revolute) or [0; u] (prismatic): three columns of I^A
        cs = 0 if int(md[o + C_JTYPE]) == REVOLUTE else 3
        u0 = md[o + C_AXIS]
        u1 = md[o + C_AXIS + 1]
        u2 = md[o + C_AXIS + 2]
        for r in range(6):
            ws[b + U_ + r] = (ws[b + IA_ + 6 * r + cs] * u0 + ws[b + IA_ + 6 * r + cs + 1] * u1
                              + ws[b + IA_ + 6 * r + cs + 2] * u2)
        D = u0 * ws[b + U_ + cs] + u1 * ws[b + U_ + cs + 1] + u2 * ws[b + U_ + cs + 2]
        if not D > 0.0:
            return False
        ws[b + D_] = D
        if p >= 0:
            Ia = t + 6
            for r in range(6):
                for c in range(6):
                    ws[Ia + 6 * r + c] = ws[b + IA_ + 6 * r + c] - ws[b + U_ + r] * ws[b + U_ + c] / D
            mat6_xT_X_add(ws, oR + i * W_RNEA + X_, ws, Ia, ws, t + 42, ws, oA + p * W_ABA + IA_)
    return True


@njit(**JIT)
def _force_and_accel_sweeps(md, ws, oR, oA, t, tau_full, with_bias, qdd_full):
    """Backward sweep for u and p^A, forward sweep for the accelerations.
    ``p^A`` (and ``c``) must hold the bias terms (or zeros when not
    ``with_bias``).  Writes qdd_full (user order per body).  False if a free
    joint's I^A is not positive definite."""
    nb = int(md[H_NB])
    for i in range(nb - 1, -1, -1):
        o = body_row(md, i)
        b = oA + i * W_ABA
        fv = int(md[o + C_FV])
        p = int(md[o + C_PARENT])
        pa = t
        if int(md[o + C_JTYPE]) == FREE:
            # u = tau - p^A; p^a = p^A + u = tau
            for k in range(6):
                s = (k + 3) % 6
                ws[b + u_ + s] = tau_full[fv + k] - ws[b + PA_ + s]
                ws[pa + s] = tau_full[fv + k]
        else:
            S_column(md, o, 0, ws, t + 6)
            u = tau_full[fv] - S_dot(md, o, 0, ws, b + PA_)
            ws[b + u_] = u
            if p >= 0:
                # p^a = p^A + I^a c + U D^-1 u, with I^a c = I^A c - U (U^T c) / D
                D = ws[b + D_]
                mat6_vec(ws, b + IA_, ws, b + C_, ws, pa)
                Uc = 0.0
                for k in range(6):
                    Uc += ws[b + U_ + k] * ws[b + C_ + k]
                for k in range(6):
                    ws[pa + k] += ws[b + PA_ + k] + ws[b + U_ + k] * (u - Uc) / D
        if p >= 0:
            xT_force_add(ws, oR + i * W_RNEA + X_, ws, pa, ws, oA + p * W_ABA + PA_)
    g0 = md[H_GRAV]
    g1 = md[H_GRAV + 1]
    g2 = md[H_GRAV + 2]
    ap = t + 12        # a' = X a_λ + c
    for i in range(nb):
        o = body_row(md, i)
        b = oA + i * W_ABA
        x = oR + i * W_RNEA
        p = int(md[o + C_PARENT])
        fv = int(md[o + C_FV])
        if p >= 0:
            x_motion(ws, x + X_, ws, oR + p * W_RNEA + 18, ws, ap)
        else:
            for k in range(3):
                ws[ap + k] = 0.0
                ws[ap + 3 + k] = 0.0
                if with_bias:
                    ws[ap + 3 + k] = -(ws[x + 3 * k] * g0 + ws[x + 3 * k + 1] * g1 + ws[x + 3 * k + 2] * g2)
        for k in range(6):
            ws[ap + k] += ws[b + C_ + k]
        a_i = x + 18                  # a_i stored in the RNEA region's a slot
        if int(md[o + C_JTYPE]) == FREE:
            # a_i = (I^A)^-1 u;  qdd = a_i - a'
            if not chol6_solve(ws, b + D_, ws, b + u_, ws, t + 24, ws, a_i):
                return False
            for k in range(6):
                qdd_full[fv + k] = ws[a_i + (k + 3) % 6] - ws[ap + (k + 3) % 6]
        else:
            Ua = 0.0
            for k in range(6):
                Ua += ws[b + U_ + k] * ws[ap + k]
            qdd = (ws[b + u_] - Ua) / ws[b + D_]
            qdd_full[fv] = qdd
            S_column(md, o, 0, ws, t + 6)
            for k in range(6):
                ws[a_i + k] = ws[ap + k] + ws[t + 6 + k] * qdd
    return True


@njit(**JIT)
def aba_into(md, ws, q, v, tau, fext, fext_world, out):
    nb = int(md[H_NB])
    nvf = int(md[H_NVF])
    nmim = int(md[H_NMIM])
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    if not all_finite(tau):
        return BAD_A
    has_fext = fext.shape[0] == nb
    if has_fext:
        for i in range(nb):
            if not all_finite(fext[i]):
                return BAD_FEXT
    offs = region_offsets(nb, nvf, nmim)
    oR = offs[0]
    oW = offs[1]
    oA = offs[3]
    t = offs[5]
    ov = offs[7]                       # full vectors: tau_full, qdd_full, rhs
    tau_full = ws[ov:ov + nvf]
    qdd_full = ws[ov + nvf:ov + 2 * nvf]
    rhs = ws[ov + 2 * nvf:ov + 3 * nvf]

    # ---- forward sweep: X, v, c, I^A, p^A
    for i in range(nb):
        o = body_row(md, i)
        x = oR + i * W_RNEA
        b = oA + i * W_ABA
        jt = int(md[o + C_JTYPE])
        qi = int(md[o + C_QI])
        if jt == REVOLUTE:
            revolute_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                               ws, x + X_)
        elif jt == PRISMATIC:
            prismatic_transform(md, o + C_ET, md, o + C_AXIS, md[o + C_MULT] * q[qi] + md[o + C_OFFSET],
                                ws, x + X_)
        elif not free_transform(md, o + C_ET, q, qi, ws, x + X_):
            return BAD_QUAT
        p = int(md[o + C_PARENT])
        joint_motion(md, o, v, ws, t)                 # vJ = S qd
        if p >= 0:
            x_motion(ws, x + X_, ws, oR + p * W_RNEA + V_, ws, x + V_)
            cross_motion(ws, x + V_, ws, t, ws, b + C_)     # c = (X v_λ) x vJ = v_i x vJ
        else:
            for k in range(6):
                ws[x + V_ + k] = 0.0
                ws[b + C_ + k] = 0.0
        for k in range(6):
            ws[x + V_ + k] += ws[t + k]
        inertia_to_mat6(md, o + C_MASS, ws, b + IA_)
        inertia_mul(md, o + C_MASS, ws, x + V_, ws, t)
        for k in range(6):
            ws[b + PA_ + k] = 0.0
        cross_force_add(ws, x + V_, ws, t, ws, b + PA_)
        if has_fext:
            if fext_world:
                world_placement(md, ws, i, oR, oW)
                x_force(ws, oW + i * 12, fext[i], 0, ws, t)
                for k in range(6):
                    ws[b + PA_ + k] -= ws[t + k]
            else:
                for k in range(6):
                    ws[b + PA_ + k] -= fext[i, k]
        # tau in full coordinates: the user's for DOF joints, 0 on mimic joints
        fv = int(md[o + C_FV])
        vi = int(md[o + C_VI])
        if int(md[o + C_JTYPE]) == FREE:
            for k in range(6):
                tau_full[fv + k] = tau[vi + k]
        else:
            tau_full[fv] = 0.0 if md[o + C_MIMIC] != 0.0 else tau[vi]

    if not _articulated_inertias(md, ws, oR, oA, t):
        return SINGULAR
    if not _force_and_accel_sweeps(md, ws, oR, oA, t, tau_full, True, qdd_full):
        return SINGULAR

    if nmim > 0:
        # Y = H_full^-1 J^T, one bias-free sweep per constraint row
        oY = offs[8]
        oK = offs[9]
        for c in range(nmim):
            ib, kb = mimic_pair(md, c)
            for k in range(nvf):
                rhs[k] = 0.0
            rhs[int(md[body_row(md, ib) + C_FV])] = 1.0
            rhs[int(md[body_row(md, kb) + C_FV])] -= md[body_row(md, ib) + C_MULT]
            for i in range(nb):
                b = oA + i * W_ABA
                for k in range(6):
                    ws[b + PA_ + k] = 0.0
                    ws[b + C_ + k] = 0.0
            if not _force_and_accel_sweeps(md, ws, oR, oA, t, rhs, False, ws[oY + c * nvf:oY + (c + 1) * nvf]):
                return SINGULAR
        # K = J Y (symmetric positive definite), rhs = -J qdd_0
        for r in range(nmim):
            ib, kb = mimic_pair(md, r)
            fi = int(md[body_row(md, ib) + C_FV])
            fk = int(md[body_row(md, kb) + C_FV])
            m = md[body_row(md, ib) + C_MULT]
            for c in range(nmim):
                ws[oK + r * nmim + c] = ws[oY + c * nvf + fi] - m * ws[oY + c * nvf + fk]
            rhs[r] = -(qdd_full[fi] - m * qdd_full[fk])
        K = ws[oK:oK + nmim * nmim].reshape((nmim, nmim))
        lam = rhs[:nmim]
        if not _cholesky_solve(K, lam):
            return SINGULAR
        for c in range(nmim):
            for k in range(nvf):
                qdd_full[k] += ws[oY + c * nvf + k] * lam[c]

    for i in range(nb):
        o = body_row(md, i)
        if md[o + C_MIMIC] != 0.0:
            continue
        fv = int(md[o + C_FV])
        vi = int(md[o + C_VI])
        for k in range(6 if int(md[o + C_JTYPE]) == FREE else 1):
            out[vi + k] = qdd_full[fv + k]
    return OK


@njit(**JIT)
def _cholesky_solve(K, x):
    """Solve K y = x in place (K symmetric positive definite, overwritten)."""
    n = K.shape[0]
    for i in range(n):
        for j in range(i + 1):
            s = K[i, j]
            for k in range(j):
                s -= K[i, k] * K[j, k]
            if i == j:
                if not s > 0.0:
                    return False
                K[i, i] = np.sqrt(s)
            else:
                K[i, j] = s / K[j, j]
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= K[i, k] * x[k]
        x[i] = s / K[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= K[k, i] * x[k]
        x[i] = s / K[i, i]
    return True


@njit(**JIT)
def aba_k(md, ws, q, v, tau, out):
    return aba_into(md, ws, q, v, tau, ws[:0].reshape((0, 6)), False, out)


@njit(**JIT)
def aba_fext_k(md, ws, q, v, tau, fext, fext_world, out):
    return aba_into(md, ws, q, v, tau, fext, fext_world, out)


@njit(**dict(JIT, parallel=True))
def aba_batch_k(md, Q, V, T, fext, fext_world, OUT, status, nthreads):
    N = Q.shape[0]
    nth = min(nthreads, max(N, 1))
    chunk = (N + nth - 1) // nth
    wsize = workspace_size(md)
    for t in prange(nth):
        ws = np.empty(wsize)
        nofext = ws[:0].reshape((0, 6))
        for n in range(t * chunk, min(N, (t + 1) * chunk)):
            if fext.shape[0] == N:
                status[n] = aba_into(md, ws, Q[n], V[n], T[n], fext[n], fext_world, OUT[n])
            else:
                status[n] = aba_into(md, ws, Q[n], V[n], T[n], nofext, fext_world, OUT[n])
