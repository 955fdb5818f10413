"""Inertial parameters of a Model's bodies as 10-vectors, their physical
consistency, and a model rebuilt with other parameters.

One row per elementary body (``model.nbodies``, model order; links merged by
fixed joints are one body, payloads included):

    pi = [m, m cx, m cy, m cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]

about the body frame's origin, in the body frame (Pinocchio's
``Inertia.toDynamicParameters`` order; Ī = I_c + m (|c|² 1 − c cᵀ)).

Physical consistency (Wensing, Kim, Slotine 2017): with Σ = ½ tr(Ī) 1 − Ī
(the second moment of the mass distribution, ∫ x xᵀ dm) the pseudo-inertia

    J = [[Σ, h], [hᵀ, m]] = ∫ [x; 1] [x; 1]ᵀ dm

is positive semi-definite exactly when some real mass distribution has these
parameters (m ≥ 0, I_c ⪰ 0 and the triangle inequalities follow).  It moves
between frames as J_B = T J_A Tᵀ with T = [[R, p], [0, 1]].

Cholesky parametrisation (after the log-Cholesky one of Rucker & Wensing
2022): θ = (α, d1, d2, d3, s12, s23, s13, t1, t2, t3) ↦ J = U Uᵀ with

    U = e^α [[d1, s12, s13, t1], [0, d2, s23, t2], [0, 0, d3, t3], [0, 0, 0, 1]]

maps R^10 onto the pseudo-inertias with m = e^{2α} > 0 (c = t; the second
moment about the COM is e^{2α} D Dᵀ, D the upper-left 3x3 block), so an
unconstrained optimiser over θ only ever sees physically consistent bodies.
Rucker & Wensing write d_i = e^{δ_i} (positive definite J only); the linear
d_i here reach the boundary too (thin or flat bodies, where the optimum of
an identification often lies) at finite θ, so the optimiser converges there
instead of creeping toward it.
"""
import dataclasses

import numpy as np

from ..algorithms.spatial import inertia_about_origin

N_PARAMS = 10
PARAM_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
_IBAR_INDEX = np.array([[4, 5, 7], [5, 6, 8], [7, 8, 9]])      # Ī[r, c] = pi[_IBAR_INDEX[r, c]]
PSD_RTOL = 1e-10        # smallest eigenvalue of J allowed: -PSD_RTOL * max |J|


# ------------------------------------------------------------------ conversions

def inertia_matrix(pi):
    """Ī (..., 3, 3) of 10-vectors pi (..., 10)."""
    return np.asarray(pi, dtype=float)[..., _IBAR_INDEX]


def pseudo_inertia(pi):
    """J (..., 4, 4) = [[Σ, h], [hᵀ, m]] of 10-vectors pi (..., 10); linear in pi."""
    pi = np.asarray(pi, dtype=float)
    Ibar = inertia_matrix(pi)
    tr = np.trace(Ibar, axis1=-2, axis2=-1)
    J = np.zeros(pi.shape[:-1] + (4, 4))
    J[..., :3, :3] = 0.5 * tr[..., None, None] * np.eye(3) - Ibar
    J[..., :3, 3] = J[..., 3, :3] = pi[..., 1:4]
    J[..., 3, 3] = pi[..., 0]
    return J


