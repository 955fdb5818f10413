"""Excitation trajectories for identification (Swevers, Ganseman, Tükel,
De Schutter, Van Brussel 1997): per joint a finite Fourier series

    F_j(t) = Σ_{l=1..L} a_jl / (l ω) sin(l ω t) − b_jl / (l ω) cos(l ω t),   ω = 2π / period

(periodic, so the data can be averaged over periods and the spectrum is
known), placed in the middle of the joint's range and faded in and out with a
smooth window w(t) (quintic, ``ramp`` seconds at each end: the trajectory
starts and ends at rest at q_c):

    q_j(t) = q_c,j + s_j w(t) F_j(t)

s_j is the largest scale that keeps q within the position limits (less
``position_margin`` of the half-range at each end), |qd| within the velocity
limit and |qdd| within ``acceleration_limit``.  Every candidate is scaled
this way, so the optimiser (scipy L-BFGS-B over the coefficients a, b) only
sees feasible trajectories; it minimises log cond of the stacked base
regressor (columns normalised: ``regression.condition_number``) at
``n_eval`` instants of one period.
"""
from dataclasses import dataclass

import numpy as np

from ..calls.checked import not_model
from .regression import base_parameters, condition_number, n_parameters, regressor_rows, single_threaded_blas

DEFAULT_ACCELERATION_LIMIT = 5.0     # rad/s² (m/s²)
DEFAULT_VELOCITY = 1.0               # rad/s (m/s) where the URDF gives no velocity limit
DEFAULT_HALF_RANGE = np.pi           # rad (m) around 0 where the URDF gives no position limits


@dataclass
class ExcitationTrajectory:
    """Sampled trajectory (t (T,), q (T, nq), v, a (T, nv)) and what defines it."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    coefficients: np.ndarray         # (nv, 2, L): a_jl, b_jl
    center: np.ndarray               # q_c (nv,)
    scale: np.ndarray                # s_j (nv,)
    period: float
    duration: float
    ramp: float
    condition_number: float          # of the optimised trajectory (base regressor, columns normalised)
    initial_condition_number: float  # of the best random start, before optimisation

    def at(self, t):
        """(q, v, a) at the times ``t`` (any shape (T,)), exactly as sampled."""
        return _evaluate(self.coefficients, self.center, self.scale, self.period, self.duration, self.ramp,
                         np.atleast_1d(np.asarray(t, dtype=float)))


def _window(t, duration, ramp):
    """w, w', w'' of the fade-in/fade-out window (1 where no ramp)."""
    if ramp <= 0:
        one = np.ones_like(t)
        return one, 0 * one, 0 * one

    def step(x):
        x = np.clip(x, 0.0, 1.0)
        return 10 * x ** 3 - 15 * x ** 4 + 6 * x ** 5, (30 * x ** 2 - 60 * x ** 3 + 30 * x ** 4), \
            (60 * x - 180 * x ** 2 + 120 * x ** 3)

    s1, d1, dd1 = step(t / ramp)
    s2, d2, dd2 = step((duration - t) / ramp)
    d1, dd1, d2, dd2 = d1 / ramp, dd1 / ramp ** 2, -d2 / ramp, dd2 / ramp ** 2
    return s1 * s2, d1 * s2 + s1 * d2, dd1 * s2 + 2 * d1 * d2 + s1 * dd2


def _fourier(coef, period, t):
    """F, F', F'' (T, nv) of the coefficients (nv, 2, L)."""
    L = coef.shape[2]
    wl = 2 * np.pi / period * np.arange(1, L + 1)
    S, C = np.sin(np.outer(t, wl)), np.cos(np.outer(t, wl))
    a, b = coef[:, 0, :], coef[:, 1, :]
    return S @ (a / wl).T - C @ (b / wl).T, C @ a.T + S @ b.T, -S @ (a * wl).T + C @ (b * wl).T


