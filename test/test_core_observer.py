"""The generalized-momentum observer (rbd_ros.core.estimation.observer) on simulated trajectories.

Two simulators, both written here from rbd_ros.core's dynamics:

* ``simulate_rk4``: classical RK4 on the forward dynamics (``rbd.aba``) -- an
  integrator the observer knows nothing about.  The observer's trapezoid rule
  then differs from the exact momentum integral by ~h²/12 |β̈| per unit time
  (β = τ + Cᵀq̇ − g): on the fast trajectories here ~1e-5 |τ| at 1 kHz, 4× less
  at half the step (checked), so RK4 proves the lag, not the 1e-9.
* ``simulate_trapezoid``: the implicit trapezoid rule on the momentum form of
  the dynamics, q_{k+1} = q_k + h/2 (q̇_k + q̇_{k+1}),
  p_{k+1} = p_k + h/2 (f_k + f_{k+1}), f = τ + τ_ext + Cᵀq̇ − g, p = H q̇,
  solved by fixed-point iteration to rounding.  It is the discretisation the
  observer uses, so with no contact the residual is rounding only: that is the
  |τ̂_ext| <= 1e-9 |τ| property (regular and irregular steps).  That this
  integrator integrates the true dynamics (and not only the observer's own
  equations) is checked against RK4: the two trajectories agree to O(h²).
"""
import math
import os
import re
import sys
import tracemalloc

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from core_util import random_tree_urdf  # noqa: E402
from observer_sim import Tracker, simulate_trapezoid  # noqa: E402
from observer_sim import sample_times as _times  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.core.estimation import observer as obs_mod  # noqa: E402
from rbd_ros.core.estimation.observer import GAP, JUMP, NOT_FINITE, OK, STARTED, TIME, MomentumObserver  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM_URDF = os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf")
ARM_Q0 = np.array([0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0])
K = 50.0                      # observer gain, 1/s (time constant 20 ms)
H_STEP = 1e-3                 # 1 kHz


def _arm():
    return rbd.Model.from_urdf(ARM_URDF)


def _tree():
    # seed 5: revolute, planar (3 DOFs), continuous, prismatic and 2 fixed joints; nv = 6
    return rbd.Model.from_urdf(random_tree_urdf(5, n_joints=6))


MODELS = {"arm": _arm, "tree": _tree}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    return MODELS[request.param]()


# ----------------------------------------------------------------------------- trajectories

def simulate_rk4(plant, tau_fn, times, q0, v0, ext=None, friction_eps=None):
    """RK4 on rbd.aba of ``plant`` between consecutive ``times``.  ``ext(t, k)``: the
    external joint torque (k the index of the step it acts in; None: none).
    ``friction_eps``: the plant's joints have the URDF friction law (rbd.friction).
    Returns per sample: q, v, tau (the motors' torque at the sample), ext at the sample."""
    def acc(t, k, q, v):
        tau = tau_fn(t, q, v)
        e = 0.0 if ext is None else ext(t, k)
        if friction_eps is not None:
            tau = tau - rbd.friction(plant, v, friction_eps)
        return rbd.aba(plant, q, v, tau + e)

    n = len(times)
    Q, V, TAU, E = (np.zeros((n, plant.nv)) for _ in range(4))
    q, v = np.array(q0, float), np.array(v0, float)
    for k in range(n):
        t = times[k]
        Q[k], V[k], TAU[k] = q, v, tau_fn(t, q, v)
        E[k] = 0.0 if ext is None else ext(t, k)
        if k == n - 1:
            break
        h = times[k + 1] - t
        a1 = acc(t, k, q, v)
        q2, v2 = q + h / 2 * v, v + h / 2 * a1
        a2 = acc(t + h / 2, k, q2, v2)
        q3, v3 = q + h / 2 * v2, v + h / 2 * a2
        a3 = acc(t + h / 2, k, q3, v3)
        q4, v4 = q + h * v3, v + h * a3
        a4 = acc(t + h, k, q4, v4)
        q = q + h / 6 * (v + 2 * v2 + 2 * v3 + v4)
        v = v + h / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    return Q, V, TAU, E


