"""Joint types.

Inside the kernels every moving joint is *elementary*: it moves one body
relative to its parent and has a constant motion subspace ``S`` in the body
frame.  Three elementary types cover every URDF joint:

========== ==== ==== ===================================================
type        nq   nv  motion subspace S (body frame, [w; v] order)
========== ==== ==== ===================================================
REVOLUTE     1    1  [u; 0]       u = unit axis (URDF revolute, continuous)
PRISMATIC    1    1  [0; u]
FREE         7    6  identity     q = [x y z qx qy qz qw], v = [v; w]
========== ==== ==== ===================================================

The free joint's user DOF c (order [v; w], Pinocchio's) is internal index
(c + 3) % 6 of the [w; v] order; the kernels write that inline.

URDF joints map onto them as follows (see ``urdf.py``):

* ``revolute`` and ``continuous``: REVOLUTE (q is the angle, as in
  sensor_msgs/JointState; no (cos, sin) pair).
* ``prismatic``: PRISMATIC.
* ``fixed``: no body at all; the child's inertia is merged into the moving
  parent and the transforms are composed.
* ``floating`` (and the optional free-flyer root): FREE, Pinocchio's layout.
* ``planar`` (URDF axis = plane normal n): three elementary joints,
  PRISMATIC along e1, PRISMATIC along e2, REVOLUTE about n, where (e1, e2, n)
  is right-handed (for n = z, e1 = x and e2 = y); q = [x, y, theta] and
  v = dq/dt.  The two intermediate bodies are massless.

A mimic joint is an elementary REVOLUTE/PRISMATIC joint whose coordinate is
``multiplier * q[master] + offset``; it owns no DOF.

Each function below writes the joint transform ``X_J(q)`` composed with the
tree transform ``X_T``: ``X = X_J X_T``, stored as (E, r) (12 numbers; the
arguments are 1-D arrays, see ``spatial.py``).  ``algorithms/common.jcalc``
dispatches on the joint type.
"""
import numpy as np
from numba import njit

from .spatial import INLINE, JIT

REVOLUTE = 0
PRISMATIC = 1
FREE = 2

NV_OF = {REVOLUTE: 1, PRISMATIC: 1, FREE: 6}
NQ_OF = {REVOLUTE: 1, PRISMATIC: 1, FREE: 7}


@njit(**INLINE)
def revolute_transform(XT, u, angle, X):
    """X = rot(u, angle) X_T (X_T: 12 numbers, u: the unit axis, 3).
    E_J = R(u, angle)^T = c 1 - s [u]x + (1 - c) u u^T,  E = E_J E_T,  r = r_T."""
    c = np.cos(angle)
    s = np.sin(angle)
    u0 = u[0]
    u1 = u[1]
    u2 = u[2]
    if u2 == 1.0:
        # the z axis (most URDFs' convention): E_J = [[c, s, 0], [-s, c, 0], [0, 0, 1]]
        for k in range(3):
            a = XT[k]
            b = XT[3 + k]
            X[k] = c * a + s * b
            X[3 + k] = c * b - s * a
            X[6 + k] = XT[6 + k]
        X[9] = XT[9]
        X[10] = XT[10]
        X[11] = XT[11]
        return
    t = 1.0 - c
    j0 = c + t * u0 * u0
    j1 = s * u2 + t * u0 * u1
    j2 = -s * u1 + t * u0 * u2
    j3 = -s * u2 + t * u1 * u0
    j4 = c + t * u1 * u1
    j5 = s * u0 + t * u1 * u2
    j6 = s * u1 + t * u2 * u0
    j7 = -s * u0 + t * u2 * u1
    j8 = c + t * u2 * u2
    for k in range(3):
        a = XT[k]
        b = XT[3 + k]
        d = XT[6 + k]
        X[k] = j0 * a + j1 * b + j2 * d
        X[3 + k] = j3 * a + j4 * b + j5 * d
        X[6 + k] = j6 * a + j7 * b + j8 * d
    X[9] = XT[9]
    X[10] = XT[10]
    X[11] = XT[11]


@njit(**INLINE)
def prismatic_transform(XT, u, d, X):
    """X = xlt(u d) X_T:  E = E_T,  r = r_T + E_T^T u d."""
    for k in range(9):
        X[k] = XT[k]
    for k in range(3):
        X[9 + k] = XT[9 + k] + (XT[k] * u[0] + XT[3 + k] * u[1] + XT[6 + k] * u[2]) * d


@njit(**JIT)      # not inlined: its branch would slow down every revolute joint's loop
def free_transform(XT, q, X):
    """X = X_J(q) X_T with q = [x y z qx qy qz qw] (7 numbers: Pinocchio's
    free-flyer): the body's placement in its parent is (R(quat), p), so
    E_J = R^T and r_J = p.  The quaternion is normalised; returns False if its
    norm is ~0."""
    x = q[3]
    y = q[4]
    z = q[5]
    w = q[6]
    n2 = x * x + y * y + z * z + w * w
    if not n2 > 1e-12:
        return False
    s = 2.0 / n2
    R0 = 1.0 - s * (y * y + z * z)
    R1 = s * (x * y - w * z)
    R2 = s * (x * z + w * y)
    R3 = s * (x * y + w * z)
    R4 = 1.0 - s * (x * x + z * z)
    R5 = s * (y * z - w * x)
    R6 = s * (x * z - w * y)
    R7 = s * (y * z + w * x)
    R8 = 1.0 - s * (x * x + y * y)
    for k in range(3):
        a = XT[k]
        b = XT[3 + k]
        d = XT[6 + k]
        X[k] = R0 * a + R3 * b + R6 * d
        X[3 + k] = R1 * a + R4 * b + R7 * d
        X[6 + k] = R2 * a + R5 * b + R8 * d
    for k in range(3):
        X[9 + k] = XT[9 + k] + XT[k] * q[0] + XT[3 + k] * q[1] + XT[6 + k] * q[2]
    return True


def planar_basis(n):
    """Right-handed (e1, e2) spanning the plane with unit normal n."""
    n = np.asarray(n, dtype=float)
    a = np.array([0.0, 1.0, 0.0]) if abs(n[1]) < 0.9 else np.array([0.0, 0.0, 1.0])
    e1 = np.array([a[1] * n[2] - a[2] * n[1], a[2] * n[0] - a[0] * n[2], a[0] * n[1] - a[1] * n[0]])
    e1 /= np.linalg.norm(e1)
    e2 = np.array([n[1] * e1[2] - n[2] * e1[1], n[2] * e1[0] - n[0] * e1[2], n[0] * e1[1] - n[1] * e1[0]])
    return e1, e2
