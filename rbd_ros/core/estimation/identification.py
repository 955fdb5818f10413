"""Identification of a robot's inertial parameters (and joint friction and
armature) from recorded motion: q, qd, qdd, tau per sample.

    model2, report = identify(model, q, v, a, tau)
    print(report.summary())

Model (``regression.py``): tau = Y(q, qd, qdd) pi with pi the bodies'
10-vectors (``inertial.py``) and per DOF the armature, viscous and Coulomb
coefficient (tanh(qd / velocity_eps), the law of ``rbd_ros.core.friction``).

Cost, minimised over physically consistent parameters only:

    (1/n) Σ_rows ((Y pi − tau)_j / σ_j)²  +  prior_weight · Σ_k ((pi_k − pi_k^URDF) / s_k)²

* σ_j: the noise of joint j (``joint_noise``; default: the RMS residual of a
  first, unconstrained least-squares fit of the base parameters on joint j,
  weighted by 1/RMS(tau_j)², i.e. two-step weighted least squares, Gautier 1997);
* n: the number of rows used (joint j's rows where |qd_j| < ``coulomb_min_velocity``
  are left out when Coulomb friction is modelled: there the real friction is
  stiction, not the tanh law; every row of a still DOF is left out, below);
* the prior pulls every identified entry toward the model's own value with the
  scale s_k of that body: m0 for the mass, m0 ℓ for m c, m0 ℓ² for the inertia
  (m0 the body's URDF mass, ℓ = max(√(tr Σ0 / m0), 2 cm) the RMS distance of its
  mass from the body origin), RMS(tau_j)/RMS(qdd_j), RMS(tau_j)/RMS(qd_j) and
  RMS(tau_j) for armature, viscous and Coulomb friction.  ``prior_weight``
  (default 1e-3): a 100 % change of one parameter costs as much as 0.1 % more
  mean squared normalised residual.  The data decide every identifiable
  combination (base parameter); the prior decides how the unidentifiable rest
  is split (e.g. link1's Ixx, Iyy do not matter for a joint with a fixed
  vertical axis: they stay at the URDF's values).

Physical consistency: first the unconstrained optimum (linear least
squares); if every body in it is physically consistent (and friction,
armature >= 0), that is the answer.  Otherwise the bodies are parametrised
by the Cholesky factor of their pseudo-inertia (``inertial.py``, after
Rucker & Wensing 2022) and the friction and armature by their logarithms,
and scipy.optimize.least_squares (Levenberg-Marquardt, MINPACK) minimises
the same cost from the unconstrained optimum with each inconsistent body
moved to the nearest consistent one.  Chosen over an LMI (cvxpy): every
iterate is a real body, so the result passes ``with_inertial_parameters``
without a projection step, and scipy is the only solver dependency.  The
cost is convex in pi and J = U Uᵀ is a full-rank factorisation, so the local
minima found are global; where the optimum lies on the boundary (a flat or
thin body, common for parameters the data barely see) the convergence is
slow: the solver stops when the cost changes by < 1e-6 relative or after
``max_evaluations`` (the report's ``solver`` line says which).
The data enter through their per-joint normal equations
(p x p each), so the optimiser's cost does not grow with the number of samples.

Still DOFs.  Real recordings have joints that do not move (gripper fingers,
a locked wrist, a rail): a DOF whose speed reaches ``coulomb_min_velocity`` in
fewer than ``min_moving_fraction`` of the samples is *still*.  The data say
nothing about its friction and armature (their regressor columns are ~0), its
measured torque is stiction or a brake's, not the model's, and the body it
moves (its joint's child body) is rigid on its parent throughout, so only
their sum is seen.  By default (``strict=False``) such a DOF's rows are left
out, its friction and armature keep the model's values, so do the inertial
parameters of every body that only still DOFs move (its parent body absorbs
what the data see of the pair), and the base parameters and the condition
number are those of data with those DOFs held at their median recorded
position (``regression.base_parameters(still=...)``); the report lists them
and why (``IdentificationReport.not_identified``).  ``strict=True`` raises
ExcitationError instead.
"""
from dataclasses import dataclass, field