def lag(times, u, gain, hold):
    """The continuous first-order lag y' = K (u - y), y(t0) = 0, of the sampled signal
    ``u`` (n, nv), exactly: ``hold`` True: u constant over each step (the value at its
    start); False: u linear between samples."""
    y = np.zeros_like(u)
    for k in range(1, len(times)):
        h = times[k] - times[k - 1]
        e = math.exp(-gain * h)
        if hold:
            y[k] = u[k - 1] + e * (y[k - 1] - u[k - 1])
        else:
            s = (u[k] - u[k - 1]) / h
            y[k] = u[k] - s / gain + e * (y[k - 1] - u[k - 1] + s / gain)
    return y


def run_observer(obs, times, Q, V, TAU):
    out = np.zeros_like(V)
    status = []
    for k in range(len(times)):
        out[k] = obs.update(times[k], Q[k], V[k], TAU[k])
        status.append(obs.status)
    return out, status


def _start(model):
    return ARM_Q0 if model.name == "rbd_arm7" else np.full(model.nq, 0.2)


def _trajectory(model, seed=0):
    tr = Tracker(model, _start(model), seed=seed)
    qd, vd, _ = tr.desired(0.0)
    return tr, qd, vd


def _max(x):
    return float(np.max(np.abs(x)))


# ----------------------------------------------------------------------------- the lag

@pytest.mark.parametrize("irregular", [False, True])
def test_step_contact_followed_as_first_order_lag(model, irregular):
    """A step of τ_ext at 0.1 s during a fast motion: τ̂_ext is the first-order lag of
    gain K of it (≤ 1e-3 of the step at all times) and within 1 % of τ_ext after 5/K."""
    tr, q0, v0 = _trajectory(model)
    times = _times(0.5, H_STEP, irregular)
    t_on = 0.1
    e0 = np.random.default_rng(7).uniform(-5, 5, model.nv)
    k_on = int(np.searchsorted(times, t_on))

    def ext(t, k):       # held over a step: on from the step that starts at times[k_on]
        return e0 if k >= k_on else 0.0 * e0

    Q, V, TAU, E = simulate_rk4(model, tr, times, q0, v0, ext)
    est, status = run_observer(MomentumObserver(model, K), times, Q, V, TAU)
    assert status[0] == STARTED and set(status[1:]) == {OK}
    ref = lag(times, E, K, hold=True)
    err_lag = _max(est - ref) / _max(e0)
    late = times >= times[k_on] + 5 / K
    err_late = _max(est[late] - E[late]) / _max(e0)
    before = _max(est[:k_on + 1])
    print(f"{model.name} irregular={irregular}: |est - lag| {err_lag:.2e}, after 5/K |est - ext| "
          f"{err_late:.2e} of the step, before the step {before:.2e} N m (|tau| {_max(TAU):.0f})")
    assert err_lag <= 1e-3
    assert err_late <= 0.01
    assert before <= 1e-3 * _max(e0)        # the sentinel: no step, no estimate
    # the lag: 63 % (1 - 1/e) one time constant after the step
    k_tau = int(np.searchsorted(times, times[k_on] + 1 / K))
    frac = est[k_tau] / e0
    assert np.allclose(frac, 1 - math.exp(-K * (times[k_tau] - times[k_on])), atol=2e-3), frac


def test_smooth_contact_followed_as_first_order_lag(model):
    """A smooth τ_ext(t) (sines, 1-3 Hz): τ̂_ext = its first-order lag within 1 % after 5/K."""
    tr, q0, v0 = _trajectory(model, seed=3)
    times = _times(0.6, H_STEP, False)
    rng = np.random.default_rng(11)
    amp, w, ph = rng.uniform(1, 5, model.nv), 2 * np.pi * rng.uniform(1, 3, model.nv), rng.uniform(0, 6, model.nv)

    def ext(t, k):
        return amp * np.sin(w * t + ph)

    Q, V, TAU, E = simulate_rk4(model, tr, times, q0, v0, ext)
    est, _ = run_observer(MomentumObserver(model, K), times, Q, V, TAU)
    ref = lag(times, E, K, hold=False)
    late = times >= 5 / K
    err = _max(est[late] - ref[late]) / _max(E)
    # the lag itself is not small here: the estimate is no copy of τ_ext
    assert _max(ref[late] - E[late]) / _max(E) > 0.1
    print(f"{model.name}: smooth contact, |est - lag(ext)| after 5/K: {err:.2e} of max |ext|")
    assert err <= 0.01


