"""The sim driver's parameters: declared, read and checked in one place (no ROS here:
the driver passes ``declare(name, default, description, read_only=True) -> value``)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class SimParams:
    """The driver's start-up parameters (``wrench_duration`` is read at run time)."""
    urdf_file: str = ""
    robot_description: str = ""
    joints: list = field(default_factory=list)          # [] = every DOF in model order
    initial_positions: list = field(default_factory=list)
    rate: float = 1000.0
    publish_rate: float = 0.0
    command_timeout: float = 0.05
    wait_for_command: bool = False
    publish_description: bool = False
    mimic_independent: bool = False
    damping: bool = False
    integrator: str = "rk4"
    gravity: list = field(default_factory=lambda: [0.0, 0.0, -9.81])
    lock_step: bool = False
    lock_step_timeout: float = 1.0
    diagnostics_period: float = 1.0
    clamp_effort: bool = True
    # a floating-base robot on a ground plane
    floating_base: bool = False
    initial_base_pose: list = field(default_factory=lambda: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    place_on_ground: bool = True
    contact_links: list = field(default_factory=list)
    contact_radius: float = 0.02
    contact_friction: float = 1.0
    contact_solref: list = field(default_factory=lambda: [0.005, 1.0])
    contact_solimp: list = field(default_factory=lambda: [0.9, 0.95, 0.001, 0.5, 2.0])
    ground_height: float = 0.0
    contact_forces_frame: str = "world"
    base_state_topic: str = "base_state"
    odom_frame_id: str = "world"
    pd_kp: list = field(default_factory=list)
    pd_kd: list = field(default_factory=list)
    pd_target: list = field(default_factory=list)
    loop_solref: list = field(default_factory=lambda: [0.002, 1.0])
    loop_solimp: list = field(default_factory=lambda: [0.9999, 0.9999, 0.001, 0.5, 2.0])


def _finite_positive(name, x, unit):
    if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
        raise ValueError(f"{name}: expected a finite number of {unit} > 0, got {x!r}")


def _coerce(name, default, value):
    """``value`` as the type of ``default`` (an integer where a double is expected is taken,
    as in a YAML file or on a command line written ``[5]``); ValueError naming ``name``."""
    def bad(what):
        return ValueError(f"{name}: expected {what}, got {value!r}")

    def number(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if isinstance(default, float):
        if not number(value):
            raise bad("a number")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise bad("a list")
    items = list(value)
    if isinstance(default[0], str):
        if not all(isinstance(x, str) for x in items):
            raise bad("a list of strings")
        return items
    if not all(number(x) for x in items):
        raise bad("a list of numbers")
    return [float(x) for x in items]


def read_params(declare) -> SimParams:
    """Declare every parameter through ``declare(name, default, description, read_only)``
    (which may return any type: it is checked against the default's here) and return them
    checked; ValueError naming the parameter and what was expected."""
    raw = declare

    def declare(name, default, text, read_only=True):
        return _coerce(name, default, raw(name, default, text, read_only))

    p = SimParams()
    p.urdf_file = declare("urdf_file", "", "URDF path or bundled robot name (rbd_arm7)")
    p.robot_description = declare("robot_description", "", "URDF XML (wins over urdf_file)")
    p.joints = [j for j in declare("joints", [""], "command/joint_states order; unset = every DOF in "
                                   "model order") if j]
    initial = declare("initial_positions", [math.nan], "initial positions in joints order; unset = zeros")
    p.initial_positions = [x for x in initial if not (isinstance(x, float) and math.isnan(x))]
    p.rate = float(declare("rate", 1000.0, "physics steps per second (real time); MuJoCo's timestep is 1/rate"))
    p.publish_rate = float(declare("publish_rate", 0.0, "joint_states rate in Hz; 0 = every step"))
    p.command_timeout = float(declare("command_timeout", 0.05, "s; older commands are replaced by zero effort "
                                      "(lock_step: in simulated time); settable at run time", read_only=False))
    # (closed-loop demo/tests: a controller that connects seconds after start-up would
    # otherwise find the arm fallen and spinning)
    p.wait_for_command = bool(declare(
        "wait_for_command", False, "hold the initial pose (no physics steps; joint_states still "
        "published) until the first effort command arrives"))
    p.publish_description = bool(declare("publish_description", False,
                                         "publish the URDF on robot_description (transient local)"))
    p.mimic_independent = bool(declare("mimic_independent", False, "simulate URDF mimic joints as "
                                       "independent DOFs (otherwise a URDF with mimic joints is refused)"))
    p.damping = bool(declare("damping", False, "apply the URDF's joint damping"))
    p.integrator = declare("integrator", "rk4", "rk4 (energy-conserving), euler or implicitfast")
    p.gravity = list(declare("gravity", [0.0, 0.0, -9.81], "gravity in the world frame, m/s^2"))
    p.lock_step = bool(declare(
        "lock_step", False, "step only when the command answering the last published joint state "
        "(effort_command_state, stamped with that state's stamp) has arrived, or after "
        "lock_step_timeout; stamps are simulated time (steps x period); settable at run time",
        read_only=False))
    p.lock_step_timeout = float(declare(
        "lock_step_timeout", 1.0, "s (wall clock); lock_step: step without the awaited command after "
        "this long (counted in /diagnostics as lock_step_timeouts; before the first command the "
        "state is sent again every 0.1 s, not counted); settable at run time", read_only=False))
    p.diagnostics_period = float(declare("diagnostics_period", 1.0, "s between /diagnostics"))
    p.clamp_effort = bool(declare("clamp_effort", True, "clamp the applied efforts at the URDF's effort "
                                  "limits (steps at or beyond a limit counted per joint in /diagnostics); "
                                  "settable at run time", read_only=False))
    declare("wrench_duration", 1.0, "s; how long a wrench from ~/apply_wrench is applied "
            "(read when the message arrives; settable at run time)", read_only=False)
    if not (p.rate > 0 and math.isfinite(p.rate)):
        raise ValueError(f"rate: expected a positive number of Hz, got {p.rate}")
    if not (p.publish_rate >= 0 and math.isfinite(p.publish_rate)):
        raise ValueError(f"publish_rate: expected >= 0 Hz, got {p.publish_rate}")
    if not (p.command_timeout > 0):
        raise ValueError(f"command_timeout: expected > 0 s, got {p.command_timeout}")
    _finite_positive("lock_step_timeout", p.lock_step_timeout, "s")
    _finite_positive("diagnostics_period", p.diagnostics_period, "s")
    _floating(p, declare)
    return p


def _floating(p: SimParams, declare) -> None:
    """The floating base, the ground and the driver's joint PD (doc/sim.md); ``declare``
    as read_params' (checked types)."""
    p.floating_base = bool(declare("floating_base", False, "the root link on a free joint (as the node's "
                                   "floating_base); its state goes out on base_state_topic"))
    p.initial_base_pose = list(declare("initial_base_pose", [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
                                       "floating_base: the base's start pose [x y z qx qy qz qw] in the world"))
    p.place_on_ground = bool(declare("place_on_ground", True, "floating_base with contact_links: lower or "
                                     "raise the start pose so that the lowest contact sphere touches the ground"))
    p.contact_links = [x for x in declare("contact_links", [""], "links with a contact sphere (feet) on a "
                                          "ground plane: contacts on; unset = no ground, contacts off") if x]
    p.contact_radius = float(declare("contact_radius", 0.02, "m; the contact spheres' radius (centred on "
                                     "each contact link's origin)"))
    p.contact_friction = float(declare("contact_friction", 1.0, "Coulomb friction coefficient of the "
                                       "feet on the ground (elliptic cone, no torsional or rolling friction)"))
    p.contact_solref = list(declare("contact_solref", [0.005, 1.0], "MuJoCo solref of the contacts: "
                                    "[time constant s (>= 2 steps), damping ratio]"))
    p.contact_solimp = list(declare("contact_solimp", [0.9, 0.95, 0.001, 0.5, 2.0], "MuJoCo solimp of the "
                                    "contacts"))
    p.ground_height = float(declare("ground_height", 0.0, "m; the ground plane's z in the world"))
    p.contact_forces_frame = declare("contact_forces_frame", "world", "~/contact_forces axes: world, or "
                                     "local (each link's own, as the node's constraint forces)")
    p.base_state_topic = declare("base_state_topic", "base_state", "floating_base: nav_msgs/Odometry of "
                                 "the base with every joint state ('' = none)")
    p.odom_frame_id = declare("odom_frame_id", "world", "the base state's header.frame_id (the world)")
    p.pd_kp = list(declare("pd_kp", [math.nan], "a joint PD in the driver: gains, one or one per joint "
                           "(N m/rad); unset = none; the commands add to it as feed-forward"))
    p.pd_kd = list(declare("pd_kd", [math.nan], "the PD's damping gains, one or one per joint (N m s/rad)"))
    p.pd_target = list(declare("pd_target", [math.nan], "the PD's target positions in joints order; "
                               "unset = initial_positions"))
    p.loop_solref = list(declare("loop_solref", [0.002, 1.0], "MuJoCo solref of the loop closures' "
                                 "equalities (a URDF with <constraint> elements)"))
    p.loop_solimp = list(declare("loop_solimp", [0.9999, 0.9999, 0.001, 0.5, 2.0], "MuJoCo solimp of the "
                                 "loop closures' equalities"))
    for name in ("pd_kp", "pd_kd", "pd_target"):
        setattr(p, name, [x for x in getattr(p, name) if not (isinstance(x, float) and math.isnan(x))])
    if bool(p.pd_kp) != bool(p.pd_kd):
        raise ValueError(f"pd_kp, pd_kd: set both or neither (pd_kp {p.pd_kp}, pd_kd {p.pd_kd})")
    if p.contact_forces_frame not in ("world", "local"):
        raise ValueError(f"contact_forces_frame: expected 'world' or 'local', got {p.contact_forces_frame!r}")
    for name, n in (("contact_solref", 2), ("contact_solimp", 5), ("initial_base_pose", 7), ("loop_solref", 2),
                    ("loop_solimp", 5)):
        x = getattr(p, name)
        if len(x) != n or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in x):
            raise ValueError(f"{name}: expected {n} finite numbers, got {x}")
    if p.contact_links and p.contact_solref[0] > 0 and p.contact_solref[0] < 2.0 / p.rate:
        raise ValueError(f"contact_solref: the time constant {p.contact_solref[0]} s is below 2 steps "
                         f"({2.0 / p.rate} s): MuJoCo's contacts would be unstable")
    _finite_positive("contact_radius", p.contact_radius, "m")
    if not (math.isfinite(p.contact_friction) and p.contact_friction >= 0):
        raise ValueError(f"contact_friction: expected a finite number >= 0, got {p.contact_friction}")
    if not math.isfinite(p.ground_height):
        raise ValueError(f"ground_height: expected a finite number of m, got {p.ground_height}")


def run_time_values(items):
    """(name, value) pairs of a parameter change -> ({name: value} of those the driver takes
    while running: lock_step, clamp_effort, lock_step_timeout, command_timeout;
    wrench_duration is checked only: it is read per message), None), or (None, the reason
    naming the parameter) to refuse the change as a whole."""
    take = {}
    for name, value in items:
        if name in ("clamp_effort", "lock_step"):
            if not isinstance(value, bool):
                return None, f"{name}: expected true or false, got {value!r}"
            take[name] = value
        elif name in ("wrench_duration", "lock_step_timeout", "command_timeout"):
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    and value > 0):
                return None, f"{name}: expected a number of s > 0, got {value!r}"
            if name != "wrench_duration":
                take[name] = float(value)
    return take, None