def from_pseudo_inertia(J):
    """10-vectors (..., 10) of pseudo-inertias J (..., 4, 4) (inverse of ``pseudo_inertia``):
    Ī = tr(Σ) 1 − Σ."""
    J = np.asarray(J, dtype=float)
    Sig = 0.5 * (J[..., :3, :3] + np.swapaxes(J[..., :3, :3], -1, -2))
    Ibar = np.trace(Sig, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - Sig
    pi = np.zeros(J.shape[:-2] + (N_PARAMS,))
    pi[..., 0] = J[..., 3, 3]
    pi[..., 1:4] = 0.5 * (J[..., :3, 3] + J[..., 3, :3])
    pi[..., 4:] = Ibar[..., [0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]
    return pi


def from_com(mass, com, Ic):
    """10-vector of a body with mass m, centre of mass ``com`` and rotational
    inertia ``Ic`` (3x3) about the centre of mass, all in the frame of pi."""
    m, h, Ibar = inertia_about_origin(mass, com, Ic)
    return np.array([m, *h, Ibar[0, 0], Ibar[0, 1], Ibar[1, 1], Ibar[0, 2], Ibar[1, 2], Ibar[2, 2]])


def to_com(pi):
    """(m, com (3,), Ic (3, 3)) of a 10-vector with m > 0 (inverse of ``from_com``)."""
    pi = np.asarray(pi, dtype=float)
    m = float(pi[0])
    c = pi[1:4] / m
    Ic = inertia_matrix(pi) - m * (c @ c * np.eye(3) - np.outer(c, c))
    return m, c, 0.5 * (Ic + Ic.T)


def transform(pi, R, p):
    """The 10-vector of a body given by ``pi`` in frame A, expressed in frame B
    where A sits at rotation R (A axes -> B axes) and origin p (B coordinates):
    J_B = T J_A Tᵀ, T = [[R, p], [0, 1]].  Linear in pi."""
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return from_pseudo_inertia(T @ pseudo_inertia(pi) @ T.T)


def transform_matrix(R, p):
    """M (10, 10) with transform(pi, R, p) = M pi."""
    return np.array([transform(e, R, p) for e in np.eye(N_PARAMS)]).T


# ------------------------------------------------------------------ consistency

def consistency_margin(pi):
    """Smallest eigenvalue of J divided by max |J| (one number per 10-vector;
    >= 0 means physically consistent; 0 for an all-zero row)."""
    J = pseudo_inertia(pi)
    scale = np.max(np.abs(J), axis=(-2, -1))
    ev = np.linalg.eigvalsh(J)[..., 0]
    return np.where(scale > 0, ev / np.where(scale > 0, scale, 1.0), 0.0)


def check_parameters(pi, names, what="pi"):
    """(nb, 10) float array of ``pi``; ValueError naming the body unless every row
    is finite, and either all zero (a massless body) or has m > 0 and a
    pseudo-inertia J ⪰ 0 (smallest eigenvalue >= -1e-10 max |J|)."""
    try:
        P = np.array(pi, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected ({len(names)}, 10) numbers, got {type(pi).__name__}") from None
    if P.shape != (len(names), N_PARAMS):
        raise ValueError(f"{what}: expected shape ({len(names)}, 10) (one row per body: "
                         f"{', '.join(PARAM_NAMES)}), got {P.shape}")
    for i, row in enumerate(P):
        where = f"{what}[{i}] (body {names[i]!r})"
        if not np.all(np.isfinite(row)):
            raise ValueError(f"{where}: expected finite numbers, got {row.tolist()}")
        if not np.any(row):
            continue
        if not row[0] > 0:
            raise ValueError(f"{where}: mass {row[0]:g} kg: expected > 0 (or the whole row 0 for a massless body)")
        margin = consistency_margin(row)
        if margin < -PSD_RTOL:
            ev = np.linalg.eigvalsh(pseudo_inertia(row))
            raise ValueError(f"{where}: not physically consistent: the pseudo-inertia [[Σ, h], [hᵀ, m]] has "
                             f"eigenvalues {', '.join(f'{e:.4g}' for e in ev)} (must be >= 0: no mass "
                             f"distribution has these parameters; e.g. the inertia at the COM breaks the "
                             "triangle inequality or the COM is outside the body's extent)")
    return P


# ------------------------------------------------------------------ Cholesky parametrisation

def cholesky_to_parameters(theta, jacobian=False):
    """pi (10,) of θ (10,) (module docstring); with ``jacobian`` also dpi/dθ (10, 10)."""
    a, d1, d2, d3, s12, s23, s13, t1, t2, t3 = theta
    e = np.exp(np.clip(a, -300.0, 300.0))          # m = e^(2 a) stays finite and > 0
    U = e * np.array([[d1, s12, s13, t1], [0.0, d2, s23, t2], [0.0, 0.0, d3, t3], [0.0, 0.0, 0.0, 1.0]])
    pi = from_pseudo_inertia(U @ U.T)
    if not jacobian:
        return pi
    dU = np.zeros((N_PARAMS, 4, 4))
    dU[0] = U
    for k, (r, c) in enumerate(((0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3))):
        dU[1 + k, r, c] = e
    dJ = dU @ U.T + U @ np.swapaxes(dU, 1, 2)
    return pi, from_pseudo_inertia(dJ).T


def parameters_to_cholesky(pi, floor=1e-9):
    """θ (10,) of a 10-vector with m > 0.  A pseudo-inertia that is not positive
    semi-definite is first moved to the nearest one with eigenvalues >= ``floor``
    × its largest (symmetric eigenvalue clipping), so any URDF body has a θ."""
    J = pseudo_inertia(pi)
    w, V = np.linalg.eigh(J)
    low = floor * max(w[-1], 1e-300)
    if w[0] < low:
        J = (V * np.maximum(w, low)) @ V.T
    P = np.eye(4)[::-1]
    L = np.linalg.cholesky(P @ J @ P)             # J = U Uᵀ with U = P L P upper triangular
    U = P @ L @ P
    e = U[3, 3]
    return np.array([np.log(e), U[0, 0] / e, U[1, 1] / e, U[2, 2] / e,
                     U[0, 1] / e, U[1, 2] / e, U[0, 2] / e, U[0, 3] / e, U[1, 3] / e, U[2, 3] / e])


# ------------------------------------------------------------------ the model's bodies

def inertial_parameters(model):
    """(nbodies, 10) the model's body parameters (payloads included), model order."""
    t = model.tree
    out = np.zeros((model.nbodies, N_PARAMS))
    out[:, 0] = t.mass
    out[:, 1:4] = t.mass_com
    out[:, 4:] = t.inertia[:, [0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]
    return out


def body_link_names(model):
    """The URDF link that names each body: its joint's child link (the link whose
    frame is the body frame, ``model.tree.link``); the two auxiliary bodies of a
    planar joint, which no link sits on, are named after the joint's child link
    with a suffix (``'<link> (planar x)'``, ``(planar y)``)."""
    t = model.tree
    names = list(t.link)
    for i in range(model.nbodies):                  # planar: P(x) -> P(y) -> R(theta), the last carries the link
        if not names[i]:
            axis, k = ("y", i + 1) if i + 1 < model.nbodies and t.link[i + 1] else ("x", i + 2)
            names[i] = f"{t.link[k] if k < model.nbodies else '?'} (planar {axis})"
    return tuple(names)


def with_inertial_parameters(model, pi):
    """A new Model whose bodies have exactly the parameters ``pi`` (nbodies, 10).

    Checked first (``check_parameters``: finite, m > 0 or an all-zero row,
    pseudo-inertia ⪰ 0), else ValueError naming the body by its URDF link.
    Payloads: the result has **none**; theirs are part of ``pi`` (as
    ``inertial_parameters`` reports them), so pass ``inertial_parameters(model)``
    to keep a model's dynamics exactly.  ``model.mass`` becomes the mass of the
    links fixed to the world plus ``sum(pi[:, 0])``.  Everything else (joints,
    armature, friction, limits, gravity) is kept."""
    P = check_parameters(pi, body_link_names(model))
    return _rebuilt(model, P)


def _rebuilt(model, P, damping=None, friction=None):
    """``model`` with body parameters P (nb, 10) in its tree (no payloads), and
    optionally other damping / friction vectors."""
    tree = model.base_tree.replace(mass=P[:, 0], mass_com=P[:, 1:4], inertia=inertia_matrix(P))
    world_fixed = model.mass - float(np.sum(inertial_parameters(model)[:, 0]))
    changes = {"base_mass": world_fixed + float(np.sum(P[:, 0]))}
    if damping is not None:
        changes["damping"] = np.array(damping, dtype=float)
    if friction is not None:
        changes["friction"] = np.array(friction, dtype=float)
    return dataclasses.replace(model, **changes)._derive(tree, {})
