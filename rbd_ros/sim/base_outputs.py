"""The sim driver's outputs for a floating-base robot on the ground: the base state
(nav_msgs/Odometry on ``base_state_topic``) and the feet's contact forces
(``~/contact_forces``, rbd_ros_interfaces/ConstraintForces), published with every joint
state under its stamp.  The conventions are :mod:`rbd_ros.sim.floating`'s."""
from __future__ import annotations

import numpy as np

from .floating import BaseState, FootForces


class BaseOutputs:
    """``node``: the driver's rclpy node; ``mjm``, ``model``: the simulated MuJoCo model and
    its rbd_ros twin; ``p``: the driver's :class:`~rbd_ros.sim.params.SimParams`."""

    def __init__(self, node, mjm, model, p):
        # ROS messages imported here, as the driver does (its --help starts nothing heavy)
        from nav_msgs.msg import Odometry

        self.base = BaseState(mjm) if p.floating_base else None
        self.pub_odom = None
        if self.base is not None and p.base_state_topic:
            self.odom = Odometry()
            self.odom.header.frame_id = p.odom_frame_id
            self.odom.child_frame_id = model.link_names[0]          # the root link: the base frame
            self.pub_odom = node.create_publisher(Odometry, p.base_state_topic, 10)
        self.feet = None
        if p.contact_links:
            from rbd_ros_interfaces.msg import ConstraintForce, ConstraintForces  # (as Odometry above)

            self.feet = FootForces(mjm, p.contact_links)
            self.world_axes = p.contact_forces_frame == "world"
            self.forces = ConstraintForces(feasible=True, violation=0.0)
            self.forces.header.frame_id = "world" if self.world_axes else ""
            self.forces.constraints = [ConstraintForce(name=link, frame_id=link, mask=[1, 1, 1, 0, 0, 0])
                                       for link in p.contact_links]
            self.pub_forces = node.create_publisher(ConstraintForces, "~/contact_forces", 10)
            self._f = np.zeros((len(p.contact_links), 3))

    def publish(self, data, stamp_sec: int, stamp_nsec: int) -> None:
        """The base state and (when someone listens) the contact forces of ``data`` now."""
        if self.pub_odom is not None:
            msg = self.odom
            msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_sec, stamp_nsec
            x = self.base.pose(data)
            pose = msg.pose.pose
            pose.position.x, pose.position.y, pose.position.z = float(x[0]), float(x[1]), float(x[2])
            o = pose.orientation
            o.x, o.y, o.z, o.w = float(x[3]), float(x[4]), float(x[5]), float(x[6])
            v = self.base.twist(data)
            t = msg.twist.twist
            t.linear.x, t.linear.y, t.linear.z = float(v[0]), float(v[1]), float(v[2])
            t.angular.x, t.angular.y, t.angular.z = float(v[3]), float(v[4]), float(v[5])
            self.pub_odom.publish(msg)
        if self.feet is not None and self.pub_forces.get_subscription_count() > 0:
            f = self.feet.world(data, self._f)
            if not self.world_axes:
                f = self.feet.local(data, f)
            msg = self.forces
            msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_sec, stamp_nsec
            for c, fk in zip(msg.constraints, f):
                c.wrench.force.x, c.wrench.force.y, c.wrench.force.z = float(fk[0]), float(fk[1]), float(fk[2])
            self.pub_forces.publish(msg)
