"""Spatial algebra (Featherstone, RBDA ch. 2), written for compiled kernels.

Conventions
-----------
* A spatial motion vector is ``m = [w; v]`` (angular first, Featherstone's
  order), a spatial force is ``f = [n; f]`` (moment first).  The user-facing
  free-flyer velocity ``[v; w]`` is reordered at the joint (see ``joints``).
* A Plücker transform from frame A to frame B is stored as ``(E, r)``:
  ``E`` (3x3, row-major 9-vector inside kernels) rotates A coordinates into
  B coordinates and ``r`` is the position of B's origin in A coordinates::

      X m      = [E w; E (v - r x w)]             (motion, A -> B)
      X* f     = [E (n - r x f); E f]             (force,  A -> B)
      X^T f    = [E^T n + r x E^T f; E^T f]       (force,  B -> A)

* A spatial inertia about a frame's origin is kept as 10 numbers:
  mass ``m``, first moment ``h = m c`` and the 3x3 rotational inertia
  ``Ibar`` about the origin (``Ibar = Ic - m [c]x [c]x``)::

      I m = [Ibar w + h x v; m v - h x w]

The compiled functions below take their operands as small 1-D arrays -- a
transform ``X`` is 12 numbers (``E`` row-major, then ``r``), a motion or force
vector 6, an inertia 13 (``m``, ``h``, ``Ibar``), a 6x6 matrix a (6, 6) array --
and write their result into ``out`` (the ``_add`` forms add to it).  The
kernels pass per-body views of their workspace (``X[i]``, ``v[p]``: see
``layout.py``); nothing allocates.  No ``np.cross``: cross products are
written out.  Every function is inlined into its caller (numba IR level), so a
view costs no call and no reference count.

Flat forms addressed by offset (for code that addresses the workspace by offset,
``constraints/``) are in ``common.py``: ``x_motion_inv``, ``cross_motion``.
"""
import numpy as np
from numba import njit

JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")
# Single-call entry points (called from Python once per state) keep the GIL: releasing
# and retaking it costs ~100 ns per call (~400 instructions; bench/RESULTS.md), a large
# part of a small arm's call, and hands a Python thread waiting for the GIL the
# interpreter until its switch interval.  Batch kernels (row ranges on threads) release it.
ENTRY = dict(JIT, nogil=False)
# small helpers are inlined at the numba IR level so that the views they take
# do not cost reference-count traffic in the hot loops
INLINE = dict(JIT, inline="always")


# ----------------------------------------------------------------------------
# plain-numpy helpers, used while building models (not in hot paths)
# ----------------------------------------------------------------------------

def skew(x):
    """3x3 matrix ``[x]x`` with ``[x]x y = x × y``."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def rpy_to_matrix(rpy):
    """URDF fixed-axis roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def inertia_about_origin(mass, com, Ic):
    """Spatial inertia parameters ``(m, h, Ibar)`` of a body with centre of mass
    ``com`` and rotational inertia ``Ic`` about the centre of mass (all in the
    same frame)."""
    com = np.asarray(com, dtype=float)
    Ibar = np.asarray(Ic, dtype=float) + mass * (com @ com * np.eye(3) - np.outer(com, com))
    return float(mass), mass * com, Ibar


# ----------------------------------------------------------------------------
# compiled building blocks (1-D operands; see the module docstring)
# ----------------------------------------------------------------------------

@njit(**INLINE)
def Xm(X, m, out):
    """out = X m  (motion vector, A -> B)."""
    w0 = m[0]
    w1 = m[1]
    w2 = m[2]
    r0 = X[9]
    r1 = X[10]
    r2 = X[11]
    t0 = m[3] - (r1 * w2 - r2 * w1)
    t1 = m[4] - (r2 * w0 - r0 * w2)
    t2 = m[5] - (r0 * w1 - r1 * w0)
    for k in range(3):
        e0 = X[3 * k]
        e1 = X[3 * k + 1]
        e2 = X[3 * k + 2]
        out[k] = e0 * w0 + e1 * w1 + e2 * w2
        out[3 + k] = e0 * t0 + e1 * t1 + e2 * t2


@njit(**INLINE)
def Xinv_m(X, m, out):
    """out = X^-1 m  (motion vector, B -> A)."""
    w0 = X[0] * m[0] + X[3] * m[1] + X[6] * m[2]
    w1 = X[1] * m[0] + X[4] * m[1] + X[7] * m[2]
    w2 = X[2] * m[0] + X[5] * m[1] + X[8] * m[2]
    r0 = X[9]
    r1 = X[10]
    r2 = X[11]
    out[0] = w0
    out[1] = w1
    out[2] = w2
    out[3] = X[0] * m[3] + X[3] * m[4] + X[6] * m[5] + (r1 * w2 - r2 * w1)
    out[4] = X[1] * m[3] + X[4] * m[4] + X[7] * m[5] + (r2 * w0 - r0 * w2)
    out[5] = X[2] * m[3] + X[5] * m[4] + X[8] * m[5] + (r0 * w1 - r1 * w0)


