"""Contact in closed loop, end to end: the dynamics node's momentum observer outputs
(``~/external_torques``, ``~/external_wrench``, ``~/collision``, ``~/reset_observer``)
on the MuJoCo arm pushed through the driver's ``~/apply_wrench``.  Real DDS, real
processes (``rbd_ros.demo.closed_loop.ClosedLoop``), no mocks.

The node holds the arm at q0 by computed torque (constant desired state); the observer
runs at K = 50 1/s on the efforts the driver reports (``observer_torque_source
measured``: the actuator torque applied in the step that produced the state).  The
reference is MuJoCo's own Jacobian (``mj_jacBody`` of the flange body, at the recorded
q), not rbd_ros's: a 10 N push in world x at the flange origin acts on the joints as
Jᵀf (1.5 N m on joint2, 1.4 on joint6 at q0).

The tests run in file order on one closed loop (module fixture) in lock-step (the driver
steps once the node's command for its last joint state has arrived; times are the
joint states' stamps, simulated time), so what they measure is the observer's, not the
host scheduler's; the last one stops the driver and feeds the node its own joint_states
stream (NaN, no efforts).  Joint states at 500 Hz (physics 1 kHz)."""
import math
import re
import threading
import time

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="closed loop: pip install '.[sim]'")

from geometry_msgs.msg import InertiaStamped, WrenchStamped  # noqa: E402
from ros_harness import ARM_URDF, unique_ns  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.demo import closed_loop as demo  # noqa: E402
from rbd_ros.demo import run as demo_run  # noqa: E402
from rbd_ros.sim.mujoco_model import JointMap, load_urdf  # noqa: E402

Collision = pytest.importorskip("rbd_ros_interfaces.msg").Collision
SetPayload = pytest.importorskip("rbd_ros_interfaces.srv").SetPayload

K = 50.0                           # observer gain, 1/s
THRESHOLD = 0.5                    # N m, every joint
FORCE = np.array([10.0, 0.0, 0.0])  # N, world axes, at the flange origin
PUSH_S = 1.0
RATE = 500.0                       # joint_states (and so observer samples) per second
TRAJ_S = 2.0                       # s: the demo trajectory, played faster than the demo's 4 s
# collision thresholds of the trajectory runs (N m, every joint), above the estimate's error
# without contact over the demo trajectory in lock-step, which the maths sets (measured:
# commanded 0.004 N m, measured 0.0005 N m; in real time on a loaded machine it was the
# loop's timing: 2-9 and 0.7-1.6 N m)
TRAJ_THRESHOLD = {"commanded": 0.05, "measured": 0.05}
MODEL = rbd.Model.from_urdf(ARM_URDF)
# the lock-step driver holds each command over the two physics steps between the joint
# states it publishes and reports it as the state's effort: the held rule is exact there
# (the node's default trapezoid is off by ~h/2 |dtau/dt|: 0.7 N m on the trajectory)
NODE = dict(demo.NODE_PARAMS, **demo.LOCK_STEP_NODE_PARAMS, observer=True, observer_gain=K,
            observer_torque_source="measured", observer_torque_held=True,
            collision_thresholds=[THRESHOLD])       # contact_frame: the default (the flange)

# MuJoCo's side: the sim's own model of the arm, for the Jacobian of the flange body
MJM, _MJ_RBD = load_urdf(ARM_URDF)
MJD = mujoco.MjData(MJM)
JMAP = JointMap(MJM, _MJ_RBD)
FLANGE = MJM.body("flange").id


def mujoco_push(q, force=FORCE):
    """(Jᵀf in model DOF order, R world<-flange) at q, from MuJoCo's mj_jacBody and xmat."""
    MJD.qpos[JMAP.model_qpos] = q
    mujoco.mj_kinematics(MJM, MJD)
    mujoco.mj_comPos(MJM, MJD)
    jacp, jacr = np.zeros((3, MJM.nv)), np.zeros((3, MJM.nv))
    mujoco.mj_jacBody(MJM, MJD, jacp, jacr, FLANGE)
    return (jacp.T @ force)[JMAP.model_dof], MJD.xmat[FLANGE].reshape(3, 3).copy()


