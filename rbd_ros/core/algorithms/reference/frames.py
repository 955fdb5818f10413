"""Frame kinematics in body frames, the textbook way (RBDA §2.9 and Table 5.1's
forward pass without gravity; Pinocchio's ``computeFrameJacobian``,
``getFrameVelocity``, ``getFrameClassicalAcceleration``).

A frame F is a URDF link on body b at placement (R, p) in b:
X_bF = rot(Rᵀ) xlt(p) takes motions from b's coordinates to F's.

    v_i = X_i v_λ(i) + S_i qd_i,   a_i = X_i a_λ(i) + S_i qdd_i + v_i × S_i qd_i   (a_0 = 0)
    J_F (local, [ω; v]) : column block of ancestor joint j = X_bF X_b X_λ(b) ... X_j⁻¹ S_j
    v_F = X_bF v_b,   a_F = X_bF a_b                                   (local, [ω; v])

then rows [linear; angular], and the reference frames of Pinocchio:
``local`` as above; ``local_world_aligned`` rotated into world axes (R_F, the
frame's orientation in the world); ``world`` the motion moved to the world
origin (X_0F⁻¹).  The classical acceleration adds [ω × v_linear; 0] to the
spatial one in each reference.
"""
import numpy as np

from .jcalc import jcalc
from .rnea import world_transforms
from .spatial import crm, plux
from .tree import bodies


def _frame(model, frame):
    lp = model.tree.links[model.link_index(frame)]
    return lp.body, plux(np.asarray(lp.R).T, np.asarray(lp.p))


def _kinematics(model, q, v, a, frame):
    """(X_0F, J_local (6 x nv, [ω; v]), v_F, a_F local spatial) of the frame."""
    tree = bodies(model)
    XS = [jcalc(b, q) for b in tree]
    Xup = [XJ @ b.Xtree for (XJ, _), b in zip(XS, tree)]
    X0 = world_transforms(tree, Xup)
    b, XbF = _frame(model, frame)
    J = np.zeros((6, model.nv))
    vF, aF = np.zeros(6), np.zeros(6)
    if b < 0:
        return XbF, J, vF, aF
    vel, acc = [None] * len(tree), [None] * len(tree)
    for i, body in enumerate(tree):
        S = XS[i][1]
        vJ = S @ v[body.dofs] if v is not None else np.zeros(6)
        vp, ap = (np.zeros(6), np.zeros(6)) if body.parent < 0 else (vel[body.parent], acc[body.parent])
        vel[i] = Xup[i] @ vp + vJ
        acc[i] = Xup[i] @ ap + (S @ a[body.dofs] if a is not None else 0.0) + crm(vel[i]) @ vJ
    X0F = XbF @ X0[b]
    j = b
    while j >= 0:
        J[:, tree[j].dofs] += X0F @ np.linalg.inv(X0[j]) @ XS[j][1]
        j = tree[j].parent
    return X0F, J, XbF @ vel[b], XbF @ acc[b]


def _in_reference(m_local, X0F, reference):
    """A local motion [ω; v] of the frame -> [linear; angular] in ``reference``."""
    if reference == "local":
        w, lin = m_local[:3], m_local[3:]
    elif reference == "local_world_aligned":
        R = X0F[:3, :3].T          # frame axes -> world axes
        w, lin = R @ m_local[:3], R @ m_local[3:]
    elif reference == "world":
        m0 = np.linalg.inv(X0F) @ m_local
        w, lin = m0[:3], m0[3:]
    else:
        raise ValueError(f"reference: expected world, local or local_world_aligned, got {reference!r}")
    return np.concatenate([lin, w])


def frame_jacobian(model, q, frame, reference="local_world_aligned"):
    """J (6 x nv), rows [linear; angular]: the frame's velocity = J v."""
    X0F, J, _, _ = _kinematics(model, np.asarray(q, dtype=float), None, None, frame)
    return np.column_stack([_in_reference(J[:, k], X0F, reference) for k in range(model.nv)]) \
        if model.nv else np.zeros((6, 0))


def frame_velocity(model, q, v, frame, reference="local_world_aligned"):
    """The frame's velocity [linear; angular] in ``reference``."""
    X0F, _, vF, _ = _kinematics(model, np.asarray(q, dtype=float), np.asarray(v, dtype=float), None, frame)
    return _in_reference(vF, X0F, reference)


def frame_acceleration(model, q, v, a, frame, reference="local_world_aligned"):
    """The classical acceleration of the frame's origin [linear; angular] in ``reference``."""
    q, v, a = (np.asarray(x, dtype=float) for x in (q, v, a))
    X0F, _, vF, aF = _kinematics(model, q, v, a, frame)
    vel, acc = _in_reference(vF, X0F, reference), _in_reference(aF, X0F, reference)
    acc[:3] += np.cross(vel[3:], vel[:3])
    return acc
