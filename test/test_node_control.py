"""The control path in this process (rclpy node, no subscriber, no spinning): messages
share the Robot's buffers, a swap replaces runtime and messages together, bad
messages are dropped and counted, the computed terms follow the subscribers."""
import numpy as np
import pytest
import rclpy
from core_util import ARM_JOINTS
from sensor_msgs.msg import JointState

import rbd_ros.core as rbd
from rbd_ros.node.control_path import OUTPUTS, STATE, ControlPath
from rbd_ros.node.model_build import build_robot
from rbd_ros.node.params import Params
from rbd_ros.node.stats import Stats
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
    cp = ControlPath(rclpy_node, Stats(), rclpy_node.get_logger(), Params(max_state_age=0.0))
    assert cp.runtime is None
    m = js(np.zeros(7))
    cp.on_joint_state(m)
    assert cp.stats.not_ready == 1 and cp.stats.msgs_out == 0

    order = ["joint7", "joint1", "joint3", "joint2", "joint4", "joint5", "joint6"]
    rt = arm_runtime(order)
    cp.bind(rt)
    bound = cp.bound
    assert bound.rt is rt and bound.shared
    for out, msg in zip(OUTPUTS, bound.msgs):
        buf = getattr(rt, out.term + "_buf")
        assert (msg.effort if out.kind == STATE else msg.data) is buf
        if out.kind == STATE:
            assert list(msg.name) == order
    h = bound.msgs[[o.term for o in OUTPUTS].index("h")]
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
    # no subscriber: b and H are not computed
    assert not cp._need_b and not cp._need_h

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


def test_terms_follow_subscribers_and_switches(rclpy_node):
    cp = ControlPath(rclpy_node, Stats(), rclpy_node.get_logger(), Params())
    names = [o.term for o in OUTPUTS]
    assert cp._needs(range(len(OUTPUTS))) == (True, True)
    assert cp._needs([names.index("g")]) == (False, False)
    assert cp._needs([names.index("h")]) == (False, True)
    cp.configure(Params(publish_bias=False, publish_inertia=False))
    # the switched outputs (b, H) are off, every unswitched one stays on
    assert [o.term for o, on in zip(OUTPUTS, cp.enabled) if on] == [o.term for o in OUTPUTS if not o.switch]
    assert "b" not in [o.term for o, on in zip(OUTPUTS, cp.enabled) if on]
    cp.configure(Params(max_publish_rate=100.0, max_state_age=0.5))
    assert cp.min_period == pytest.approx(0.01) and cp.max_state_age == 0.5
    assert all(cp.enabled)