def _vec(m):
    f, t = m.wrench.force, m.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z])


def _collision(m):
    return {"detected": m.detected, "ratios": np.array(m.ratios), "worst": m.worst_joint,
            "worst_ratio": m.worst_ratio, "distal": m.distal_joint, "joints": list(m.joint_names),
            "onset": m.onset.sec + 1e-9 * m.onset.nanosec}


@pytest.fixture(scope="module")
def loop():
    cl = demo.ClosedLoop(unique_ns("contact"), NODE, lock_step=True,
                         sim_params=dict(demo.SIM_PARAMS, publish_rate=RATE, wrench_duration=PUSH_S,
                                         diagnostics_period=0.1))
    # everything the tests read, recorded from the start (a subscribed output is computed)
    cl.rec = {"applied": cl.record("sim/applied_wrench", WrenchStamped, _vec, latched=True)}
    _record(cl, RECORDED)
    try:
        failed = cl.start(100)
        assert failed is None, failed
        yield cl
    finally:
        rc = cl.close()
        logs = getattr(cl, "_final_logs", {})
        assert rc == (0, 0), (rc, {k: v[-2000:] for k, v in logs.items()})
        for what, text in logs.items():
            assert "Traceback" not in text, (what, text)


RECORDED = {
    "tau": ("~/external_torques", JointState, lambda m: (list(m.name), np.array(m.effort))),
    "wrench": ("~/external_wrench", WrenchStamped, lambda m: (m.header.frame_id, _vec(m))),
    "collision": ("~/collision", Collision, _collision),
    "g": ("~/gravity_torques_state", JointState, lambda m: None),
}


def _record(loop, keys):
    """(Re)start the recordings of these outputs (the lists in loop.rec grow from now on)."""
    for key in keys:
        old = loop.rec.get(key)
        topic, mtype, convert = RECORDED[key]
        loop.rec[key] = loop.record(topic, mtype, convert)
        if old is not None:
            with loop.lock:
                loop.rec[key][:0] = old


def _since(loop, key, t0, t1=math.inf):
    with loop.lock:
        return [x for x in loop.rec[key] if t0 <= x[0] <= t1]


def _states(loop, t0, t1=math.inf):
    with loop.lock:
        return {s[0]: s for s in loop.states if t0 <= s[0] <= t1}


def _diag(loop, key, n=2, timeout=5.0):
    """A node /diagnostics value from the ``n``-th status received from now on (the node
    publishes one every 0.2 s: the second one was made after this call)."""
    got = []

    def fresh():
        st = loop.node_status
        if st is not None and (not got or st is not got[-1]):
            got.append(st)
        return len(got) > n
    assert loop._wait(fresh, timeout, None), "no /diagnostics from the node"
    return got[-1].get(key, "")


def _restarts(text, reason):
    m = re.search(rf"{reason}: (\d+)", text or "")
    return int(m.group(1)) if m else 0


def _all_finite(loop):
    with loop.lock:
        taus = [x[1][1] for x in loop.rec["tau"]]
        wrenches = [x[1][1] for x in loop.rec["wrench"]]
        ratios = [x[1]["ratios"] for x in loop.rec["collision"]]
    return all(np.all(np.isfinite(a)) for a in taus + wrenches + ratios)


def _wait_for(loop, key, pred, timeout=60.0):
    """Until an item of rec[key] satisfies pred; returns it (or None)."""
    found = []

    def check():
        with loop.lock:
            found[:] = [x for x in loop.rec[key] if pred(x)][:1]
        return bool(found)
    loop._wait(check, timeout, None)
    return found[0] if found else None


# ----------------------------------------------------------------------------- the push

