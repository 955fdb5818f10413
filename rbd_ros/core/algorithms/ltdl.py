"""LᵀDL factorisation with branch-induced sparsity (RBDA Tables 6.3 and 6.4).

λ is a DOF parent array such that every non-zero H[k, i] with i < k has i
an ancestor of k: for a tree without mimic joints it is the kinematic tree's
DOF parent; with mimic joints it is the elimination tree of H's pattern (see
``builder.dof_elimination_tree``).  The model stores no λ table: it stores
each DOF's ancestor list A(k) = (λ(k), λ(λ(k)), ...), nearest first
(``layout.ancestors``), which the loops below walk.  Only ancestors are
visited: O(n d²).

    for k = n..1:
        i = λ(k)
        while i != 0:
            a = H_ki / H_kk
            j = i
            while j != 0:
                H_ij -= a H_kj;  j = λ(j)
            H_ki = a;  i = λ(i)

In place: D on the diagonal, L (unit lower triangular, H = Lᵀ D L) below.

Singularity is judged row by row, relative to the matrix: a pivot
d_k <= PIVOT_TOL H_kk (H_kk before elimination) means row k lost more than
ten digits to cancellation: H is singular to working precision (a joint that
moves no mass, or whose motion another joint also produces).  Rounding noise
in an exactly singular H leaves pivots of ~1e-13 H_kk; real robots stay
above ~1e-3 H_kk (talos with its 1e-5 kg links: 3e-3).  A tiny but
well-conditioned H (all entries 1e-30, say) factorises normally.  The
original diagonal is kept in the strict upper triangle of row 0 during the
factorisation (only the lower triangle is part of the factor).
"""
import numpy as np
from numba import njit

from .layout import ancestors
from .spatial import ENTRY, JIT
from .views import borrow

PIVOT_TOL = 1e-10         # relative pivot below which H counts as singular (module docstring)


@njit(**JIT)
def ltdl_factor(mi, H):
    """Factorise H in place (lower triangle); returns False if a pivot is not
    positive relative to its row's diagonal (see the module docstring).

    The while-loops over λ above become loops over k's precomputed ancestor
    list A = (λ(k), λ(λ(k)), ...): i = A[m] and i's ancestors are A[m+1:]."""
    n = H.shape[0]
    if n == 0:
        return True
    h00 = H[0, 0]
    for k in range(1, n):
        H[0, k] = H[k, k]       # original diagonal (upper triangle, unused by the factor)
    for k in range(n - 1, -1, -1):
        d = H[k, k]
        if not d > PIVOT_TOL * (H[0, k] if k > 0 else h00):
            return False
        s, e = ancestors(mi, k)
        for m in range(s, e):
            i = mi[m]
            a = H[k, i] / d
            for l in range(m, e):
                j = mi[l]
                H[i, j] -= a * H[k, j]
            H[k, i] = a
    return True


@njit(**JIT)
def ltdl_solve_inplace(mi, LD, x):
    """Solve (Lᵀ D L) y = x in place, LD from ``ltdl_factor``."""
    n = LD.shape[0]
    for i in range(n - 1, -1, -1):     # Lᵀ z = x
        s, e = ancestors(mi, i)
        xi = x[i]
        for m in range(s, e):
            j = mi[m]
            x[j] -= LD[i, j] * xi
    for i in range(n):                 # D w = z
        x[i] /= LD[i, i]
    for i in range(n):                 # L y = w
        s, e = ancestors(mi, i)
        xi = x[i]
        for m in range(s, e):
            j = mi[m]
            xi -= LD[i, j] * x[j]
        x[i] = xi


@njit(**ENTRY)
def ltdl_k(md, H):
    """Public entry: factorise H (nv x nv, a copy the caller owns) in place."""
    md, H = borrow(md), borrow(H)   # no reference counts below
    mi = md.view(np.int64)          # the model's integer entries (layout.py)
    for k in range(H.shape[0]):
        for j in range(H.shape[1]):
            if not np.abs(H[k, j]) < np.inf:
                return False
    return ltdl_factor(mi, H)


@njit(**ENTRY)
def ltdl_solve_k(md, LD, X):
    """Public entry: solve for each row of X (m x nv) in place."""
    md, LD, X = borrow(md), borrow(LD), borrow(X)
    mi = md.view(np.int64)
    for r in range(X.shape[0]):
        ltdl_solve_inplace(mi, LD, X[r])
