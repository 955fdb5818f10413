"""Identification of an unknown rigid payload on one link (a new gripper, a
held tool) from recorded motion, the robot's model being known.

    est = identify_payload(model, "flange", q, v, a, tau)
    model2 = model.with_payload("flange", est.mass, est.com, est.inertia)

Only the payload's 10 parameters are estimated, on the residual the model
does not explain:

    r = tau − rnea(model, q, qd, qdd) − friction(model, qd)  =  Y_link(q, qd, qdd) pi_L

with Y_link the regressor columns of the body the link hangs from, mapped to
parameters in the link frame (pi_body = T(R, p) pi_L, ``inertial.transform``).
Two-step weighted least squares: an unweighted fit gives each joint's noise
σ_j (RMS residual), then rows are weighted by 1/σ_j.  Covariance of pi_L:
(Σ_j Y_jᵀ Y_j / σ_j²)⁻¹ (white-noise assumption; filtered, correlated samples
make it optimistic); those of the mass, COM and inertia at the COM follow to
first order.  If the weighted least-squares estimate is not physically
consistent (pseudo-inertia not ⪰ 0, e.g. a small payload's inertia lost in
noise), the same cost is minimised over consistent payloads (Cholesky
parametrisation, scipy.optimize.least_squares) and ``projected`` is True.

Use the robot's *identified* model: any error of the model lands in r.
"""
from dataclasses import dataclass

import numpy as np

from ..calls.checked import not_model
from ..calls.control_loop import friction as friction_torque
from ..calls.public import rnea
from ..model import inertial as ine
from .regression import (
    CHUNK,
    DEFAULT_COULOMB_MIN_VELOCITY,
    DEFAULT_VELOCITY_EPS,
    ExcitationError,
    NormalEquations,
    condition_number,
    coulomb_mask,
    data_residual,
    dof_names,
    joint_sigma,
    regressor_rows,
    samples,
    sigma_floor,
    single_threaded_blas,
)


@dataclass
class PayloadEstimate:
    """The payload on ``link``, in the link frame: ``mass`` (kg), ``com`` (3,) (m),
    ``inertia`` (3, 3) about the COM (kg m²); ``parameters`` its 10-vector
    about the link origin and ``covariance`` (10, 10) of it; ``*_std`` one
    standard deviation; RMS residual per DOF before (model alone) and after."""
    link: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    parameters: np.ndarray
    covariance: np.ndarray
    mass_std: float
    com_std: np.ndarray
    inertia_std: np.ndarray            # (6,) ixx ixy ixz iyy iyz izz
    dof_names: list
    rms_before: np.ndarray
    rms_after: np.ndarray
    joint_noise: np.ndarray
    condition_number: float
    projected: bool
    n_samples: int

    @property
    def inertia6(self):
        """ixx ixy ixz iyy iyz izz (the URDF / ``with_payload`` order)."""
        I = self.inertia
        return np.array([I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2]])

    def summary(self):
        c, s = self.com, self.com_std
        lines = [f"payload on {self.link!r}: mass {self.mass:.4f} ± {self.mass_std:.2g} kg, com "
                 f"({c[0]:.4f}, {c[1]:.4f}, {c[2]:.4f}) ± ({s[0]:.2g}, {s[1]:.2g}, {s[2]:.2g}) m",
                 "  inertia about the com (ixx ixy ixz iyy iyz izz): "
                 + " ".join(f"{x:.4g}" for x in self.inertia6) + " kg m²"
                 + (" (projected onto physically consistent payloads)" if self.projected else ""),
                 f"  condition number {self.condition_number:.4g}, {self.n_samples} samples",
                 f"{'joint':>16} {'rms before':>11} {'rms after':>10}"]
        lines += [f"{n:>16} {b:11.4g} {a:10.4g}" for n, b, a in zip(self.dof_names, self.rms_before, self.rms_after)]
        return "\n".join(lines)


def _com_inertia(pi):
    m, c, Ic = ine.to_com(pi)
    return np.concatenate([[m], c, Ic[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]])


