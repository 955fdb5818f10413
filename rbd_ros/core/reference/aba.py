"""Forward dynamics by the articulated-body algorithm (RBDA Table 7.1, spatial_v2 ``FDab.m``),
in the body frames as the table is written.

    v_0 = 0,  a_0 = -a_grav
    for i = 1..N:
        X_J, S_i = jcalc(q_i);  X_i = X_J X_T(i)
        v_i = X_i v_λ(i) + S_i qd_i;   c_i = v_i × S_i qd_i
        I^A_i = I_i;   p^A_i = v_i ×* I_i v_i - f_i^ext
    for i = N..1:
        U_i = I^A_i S_i;  D_i = S_iᵀ U_i;  u_i = tau_i - S_iᵀ p^A_i
        if λ(i) != 0:
            I^a = I^A_i - U_i D_i^-1 U_iᵀ
            p^a = p^A_i + I^a c_i + U_i D_i^-1 u_i
            I^A_λ(i) += X_iᵀ I^a X_i;   p^A_λ(i) += X_iᵀ p^a
    for i = 1..N:
        a' = X_i a_λ(i) + c_i
        qdd_i = D_i^-1 (u_i - U_iᵀ a');   a_i = a' + S_i qdd_i

(D_i is 6x6 for a free joint.)

Mimic joints couple two branches, which ABA's recursion cannot eliminate.
Formulation chosen here (the same as the kernel's): run the table on the
*full* coordinates — every mimic joint its own DOF, qd_full = G v, tau_full
= tau on the DOF joints and 0 on the mimic joints — and add the constraint
forces Jᵀ λ of J qdd_full = 0 (one row e_mimic - mult e_master per mimic
joint, J G = 0):

    qdd_0 = FDab(q, qd_full, tau_full, f_ext)            H_full qdd_0 = tau_full - b_full
    Y     = [FDab(q, 0, J_rᵀ, no gravity)]_r              Y = H_full^-1 Jᵀ
    (J Y) λ = -J qdd_0,   qdd_full = qdd_0 + Y λ

so Gᵀ H_full G qdd + Gᵀ b_full = tau: the reduced (mimic-folded) dynamics.
"""
import numpy as np

from .jcalc import jcalc
from .rnea import _f_body
from .spatial import crf, crm
from .tree import a_grav, bodies, full_size


def fdab(model, q, qd_full, tau_full, f_body=None, gravity=True):
    """Table 7.1 on the full coordinates; returns qdd_full."""
    tree = bodies(model)
    N = len(tree)
    Xup, S, v, c, IA, pA = [None] * N, [None] * N, [None] * N, [None] * N, [None] * N, [None] * N
    for i, b in enumerate(tree):
        XJ, S[i] = jcalc(b, q, fold=False)
        Xup[i] = XJ @ b.Xtree
        vJ = S[i] @ qd_full[b.full_dofs]
        v[i] = vJ if b.parent < 0 else Xup[i] @ v[b.parent] + vJ
        c[i] = crm(v[i]) @ vJ
        IA[i] = b.I.copy()
        pA[i] = crf(v[i]) @ b.I @ v[i] - (0.0 if f_body is None else f_body[i])
    U, Dinv, u = [None] * N, [None] * N, [None] * N
    for i in range(N - 1, -1, -1):
        b = tree[i]
        U[i] = IA[i] @ S[i]
        Dinv[i] = np.linalg.inv(S[i].T @ U[i])
        u[i] = tau_full[b.full_dofs] - S[i].T @ pA[i]
        if b.parent >= 0:
            Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T
            pa = pA[i] + Ia @ c[i] + U[i] @ Dinv[i] @ u[i]
            IA[b.parent] = IA[b.parent] + Xup[i].T @ Ia @ Xup[i]
            pA[b.parent] = pA[b.parent] + Xup[i].T @ pa
    qdd = np.zeros(full_size(model))
    a = [None] * N
    a0 = -a_grav(model) if gravity else np.zeros(6)
    for i, b in enumerate(tree):
        ap = Xup[i] @ (a0 if b.parent < 0 else a[b.parent]) + c[i]
        qdd[b.full_dofs] = Dinv[i] @ (u[i] - U[i].T @ ap)
        a[i] = ap + S[i] @ qdd[b.full_dofs]
    return qdd


def aba(model, q, v, tau, f_ext=None, f_ext_frame="local"):
    """qdd by ABA (same arguments as ``rbd_ros.core.aba``, single states)."""
    q, v, tau = (np.asarray(x, dtype=float) for x in (q, v, tau))
    tree = bodies(model)
    nf = full_size(model)
    qd_full, tau_full = np.zeros(nf), np.zeros(nf)
    J = []
    for b in tree:
        qd_full[b.full_dofs] = b.mult * v[b.dofs]
        if b.mimic:
            master = next(m for m in tree if not m.mimic and m.vi == b.vi)
            row = np.zeros(nf)
            row[b.fv] += 1.0
            row[master.fv] -= b.mult
            J.append(row)
        else:
            tau_full[b.full_dofs] = tau[b.dofs]
    qdd = fdab(model, q, qd_full, tau_full, _f_body(model, q, f_ext, f_ext_frame))
    if J:
        J = np.array(J)
        Y = np.column_stack([fdab(model, q, np.zeros(nf), Jr, gravity=False) for Jr in J])
        qdd = qdd + Y @ np.linalg.solve(J @ Y, -J @ qdd)
    out = np.zeros(model.nv)
    for b in tree:
        if not b.mimic:
            out[b.dofs] = qdd[b.full_dofs]
    return out