def test_per_joint_gains(model):
    """gain as nv numbers: joint i lags with its own K_i."""
    tr, q0, v0 = _trajectory(model)
    times = _times(0.3, H_STEP, False)
    gains = np.linspace(20.0, 120.0, model.nv)
    e0 = np.full(model.nv, 2.0)
    Q, V, TAU, E = simulate_rk4(model, tr, times, q0, v0, lambda t, k: e0 if k >= 50 else 0.0 * e0)
    est, _ = run_observer(MomentumObserver(model, gains), times, Q, V, TAU)
    for i, g in enumerate(gains):
        ref = lag(times, E[:, i:i + 1], g, hold=True)[:, 0]
        assert _max(est[:, i] - ref) <= 2e-3 * 2.0, (i, g)


# ----------------------------------------------------------------------------- no contact

@pytest.mark.parametrize("irregular", [False, True])
def test_no_contact_residual_is_rounding(model, irregular):
    """Fast trajectory, no contact, the implicit trapezoid integrator (the observer's own
    discretisation): |τ̂_ext| <= 1e-9 max |τ|."""
    tr, q0, v0 = _trajectory(model, seed=5)
    times = _times(0.5, H_STEP, irregular, seed=3)
    Q, V, TAU = simulate_trapezoid(model, tr, times, q0, v0)
    est, status = run_observer(MomentumObserver(model, K), times, Q, V, TAU)
    assert set(status[1:]) == {OK}
    ratio = _max(est) / _max(TAU)
    print(f"{model.name} irregular={irregular}: max |tau_ext_hat| = {ratio:.2e} max |tau| "
          f"({_max(TAU):.1f} N m, max |v| {_max(V):.2f})")
    assert _max(V) > 1.0            # a fast motion ...
    assert ratio <= 1e-9
    # ... and a sentinel: the same samples with 1e-6 |tau| of torque unaccounted for
    est2, _ = run_observer(MomentumObserver(model, K), times, Q, V, TAU + 1e-6 * _max(TAU))
    assert _max(est2) > 0.5e-6 * _max(TAU)


def test_no_contact_held_torques(model):
    """Torques held over each step (a digital controller; the driver reports each with the
    state it produced): tau_held=True integrates them exactly (|τ̂_ext| <= 1e-9 |τ|); the
    default trapezoid rule shows the h/2·dτ/dt lag the module doc states."""
    tr, q0, v0 = _trajectory(model, seed=5)
    times = _times(0.4, H_STEP, True, seed=4)
    Q, V, TAU = simulate_trapezoid(model, tr, times, q0, v0, held=True)
    est, status = run_observer(MomentumObserver(model, K, tau_held=True), times, Q, V, TAU)
    assert set(status[1:]) == {OK}
    ratio = _max(est) / _max(TAU)
    est_t, _ = run_observer(MomentumObserver(model, K), times, Q, V, TAU)
    lag_bound = _max(0.5 * np.diff(TAU, axis=0))        # h/2 |dτ/dt| = |τ_k − τ_{k−1}| / 2
    print(f"{model.name}: held torques: tau_held=True {ratio:.2e} max |tau|; trapezoid "
          f"{_max(est_t[times >= 5 / K]):.3g} N m (h/2 |dtau/dt| up to {lag_bound:.3g} N m)")
    assert ratio <= 1e-9
    assert 0.1 * lag_bound < _max(est_t[times >= 5 / K]) <= 1.5 * lag_bound


def test_trapezoid_integrator_integrates_the_true_dynamics(model):
    """The momentum-form integrator above agrees with RK4 on rbd.aba to O(h²): it is the
    robot's dynamics, so the 1e-9 above is no tautology of the observer's own equations."""
    tr, q0, v0 = _trajectory(model, seed=5)
    diffs = []
    for h in (2e-3, 1e-3):
        times = _times(0.2, h, False)
        Qt, _, _ = simulate_trapezoid(model, tr, times, q0, v0)
        Qr, _, _, _ = simulate_rk4(model, tr, times, q0, v0)
        diffs.append(_max(Qt - Qr))
    print(f"{model.name}: |q_trapezoid - q_rk4| at h = 2 ms, 1 ms: {diffs}")
    assert diffs[0] < 1e-3
    assert 3.0 < diffs[0] / diffs[1] < 5.0          # second order


