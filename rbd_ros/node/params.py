"""The node's parameters: the declaration table and a typed snapshot (``Params``).

``declare(node)`` declares every parameter; ``read(node)`` returns a ``Params``;
``Params.updated(changes)`` is the snapshot a set-parameters request would give
(the on-set callback validates and builds from it before accepting).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os

from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, ParameterType, ParameterValue
from rclpy.exceptions import ParameterUninitializedException
from rclpy.parameter import Parameter

from rbd_ros import robots

# changing one of these rebuilds the model (off the control path) and swaps it in
STRUCTURAL = ("robot_description", "urdf_file", "joints", "gravity", "floating_base", "mimic")


def _desc(text, ptype, read_only=False, **kw):
    return ParameterDescriptor(description=text, type=ptype, read_only=read_only, **kw)


PARAMETERS = [
    # name, default, descriptor
    ("robot_description", "", _desc(
        "URDF XML of the robot. Non-empty: used instead of waiting for the robot_description "
        "topic (a later topic message still replaces it).", ParameterType.PARAMETER_STRING)),
    ("urdf_file", "", _desc(
        "Path of a URDF file, or the name of a robot bundled with rbd_ros (rbd_arm7). Used when "
        "robot_description is empty.", ParameterType.PARAMETER_STRING)),
    ("joints", Parameter.Type.STRING_ARRAY, _desc(
        "Output joint order (and subset) of the torque and inertia topics; unset or empty: every "
        "DOF of the model in model order.", ParameterType.PARAMETER_STRING_ARRAY)),
    ("gravity", [0.0, 0.0, -9.81], _desc(
        "Gravity vector in the root/world frame (m/s^2), 3 numbers; tilt it for wall or "
        "inclined mounts.", ParameterType.PARAMETER_DOUBLE_ARRAY)),
    ("floating_base", False, _desc(
        "Add a free-flyer root joint (legged/mobile robots). The topic path keeps the base at the "
        "world origin, upright and at rest; the single-state services take base_pose etc.",
        ParameterType.PARAMETER_BOOL)),
    ("mimic", True, _desc(
        "Honour URDF <mimic> joints (not DOFs; their torque folds into the master). false: mimic "
        "joints are independent DOFs.", ParameterType.PARAMETER_BOOL)),
    ("publish_bias", True, _desc(
        "Also publish the bias torques C(q,qd)qd + g(q).", ParameterType.PARAMETER_BOOL)),
    ("publish_inertia", True, _desc(
        "Also publish the joint-space inertia matrix H(q).", ParameterType.PARAMETER_BOOL)),
    ("joint_states_reliable", False, _desc(
        "Subscribe to joint_states with reliable QoS (depth 10) instead of sensor-data QoS "
        "(best effort, depth 5).", ParameterType.PARAMETER_BOOL, read_only=True)),
    ("max_state_age", 0.1, _desc(
        "Compute only when every DOF has a position received no longer than this many seconds "
        "ago (0: no age limit).", ParameterType.PARAMETER_DOUBLE,
        floating_point_range=[FloatingPointRange(from_value=0.0, to_value=3600.0)])),
    ("max_publish_rate", 0.0, _desc(
        "Upper limit of the output rate in Hz (0: compute and publish on every joint_states "
        "message).", ParameterType.PARAMETER_DOUBLE,
        floating_point_range=[FloatingPointRange(from_value=0.0, to_value=100000.0)])),
    ("diagnostics_period", 1.0, _desc(
        "Period of the /diagnostics status in seconds.", ParameterType.PARAMETER_DOUBLE,
        read_only=True)),
    ("service_threads", 0, _desc(
        "numba threads for batch (trajectory) service work; 0: one less than the CPU count "
        "(at least 1), so a long query leaves a core to the control path.",
        ParameterType.PARAMETER_INTEGER, read_only=True)),
    ("service_process", True, _desc(
        "Serve the dynamics services from a worker process (own interpreter and DDS "
        "participant): long trajectory requests then never stall the torque stream. false: "
        "serve them from the background thread of this process.",
        ParameterType.PARAMETER_BOOL, read_only=True)),
    ("control_executor", "events", _desc(
        "Executor of the control path: 'events' (rclpy.experimental.EventsExecutor, in a "
        "spin_once loop; falls back to 'single' where rclpy lacks it) or 'single' (rclpy "
        "SingleThreadedExecutor).", ParameterType.PARAMETER_STRING, read_only=True)),
]

# Real-robot terms of the model (payload.py): armature rebuilds the model (structural);
# the payload_* parameters are the payloads at start-up only (read-only: at run time
# payloads come from ~/set_payload and ~/payload)
ROBOT_PARAMETERS = [
    ("armature", Parameter.Type.DOUBLE_ARRAY, _desc(
        "Rotor inertia reflected to each joint (I_rotor * gear_ratio^2; kg m^2 for revolute, kg "
        "for prismatic joints), one value >= 0 per joint in `joints` order (every DOF in model "
        "order when `joints` is empty); unset/empty: zero. Adds diag(armature) to H and "
        "armature * qdd to inverse dynamics. Changing it rebuilds the model.",
        ParameterType.PARAMETER_DOUBLE_ARRAY)),
    ("payload_links", Parameter.Type.STRING_ARRAY, _desc(
        "Start-up payloads: the URDF links they are attached to (one payload per link).",
        ParameterType.PARAMETER_STRING_ARRAY, read_only=True)),
    ("payload_masses", Parameter.Type.DOUBLE_ARRAY, _desc(
        "Start-up payloads: mass in kg, one per payload_links entry.",
        ParameterType.PARAMETER_DOUBLE_ARRAY, read_only=True)),
    ("payload_coms", Parameter.Type.DOUBLE_ARRAY, _desc(
        "Start-up payloads: centre of mass in the link frame (m), 3 values (x y z) per "
        "payload_links entry.", ParameterType.PARAMETER_DOUBLE_ARRAY, read_only=True)),
    ("payload_inertias", Parameter.Type.DOUBLE_ARRAY, _desc(
        "Start-up payloads: inertia about the centre of mass in link axes (kg m^2), 6 values "
        "(ixx ixy ixz iyy iyz izz) per payload_links entry.",
        ParameterType.PARAMETER_DOUBLE_ARRAY, read_only=True)),
]
PARAMETERS += ROBOT_PARAMETERS
STRUCTURAL += ("armature",)
# ~/effort_command and ~/desired_state (command.py: the laws); all changeable at run time,
# checked against the model's output joints before they are accepted
COMMAND_PARAMETERS = [
    ("command_mode", "gravity", _desc(
        "What ~/effort_command carries: 'gravity' = g(q); 'feedforward' = RNEA(q_d, qd_d, qdd_d) "
        "of the latest ~/desired_state; 'computed_torque' = H(q)(qdd_d + kp (q_d - q) + "
        "kd (qd_d - qd)) + b(q, qd). Without a fresh desired state the last two fall back to "
        "g(q) - hold_damping qd.", ParameterType.PARAMETER_STRING)),
    ("command_friction", False, _desc(
        "Add the URDF joint friction damping qd + friction tanh(qd / friction_velocity_eps) to "
        "~/effort_command (at the measured qd; at qd_d in feedforward mode) and to "
        "~/feedforward_torques (at qd_d).", ParameterType.PARAMETER_BOOL)),
    ("friction_velocity_eps", 0.01, _desc(
        "Velocity (rad/s or m/s) smoothing the Coulomb friction term: tanh(qd / eps).",
        ParameterType.PARAMETER_DOUBLE)),
    ("kp", Parameter.Type.DOUBLE_ARRAY, _desc(
        "computed_torque position gains (1/s^2), one value or one per joint in `joints` order "
        "(required for computed_torque).", ParameterType.PARAMETER_DOUBLE_ARRAY)),
    ("kd", Parameter.Type.DOUBLE_ARRAY, _desc(
        "computed_torque velocity gains (1/s), one value or one per joint in `joints` order "
        "(required for computed_torque).", ParameterType.PARAMETER_DOUBLE_ARRAY)),
    ("hold_damping", [1.0], _desc(
        "K_hold of the fallback command g(q) - K_hold qd (N m s/rad or N s/m), one value or one "
        "per joint in `joints` order.", ParameterType.PARAMETER_DOUBLE_ARRAY)),
    ("max_desired_age", 0.1, _desc(
        "A desired state received longer ago than this many seconds is stale: the command falls "
        "back to the damped gravity hold (0: never stale).", ParameterType.PARAMETER_DOUBLE)),
    ("clamp_effort", True, _desc(
        "Clamp ~/effort_command to +-the effort limits (effort_limits, else the URDF's "
        "<limit effort>).", ParameterType.PARAMETER_BOOL)),
    ("effort_limits", Parameter.Type.DOUBLE_ARRAY, _desc(
        "Effort limits (N m or N) overriding the URDF's, one value or one per joint in `joints` "
        "order; .inf = no limit. Empty: the URDF's (a joint without one is not clamped).",
        ParameterType.PARAMETER_DOUBLE_ARRAY)),
]
COMMAND = tuple(name for name, _, _ in COMMAND_PARAMETERS)
PARAMETERS += COMMAND_PARAMETERS


@dataclasses.dataclass(frozen=True)
class Params:
    """One consistent snapshot of every parameter (field names = parameter names)."""
    robot_description: str = ""
    urdf_file: str = ""
    joints: tuple = ()
    gravity: tuple = (0.0, 0.0, -9.81)
    floating_base: bool = False
    mimic: bool = True
    publish_bias: bool = True
    publish_inertia: bool = True
    joint_states_reliable: bool = False
    max_state_age: float = 0.1
    max_publish_rate: float = 0.0
    diagnostics_period: float = 1.0
    service_threads: int = 0
    service_process: bool = True
    control_executor: str = "events"
    # real-robot terms (ROBOT_PARAMETERS)
    armature: tuple = ()
    payload_links: tuple = ()
    payload_masses: tuple = ()
    payload_coms: tuple = ()
    payload_inertias: tuple = ()
    # command (COMMAND_PARAMETERS)
    command_mode: str = "gravity"
    command_friction: bool = False
    friction_velocity_eps: float = 0.01
    kp: tuple = ()
    kd: tuple = ()
    hold_damping: tuple = (1.0,)
    max_desired_age: float = 0.1
    clamp_effort: bool = True
    effort_limits: tuple = ()

    @classmethod
    def from_values(cls, values: dict) -> "Params":
        v = dict(values)
        v["joints"] = tuple(v.get("joints") or ())
        v["gravity"] = tuple(float(x) for x in v.get("gravity", cls.gravity))
        for name in ("armature", "payload_masses", "payload_coms", "payload_inertias"):
            if name in v:
                v[name] = tuple(float(x) for x in (v[name] or ()))
        if "payload_links" in v:
            v["payload_links"] = tuple(str(x) for x in (v["payload_links"] or ()))
        for name in ("kp", "kd", "hold_damping", "effort_limits"):
            if name in v:
                v[name] = tuple(float(x) for x in (v[name] or ()))
        return cls(**v)

    def updated(self, changes) -> "Params":
        """The snapshot after applying rclpy Parameter objects ``changes``."""
        return Params.from_values(dict(dataclasses.asdict(self),
                                       **{p.name: p.value for p in changes}))

    # -- derived values
    @property
    def min_publish_period(self) -> float:
        return 1.0 / self.max_publish_rate if self.max_publish_rate > 0 else 0.0

    @property
    def numba_threads(self) -> int:
        """service_threads, with 0 meaning one less than the CPU count (at least 1)."""
        if self.service_threads > 0:
            return self.service_threads
        return max(1, (os.cpu_count() or 2) - 1)

    def gravity_error(self):
        """None, or why the gravity value is refused."""
        g = self.gravity
        if len(g) != 3 or not all(math.isfinite(x) for x in g):
            return f"gravity: expected 3 finite numbers, got {list(g)}"
        return None

    def description(self):
        """(URDF text, where it came from) from robot_description or urdf_file, or None.
        Raises ValueError/OSError if urdf_file names no readable file."""
        return robots.read_description(self.urdf_file, self.robot_description)


def parameter_value(value):
    """A Python value as an rcl_interfaces ParameterValue, typed as this node's
    parameters are: str, bool, a list of str, numbers (int or float) as doubles,
    and any other sequence (empty included) as a double array.  For clients
    that set the node's parameters (tests, the demo).  A ParameterValue passes as it is."""
    if isinstance(value, ParameterValue):
        return value
    if isinstance(value, str):
        return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    if isinstance(value, bool):
        return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    if isinstance(value, (int, float)):
        return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(value))
    value = list(value)
    if value and all(isinstance(x, str) for x in value):
        return ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=value)
    return ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                          double_array_value=[float(x) for x in value])


