"""jcalc: joint transform X_J(q) and motion subspace S (RBDA Table 4.1, spatial_v2 ``jcalc.m``).

    revolute,  axis u:   X_J = rot(R(u, θ)^T),    S = [u; 0]
    prismatic, axis u:   X_J = xlt(u d),          S = [0; u]
    free (q = [x y z qx qy qz qw], v = [v; w] in the body frame):
                         X_J = rot(R(quat)^T) xlt(p),  S = [[0, 1], [1, 0]]

(the free joint's S only reorders the user's [v; w] into [w; v]).  A mimic
joint reads θ = mult q[master] + offset; its velocity is mult v[master], so
in the user's coordinates its S is mult times the one above (``fold=True``,
the default) — that is how H = Gᵀ H_full G and tau = Gᵀ tau_full come out
of the ordinary algorithms.  ``fold=False`` gives the joint's own S (full
coordinates, as ABA uses).  The body's transform from its parent is then
X_up = X_J X_T.
"""
import numpy as np

from .spatial import plux, quat_to_matrix, rot, rotation, xlt

S_FREE = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])


def jcalc(body, q, fold=True):
    """(X_J, S) of ``body`` (a ``tree.Body``) at configuration q."""
    if body.jtype == "free":
        x, y, z, qx, qy, qz, qw = q[body.qi:body.qi + 7]
        return plux(quat_to_matrix(qx, qy, qz, qw).T, np.array([x, y, z])), S_FREE.copy()
    qj = body.mult * q[body.qi] + body.offset
    m = body.mult if fold else 1.0
    u = body.axis
    if body.jtype == "revolute":
        return rot(rotation(u, qj).T), m * np.concatenate([u, np.zeros(3)])[:, None]
    return xlt(u * qj), m * np.concatenate([np.zeros(3), u])[:, None]


def x_up(body, q):
    """X_up = X_J(q) X_T: parent frame -> body frame."""
    return jcalc(body, q)[0] @ body.Xtree
