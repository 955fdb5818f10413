"""The momentum observer in a closed loop with MuJoCo, no ROS.

MuJoCo (RK4, 1 kHz) steps the bundled arm under torques computed by
rbd_ros.core each step; a 10 N push acts on the flange link for 1 s through
MuJoCo's ``xfrc_applied`` (a force at the flange origin, converted to the
wrench at the body's centre of mass MuJoCo expects); the observer is fed q, q̇
and the applied joint torques as a robot driver reports them (the state after
a step with the torque applied during that step: ``tau_held=True``, the
torque held over the step ending at the sample).  The reference external
joint torque is Jᵀf with J from MuJoCo's own ``mj_jacBody`` (not rbd_ros).

Three controllers:

* ``hold``: gravity compensation plus a joint impedance around the start pose,
  τ = g(q) + H(q0) (ω² (q0 − q) − 2ζω q̇) (ω = 20 rad/s, ζ = 1): the arm yields
  ~0.1 rad (mostly the light wrist) and stays there, so Jᵀf is nearly constant and τ̂_ext must match it
  within 5 % after 5/K;
* ``free``: gravity compensation only, τ = g(q): the push swings the arm
  through ~3 rad in 0.5 s, Jᵀf changes at ~10 N·m/s and the first-order lag
  of gain K trails it by ~(1/K)·d(Jᵀf)/dt (10 % and more); τ̂_ext must match
  the exact first-order lag of Jᵀf within 5 %, and Jᵀf itself within 5 % at
  5/K after the onset, while the arm has barely moved;
* ``track``: computed torque along a fast sinusoid (no push): no false collision.
"""
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="MuJoCo closed loop: pip install '.[sim]'")

import os  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.core.estimation.observer import OK, MomentumObserver  # noqa: E402
from rbd_ros.sim.mujoco_model import JointMap, load_urdf, wrench_at_com  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM_URDF = os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf")
Q0 = np.array([0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0])
K = 50.0
RATE = 1000.0
T_ON, DURATION = 0.5, 1.0
FORCE = np.array([10.0, 0.0, 0.0])        # N, world axes, at the flange origin
THRESHOLD = 0.5                            # N m on every joint: the collision threshold
TRACK_A = np.array([0.5, 0.4, 0.5, 0.4, 0.6, 0.5, 0.8])      # rad, the "track" run's sinusoid ...
TRACK_W = 2 * np.pi * 1.0                                    # ... at 1 Hz (up to 5 rad/s)


