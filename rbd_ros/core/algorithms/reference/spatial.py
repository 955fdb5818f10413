"""Spatial algebra with 6x6 matrices (Featherstone, RBDA ch. 2; spatial_v2's
``rotx``/``xlt``/``crm``/``crf``/``mcI``), plain numpy.

Order: motion vectors ``[w; v]``, force vectors ``[n; f]`` (angular first).
A Plücker transform from frame A to frame B with rotation ``E`` (A coordinates
-> B coordinates) and ``r`` (B's origin in A coordinates) is

    X = rot(E) xlt(r) = [[E, 0], [-E [r]x, E]]          (motion, A -> B)
    X* = X^-T         = [[E, -E [r]x], [0, E]]          (force,  A -> B)

which is the ``(E, r)`` pair the kernels store (``rbd_ros/core/spatial.py``).
"""
import numpy as np


def skew(x):
    """[x]x, the 3x3 matrix with [x]x y = x × y."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def rot(E):
    """Plücker rotation: coordinates rotated by E (3x3)."""
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = E
    return X


def xlt(r):
    """Plücker translation: origin moved to r."""
    X = np.eye(6)
    X[3:, :3] = -skew(r)
    return X


def plux(E, r):
    """X = rot(E) xlt(r), the motion transform of the stored pair (E, r)."""
    return rot(E) @ xlt(r)


def force_transform(X):
    """X* = X^-T, the force transform for the motion transform X."""
    return np.linalg.inv(X).T


def rotation(u, angle):
    """Rotation matrix R(u, angle) (Rodrigues): x -> rotated x, u a unit axis."""
    u = np.asarray(u, dtype=float)
    K = skew(u)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def quat_to_matrix(x, y, z, w):
    """Rotation matrix of the quaternion (x y z w), normalised first."""
    n = np.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def crm(v):
    """Motion cross-product matrix: crm(v) m = v × m."""
    w, u = skew(v[:3]), skew(v[3:])
    return np.block([[w, np.zeros((3, 3))], [u, w]])


def crf(v):
    """Force cross-product matrix: crf(v) f = v ×* f = -crm(v)^T f."""
    return -crm(v).T


def icrf(f):
    """The 6x6 matrix with icrf(f) v = v ×* f (f fixed, v varying): (f x̄) in
    Echeandia & Wensing's notation, = -[[ [n]x, [f]x ], [ [f]x, 0 ]] for f = [n; f]."""
    n, fl = skew(f[:3]), skew(f[3:])
    return -np.block([[n, fl], [fl, np.zeros((3, 3))]])


def inertia(m, h, Ibar):
    """Spatial inertia about a frame's origin from the stored parameters:
    mass m, first moment h = m c, rotational inertia Ibar about the origin:

        I = [[Ibar, [h]x], [[h]x^T, m 1]]
    """
    H = skew(h)
    return np.block([[np.asarray(Ibar, dtype=float).reshape(3, 3), H], [H.T, m * np.eye(3)]])


def mcI(m, c, Ic):
    """Featherstone's mcI: spatial inertia of mass m, centre of mass c,
    rotational inertia Ic about the centre of mass (= inertia(m, m c, Ic - m [c]x [c]x))."""
    C = skew(c)
    return np.block([[Ic + m * C @ C.T, m * C], [m * C.T, m * np.eye(3)]])
