"""End to end over real DDS: ~/desired_state in, ~/feedforward_torques and ~/effort_command
out (computed torque, feed-forward, gravity, friction, clamping, fallback, bad input,
parameters at run time) -- compared with rbd_ros.core at the states the test sent."""
import math
import re
import time

import numpy as np
import pytest
from rcl_interfaces.msg import ParameterType, ParameterValue
from ros_harness import (
    ARM_JOINTS,
    DiagnosticArray,
    Float64MultiArray,
    JointState,
    NodeProcess,
    array_of,
    diagnostics_of,
    joint_state,
    next_stamp,
    publish_until,
    read_arm_urdf,
    stamp_key,
    unique_ns,
    wait_for,
)
from ros_harness import (
    set_params as harness_set_params,
)
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.core as rbd

TOL = 1e-9
KP = np.array([60.0, 80.0, 60.0, 50.0, 40.0, 30.0, 20.0])
KD = np.array([12.0, 15.0, 12.0, 10.0, 8.0, 6.0, 4.0])
HOLD = np.array([2.0, 2.0, 2.0, 1.5, 1.0, 1.0, 0.5])
EPS = 0.05


def urdf_with_friction():
    text = read_arm_urdf()
    for k in range(1, 8):
        tag = f'<joint name="joint{k}" type="revolute">'
        text = text.replace(tag, tag + f'<dynamics damping="{0.2 * k}" friction="{0.5 + 0.1 * k}"/>')
    return text


MODEL = rbd.Model.from_urdf(urdf_with_friction())
LIMIT = MODEL.effort_limit


def rel(got, ref):
    ref = np.asarray(ref)
    return float(np.max(np.abs(np.asarray(got) - ref)) / max(1.0, float(np.max(np.abs(ref)))))


def desired(q, v=None, a=None, names=ARM_JOINTS, stamp=None, points=1):
    m = JointTrajectory()
    m.header.stamp = stamp if stamp is not None else next_stamp()
    m.joint_names = list(names)
    pt = JointTrajectoryPoint()
    pt.positions = [float(x) for x in q]
    pt.velocities = [] if v is None else [float(x) for x in v]
    pt.accelerations = [] if a is None else [float(x) for x in a]
    m.points = [pt] * points
    return m


def set_params(client, node, **values):
    """All at once (atomically); returns the result (successful, reason)."""
    return harness_set_params(client, node, atomically=True, **values)[0]


class Rig:
    def __init__(self, client, node, ns):
        self.client, self.node, self.ns = client, node, ns
        self.cmd = client.record(Float64MultiArray, node.topic("effort_command"))
        self.cmd_state = client.record(JointState, node.topic("effort_command_state"))
        self.ff = client.record(Float64MultiArray, node.topic("feedforward_torques"))
        self.ff_state = client.record(JointState, node.topic("feedforward_torques_state"))
        self.diag = client.record(DiagnosticArray, "/diagnostics")
        self.js = client.publisher(JointState, f"/{ns}/joint_states")
        self.des = client.publisher(JointTrajectory, node.topic("desired_state"))

    def command(self, q, v, accept=None, timeout=20, names=ARM_JOINTS):
        """Publish the measured state until an effort_command_state answers it (and accept
        approves); returns its efforts."""
        sent, got = publish_until(self.js, lambda: joint_state(ARM_JOINTS, q, v), self.cmd_state,
                                  timeout=timeout, accept=accept)
        assert got is not None, self.node.log()[-3000:]
        assert list(got.name) == list(names)
        assert stamp_key(got.header.stamp) == stamp_key(sent.header.stamp)
        return np.asarray(got.effort)

    def send_desired(self, q, v=None, a=None, timeout=20):
        """Publish the desired state until its feedforward_torques_state arrives."""
        sent, got = publish_until(self.des, lambda: desired(q, v, a), self.ff_state, timeout=timeout)
        assert got is not None, self.node.log()[-3000:]
        return np.asarray(got.effort)

    def diagnostics(self, accept, timeout=10):
        return wait_for(lambda: (lambda d: d if d is not None and accept(d) else None)(
            diagnostics_of(self.diag, self.node.fqn)), timeout=timeout)


