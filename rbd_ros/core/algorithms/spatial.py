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

The kernels below work on small views of preallocated workspaces and never
allocate.  No ``np.cross``: cross products are written out.
"""
import numpy as np
from numba import njit

JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")
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
# compiled kernels' building blocks
#
# Every operand is given as (flat array, start offset): the kernels keep all
# their data in two flat vectors (model data and workspace) and address them
# by offset, which avoids creating array views in the hot loops (a view costs
# more than the arithmetic here).  A transform X at offset o is E at o..o+8
# (row-major) and r at o+9..o+11; an inertia at offset o is m at o, h at
# o+1..o+3 and Ibar at o+4..o+12.
# ----------------------------------------------------------------------------

@njit(**INLINE)
def x_motion(X, ox, m, om, out, oo):
    """out = X m  (motion vector, parent frame -> child frame)."""
    w0 = m[om]
    w1 = m[om + 1]
    w2 = m[om + 2]
    r0 = X[ox + 9]
    r1 = X[ox + 10]
    r2 = X[ox + 11]
    t0 = m[om + 3] - (r1 * w2 - r2 * w1)
    t1 = m[om + 4] - (r2 * w0 - r0 * w2)
    t2 = m[om + 5] - (r0 * w1 - r1 * w0)
    for k in range(3):
        e0 = X[ox + 3 * k]
        e1 = X[ox + 3 * k + 1]
        e2 = X[ox + 3 * k + 2]
        out[oo + k] = e0 * w0 + e1 * w1 + e2 * w2
        out[oo + 3 + k] = e0 * t0 + e1 * t1 + e2 * t2


@njit(**INLINE)
def x_motion_inv(X, ox, m, om, out, oo):
    """out = X^-1 m  (motion vector, child frame -> parent frame)."""
    w0 = X[ox] * m[om] + X[ox + 3] * m[om + 1] + X[ox + 6] * m[om + 2]
    w1 = X[ox + 1] * m[om] + X[ox + 4] * m[om + 1] + X[ox + 7] * m[om + 2]
    w2 = X[ox + 2] * m[om] + X[ox + 5] * m[om + 1] + X[ox + 8] * m[om + 2]
    r0 = X[ox + 9]
    r1 = X[ox + 10]
    r2 = X[ox + 11]
    out[oo] = w0
    out[oo + 1] = w1
    out[oo + 2] = w2
    out[oo + 3] = X[ox] * m[om + 3] + X[ox + 3] * m[om + 4] + X[ox + 6] * m[om + 5] + (r1 * w2 - r2 * w1)
    out[oo + 4] = X[ox + 1] * m[om + 3] + X[ox + 4] * m[om + 4] + X[ox + 7] * m[om + 5] + (r2 * w0 - r0 * w2)
    out[oo + 5] = X[ox + 2] * m[om + 3] + X[ox + 5] * m[om + 4] + X[ox + 8] * m[om + 5] + (r0 * w1 - r1 * w0)


@njit(**INLINE)
def x_force(X, ox, f, of, out, oo):
    """out = X* f  (force vector, parent frame -> child frame)."""
    f0 = f[of + 3]
    f1 = f[of + 4]
    f2 = f[of + 5]
    r0 = X[ox + 9]
    r1 = X[ox + 10]
    r2 = X[ox + 11]
    t0 = f[of] - (r1 * f2 - r2 * f1)
    t1 = f[of + 1] - (r2 * f0 - r0 * f2)
    t2 = f[of + 2] - (r0 * f1 - r1 * f0)
    for k in range(3):
        e0 = X[ox + 3 * k]
        e1 = X[ox + 3 * k + 1]
        e2 = X[ox + 3 * k + 2]
        out[oo + k] = e0 * t0 + e1 * t1 + e2 * t2
        out[oo + 3 + k] = e0 * f0 + e1 * f1 + e2 * f2


@njit(**INLINE)
def xT_force_add(X, ox, f, of, out, oo):
    """out += X^T f  (force vector, child frame -> parent frame)."""
    n0 = f[of]
    n1 = f[of + 1]
    n2 = f[of + 2]
    f0 = f[of + 3]
    f1 = f[of + 4]
    f2 = f[of + 5]
    g0 = X[ox] * f0 + X[ox + 3] * f1 + X[ox + 6] * f2
    g1 = X[ox + 1] * f0 + X[ox + 4] * f1 + X[ox + 7] * f2
    g2 = X[ox + 2] * f0 + X[ox + 5] * f1 + X[ox + 8] * f2
    r0 = X[ox + 9]
    r1 = X[ox + 10]
    r2 = X[ox + 11]
    out[oo] += X[ox] * n0 + X[ox + 3] * n1 + X[ox + 6] * n2 + (r1 * g2 - r2 * g1)
    out[oo + 1] += X[ox + 1] * n0 + X[ox + 4] * n1 + X[ox + 7] * n2 + (r2 * g0 - r0 * g2)
    out[oo + 2] += X[ox + 2] * n0 + X[ox + 5] * n1 + X[ox + 8] * n2 + (r0 * g1 - r1 * g0)
    out[oo + 3] += g0
    out[oo + 4] += g1
    out[oo + 5] += g2


@njit(**INLINE)
def cross_motion(v, ov, m, om, out, oo):
    """out = v x m  (spatial cross product on motion vectors)."""
    w0 = v[ov]
    w1 = v[ov + 1]
    w2 = v[ov + 2]
    u0 = v[ov + 3]
    u1 = v[ov + 4]
    u2 = v[ov + 5]
    out[oo] = w1 * m[om + 2] - w2 * m[om + 1]
    out[oo + 1] = w2 * m[om] - w0 * m[om + 2]
    out[oo + 2] = w0 * m[om + 1] - w1 * m[om]
    out[oo + 3] = w1 * m[om + 5] - w2 * m[om + 4] + u1 * m[om + 2] - u2 * m[om + 1]
    out[oo + 4] = w2 * m[om + 3] - w0 * m[om + 5] + u2 * m[om] - u0 * m[om + 2]
    out[oo + 5] = w0 * m[om + 4] - w1 * m[om + 3] + u0 * m[om + 1] - u1 * m[om]


@njit(**INLINE)
def cross_force_add(v, ov, f, of, out, oo):
    """out += v x* f  (spatial cross product of a motion and a force)."""
    w0 = v[ov]
    w1 = v[ov + 1]
    w2 = v[ov + 2]
    u0 = v[ov + 3]
    u1 = v[ov + 4]
    u2 = v[ov + 5]
    out[oo] += w1 * f[of + 2] - w2 * f[of + 1] + u1 * f[of + 5] - u2 * f[of + 4]
    out[oo + 1] += w2 * f[of] - w0 * f[of + 2] + u2 * f[of + 3] - u0 * f[of + 5]
    out[oo + 2] += w0 * f[of + 1] - w1 * f[of] + u0 * f[of + 4] - u1 * f[of + 3]
    out[oo + 3] += w1 * f[of + 5] - w2 * f[of + 4]
    out[oo + 4] += w2 * f[of + 3] - w0 * f[of + 5]
    out[oo + 5] += w0 * f[of + 4] - w1 * f[of + 3]


@njit(**INLINE)
def inertia_mul(I, oi, v, ov, out, oo):
    """out = I v for the inertia (m, h, Ibar) at I[oi:oi+13]."""
    m = I[oi]
    h0 = I[oi + 1]
    h1 = I[oi + 2]
    h2 = I[oi + 3]
    w0 = v[ov]
    w1 = v[ov + 1]
    w2 = v[ov + 2]
    u0 = v[ov + 3]
    u1 = v[ov + 4]
    u2 = v[ov + 5]
    out[oo] = I[oi + 4] * w0 + I[oi + 5] * w1 + I[oi + 6] * w2 + h1 * u2 - h2 * u1
    out[oo + 1] = I[oi + 7] * w0 + I[oi + 8] * w1 + I[oi + 9] * w2 + h2 * u0 - h0 * u2
    out[oo + 2] = I[oi + 10] * w0 + I[oi + 11] * w1 + I[oi + 12] * w2 + h0 * u1 - h1 * u0
    out[oo + 3] = m * u0 - (h1 * w2 - h2 * w1)
    out[oo + 4] = m * u1 - (h2 * w0 - h0 * w2)
    out[oo + 5] = m * u2 - (h0 * w1 - h1 * w0)


@njit(**INLINE)
def inertia_xT_add(X, ox, I, oi, out, oo):
    """out += X^T I X: inertia I (child frame) expressed in the parent frame
    (``inertia_xT_set`` has the formulas)."""
    _inertia_xT(X, ox, I, oi, out, oo, True)


@njit(**INLINE)
def inertia_xT_set(X, ox, I, oi, out, oo):
    """out = X^T I X: inertia I (child frame) expressed in the parent frame.

    RBDA eq. 2.66 with y = E^T h:  m' = m,  h' = y + m r,
    Ibar' = E^T Ibar E - [r]x [y]x - [y + m r]x [r]x.
    """
    _inertia_xT(X, ox, I, oi, out, oo, False)


@njit(**INLINE)
def _put(out, k, x, add):
    if add:
        out[k] += x
    else:
        out[k] = x


@njit(**INLINE)
def _inertia_xT(X, ox, I, oi, out, oo, add):
    """inertia_xT_add (add: a compile-time constant after inlining) or inertia_xT_set."""
    m = I[oi]
    y0 = X[ox] * I[oi + 1] + X[ox + 3] * I[oi + 2] + X[ox + 6] * I[oi + 3]
    y1 = X[ox + 1] * I[oi + 1] + X[ox + 4] * I[oi + 2] + X[ox + 7] * I[oi + 3]
    y2 = X[ox + 2] * I[oi + 1] + X[ox + 5] * I[oi + 2] + X[ox + 8] * I[oi + 3]
    r0 = X[ox + 9]
    r1 = X[ox + 10]
    r2 = X[ox + 11]
    z0 = y0 + m * r0
    z1 = y1 + m * r1
    z2 = y2 + m * r2
    # [a]x [b]x = b a^T - (a . b) 1
    d = r0 * y0 + r1 * y1 + r2 * y2 + z0 * r0 + z1 * r1 + z2 * r2
    _put(out, oo, m, add)
    _put(out, oo + 1, z0, add)
    _put(out, oo + 2, z1, add)
    _put(out, oo + 3, z2, add)
    # E^T Ibar E: T = Ibar E (columns j), then row i of E^T T; symmetric, so i <= j and mirrored
    for j in range(3):
        e0 = X[ox + j]
        e1 = X[ox + 3 + j]
        e2 = X[ox + 6 + j]
        t0 = I[oi + 4] * e0 + I[oi + 5] * e1 + I[oi + 6] * e2
        t1 = I[oi + 7] * e0 + I[oi + 8] * e1 + I[oi + 9] * e2
        t2 = I[oi + 10] * e0 + I[oi + 11] * e1 + I[oi + 12] * e2
        for i in range(j + 1):
            x = X[ox + i] * t0 + X[ox + 3 + i] * t1 + X[ox + 6 + i] * t2
            _put(out, oo + 4 + 3 * i + j, x, add)
            if i != j:
                _put(out, oo + 4 + 3 * j + i, x, add)
    # - [r]x [y]x - [z]x [r]x = -(y r^T + r z^T) + d 1, symmetric (z = y + m r)
    o = oo + 4
    b01 = y0 * r1 + r0 * z1
    b02 = y0 * r2 + r0 * z2
    b12 = y1 * r2 + r1 * z2
    out[o] -= y0 * r0 + r0 * z0 - d
    out[o + 1] -= b01
    out[o + 2] -= b02
    out[o + 3] -= b01
    out[o + 4] -= y1 * r1 + r1 * z1 - d
    out[o + 5] -= b12
    out[o + 6] -= b02
    out[o + 7] -= b12
    out[o + 8] -= y2 * r2 + r2 * z2 - d


@njit(**INLINE)
def inertia_to_mat6(I, oi, out, oo):
    """Write the 6x6 spatial inertia (row-major) of (m, h, Ibar) at I[oi:]."""
    for k in range(36):
        out[oo + k] = 0.0
    for i in range(3):
        for j in range(3):
            out[oo + 6 * i + j] = I[oi + 4 + 3 * i + j]
        out[oo + 6 * (3 + i) + 3 + i] = I[oi]
    h0 = I[oi + 1]
    h1 = I[oi + 2]
    h2 = I[oi + 3]
    # upper-right block [h]x, lower-left block its transpose
    out[oo + 4] = -h2
    out[oo + 5] = h1
    out[oo + 6 + 3] = h2
    out[oo + 6 + 5] = -h0
    out[oo + 12 + 3] = -h1
    out[oo + 12 + 4] = h0
    for i in range(3):
        for j in range(3):
            out[oo + 6 * (3 + j) + i] = out[oo + 6 * i + 3 + j]


@njit(**INLINE)
def mat6_xT_X_add(X, ox, M, om, tmp, ot, out, oo):
    """out += X^T M X for a symmetric 6x6 M = [[A, B], [B^T, C]] (row-major).
    Needs 36 scratch numbers at tmp[ot:].

    With X = [[1, 0], [-r x, 1]] diag(E, E) and the rotated blocks
    A' = E^T A E, B' = E^T B E, C' = E^T C E:

        X^T M X = [[A' - P - P^T - r x C' r x,  B' + r x C'],
                   [(B' + r x C')^T,            C'         ]],   P = B' r x
    """
    A = ot
    B = ot + 9
    C = ot + 18
    Q = ot + 27
    # A' = E^T A E, B' = E^T B E, C' = E^T C E  (blocks at M[om], M[om+3], M[om+21], row stride 6)
    for blk in range(3):
        mb = om + (0 if blk == 0 else (3 if blk == 1 else 21))
        ob = ot + 9 * blk
        for j in range(3):
            e0 = X[ox + j]
            e1 = X[ox + 3 + j]
            e2 = X[ox + 6 + j]
            t0 = M[mb] * e0 + M[mb + 1] * e1 + M[mb + 2] * e2
            t1 = M[mb + 6] * e0 + M[mb + 7] * e1 + M[mb + 8] * e2
            t2 = M[mb + 12] * e0 + M[mb + 13] * e1 + M[mb + 14] * e2
            for i in range(3):
                tmp[ob + 3 * i + j] = X[ox + i] * t0 + X[ox + 3 + i] * t1 + X[ox + 6 + i] * t2
    r0 = X[ox + 9]
    r1 = X[ox + 10]
    r2 = X[ox + 11]
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
            out[oo + 6 * i + 3 + j] += bj[i]          # upper-right block
            out[oo + 6 * (3 + j) + i] += bj[i]        # lower-left block (transpose)
            out[oo + 6 * (3 + i) + 3 + j] += tmp[C + 3 * i + j]
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
            out[oo + 6 * i + j] += tmp[A + 3 * i + j] - pij - pji - rq[i]


@njit(**JIT)
def chol6_solve(M, om, b, ob, L, ol, out, oo):
    """Solve M x = b (x into out) for a symmetric positive-definite 6x6 M,
    factorising into L.  Returns False if M is not positive definite."""
    for i in range(6):
        for j in range(i + 1):
            s = M[om + 6 * i + j]
            for k in range(j):
                s -= L[ol + 6 * i + k] * L[ol + 6 * j + k]
            if i == j:
                if not s > 0.0:
                    return False
                L[ol + 7 * i] = np.sqrt(s)
            else:
                L[ol + 6 * i + j] = s / L[ol + 7 * j]
    for i in range(6):
        s = b[ob + i]
        for k in range(i):
            s -= L[ol + 6 * i + k] * out[oo + k]
        out[oo + i] = s / L[ol + 7 * i]
    for i in range(5, -1, -1):
        s = out[oo + i]
        for k in range(i + 1, 6):
            s -= L[ol + 6 * k + i] * out[oo + k]
        out[oo + i] = s / L[ol + 7 * i]
    return True