def test_no_contact_rk4_residual_is_second_order_discretisation(model):
    """On the RK4 trajectory the no-contact residual is the trapezoid rule's error:
    small, and 4x smaller at half the step."""
    tr, q0, v0 = _trajectory(model, seed=5)
    res = []
    for h in (1e-3, 5e-4):
        times = _times(0.4, h, False)
        Q, V, TAU, _ = simulate_rk4(model, tr, times, q0, v0)
        est, _ = run_observer(MomentumObserver(model, K), times, Q, V, TAU)
        res.append(_max(est[times >= 5 / K]) / _max(TAU))
    print(f"{model.name}: RK4, no contact: max |tau_ext_hat| / max |tau| at 1 ms, 0.5 ms: {res}")
    assert res[0] < 1e-4
    assert 3.0 < res[0] / res[1] < 5.0


# ----------------------------------------------------------------------------- model errors

def test_missing_payload_and_armature_show_up(model):
    """The robot carries a payload and rotor inertia the observer's model lacks: τ̂_ext is
    the lag of rnea_nominal − rnea_true along the motion (the torque the nominal model
    cannot explain), within 0.1 % of it after 5/K; with the true model it is ~0."""
    link = "link7" if model.name == "rbd_arm7" else model.link_names[-1]
    true = model.with_payload(link, 1.5, [0.02, -0.01, 0.08], [0.004, 0, 0, 0.005, 0, 0.003])
    true = true.with_armature(np.linspace(0.05, 0.2, model.nv))
    tr, q0, v0 = _trajectory(model, seed=2)
    times = _times(0.4, H_STEP, False)
    Q, V, TAU, _ = simulate_rk4(true, tr, times, q0, v0)
    A = np.array([rbd.aba(true, q, v, tau) for q, v, tau in zip(Q, V, TAU)])
    diff = np.array([rbd.rnea(model, q, v, a) - rbd.rnea(true, q, v, a) for q, v, a in zip(Q, V, A)])
    est, _ = run_observer(MomentumObserver(model, K), times, Q, V, TAU)
    ref = lag(times, diff, K, hold=False)
    late = times >= 5 / K
    err = _max(est[late] - ref[late]) / _max(diff)
    print(f"{model.name}: missing payload+armature: max |rnea diff| {_max(diff):.2f} N m, "
          f"|est - lag(diff)| {err:.2e} of it")
    assert _max(diff) > 0.05 * _max(TAU)        # a sizeable model error ...
    assert err <= 1e-3                          # ... estimated at its size and sign
    est_true, _ = run_observer(MomentumObserver(true, K), times, Q, V, TAU)
    assert _max(est_true[late]) <= 0.01 * _max(diff)


def _with_friction(urdf_text):
    return re.sub(r"(<joint [^>]*type=\"(?:revolute|continuous|prismatic)\"[^>]*>)",
                  r'\1<dynamics damping="0.8" friction="1.5"/>', urdf_text)


def test_friction_model_opt_in():
    """Plant with joint friction (rbd.friction's law): friction=True removes it from τ̂_ext;
    friction=False shows it as −τ_f (lagged)."""
    plant = rbd.Model.from_urdf(_with_friction(open(ARM_URDF).read()))
    assert np.all(plant.damping == 0.8) and np.all(plant.friction == 1.5)
    eps = 0.5        # rad/s: the Coulomb term turns over several samples (see doc/contact.md)
    tr, q0, v0 = _trajectory(plant, seed=4)
    times = _times(0.4, H_STEP, False)
    Q, V, TAU, _ = simulate_rk4(plant, tr, times, q0, v0, friction_eps=eps)
    late = times >= 5 / K
    est_f, _ = run_observer(MomentumObserver(plant, K, friction=True, velocity_eps=eps), times, Q, V, TAU)
    est_n, _ = run_observer(MomentumObserver(plant, K), times, Q, V, TAU)
    tf = rbd.friction(plant, V, eps)
    ref = lag(times, -tf, K, hold=False)
    print(f"friction: max |tau_f| {_max(tf):.2f}; with the model {_max(est_f[late]):.2e}, "
          f"without: |est - lag(-tau_f)| {_max(est_n[late] - ref[late]):.2e}")
    assert _max(est_f[late]) <= 0.01 * _max(tf)
    assert _max(est_n[late] - ref[late]) <= 0.01 * _max(tf)


