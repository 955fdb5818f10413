"""Helpers of the contact tests and bench/contacts.py: legged robots of example-robot-data
standing in their SRDF poses, motions that keep the feet on the ground, and the friction
problem stated and solved independently of rbd_ros (numpy, Pinocchio, scipy's NNLS):

* ``cone_rows``: each contact's cone as rows C λ <= 0, written from the definitions in
  doc/contacts.md with the frames from Pinocchio's forward kinematics;
* ``generators``: the same cones as spans of edges (a point contact's pyramid edges; a
  flat contact's edges of the pyramids at its sole's four corners);
* ``least_norm``: min ½ λᵀWλ s.t. B λ = c, C λ <= 0 by eliminating the equalities and
  solving the least-distance problem with Lawson & Hanson's NNLS transformation
  (Solving Least Squares Problems, ch. 23);
* ``least_residual``: min ‖B λ − c‖ over the cones, as NNLS over the generators.
"""
from __future__ import annotations

import numpy as np
import oracle as orc
import pinocchio as pin
from constraint_util import pin_constraint
from scipy.optimize import nnls

import rbd_ros.core as rbd

SRDF = {"solo12": ("solo_description/srdf/solo.srdf", "standing"),
        "anymal_c": ("anymal_c_simple_description/srdf/anymal.srdf", "standing"),
        "talos_full_v2": ("talos_data/srdf/talos.srdf", "half_sitting")}
FEET = {"solo12": ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"],
        "anymal_c": ["LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"],
        "talos_full_v2": ["left_sole_link", "right_sole_link"]}
SOLE = (0.20, 0.13)        # Talos' sole (m), about its sole frame (TSID's talos example: 0.21 x 0.138)


class Robot:
    """A floating-base robot of example-robot-data in its SRDF standing pose: ``model``
    (rbd_ros), ``o`` (the Pinocchio oracle), ``q``, ``feet``."""

    def __init__(self, name):
        path = orc.robot_urdf(name)
        self.name = name
        self.model = rbd.Model.from_urdf(path, floating_base=True)
        self.o = orc.Oracle(path, floating_base=True, layout=self.model)
        srdf, state = SRDF[name]
        pin.loadReferenceConfigurations(self.o.model, f"{orc.robots_dir()}/{srdf}", False)
        self.q = self.o.q_from_pin(self.o.model.referenceConfigurations[state])
        self.feet = FEET[name]
        self.flat = name == "talos_full_v2"

    def contacts(self, origins_a=None, origins_b=None):
        make = rbd.Constraint.weld if self.flat else rbd.Constraint
        oa = origins_a or [None] * len(self.feet)
        ob = origins_b or [None] * len(self.feet)
        return tuple(make(f, None, origin_a=a, origin_b=b, name=f) for f, a, b in zip(self.feet, oa, ob))

    def friction(self, mu):
        return rbd.FrictionCone(mu, sole_size=SOLE) if self.flat else mu

    def rotation(self, q, link):
        """World rotation of URDF link ``link`` at q (Pinocchio)."""
        d = self.o.model.createData()
        pin.framesForwardKinematics(self.o.model, d, self.o.q_to_pin(q))
        return d.oMf[self.o.model.getFrameId(link, pin.FrameType.BODY)].rotation.copy()

    def motion(self, cons, base_acc, v=None):
        """(v, a) with the feet still: the base's acceleration ``base_acc`` (6, [linear;
        angular] in the base frame), the joints' from J a + γ = 0 (least squares)."""
        nv = self.model.nv
        v = np.zeros(nv) if v is None else v
        J = rbd.constraint_jacobian(self.model, self.q, cons)
        g = rbd.constraint_drift(self.model, self.q, v, cons)
        a = np.zeros(nv)
        a[:6] = base_acc
        a[6:] = np.linalg.lstsq(J[:, 6:], -g - J[:, :6] @ a[:6], rcond=None)[0]
        return v, a

    def system(self, q, v, a, cons):
        """(B, c, J, f): the base equations B λ = c (B = J_baseᵀ, c = (M a + b)_base) from
        Pinocchio (rnea, the constraint Jacobian)."""
        d = self.o.model.createData()
        qf = self.o.q_to_pin(q)
        pin.computeJointJacobians(self.o.model, d, qf)
        rows = []
        for c in cons:
            cm = pin_constraint(pin, self.o.model, c)
            cd = cm.createData()
            cm.calc(self.o.model, d, cd)
            rows.append(pin.getConstraintJacobian(self.o.model, d, cm, cd) @ self.o.G)
        J = np.vstack(rows)
        f = self.o.rnea(q, v, a)
        return J[:, :6].T, f[:6], J, f


def point_rows(mu):
    """The pyramid inscribed in the Coulomb cone, rows on the force in the ground frame."""
    m = mu / np.sqrt(2.0)
    rows = [[1, 0, -m], [-1, 0, -m], [0, 1, -m], [0, -1, -m]]
    if mu == 0.0:
        rows.append([0, 0, -1])
    return np.array(rows, dtype=float)


