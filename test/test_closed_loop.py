"""Closed loop end to end: the dynamics node (subprocess) commanding the MuJoCo robot
driver (subprocess, real physics at 1 kHz) through ``~/effort_command``, wired and
measured by ``rbd_ros.demo.closed_loop.ClosedLoop`` from a real rclpy node here.

* gravity mode holds the arm at rest;
* computed-torque mode tracks a smooth trajectory sent as desired states at 500 Hz;
* a stale desired state gives the damped gravity hold g(q) - K_hold qd (checked
  against rbd_ros.core at the very joint states it was computed from), and a fresh
  one resumes computed torque (the arm moves to the new target).

Bounds are measured values with a wide margin: the three processes share two cores
with the other test runs, and a 20-50 ms stall of any of them shows up as error."""
import time

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="closed loop: pip install '.[sim]'")

from ros_harness import ARM_URDF, unique_ns  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.demo import closed_loop as demo  # noqa: E402
from rbd_ros.demo import run as demo_run  # noqa: E402

MODEL = rbd.Model.from_urdf(ARM_URDF)
HOLD_DAMPING = 1.0
TRAJ_S = 3.0
# measured on the 2-core project machine under load 4-9 (other helpers' tests running):
# hold drift over 2 s ~1e-10 mrad; tracking RMS 1.6-8.7 mrad, max 7-46 mrad, median |e|
# 1-2.5 mrad; runs with driver stalls (resyncs) 26-280 mrad RMS (those are repeated)
HOLD_DRIFT_MAX = 5e-3      # rad over 2 s
TRACK_RMS_MAX = 0.05       # rad (staying at q0 would give the excursion, ~0.23 rad RMS)
TRACK_MEDIAN_MAX = 0.02    # rad, median |error| over joints and samples (robust to stalls)


@pytest.fixture(scope="module")
def loop():
    params = dict(demo.NODE_PARAMS, hold_damping=[HOLD_DAMPING])
    # physics at 1 kHz, joint states (and so commands) at 500 Hz, desired states at 250 Hz:
    # half the demo's message load, for CI machines shared with other jobs
    cl = demo.ClosedLoop(unique_ns("cl"), params, record_commands=True, desired_rate=250.0,
                         sim_params=dict(demo.SIM_PARAMS, publish_rate=500.0))
    try:
        failed = cl.start(100)
        assert failed is None, failed
        yield cl
    finally:
        rc = cl.close()
        logs = getattr(cl, "_final_logs", {})
        if rc != (0, 0):
            print("exit codes", rc, "\n--- node log tail:\n" + logs.get("node", "")[-3000:])
        assert rc == (0, 0), (rc, {k: v[-2000:] for k, v in logs.items()})
        for what, text in logs.items():
            assert "Traceback" not in text, (what, text)


def test_gravity_mode_holds_the_arm(loop):
    drift, t0, t1 = demo_run.measure_hold(loop, 2.0)
    t, Q, _, E = loop.window(t0, t1)
    print(f"gravity hold: drift {drift * 1e3:.3g} mrad over 2 s ({len(t)} states)")
    assert len(t) > 100                        # the recording covers the hold
    assert np.all(np.any(E != 0.0, axis=1))    # under command all the time
    # the effort applied is g(q) (one step of delay: compare with the state itself, loosely)
    g = rbd.gravity(MODEL, Q)
    assert np.max(np.abs(E - g)) < 0.05 * np.max(np.abs(g))
    assert drift < HOLD_DRIFT_MAX, drift


