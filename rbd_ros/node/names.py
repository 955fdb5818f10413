"""Names and QoS of everything the node exposes (one place; relative names resolve
against the node: ``~/`` = ``/<namespace>/<node name>/``)."""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

DEFAULT_NAME = "rbd_dynamics"

# inputs
TOPIC_JOINT_STATES = "joint_states"
TOPIC_DESCRIPTION = "robot_description"
# outputs of the control path
TOPIC_GRAVITY = "~/gravity_torques"
TOPIC_GRAVITY_STATE = "~/gravity_torques_state"
TOPIC_BIAS = "~/bias_torques"
TOPIC_BIAS_STATE = "~/bias_torques_state"
TOPIC_INERTIA = "~/inertia_matrix"
TOPIC_DIAGNOSTICS = "/diagnostics"
# services (answered in process or by the service worker, see worker_client.py)
SRV_ID = "~/inverse_dynamics"
SRV_ID_TRAJ = "~/inverse_dynamics_trajectory"
SRV_FD = "~/forward_dynamics"
SRV_FD_TRAJ = "~/forward_dynamics_trajectory"
# payloads at run time (dynamics_node.py, payload.py)
TOPIC_PAYLOAD = "~/payload"                     # geometry_msgs/InertiaStamped, latched
SRV_SET_PAYLOAD = "~/set_payload"               # rbd_ros_interfaces/srv/SetPayload

QOS_DESCRIPTION = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
QOS_JOINT_STATES_RELIABLE = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                                       reliability=ReliabilityPolicy.RELIABLE,
                                       durability=DurabilityPolicy.VOLATILE)
QOS_OUTPUT = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
# ~/payload: reliable + transient local, so a gripper driver can latch what it holds
QOS_PAYLOAD = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