def _push(loop, end=True):
    """A 10 N push at the flange: (t_on, t_off) from the driver's ~/applied_wrench (the
    stamps of the first joint state with, and without, the push).  ``end`` False: return
    (t_on, None) once it began."""
    t_req = loop.now()
    loop.push(FORCE)
    start = _wait_for(loop, "applied", lambda x: x[0] >= t_req - 0.01 and np.any(x[1]))
    assert start is not None, "the driver never reported the push on ~/applied_wrench"
    assert np.allclose(start[1], np.r_[FORCE, 0, 0, 0])
    if not end:
        return start[0], None
    return start[0], _push_end(loop, start[0])


def _push_end(loop, t_on, timeout=PUSH_S * 20 + 10):
    """The stamp at which the push that began at t_on ended (~/applied_wrench)."""
    stop = _wait_for(loop, "applied", lambda x: x[0] > t_on and not np.any(x[1]), timeout)
    assert stop is not None, "the driver never reported the end of the push"
    return stop[0]


@pytest.fixture(scope="module")
def push(loop):
    """One 10 N push at the flange for 1 s on the held arm: (t_on, t_off)."""
    assert loop.sleep(0.5)                # the observer has run a while at rest
    t_on, t_off = _push(loop)
    assert t_off - t_on == pytest.approx(PUSH_S, abs=1e-6)     # simulated time: exact
    assert loop.wait_recorded(t_off + 0.5)                     # the estimate decays, the flag falls
    return t_on, t_off


def test_external_torques_match_mujoco_jacobian_transpose_force(loop, push):
    t_on, t_off = push
    states = _states(loop, t_on - 1.0)
    est = [(t, x[1]) for t, x in _since(loop, "tau", t_on - 1.0) if t in states]
    names = _since(loop, "tau", t_on - 1.0)[0][1][0]
    assert names == demo.JOINTS                        # joints order = the model's here
    during = [(t, e, mujoco_push(states[t][1])[0]) for t, e in est if t_on + 5 / K <= t < t_off]
    before = [e for t, e in est if t_on - 0.5 <= t < t_on]
    after = [e for t, e in est if t >= t_off + 5 / K]
    assert len(during) > 0.5 * RATE * (PUSH_S - 5 / K), len(during)   # the recorder kept up
    assert len(before) > 50 and len(after) > 50
    rel = [np.max(np.abs(e - j)) / np.max(np.abs(j)) for _, e, j in during]
    jmax = [np.max(np.abs(j)) for _, _, j in during]
    moved = max(np.max(np.abs(states[t][1] - demo.Q0)) for t, _, _ in during)
    print(f"\npush: max |tau_ext est - J^T f| / |J^T f| after 5/K = {max(rel):.4f} (median "
          f"{np.median(rel):.4f}; |J^T f| {min(jmax):.2f}..{max(jmax):.2f} N m, arm moved {moved:.3f} rad); "
          f"|est| before {max(np.max(np.abs(e)) for e in before):.3f}, 5/K after "
          f"{max(np.max(np.abs(e)) for e in after):.3f} N m")
    assert min(jmax) > 1.0                             # the push is felt in the joints
    # (lock-step, measured: 0.7 % at most, 0.05 % median; 0 before; 8 mN m 5/K after)
    assert max(rel) <= 0.02
    # nothing before the push, nothing once it has decayed
    assert max(np.max(np.abs(e)) for e in before) < 0.01
    assert max(np.max(np.abs(e)) for e in after) < 0.02 * max(jmax)
    assert _all_finite(loop)


