"""The control path in this process (rclpy node, no subscriber, no spinning): messages
share their terms' buffers, a swap replaces runtime, terms and messages together, bad
messages are dropped and counted, the computed terms follow the subscribers and
switches (ControlStep's plan from the terms table)."""
import logging

import numpy as np
import pytest
import rclpy
from core_util import ARM_JOINTS
from sensor_msgs.msg import JointState

import rbd_ros.core as rbd
from rbd_ros.node import term
from rbd_ros.node.compensation import Compensation
from rbd_ros.node.control_path import ControlPath
from rbd_ros.node.control_step import ControlStep
from rbd_ros.node.model_build import build_robot
from rbd_ros.node.params import Params
from rbd_ros.node.stats import Stats
from rbd_ros.node.terms import TERMS
from rbd_ros.robots import bundled_robot_path

ARM = ARM_JOINTS


@pytest.fixture(scope="module")
def rclpy_node():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("control_test", context=ctx, start_parameter_services=False)
    yield node
    node.destroy_node()
    rclpy.shutdown(context=ctx)


def arm_runtime(joints=(), payload=0.0):
    with open(bundled_robot_path("rbd_arm7")) as f:
        text = f.read()
    if payload:
        text = text.replace('<mass value="0.735522"/>', f'<mass value="{0.735522 + payload}"/>')
    return build_robot(text, floating_base=False, mimic=True, gravity=[0, 0, -9.81],
                         joints=joints, source="test")


def js(q, v=None, names=ARM):
    m = JointState()
    m.name = list(names)
    m.position = [float(x) for x in q]
    if v is not None:
        m.velocity = [float(x) for x in v]
    return m


def test_messages_share_buffers_and_swap_with_the_runtime(rclpy_node):
    cp = ControlPath(rclpy_node, Stats(), rclpy_node.get_logger(), Params(max_state_age=0.0), TERMS)
    assert cp.runtime is None
    m = js(np.zeros(7))
    cp.on_joint_state(m)
    assert cp.stats.not_ready == 1 and cp.stats.msgs_out == 0

    order = ["joint7", "joint1", "joint3", "joint2", "joint4", "joint5", "joint6"]
    rt = arm_runtime(order)
    cp.bind(rt)
    bound = cp.bound
    assert bound.rt is rt and bound.shared and bound.bound.rt is rt
    for out, msg, t in zip(cp.outputs, bound.msgs, bound.terms):
        assert t is bound.bound.terms[out.term] and t.rt is rt
        buf = t.buffer(out.part)
        if out.kind == term.STATE:
            assert msg.effort is buf and list(msg.name) == order
        elif out.kind in (term.ARRAY, term.MATRIX):
            assert msg.data is buf
    h = bound.msgs[[o.part for o in cp.outputs].index("h")]
    assert [(d.label, d.size, d.stride) for d in h.layout.dim] == [("rows", 7, 49),
                                                                   ("cols", 7, 7)]

    rng = np.random.default_rng(3)
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    cp.on_joint_state(js(q, v))
    model = rt.model
    vi = [model.v_index(n) for n in order]
    assert cp.stats.msgs_out == 1
    g = rbd.gravity(model, q)[vi]
    assert np.max(np.abs(np.asarray(bound.msgs[1].effort) - g)) <= 1e-12
    # no subscriber: only g is computed (b and H, the command, the observer are not)
    assert [w for _, w in cp.step._compute] == [frozenset({"g"})]

    # a bad message is dropped and counted; the buffers keep the last good values
    bad = q.copy()
    bad[2] = np.nan
    cp.on_joint_state(js(bad, v))
    assert cp.stats.dropped == {"non_finite": 1} and cp.stats.msgs_out == 1
    assert np.array_equal(np.asarray(bound.msgs[0].data), g)

    # swap: new runtime, new messages; the old ones are left alone
    rt2 = arm_runtime(payload=2.0)
    rt2.adopt_state(rt)
    cp.bind(rt2)
    assert cp.bound is not bound and cp.runtime is rt2
    assert list(cp.bound.msgs[1].name) == ARM
    cp.on_joint_state(js(q, v))
    g2 = rbd.gravity(rt2.model, q)
    assert np.max(np.abs(np.asarray(cp.bound.msgs[0].data) - g2)) <= 1e-12
    assert np.max(np.abs(g2 - g[np.argsort(vi)])) > 0.1
    assert np.array_equal(np.asarray(bound.msgs[0].data), g)  # old messages untouched


