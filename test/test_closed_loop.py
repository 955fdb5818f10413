"""Closed loop end to end: the dynamics node (subprocess) commanding the MuJoCo robot
driver (subprocess, real physics at 1 kHz, joint states at 500 Hz), wired and measured
by ``rbd_ros.demo.closed_loop.ClosedLoop`` from a real rclpy node here.

In lock-step (``lock_step``: the driver steps once the node's command for its last
joint state has arrived, matched by stamp; times are simulated), so the numbers are
the control's, not the host scheduler's:

* gravity mode holds the arm at rest, and every state's applied effort is exactly the
  node's command for the state before it;
* computed-torque mode tracks a smooth trajectory to what the physics gives;
* a stale desired state gives the damped gravity hold g(q) - K_hold qd (checked
  against rbd_ros.core at the very joint states it was computed from), and a fresh
  one resumes computed torque (the arm moves to the new target).

One scenario runs in real time, as the demo does (the Float64MultiArray wiring, the
driver's real-time loop; the driver switched at run time): the arm comes to rest under
the node's exact commands and follows the trajectory; how well it tracks in real time
is the scheduler's as much as the node's, and measured by bench/closed_loop.py."""
import numpy as np
import pytest
from sensor_msgs.msg import JointState

pytest.importorskip("mujoco", reason="closed loop: pip install '.[sim]'")

from ros_harness import ARM_URDF, unique_ns  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.demo import closed_loop as demo  # noqa: E402
from rbd_ros.demo import run as demo_run  # noqa: E402

MODEL = rbd.Model.from_urdf(ARM_URDF)
HOLD_DAMPING = 1.0
TRAJ_S = 3.0
STATE_PERIOD = 1.0 / 500.0
# Lock-step bounds.  The floor (the same loop in one process, bench-style, command held for
# the 2 ms between joint states): RMS 0.46 mrad, max 1.3 mrad; with the desired state one
# joint state late throughout (this process lagging the loop): 1.1 / 2.8 mrad.  Measured
# here (three loops at once on the 2-core machine, load 6-9): RMS 0.46-1.1 mrad, max
# 1.3-5.2 mrad; hold drift ~1e-13 rad.
HOLD_DRIFT_MAX = 1e-6      # rad over 2 s
TRACK_RMS_MAX = 2e-3       # rad (staying at q0 would give the excursion, ~0.23 rad RMS)
TRACK_ERR_MAX = 1e-2       # rad


@pytest.fixture(scope="module")
def loop():
    params = dict(demo.NODE_PARAMS, **demo.LOCK_STEP_NODE_PARAMS, hold_damping=[HOLD_DAMPING])
    cl = demo.ClosedLoop(unique_ns("cl"), params, record_commands=True, lock_step=True,
                         sim_params=dict(demo.SIM_PARAMS, publish_rate=1.0 / STATE_PERIOD,
                                         diagnostics_period=0.1))
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
    with loop.lock:
        cmds = {c[0]: c[1] for c in loop.commands if t0 <= c[0] <= t1}
    print(f"gravity hold: drift {drift * 1e3:.3g} mrad over 2 s ({len(t)} states, {len(cmds)} commands)")
    assert len(t) > 0.5 * 2.0 / STATE_PERIOD             # the recording covers the hold
    assert drift < HOLD_DRIFT_MAX, drift
    # the node's command for each state is g(q) of that state ...
    states = dict(zip(t, Q))
    both = [s for s in cmds if s in states]
    assert len(both) > 0.5 * 2.0 / STATE_PERIOD
    g = rbd.gravity(MODEL, np.array([states[s] for s in both]))
    np.testing.assert_allclose(np.array([cmds[s] for s in both]), g, rtol=0, atol=1e-9 * np.max(np.abs(g)))
    # ... and lock-step: the effort applied to make each state is exactly the command
    # computed from the state before it (consecutive stamps)
    pairs = [(k, s) for k, s in enumerate(t[:-1]) if abs(t[k + 1] - s - STATE_PERIOD) < 1e-6 and s in cmds]
    assert len(pairs) > 0.5 * 2.0 / STATE_PERIOD
    for k, s in pairs:
        assert np.array_equal(E[k + 1], cmds[s]), (t[k + 1], E[k + 1], cmds[s])
    assert np.all(np.abs(E[:, 1]) > 10.0)                # under command (the shoulder is loaded)


