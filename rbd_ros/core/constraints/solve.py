"""Small dense solvers for the constraint kernels (compiled, in place, allocation-free).

* ``cholesky``: K = L Lᵀ (solved by ``spatial.ll_solve``) for the constrained forward dynamics'
  K = J M⁻¹ Jᵀ (+ regularization), with a relative pivot test that reports a
  rank-deficient K (redundant constraints) instead of dividing by noise.
* ``lstsq_min_norm``: the minimum-norm least-squares solution of A x ≈ b for any
  A (nr x nc) of any rank, by a complete orthogonal decomposition (LAPACK's
  xGELSY): Householder QR with column pivoting, A P = Q R, the rank r where
  |R_kk| <= tol |R_00|, then R's first r rows made [T 0] by Householder
  reflections from the right (R = [T 0] Z), x = P Zᵀ [T⁻¹ (Qᵀb)[:r]; 0].
  Exactly determined and full rank: the unique solution; over-determined: least
  squares (residual ‖(Qᵀb)[r:]‖); under-determined or rank-deficient: the solution
  of least norm among the least-squares ones.
* ``lu_factor`` / ``lu_solve``: A = P L U with partial pivoting for a square A, the
  fast path of a square system where it is regular: False when a pivot is below
  ``LU_TOL`` times A's largest entry (nearly singular), and the caller then takes
  ``lstsq_min_norm``; ``lu_solve`` solves A x = b or Aᵀ x = b with one factorisation.
* ``lt_sweep`` / ``l_sweep``: the two triangular halves of ``algorithms/ltdl``'s
  LᵀDL solve (H = Lᵀ D L with branch-induced sparsity), used separately.
"""
import numpy as np
from numba import njit

from ..algorithms.layout import ancestors
from ..algorithms.spatial import JIT


@njit(**JIT)
def cholesky(A, n, tol):
    """A[:n, :n] = L Lᵀ in place (L in the lower triangle).  False, part-way, if a
    pivot is <= tol times the largest diagonal entry (rank-deficient to tol)."""
    big = 0.0
    for j in range(n):
        big = max(big, A[j, j])
    for j in range(n):
        d = A[j, j]
        for k in range(j):
            d -= A[j, k] * A[j, k]
        if not d > tol * big:
            return False
        d = np.sqrt(d)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / d
    return True


@njit(**JIT)
def lstsq_min_norm(A, nr, nc, b, x, work, tol, info):
    """x (nc) = the minimum-norm least-squares solution of A x ≈ b (module docstring).
    A[:nr, :nc] and b[:nr] are destroyed; work: 3 nc entries.  info[0] = the residual
    ‖A x − b‖, info[1] = the rank, info[2] = |R_00| / |R_(r-1)(r-1)| (a cheap estimate of
    the condition number of A's rank-r part; inf if A is zero)."""
    perm = work[:nc]
    u0s = work[nc:2 * nc]
    uus = work[2 * nc:3 * nc]
    for j in range(nc):
        perm[j] = j
    kmax = min(nr, nc)
    rank = 0
    r00 = 0.0
    for k in range(kmax):
        best = -1.0
        p = k
        for j in range(k, nc):
            s = 0.0
            for i in range(k, nr):
                s += A[i, j] * A[i, j]
            if s > best:
                best = s
                p = j
        if p != k:
            for i in range(nr):
                A[i, k], A[i, p] = A[i, p], A[i, k]
            perm[k], perm[p] = perm[p], perm[k]
        normx = np.sqrt(best)
        if k == 0:
            r00 = normx
        if not normx > tol * r00 or normx == 0.0:
            break
        alpha = A[k, k]
        beta = -normx if alpha >= 0.0 else normx
        v0 = alpha - beta
        vtv = v0 * v0 + (best - alpha * alpha)
        A[k, k] = beta
        if vtv > 0.0:
            for j in range(k + 1, nc):
                s = v0 * A[k, j]
                for i in range(k + 1, nr):
                    s += A[i, k] * A[i, j]
                f = 2.0 * s / vtv
                A[k, j] -= f * v0
                for i in range(k + 1, nr):
                    A[i, j] -= f * A[i, k]
            s = v0 * b[k]
            for i in range(k + 1, nr):
                s += A[i, k] * b[i]
            f = 2.0 * s / vtv
            b[k] -= f * v0
            for i in range(k + 1, nr):
                b[i] -= f * A[i, k]
        rank = k + 1
    res = 0.0
    for i in range(rank, nr):
        res += b[i] * b[i]
    info[0] = np.sqrt(res)
    info[1] = rank
    info[2] = abs(r00 / A[rank - 1, rank - 1]) if rank > 0 else np.inf
    # R's first rank rows -> [T 0] by reflections from the right on columns {k} ∪ {rank..nc-1}
    for k in range(rank - 1, -1, -1):
        if rank == nc:
            break
        s = A[k, k] * A[k, k]
        for j in range(rank, nc):
            s += A[k, j] * A[k, j]
        nrm = np.sqrt(s)
        beta = -nrm if A[k, k] >= 0.0 else nrm
        u0 = A[k, k] - beta
        uu = u0 * u0 + (s - A[k, k] * A[k, k])
        u0s[k] = u0
        uus[k] = uu
        A[k, k] = beta
        if uu > 0.0:
            for i in range(k):
                t = A[i, k] * u0
                for j in range(rank, nc):
                    t += A[i, j] * A[k, j]
                f = 2.0 * t / uu
                A[i, k] -= f * u0
                for j in range(rank, nc):
                    A[i, j] -= f * A[k, j]
    # z = [T⁻¹ b[:rank]; 0]
    for j in range(nc):
        x[j] = 0.0
    for i in range(rank - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, rank):
            s -= A[i, j] * x[j]
        x[i] = s / A[i, i]
    if rank < nc:
        for k in range(rank):        # x' = H_(r-1) ... H_0 z
            if uus[k] > 0.0:
                t = u0s[k] * x[k]
                for j in range(rank, nc):
                    t += A[k, j] * x[j]
                f = 2.0 * t / uus[k]
                x[k] -= f * u0s[k]
                for j in range(rank, nc):
                    x[j] -= f * A[k, j]
    # undo the column permutation (u0s is free now: a scratch copy of x')
    for j in range(nc):
        u0s[j] = x[j]
    for j in range(nc):
        x[int(perm[j])] = u0s[j]