@pytest.fixture(scope="module")
def rig(client):
    ns = unique_ns("cmd")
    node = NodeProcess(ns, {"robot_description": urdf_with_friction(), "max_state_age": 5.0,
                            "diagnostics_period": 0.2, "command_mode": "computed_torque",
                            "kp": KP.tolist(), "kd": KD.tolist(), "hold_damping": HOLD.tolist(),
                            "max_desired_age": 5.0, "friction_velocity_eps": EPS,
                            "service_process": False})
    try:
        yield Rig(client, node, ns)
    finally:
        node.stop()


def hold(q, v):
    return rbd.gravity(MODEL, q) - HOLD * v


def computed(q, v, qd, vd, ad, kp=KP, kd=KD):
    return rbd.rnea(MODEL, q, v, ad + kp * (qd - q) + kd * (vd - v))


def test_feedforward_and_computed_torque_equal_the_core(rig):
    rng = np.random.default_rng(21)
    q, v = rng.uniform(-0.8, 0.8, 7), rng.uniform(-0.3, 0.3, 7)
    # before any desired state: the damped hold
    got = rig.command(q, v, accept=lambda m: rel(m.effort, hold(q, v)) <= TOL, timeout=60)
    assert rel(got, hold(q, v)) <= TOL
    assert rig.diagnostics(lambda d: d.get("command_fallback") == "true")[
        "command_fallback_reason"] == "no desired state received"

    qd, vd, ad = q + rng.uniform(-0.05, 0.05, 7), v + rng.uniform(-0.1, 0.1, 7), rng.uniform(-1, 1, 7)
    ff = rig.send_desired(qd, vd, ad)
    assert rel(ff, rbd.rnea(MODEL, qd, vd, ad)) <= TOL
    assert rel(array_of(rig.ff.latest()), ff) == 0.0
    expected = computed(q, v, qd, vd, ad)
    assert np.all(np.abs(expected) < 0.8 * LIMIT), expected   # not clamped
    assert rel(expected, hold(q, v)) > 1e-2
    got = rig.command(q, v, accept=lambda m: rel(m.effort, hold(q, v)) > 1e-6)
    assert rel(got, expected) <= TOL
    assert wait_for(lambda: rel(array_of(rig.cmd.latest()), expected) <= TOL, timeout=60)
    d = rig.diagnostics(lambda d: d.get("command_fallback") == "false")
    assert d["command_mode"] == "computed_torque"
    # a second measured state, the same desired one
    q2, v2 = q + 0.02, -v
    got = rig.command(q2, v2)
    assert rel(got, computed(q2, v2, qd, vd, ad)) <= TOL

    # feed-forward mode: the command is tau_ff (whatever the measured state)
    assert set_params(rig.client, rig.node, command_mode="feedforward").successful
    got = rig.command(q2, v2, accept=lambda m: rel(m.effort, ff) <= TOL)
    assert rel(got, ff) <= TOL
    # gravity mode: g(q)
    assert set_params(rig.client, rig.node, command_mode="gravity").successful
    got = rig.command(q2, v2, accept=lambda m: rel(m.effort, rbd.gravity(MODEL, q2)) <= TOL)
    assert rel(got, rbd.gravity(MODEL, q2)) <= TOL
    assert rig.diagnostics(lambda d: d.get("command_mode") == "gravity")