def test_external_wrench_in_the_contact_frame(loop, push):
    t_on, t_off = push
    states = _states(loop, t_on)
    w = [(t, x) for t, x in _since(loop, "wrench", t_on + 5 / K, t_off - 0.002) if t in states]
    assert len(w) > 0.5 * RATE * (PUSH_S - 5 / K)
    assert {fid for _, (fid, _) in w} == {"flange"}    # default contact_frame: the arm's tip
    errs, terr = [], []
    for t, (_, F) in w:
        _, R = mujoco_push(states[t][1])
        f_local = R.T @ FORCE                          # the push in the flange's own axes
        errs.append(np.linalg.norm(F[:3] - f_local))
        terr.append(np.linalg.norm(F[3:]))             # no moment about the flange origin
    print(f"\nwrench: max |F_est - R^T f| = {max(errs):.3f} N (median {np.median(errs):.3f}), "
          f"max |M_est| = {max(terr):.4f} N m")
    # (lock-step, measured: 0.08 N at most, 6 mN m)
    assert max(errs) <= 0.025 * np.linalg.norm(FORCE)
    assert max(terr) <= 0.02                           # 0.2 N at the flange's ~0.1 m scale


def test_collision_rises_within_20ms_and_falls_after(loop, push):
    t_on, t_off = push
    col = _since(loop, "collision", t_on - 0.5, t_off + 0.5)
    before = [c for t, c in col if t < t_on]
    assert len(before) > 50 and not any(c["detected"] for c in before)
    rise = next((t for t, c in col if c["detected"]), None)
    assert rise is not None, "no collision detected during the push"
    fall = next((t for t, c in col if t > rise and not c["detected"]), None)
    print(f"\ncollision: rose {1e3 * (rise - t_on):.1f} ms after the push began, fell "
          f"{1e3 * (fall - t_off) if fall else float('nan'):.1f} ms after it ended")
    assert t_on <= rise <= t_on + 0.020                # (lock-step, measured: 15 ms, 31 ms)
    assert fall is not None and t_off <= fall <= t_off + 0.1
    assert all(c["detected"] for t, c in col if rise <= t < t_off)       # held through the push
    assert not any(c["detected"] for t, c in col if t >= fall)
    # the message's other fields, against the estimate of the same joint state and MuJoCo
    taus = dict(_since(loop, "tau", t_on, t_off))
    states = _states(loop, t_on, t_off)
    mid = [(t, c) for t, c in col if t_on + 0.3 <= t < t_off and t in taus and t in states]
    assert len(mid) > 50
    for t, c in mid:
        ratios = np.abs(taus[t][1]) / THRESHOLD
        assert c["joints"] == demo.JOINTS
        np.testing.assert_allclose(c["ratios"], ratios, rtol=1e-12, atol=0)
        assert c["worst"] == demo.JOINTS[int(np.argmax(ratios))]
        assert c["worst_ratio"] == pytest.approx(ratios.max(), rel=1e-12)
        assert t_on <= c["onset"] <= rise
        jtf = np.abs(mujoco_push(states[t][1])[0]) / THRESHOLD
        if np.all(np.abs(jtf - 1.0) > 0.15):          # no joint near its threshold: isolation is sharp
            assert c["distal"] == demo.JOINTS[int(np.flatnonzero(jtf > 1.0)[-1])]