@single_threaded_blas
def identify_payload(model, link, q, v, a, tau, *, velocity_eps=DEFAULT_VELOCITY_EPS,
                     coulomb_min_velocity=DEFAULT_COULOMB_MIN_VELOCITY, joint_noise=None, max_condition=None):
    """PayloadEstimate of a rigid payload on URDF link ``link`` (module docstring)
    from N samples (arrays (N, nq), (N, nv) x 3: q, qd, qdd and the applied
    torques).  The model's friction (``model.damping``, ``model.friction``,
    tanh(qd / velocity_eps)) is subtracted; when it has Coulomb friction, rows
    of joints slower than ``coulomb_min_velocity`` are left out.
    ``max_condition``: ExcitationError if the weighted 10-column regressor's
    condition number (columns normalised) exceeds it.  ValueError for an
    unknown link, a link fixed to the world or bad arrays."""
    not_model(model)
    from scipy.optimize import least_squares  # heavy optional dependency (the identification extra)
    Q, V, A, T = samples(model, q, v, a, tau)
    if not isinstance(link, str) or link not in model.link_names:
        close = model.close_links(link) if isinstance(link, str) else []
        raise ValueError(f"link: {link!r} is not a link of the model" + (f"; did you mean {close}?" if close else ""))
    info = model.links[model.link_index(link)]
    if info.body < 0:
        raise ValueError(f"link: {link!r} is fixed to the world: a payload there moves no joint")
    N, nv = T.shape
    Tm = ine.transform_matrix(info.R, info.p)            # link-frame 10-vector -> body frame
    mask = coulomb_mask(model, V, bool(np.any(model.friction)), coulomb_min_velocity)
    G, b, c, n = np.zeros((nv, 10, 10)), np.zeros((nv, 10)), np.zeros(nv), mask.sum(axis=0).astype(float)
    for k in range(0, N, CHUNK):
        sl = slice(k, min(k + CHUNK, N))
        r = T[sl] - rnea(model, Q[sl], V[sl], A[sl]) - friction_torque(model, V[sl], velocity_eps)
        Y = regressor_rows(model, Q[sl], V[sl], A[sl], velocity_eps)[:, :, 10 * info.body:10 * info.body + 10] @ Tm
        w = mask[sl].astype(float)
        for j in range(nv):
            Yj, rj = Y[:, j, :] * w[:, j:j + 1], r[:, j] * w[:, j]
            G[j] += Yj.T @ Yj
            b[j] += Yj.T @ rj
            c[j] += rj @ rj
    if np.any(n < 1):
        bad = [dof_names(model)[j] for j in np.flatnonzero(n < 1)]
        raise ExcitationError(f"joints {bad} never move faster than coulomb_min_velocity = {coulomb_min_velocity}")
    feel = np.array([np.trace(G[j]) > 0 for j in range(nv)])     # joints the payload acts on

    def solve(weights):
        Gw = np.einsum("j,jkl->kl", weights, G)
        return Gw, np.linalg.lstsq(Gw, weights @ b, rcond=1e-14)[0]

    ne = NormalEquations(G, b, c, n)
    if joint_noise is None:
        _, x0 = solve(feel.astype(float))
        sigma = sigma_floor(ne.rms(x0), np.sqrt(c / np.maximum(n, 1)))
    else:
        sigma = joint_sigma(joint_noise, nv)
    w = np.where(feel, 1.0 / sigma ** 2, 0.0)
    Gw, x = solve(w)
    cond = condition_number(Gw)
    if max_condition is not None and not cond <= max_condition:
        raise ExcitationError(f"too little excitation for the payload on {link!r}: condition number {cond:.4g} > "
                              f"{max_condition:g}; move the joints between the robot base and {link!r} more")
    projected = False
    if not (x[0] > 0 and ine.consistency_margin(x) >= 0):
        projected = True
        M, z = data_residual(Gw, w @ b, 1.0)
        th0 = ine.parameters_to_cholesky(x if x[0] > 0 else np.array([1e-3, 0, 0, 0, 1e-6, 0, 1e-6, 0, 0, 1e-6]))

        def fun(th):
            return M @ ine.cholesky_to_parameters(th) - z

        def jac(th):
            return M @ ine.cholesky_to_parameters(th, jacobian=True)[1]

        x = ine.cholesky_to_parameters(least_squares(fun, th0, jac=jac, method="lm", xtol=1e-12,
                                                         ftol=1e-8, max_nfev=2000).x)
    cov = np.linalg.pinv(Gw, rcond=1e-14)
    # first-order propagation to (m, com, inertia at the com)
    Jf = np.zeros((10, 10))
    for k in range(10):
        h = 1e-7 * max(abs(x[k]), 1e-6)
        e = np.zeros(10)
        e[k] = h
        Jf[:, k] = (_com_inertia(x + e) - _com_inertia(x - e)) / (2 * h)
    std = np.sqrt(np.maximum(np.diag(Jf @ cov @ Jf.T), 0.0))
    m, com, Ic = ine.to_com(x)
    return PayloadEstimate(link=link, mass=m, com=com, inertia=Ic, parameters=x, covariance=cov,
                           mass_std=float(std[0]), com_std=std[1:4], inertia_std=std[4:], dof_names=dof_names(model),
                           rms_before=np.sqrt(c / np.maximum(n, 1)), rms_after=ne.rms(x),
                           joint_noise=sigma, condition_number=cond, projected=projected, n_samples=N)