def push_run(mode, gain=K, seconds=2.0, t_on=T_ON, duration=DURATION, force=FORCE, link="flange",
             rate=RATE, omega=20.0, zeta=1.0, tau_held=True):
    """One closed-loop run.  Returns a dict of arrays over the samples k = 0..n (state after
    k steps, t = k / rate): ``t``, ``q``, ``v``, ``tau`` (the joint torques applied during
    the step that ended at the sample; 0 at k = 0), ``jtf`` (Jᵀf of the push during that
    step, J = mj_jacBody of ``link`` at the step's start), ``est`` (the observer's
    τ̂_ext after the sample; fed from k = 1, the first reported state) and ``status``;
    plus ``gain``, ``t_on``, ``t_off``, ``h``."""
    mjm, model = load_urdf(ARM_URDF, timestep=1.0 / rate, integrator="rk4")
    assert mjm.opt.timestep == 1.0 / rate
    jm = JointMap(mjm, model)
    d = mujoco.MjData(mjm)
    d.qpos[jm.model_qpos] = Q0
    mujoco.mj_forward(mjm, d)
    body = mjm.body(link).id
    jacp, jacr = np.zeros((3, mjm.nv)), np.zeros((3, mjm.nv))
    H0 = rbd.crba(model, Q0)
    Kp, Kd = omega ** 2 * H0, 2 * zeta * omega * H0
    obs = MomentumObserver(model, gain, tau_held=tau_held)
    h = 1.0 / rate
    n = int(round(seconds * rate))
    k_on, k_off = int(round(t_on * rate)), int(round((t_on + duration) * rate))
    out = {key: np.zeros((n + 1, model.nv)) for key in ("q", "v", "tau", "jtf", "est")}
    status = []
    torque = np.zeros(3)
    for k in range(n + 1):
        q, v = d.qpos[jm.model_qpos].copy(), d.qvel[jm.model_dof].copy()
        out["q"][k], out["v"][k] = q, v
        if k > 0:       # a driver reports a state with the torque of the step that produced it
            out["est"][k] = obs.update(k * h, q, v, out["tau"][k])
        status.append(obs.status)
        if k == n:
            break
        if mode == "track":     # computed torque along a fast sinusoid from Q0, at rest at t = 0
            s_, c_ = np.sin(TRACK_W * k * h), np.cos(TRACK_W * k * h)
            qd, vd, ad = Q0 + TRACK_A * (1 - c_), TRACK_A * TRACK_W * s_, TRACK_A * TRACK_W ** 2 * c_
            tau = rbd.rnea(model, q, v, ad + 144.0 * (qd - q) + 24.0 * (vd - v))
        else:
            tau = rbd.gravity(model, q)
        if mode == "hold":
            tau = tau + Kp @ (Q0 - q) - Kd @ v
        d.qfrc_applied[jm.model_dof] = tau
        d.xfrc_applied[:] = 0.0
        if k_on <= k < k_off:
            d.xfrc_applied[body] = wrench_at_com(d, body, force, torque)
            mujoco.mj_jacBody(mjm, d, jacp, jacr, body)      # at the body's origin: the flange's
            out["jtf"][k + 1] = (jacp.T @ force + jacr.T @ torque)[jm.model_dof]
        out["tau"][k + 1] = tau
        mujoco.mj_step(mjm, d)
    out.update(t=np.arange(n + 1) * h, status=status, gain=gain, t_on=k_on * h, t_off=k_off * h, h=h)
    return out


def lagged(run):
    """The exact first-order lag of gain K of run["jtf"] (constant over each step)."""
    e = np.exp(-run["gain"] * run["h"])
    u = run["jtf"]
    y = np.zeros_like(u)
    for k in range(1, len(u)):
        y[k] = u[k] + e * (y[k - 1] - u[k])
    return y


def _norm(x):
    return np.max(np.abs(x), axis=-1)


@pytest.fixture(scope="module")
def hold():
    return push_run("hold")


@pytest.fixture(scope="module")
def free():
    return push_run("free")


def test_mujoco_push_matches_jacobian_transpose_force(hold):
    r = hold
    t, est, jtf = r["t"], r["est"], r["jtf"]
    assert r["status"][1] != OK and set(r["status"][2:]) == {OK}
    push = (t >= r["t_on"] + 5 / K) & (t <= r["t_off"])
    rel = _norm(est[push] - jtf[push]) / _norm(jtf[push])
    moved = float(np.max(np.abs(r["q"] - Q0)))
    print(f"hold: 10 N push: max |est - J^T f| / |J^T f| after 5/K = {rel.max():.2e} "
          f"(|J^T f| {_norm(jtf[push]).min():.2f}..{_norm(jtf[push]).max():.2f} N m, arm moved {moved:.4f} rad); "
          f"|est - lag(J^T f)| {np.max(_norm(est - lagged(r))):.2e} N m")
    assert _norm(jtf[push]).min() > 1.0                # the push is felt in the joints
    assert rel.max() <= 0.05
    # closer: the estimate is the exact first-order lag of J^T f (the torques held over each
    # step are integrated exactly, tau_held)
    assert np.max(_norm(est - lagged(r))) <= 1e-3 * np.max(_norm(jtf))
    # before the push: nothing; after it: back to nothing
    before = t <= r["t_on"]
    after = t >= r["t_off"] + 5 / K
    print(f"hold: max |est| before the push {np.max(_norm(est[before])):.2e}, "
          f"5/K after it {np.max(_norm(est[after])):.2e} N m")
    assert np.max(_norm(est[before])) <= 0.01 * THRESHOLD
    assert np.max(_norm(est[after])) <= 0.05 * np.max(_norm(jtf))


