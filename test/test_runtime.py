"""rbd_ros.node.robot (ROS-free): merging joint states by name, readiness; the
compensation term's outputs in the output order."""
import array
import logging
import math

import numpy as np
import pytest
from core_util import ARM_JOINTS

import rbd_ros.core as rbd
from rbd_ros.node.compensation import Compensation
from rbd_ros.node.logs import Reporter
from rbd_ros.node.model_build import build_robot
from rbd_ros.node.robot import DROP_DUPLICATE, DROP_NONFINITE, DROP_SIZE
from rbd_ros.robots import bundled_robot_path

ARM = ARM_JOINTS


@pytest.fixture()
def rt():
    with open(bundled_robot_path("rbd_arm7")) as f:
        return build_robot(f.read(), floating_base=False, mimic=True, gravity=[0, 0, -9.81],
                             joints=["joint7", "joint2"], source="test")


def d(values):
    return array.array("d", values)


def test_partial_updates_merge_by_name_and_track_the_oldest(rt):
    assert not rt.ready_after_update(0.0, 0.0)
    st, unknown = rt.update(["joint3", "joint1", "gripper"], d([0.3, 0.1, 9.0]), d([3.0, 1.0, 9.0]), 1.0)
    assert st == "ok" and unknown == ("gripper",)
    assert rt.q[2] == 0.3 and rt.q[0] == 0.1 and rt.v[2] == 3.0 and rt.v[0] == 1.0
    assert not rt.ready_after_update(1.0, 0.0)  # joints never received
    st, _ = rt.update(["joint2", "joint4", "joint5", "joint6", "joint7"], d([0.2, 0.4, 0.5, 0.6, 0.7]),
                      d([]), 2.0)
    assert st == "no_velocity" and rt.v[1] == 0.0
    assert rt.oldest == 1.0 and rt.ready_after_update(2.0, 0.0) and rt.ready(2.0, 0.0)
    assert rt.ready_after_update(2.0, 1.0) and not rt.ready_after_update(2.01, 1.0)
    assert rt.ready(2.0, 1.0) == rt.ready_after_update(2.0, 1.0)
    # a plain list works as well as rclpy's array.array
    st, _ = rt.update(ARM, [0.0] * 7, [0.5] * 7, 3.0)
    assert st == "ok" and rt.oldest == 3.0 and np.all(rt.v == 0.5)


def test_bad_messages_leave_the_state_untouched(rt):
    rt.update(ARM, d(np.linspace(0, 0.6, 7)), d([0.1] * 7), 1.0)
    q0, v0, s0 = rt.q.copy(), rt.v.copy(), rt.stamp.copy()
    cases = [
        ((["joint1", "joint2"], d([0.0, math.nan]), d([0.0, 0.0])), DROP_NONFINITE,
         "non-finite position for ['joint2']"),
        ((["joint1", "joint2"], d([0.0, 0.0]), d([math.inf, -math.inf])), DROP_NONFINITE,
         "non-finite velocity for ['joint1', 'joint2']"),
        ((["joint1", "joint2"], d([0.0]), d([])), DROP_SIZE, "position has 1 entries for 2 names"),
        ((["joint1", "joint2"], d([0.0, 0.0]), d([0.0])), DROP_SIZE, "velocity has 1 entries"),
        ((["joint1", "joint1"], d([0.0, 0.0]), d([])), DROP_DUPLICATE, "appears twice"),
    ]
    for args, status, text in cases:
        st, detail = rt.update(*args, 5.0)
        assert st == status and text in detail, (st, detail)
        assert np.array_equal(rt.q, q0) and np.array_equal(rt.v, v0) and np.array_equal(rt.stamp, s0)
    # a NaN on a joint the model does not know is ignored
    st, _ = rt.update(["joint1", "gripper"], d([0.25, math.nan]), d([0.0, math.nan]), 6.0)
    assert st == "ok" and rt.q[0] == 0.25


def test_compute_fills_the_output_order(rt):
    rng = np.random.default_rng(0)
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    rt.update(ARM, d(q), d(v), 1.0)
    comp = Compensation(rt, Reporter(logging.getLogger("test")))
    assert comp.compute(frozenset({"g", "b", "h"}), 1.0, 1.0)
    idx = [6, 1]
    assert np.array_equal(comp.g, rbd.gravity(rt.model, q)[idx])
    assert np.array_equal(comp.b, rbd.bias(rt.model, q, v)[idx])
    assert np.array_equal(np.asarray(comp.h).reshape(2, 2), rbd.crba(rt.model, q)[np.ix_(idx, idx)])
    # the numpy views write into the array.array buffers the messages hold
    assert list(comp.buffer("g")) == list(comp.g)