def declare(node) -> None:
    """Declare every parameter, each with a value (``ros2 param dump`` and ``get``: rclpy's
    get_parameters service answers nothing at all for a request naming a parameter that has
    no value).  An array parameter whose table default is its type (``Parameter.Type.X``)
    starts as an empty array of that type, unless an override (params file, ``-p``) gives
    it a value."""
    for name, default, descriptor in PARAMETERS:
        if isinstance(default, Parameter.Type):
            _declare_empty_array(node, name, default, descriptor)
        else:
            node.declare_parameter(name, default, descriptor)


def _declare_empty_array(node, name: str, ptype, descriptor) -> None:
    """rclpy 7.1 (Jazzy) cannot declare a typed empty array directly: it takes a ``[]``
    default for a byte array (then refuses a string or double array from a params file or
    ``ros2 param set``), and a parameter declared with its type alone has no value.  So:
    declare it with its type, writable; if no override set it, set a typed empty array;
    then apply the real descriptor (read-only ones become read-only only now)."""
    writable = copy.copy(descriptor)
    writable.read_only = False
    node.declare_parameter(name, ptype, writable)
    try:
        node.get_parameter(name)
    except ParameterUninitializedException:
        node.set_parameters([Parameter(name, ptype, [])])
    if descriptor.read_only:
        node.set_descriptor(name, descriptor)


def read(node) -> Params:
    values = {}
    for name, _, _ in PARAMETERS:
        try:
            values[name] = node.get_parameter(name).value
        except ParameterUninitializedException:  # joints: declared without a value
            values[name] = None
    return Params.from_values(values)