def test_friction_adds_exactly_rbd_friction(rig):
    rng = np.random.default_rng(22)
    q, v = rng.uniform(-0.8, 0.8, 7), rng.uniform(-0.1, 0.1, 7)
    qd, vd, ad = q + 0.01, rng.uniform(-0.2, 0.2, 7), rng.uniform(-0.5, 0.5, 7)
    fr = rbd.friction(MODEL, v, velocity_eps=EPS)
    assert np.all(np.abs(fr) > 0.05)
    assert set_params(rig.client, rig.node, command_mode="gravity", command_friction=True).successful
    g = rbd.gravity(MODEL, q)
    got = rig.command(q, v, accept=lambda m: rel(m.effort, g + fr) <= TOL)
    assert rel(got, g + fr) <= TOL
    # feedforward_torques: friction at qd_d
    ff = rig.send_desired(qd, vd, ad)
    assert rel(ff, rbd.rnea(MODEL, qd, vd, ad) + rbd.friction(MODEL, vd, velocity_eps=EPS)) <= TOL
    # computed torque: friction at the measured qd
    assert set_params(rig.client, rig.node, command_mode="computed_torque").successful
    expected = computed(q, v, qd, vd, ad) + fr
    got = rig.command(q, v, accept=lambda m: rel(m.effort, expected) <= TOL)
    assert rel(got, expected) <= TOL
    assert rig.diagnostics(lambda d: d.get("command_friction") == "true")
    assert set_params(rig.client, rig.node, command_friction=False).successful
    got = rig.command(q, v, accept=lambda m: rel(m.effort, expected - fr) <= TOL)


def test_clamped_exactly_at_the_limit_and_counted(rig):
    q, v = np.full(7, 0.3), np.zeros(7)
    qd = q.copy()
    qd[1] += 0.5
    qd[5] -= 0.5
    ad = np.zeros(7)
    kp = 3000.0
    raw = computed(q, v, qd, v, ad, kp=kp, kd=0.0)
    over = np.abs(raw) > LIMIT
    assert over[1] and over[5], raw
    clamped = np.clip(raw, -LIMIT, LIMIT)
    before = int(rig.diagnostics(lambda d: "command_clamped" in d)["command_clamped"])
    res = set_params(rig.client, rig.node, command_mode="computed_torque", kp=[kp], kd=[0.0],
                     clamp_effort=True)
    assert res.successful, res.reason
    rig.send_desired(qd, v, ad)
    got = rig.command(q, v, accept=lambda m: rel(m.effort, clamped) <= TOL)
    assert np.all(np.abs(got) <= LIMIT)
    assert got[1] == math.copysign(LIMIT[1], raw[1]) and got[5] == math.copysign(LIMIT[5], raw[5])
    assert rel(got[~over], raw[~over]) <= TOL
    d = rig.diagnostics(lambda d: int(d["command_clamped"]) > before)
    assert d["effort_limits_source"] == "URDF"
    assert wait_for(lambda: "effort_command clamped to the effort limits (URDF): joint2 to "
                    in rig.node.log(), timeout=60), rig.node.log()[-2000:]
    # effort_limits parameter overrides the URDF; .inf = that joint unclamped
    lim = np.array([50.0, math.inf, 50.0, 50.0, 5.0, 5.0, 5.0])
    assert set_params(rig.client, rig.node, effort_limits=lim.tolist()).successful
    got = rig.command(q, v, accept=lambda m: rel(m.effort, np.clip(raw, -lim, lim)) <= TOL)
    assert got[1] == pytest.approx(raw[1], rel=TOL) and abs(got[1]) > LIMIT[1]
    assert got[5] == math.copysign(5.0, raw[5])
    # clamping off: the raw command
    assert set_params(rig.client, rig.node, clamp_effort=False, effort_limits=[math.inf]).successful
    got = rig.command(q, v, accept=lambda m: rel(m.effort, raw) <= TOL)
    assert set_params(rig.client, rig.node, clamp_effort=True, kp=KP.tolist(), kd=KD.tolist()).successful