def test_reset_observer_restarts_it(loop):
    """~/reset_observer during a second push: the estimate drops to zero and rises again
    with the lag of gain K (a restart, not a jump), and the diagnostics count it."""
    # lock-step runs faster than real time: a push long enough to outlast the call, ended
    # (zero wrench) once the estimate has come back
    assert all(ok for ok, _ in loop.set_sim_params(wrench_duration=60.0))
    try:
        assert loop.sleep(0.3)
        before = _restarts(_diag(loop, "observer_restarts"), "started")
        t_on, _ = _push(loop, end=False)
        assert loop.wait_recorded(t_on + 0.4)
        t_call = loop.now()
        res = loop.call(Trigger, "~/reset_observer", Trigger.Request())
        assert res.success, res.message
        after = _restarts(_diag(loop, "observer_restarts"), "started")
        level = min(np.max(np.abs(e)) for t, (_, e) in _since(loop, "tau", t_on + 0.2, t_call))
        # from zero, the lag reaches half the level in 14 ms (7 samples): some are recorded
        drop = _wait_for(loop, "tau", lambda x: x[0] >= t_call and np.max(np.abs(x[1][1])) < 0.5 * level)
        assert drop is not None, ("the estimate never dropped after the reset",
                                  [(round(t - t_call, 4), round(np.max(np.abs(e)), 3))
                                   for t, (_, e) in _since(loop, "tau", t_call)][:20])
        t_r = drop[0]
        assert loop.wait_recorded(t_r + 0.3)
    finally:
        loop.push((0.0, 0.0, 0.0))                     # ends the push
        assert all(ok for ok, _ in loop.set_sim_params(wrench_duration=PUSH_S))
    t_off = _push_end(loop, t_on)
    assert after == before + 1, (before, after)
    assert t_r + 0.2 < t_off                           # the reset came during the push
    back = [np.max(np.abs(e)) for t, (_, e) in _since(loop, "tau", t_r + 5 / K + 0.02, t_r + 0.2)]
    print(f"\nreset during the push: |est| {level:.2f} N m before, restarted {1e3 * (t_r - t_call):.0f} ms "
          f"(simulated) after the call, back to {min(back):.2f} after {1e3 * (5 / K + 0.02):.0f} ms")
    assert level > 1.0
    assert len(back) > 20 and min(back) > 0.9 * level  # ... and back up (lag 1/K = 20 ms)
    assert loop.wait_recorded(t_off + 0.3)


def _trajectory_collisions(loop, source, threshold):
    """The demo's computed-torque trajectory (no contact) with the observer on ``source``
    and every collision threshold at ``threshold``: the collision messages over it.

    Listening: a collision message per joint state, and then, at the same settings, a
    10 N push at the flange (its J^T f, ~1.5 N m, is above the threshold) raises the flag
    within 20 ms: the observer and the detector that stayed quiet on the trajectory run
    and would have seen a contact."""
    for key in ("wrench", "g"):            # (fewer outputs: a faster loop)
        loop.stop_recording(loop.rec[key])
    res = loop.set_params(observer_torque_source=source, collision_thresholds=[threshold])
    assert all(ok for ok, _ in res), res
    try:
        rms, _, t0, t1 = demo_run.measure_tracking(loop, duration=TRAJ_S)
        col = _since(loop, "collision", t0, t1)
        tau = [e for _, (_, e) in _since(loop, "tau", t0, t1)]
        worst = max((c["worst_ratio"] for _, c in col), default=0.0)
        big = max((np.max(np.abs(e)) for e in tau), default=0.0)
        print(f"\n{source}: trajectory RMS {rms * 1e3:.2f} mrad, {len(col)} collision messages, "
              f"largest |tau_ext| {big:.1e} N m (threshold {threshold:g}), driver {loop.sim_counters(wait=False)}")
        assert loop.sleep(0.2)                         # at rest at q0 again
        t_on, _ = _push(loop, end=False)
        rise = _wait_for(loop, "collision", lambda x: x[0] >= t_on and x[1]["detected"])
        loop.push((0.0, 0.0, 0.0))                     # ends the push
        t_off = _push_end(loop, t_on)
        assert loop.wait_recorded(t_off + 0.2)         # the estimate decays
    finally:
        assert all(ok for ok, _ in loop.set_params(observer_torque_source="measured",
                                                  collision_thresholds=[THRESHOLD]))
        _record(loop, ("wrench", "g"))
    assert rms < 0.01                                  # the arm did move along the trajectory
    assert len(col) > 0.9 * RATE * TRAJ_S and len(tau) > 0.9 * RATE * TRAJ_S    # listening ...
    # ... to an observer whose estimate the flag carries, and which feels a push
    assert worst == pytest.approx(big / threshold, rel=1e-12)
    assert rise is not None and rise[0] <= t_on + 0.02, "the push at the same settings was not detected"
    return col, big