@njit(**INLINE)
def Xstar_f(X, f, out):
    """out = X* f  (force vector, A -> B)."""
    f0 = f[3]
    f1 = f[4]
    f2 = f[5]
    r0 = X[9]
    r1 = X[10]
    r2 = X[11]
    t0 = f[0] - (r1 * f2 - r2 * f1)
    t1 = f[1] - (r2 * f0 - r0 * f2)
    t2 = f[2] - (r0 * f1 - r1 * f0)
    for k in range(3):
        e0 = X[3 * k]
        e1 = X[3 * k + 1]
        e2 = X[3 * k + 2]
        out[k] = e0 * t0 + e1 * t1 + e2 * t2
        out[3 + k] = e0 * f0 + e1 * f1 + e2 * f2


@njit(**INLINE)
def XT_f_add(X, f, out):
    """out += X^T f  (force vector, B -> A)."""
    n0 = f[0]
    n1 = f[1]
    n2 = f[2]
    f0 = f[3]
    f1 = f[4]
    f2 = f[5]
    g0 = X[0] * f0 + X[3] * f1 + X[6] * f2
    g1 = X[1] * f0 + X[4] * f1 + X[7] * f2
    g2 = X[2] * f0 + X[5] * f1 + X[8] * f2
    r0 = X[9]
    r1 = X[10]
    r2 = X[11]
    out[0] += X[0] * n0 + X[3] * n1 + X[6] * n2 + (r1 * g2 - r2 * g1)
    out[1] += X[1] * n0 + X[4] * n1 + X[7] * n2 + (r2 * g0 - r0 * g2)
    out[2] += X[2] * n0 + X[5] * n1 + X[8] * n2 + (r0 * g1 - r1 * g0)
    out[3] += g0
    out[4] += g1
    out[5] += g2


@njit(**INLINE)
def X_compose(A, B, out):
    """out = A B (B: frame 0 -> 1, A: 1 -> 2; out: 0 -> 2):  E = E_A E_B,
    r = r_B + E_B^T r_A."""
    for r in range(3):
        a0 = A[3 * r]
        a1 = A[3 * r + 1]
        a2 = A[3 * r + 2]
        for c in range(3):
            out[3 * r + c] = a0 * B[c] + a1 * B[3 + c] + a2 * B[6 + c]
    for k in range(3):
        out[9 + k] = B[9 + k] + B[k] * A[9] + B[3 + k] * A[10] + B[6 + k] * A[11]


@njit(**INLINE)
def crm(v, m, out):
    """out = v x m  (spatial cross product on motion vectors)."""
    w0 = v[0]
    w1 = v[1]
    w2 = v[2]
    u0 = v[3]
    u1 = v[4]
    u2 = v[5]
    out[0] = w1 * m[2] - w2 * m[1]
    out[1] = w2 * m[0] - w0 * m[2]
    out[2] = w0 * m[1] - w1 * m[0]
    out[3] = w1 * m[5] - w2 * m[4] + u1 * m[2] - u2 * m[1]
    out[4] = w2 * m[3] - w0 * m[5] + u2 * m[0] - u0 * m[2]
    out[5] = w0 * m[4] - w1 * m[3] + u0 * m[1] - u1 * m[0]


@njit(**INLINE)
def crf_add(v, f, out):
    """out += v x* f  (spatial cross product of a motion and a force)."""
    w0 = v[0]
    w1 = v[1]
    w2 = v[2]
    u0 = v[3]
    u1 = v[4]
    u2 = v[5]
    out[0] += w1 * f[2] - w2 * f[1] + u1 * f[5] - u2 * f[4]
    out[1] += w2 * f[0] - w0 * f[2] + u2 * f[3] - u0 * f[5]
    out[2] += w0 * f[1] - w1 * f[0] + u0 * f[4] - u1 * f[3]
    out[3] += w1 * f[5] - w2 * f[4]
    out[4] += w2 * f[3] - w0 * f[5]
    out[5] += w0 * f[4] - w1 * f[3]


