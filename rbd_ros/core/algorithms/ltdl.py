"""LᵀDL factorisation with branch-induced sparsity (RBDA Tables 6.3 and 6.4).

The DOF parent λ of the model (``layout.dof_parent``) is such that every
non-zero H[k, i] with i < k has i an ancestor of k: for a tree without mimic
joints it is the kinematic tree's DOF parent; with mimic joints it is the
elimination tree of H's pattern (see ``model.dof_elimination_tree``).  Only
ancestors are visited: O(n d²).

    for k = n..1:
        i = λ(k)
        while i != 0:
            a = H_ki / H_kk
            j = i
            while j != 0:
                H_ij -= a H_kj;  j = λ(j)
            H_ki = a;  i = λ(i)

In place: D on the diagonal, L (unit lower triangular, H = Lᵀ D L) below.
"""
import numpy as np
from numba import njit

from ..layout import dof_parent
from ..spatial import JIT


@njit(**JIT)
def ltdl_factor(md, H):
    """Factorise H in place; returns False if a pivot is not positive."""
    n = H.shape[0]
    for k in range(n - 1, -1, -1):
        d = H[k, k]
        if not d > 0.0:
            return False
        i = dof_parent(md, k)
        while i >= 0:
            a = H[k, i] / d
            j = i
            while j >= 0:
                H[i, j] -= a * H[k, j]
                j = dof_parent(md, j)
            H[k, i] = a
            i = dof_parent(md, i)
    return True


@njit(**JIT)
def ltdl_solve_inplace(md, LD, x):
    """Solve (Lᵀ D L) y = x in place, LD from ``ltdl_factor``."""
    n = LD.shape[0]
    for i in range(n - 1, -1, -1):     # Lᵀ z = x
        j = dof_parent(md, i)
        while j >= 0:
            x[j] -= LD[i, j] * x[i]
            j = dof_parent(md, j)
    for i in range(n):                 # D w = z
        x[i] /= LD[i, i]
    for i in range(n):                 # L y = w
        j = dof_parent(md, i)
        while j >= 0:
            x[i] -= LD[i, j] * x[j]
            j = dof_parent(md, j)


@njit(**JIT)
def ltdl_k(md, H):
    """Public entry: factorise H (nv x nv, a copy the caller owns) in place."""
    for k in range(H.shape[0]):
        for j in range(H.shape[1]):
            if not np.abs(H[k, j]) < np.inf:
                return False
    return ltdl_factor(md, H)


@njit(**JIT)
def ltdl_solve_k(md, LD, X):
    """Public entry: solve for each row of X (m x nv) in place."""
    for r in range(X.shape[0]):
        ltdl_solve_inplace(md, LD, X[r])