def test_computed_torque_tracks_a_trajectory(loop):
    for attempt in range(3):
        if attempt:
            assert demo.settle(loop), "the arm did not come back to rest at q0"
        before = loop.sim_counters()
        rms, emax, t0, t1 = demo_run.measure_tracking(loop, duration=TRAJ_S)
        after = loop.sim_counters()
        stalls = {k: after[k] - before[k] for k in after if after[k] != before[k]}
        t, Q, _, _ = loop.window(t0, t1)
        Qd = demo.reference_batch(t - t0, duration=TRAJ_S)[0]
        median = float(np.median(np.abs(Q - Qd)))
        print(f"\nattempt {attempt + 1}: RMS {rms * 1e3:.2f} mrad, driver stalls {stalls}")
        # a stall of the driver's own real-time loop (> 50 ms without a step: a resync)
        # or of the commands (stale) is the machine, not the node: such a run may be
        # repeated (twice at most)
        if (rms < TRACK_RMS_MAX and median < TRACK_MEDIAN_MAX) or not stalls:
            break
    excursion = float(np.sqrt(np.mean((Qd - np.asarray(demo.Q0)) ** 2)))
    print(f"\ncomputed torque: RMS {rms * 1e3:.2f} mrad, max {emax * 1e3:.1f} mrad, "
          f"median |e| {median * 1e3:.2f} mrad "
          f"(trajectory RMS excursion {excursion * 1e3:.0f} mrad, {len(t)} states)")
    assert len(t) > 100
    assert excursion > 0.1                      # the arm really had to move
    assert rms < TRACK_RMS_MAX, (rms, emax, stalls)
    assert median < TRACK_MEDIAN_MAX, (median, stalls)
    # the arm comes back to q0 (the trajectory ends there)
    assert loop._wait(lambda: np.max(np.abs(_latest(loop, 20) - np.asarray(demo.Q0))) < 0.01,
                      5, None), _latest(loop, 1) - np.asarray(demo.Q0)


def _latest(loop, n):
    """Positions of the n latest recorded joint states (whatever their stamps: the
    recorder can lag behind under load)."""
    with loop.lock:
        return np.array([s[1] for s in loop.states[-n:]])


def _status(loop, key):
    st = loop.node_status or {}
    return st.get(key)


def test_stale_desired_state_damped_hold_and_recovery(loop):
    q0 = np.asarray(demo.Q0)
    res = loop.set_params(command_mode="computed_torque")
    assert all(ok for ok, _ in res), res
    loop.desired_fn = lambda t: demo.reference(0.0)
    assert loop._wait(lambda: _status(loop, "command_fallback") == "false", 10, None)
    n_fallbacks = int(_status(loop, "command_fallbacks"))
    # stop the desired states: stale after max_desired_age -> damped gravity hold
    loop.desired_fn = None
    t_stop = loop.now()
    assert loop._wait(lambda: _status(loop, "command_fallback") == "true", 10, None), \
        loop.node_status
    # commands sent as the hold (the status can report the stale desired state before the
    # next joint state has made a hold command: wait for one)
    assert loop._wait(lambda: int(_status(loop, "command_fallbacks")) > n_fallbacks, 5, None), loop.node_status
    assert "damped gravity hold" in loop.log("node")
    time.sleep(0.5)
    t_mid = loop.now()
    assert loop.wait_recorded(t_mid)
    # the command in fallback, at the joint states it was computed from (same stamp)
    age = float(demo.NODE_PARAMS["max_desired_age"])
    with loop.lock:
        states = {s[0]: s for s in loop.states if t_stop + age + 0.1 < s[0] < t_mid}
        cmds = [c for c in loop.commands if c[0] in states]
    assert len(cmds) > 20, len(cmds)
    Q = np.array([states[c[0]][1] for c in cmds])
    V = np.array([states[c[0]][2] for c in cmds])
    tau = np.array([c[1] for c in cmds])
    expect = rbd.gravity(MODEL, Q) - HOLD_DAMPING * V
    assert np.max(np.abs(tau - expect)) <= 1e-9 * max(1.0, np.max(np.abs(expect)))
    # ... and it holds the arm (it was at rest)
    t, Q, _, _ = loop.window(t_stop, t_mid)
    assert np.max(np.abs(Q - q0)) < 0.02
    # fresh desired states again: computed torque resumes and takes the arm to a new target
    target = q0 + np.array([0.1, -0.1, 0.1, 0.1, 0.1, -0.1, 0.1])
    loop.desired_fn = lambda t: (target, np.zeros(7), np.zeros(7))
    assert loop._wait(lambda: _status(loop, "command_fallback") == "false", 10, None)
    assert "command resumed" in loop.log("node")

    assert loop._wait(lambda: np.max(np.abs(_latest(loop, 20) - target)) < 0.01, 10, None), \
        _latest(loop, 1) - target
    loop.desired_fn = lambda t: demo.reference(0.0)