@njit(**INLINE)
def I_m(I, v, out):
    """out = I v for the inertia (m, h, Ibar) I."""
    m = I[0]
    h0 = I[1]
    h1 = I[2]
    h2 = I[3]
    w0 = v[0]
    w1 = v[1]
    w2 = v[2]
    u0 = v[3]
    u1 = v[4]
    u2 = v[5]
    out[0] = I[4] * w0 + I[5] * w1 + I[6] * w2 + h1 * u2 - h2 * u1
    out[1] = I[7] * w0 + I[8] * w1 + I[9] * w2 + h2 * u0 - h0 * u2
    out[2] = I[10] * w0 + I[11] * w1 + I[12] * w2 + h0 * u1 - h1 * u0
    out[3] = m * u0 - (h1 * w2 - h2 * w1)
    out[4] = m * u1 - (h2 * w0 - h0 * w2)
    out[5] = m * u2 - (h0 * w1 - h1 * w0)


@njit(**INLINE)
def XT_I_X(X, I, out):
    """out = X^T I X: inertia I (frame B) expressed in frame A.

    RBDA eq. 2.66 with y = E^T h:  m' = m,  h' = y + m r,
    Ibar' = E^T Ibar E - [r]x [y]x - [y + m r]x [r]x."""
    _XT_I_X(X, I, out, False)


@njit(**INLINE)
def XT_I_X_add(X, I, out):
    """out += X^T I X (``XT_I_X`` has the formulas)."""
    _XT_I_X(X, I, out, True)


@njit(**INLINE)
def _put(out, k, x, add):
    if add:
        out[k] += x
    else:
        out[k] = x


@njit(**INLINE)
def _XT_I_X(X, I, out, add):
    """XT_I_X_add (add: a compile-time constant after inlining) or XT_I_X."""
    m = I[0]
    y0 = X[0] * I[1] + X[3] * I[2] + X[6] * I[3]
    y1 = X[1] * I[1] + X[4] * I[2] + X[7] * I[3]
    y2 = X[2] * I[1] + X[5] * I[2] + X[8] * I[3]
    r0 = X[9]
    r1 = X[10]
    r2 = X[11]
    z0 = y0 + m * r0
    z1 = y1 + m * r1
    z2 = y2 + m * r2
    # [a]x [b]x = b a^T - (a . b) 1
    d = r0 * y0 + r1 * y1 + r2 * y2 + z0 * r0 + z1 * r1 + z2 * r2
    _put(out, 0, m, add)
    _put(out, 1, z0, add)
    _put(out, 2, z1, add)
    _put(out, 3, z2, add)
    # E^T Ibar E: T = Ibar E (columns j), then row i of E^T T; symmetric, so i <= j and mirrored
    for j in range(3):
        e0 = X[j]
        e1 = X[3 + j]
        e2 = X[6 + j]
        t0 = I[4] * e0 + I[5] * e1 + I[6] * e2
        t1 = I[7] * e0 + I[8] * e1 + I[9] * e2
        t2 = I[10] * e0 + I[11] * e1 + I[12] * e2
        for i in range(j + 1):
            x = X[i] * t0 + X[3 + i] * t1 + X[6 + i] * t2
            _put(out, 4 + 3 * i + j, x, add)
            if i != j:
                _put(out, 4 + 3 * j + i, x, add)
    # - [r]x [y]x - [z]x [r]x = -(y r^T + r z^T) + d 1, symmetric (z = y + m r)
    b01 = y0 * r1 + r0 * z1
    b02 = y0 * r2 + r0 * z2
    b12 = y1 * r2 + r1 * z2
    out[4] -= y0 * r0 + r0 * z0 - d
    out[5] -= b01
    out[6] -= b02
    out[7] -= b01
    out[8] -= y1 * r1 + r1 * z1 - d
    out[9] -= b12
    out[10] -= b02
    out[11] -= b12
    out[12] -= y2 * r2 + r2 * z2 - d


@njit(**INLINE)
def I_to_mat6(I, M):
    """M (6 x 6) = the spatial inertia matrix of (m, h, Ibar) I."""
    for r in range(6):
        for c in range(6):
            M[r, c] = 0.0
    for r in range(3):
        for c in range(3):
            M[r, c] = I[4 + 3 * r + c]
        M[3 + r, 3 + r] = I[0]
    # upper-right block [h]x, lower-left block its transpose
    M[0, 4] = -I[3]
    M[0, 5] = I[2]
    M[1, 3] = I[3]
    M[1, 5] = -I[1]
    M[2, 3] = -I[2]
    M[2, 4] = I[1]
    for r in range(3):
        for c in range(3):
            M[3 + c, r] = M[r, 3 + c]