def _shape(coef, period, duration, ramp, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unscaled (w F, (w F)', (w F)'')."""
    F, dF, ddF = _fourier(coef, period, t)
    w, dw, ddw = _window(t, duration, ramp)
    w, dw, ddw = w[:, None], dw[:, None], ddw[:, None]
    return w * F, dw * F + w * dF, ddw * F + 2 * dw * dF + w * ddF


def _evaluate(coef, center, scale, period, duration, ramp, t):
    x, dx, ddx = _shape(coef, period, duration, ramp, t)
    return center + scale * x, scale * dx, scale * ddx


def _limits(model, acceleration_limit, position_margin):
    lo, hi = model.position_limit[:, 0], model.position_limit[:, 1]
    finite = np.isfinite(lo) & np.isfinite(hi)
    center = np.where(finite, 0.5 * (lo + hi), 0.0)
    half = np.where(finite, 0.5 * (hi - lo), DEFAULT_HALF_RANGE) * (1.0 - position_margin)
    vmax = np.where(np.isfinite(model.velocity_limit), model.velocity_limit, DEFAULT_VELOCITY)
    amax = np.broadcast_to(np.asarray(acceleration_limit, dtype=float), (model.nv,)).copy()
    if not np.all(np.isfinite(amax) & (amax > 0)):
        raise ValueError(f"acceleration_limit: expected a number > 0 or {model.nv} of them, got {acceleration_limit!r}")
    return center, half, vmax, amax


def _feasible_scale(x: np.ndarray, dx: np.ndarray, ddx: np.ndarray, half: np.ndarray, vmax: np.ndarray,
                    amax: np.ndarray) -> np.ndarray:
    """Largest s_j with |s x| <= half, |s dx| <= vmax, |s ddx| <= amax on the grid."""
    def ratio(lim, y):
        m = np.max(np.abs(y), axis=0)
        return np.where(m > 0, lim / np.where(m > 0, m, 1.0), np.inf)
    s = np.minimum(np.minimum(ratio(half, x), ratio(vmax, dx)), ratio(amax, ddx))
    return np.where(np.isfinite(s), s, 0.0)


@single_threaded_blas
def excitation_trajectory(model, duration, *, harmonics=5, period=None, acceleration_limit=DEFAULT_ACCELERATION_LIMIT,
                          position_margin=0.1, ramp=1.0, sample_rate=1000.0, n_eval=100, maxiter=30, n_starts=8,
                          seed=0, velocity_eps=0.01):
    """An ExcitationTrajectory of ``duration`` seconds sampled at ``sample_rate``
    (module docstring).  ``period``: of the Fourier series (default: the
    duration without the two ramps, so the window covers one period);
    ``harmonics`` L; ``acceleration_limit``: one number or one per DOF
    (rad/s² or m/s²); velocity limits from the URDF (``model.velocity_limit``,
    1 rad/s where none), position limits ``model.position_limit`` (±π around 0
    where none).  ``n_starts`` random coefficient sets (seeded) are tried and
    the best is refined by at most ``maxiter`` L-BFGS-B iterations (0: no
    optimisation).  Cost: one regressor evaluation at ``n_eval`` states per
    objective call, about (2 nv L + 1) calls per iteration.  Fixed-base models
    with one-axis joints only (ValueError otherwise)."""
    not_model(model)
    from scipy.optimize import minimize  # heavy optional dependency (the identification extra)
    bad = [n for n, t in zip(model.joint_names, model.joint_types) if t in ("floating", "planar")]
    if bad:
        raise ValueError(f"excitation_trajectory: joints {bad} are floating or planar; only revolute, continuous "
                         "and prismatic joints are excited")
    duration = float(duration)
    ramp = float(ramp)
    if not (np.isfinite(duration) and duration > 2 * ramp >= 0):
        raise ValueError(f"duration: expected a number > 2 ramp = {2 * ramp} s, got {duration}")
    period = float(period) if period is not None else duration - 2 * ramp
    if not (np.isfinite(period) and period > 0):
        raise ValueError(f"period: expected a number > 0 (s), got {period}")
    if not 0 <= position_margin < 1:
        raise ValueError(f"position_margin: expected a fraction in [0, 1), got {position_margin}")
    nv, L = model.nv, int(harmonics)
    center, half, vmax, amax = _limits(model, acceleration_limit, position_margin)
    rng = np.random.default_rng(seed)
    grid = np.linspace(0.0, duration, max(200, int(40 * L * duration / period)))     # limit checks
    t_eval = ramp + (np.arange(n_eval) + 0.5) * period / n_eval
    t_eval = t_eval[t_eval < duration - ramp] if duration - 2 * ramp > 0 else t_eval
    base = base_parameters(model, velocity_eps=velocity_eps)
    p = n_parameters(model)

    def build(x):
        coef = x.reshape(nv, 2, L)
        s = _feasible_scale(*_shape(coef, period, duration, ramp, grid), half, vmax, amax)
        return coef, s

    def objective(x):
        coef, s = build(x)
        Q, V, A = _evaluate(coef, center, s, period, duration, ramp, t_eval)
        Y = regressor_rows(model, Q, V, A, velocity_eps).reshape(-1, p)[:, base.independent]
        return float(np.log(min(condition_number(Y.T @ Y), 1e300)))

    decay = 1.0 / np.arange(1, L + 1)
    starts = [(rng.normal(size=(nv, 2, L)) * decay).ravel() for _ in range(max(1, int(n_starts)))]
    costs = [objective(x) for x in starts]
    x0 = starts[int(np.argmin(costs))]
    c0 = float(np.exp(min(costs)))
    x = x0
    if maxiter > 0:
        res = minimize(objective, x0, method="L-BFGS-B", options={"maxiter": int(maxiter)})
        if res.fun < min(costs):
            x = res.x
    coef, s = build(x)
    t = np.arange(int(round(duration * sample_rate)) + 1) / sample_rate
    # the sampled grid may see a slightly larger peak than the optimiser's grid
    s = np.minimum(s, _feasible_scale(*_shape(coef, period, duration, ramp, t), half, vmax, amax))
    q, v, a = _evaluate(coef, center, s, period, duration, ramp, t)
    return ExcitationTrajectory(t=t, q=q, v=v, a=a, coefficients=coef, center=center, scale=s, period=period,
                                duration=duration, ramp=ramp, condition_number=float(np.exp(objective(x))),
                                initial_condition_number=c0)