def test_stale_desired_state_falls_back_to_the_damped_hold_and_recovers(rig):
    rng = np.random.default_rng(23)
    q, v = rng.uniform(-0.8, 0.8, 7), rng.uniform(-0.3, 0.3, 7)
    qd, vd, ad = q + 0.03, v * 0.5, rng.uniform(-1, 1, 7)
    age = 0.5
    res = set_params(rig.client, rig.node, command_mode="computed_torque", max_desired_age=age,
                     command_friction=False, clamp_effort=True, kp=KP.tolist(), kd=KD.tolist())
    assert res.successful, res.reason
    expected = computed(q, v, qd, vd, ad)
    for _ in range(5):   # fresh: computed torque (retry if the machine stalls > age)
        rig.send_desired(qd, vd, ad)
        sent, got = publish_until(rig.js, lambda: joint_state(ARM_JOINTS, q, v), rig.cmd_state,
                                  timeout=age / 2)
        if got is not None and rel(got.effort, expected) <= TOL:
            break
    else:
        pytest.fail("no computed-torque answer while the desired state was fresh")
    n_stale_logs = rig.node.log().count("desired state older than max_desired_age")
    time.sleep(age + 0.2)
    got = rig.command(q, v)   # stale now
    assert rel(got, hold(q, v)) <= TOL
    for _ in range(10):
        rig.command(q, v)
    d = rig.diagnostics(lambda d: d.get("command_fallback") == "true"
                        and int(d["command_fallbacks"]) >= 11)   # 11 hold commands just now
    assert d, diagnostics_of(rig.diag, rig.node.fqn)
    assert d["command_fallback_reason"] == "desired state older than max_desired_age"
    log = rig.node.log()
    assert log.count("desired state older than max_desired_age") == n_stale_logs + 1, log[-3000:]
    n_resumed = log.count("computed_torque command resumed (fresh desired state)")
    # fresh again: computed torque resumes, logged once
    rig.send_desired(qd, vd, ad)
    got = rig.command(q, v, accept=lambda m: rel(m.effort, expected) <= TOL)
    assert rig.diagnostics(lambda d: d.get("command_fallback") == "false")
    assert wait_for(lambda: rig.node.log().count(
        "computed_torque command resumed (fresh desired state)") == n_resumed + 1, timeout=60)
    assert set_params(rig.client, rig.node, max_desired_age=5.0).successful


def test_bad_desired_states_are_dropped_counted_and_never_used(rig):
    rng = np.random.default_rng(24)
    q, v = rng.uniform(-0.8, 0.8, 7), rng.uniform(-0.3, 0.3, 7)
    res = set_params(rig.client, rig.node, command_mode="computed_torque", kp=KP.tolist(),
                     kd=KD.tolist(), max_desired_age=5.0, command_friction=False)
    assert res.successful, res.reason
    qd, vd, ad = q + 0.02, v, np.zeros(7)
    rig.send_desired(qd, vd, ad)
    before = rig.diagnostics(lambda d: "desired_dropped" in d)
    dropped0 = int(before["desired_dropped"])
    far = q + 1.0
    nan = far.copy()
    nan[2] = math.nan
    bad = [
        desired(far, names=ARM_JOINTS[:6] + ["elbow"]),            # unknown joint
        desired(far[:6], names=ARM_JOINTS[:6]),                    # missing joint7
        desired(nan),                                              # NaN position
        desired(far, v=[math.inf] * 7),                            # inf velocity
        desired(far, a=[0.0] * 6),                                 # wrong length
        desired(far[:5]),                                          # wrong length
        desired(far, points=2),                                    # two points
        desired(far, points=0),                                    # no point
        desired(far, names=ARM_JOINTS[:6] + ["joint1"]),           # duplicate
    ]
    for m in bad:
        rig.des.publish(m)
    # sentinel: a good desired state after the bad ones, on the same publisher, answered
    sent, got = publish_until(rig.des, lambda: desired(qd, vd, ad), rig.ff_state, timeout=60)
    assert got is not None
    bad_keys = {stamp_key(m.header.stamp) for m in bad}
    msgs, _ = rig.ff_state.snapshot()
    assert not [m for m in msgs if stamp_key(m.header.stamp) in bad_keys]
    d = rig.diagnostics(lambda d: int(d["desired_dropped"]) >= dropped0 + len(bad))
    assert int(d["desired_dropped"]) == dropped0 + len(bad)
    # the command never saw the bad ones: the computed torque of the good one
    got = rig.command(q, v)
    assert rel(got, computed(q, v, qd, vd, ad)) <= TOL
    log = rig.node.log()
    assert "desired_state dropped: joint_names[6]: unknown joint 'elbow'" in log
    assert rig.node.alive()