@njit(**INLINE)
def XT_M_X_add(X, M, tmp, out):
    """out += X^T M X for a symmetric 6x6 M = [[A, B], [B^T, C]] (out, M: 6 x 6).
    Needs 36 scratch numbers in tmp.

    With X = [[1, 0], [-r x, 1]] diag(E, E) and the rotated blocks
    A' = E^T A E, B' = E^T B E, C' = E^T C E:

        X^T M X = [[A' - P - P^T - r x C' r x,  B' + r x C'],
                   [(B' + r x C')^T,            C'         ]],   P = B' r x
    """
    A = 0
    B = 9
    C = 18
    Q = 27
    # A' = E^T A E, B' = E^T B E, C' = E^T C E  (blocks at M[0:3, 0:3], M[0:3, 3:6], M[3:6, 3:6])
    for blk in range(3):
        r0 = 0 if blk < 2 else 3
        c0 = 0 if blk == 0 else 3
        ob = 9 * blk
        for j in range(3):
            e0 = X[j]
            e1 = X[3 + j]
            e2 = X[6 + j]
            t0 = M[r0, c0] * e0 + M[r0, c0 + 1] * e1 + M[r0, c0 + 2] * e2
            t1 = M[r0 + 1, c0] * e0 + M[r0 + 1, c0 + 1] * e1 + M[r0 + 1, c0 + 2] * e2
            t2 = M[r0 + 2, c0] * e0 + M[r0 + 2, c0 + 1] * e1 + M[r0 + 2, c0 + 2] * e2
            for i in range(3):
                tmp[ob + 3 * i + j] = X[i] * t0 + X[3 + i] * t1 + X[6 + i] * t2
    r0 = X[9]
    r1 = X[10]
    r2 = X[11]
    # Q = C' r x  (column j of r x: (0, r2, -r1), (-r2, 0, r0), (r1, -r0, 0))
    for i in range(3):
        c0 = tmp[C + 3 * i]
        c1 = tmp[C + 3 * i + 1]
        c2 = tmp[C + 3 * i + 2]
        tmp[Q + 3 * i] = c1 * r2 - c2 * r1
        tmp[Q + 3 * i + 1] = -c0 * r2 + c2 * r0
        tmp[Q + 3 * i + 2] = c0 * r1 - c1 * r0
    for j in range(3):
        # column j of r x C' (= -(C' r x)^T row j, C' symmetric) and of r x Q
        rc0 = -r2 * tmp[C + 3 + j] + r1 * tmp[C + 6 + j]
        rc1 = r2 * tmp[C + j] - r0 * tmp[C + 6 + j]
        rc2 = -r1 * tmp[C + j] + r0 * tmp[C + 3 + j]
        rq0 = -r2 * tmp[Q + 3 + j] + r1 * tmp[Q + 6 + j]
        rq1 = r2 * tmp[Q + j] - r0 * tmp[Q + 6 + j]
        rq2 = -r1 * tmp[Q + j] + r0 * tmp[Q + 3 + j]
        bj = (tmp[B + j] + rc0, tmp[B + 3 + j] + rc1, tmp[B + 6 + j] + rc2)
        for i in range(3):
            out[i, 3 + j] += bj[i]          # upper-right block
            out[3 + j, i] += bj[i]          # lower-left block (transpose)
            out[3 + i, 3 + j] += tmp[C + 3 * i + j]
        rq = (rq0, rq1, rq2)
        for i in range(3):
            # P_ij = (B' r x)_ij
            b0 = tmp[B + 3 * i]
            b1 = tmp[B + 3 * i + 1]
            b2 = tmp[B + 3 * i + 2]
            if j == 0:
                pij = b1 * r2 - b2 * r1
            elif j == 1:
                pij = -b0 * r2 + b2 * r0
            else:
                pij = b0 * r1 - b1 * r0
            bj0 = tmp[B + 3 * j]
            bj1 = tmp[B + 3 * j + 1]
            bj2 = tmp[B + 3 * j + 2]
            if i == 0:
                pji = bj1 * r2 - bj2 * r1
            elif i == 1:
                pji = -bj0 * r2 + bj2 * r0
            else:
                pji = bj0 * r1 - bj1 * r0
            out[i, j] += tmp[A + 3 * i + j] - pij - pji - rq[i]


@njit(**JIT)
def cholesky_solve(M, L, x):
    """Solve M y = x in place for a symmetric positive-definite n x n M, factorising
    M = L L^T into the lower triangle of L (L may be M itself: M is then overwritten).
    Returns False if M is not positive definite."""
    n = M.shape[0]
    for i in range(n):
        for j in range(i + 1):
            s = M[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            if i == j:
                if not s > 0.0:
                    return False
                L[i, i] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    ll_solve(L, n, x)
    return True


@njit(**JIT)
def ll_solve(L, n, x):
    """Solve L Lᵀ y = x in place for a Cholesky factor L (the lower triangle of
    L[:n, :n], non-zero diagonal)."""
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]