def test_computed_torque_tracks_a_trajectory(loop):
    clamped = loop.clamped_steps()
    rms, emax, t0, t1 = demo_run.measure_tracking(loop, duration=TRAJ_S)
    t, Q, _, _ = loop.window(t0, t1)
    Qd = demo.reference_batch(t - t0, duration=TRAJ_S)[0]
    excursion = float(np.sqrt(np.mean((Qd - np.asarray(demo.Q0)) ** 2)))
    print(f"\ncomputed torque (lock-step): RMS {rms * 1e3:.3f} mrad, max {emax * 1e3:.2f} mrad "
          f"(trajectory RMS excursion {excursion * 1e3:.0f} mrad, {len(t)} states), driver {loop.sim_counters()}")
    assert len(t) > 0.9 * TRAJ_S / STATE_PERIOD            # in lock-step the recorder misses little
    assert excursion > 0.1                      # the arm really had to move
    assert rms < TRACK_RMS_MAX, (rms, emax)
    assert emax < TRACK_ERR_MAX, (rms, emax)
    assert loop.clamped_steps() == clamped                 # no actuator saturated
    # the arm comes back to q0 (the trajectory ends there)
    assert loop._wait(lambda: np.max(np.abs(_latest(loop, 20) - np.asarray(demo.Q0))) < 1e-3,
                      10, None), _latest(loop, 1) - np.asarray(demo.Q0)


def test_saturation_is_counted_per_joint(loop):
    """A 0.6 rad step of the shoulder's desired position asks for more than its 87 N m: the
    node clips the command to the URDF limit (clamp_effort) and the driver, at the limit,
    counts the steps per joint (ClosedLoop.clamped_steps): the shoulder's (the elbow's
    too: H couples them), not the others'."""
    q0 = np.asarray(demo.Q0)
    before = loop.clamped_steps()
    target = q0 + np.array([0.0, 0.6, 0.0, 0.0, 0.0, 0.0, 0.0])
    loop.desired_fn = lambda t: (target, np.zeros(7), np.zeros(7))
    try:
        assert loop._wait(lambda: np.max(np.abs(_latest(loop, 20) - target)) < 0.01, 60, None)
    finally:
        loop.desired_fn = lambda t: demo.reference(0.0)
        assert demo.settle(loop)
    after = loop.clamped_steps()
    grew = {j: after[j] - before[j] for j in after if after[j] != before[j]}
    print(f"\nclamped steps during the step: {grew}")
    assert grew.get("joint2", 0) > 10, grew
    assert set(grew) <= {"joint2", "joint4", "any"} and grew["any"] >= max(grew.values()), grew


def _latest(loop, n):
    """Positions of the n latest recorded joint states."""
    with loop.lock:
        return np.array([s[1] for s in loop.states[-n:]])


def _status(loop, key):
    st = loop.node_status or {}
    return st.get(key)


