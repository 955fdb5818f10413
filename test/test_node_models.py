"""Every model the core accepts runs in the node (real DDS): a massless leaf link
(singular H: g, b, H and inverse dynamics work, forward dynamics is refused per
request) and a URDF ``floating`` joint (taken as the floating base)."""
import re

import numpy as np
from core_util import close_rel
from geometry_msgs.msg import Pose, Twist
from ros_harness import (
    ARM_JOINTS,
    Float64MultiArray,
    JointState,
    NodeProcess,
    array_of,
    joint_state,
    publish_until,
    read_arm_urdf,
    unique_ns,
    wait_for,
)

import rbd_ros.core as rbd
from rbd_ros_interfaces.srv import ForwardDynamics, InverseDynamics


def massless_leaf_urdf():
    """The bundled arm with link7 (moved by joint7) stripped of its <inertial>."""
    text = read_arm_urdf()
    out = re.sub(r'(<link name="link7">)\s*<inertial>.*?</inertial>', r"\1", text, flags=re.S)
    assert out != text and out.count("<inertial>") == text.count("<inertial>") - 1
    return out


def floating_urdf():
    """The bundled arm on a URDF floating joint (world -> link0) instead of a fixed one."""
    text = read_arm_urdf()
    old = '<joint name="world_to_base" type="fixed">'
    assert text.count(old) == 1
    return text.replace(old, '<joint name="world_to_base" type="floating">')


def start(client, urdf, **extra):
    node = NodeProcess(unique_ns("mdl"), {"robot_description": urdf, "max_state_age": 2.0,
                                          **extra})
    rec = {k: client.record(t, node.topic(topic)) for k, t, topic in (
        ("gs", JointState, "gravity_torques_state"), ("bs", JointState, "bias_torques_state"),
        ("h", Float64MultiArray, "inertia_matrix"))}
    return node, rec


def test_massless_leaf_runs_and_refuses_only_forward_dynamics(client):
    urdf = massless_leaf_urdf()
    model = rbd.Model.from_urdf(urdf)
    rng = np.random.default_rng(11)
    q, v = rng.uniform(-1.2, 1.2, 7), rng.uniform(-1, 1, 7)
    H = rbd.crba(model, q)
    assert np.all(H[6] == 0.0)  # joint7 moves no mass: H is singular
    node, rec = start(client, urdf)
    try:
        pub = client.publisher(JointState, f"/{node.ns}/joint_states")
        sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q, v), rec["gs"],
                                  timeout=90)
        assert got is not None, node.log()
        assert close_rel(got.effort, rbd.gravity(model, q))
        assert wait_for(lambda: rec["bs"].by_stamp(sent.header.stamp) is not None, 5)
        assert close_rel(rec["bs"].by_stamp(sent.header.stamp).effort, rbd.bias(model, q, v))
        assert wait_for(lambda: rec["h"].latest() is not None
                        and close_rel(array_of(rec["h"].latest()).reshape(7, 7), H), 5)
        # said by the service worker once its warm-up found it (the node runs no FD)
        assert wait_for(lambda: "forward dynamics is not available" in node.log(), 60), node.log()

        a = rng.uniform(-2, 2, 7)
        req = InverseDynamics.Request(name=ARM_JOINTS, position=q.tolist(),
                                      velocity=v.tolist(), acceleration=a.tolist())
        resp = client.call(InverseDynamics, node.topic("inverse_dynamics"), req, timeout=60)
        assert resp.success, resp.message
        assert close_rel(resp.effort, rbd.rnea(model, q, v, a))

        req = ForwardDynamics.Request(name=ARM_JOINTS, position=q.tolist(),
                                      velocity=v.tolist(), effort=[0.0] * 7)
        resp = client.call(ForwardDynamics, node.topic("forward_dynamics"), req, timeout=60)
        assert not resp.success
        assert "singular" in resp.message and "massless" in resp.message, resp.message
        assert len(resp.acceleration) == 0
        # the node and its services keep working after the refusal
        resp = client.call(InverseDynamics, node.topic("inverse_dynamics"),
                           InverseDynamics.Request(name=ARM_JOINTS, position=q.tolist()))
        assert resp.success and close_rel(resp.effort, rbd.gravity(model, q))
        assert node.alive()
    finally:
        node.stop()


def test_urdf_floating_joint_is_the_floating_base(client):
    urdf = floating_urdf()
    model = rbd.Model.from_urdf(urdf)
    assert model.nq == 14 and model.nv == 13 and model.joint_names[0] == "world_to_base"
    rng = np.random.default_rng(12)
    q, v = rng.uniform(-1.2, 1.2, 7), rng.uniform(-1, 1, 7)
    node, rec = start(client, urdf)
    try:
        pub = client.publisher(JointState, f"/{node.ns}/joint_states")
        sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q, v), rec["gs"],
                                  timeout=90)
        assert got is not None, node.log()
        # topics: the base at the neutral pose, at rest; outputs are the 7 arm joints
        qf = np.array(model.neutral(), dtype=float)
        qf[7:] = q
        vf = np.r_[np.zeros(6), v]
        assert list(got.name) == ARM_JOINTS
        assert close_rel(got.effort, rbd.gravity(model, qf)[6:])
        assert wait_for(lambda: rec["bs"].by_stamp(sent.header.stamp) is not None, 5)
        assert close_rel(rec["bs"].by_stamp(sent.header.stamp).effort, rbd.bias(model, qf, vf)[6:])
        assert "+ floating base" in node.log()

        # services take the base state in base_* fields, like floating_base: true
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        base_q = np.r_[rng.uniform(-1, 1, 3), quat]
        base_v = rng.uniform(-1, 1, 6)
        p = Pose()
        p.position.x, p.position.y, p.position.z = base_q[:3].tolist()
        (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w) = base_q[3:].tolist()
        t = Twist()
        t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = \
            base_v.tolist()
        req = InverseDynamics.Request(name=ARM_JOINTS, position=q.tolist(), velocity=v.tolist(),
                                      base_pose=p, base_velocity=t)
        resp = client.call(InverseDynamics, node.topic("inverse_dynamics"), req, timeout=60)
        assert resp.success, resp.message
        tau = rbd.rnea(model, np.r_[base_q, q], np.r_[base_v, v], np.zeros(13))
        assert close_rel(resp.effort, tau[6:])
        w = resp.base_wrench
        assert close_rel([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z],
                     tau[:6])
        # world_to_base is not a joint DOF of the node
        req = InverseDynamics.Request(name=ARM_JOINTS + ["world_to_base"],
                                      position=q.tolist() + [0.0])
        resp = client.call(InverseDynamics, node.topic("inverse_dynamics"), req)
        assert not resp.success and "world_to_base" in resp.message
        assert node.alive()
    finally:
        node.stop()


def test_second_floating_joint_is_refused_with_the_reason(client):
    """floating_base: true on top of a URDF floating joint: two free-flyers."""
    node, rec = start(client, floating_urdf(), floating_base=True)
    try:
        assert wait_for(lambda: "rejected" in node.log(), timeout=90), node.log()
        log = node.log()
        assert "joint 'world_to_base': a floating joint that is not the model's first joint" \
            in log, log
        assert "not both" in log
        assert node.alive()
    finally:
        node.stop()
