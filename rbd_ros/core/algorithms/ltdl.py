"""LᵀDL factorisation with branch-induced sparsity (RBDA Tables 6.3 and 6.4).

The DOF parent λ of the model (its DOF-parent table) is such that every
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

from ..layout import ancestors
from ..spatial import JIT


@njit(**JIT)
def ltdl_factor(md, H):
    """Factorise H in place; returns False if a pivot is not positive.

    The while-loops over λ above become loops over k's precomputed ancestor
    list A = (λ(k), λ(λ(k)), ...): i = A[m] and i's ancestors are A[m+1:]."""
    n = H.shape[0]
    for k in range(n - 1, -1, -1):
        d = H[k, k]
        if not d > 0.0:
            return False
        s, e = ancestors(md, k)
        for m in range(s, e):
            i = int(md[m])
            a = H[k, i] / d
            for l in range(m, e):
                j = int(md[l])
                H[i, j] -= a * H[k, j]
            H[k, i] = a
    return True


@njit(**JIT)
def ltdl_solve_inplace(md, LD, x):
    """Solve (Lᵀ D L) y = x in place, LD from ``ltdl_factor``."""
    n = LD.shape[0]
    for i in range(n - 1, -1, -1):     # Lᵀ z = x
        s, e = ancestors(md, i)
        xi = x[i]
        for m in range(s, e):
            j = int(md[m])
            x[j] -= LD[i, j] * xi
    for i in range(n):                 # D w = z
        x[i] /= LD[i, i]
    for i in range(n):                 # L y = w
        s, e = ancestors(md, i)
        xi = x[i]
        for m in range(s, e):
            j = int(md[m])
            xi -= LD[i, j] * x[j]
        x[i] = xi


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