def test_stale_desired_state_damped_hold_and_recovery(loop):
    q0 = np.asarray(demo.Q0)
    age = float(demo.NODE_PARAMS["max_desired_age"])     # the demo's: lock-step raises it
    res = loop.set_params(command_mode="computed_torque", max_desired_age=age)
    assert all(ok for ok, _ in res), res
    loop.desired_fn = lambda t: demo.reference(0.0)
    assert loop._wait(lambda: _status(loop, "command_fallback") == "false", 60, None)
    n_fallbacks = int(_status(loop, "command_fallbacks"))
    # stop the desired states: stale after max_desired_age (the node's receive time, wall
    # clock) -> damped gravity hold
    loop.desired_fn = None
    t_stop = loop.now()
    assert loop._wait(lambda: _status(loop, "command_fallback") == "true", 60, None), \
        loop.node_status
    # commands sent as the hold (the status can report the stale desired state before the
    # next joint state has made a hold command: wait for one)
    assert loop._wait(lambda: int(_status(loop, "command_fallbacks")) > n_fallbacks, 60, None), loop.node_status
    assert "damped gravity hold" in loop.log("node")
    t_hold = loop.sync()                     # every state stamped later is answered by the hold
    assert loop.sleep(0.5)
    t_mid = loop.now()
    # the command in fallback, at the joint states it was computed from (same stamp)
    with loop.lock:
        states = {s[0]: s for s in loop.states if t_hold < s[0] < t_mid}
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
    assert loop._wait(lambda: _status(loop, "command_fallback") == "false", 60, None)
    assert "command resumed" in loop.log("node")

    assert loop._wait(lambda: np.max(np.abs(_latest(loop, 20) - target)) < 0.01, 60, None), \
        _latest(loop, 1) - target
    loop.desired_fn = lambda t: demo.reference(0.0)
    assert all(ok for ok, _ in loop.set_params(**demo.LOCK_STEP_NODE_PARAMS))


def test_real_time_loop_holds_and_tracks(loop):
    """The demo's wiring in real time (the driver switched at run time, the last test of
    this module): the driver paces itself by the wall clock and applies the latest
    ~/effort_command (Float64MultiArray).  What a busy machine cannot change is asserted:
    the arm comes to rest at q0 under the node's command, every effort the driver applies
    is exactly one the node commanded (or zero, after the driver's command_timeout), and
    the arm follows the trajectory (error under half its excursion: standing still or
    falling gives more) and comes back to rest.  How well it tracks in real time depends
    on the host's scheduler: that is bench/closed_loop.py's (bench/RESULTS.md)."""
    loop.set_lock_step(False)
    commands = loop.record("~/effort_command_state", JointState, convert=lambda m: tuple(m.effort))
    try:
        assert demo.settle(loop, timeout=60), "the arm did not come to rest at q0 in real time"
        drift, t0, t1 = demo_run.measure_hold(loop, 1.0)
        t, _, _, E = loop.window(t0, t1)
        # the commands for those states recorded (a later one has come)
        assert loop._wait(lambda: commands and commands[-1][0] > t1, 60, None)
        with loop.lock:
            sent = {c for _, c in commands}
        applied = [tuple(e) for e in E if np.any(e != 0.0)]
        print(f"\nreal time: {len(t)} states in 1 s of hold, {len(applied)} under command, "
              f"drift {drift * 1e3:.3g} mrad")
        assert applied, "no state under command"
        assert all(e in sent for e in applied), [e for e in applied if e not in sent][:3]
        excursion = rms = None
        for attempt in range(5):
            assert demo.settle(loop, timeout=60), "the arm did not come back to rest at q0"
            before = loop.sim_counters()
            rms, emax, c0, c1 = demo_run.measure_tracking(loop, duration=2.0)
            after = loop.sim_counters()
            stalls = {k: after[k] - before[k] for k in after if after[k] != before[k]}
            tt, _, _, _ = loop.window(c0, c1)
            Qd = demo.reference_batch(tt - c0, duration=2.0)[0]
            excursion = float(np.sqrt(np.mean((Qd - np.asarray(demo.Q0)) ** 2)))
            print(f"real time, attempt {attempt + 1}: tracking RMS {rms * 1e3:.2f} mrad, max "
                  f"{emax * 1e3:.1f} mrad (excursion {excursion * 1e3:.0f} mrad), driver stalls {stalls}")
            # a stall of the driver's real-time loop (a resync) or of the commands (stale) is
            # the machine's, not the node's: such a run says nothing, and is repeated
            if not stalls:
                break
        assert excursion > 0.1 and rms < 0.5 * excursion, (rms, excursion, stalls)
        assert demo.settle(loop, timeout=60), "the arm did not come back to rest at q0"
    finally:
        loop.stop_recording(commands)
        loop.set_lock_step(True)