# ----------------------------------------------------------------------------- restarts

def _held_samples(model, T=0.6, e0=None):
    """At rest under gravity compensation, a constant external torque e0 from t = 0.1 s."""
    times = _times(T, H_STEP, False)
    q0 = _start(model)
    e0 = np.full(model.nv, 1.0) if e0 is None else e0

    def hold(t, q, v):
        return rbd.gravity(model, q) - 5.0 * v
    Q, V, TAU, E = simulate_rk4(model, hold, times, q0, np.zeros(model.nv),
                                lambda t, k: e0 if k >= 100 else 0.0 * e0)
    return times, Q, V, TAU, E


def _settled(est, E, times, t_from):
    late = times >= t_from + 5 / K
    return _max(est[late] - E[late]) <= 0.01 * _max(E)


def test_gap_restarts_and_estimate_recovers():
    m = _arm()
    times, Q, V, TAU, E = _held_samples(m)
    keep = (times < 0.2) | (times >= 0.3)          # 100 ms without samples
    t, Q, V, TAU, E = times[keep], Q[keep], V[keep], TAU[keep], E[keep]
    o = MomentumObserver(m, K, max_gap=0.05)
    est, status = run_observer(o, t, Q, V, TAU)
    k = int(np.searchsorted(t, 0.3))
    assert status[k] == GAP and np.all(est[k] == 0.0)
    assert status.count(GAP) == 1 and o.restarts[GAP] == 1
    assert status[k + 1] == OK
    assert _max(est[k - 1] - E[k - 1]) < 0.02        # it had converged before the gap
    assert _settled(est, E, t, 0.3)                 # and converges again after it
    # a gap below max_gap is a step like any other
    o2 = MomentumObserver(m, K, max_gap=0.2)
    est2, status2 = run_observer(o2, t, Q, V, TAU)
    assert GAP not in status2 and _max(est2[-1] - E[-1]) < 0.01


def test_jump_in_q_restarts():
    m = _arm()
    times, Q, V, TAU, E = _held_samples(m)
    Q = Q.copy()
    Q[300, 3] += 0.5                                # one glitched sample
    o = MomentumObserver(m, K, max_jump=0.25)
    est, status = run_observer(o, times, Q, V, TAU)
    assert status[300] == JUMP and status[301] == JUMP        # into the glitch and back
    assert np.all(est[300] == 0.0) and np.all(est[301] == 0.0)
    assert status.count(JUMP) == 2 and status[302] == OK
    assert _settled(est, E, times, times[301])
    # a smaller change is no jump
    Q[300, 3] -= 0.4
    _, status = run_observer(MomentumObserver(m, K, max_jump=0.25), times, Q, V, TAU)
    assert JUMP not in status


def test_time_not_increasing_restarts():
    m = _arm()
    times, Q, V, TAU, E = _held_samples(m, T=0.3)
    o = MomentumObserver(m, K)
    for k in range(200):
        o.update(times[k], Q[k], V[k], TAU[k])
    assert o.status == OK and _max(o.update(times[200], Q[200], V[200], TAU[200])) > 0.5
    r = o.update(times[200], Q[200], V[200], TAU[200])          # the same stamp again
    assert o.status == TIME and np.all(r == 0.0)
    r = o.update(times[150], Q[150], V[150], TAU[150])          # back in time
    assert o.status == TIME and np.all(r == 0.0)
    o.update(times[151], Q[151], V[151], TAU[151])              # and on from there
    assert o.status == OK and o.restarts[TIME] == 2