def cwc_rows(mu, X, Y):
    """Caron et al. 2015's contact wrench cone of a X x Y half-size rectangle with the
    pyramid above at its corners, rows on (f, τ) at the rectangle's centre."""
    m = mu / np.sqrt(2.0)
    rows = [[1, 0, -m, 0, 0, 0], [-1, 0, -m, 0, 0, 0], [0, 1, -m, 0, 0, 0], [0, -1, -m, 0, 0, 0],
            [0, 0, -Y, 1, 0, 0], [0, 0, -Y, -1, 0, 0], [0, 0, -X, 0, 1, 0], [0, 0, -X, 0, -1, 0]]
    for s1 in (1, -1):
        for s2 in (1, -1):
            rows.append([s1 * Y, s2 * X, -m * (X + Y), -s1 * m, -s2 * m, -1])
            rows.append([s1 * Y, s2 * X, -m * (X + Y), s1 * m, s2 * m, 1])
    return np.array(rows, dtype=float)


def point_edges(mu):
    """The pyramid's four edges (its square section's corners lie on the Coulomb circle)."""
    m = mu / np.sqrt(2.0)
    return np.array([[m, m, 1], [m, -m, 1], [-m, m, 1], [-m, -m, 1]], dtype=float).T


def cwc_edges(mu, X, Y):
    out = []
    for p in ((X, Y, 0.0), (X, -Y, 0.0), (-X, Y, 0.0), (-X, -Y, 0.0)):
        for g in point_edges(mu).T:
            out.append(np.concatenate([g, np.cross(p, g)]))
    return np.array(out).T


def _to_ground(robot, q, c):
    """The rotation taking λ's axes (frame a) to the cone's (frame b for a point; the sole
    frame for a flat contact: frame a turned so that its z is frame b's)."""
    Ra = robot.rotation(q, c.link_a) @ c.origin_a[:3, :3]
    Rb = c.origin_b[:3, :3]
    if c.is_point:
        return Rb.T @ Ra
    za, zb = Ra[:, 2], Rb[:, 2]
    k = np.cross(za, zb)
    Q = np.eye(3) + _skew(k) + _skew(k) @ _skew(k) / (1.0 + za @ zb)
    return Ra.T @ Q.T @ Ra


def _skew(k):
    return np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])


def cone_rows(robot, q, cons, frictions):
    """C (rows x m) of every contact (a friction entry per constraint: μ, FrictionCone or None)."""
    blocks, m = [], sum(c.dim for c in cons)
    col = 0
    for c, fr in zip(cons, frictions):
        if fr is not None:
            mu = fr.mu if isinstance(fr, rbd.FrictionCone) else float(fr)
            R = _to_ground(robot, q, c)
            if c.is_point:
                rows = point_rows(mu) @ R
            else:
                X, Y = fr.sole_size[0] / 2, fr.sole_size[1] / 2
                rows = cwc_rows(mu, X, Y) @ np.kron(np.eye(2), R)
            block = np.zeros((rows.shape[0], m))
            block[:, col:col + c.dim] = rows
            blocks.append(block)
        col += c.dim
    return np.vstack(blocks) if blocks else np.zeros((0, m))


def generators(robot, q, cons, frictions):
    """G (m x k): the admissible λ are G α, α >= 0 (bilateral rows: ± unit vectors)."""
    cols, m, r = [], sum(c.dim for c in cons), 0
    for c, fr in zip(cons, frictions):
        if fr is None:
            for i in range(c.dim):
                for s in (1.0, -1.0):
                    g = np.zeros(m)
                    g[r + i] = s
                    cols.append(g)
        else:
            mu = fr.mu if isinstance(fr, rbd.FrictionCone) else float(fr)
            R = _to_ground(robot, q, c)
            if c.is_point:
                E = R.T @ point_edges(mu) if mu > 0 else R.T @ np.array([[0.0], [0.0], [1.0]])
            else:
                E = np.kron(np.eye(2), R.T) @ cwc_edges(mu, fr.sole_size[0] / 2, fr.sole_size[1] / 2)
            for g in E.T:
                col = np.zeros(m)
                col[r:r + c.dim] = g
                cols.append(col)
        r += c.dim
    return np.array(cols).T


def least_norm(B, c, C, w):
    """min ½ λᵀ diag(w) λ s.t. B λ = c, C λ <= 0 (module docstring); None if infeasible."""
    s = 1.0 / np.sqrt(w)
    Bs, Cs = B * s, C * s
    U, S, Vt = np.linalg.svd(Bs)
    r = int(np.sum(S > 1e-12 * S[0]))
    mu0 = Vt[:r].T @ ((U[:, :r].T @ c) / S[:r])
    if np.linalg.norm(Bs @ mu0 - c) > 1e-9 * max(1.0, np.linalg.norm(c)):
        return None
    N = Vt[r:].T
    G, h = -Cs @ N, Cs @ mu0                       # G z >= h
    n = N.shape[1]
    if C.shape[0] == 0 or n == 0:                  # no cone, or a single λ: mu0 (if in the cones)
        return s * mu0 if np.all(h <= 1e-12 * max(1.0, np.max(np.abs(c)))) else None
    E = np.vstack([G.T, h[None, :]])
    e = np.zeros(n + 1)
    e[-1] = 1.0
    u, _ = nnls(E, e, maxiter=100 * E.shape[1])
    res = E @ u - e
    if abs(res[-1]) < 1e-12:
        return None
    return s * (mu0 + N @ (-res[:n] / res[n]))


def least_residual(B, c, G):
    """(min ‖B λ − c‖ over λ = G α, α >= 0, the reached B λ) by NNLS."""
    alpha, rnorm = nnls(B @ G, c, maxiter=100 * G.shape[1])
    return rnorm, B @ G @ alpha