def _planned(step):
    return set().union(*[w for _, w in step._compute])


def test_terms_follow_subscribers_and_switches(rclpy_node):
    cp = ControlPath(rclpy_node, Stats(), rclpy_node.get_logger(), Params(), TERMS)
    step = cp.step
    every = {o.part for c in TERMS for o in c.outputs if o.on == term.JOINT_STATES}
    step.set_live(every, {"ff"})
    assert _planned(step) == every - {"tau_ext", "wrench", "collision"}     # the observer is off
    # g, b, H (and λ of a model with loops, the contact forces of one on its feet) are one
    # term, the rest are their own
    assert TERMS[step._compute[0][0]] is Compensation and step._compute[0][1] == {"g", "b", "h", "lam", "contact"}
    step.set_live({"h"}, ())
    assert _planned(step) == {"g", "h"}
    step.set_live((), ())
    assert _planned(step) == {"g"}
    cp.configure(Params(publish_bias=False, publish_inertia=False))
    step.set_live(every, ())
    assert _planned(step) == {"g", "cmd", "lam", "contact"}
    # the observer: tau_ext needs nothing with measured torques, the command with commanded ones
    cp.configure(Params(observer=True))
    step.set_live({"collision"}, ())
    assert _planned(step) == {"g", "tau_ext", "collision"}
    cp.configure(Params(observer=True, observer_torque_source="commanded"))
    assert _planned(step) == {"g", "tau_ext", "collision", "cmd"}
    cp.configure(Params(max_publish_rate=100.0, max_state_age=0.5))
    assert step.min_period == pytest.approx(0.01) and step.max_state_age == 0.5


def test_the_collision_term_follows_the_observer_and_restarts_with_it():
    """~/collision is a term of its own (observer.Collision: the detector, its state and its
    compute): at rest with 2 N m of external torque on joint2 (threshold 0.5 N m) the flag
    rises once τ̂_ext stays above for the debounce time, only on messages with an estimate;
    a restart of the observer (~/reset_observer) brings it down with the residual, until
    the contact is seen again."""
    step = ControlStep(TERMS, Params(max_state_age=0.0, observer=True, collision_thresholds=[0.5],
                                     collision_debounce=0.01), logging.getLogger("test"))
    rt = arm_runtime()
    b = step.make(rt)
    step.bind(b)
    step.set_live({"collision"}, ())
    assert [TERMS[i].key for i, _ in step._compute] == ["g", "tau_ext", "collision"]
    q = np.linspace(-0.5, 0.5, 7)
    ext = np.zeros(7)
    ext[1] = 2.0
    effort = rbd.gravity(rt.model, q) - ext        # at rest: τ + τ_ext = g

    def feed(k):
        keys = step.joint_state(b, Stats(), ARM, q, np.zeros(7), effort, 100.0 + 1e-3 * k, 100.0 + 1e-3 * k)
        st = b.by_key["collision"].state
        return bool(st.detected) if "collision" in keys else None

    flags = [feed(k) for k in range(300)]
    assert flags[0] is None                          # the observer's first sample: no estimate, no flag
    first = flags.index(True)
    assert 10 < first < 200 and all(flags[first:])
    assert b.by_key["collision"].collisions == 1 and b.by_key["collision"].state.worst == 1
    assert step.reset_observer(b)
    after = [feed(k) for k in range(300, 600)]
    assert after[0] is None and after[1] is False    # restarted with the residual
    assert any(after)                                # the contact again (the sentinel)
    assert b.by_key["collision"].collisions == 2
