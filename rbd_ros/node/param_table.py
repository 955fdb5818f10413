"""The node's parameters, declared once (ROS-free): name, type, default, bounds or
choices, unit, description, and whether a change rebuilds the model (structural),
re-configures the control path (run-time) or is refused (read-only).

From this table follow the rclpy declarations and descriptors (``params.declare``),
the typed snapshot ``Params`` (``params.py``), the value checks every way of setting
a parameter goes through (``check``), ``config/dynamics.yaml`` and the parameter
table of ``doc/parameters.md`` (``python -m rbd_ros.node.param_table --yaml`` /
``--markdown``; test_node_config checks the committed files are what this table
generates).  The idea of ros2_controllers' generate_parameter_library
(``pid_controller.yaml``), written in Python.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

# types
STRING, BOOL, DOUBLE, INT, STRINGS, DOUBLES = "string", "bool", "double", "int", "string[]", "double[]"


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: object
    text: str
    group: str
    unit: str = ""
    range: tuple = None          # (lo, hi), inclusive, for double / int / each double[] entry
    choices: tuple = None        # allowed strings
    structural: bool = False     # a change rebuilds the model (off the control path), refused if it fails
    read_only: bool = False      # set at start-up only
    example: object = None       # a value for the YAML's comment where the default is empty
    length: int = None           # a double[] of exactly this many numbers

    @property
    def python_default(self):
        return tuple(self.default) if isinstance(self.default, list) else self.default


G_MODEL, G_OUT, G_CMD, G_ROBOT, G_OBS, G_EST, G_PROC = ("Robot model", "Outputs", "Effort command",
                                                        "Real-robot terms", "Contact (momentum observer)",
                                                        "Payload estimation (~/estimate_payload)",
                                                        "Processes and executors")
G_LOOPS = "Closed loops (parallel mechanisms)"
G_CONTACTS = "Contacts (legged robots on the ground)"

TABLE = (
    Param("robot_description", STRING, "", "URDF XML of the robot. Non-empty: used instead of waiting for the "
          "robot_description topic (a later topic message still replaces it).", G_MODEL, structural=True),
    Param("urdf_file", STRING, "", "Path of a URDF file, or the name of a robot bundled with rbd_ros (rbd_arm7). "
          "Used when robot_description is empty.", G_MODEL, structural=True),
    Param("joints", STRINGS, [], "Output joint order (and subset) of the torque and inertia topics; empty: every "
          "DOF of the model in model order (with closed loops: actuated_joints). DOF names: a 1-DOF joint is its "
          "joint name; a planar joint gives "
          "<joint>/x, <joint>/y, <joint>/theta.", G_MODEL, structural=True,
          example=["joint1", "joint2", "joint3", "joint4", "joint5", "joint6", "joint7"]),
    Param("gravity", DOUBLES, [0.0, 0.0, -9.81], "Gravity vector in the root/world frame; tilt it for wall or "
          "inclined mounts.", G_MODEL, unit="m/s^2", range=(-1e4, 1e4), length=3, structural=True),
    Param("floating_base", BOOL, False, "Add a free-flyer root joint (legged/mobile robots). Without contacts the "
          "topic path keeps the base at the world origin, upright and at rest (with contacts: base_state_topic); the "
          "single-state services take base_pose etc.",
          G_MODEL, structural=True),
    Param("mimic", BOOL, True, "Honour URDF <mimic> joints (not DOFs; their torque folds into the master). "
          "false: mimic joints are independent DOFs.", G_MODEL, structural=True),
    # closed loops (loops.py; doc/constraints.md)
    Param("actuated_joints", STRINGS, [], "The joints driven by actuators; required when the model has closed loops "
          "(URDF <constraint> elements or constraints_file), ignored otherwise. The other joints are passive: "
          "joint_states may leave them out (the node completes them; one it receives only seeds that), and `joints` "
          "defaults to these.", G_LOOPS, structural=True, example=["shoulder1", "shoulder2", "shoulder3"]),
    Param("constraints_file", STRING, "", "Path of a YAML file of loop closures added to the URDF's (for robots "
          "whose URDF cannot be edited; doc/constraints.md).", G_LOOPS, structural=True),
    Param("initial_positions", DOUBLES, [], "Closed loops: one position per joint DOF in model order, from which "
          "the loops are closed when the model is loaded (it picks the assembly branch; a model whose loops cannot "
          "be closed there is refused); empty: zero.", G_LOOPS, unit="rad or m", range=(-1e6, 1e6),
          structural=True, example=[0.0, 0.0, 0.0]),
    Param("loop_cond_limit", DOUBLE, 1000.0, "Closed loops: a joint state whose passive-joint block J_P has a "
          "condition estimate above this is near a singular configuration, where actuator torques diverge: nothing "
          "is published for it (diagnostics name the constraint).", G_LOOPS, range=(1.0, 1e12)),
    # contacts (contacts.py; doc/contacts.md)
    Param("contacts", STRINGS, [], "Floating base: the links in contact with the ground by default (e.g. the four "
          "feet); ~/contacts replaces the set per step. Non-empty: g, b and the effort command are the joint torques "
          "that hold or move the robot on its contacts (friction cones), ~/contact_forces the forces, and the base "
          "comes from base_state_topic. Empty: no contacts (the base held at the origin).", G_CONTACTS,
          structural=True, example=["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]),
    Param("contact_type", STRINGS, [], "One value, or one per entry of contacts: point (a point foot, 3 force "
          "rows) or flat (a sole: a weld, 6 rows, its centre of pressure inside sole_size); empty: point.",
          G_CONTACTS, structural=True, example=["point"]),
    Param("friction_coefficient", DOUBLE, 0.7, "Coulomb friction coefficient of the contacts (the pyramid inscribed "
          "in the cone, |f_t| <= mu/sqrt(2) f_n per axis; 0: frictionless, normal forces only); ~/contacts may give "
          "one per link.", G_CONTACTS, range=(0.0, 1e3), structural=True),
    Param("sole_size", DOUBLES, [], "Flat contacts: the sole's [length x, width y] about the link's origin (the "
          "centre of pressure stays inside it).", G_CONTACTS, unit="m", range=(1e-6, 1e3), structural=True,
          example=[0.2, 0.13]),
    Param("base_state_topic", STRING, "base_state", "Contacts: the base state (nav_msgs/Odometry: child_frame_id = "
          "the model's root link, pose in the world, twist in the base frame). Empty: none (the contact outputs then "
          "never start).", G_CONTACTS, read_only=True),
    Param("max_base_state_age", DOUBLE, 0.1, "Contacts: a base state received longer ago than this stops the "
          "contact outputs (g, b, effort command, contact forces) until a fresh one arrives (0: no age limit).",
          G_CONTACTS, unit="s", range=(0.0, 3600.0)),
    Param("publish_bias", BOOL, True, "Also publish the bias torques C(q,qd)qd + g(q).", G_OUT),
    Param("publish_inertia", BOOL, True, "Also publish the joint-space inertia matrix H(q).", G_OUT),
    Param("joint_states_reliable", BOOL, False, "Subscribe to joint_states with reliable QoS (depth 10) instead "
          "of sensor-data QoS (best effort, depth 5).", G_OUT, read_only=True),
    Param("max_state_age", DOUBLE, 0.1, "Compute only when every DOF has a position received no longer than this "
          "ago (0: no age limit).", G_OUT, unit="s", range=(0.0, 3600.0)),
    Param("max_publish_rate", DOUBLE, 0.0, "Upper limit of the output rate (0: compute and publish on every "
          "joint_states message).", G_OUT, unit="Hz", range=(0.0, 100000.0)),
    Param("diagnostics_period", DOUBLE, 1.0, "Period of the /diagnostics status.", G_OUT, unit="s",
          range=(0.01, 3600.0), read_only=True),
    # the effort command (effort_law.py); checked against the output joints before accepted
    Param("command_mode", STRING, "gravity", "What ~/effort_command carries: gravity = g(q); feedforward = "
          "RNEA(q_d, qd_d, qdd_d) of the latest ~/desired_state; computed_torque = H(q)(qdd_d + kp (q_d - q) + "
          "kd (qd_d - qd)) + b(q, qd). Without a fresh desired state the last two fall back to g(q) - "
          "hold_damping qd.", G_CMD, choices=("gravity", "feedforward", "computed_torque")),
    Param("command_friction", BOOL, False, "Add the URDF joint friction damping qd + friction tanh(qd / "
          "friction_velocity_eps) to ~/effort_command (at the measured qd; at qd_d in feedforward mode) and to "
          "~/feedforward_torques (at qd_d).", G_CMD),
    Param("friction_velocity_eps", DOUBLE, 0.01, "Velocity smoothing the Coulomb friction term: tanh(qd / eps) "
          "(also the services' include_friction).", G_CMD, unit="rad/s or m/s", range=(1e-9, 1e3)),
    Param("kp", DOUBLES, [], "computed_torque position gains, one value or one per joint in `joints` order "
          "(required for computed_torque).", G_CMD, unit="1/s^2", range=(0.0, 1e9), example=[100.0]),
    Param("kd", DOUBLES, [], "computed_torque velocity gains, one value or one per joint in `joints` order "
          "(required for computed_torque).", G_CMD, unit="1/s", range=(0.0, 1e9), example=[20.0]),
    Param("hold_damping", DOUBLES, [1.0], "K_hold of the fallback command g(q) - K_hold qd, one value or one per "
          "joint in `joints` order.", G_CMD, unit="N m s/rad or N s/m", range=(0.0, 1e9)),
    Param("max_desired_age", DOUBLE, 0.1, "A desired state received longer ago than this is stale: the command "
          "falls back to the damped gravity hold (0: never stale).", G_CMD, unit="s", range=(0.0, 3600.0)),
    Param("clamp_effort", BOOL, True, "Clamp ~/effort_command to +-the effort limits (effort_limits, else the "
          "URDF's <limit effort>).", G_CMD),
    Param("effort_limits", DOUBLES, [], "Effort limits overriding the URDF's, one value or one per joint in "
          "`joints` order; .inf = no limit. Empty: the URDF's (a joint without one is not clamped).", G_CMD,
          unit="N m or N", range=(0.0, math.inf), example=[87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0]),
    # real-robot terms of the model (model_build.py)
    Param("armature", DOUBLES, [], "Rotor inertia reflected to each joint (I_rotor * gear_ratio^2), one value "
          ">= 0 per joint in `joints` order (every DOF in model order when `joints` is empty); empty: zero. Adds "
          "diag(armature) to H and armature * qdd to inverse dynamics.", G_ROBOT, unit="kg m^2 or kg",
          range=(0.0, 1e12), structural=True, example=[0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05]),
    Param("payload_links", STRINGS, [], "Start-up payloads: the URDF links they are attached to (one payload per "
          "link; at run time: ~/set_payload, ~/payload).", G_ROBOT, read_only=True, example=["flange"]),
    Param("payload_masses", DOUBLES, [], "Start-up payloads: mass, one per payload_links entry.", G_ROBOT,
          unit="kg", range=(0.0, 1e9), read_only=True, example=[0.8]),
    Param("payload_coms", DOUBLES, [], "Start-up payloads: centre of mass in the link frame, 3 values (x y z) per "
          "payload_links entry.", G_ROBOT, unit="m", range=(-1e6, 1e6), read_only=True, example=[0.0, 0.0, 0.05]),
    Param("payload_inertias", DOUBLES, [], "Start-up payloads: inertia about the centre of mass in link axes, 6 "
          "values (ixx ixy ixz iyy iyz izz) per payload_links entry.", G_ROBOT, unit="kg m^2",
          range=(-1e12, 1e12), read_only=True, example=[0.001, 0.0, 0.0, 0.001, 0.0, 0.001]),
    # the momentum observer (control_step.py): ~/external_torques, ~/external_wrench, ~/collision
    Param("observer", BOOL, False, "Run the generalized-momentum observer: publish ~/external_torques, "
          "~/external_wrench (at contact_frame) and ~/collision.", G_OBS),
    Param("observer_gain", DOUBLE, 50.0, "K: the estimate follows the external torques as a first-order lag of "
          "this rate.", G_OBS, unit="1/s", range=(1e-3, 1e4)),
    Param("observer_torque_source", STRING, "measured", "The joint torques the observer compares with the "
          "dynamics: measured = JointState.effort (required then); commanded = the node's own ~/effort_command "
          "(it then covers every DOF).", G_OBS, choices=("measured", "commanded")),
    Param("observer_torque_held", BOOL, False, "How the torques vary between two joint states. false: they are "
          "samples of a signal that changes in between (a torque sensor; a driver that controls faster than it "
          "publishes, e.g. rbd_ros.sim at 1 kHz publishing at 500 Hz): the trapezoid rule. true: each was applied "
          "constant over the whole step that ends at its sample (a driver that publishes every control period the "
          "torque it applied in it): integrated exactly.", G_OBS),
    Param("observer_friction", BOOL, False, "Subtract the URDF joint friction law from the torques (motor-side "
          "torques: commanded, or current x torque constant).", G_OBS),
    Param("observer_max_gap", DOUBLE, 0.05, "A longer gap between joint states (or a jump in q, a model swap, "
          "NaN) restarts the observer.", G_OBS, unit="s", range=(1e-4, 10.0)),
    Param("contact_frame", STRING, "", "URDF link at which ~/external_wrench is estimated, in that link's frame "
          "(frame_id); empty: the tip of the longest chain.", G_OBS),
    Param("collision_thresholds", DOUBLES, [10.0], "|external torque| above which a joint counts as in contact, "
          "one value or one per joint in `joints` order.", G_OBS, unit="N m or N", range=(1e-9, 1e9)),
    Param("collision_debounce", DOUBLE, 0.005, "The threshold must be exceeded this long before ~/collision "
          "rises (and every ratio below collision_release this long before it falls).", G_OBS, unit="s",
          range=(0.0, 10.0)),
    Param("collision_release", DOUBLE, 0.8, "~/collision falls once every |torque| / threshold is below this.",
          G_OBS, range=(1e-3, 1.0)),
    # the payload estimation (recent.py, payload_estimation.py)
    Param("payload_window", DOUBLE, 30.0, "~/estimate_payload: how much of the recent joint states the node keeps "
          "(those carrying a position, velocity and effort for every DOF); 0: none kept, the service refuses. "
          "Memory: window x payload_max_rate rows of nq + 2 nv + 2 doubles. A change empties the window.", G_EST,
          unit="s", range=(0.0, 600.0)),
    Param("payload_max_rate", DOUBLE, 500.0, "~/estimate_payload: at most this many joint states a second are kept "
          "(faster streams are thinned).", G_EST, unit="Hz", range=(1.0, 2000.0)),
    Param("payload_cutoff", DOUBLE, 10.0, "~/estimate_payload: cut-off of the zero-phase low-pass applied to q, qd "
          "and the efforts before differentiating qd (5-10x the top frequency of the motion; below half the "
          "joint-state rate).", G_EST, unit="Hz", range=(0.01, 1000.0)),
    # processes
    Param("service_threads", INT, 0, "numba threads for batch (trajectory) service work; 0: one less than the CPU "
          "count (at least 1), so a long query leaves a core to the control path.", G_PROC, range=(0, 1024),
          read_only=True),
    Param("service_process", BOOL, True, "Serve the dynamics services from a worker process (own interpreter and "
          "DDS participant): long trajectory requests then never stall the torque stream. false: serve them from "
          "the background thread of this process.", G_PROC, read_only=True),
    Param("control_executor", STRING, "events", "Executor of the control path: events (rclpy EventsExecutor in a "
          "spin_once loop; falls back to single where rclpy lacks it) or single (SingleThreadedExecutor).", G_PROC,
          choices=("events", "single"), read_only=True),
)
BY_NAME = {p.name: p for p in TABLE}
STRUCTURAL = tuple(p.name for p in TABLE if p.structural)
COMMAND = tuple(p.name for p in TABLE if p.group == G_CMD)
OBSERVER = tuple(p.name for p in TABLE if p.group == G_OBS)


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check(name: str, value) -> str | None:
    """None if ``value`` is a valid value of parameter ``name`` (its type, bounds,
    choices, length), else the reason, naming the parameter."""
    p = BY_NAME[name]
    t = p.type
    if t == STRING:
        if not isinstance(value, str):
            return f"{name}: expected a string, got {value!r}"
        if p.choices and value not in p.choices:
            return f"{name}: expected one of {list(p.choices)}, got {value!r}"
        return None
    if t == BOOL:
        return None if isinstance(value, bool) else f"{name}: expected true or false, got {value!r}"
    if t == STRINGS:
        ok = isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value)
        return None if ok else f"{name}: expected a list of strings, got {value!r}"
    values = [value] if t in (DOUBLE, INT) else value
    if not isinstance(values, (list, tuple)) or not all(_number(x) for x in values):
        what = "a number" if t in (DOUBLE, INT) else "a list of numbers"
        return f"{name}: expected {what}, got {value!r}"
    if p.length is not None and len(values) != p.length:
        return f"{name}: expected {p.length} numbers, got {len(values)}"
    lo, hi = p.range if p.range else (-math.inf, math.inf)
    for k, x in enumerate(values):
        where = "" if t in (DOUBLE, INT) else f"[{k}]"
        if math.isnan(x) or not (lo <= x <= hi) or (math.isinf(x) and not math.isinf(hi)):
            unit = f" {p.unit}" if p.unit else ""
            return f"{name}{where}: expected a number in [{lo:g}, {hi:g}]{unit}, got {x!r}"
    return None


# ----------------------------------------------------------------------------- generated files

def _yaml_value(x) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, str):
        return f'"{x}"' if x == "" else x
    if isinstance(x, list):
        return "[" + ", ".join(_yaml_value(v) for v in x) + "]"
    return repr(float(x)) if isinstance(x, float) else str(x)


def yaml_text() -> str:
    """config/dynamics.yaml: every parameter with its default (empty lists, which ROS 2
    parameter files cannot hold, as comments with an example)."""
    out = ["# Parameters of the rbd_ros dynamics node (node name rbd_dynamics, any namespace).",
           "# Generated from rbd_ros/node/param_table.py (python -m rbd_ros.node.param_table --yaml);",
           "# `ros2 param describe /rbd_dynamics <name>` prints each one's meaning; doc/parameters.md lists them.",
           "/**/rbd_dynamics:   # any namespace", "  ros__parameters:"]
    group = None
    for p in TABLE:
        if p.group != group:
            group = p.group
            out.append(f"    # --- {group}")
        note = ", ".join(x for x in (p.unit, "read-only" if p.read_only else "",
                                     "rebuilds the model" if p.structural else "",
                                     " | ".join(p.choices) if p.choices else "") if x)
        if isinstance(p.default, list) and not p.default:
            out.append(f"    # {p.name}: {_yaml_value(p.example)}" + (f"   # {note}" if note else ""))
        else:
            out.append(f"    {p.name}: {_yaml_value(p.default)}" + (f"   # {note}" if note else ""))
    return "\n".join(out) + "\n"


def markdown_table() -> str:
    """The parameter table of doc/parameters.md."""
    out = ["| name | type | default | unit | meaning |", "|---|---|---|---|---|"]
    for p in TABLE:
        flags = [f for f, on in (("read-only", p.read_only), ("rebuilds the model", p.structural)) if on]
        kind = p.type + (f" ({', '.join(flags)})" if flags else "")
        default = "[]" if isinstance(p.default, list) and not p.default else _yaml_value(p.default)
        choices = f" One of: {', '.join(p.choices)}." if p.choices else ""
        out.append(f"| `{p.name}` | {kind} | {default} | {p.unit} | {p.text}{choices} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="print a file generated from the parameter table")
    ap.add_argument("--yaml", action="store_true", help="config/dynamics.yaml")
    ap.add_argument("--markdown", action="store_true", help="the table of doc/parameters.md")
    a = ap.parse_args(argv)
    sys.stdout.write(yaml_text() if a.yaml else markdown_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
