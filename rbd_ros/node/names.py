"""Names of everything the node exposes (one place; relative names resolve against
the node: ``~/`` = ``/<namespace>/<node name>/``).  Plain strings: importing this
module needs no ROS (the ROS-free control step, ``terms.py``, uses it); the QoS
profiles are in ``qos.py``."""
from __future__ import annotations

DEFAULT_NAME = "rbd_dynamics"

# inputs
TOPIC_JOINT_STATES = "joint_states"
TOPIC_DESCRIPTION = "robot_description"
TOPIC_DESIRED = "~/desired_state"               # trajectory_msgs/JointTrajectory, one point
TOPIC_CONTACTS = "~/contacts"                   # rbd_ros_interfaces/Contacts: the links in contact now
# (the base state's topic is the parameter base_state_topic: nav_msgs/Odometry)
# outputs of the control path
TOPIC_GRAVITY = "~/gravity_torques"
TOPIC_GRAVITY_STATE = "~/gravity_torques_state"
TOPIC_BIAS = "~/bias_torques"
TOPIC_BIAS_STATE = "~/bias_torques_state"
TOPIC_INERTIA = "~/inertia_matrix"
TOPIC_CONSTRAINT_FORCES = "~/constraint_forces"  # rbd_ros_interfaces/ConstraintForces (closed loops: λ)
TOPIC_CONTACT_FORCES = "~/contact_forces"       # rbd_ros_interfaces/ConstraintForces (contacts: λ per contact)
TOPIC_EFFORT_COMMAND = "~/effort_command"       # for forward_command_controller ~/commands
TOPIC_EFFORT_COMMAND_STATE = "~/effort_command_state"
TOPIC_FEEDFORWARD = "~/feedforward_torques"     # on each desired state
TOPIC_FEEDFORWARD_STATE = "~/feedforward_torques_state"
# contact (the momentum observer, parameter observer)
TOPIC_EXTERNAL_TORQUES = "~/external_torques"   # sensor_msgs/JointState, effort = estimated tau_ext
TOPIC_EXTERNAL_WRENCH = "~/external_wrench"     # geometry_msgs/WrenchStamped at contact_frame
TOPIC_COLLISION = "~/collision"                 # rbd_ros_interfaces/msg/Collision
SRV_RESET_OBSERVER = "~/reset_observer"         # std_srvs/Trigger
TOPIC_DIAGNOSTICS = "/diagnostics"
# services (answered in process or by the service worker, see worker_client.py)
SRV_ID = "~/inverse_dynamics"
SRV_ID_TRAJ = "~/inverse_dynamics_trajectory"
SRV_FD = "~/forward_dynamics"
SRV_FD_TRAJ = "~/forward_dynamics_trajectory"
SRV_RETIME = "~/retime_trajectory"              # rbd_ros_interfaces/srv/RetimeTrajectory (planner_services.py)
SRV_PAYLOAD_CAPACITY = "~/payload_capacity"     # rbd_ros_interfaces/srv/PayloadCapacity
SRV_CID = "~/constrained_inverse_dynamics"      # rbd_ros_interfaces/srv/ConstrainedInverseDynamics
SRV_CFD = "~/constrained_forward_dynamics"      # rbd_ros_interfaces/srv/ConstrainedForwardDynamics
# payloads at run time (dynamics_node.py, payload.py)
TOPIC_PAYLOAD = "~/payload"                     # geometry_msgs/InertiaStamped, latched
SRV_SET_PAYLOAD = "~/set_payload"               # rbd_ros_interfaces/srv/SetPayload
SRV_ESTIMATE_PAYLOAD = "~/estimate_payload"     # rbd_ros_interfaces/srv/EstimatePayload
# trajectory relay (relay.py; runs where the services run)
TOPIC_TRAJECTORY_IN = "~/trajectory_in"
TOPIC_TRAJECTORY_OUT = "~/trajectory_out"
