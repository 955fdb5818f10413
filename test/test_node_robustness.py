"""No joint_states or desired_state message can kill the node (issue 22, defect 1), in
this process: a real rclpy node and logger, the node's ControlPath, nothing mocked.

* rclpy ties one severity to each logging call site; reporting through one site at
  several levels raised ``Logger severity cannot be changed between calls`` out of the
  joint_states callback.  Every report path is fired at every level, in every order.
* A state the core refuses (finite but huge velocities: the dynamics overflow) is dropped
  at the door like NaN: counted, the state untouched, the next good message computed.
* Garbage of every kind, in every order, with a good message after each: the good one is
  always computed (the sentinel that the path was listening).
"""
import itertools
import math
import time

import numpy as np
import pytest
import rclpy
from core_util import ARM_JOINTS, random_tree_urdf
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.core as rbd
from rbd_ros.node.control_path import MESSAGE_TYPES, OUTPUTS, ControlPath
from rbd_ros.node.logs import LEVELS, log_at
from rbd_ros.node.model_build import build_robot
from rbd_ros.node.model_manager import ModelManager
from rbd_ros.node.params import Params
from rbd_ros.node.robot import STATE_LIMIT
from rbd_ros.node.stats import Stats
from rbd_ros.robots import bundled_robot_path

SHOWN = {"info": "[INFO]", "warning": "[WARN]", "error": "[ERROR]"}     # debug is below the default level


@pytest.fixture(scope="module")
def rclpy_node():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("robustness_test", context=ctx, start_parameter_services=False)
    yield node
    node.destroy_node()
    rclpy.shutdown(context=ctx)


def _urdf(name="rbd_arm7"):
    with open(bundled_robot_path(name)) as f:
        return f.read()


def _robot(text=None):
    return build_robot(text or _urdf(), floating_base=False, mimic=True, gravity=[0, 0, -9.81], joints=(),
                       source="test")


def js(names, q, v=None, effort=None, stamp=0.0):
    m = JointState()
    m.name = list(names)
    m.position = [float(x) for x in q]
    if v is not None:
        m.velocity = [float(x) for x in v]
    if effort is not None:
        m.effort = [float(x) for x in effort]
    m.header.stamp.sec = int(math.floor(stamp))
    m.header.stamp.nanosec = int((stamp - math.floor(stamp)) * 1e9)
    return m


def _logged(capfd, texts):
    """The (severity, text) pairs of ``texts`` found in the captured stderr (rcutils
    writes to the C-level stderr)."""
    err = capfd.readouterr().err
    return [(lvl, t) for lvl, t in texts if any(SHOWN[lvl] in line and t in line for line in err.splitlines())]


# ----------------------------------------------------------------------------- logging

def test_log_at_every_level_in_every_order(rclpy_node, capfd):
    log = rclpy_node.get_logger()
    texts = []
    for n, order in enumerate(itertools.permutations(LEVELS)):
        for lvl in order:
            text = f"log_at order {n} level {lvl}"
            log_at(log, lvl, text)
            if lvl in SHOWN:
                texts.append((lvl, text))
    assert _logged(capfd, texts) == texts            # each at its own severity, none lost
    log_at(log, "bogus", "an unknown level is an error")
    assert _logged(capfd, [("error", "an unknown level is an error")])


def test_rclpy_refuses_one_site_at_two_levels(rclpy_node):
    """What the node did (the defect): rclpy raises on a second severity from one site."""
    log = rclpy_node.get_logger()
    with pytest.raises(ValueError, match="severity cannot be changed"):
        for lvl in ("warning", "error"):
            getattr(log, lvl)("one call site, two severities")


def test_every_report_path_at_every_level_in_every_order(rclpy_node, capfd):
    log = rclpy_node.get_logger()
    cp = ControlPath(rclpy_node, Stats(), log, Params())
    step = cp.step
    errors = []
    mm = ModelManager(lambda rt: None, lambda: None, lambda rt, text: None, log, errors.append)
    texts = []
    for n, order in enumerate(itertools.permutations(LEVELS)):
        for lvl in order:
            for throttle in (False, True):
                text = f"step report {n} {lvl} {throttle}: x"
                step._report(text, lvl, throttle=throttle)
                if lvl in SHOWN and (not throttle or n == 0):
                    texts.append((lvl, text))
            text = f"model report {n} {lvl}"
            mm._error(text, lvl)
            if lvl in SHOWN:
                texts.append((lvl, text))
    found = _logged(capfd, texts)
    missing = [t for t in texts if t not in found]
    assert not missing, missing[:5]
    assert len(errors) == 24 * 4 and cp.stats.last_error.startswith("step report 23")


# ----------------------------------------------------------------------------- the control path