def test_non_finite_input_restarts_and_output_stays_finite():
    m = _arm()
    times, Q, V, TAU, E = _held_samples(m)
    o = MomentumObserver(m, K)
    bad = {150: ("q", 2), 250: ("v", 0), 300: ("tau", 6), 400: ("t", None)}
    statuses = []
    r = None
    for k in range(len(times)):
        t, q, v, tau = times[k], Q[k].copy(), V[k].copy(), TAU[k].copy()
        if k in bad:
            what, i = bad[k]
            if what == "t":
                t = float("nan")
            else:
                {"q": q, "v": v, "tau": tau}[what][i] = np.nan if k != 250 else np.inf
        r = o.update(t, q, v, tau)
        assert np.all(np.isfinite(r))
        statuses.append(o.status)
        if k in bad:
            assert o.status == NOT_FINITE and np.all(r == 0.0), (k, o.status)
            assert not o.valid
        elif k - 1 in bad:
            assert o.status == STARTED and np.all(r == 0.0)       # starts again at once
    assert statuses.count(NOT_FINITE) == 4 and o.restarts[NOT_FINITE] == 4
    assert o.status == OK and _max(r - E[-1]) < 0.01        # 0.2 s (10/K) after the last restart


def test_huge_finite_input_never_yields_non_finite():
    """Garbage (NaN, inf, 1e308, 1e200, ...) mixed into a good stream: every output is
    finite; between the bad samples the observer estimates (the sentinel: OK statuses
    with a non-zero estimate)."""
    m = _arm()
    times, Q, V, TAU, E = _held_samples(m)
    rng = np.random.default_rng(3)
    o = MomentumObserver(m, K)
    specials = [np.nan, np.inf, -np.inf, 1e308, -1e308, 1e200, -1e150]
    n_ok, n_bad, biggest = 0, 0, 0.0
    for k in range(len(times)):
        q, v, tau = Q[k].copy(), V[k].copy(), TAU[k].copy()
        if rng.random() < 0.05:
            arr = (q, v, tau)[rng.integers(3)]
            arr[rng.integers(m.nv)] = specials[rng.integers(len(specials))]
            n_bad += 1
        r = o.update(times[k], q, v, tau)
        assert np.all(np.isfinite(r)), (k, o.status, r)
        if o.status == OK:
            n_ok += 1
            biggest = max(biggest, _max(r))
    print(f"{n_bad} garbage samples, {n_ok} estimates, restarts {o.restarts}")
    assert n_bad > 10 and n_ok > 300 and biggest > 0.5


def test_reset():
    m = _arm()
    times, Q, V, TAU, E = _held_samples(m, T=0.3)
    o = MomentumObserver(m, K)
    for k in range(250):
        o.update(times[k], Q[k], V[k], TAU[k])
    assert o.valid and _max(o.update(times[250], Q[250], V[250], TAU[250])) > 0.5
    o.reset()
    r = o.update(times[251], Q[251], V[251], TAU[251])
    assert o.status == STARTED and np.all(r == 0.0)
    o.update(times[252], Q[252], V[252], TAU[252])
    assert o.status == OK


def test_output_is_a_read_only_buffer():
    m = _arm()
    times, Q, V, TAU, _ = _held_samples(m, T=0.2)
    o = MomentumObserver(m, K)
    r1 = o.update(times[0], Q[0], V[0], TAU[0])
    with pytest.raises(ValueError):
        r1[0] = 1.0
    r2 = o.update(times[1], Q[1], V[1], TAU[1])
    assert r1 is r2


