"""Time-optimal path parameterisation by reachability analysis (TOPP-RA; Pham & Pham,
IEEE T-RO 2018), compiled: the backward pass (controllable sets) and the greedy
forward pass over a discretised path.

The problem, on gridpoints s_0 < ... < s_N with steps d_i = s_{i+1} - s_i: the state
x_i = ṡ² at s_i, the control u_i = s̈ on [s_i, s_{i+1}], x_{i+1} = x_i + 2 d_i u_i.
At every gridpoint k the constraints are ``m`` one-sided rows

    Au[k, r] * u + Bx[k, r] * x <= G[k, r]        (G = +inf: the row is off)

and 0 <= x <= xub[k].  Stage i (u_i, x_i) must satisfy the rows of gridpoint i at
(u_i, x_i) and, TOPP-RA's "interpolation" discretisation, the rows of gridpoint i+1 at
(u_i, x_{i+1}): constant s̈ on the interval keeps both of its ends within the limits.
The path starts and ends at rest (x_0 = x_N = 0).

Every stage is a linear programme in two variables; its projection on x is computed
exactly by Fourier-Motzkin elimination of u (each pair of rows with opposite signs
of their u coefficient gives one bound on x), so no LP solver and no iteration.
"""
import numpy as np
from numba import njit

from ..algorithms.spatial import JIT

OK = -1                 # status: success; otherwise the first stage that failed
# relative slack for rounding when a set shrinks to a point (x is a squared speed)
_EPS = 1e-12


@njit(**JIT)
def _stage_rows(Au, Bx, G, i, d, khi, klo, alpha, beta, gamma):
    """The one-sided rows alpha x + beta u <= gamma of stage i (gridpoint i at x,
    gridpoint i+1 at x + 2 d u, the controllable set [klo, khi] of gridpoint i+1);
    returns how many.  Rows with gamma = +inf are dropped."""
    m = Au.shape[1]
    n = 0
    for r in range(m):
        if G[i, r] < np.inf:
            alpha[n] = Bx[i, r]
            beta[n] = Au[i, r]
            gamma[n] = G[i, r]
            n += 1
    for r in range(m):
        if G[i + 1, r] < np.inf:
            alpha[n] = Bx[i + 1, r]
            beta[n] = Au[i + 1, r] + 2.0 * d * Bx[i + 1, r]
            gamma[n] = G[i + 1, r]
            n += 1
    if khi < np.inf:
        alpha[n] = 1.0
        beta[n] = 2.0 * d
        gamma[n] = khi
        n += 1
    alpha[n] = -1.0
    beta[n] = -2.0 * d
    gamma[n] = -klo
    n += 1
    return n


@njit(**JIT)
def _project(alpha, beta, gamma, n, xlo, xhi, out):
    """The interval of x for which some u satisfies the n rows, intersected with
    [xlo, xhi], into out[0:2]; returns False when it is empty (beyond rounding)."""
    for p in range(n):
        bp = beta[p]
        if bp == 0.0:
            a = alpha[p]
            g = gamma[p]
            if a > 0.0:
                xhi = min(xhi, g / a)
            elif a < 0.0:
                xlo = max(xlo, g / a)
            elif g < -_EPS * (1.0 + abs(g)):
                return False
            continue
        if bp < 0.0:
            continue
        for q in range(n):
            bq = beta[q]
            if bq >= 0.0:
                continue
            # bp > 0 > bq: (-bq) * row p + bp * row q eliminates u
            c = alpha[p] * (-bq) + alpha[q] * bp
            g = gamma[p] * (-bq) + gamma[q] * bp
            if c > 0.0:
                xhi = min(xhi, g / c)
            elif c < 0.0:
                xlo = max(xlo, g / c)
            elif g < -_EPS * (abs(gamma[p] * bq) + abs(gamma[q] * bp)):
                return False
    if xlo > xhi:
        if xlo - xhi > _EPS * max(abs(xlo), abs(xhi), 1e-300):
            return False
        xlo = xhi
    out[0] = xlo
    out[1] = xhi
    return True


@njit(**JIT)
def controllable_sets(Au, Bx, G, xub, s, K):
    """Backward pass: K[i] = [lo, hi], the squared path speeds at s[i] from which the
    path can be followed to a stop at s[N] within the rows (Au, Bx, G: (N+1, m)) and
    xub ((N+1,)).  Returns OK, or the first stage i (from the end) whose set is empty."""
    N = s.shape[0] - 1
    m = Au.shape[1]
    alpha = np.empty(2 * m + 2)
    beta = np.empty(2 * m + 2)
    gamma = np.empty(2 * m + 2)
    K[N, 0] = 0.0
    K[N, 1] = 0.0
    seg = np.empty(2)
    for i in range(N - 1, -1, -1):
        n = _stage_rows(Au, Bx, G, i, s[i + 1] - s[i], K[i + 1, 1], K[i + 1, 0], alpha, beta, gamma)
        if not _project(alpha, beta, gamma, n, 0.0, xub[i], seg):
            return i
        K[i, 0] = max(seg[0], 0.0)
        K[i, 1] = seg[1]
        if K[i, 1] < 0.0:
            return i
    return OK


@njit(**JIT)
def forward_pass(Au, Bx, G, s, K, x, u):
    """Greedy forward pass from rest: u[i] the largest path acceleration at x[i] that
    satisfies stage i's rows and keeps x[i+1] in K[i+1]; x ((N+1,)) and u ((N,)) are
    written.  Returns OK, or the stage where no u exists (beyond rounding) or nothing
    bounds u (K[i+1] unbounded), or N + 1 when x[0] = 0 is not in K[0] (the path
    cannot start from rest)."""
    N = s.shape[0] - 1
    m = Au.shape[1]
    alpha = np.empty(2 * m + 2)
    beta = np.empty(2 * m + 2)
    gamma = np.empty(2 * m + 2)
    if K[0, 0] > 0.0:
        return N + 1
    x[0] = 0.0
    for i in range(N):
        d = s[i + 1] - s[i]
        n = _stage_rows(Au, Bx, G, i, d, K[i + 1, 1], K[i + 1, 0], alpha, beta, gamma)
        xi = x[i]
        ulo = -np.inf
        uhi = np.inf
        scale = 0.0
        for r in range(n):
            b = beta[r]
            if b == 0.0:
                continue
            bound = (gamma[r] - alpha[r] * xi) / b
            if b > 0.0:
                uhi = min(uhi, bound)
            else:
                ulo = max(ulo, bound)
            scale = max(scale, abs(bound))
        if ulo > uhi and ulo - uhi > 1e-9 * max(scale, 1e-300):
            return i
        if not uhi < np.inf:      # nothing bounds the speed (no finite limit, K[i+1] unbounded)
            return i
        ui = uhi
        # x[i+1] within K[i+1] (rounding), and u consistent with it
        xn = min(max(xi + 2.0 * d * ui, K[i + 1, 0]), K[i + 1, 1])
        xn = max(xn, 0.0)
        x[i + 1] = xn
        u[i] = (xn - xi) / (2.0 * d)
    return OK
