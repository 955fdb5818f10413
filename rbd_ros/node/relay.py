"""Trajectory relay for ``joint_trajectory_controller``: ``~/trajectory_in``
(trajectory_msgs/JointTrajectory) -> ``~/trajectory_out``, the same trajectory
with each point's ``effort`` filled by inverse dynamics, so a JTC with an
``effort`` command interface adds it as feed-forward (remap ``~/trajectory_out``
to ``/joint_trajectory_controller/joint_trajectory``).

Where it runs: in the service worker process (service_worker.py), next to the
``~/inverse_dynamics_trajectory`` service, and computed by the very function
that answers that service (``services.inverse_dynamics_trajectory``), so the
relayed efforts are the service's.  That keeps the work of a long trajectory
out of the node's process: for 10 000 points (~2 MB) rclpy spends ~0.3 s of CPU
converting the received message to Python and ~0.06 s serialising the result
here, on a 2-core machine that also runs the control path.  The node resolves
both topic names (its namespace and remappings apply) and hands them to the
worker.  With ``service_process: false`` the relay runs on the node's
background executor like the services.

Joints: by name, in any order; a trajectory may name a subset of the model's joints
(a planning group's, as ``~/retime_trajectory`` returns it), the others are then
held at the latest joint state the node received, at rest (held_state.py).  The
relayed trajectory names the same joints as the one received.

Refusals (nothing is published for that trajectory, one logged line with the
reason): a point whose ``velocities`` or ``accelerations`` do not have one
value per joint (the relay does not guess missing derivatives, unlike the
service, which reads empty arrays as zeros), a floating-base model (the relay
has no base state), joints left out before any joint state arrived, and
anything the ID service itself refuses (unknown joints, NaN, wrong lengths, no
model yet).
"""
from __future__ import annotations

from rbd_ros.node.qos import QOS_OUTPUT
from rbd_ros.node.services import inverse_dynamics_trajectory


def check_derivatives(traj) -> str | None:
    """None if every point has one velocity and one acceleration per joint name,
    else the reason (first offending point and field)."""
    n = len(traj.joint_names)
    if not traj.points:
        return "trajectory.points is empty"
    for i, pt in enumerate(traj.points):
        for field in ("velocities", "accelerations"):
            m = len(getattr(pt, field))
            if m != n:
                what = "missing" if m == 0 else f"has {m} entries"
                return (f"trajectory.points[{i}].{field} {what}, expected {n} (one per "
                        "joint_names): the relay needs every point's velocities and "
                        "accelerations and does not guess them")
    return None


class TrajectoryRelay:
    """Subscription ``in_topic`` -> inverse dynamics -> publisher ``out_topic`` on ``node``.

    get_runtime() returns the current Robot (or None); ``on_count(relayed, refused)``
    (optional) is called after each trajectory with the running totals; ``held()``: the
    node's latest joint state for the joints a trajectory does not name (held_state.py;
    None: every joint must be named)."""

    def __init__(self, node, in_topic: str, out_topic: str, get_runtime, log, on_count=None,
                 held=None):
        # here, not at the top: the node imports this module whether or not rbd_ros_interfaces
        # (the services) exists
        from trajectory_msgs.msg import JointTrajectory

        from rbd_ros_interfaces.srv import InverseDynamicsTrajectory

        self._srv = InverseDynamicsTrajectory
        self.get_runtime = get_runtime
        self.log = log
        self.on_count = on_count
        self.held = held
        self.relayed = 0
        self.refused = 0
        self.pub = node.create_publisher(JointTrajectory, out_topic, QOS_OUTPUT)
        self.sub = node.create_subscription(JointTrajectory, in_topic, self.on_trajectory,
                                            QOS_OUTPUT)
        self.in_topic, self.out_topic = in_topic, out_topic

    def on_trajectory(self, msg):
        reason = check_derivatives(msg)
        rt = self.get_runtime()
        if reason is None and rt is not None and rt.floating:
            reason = ("the model has a floating base: the relay has no base state "
                      "(use the inverse_dynamics_trajectory service with base_poses)")
        if reason is None:
            try:
                resp = inverse_dynamics_trajectory(rt, self._srv.Request(trajectory=msg),
                                                   self._srv.Response(), held=self.held)
                if not resp.success:
                    reason = resp.message
            except Exception as e:  # never let a message kill the process
                reason = f"internal error: {type(e).__name__}: {e}"
        if reason is not None:
            self.refused += 1
            self.log.warning(f"{self.in_topic}: trajectory with {len(msg.points)} points "
                             f"refused, nothing relayed: {reason}")
        else:
            self.pub.publish(resp.trajectory)
            self.relayed += 1
        if self.on_count is not None:
            self.on_count(self.relayed, self.refused)