def _live_path(node, params, rt):
    """A ControlPath bound to rt whose every output has a subscriber (in this node)."""
    cp = ControlPath(node, Stats(), node.get_logger(), params)
    subs = [node.create_subscription(MESSAGE_TYPES[o.kind], o.topic, lambda m: None, 10) for o in OUTPUTS]
    cp.bind(rt)
    assert _wait(lambda: all(p.get_subscription_count() > 0 for p in cp.publishers))
    return cp, subs


def _wait(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


def _desired(names, q, v=None, a=None, points=1):
    m = JointTrajectory()
    m.joint_names = list(names)
    p = JointTrajectoryPoint()
    p.positions = [float(x) for x in q]
    p.velocities = [float(x) for x in (v if v is not None else np.zeros(len(q)))]
    p.accelerations = [float(x) for x in (a if a is not None else np.zeros(len(q)))]
    m.points = [p] * points
    return m


@pytest.fixture(scope="module")
def arm_path(rclpy_node):
    rt = _robot()
    params = Params(observer=True, collision_thresholds=[0.5], command_mode="computed_torque",
                    max_state_age=0.0)
    cp, subs = _live_path(rclpy_node, params, rt)
    yield cp
    for s in subs:
        rclpy_node.destroy_subscription(s)


class Clock:
    t = 100.0

    def next(self):
        Clock.t += 0.002
        return Clock.t


def test_a_state_the_core_refuses_is_dropped_at_the_door(arm_path):
    cp, rt = arm_path, arm_path.runtime
    clock = Clock()
    q, v = np.linspace(-0.5, 0.5, 7), np.linspace(0.3, -0.3, 7)
    tau = rbd.gravity(rt.model, q)
    cp.on_joint_state(js(ARM_JOINTS, q, v, tau, clock.next()))
    out0 = cp.stats.msgs_out
    assert out0 >= 1
    g_good = np.array(rt.g)
    # the message: finite, but far beyond any robot: the core would overflow
    with pytest.raises(ValueError, match="too large"):
        rbd.bias(rt.model, q, np.full(7, 1e300))
    for bad in (1e300, -1e300, 2 * STATE_LIMIT):
        vb = v.copy()
        vb[2] = bad
        cp.on_joint_state(js(ARM_JOINTS, q + 0.1, vb, tau, clock.next()))
        assert cp.stats.msgs_out == out0                      # nothing computed ...
        assert np.array_equal(rt.v, v) and np.array_equal(rt.q, q)      # ... nor merged
    assert cp.stats.dropped.get("out_of_range") == 3
    assert "beyond" in cp.stats.last_error and "joint3" in cp.stats.last_error
    assert rt.observer.status == "not_finite"                # restarted, like for NaN
    # at the limit: accepted, finite (the core's guarantee for in-bounds models)
    cp.on_joint_state(js(ARM_JOINTS, q, np.full(7, STATE_LIMIT), tau, clock.next()))
    assert cp.stats.msgs_out == out0 + 1
    assert np.all(np.isfinite(rt.b)) and np.all(np.isfinite(rt.h))
    # a revolute position of 1e300 is an angle like any other (sin/cos): computed
    cp.on_joint_state(js(ARM_JOINTS, np.full(7, 1e300), v, tau, clock.next()))
    assert cp.stats.msgs_out == out0 + 2
    assert np.allclose(rt.g, rbd.gravity(rt.model, np.full(7, 1e300)), rtol=1e-9, atol=1e-12)
    # and the next good message is computed
    cp.on_joint_state(js(ARM_JOINTS, q, v, tau, clock.next()))
    assert cp.stats.msgs_out == out0 + 3 and np.allclose(rt.g, g_good, rtol=1e-12, atol=0)


def test_prismatic_and_planar_positions_are_bounded():
    """Linear positions (prismatic, planar x/y) overflow the dynamics like velocities do:
    beyond STATE_LIMIT they are dropped; angles are not bounded."""
    rt = _robot(random_tree_urdf(5, n_joints=6))
    names = list(rt.dof_names)
    kinds = dict(zip(rt.model.joint_names, rt.model.joint_types))
    linear = [n for n in names if kinds.get(n) == "prismatic" or n.endswith(("/x", "/y"))]
    angular = [n for n in names if n not in linear]
    assert linear and angular
    q0 = np.full(len(names), 0.1)
    assert rt.update(names, q0, np.zeros(len(names)), 1.0)[0] == "ok"
    for n in linear:
        q = q0.copy()
        q[names.index(n)] = 1e300
        status, detail = rt.update(names, q, np.zeros(len(names)), 2.0)
        assert status == "out_of_range" and n in detail
        full = rt.model              # the core refuses g, b or H at such a state (what the node computes)
        qq = full.neutral()
        qq[full.q_index(n.split("/")[0]) + (1 if n.endswith("/y") else 0)] = 1e300
        refused = 0
        for fn, args in ((rbd.gravity, (full, qq)), (rbd.bias, (full, qq, np.ones(full.nv))), (rbd.crba, (full, qq))):
            try:
                fn(*args)
            except ValueError as e:
                assert "not finite" in str(e)
                refused += 1
        assert refused, n
    for n in angular:
        q = q0.copy()
        q[names.index(n)] = 1e300
        assert rt.update(names, q, np.zeros(len(names)), 3.0)[0] == "ok"


GARBAGE = {
    "nan position": lambda q, v, t: js(ARM_JOINTS, np.r_[q[:3], np.nan, q[4:]], v, t, 0),
    "huge velocity": lambda q, v, t: js(ARM_JOINTS, q, np.r_[v[:6], 1e300], t, 0),
    "inf velocity": lambda q, v, t: js(ARM_JOINTS, q, np.r_[np.inf, v[1:]], t, 0),
    "short position": lambda q, v, t: js(ARM_JOINTS, q[:6], v, t, 0),
    "duplicate name": lambda q, v, t: js(ARM_JOINTS + ["joint1"], np.r_[q, 0.0], np.r_[v, 0.0], np.r_[t, 0.0], 0),
    "nan effort": lambda q, v, t: js(ARM_JOINTS, q, v, np.r_[t[:6], np.nan], 0),
    "huge effort": lambda q, v, t: js(ARM_JOINTS, q, v, np.full(7, 1e308), 0),
    "desired: 2 points": lambda q, v, t: _desired(ARM_JOINTS, q, points=2),
    "desired: unknown joint": lambda q, v, t: _desired(ARM_JOINTS[:6] + ["nope"], q),
    "desired: huge": lambda q, v, t: _desired(ARM_JOINTS, q, a=np.full(7, 1e300)),
}


def test_garbage_in_every_order_never_raises_and_the_next_message_computes(arm_path):
    cp, rt = arm_path, arm_path.runtime
    clock = Clock()
    q, v = np.linspace(-0.5, 0.5, 7), np.linspace(0.3, -0.3, 7)
    tau = rbd.gravity(rt.model, q)
    kinds = sorted(GARBAGE)
    rng = np.random.default_rng(3)
    orders = [kinds] + [list(rng.permutation(kinds)) for _ in range(40)]
    orders += [list(p) for p in itertools.permutations(kinds[:5])]          # every order of five of them
    for order in orders:
        for kind in order:
            msg = GARBAGE[kind](q, v, tau)
            if isinstance(msg, JointState):
                t = clock.next()
                msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), int((t % 1) * 1e9)
                cp.on_joint_state(msg)
            else:
                cp.on_desired(msg)
            out = cp.stats.msgs_out
            cp.on_joint_state(js(ARM_JOINTS, q, v, tau, clock.next()))     # the sentinel
            assert cp.stats.msgs_out == out + 1, kind
            assert np.all(np.isfinite(rt.g)) and np.all(np.isfinite(rt.cmd))
    d = cp.stats.dropped
    assert d.get("non_finite", 0) > 0 and d.get("out_of_range", 0) > 0 and d.get("size_mismatch", 0) > 0
    assert d.get("duplicate_names", 0) > 0 and "internal_error" not in d
    assert cp.step.desired_dropped > 0