def _crossings(r, threshold=THRESHOLD):
    over = _norm(r["est"]) > threshold
    rises = np.flatnonzero(over[1:] & ~over[:-1]) + 1
    falls = np.flatnonzero(~over[1:] & over[:-1]) + 1
    return over, rises, falls


@pytest.mark.parametrize("mode", ["hold", "free"])
def test_collision_threshold_crossed_within_20_ms(mode, hold, free):
    r = {"hold": hold, "free": free}[mode]
    t = r["t"]
    over, rises, falls = _crossings(r)
    assert len(rises) >= 1, "never crossed"
    onset_delay = t[rises[0]] - r["t_on"]
    print(f"{mode}: threshold {THRESHOLD} N m crossed {onset_delay * 1e3:.1f} ms after the onset; "
          f"falls at {[round(float(t[k] - r['t_off']) * 1e3, 1) for k in falls]} ms after the end")
    assert not over[t <= r["t_on"]].any()             # no false collision before (sentinel: it rises later)
    assert 0 < onset_delay <= 0.020
    if mode == "hold":      # one collision: rises once, falls once after the push, stays down
        assert len(rises) == 1 and len(falls) == 1
        assert 0 < t[falls[0]] - r["t_off"] <= 0.050
        assert not over[falls[0]:].any()


def test_free_arm_estimate_is_the_lag_of_the_changing_jacobian_transpose_force(free):
    r = free
    t, est, jtf = r["t"], r["est"], r["jtf"]
    ref = lagged(r)
    scale = np.max(_norm(jtf))
    err_lag = np.max(_norm(est - ref)) / scale
    moved = float(np.max(np.abs(r["q"] - Q0)))
    k5 = int(np.searchsorted(t, r["t_on"] + 5 / K))
    rel5 = _norm(est[k5] - jtf[k5]) / _norm(jtf[k5])
    push = (t >= r["t_on"] + 5 / K) & (t <= r["t_off"])
    worst = np.max(_norm(est[push] - jtf[push]) / np.maximum(_norm(jtf[push]), 1e-9))
    print(f"free: arm moved {moved:.2f} rad; |est - lag(J^T f)| {err_lag:.2e} of max |J^T f| "
          f"({scale:.2f} N m); at 5/K after the onset |est - J^T f| {rel5:.2e}; "
          f"worst during the push {worst:.2f} (the lag of a moving J^T f)")
    assert moved > 1.0                    # the arm does swing ...
    assert err_lag <= 0.01                # ... and the observer is the first-order lag of J^T f
    assert rel5 <= 0.05


def test_no_false_collision_while_tracking_fast():
    """Computed-torque tracking at up to 5 rad/s, no contact: τ̂_ext stays far below the
    threshold (torques held over each step: tau_held; what is left is the trapezoid rule's
    h² error on the state terms against MuJoCo's RK4), and the default trapezoid rule
    on the torques shows the h/2·dτ/dt lag, still below it."""
    r = push_run("track", force=np.zeros(3))
    speed = float(np.max(np.abs(r["v"])))
    held = np.max(_norm(r["est"][1:]))
    trap = np.max(_norm(push_run("track", force=np.zeros(3), tau_held=False)["est"][1:]))
    print(f"track: max |v| {speed:.2f} rad/s, max |tau| {np.max(_norm(r['tau'])):.1f} N m; max |est| "
          f"{held:.2e} N m (tau_held), {trap:.2e} N m (trapezoid)")
    assert speed > 3.0
    assert held <= 0.01 * THRESHOLD
    assert 10 * held < trap < THRESHOLD