LU_TOL = 1e-8     # a pivot below this times max |A_ij|: not the fast path's (cond ~1e8 and up)


@njit(**JIT)
def lu_factor(A, n, piv, tol):
    """A[:n, :n] = P L U in place (L unit lower, U upper), partial pivoting; piv[k] (float)
    the row swapped with row k at step k.  False, part-way, if a pivot is <= tol times
    the largest |A_ij| (then A is destroyed and nothing is solved)."""
    big = 0.0
    for i in range(n):
        for j in range(n):
            big = max(big, abs(A[i, j]))
    if not big > 0.0:
        return False
    lim = tol * big
    for k in range(n):
        p = k
        best = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > best:
                best = abs(A[i, k])
                p = i
        if not best > lim:
            return False
        piv[k] = p
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        d = 1.0 / A[k, k]
        for i in range(k + 1, n):
            f = A[i, k] * d
            A[i, k] = f
            if f != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]
    return True


@njit(**JIT)
def lu_solve(LU, n, piv, b, transpose):
    """Solve A x = b (or Aᵀ x = b if ``transpose``) in place in b, A = P L U from ``lu_factor``."""
    if not transpose:
        for k in range(n):
            p = int(piv[k])
            if p != k:
                b[k], b[p] = b[p], b[k]
        for i in range(n):
            s = b[i]
            for k in range(i):
                s -= LU[i, k] * b[k]
            b[i] = s
        for i in range(n - 1, -1, -1):
            s = b[i]
            for k in range(i + 1, n):
                s -= LU[i, k] * b[k]
            b[i] = s / LU[i, i]
        return
    # Aᵀ = Uᵀ Lᵀ Pᵀ: Uᵀ y = b, Lᵀ z = y, x = P z
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= LU[k, i] * b[k]
        b[i] = s / LU[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= LU[k, i] * b[k]
        b[i] = s
    for k in range(n - 1, -1, -1):
        p = int(piv[k])
        if p != k:
            b[k], b[p] = b[p], b[k]


@njit(**JIT)
def lt_sweep(mi, LD, x):
    """x ← L⁻ᵀ x (the first sweep of the LᵀDL solve)."""
    n = LD.shape[0]
    for i in range(n - 1, -1, -1):
        s, e = ancestors(mi, i)
        xi = x[i]
        if xi == 0.0:
            continue
        for m in range(s, e):
            x[mi[m]] -= LD[i, mi[m]] * xi


@njit(**JIT)
def l_sweep(mi, LD, x):
    """x ← L⁻¹ x (the last sweep of the LᵀDL solve)."""
    n = LD.shape[0]
    for i in range(n):
        s, e = ancestors(mi, i)
        xi = x[i]
        for m in range(s, e):
            xi -= LD[i, mi[m]] * x[mi[m]]
        x[i] = xi