def test_an_unexpected_failure_is_counted_and_the_path_goes_on(arm_path, monkeypatch):
    """The callback guard: whatever fails inside (here a term's compute function made to
    raise) is counted as dropped_internal_error, never raised to the executor."""
    cp, rt = arm_path, arm_path.runtime
    clock = Clock()
    q, v = np.zeros(7), np.zeros(7)
    tau = rbd.gravity(rt.model, q)
    cp.on_joint_state(js(ARM_JOINTS, q, v, tau, clock.next()))
    out = cp.stats.msgs_out

    def boom(*args):
        raise RuntimeError("injected")
    planned = cp.step._compute
    # (the path re-plans when it re-reads its subscriber counts, every 50 ms: it keeps boom)
    boomed = ((boom, frozenset({"g"})),)
    monkeypatch.setattr(cp.step, "_plan", lambda: setattr(cp.step, "_compute", boomed))
    monkeypatch.setattr(cp.step, "_compute", boomed)
    cp.on_joint_state(js(ARM_JOINTS, q, v, tau, clock.next()))
    monkeypatch.undo()                    # the plan as it was
    assert cp.step._compute == planned
    assert cp.stats.dropped.get("internal_error") == 1
    assert "RuntimeError: injected" in cp.stats.last_error
    cp.on_joint_state(js(ARM_JOINTS, q, v, tau, clock.next()))
    assert cp.stats.msgs_out == out + 1