def test_no_false_collision_on_a_trajectory_commanded(loop):
    col, big = _trajectory_collisions(loop, "commanded", TRAJ_THRESHOLD["commanded"])
    assert not any(c["detected"] for _, c in col), big


def test_no_false_collision_on_a_trajectory_measured(loop):
    col, big = _trajectory_collisions(loop, "measured", TRAJ_THRESHOLD["measured"])
    assert not any(c["detected"] for _, c in col), big


def test_payload_swap_restarts_the_observer(loop):
    """A 0.5 kg payload the real (simulated) arm does not carry: the observer restarts with
    the new model and then reports its weight, g_payload(q) - g(q), as external torques."""
    assert demo.settle(loop)
    mass, com = 0.5, (0.0, 0.0, 0.05)
    msg = InertiaStamped()
    msg.header.frame_id = "flange"
    msg.inertia.m = mass
    msg.inertia.com.z = com[2]
    msg.inertia.ixx = msg.inertia.iyy = msg.inertia.izz = 1e-4
    t_call = loop.now()
    res = loop.call(SetPayload, "~/set_payload", SetPayload.Request(payloads=[msg]))
    assert res.success, res.message
    t_done = loop.sync()              # states stamped later are answered with the new model
    assert loop.wait_recorded(t_done + 1.5)
    restarts = _diag(loop, "observer_restarts")
    assert _restarts(restarts, "started") == 1, restarts       # a new observer for the new model
    heavy = MODEL.with_payload("flange", mass, com, [1e-4, 0, 0, 1e-4, 0, 1e-4])
    states = _states(loop, t_call)
    est = [(t, e) for t, (_, e) in _since(loop, "tau", t_call) if t in states]
    late = [(t, e) for t, e in est if t > t_done + 0.8]       # settled after the swap
    assert len(late) > 50
    errs = [np.max(np.abs(e - (rbd.gravity(heavy, states[t][1]) - rbd.gravity(MODEL, states[t][1]))))
            for t, e in late]
    expect = np.max(np.abs(rbd.gravity(heavy, demo.Q0) - rbd.gravity(MODEL, demo.Q0)))
    print(f"\npayload swap: observer restarts {restarts!r}; estimate vs g_payload - g: max error "
          f"{max(errs):.4f} N m (of {expect:.2f} N m)")
    assert max(errs) <= 0.01 * expect                  # (lock-step, measured: 0.4 mN m of 2.85 N m)
    assert _all_finite(loop)
    # back to the bare arm
    msg.inertia.m = 0.0
    assert loop.call(SetPayload, "~/set_payload", SetPayload.Request(payloads=[msg])).success


class _Stream:
    """joint_states from this process (the driver stopped): q0 at rest at 200 Hz, stamped
    with the ROS clock; ``effort`` None (no efforts) or a vector; ``poison``: one message
    with a NaN in ``position`` or ``effort``."""

    def __init__(self, loop):
        self.loop = loop
        # reliable: matches the node's subscription either way (lock-step: reliable)
        self.pub = loop.node.create_publisher(JointState, f"/{loop.ns}/joint_states", 10)
        self.q = np.asarray(demo.Q0, dtype=float)
        self.effort = rbd.gravity(MODEL, self.q)
        self.poison = None
        self.lock = threading.Lock()
        self.sent = {}               # stamp -> what was sent ("ok", "nan position", ...)
        self._stop = threading.Event()
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def _run(self):
        msg = JointState(name=list(demo.JOINTS))
        while not self._stop.is_set():
            now = self.loop.node.get_clock().now()
            msg.header.stamp = now.to_msg()
            q, eff, kind = self.q.copy(), self.effort, "ok" if self.effort is not None else "no effort"
            with self.lock:                  # (taken whole: set by another thread)
                poison, self.poison = self.poison, None
            if poison == "position":
                q[3], kind = math.nan, "nan position"
            elif poison == "effort" and eff is not None:
                eff, kind = eff.copy(), "nan effort"
                eff[5] = math.nan
            msg.position, msg.velocity = q.tolist(), [0.0] * 7
            msg.effort = eff.tolist() if eff is not None else []
            self.sent[now.nanoseconds * 1e-9] = kind
            self.pub.publish(msg)
            time.sleep(0.005)

    def stop(self):
        self._stop.set()
        self.th.join(2)


