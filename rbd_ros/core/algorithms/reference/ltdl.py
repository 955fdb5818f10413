"""LᵀDL factorisation with branch-induced sparsity (RBDA Tables 6.3 and 6.4,
spatial_v2 ``LTDL.m``, ``mpyLi``/``mpyLit``/``mpyDi``).

    for k = n..1:
        i = λ(k)
        while i != 0:
            a = H_ki / H_kk
            j = i
            while j != 0:
                H_ij -= a H_kj;  j = λ(j)
            H_ki = a;  i = λ(i)

in place: D on the diagonal, L (unit lower triangular, H = Lᵀ D L) below.
λ is the DOF parent array such that every non-zero H_ki (i < k) has i among
k's ancestors: here it is computed from H's structural pattern by brute-force
symbolic elimination (``elimination_tree``), independently of the Model's
precomputed ancestor lists.  Without mimic joints it is the kinematic tree's DOF parent.
"""
import numpy as np

from .tree import bodies


def h_pattern(model):
    """Boolean nv x nv structural pattern of H: DOFs a, b are coupled when
    their bodies are equal or one is an ancestor of the other."""
    tree = bodies(model)
    P = np.eye(model.nv, dtype=bool)
    for i, b in enumerate(tree):
        j = i
        while j >= 0:
            P[np.ix_(b.dofs, tree[j].dofs)] = True
            P[np.ix_(tree[j].dofs, b.dofs)] = True
            j = tree[j].parent
    return P


def elimination_tree(P):
    """λ of a symmetric pattern P, eliminating from the last DOF down: every
    pair of k's earlier neighbours fills in (dense boolean update), and λ(k)
    is k's nearest earlier neighbour after fill (-1: none)."""
    P = P.copy()
    n = P.shape[0]
    lam = np.full(n, -1)
    for k in range(n - 1, -1, -1):
        nb = np.flatnonzero(P[k, :k])
        P[np.ix_(nb, nb)] = True
        if nb.size:
            lam[k] = nb.max()
    return lam


def dof_parents(model):
    return elimination_tree(h_pattern(model))


def ltdl(model, H, lam=None):
    """The packed factor of H (a copy): D on the diagonal, L below, zeros above."""
    lam = dof_parents(model) if lam is None else lam
    H = np.array(H, dtype=float)
    for k in range(H.shape[0] - 1, -1, -1):
        i = lam[k]
        while i >= 0:
            a = H[k, i] / H[k, k]
            j = i
            while j >= 0:
                H[i, j] -= a * H[k, j]
                j = lam[j]
            H[k, i] = a
            i = lam[i]
    return np.tril(H)


def ltdl_solve(model, LD, b, lam=None):
    """x with H x = b, LD = ltdl(model, H); b is (nv,) or (m, nv) right-hand sides.

        Lᵀ z = b:   for i = n..1:  z_j -= L_ij z_i   for every ancestor j of i
        D w = z:    w_i = z_i / D_i
        L x = w:    for i = 1..n:  x_i = w_i - Σ_j L_ij x_j   over the ancestors j of i
    """
    lam = dof_parents(model) if lam is None else lam
    x = np.array(b, dtype=float).T.copy()
    n = LD.shape[0]
    for i in range(n - 1, -1, -1):          # Lᵀ z = b
        j = lam[i]
        while j >= 0:
            x[j] -= LD[i, j] * x[i]
            j = lam[j]
    x /= np.diag(LD) if x.ndim == 1 else np.diag(LD)[:, None]
    for i in range(n):                       # L x = w
        j = lam[i]
        while j >= 0:
            x[i] -= LD[i, j] * x[j]
            j = lam[j]
    return x.T.copy()