import numpy as np

from ..calls.checked import not_model
from ..model import inertial as ine
from .regression import (
    DEFAULT_COULOMB_MIN_VELOCITY,
    DEFAULT_VELOCITY_EPS,
    ExcitationError,
    NormalEquations,
    base_parameters,
    condition_number,
    coulomb_mask,
    data_residual,
    dof_names,
    joint_sigma,
    normal_equations,
    parameter_names,
    samples,
    sigma_floor,
    single_threaded_blas,
)

DEFAULT_PRIOR_WEIGHT = 1e-3
DEFAULT_MIN_MOVING_FRACTION = 0.02   # a DOF faster than coulomb_min_velocity in fewer of the samples is still
LENGTH_FLOOR = 0.02                  # m: smallest body length scale ℓ of the prior


def _rms(x):
    return np.sqrt(np.mean(np.square(x), axis=0))


# ------------------------------------------------------------------ report

@dataclass
class IdentificationReport:
    """What ``identify`` did.  Arrays per DOF follow ``dof_names``, per body ``body_names``."""
    dof_names: list
    body_names: list
    identified_bodies: list            # indices of the bodies whose 10 parameters were fitted
    n_samples: int
    rows_used: np.ndarray              # per DOF: rows used (see coulomb_min_velocity; 0 for a still DOF)
    rms_before: np.ndarray             # per DOF: RMS torque error of the given model on the used rows (0: none)
    rms_after: np.ndarray              # per DOF: the same for the identified model
    condition_number: float            # of the weighted base regressor, columns normalised
    n_base: int                        # number of identifiable combinations (base parameters)
    joint_noise: np.ndarray            # σ_j used as weights (0 for a still DOF: not fitted)
    prior_weight: float
    velocity_eps: float
    params_before: np.ndarray          # (nb, 10)
    params_after: np.ndarray           # (nb, 10)
    armature: tuple                    # (before, after) per DOF
    damping: tuple
    friction: tuple
    solver: str = ""
    base_description: list = field(default_factory=list)
    moving_fraction: np.ndarray | None = None  # per DOF: fraction of the samples with |qd| >= coulomb_min_velocity
    still_dofs: list = field(default_factory=list)    # names of the still DOFs (module docstring)
    kept_bodies: list = field(default_factory=list)   # indices of the bodies only still DOFs move
    min_moving_fraction: float = DEFAULT_MIN_MOVING_FRACTION
    coulomb_min_velocity: float = DEFAULT_COULOMB_MIN_VELOCITY

    def not_identified(self):
        """One line per still DOF and per kept body: what kept the model's
        values, and why (empty when every DOF moved)."""
        lines = []
        moving = self.moving_fraction if self.moving_fraction is not None else np.zeros(len(self.dof_names))
        for name in self.still_dofs:
            k = self.dof_names.index(name)
            share, least = 100 * moving[k], 100 * self.min_moving_fraction
            lines.append(f"joint {name}: still (faster than coulomb_min_velocity = {self.coulomb_min_velocity:g} "
                         f"in {share:.3g} % of the samples, < {least:g} %): its friction and armature keep the "
                         "model's values, its torques are not fitted")
        for i in self.kept_bodies:
            lines.append(f"body {self.body_names[i]}: moved only by still joints, so rigid on its parent in the "
                         "data; its inertial parameters keep the model's values")
        return lines

    def body_changes(self):
        """Per identified body: link, mass before/after (kg), COM before/after
        (m, body frame), COM shift (m), relative change of the inertia at the COM
        (Frobenius norm)."""
        out = []
        for i in self.identified_bodies:
            b, a = self.params_before[i], self.params_after[i]
            row = {"body": self.body_names[i], "mass_before": b[0], "mass_after": a[0]}
            if b[0] > 0 and a[0] > 0:
                _, cb, Ib = ine.to_com(b)
                _, ca, Ia = ine.to_com(a)
                row.update(com_before=cb, com_after=ca, com_shift=float(np.linalg.norm(ca - cb)),
                           inertia_change=float(np.linalg.norm(Ia - Ib) / max(np.linalg.norm(Ib), 1e-300)))
            out.append(row)
        return out

    def summary(self):
        """A plain-text table of the above."""
        lines = [f"samples: {self.n_samples}   base parameters: {self.n_base}   "
                 f"condition number: {self.condition_number:.4g}   prior weight: {self.prior_weight:g}",
                 f"{'joint':>16} {'rms before':>11} {'rms after':>10} {'sigma':>9} {'armature':>9} "
                 f"{'damping':>9} {'friction':>9}"]
        for k, n in enumerate(self.dof_names):
            if n in self.still_dofs:
                fitted = f"{'still':>11} {'-':>10} {'-':>9}"
            else:
                fitted = f"{self.rms_before[k]:11.4g} {self.rms_after[k]:10.4g} {self.joint_noise[k]:9.3g}"
            lines.append(f"{n:>16} {fitted} {self.armature[1][k]:9.4g} {self.damping[1][k]:9.4g} "
                         f"{self.friction[1][k]:9.4g}")
        lines.append(f"{'body':>16} {'mass before':>11} {'after':>10} {'com shift mm':>12} {'dI/I':>7}")
        for c in self.body_changes():
            shift = f"{1e3 * c['com_shift']:12.2f}" if "com_shift" in c else f"{'-':>12}"
            dI = f"{c['inertia_change']:7.2f}" if "inertia_change" in c else f"{'-':>7}"
            lines.append(f"{c['body']:>16} {c['mass_before']:11.4g} {c['mass_after']:10.4g} {shift} {dI}")
        if self.solver:
            lines.append(f"solver: {self.solver}")
        kept = self.not_identified()
        if kept:
            lines.append("not identified (kept the model's values):")
            lines += [f"  {x}" for x in kept]
        return "\n".join(lines)


