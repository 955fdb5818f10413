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
# trajectory relay (relay.py; runs where the services run)
TOPIC_TRAJECTORY_IN = "~/trajectory_in"
TOPIC_TRAJECTORY_OUT = "~/trajectory_out"

QOS_DESCRIPTION = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
QOS_JOINT_STATES_RELIABLE = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                                       reliability=ReliabilityPolicy.RELIABLE,
                                       durability=DurabilityPolicy.VOLATILE)
QOS_OUTPUT = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