def test_parameters_checked_and_changed_at_run_time(rig):
    c, n = rig.client, rig.node
    for values, text in (
            (dict(command_mode="torque"), "command_mode: expected one of"),
            (dict(kp=[1.0, 2.0]), "kp: expected one value or 7"),
            (dict(kd=[-1.0]), "kd[0]: expected a number in [0, 1e+09] 1/s, got -1.0"),
            (dict(hold_damping=[1.0] * 6), "hold_damping: expected one value or 7"),
            (dict(effort_limits=[0.0]), "effort_limits[0] (joint1): expected a number > 0"),
            (dict(max_desired_age=-1.0), "max_desired_age out of range Min: 0.0, Max: 3600.0")):
        res = set_params(c, n, **values)
        assert not res.successful and text in res.reason, (values, res.reason)
    # the values in force did not change
    rng = np.random.default_rng(25)
    q, v = rng.uniform(-0.8, 0.8, 7), rng.uniform(-0.3, 0.3, 7)
    qd, vd, ad = q + 0.02, v, np.zeros(7)
    assert set_params(c, n, command_mode="computed_torque", kp=KP.tolist(), kd=KD.tolist(),
                      command_friction=False).successful
    rig.send_desired(qd, vd, ad)
    rig.command(q, v, accept=lambda m: rel(m.effort, computed(q, v, qd, vd, ad)) <= TOL)
    # new gains take effect on the next message
    kp2, kd2 = KP * 0.5, KD * 2.0
    assert set_params(c, n, kp=kp2.tolist(), kd=kd2.tolist()).successful
    exp2 = computed(q, v, qd, vd, ad, kp=kp2, kd=kd2)
    assert rel(exp2, computed(q, v, qd, vd, ad)) > 1e-3
    assert rel(rig.command(q, v, accept=lambda m: rel(m.effort, exp2) <= TOL), exp2) <= TOL
    # hold_damping applies to the fallback
    assert set_params(c, n, hold_damping=[3.0], max_desired_age=0.2).successful
    time.sleep(0.4)
    rig.command(q, v, accept=lambda m: rel(m.effort, rbd.gravity(MODEL, q) - 3.0 * v) <= TOL)
    # a mode needing gains is refused while they are empty -- in one atomic request
    res = set_params(c, n, kp=[], command_mode="computed_torque")
    assert not res.successful and "kp: command_mode computed_torque needs gains" in res.reason
    assert set_params(c, n, hold_damping=HOLD.tolist(), max_desired_age=5.0).successful
    assert n.alive()
    assert not re.search(r"Traceback|\[ERROR\]", n.log()), n.log()[-3000:]