def test_nan_and_missing_efforts(loop):
    """Driver stopped; the node fed by this process: a NaN position and a NaN effort each
    restart the observer (not_finite; no output for them), and a stream without efforts
    gives no estimate at all (diagnostic observer_waiting), while g still flows."""
    assert loop._stop_proc(loop.sim_proc, 10.0) == 0
    # from here on this process's stream, stamped with the ROS clock: the lock-step stamps
    # before (simulated time, which can run ahead of the clock) are left out
    for key in ("tau", "wrench", "collision", "g"):
        loop.stop_recording(loop.rec[key])
        loop.rec[key] = loop.record(*RECORDED[key])
    s = _Stream(loop)

    def now():
        return loop.node.get_clock().now().nanoseconds * 1e-9
    try:
        t0 = now()
        assert _wait_for(loop, "tau", lambda x: x[0] > t0 + 0.3) is not None, "no estimate from the stream"
        st0 = loop.node_status
        r0 = _diag(loop, "observer_restarts")
        d0 = int(loop.node_status.get("dropped_non_finite", 0))
        def nan_sent():
            return sorted(t for t, k in dict(s.sent).items() if k.startswith("nan"))

        for n, what in enumerate(("position", "effort")):
            with s.lock:
                s.poison = what
            # sent, and a good message after it answered: the node has taken the bad one
            assert loop._wait(lambda n=n: len(nan_sent()) > n, 60, None), "the stream did not send it"
            t_bad = nan_sent()[-1]
            assert _wait_for(loop, "g", lambda x, t_bad=t_bad: x[0] > t_bad) is not None, what
        assert st0 is not None
        # the counts, from a status made after that (eventually: the node reports every 0.2 s)
        want = _restarts(r0, "not_finite") + 2
        assert loop._wait(lambda: _restarts(_diag(loop, "observer_restarts"), "not_finite") >= want, 30, None), \
            (r0, _diag(loop, "observer_restarts"))
        r1 = _diag(loop, "observer_restarts")
        d1 = int(loop.node_status.get("dropped_non_finite", 0))
        assert _restarts(r1, "not_finite") == want, (r0, r1)
        assert d1 == d0 + 1         # the NaN position's message is dropped, the NaN effort's is not
        sent = dict(s.sent)
        bad = sorted(t for t, k in sent.items() if k.startswith("nan"))
        assert len(bad) == 2
        tau = {t: e for t, (_, e) in _since(loop, "tau", t0)}
        for t in bad:
            assert t not in tau
            nxt = min(x for x in sent if x > t)         # the restart sample: no estimate either
            assert nxt not in tau
        ok = [e for t, e in tau.items() if t > bad[1] + 0.05]
        assert len(ok) > 20 and max(np.max(np.abs(e)) for e in ok) < 1e-6   # static, tau = g: zero
        # efforts stop: within max_state_age (0.1 s) the estimate, the wrench and the flag stop too
        s.effort = None
        t_no = now()
        cut = t_no + 0.15
        # ... while the node computes for the stream (the sentinel: 50 answered since)
        assert loop._wait(lambda: len(_since(loop, "g", cut)) > 50, 30, None), len(_since(loop, "g", cut))
        waiting = _diag(loop, "observer_waiting")
        assert not _since(loop, "tau", cut) and not _since(loop, "wrench", cut) \
            and not _since(loop, "collision", cut)
        assert "effort" in waiting, waiting
        print(f"\nno efforts: observer_waiting = {waiting!r}")
        assert _all_finite(loop)
    finally:
        s.stop()