# ------------------------------------------------------------------ shared pieces

def _body_indices(model, bodies, names):
    if bodies is None:
        return [i for i, m in enumerate(ine.inertial_parameters(model)[:, 0]) if m > 0]
    out = []
    for b in bodies:
        if isinstance(b, (int, np.integer)) and 0 <= b < model.nbodies:
            out.append(int(b))
        elif isinstance(b, str) and b in names:
            out.append(names.index(b))
        else:
            raise ValueError(f"bodies: {b!r} is neither a body index < {model.nbodies} nor a body link {list(names)}")
    return sorted(set(out))


def _extra_dofs(model):
    """DOFs that can take armature and friction: those of one-axis joints."""
    return [iv for t, iv in zip(model.joint_types, model.idx_v) if t not in ("floating", "planar")]


def still_dofs(V, min_velocity, min_fraction):
    """((nv,) bool, (nv,) float): the DOFs whose speed reaches ``min_velocity`` in
    fewer than ``min_fraction`` of the samples, and every DOF's fraction."""
    moving = np.mean(np.abs(V) >= min_velocity, axis=0)
    return moving < min_fraction, moving


def bodies_moved_only_by(model, still):
    """Indices of the bodies whose joint's DOFs (a mimic joint: its master's) are
    all in ``still`` (nv,) bool: rigid on their parent body in such data."""
    t = model.tree
    out = []
    for i in range(model.nbodies):
        n = 6 if t.joint_type[i] == "free" else 1
        if np.all(still[t.v_index[i]:t.v_index[i] + n]):
            out.append(i)
    return out


def _noise(ne_terms, weights):
    """σ_j from the residual of an unconstrained weighted fit of the base parameters."""
    G, b, c, n = ne_terms
    Gw, bw = np.einsum("j,jkl->kl", weights, G), weights @ b
    ridge = 1e-12 * np.trace(Gw) / max(len(Gw), 1)
    x = np.linalg.solve(Gw + ridge * np.eye(len(Gw)), bw)
    return NormalEquations(G, b, c, n).rms(x)


