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


def _finite_positive(name, x, unit):
    if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
        raise ValueError(f"{name}: expected a finite number of {unit} > 0, got {x!r}")


def read_params(declare) -> SimParams:
    """Declare every parameter through ``declare`` and return them checked; ValueError
    naming the parameter and what was expected."""
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
                                      "(lock_step: in simulated time)"))
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
        "lock_step_timeout; stamps are simulated time (steps x period)"))
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
    return p
