"""Readable numpy twins of the constraint kernels (6x6 spatial matrices, spatial_v2 style).

    from rbd_ros.core.constraints import reference as cref
    e, J, gamma, Jv = cref.kinematics(model, q, v, constraints)
    qdd, lam = cref.constrained_forward_dynamics(model, q, v, tau, constraints, kp=..., kd=...)
    tau, lam, residual = cref.constrained_inverse_dynamics(model, q, v, a, constraints, actuated=...)
    q = cref.close_loops(model, q, constraints, fixed=...);  v = cref.loop_velocity(...)

They read the model only through ``model.tree`` (``reference.tree.bodies``) and take
the same arguments as the public functions (the model's constraints first, then the
given ones).  A different derivation from the kernels': everything in the constraint
frames' own coordinates, Pinocchio's way,

    v_F = X_bF v_b,  J_F = X_bF J_b,  a_F = X_bF a_b          (frame F on body b; [ω; v])
    weld:  J = J_a − ᵃX_b J_b,  v_rel = J q̇,  γ = a_a − ᵃX_b a_b + v_rel ×(ᵃX_b v_b)
    point: J = lin(J_a) − ᵃR_b lin(J_b),  γ = ä_a − ᵃR_b ä_b − ω_a × (J q̇)
           (ä: the classical acceleration of the frame's origin, lin(a) + ω × lin(v))

then a dense KKT solve (M from CRBA, λ by SVD least squares) and a dense least-squares
inverse dynamics.  Slow; for tests and for reading.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from ..algorithms.reference.crba import crba
from ..algorithms.reference.jcalc import jcalc
from ..algorithms.reference.rnea import bias, rnea, world_transforms
from ..algorithms.reference.spatial import crm, plux, skew
from ..algorithms.reference.tree import bodies
from ..model.constraint import as_tuple


def _all(model, constraints):
    return model.constraints + as_tuple(constraints)


def _frame(model, link, origin):
    """(body, X_bF 6x6) of a constraint frame (body -1: X_0F)."""
    if link is None:
        body, R, p = -1, np.eye(3), np.zeros(3)
    else:
        lp = model.tree.links[model.link_index(link)]
        body, R, p = lp.body, np.asarray(lp.R), np.asarray(lp.p)
    R_F, p_F = R @ origin[:3, :3], p + R @ origin[:3, 3]
    return body, plux(R_F.T, p_F)


def _tree_motion(model, q, v):
    """X0 per body, and body-frame J (6 x nv), v, a (q̈ = 0, no gravity) per body."""
    tree = bodies(model)
    XS = [jcalc(b, q) for b in tree]
    Xup = [XJ @ b.Xtree for (XJ, _), b in zip(XS, tree)]
    X0 = world_transforms(tree, Xup)
    vel: list = []
    acc: list = []
    jac: list = []
    for i, b in enumerate(tree):
        S = XS[i][1]
        vJ = S @ v[b.dofs]
        vp, ap = (np.zeros(6), np.zeros(6)) if b.parent < 0 else (vel[b.parent], acc[b.parent])
        Jp = np.zeros((6, model.nv)) if b.parent < 0 else jac[b.parent]
        vel.append(Xup[i] @ vp + vJ)
        acc.append(Xup[i] @ ap + crm(vel[i]) @ vJ)
        Ji = Xup[i] @ Jp
        Ji[:, b.dofs] += S
        jac.append(Ji)
    return X0, jac, vel, acc


def _local(model, motion, body, XbF):
    """(X_0F, J_F, v_F, a_F) of a frame; zeros for a frame fixed to the world."""
    X0, jac, vel, acc = motion
    if body < 0:
        return XbF, np.zeros((6, model.nv)), np.zeros(6), np.zeros(6)
    return XbF @ X0[body], XbF @ jac[body], XbF @ vel[body], XbF @ acc[body]


def _pose(X):
    """(R: frame axes -> world, p: origin in the world) of a 6x6 X_0F."""
    E = X[:3, :3]
    r = -skew_inv(E.T @ X[3:, :3])
    return E.T, r


def skew_inv(S):
    return np.array([S[2, 1], S[0, 2], S[1, 0]])


def log6(R, p):
    """[v; ω] (Pinocchio's order) of the transform (R, p): ω = log R, v = V(ω)⁻¹ p."""
    w = Rotation.from_matrix(R).as_rotvec()
    th = np.linalg.norm(w)
    W = skew(w)
    if th < 1e-6:
        Vinv = np.eye(3) - 0.5 * W + W @ W / 12.0
    else:
        Vinv = np.eye(3) - 0.5 * W + (1.0 - th * np.sin(th) / (2.0 * (1.0 - np.cos(th)))) / th ** 2 * W @ W
    return np.concatenate([Vinv @ p, w])


def _to_pin(m6):
    """Featherstone's [ω; v] -> Pinocchio's [v; ω] (rows)."""
    return np.concatenate([m6[3:], m6[:3]])


def kinematics(model, q, v=None, constraints=None):
    """(e, J, γ, J q̇) of the constraints (γ and J q̇ zero without v)."""
    q = np.asarray(q, dtype=float)
    v = np.zeros(model.nv) if v is None else np.asarray(v, dtype=float)
    motion = _tree_motion(model, q, v)
    es, Js, gs, jvs = [], [], [], []
    for c in _all(model, constraints):
        ba, Xa = _frame(model, c.link_a, c.origin_a)
        bb, Xb = _frame(model, c.link_b, c.origin_b)
        X0a, Ja, va, aa = _local(model, motion, ba, Xa)
        X0b, Jb, vb, ab = _local(model, motion, bb, Xb)
        Xab = X0a @ np.linalg.inv(X0b)            # frame b coordinates -> frame a coordinates
        Ra, pa = _pose(X0a)
        Rb, pb = _pose(X0b)
        if c.is_point:
            Eab = Xab[:3, :3]
            J = Ja[3:] - Eab @ Jb[3:]
            jv = J @ v
            acc_a = aa[3:] + np.cross(va[:3], va[3:])
            acc_b = ab[3:] + np.cross(vb[:3], vb[3:])
            g = acc_a - Eab @ acc_b - np.cross(va[:3], jv)
            e = Ra.T @ (pa - pb)
        else:
            sel = np.flatnonzero(c.mask)
            J6 = Ja - Xab @ Jb
            vrel = J6 @ v
            g6 = aa - Xab @ ab + crm(vrel) @ (Xab @ vb)
            J = np.array([_to_pin(col) for col in J6.T]).T[sel] if model.nv else np.zeros((len(sel), 0))
            jv = _to_pin(vrel)[sel]
            g = _to_pin(g6)[sel]
            e = -log6(Ra.T @ Rb, Ra.T @ (pb - pa))[sel]
        es.append(e)
        Js.append(J)
        gs.append(g)
        jvs.append(jv)
    if not es:
        return np.zeros(0), np.zeros((0, model.nv)), np.zeros(0), np.zeros(0)
    return np.concatenate(es), np.vstack(Js), np.concatenate(gs), np.concatenate(jvs)


def constrained_forward_dynamics(model, q, v, tau, constraints=None, kp=0.0, kd=0.0, regularization=0.0):
    """(q̈, λ): the KKT system [M −Jᵀ; J 0] with λ the least-norm solution of
    (J M⁻¹ Jᵀ + ε I) λ = −γ − kp e − kd J q̇ − J M⁻¹ (τ − b)."""
    e, J, g, jv = kinematics(model, q, v, constraints)
    M = crba(model, q)
    b = bias(model, q, v)
    Minv_Jt = np.linalg.solve(M, J.T)
    qdd0 = np.linalg.solve(M, tau - b)
    K = J @ Minv_Jt + regularization * np.eye(len(e))
    lam = np.linalg.lstsq(K, -g - kp * e - kd * jv - J @ qdd0, rcond=1e-12)[0]
    return qdd0 + Minv_Jt @ lam, lam


def _actuated(model, actuated):
    act = np.zeros(model.nv, dtype=bool)
    for name, t, i, n in zip(model.joint_names, model.joint_types, model.idx_v, model.joint_nv):
        if t != "floating" and (actuated is None or name in actuated):
            act[i:i + n] = True
    return act


def constrained_inverse_dynamics(model, q, v, a, constraints=None, actuated=None, weights=None):
    """(τ, λ, residual): λ = W^-1/2 μ with μ the least-norm least-squares solution of
    J_Pᵀ W^-1/2 μ = (M a + b)_P; τ = (M a + b − Jᵀλ) on the actuated DOFs."""
    e, J, g, jv = kinematics(model, q, v, constraints)
    f = rnea(model, q, v, a)
    act = _actuated(model, actuated)
    s = np.ones(len(e)) if weights is None else 1.0 / np.sqrt(np.asarray(weights, dtype=float))
    B = J[:, ~act].T * s
    mu = np.linalg.lstsq(B, f[~act], rcond=1e-12)[0] if B.size else np.zeros(len(e))
    lam = s * mu
    tau = np.where(act, f - J.T @ lam, 0.0)
    return tau, lam, float(np.linalg.norm(B @ mu - f[~act])) if B.size else 0.0


def _free(model, fixed):
    fixed = set(fixed or ())
    return np.array([i for name, iv, n in zip(model.joint_names, model.idx_v, model.joint_nv)
                     if name not in fixed for i in range(iv, iv + n)], dtype=int)


def close_loops(model, q, constraints=None, fixed=None, tol=1e-12, max_iter=50):
    """Gauss-Newton with step halving on the joints not in ``fixed`` (no free-flyer)."""
    q = np.array(q, dtype=float)
    F = _free(model, fixed)
    e = kinematics(model, q, None, constraints)[0]
    for _ in range(max_iter):
        if np.linalg.norm(e) <= 1e-3 * tol:
            break
        J = kinematics(model, q, None, constraints)[1]
        dx = np.linalg.lstsq(J[:, F], -e, rcond=1e-12)[0]
        step = 1.0
        while step > 1e-12:
            qt = q.copy()
            qt[F] += step * dx
            et = kinematics(model, qt, None, constraints)[0]
            if np.linalg.norm(et) < np.linalg.norm(e):
                q, e = qt, et
                break
            step *= 0.5
        else:
            break
    if np.linalg.norm(e) > tol:
        raise ValueError(f"close_loops: ‖e‖ = {np.linalg.norm(e):.3g}")
    return q


def loop_velocity(model, q, v, constraints=None, fixed=None):
    """v with the free joints' velocities from J q̇ = 0."""
    v = np.array(v, dtype=float)
    F = _free(model, fixed)
    J = kinematics(model, q, None, constraints)[1]
    v[F] = 0.0
    v[F] = np.linalg.lstsq(J[:, F], -J @ v, rcond=1e-12)[0]
    return v