@pytest.mark.parametrize("kwargs, message", [
    ({"gain": 0.0}, "gain: expected finite numbers > 0"),
    ({"gain": [1.0, 2.0]}, "gain: expected a number or 7 numbers"),
    ({"gain": float("nan")}, "gain: expected finite numbers > 0"),
    ({"gain": 50.0, "max_gap": -1.0}, "max_gap: expected a finite number > 0"),
    ({"gain": 50.0, "max_jump": "x"}, "max_jump: expected a number > 0"),
    ({"gain": 50.0, "velocity_eps": 0.0}, "velocity_eps: expected a finite number > 0"),
])
def test_bad_arguments_named(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        MomentumObserver(_arm(), **kwargs)


def test_bad_update_lengths_named():
    m = _arm()
    o = MomentumObserver(m, K)
    z = np.zeros(7)
    with pytest.raises(ValueError, match=r"^q: expected 7 numbers"):
        o.update(0.0, np.zeros(6), z, z)
    with pytest.raises(ValueError, match=r"^tau: expected 7 numbers"):
        o.update(0.0, z, z, [0.0] * 8)
    with pytest.raises(ValueError, match=r"^t: expected a number"):
        o.update("now", z, z, z)
    with pytest.raises(TypeError, match="model"):
        MomentumObserver("robot.urdf", K)
    # lists are accepted (converted)
    o.update(0.0, [0.0] * 7, [0.0] * 7, [0.0] * 7)
    assert o.status == STARTED


# ----------------------------------------------------------------------------- allocation

def _peak_over(fn, samples):
    """Traced bytes: (net change, peak above the start) over fn(*s) for the samples,
    after the same calls once as a warm-up."""
    for s in samples:
        fn(*s)
    tracemalloc.start()
    try:
        for s in samples:
            fn(*s)
        tracemalloc.reset_peak()
        c0 = tracemalloc.get_traced_memory()[0]
        for s in samples:
            fn(*s)
        c1, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return c1 - c0, peak - c0


def _stream(model, n=300):
    times, Q, V, TAU, _ = _held_samples(model, T=(n - 1) * H_STEP)
    return [(float(times[k]), Q[k], V[k], TAU[k]) for k in range(len(times))]


def test_update_allocates_nothing(monkeypatch):
    """300 updates (after a warm-up): the observer's own code allocates nothing, not even
    a temporary.  The core calls it makes are replaced by allocation-free stand-ins here,
    and the baseline is a loop that calls the compiled step (algorithms/observer.py) with
    the same arguments: a numba kernel call allocates a small block per array argument
    while it runs (numba's unboxing, freed at return), which is not the observer's
    (test_update_with_the_core_calls_retains_nothing covers the real calls).  The
    sentinel, an update that makes one (nv,) temporary, is seen."""
    m = _arm()
    samples = _stream(m)
    G, Hm, Ct = np.linspace(1, 2, 7), 2.0 * np.eye(7), np.linspace(-1, 1, 7)

    def comp(model, q, v, dofs, g, b, H):
        np.copyto(g, G)
        np.copyto(H, Hm)

    def ctv(model, q, v, out):
        np.copyto(out, Ct)

    monkeypatch.setattr(obs_mod, "compensation_into", comp)
    monkeypatch.setattr(obs_mod, "coriolis_transpose_v_into", ctv)
    o = MomentumObserver(m, K, friction=True, tau_held=True)     # every branch of the step
    shadow = MomentumObserver(m, K, friction=True, tau_held=True)
    step = obs_mod._k.observer_step_k

    def baseline(t, q, v, tau):     # the step alone, on a shadow observer's arrays
        s = shadow
        return step(s._H, s._g, s._ctv, t, q, v, tau, s.gain, s._damping, s._coulomb, s.velocity_eps,
                    s.friction, s.tau_held, s.max_gap, s.max_jump, s._st, s._q_prev, s._m, s._r, s._beta,
                    s._tau_prev, s._p, s._b, s._scratch)

    _, base = _peak_over(baseline, samples)
    net, peak = _peak_over(o.update, samples)
    assert o.status == OK
    print(f"compiled step alone: peak {base} B; update loop: net {net} B, peak {peak} B")
    assert net == 0
    assert peak - base < 64          # < any numpy array (an ndarray object alone is ~100 B)

    class Temporary(MomentumObserver):
        def update(self, t, q, v, tau):
            tmp = self._b + 0.0      # the sentinel: one temporary array alive during the update
            out = super().update(t, q, v, tau)
            del tmp
            return out

    o = Temporary(m, K, friction=True, tau_held=True)
    _, peak_s = _peak_over(o.update, samples)
    print(f"sentinel (one temporary per update): peak {peak_s} B")
    assert peak_s - base >= 100


def test_update_with_the_core_calls_retains_nothing():
    """With the real core calls: 300 updates keep no memory (net traced change 0), and the
    peak does not grow with the number of updates."""
    m = _arm()
    samples = _stream(m)
    o = MomentumObserver(m, K)
    net, peak = _peak_over(o.update, samples)
    _, peak_few = _peak_over(o.update, samples[:3])
    print(f"core calls: net {net} B, peak {peak} B over 300 updates, {peak_few} B over 3")
    assert net == 0
    assert peak <= peak_few + 64