def test_joints_subset_with_new_gains_and_a_model_that_no_longer_fits(rig):
    c, n = rig.client, rig.node
    rng = np.random.default_rng(26)
    q, v = rng.uniform(-0.8, 0.8, 7), rng.uniform(-0.3, 0.3, 7)
    qd, vd, ad = q + 0.03, v + 0.1, rng.uniform(-1, 1, 7)
    res = set_params(c, n, command_mode="computed_torque", kp=KP.tolist(), kd=KD.tolist(),
                     command_friction=False, clamp_effort=True, max_desired_age=5.0)
    assert res.successful, res.reason
    rig.send_desired(qd, vd, ad)
    # 7 gains do not fit 2 output joints: refused, with the reason
    res = set_params(c, n, joints=["joint4", "joint2"])
    assert not res.successful and "kp: expected one value or 2" in res.reason, res.reason
    # together with gains that fit: accepted (no spurious error on the way)
    res = set_params(c, n, joints=["joint4", "joint2"], kp=[70.0, 90.0], kd=[9.0, 11.0],
                     hold_damping=[1.0], effort_limits=[])
    assert res.successful, res.reason
    sub = [3, 1]
    # the new model keeps the desired state (it names joint4 and joint2); the other
    # joints it names get a_cmd = qdd_d, without gains
    a = ad.copy()
    a[sub] += np.array([70.0, 90.0]) * (qd - q)[sub] + np.array([9.0, 11.0]) * (vd - v)[sub]
    expected = rbd.rnea(MODEL, q, v, a)[sub]
    got = rig.command(q, v, names=["joint4", "joint2"],
                      accept=lambda m: list(m.name) == ["joint4", "joint2"])
    assert rel(got, expected) <= TOL
    ff = rig.send_desired(qd, vd, ad)
    assert rel(ff, rbd.rnea(MODEL, qd, vd, ad)[sub]) <= TOL
    assert "effort_command and feedforward_torques are off" not in n.log()
    # a desired state without joint4 is now refused; one with joint4 and joint2 only is fine
    dropped = int(rig.diagnostics(lambda d: "desired_dropped" in d)["desired_dropped"])
    rig.des.publish(desired(qd[[1, 2]], names=["joint2", "joint3"]))
    assert rig.diagnostics(lambda d: int(d["desired_dropped"]) == dropped + 1)
    sent, got = publish_until(rig.des, lambda: desired(qd[sub], vd[sub], ad[sub], names=["joint4", "joint2"]),
                              rig.ff_state, timeout=60)
    assert got is not None
    qf, vf, af = q.copy(), v.copy(), np.zeros(7)   # the rest: measured, at rest in acceleration
    qf[sub], vf[sub], af[sub] = qd[sub], vd[sub], ad[sub]
    assert rel(got.effort, rbd.rnea(MODEL, qf, vf, af)[sub]) <= TOL

    # back to every DOF; then a robot_description with joint7 fixed: 6 DOFs, which the 7
    # gains no longer fit -- the command outputs switch off with the reason, the torques
    # go on; fixing the gains switches them back on
    every = ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=[])
    res = set_params(c, n, joints=every, kp=KP.tolist(), kd=KD.tolist())
    assert res.successful, res.reason
    rig.command(q, v, accept=lambda m: len(m.name) == 7)
    short = urdf_with_friction().replace('<joint name="joint7" type="revolute">',
                                         '<joint name="joint7" type="fixed">')
    desc_pub = c.latched_description(f"/{rig.ns}/robot_description", short)
    gs = c.record(JointState, n.topic("gravity_torques_state"))
    six = ARM_JOINTS[:6]
    sent, got = publish_until(rig.js, lambda: joint_state(six, q[:6], v[:6]), gs, timeout=60,
                              accept=lambda m: list(m.name) == six)
    assert got is not None, n.log()[-3000:]
    assert wait_for(lambda: "effort_command and feedforward_torques are off: kp: expected one "
                    "value or 6" in n.log(), timeout=60), n.log()[-3000:]
    d = rig.diagnostics(lambda d: "command_error" in d)
    assert "kp: expected one value or 6" in d["command_error"]
    # ... and the diagnostics' last error, as every error the node reports
    assert rig.diagnostics(lambda d: "kp: expected one value or 6" in d.get("last_error", "")), \
        diagnostics_of(rig.diag, rig.node.fqn)
    count = rig.cmd_state.count()
    sent, got = publish_until(rig.js, lambda: joint_state(six, q[:6], v[:6]), gs, timeout=60)
    assert got is not None and rig.cmd_state.count() == count   # torques yes, command no
    assert set_params(c, n, kp=[50.0], kd=[5.0]).successful
    sent, got = publish_until(rig.js, lambda: joint_state(six, q[:6], v[:6]), rig.cmd_state,
                              timeout=60)
    assert got is not None and list(got.name) == six
    assert "effort_command back on" in n.log()
    c.node.destroy_publisher(desc_pub)