def least_excited(Gw, names, k=3):
    """Names of the k base parameters most involved in the weakest direction."""
    d = np.sqrt(np.diag(Gw))
    d = np.where(d > 0, d, 1.0)
    _, V = np.linalg.eigh(Gw / np.outer(d, d))
    return [names[i] for i in np.argsort(-np.abs(V[:, 0]))[:k]]


# ------------------------------------------------------------------ identify

@single_threaded_blas
def identify(model, q, v, a, tau, *, friction=True, armature=True, prior_weight=DEFAULT_PRIOR_WEIGHT,
             joint_noise=None, velocity_eps=DEFAULT_VELOCITY_EPS, coulomb_min_velocity=DEFAULT_COULOMB_MIN_VELOCITY,
             bodies=None, max_condition=None, max_evaluations=400, progress=None, strict=False,
             min_moving_fraction=DEFAULT_MIN_MOVING_FRACTION):
    """(identified model, IdentificationReport) from N samples (arrays (N, nq),
    (N, nv), (N, nv), (N, nv); q, qd, qdd as the model orders them, tau the
    joint torques the actuators applied; filter and differentiate first, see
    ``rbd_ros.tools.recording``).

    ``friction``: fit viscous and Coulomb coefficients per DOF (else the
    model's own are used as known); ``armature``: fit the rotor inertia per DOF
    (else the model's); ``bodies``: the bodies to fit (link names or indices;
    default every body with mass > 0; the others keep their parameters);
    ``joint_noise``: σ per DOF (N·m or N), default estimated (module
    docstring); ``max_condition``: raise ExcitationError when the weighted base
    regressor's condition number exceeds it; ``max_evaluations``: of the
    constrained solver (needed only when the unconstrained optimum is not
    physically consistent); ``progress(done, total)``: called while the
    regressor is evaluated.  ``min_moving_fraction``, ``strict``: DOFs that
    hardly move keep the model's values and are listed in the report
    (``strict=True``: ExcitationError instead; module docstring).

    The identified model has the fitted parameters for its bodies (and
    ``damping``, ``friction``, ``armature``), no payloads (``model``'s payloads
    are part of its body parameters and are re-identified with them).  Every
    body is physically consistent.  Raises ValueError naming a bad argument."""
    not_model(model)
    from scipy.optimize import least_squares  # heavy optional dependency (the identification extra)
    Q, V, A, T = samples(model, q, v, a, tau)
    N, nv, nb = T.shape[0], model.nv, model.nbodies
    names = ine.body_link_names(model)
    fit = _body_indices(model, bodies, names)
    if not (isinstance(min_moving_fraction, (int, float, np.number)) and 0 <= min_moving_fraction <= 1):
        raise ValueError(f"min_moving_fraction: expected a fraction in [0, 1], got {min_moving_fraction!r}")
    still, moving = still_dofs(V, coulomb_min_velocity, min_moving_fraction)
    dofs = dof_names(model)
    if np.all(still):
        raise ExcitationError(f"too little excitation: no joint moves faster than coulomb_min_velocity = "
                              f"{coulomb_min_velocity} in {100 * min_moving_fraction:g} % of the samples or more")
    if strict and np.any(still):
        bad = [dofs[j] for j in np.flatnonzero(still)]
        raise ExcitationError(f"too little excitation: joints {bad} do not move (faster than coulomb_min_velocity = "
                              f"{coulomb_min_velocity} in {', '.join(f'{100 * x:.3g} %' for x in moving[still])} of "
                              f"the samples, < {100 * min_moving_fraction:g} %); without strict, their friction, "
                              "armature and the bodies only they move keep the model's values")
    kept = [i for i in bodies_moved_only_by(model, still) if i in fit]
    fit = [i for i in fit if i not in kept]
    P0 = ine.inertial_parameters(model)
    pi0 = np.concatenate([P0.ravel(), model.armature, model.damping, model.friction])
    p = pi0.size
    ext = np.array([j for j in _extra_dofs(model) if not still[j]], dtype=int)
    chosen = [10 * i + k for i in fit for k in range(10)]
    if armature:
        chosen += list(10 * nb + ext)
    if friction:
        chosen += list(10 * nb + nv + ext) + list(10 * nb + 2 * nv + ext)
    free = np.array(chosen, dtype=int)
    if prior_weight is None or not np.isfinite(prior_weight) or prior_weight < 0:
        raise ValueError(f"prior_weight: expected a finite number >= 0, got {prior_weight}")

    mask = coulomb_mask(model, V, friction or bool(np.any(model.friction)), coulomb_min_velocity)
    mask[:, still] = False
    ne = normal_equations(model, Q, V, A, T, velocity_eps, mask,
                          None if progress is None else (lambda k: progress(k, N)))
    if np.any((ne.n < 1) & ~still):
        bad = [dofs[j] for j in np.flatnonzero((ne.n < 1) & ~still)]
        raise ExcitationError(f"too little excitation: joints {bad} never move faster than coulomb_min_velocity = "
                              f"{coulomb_min_velocity} "
                              "(no row left to fit them)")
    q_still = np.median(Q, axis=0) if np.any(still) else None
    base = base_parameters(model, free=free, velocity_eps=velocity_eps, still=still, q_still=q_still)
    ind = base.independent

    # fixed part pi_c (free entries zero) moved to the right-hand side; base coordinates x = B pi
    pi_c = pi0.copy()
    pi_c[free] = 0.0
    Gb = ne.G[:, ind][:, :, ind]
    bb = ne.b[:, ind] - np.einsum("jkl,l->jk", ne.G[:, ind, :], pi_c)
    cc = ne.c - 2 * ne.b @ pi_c + np.einsum("k,jkl,l->j", pi_c, ne.G, pi_c)
    rms_tau = np.sqrt(cc / np.maximum(ne.n, 1))
    if joint_noise is None:
        w0 = 1.0 / np.where(rms_tau > 0, rms_tau, 1.0) ** 2
        sigma = sigma_floor(_noise((Gb, bb, cc, ne.n), w0), rms_tau)
    else:
        sigma = joint_sigma(joint_noise, nv)
    w = np.where(still, 0.0, 1.0 / sigma ** 2)      # a still DOF has no rows (and so no weight)
    sigma = np.where(still, 0.0, sigma)
    Gw, bw, n_rows = np.einsum("j,jkl->kl", w, Gb), w @ bb, float(np.sum(ne.n))
    cond = condition_number(Gw)
    pnames = parameter_names(model, names)
    bnames = base.describe(pnames)
    if max_condition is not None and not cond <= max_condition:
        raise ExcitationError(
            f"too little excitation: the condition number of the base regressor is {cond:.4g} > {max_condition:g}; "
            f"the least excited combinations: {least_excited(Gw, bnames)}. Record a motion that moves every joint "
            "through its range at varying speeds (rbd_ros.core.estimation.excitation.excitation_trajectory)")
    M, z = data_residual(Gw, bw, n_rows)
    MB = M @ base.matrix

    # prior scales
    scale = np.ones(p)
    m_ref = float(np.median(P0[fit, 0][P0[fit, 0] > 0])) if np.any(P0[fit, 0] > 0) else 1.0
    for i in fit:
        m0 = P0[i, 0] if P0[i, 0] > 0 else m_ref
        ell = max(np.sqrt(max(np.trace(ine.pseudo_inertia(P0[i])[:3, :3]), 0.0) / m0), LENGTH_FLOOR)
        scale[10 * i:10 * i + 10] = [m0] + [m0 * ell] * 3 + [m0 * ell ** 2] * 6
    rt, rv, ra = _rms(T), _rms(V), _rms(A)
    for k, (num, den) in enumerate(((rt, ra), (rt, rv), (rt, np.ones(nv)))):
        s = np.where((num > 0) & (den > 0), num / np.where(den > 0, den, 1.0), 1.0)
        scale[10 * nb + k * nv:10 * nb + (k + 1) * nv] = s
    sq = np.sqrt(prior_weight) / scale[free]

    # variables: θ per fitted body, then the log of each free extra (friction, armature >= 0)
    # the unconstrained optimum (a linear least-squares problem); if every body in it is physically
    # consistent and every friction and armature >= 0, it is the answer; otherwise it is the start,
    # each inconsistent body moved to the nearest consistent one (pseudo-inertia eigenvalues clipped)
    A_ls = np.vstack([MB[:, free], np.diag(sq)])
    rhs = np.concatenate([z - MB @ pi_c, sq * pi0[free]])
    start = pi_c.copy()
    start[free] = np.linalg.lstsq(A_ls, rhs, rcond=None)[0]
    theta0, consistent = [], True
    for i in fit:
        row = start[10 * i:10 * i + 10]
        ok = row[0] > 0 and ine.consistency_margin(row) > 1e-9
        consistent &= bool(ok)
        if not row[0] > 0:
            row = P0[i] if P0[i, 0] > 0 else ine.from_com(1e-3 * m_ref, np.zeros(3), 1e-6 * m_ref * np.eye(3))
        theta0.append(ine.parameters_to_cholesky(row, floor=1e-6))
    n_th = 10 * len(fit)
    extras = free[len(fit) * 10:]
    consistent &= bool(np.all(start[extras] >= 0))
    x0 = np.concatenate(theta0 + [np.log(np.maximum(start[extras], 1e-6 * scale[extras]))])

    def params(x, jac=False):
        pi = pi_c.copy()
        D = np.zeros((p, x.size if jac else 0))
        for k, i in enumerate(fit):
            if jac:
                pi[10 * i:10 * i + 10], D[10 * i:10 * i + 10, 10 * k:10 * k + 10] = \
                    ine.cholesky_to_parameters(x[10 * k:10 * k + 10], jacobian=True)
            else:
                pi[10 * i:10 * i + 10] = ine.cholesky_to_parameters(x[10 * k:10 * k + 10])
        pi[extras] = np.exp(np.minimum(x[n_th:], 700.0))
        if jac:
            D[extras, n_th + np.arange(extras.size)] = pi[extras]
        return pi, D

    def fun(x):
        pi, _ = params(x)
        return np.concatenate([MB @ pi - z, sq * (pi[free] - pi0[free])])

    def jac(x):
        _, D = params(x, jac=True)
        return np.vstack([MB @ D, sq[:, None] * D[free]])

    if consistent:
        pi_hat, message = start, "closed form: the unconstrained optimum is physically consistent"
    else:   # Levenberg-Marquardt (MINPACK): unconstrained in (θ, log extras), small dense problem
        sol = least_squares(fun, x0, jac=jac, method="lm", max_nfev=max_evaluations, ftol=1e-6, xtol=1e-10,
                            gtol=1e-10)
        pi_hat, _ = params(sol.x)
        message = f"Cholesky-parametrised least squares: {sol.message} ({sol.nfev} evaluations)"
    P_hat = pi_hat[:10 * nb].reshape(nb, 10)
    arm, damp, fric = (pi_hat[10 * nb + k * nv:10 * nb + (k + 1) * nv] for k in range(3))
    out = ine._rebuilt(model, P_hat, damping=damp if friction else None, friction=fric if friction else None)
    if armature:
        out = out.with_armature(arm)
    report = IdentificationReport(
        dof_names=dof_names(model), body_names=list(names), identified_bodies=fit, n_samples=N,
        rows_used=ne.n, rms_before=ne.rms(pi0), rms_after=ne.rms(pi_hat), condition_number=cond,
        n_base=base.rank, joint_noise=sigma, prior_weight=float(prior_weight), velocity_eps=float(velocity_eps),
        params_before=P0, params_after=P_hat, armature=(model.armature.copy(), out.armature.copy()),
        damping=(model.damping.copy(), out.damping.copy()), friction=(model.friction.copy(), out.friction.copy()),
        solver=message, base_description=bnames, moving_fraction=moving,
        still_dofs=[dofs[j] for j in np.flatnonzero(still)], kept_bodies=kept,
        min_moving_fraction=float(min_moving_fraction), coulomb_min_velocity=float(coulomb_min_velocity))
    return out, report
