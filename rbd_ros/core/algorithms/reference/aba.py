"""Forward dynamics by the articulated-body algorithm (RBDA Table 7.1, spatial_v2 ``FDab.m``),
in the body frames as the table is written (``algorithms/aba.py``: the same passes in
world coordinates).

    v_0 = 0,  a_0 = -a_grav
    forward pass, i = 1..N:
        X_J, S_i = jcalc(q_i);  X_i = X_J X_T(i)
        v_i = X_i v_λ(i) + S_i qd_i;   c_i = v_i × S_i qd_i
        I^A_i = I_i;   p^A_i = v_i ×* I_i v_i - f_i^ext
    backward pass, i = N..1:
        U_i = I^A_i S_i;  D_i = S_iᵀ U_i;  u_i = tau_i - S_iᵀ p^A_i
        if λ(i) != 0:
            I^a = I^A_i - U_i D_i^-1 U_iᵀ
            p^a = p^A_i + I^a c_i + U_i D_i^-1 u_i
            I^A_λ(i) += X_iᵀ I^a X_i;   p^A_λ(i) += X_iᵀ p^a
    forward pass, i = 1..N:
        a' = X_i a_λ(i) + c_i
        qdd_i = D_i^-1 (u_i - U_iᵀ a');   a_i = a' + S_i qdd_i

(D_i is 6x6 for a free joint.)

Mimic joints couple two branches, which ABA's recursion cannot eliminate.
The reference then solves the reduced system instead (simple and always
correct when H is non-singular): with G the mimic map (v_full = G v, see
``tree.mimic_map``), H_full and the bias b_full of the tree with every mimic
joint a DOF of its own (``crba(full=True)``, ``id_sweeps(full=True)``),

    (Gᵀ H_full G) qdd = tau - Gᵀ b_full(q, G v, f_ext)

The kernel keeps ABA there instead: it runs the table on the full
coordinates (tau = 0 on the mimic joints) and adds constraint forces Jᵀ λ
(J qdd_full = 0, J G = 0): qdd_full = qdd_0 + Y λ, Y = H_full^-1 Jᵀ from
bias-free sweeps, (J Y) λ = -J qdd_0.  That needs H_full itself to be
invertible, and it need not be when Gᵀ H_full G is: e.g. a massless
free-flyer carrying a free-floating body and, on a revolute joint, a body
whose joint a mimic joint on the floating branch follows.  Rotating the root
about that joint's axis while the joint and the free body counter-move
moves no mass in full coordinates, but the mimic constraint forbids it.
The reduced solve here has no such restriction.
"""
import numpy as np

from .crba import crba
from .jcalc import jcalc
from .rnea import _f_body, id_sweeps
from .spatial import crf, crm
from .tree import a_grav, bodies, full_size, mimic_map


def fdab(model, q, qd_full, tau_full, f_body=None, gravity=True):
    """Table 7.1 on the full coordinates (every mimic joint its own DOF: the
    user's coordinates when the model has none); returns qdd_full."""
    tree = bodies(model)
    N = len(tree)
    Xup, S, v, c, IA, pA = [None] * N, [None] * N, [None] * N, [None] * N, [None] * N, [None] * N
    # ---- forward pass: X_i, S_i, v_i, c_i, I^A_i, p^A_i
    for i, b in enumerate(tree):
        XJ, S[i] = jcalc(b, q, fold=False)
        Xup[i] = XJ @ b.Xtree
        vJ = S[i] @ qd_full[b.full_dofs]
        v[i] = vJ if b.parent < 0 else Xup[i] @ v[b.parent] + vJ
        c[i] = crm(v[i]) @ vJ
        IA[i] = b.I.copy()
        pA[i] = crf(v[i]) @ b.I @ v[i] - (0.0 if f_body is None else f_body[i])
    # ---- backward pass: U_i, D_i, u_i; I^A, p^A passed to the parent
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
    # ---- forward pass: qdd_i, a_i
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
    f_body = _f_body(model, q, f_ext, f_ext_frame)
    if model.mimic_joints:
        G = mimic_map(model)
        b_full = id_sweeps(model, q, G @ v, np.zeros(G.shape[0]), f_body, full=True)[0]
        return np.linalg.solve(G.T @ crba(model, q, full=True) @ G, tau - G.T @ b_full)
    return fdab(model, q, v, tau, f_body)
