#!/usr/bin/env python3
"""Reference for bench/latency.py: the smallest rclpy node doing the node's control job.

One rclpy node, one SingleThreadedExecutor (``--executor events``: rclpy's
EventsExecutor), one joint_states subscription; per message it maps the
joints by name, computes g(q) with rbd_ros.core and publishes it as
``~/gravity_torques_state`` (JointState carrying the input stamp) -- the
topic the latency bench listens to.  No parameters, services, diagnostics,
model swaps or second thread: what the dynamics node costs on top of this is
its own overhead.

    python bench/bare_node.py --ros-args -r __ns:=/x -p joint_states_reliable:=true
"""
import array
import sys

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState

import rbd_ros.core as rbd
from rbd_ros.robots import bundled_robot_path


def main():
    rclpy.init(args=sys.argv)
    node = rclpy.create_node("rbd_dynamics")
    reliable = node.declare_parameter("joint_states_reliable", False).value
    kind = node.declare_parameter("control_executor", "single").value
    with open(bundled_robot_path("rbd_arm7")) as f:
        model = rbd.Model.from_urdf(f.read())
    q = np.array(model.neutral(), dtype=np.float64)
    rbd.gravity(model, q)  # compile / load the cached kernel before the first message
    index = {n: i for i, n in enumerate(model.joint_names)}
    cache = {}
    out = JointState()
    out.name = list(model.joint_names)
    buf = array.array("d", bytes(8 * model.nv))
    g = np.frombuffer(buf, dtype=np.float64)
    pub = node.create_publisher(JointState, "~/gravity_torques_state",
                                QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))

    def on_joint_state(msg):
        key = tuple(msg.name)
        idx = cache.get(key)
        if idx is None:
            idx = cache[key] = np.array([index[n] for n in key], dtype=np.int64)
        q[idx] = msg.position
        g[:] = rbd.gravity(model, q)
        out.effort = buf
        out.header.stamp = msg.header.stamp
        pub.publish(out)

    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE) if reliable \
        else qos_profile_sensor_data
    node.create_subscription(JointState, "joint_states", on_joint_state, qos)
    if kind == "events":
        from rclpy.experimental import EventsExecutor
        ex = EventsExecutor()
    else:
        ex = SingleThreadedExecutor()
    ex.add_node(node)
    try:
        while rclpy.ok():
            ex.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    main()
