"""Joint-space inertia H(q) (RBDA Table 6.2, spatial_v2 ``HandC.m``, whose bias C is
``forward_dynamics.hand_c``'s; ``algorithms/crba.py`` computes H by the same passes in
world coordinates).

    I^c_i = I_i
    for i = N..1:
        I^c_λ(i) += X_iᵀ I^c_i X_i                      (composite inertia of i's subtree)
    for i = 1..N:
        F = I^c_i S_i;  H_ii = S_iᵀ F
        j = i
        while λ(j) != 0:
            F = X_jᵀ F;  j = λ(j)
            H_ij = Fᵀ S_j;  H_ji = H_ijᵀ

With ``jcalc``'s folded S (a mimic joint's S is mult times its axis and
sits at its master's DOF) the blocks are *added* into H: that is
H = Gᵀ H_full G.  Two bodies on one DOF add both H_ij and H_ji to it.
"""
import numpy as np

from .jcalc import jcalc
from .tree import bodies, full_size


def composite_inertias(tree, Xup):
    """I^c_i, the inertia of body i's subtree about body i's origin, body frame."""
    IC = [b.I.copy() for b in tree]
    for i in range(len(tree) - 1, -1, -1):
        if tree[i].parent >= 0:
            IC[tree[i].parent] += Xup[i].T @ IC[i] @ Xup[i]
    return IC


def crba(model, q, full=False):
    """H(q), the joint-space inertia matrix (``full``: H_full, every mimic joint its own DOF)."""
    q = np.asarray(q, dtype=float)
    tree = bodies(model)
    # ---- forward pass: X_i = X_J(q_i) X_T(i), S_i
    XS = [jcalc(b, q, fold=not full) for b in tree]
    Xup = [XJ @ b.Xtree for (XJ, _), b in zip(XS, tree, strict=True)]
    S = [s for _, s in XS]
    # ---- backward pass: the composite inertias I^c_i
    IC = composite_inertias(tree, Xup)
    # ---- H_ij, walking from each body up to the root
    dofs = [b.full_dofs if full else b.dofs for b in tree]
    n = full_size(model) if full else model.nv
    H = np.zeros((n, n))
    for i in range(len(tree)):
        F = IC[i] @ S[i]
        H[np.ix_(dofs[i], dofs[i])] += S[i].T @ F
        j = i
        while tree[j].parent >= 0:
            F = Xup[j].T @ F
            j = tree[j].parent
            Hij = F.T @ S[j]
            H[np.ix_(dofs[i], dofs[j])] += Hij
            H[np.ix_(dofs[j], dofs[i])] += Hij.T
    return H
