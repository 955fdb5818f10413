"""``sim_driver``, the entry point of the MuJoCo robot driver: ``--help``, the MuJoCo
check, start-up errors and Ctrl-C.  The node and its physics loop are
:class:`rbd_ros.sim.simulator.SimDriver`; what it does: ``doc/sim.md``."""
from __future__ import annotations

import sys

from rbd_ros.sim.simulator import SimDriver


def wants_help(argv) -> bool:
    """True if ``-h`` or ``--help`` is among the arguments (``argv[1:]``)."""
    return any(arg in ("-h", "--help") for arg in argv[1:])


USAGE = """\
usage: ros2 run rbd_ros sim_driver [-h] [--ros-args ...]
       ros2 launch rbd_ros sim.launch.py [urdf_file:=...] [namespace:=...]

A simulated robot (MuJoCo, real time) behind ROS 2 topics, the stand-in for a real
robot driver (default node name sim_driver).

  out  joint_states (sensor_msgs/JointState: position, velocity, applied effort)
       robot_description (std_msgs/String, latched; publish_description: true)
       base_state (nav_msgs/Odometry; floating_base: true), ~/contact_forces
       (rbd_ros_interfaces/ConstraintForces; contact_links), /diagnostics
  in   effort_command (std_msgs/Float64MultiArray, one effort per joint in `joints`
       order; zero effort once the latest is older than command_timeout)
       effort_command_state (sensor_msgs/JointState, lock_step: true only; stamped with
       the joint state it answers, as the dynamics node's ~/effort_command_state)

Parameters (ros2 param describe /sim_driver <name>): urdf_file (path or bundled robot
name, e.g. rbd_arm7) or robot_description, joints, initial_positions, rate,
publish_rate, command_timeout, wait_for_command, lock_step, lock_step_timeout,
clamp_effort, publish_description, gravity, integrator, damping, mimic_independent,
diagnostics_period; floating_base, initial_base_pose, place_on_ground,
base_state_topic, odom_frame_id, contact_links, contact_radius, contact_friction,
contact_solref, contact_solimp, ground_height, contact_forces_frame, pd_kp, pd_kd,
pd_target, loop_solref, loop_solimp.  Example:
  ros2 run rbd_ros sim_driver --ros-args -p urdf_file:=rbd_arm7 \\
      -r effort_command:=/rbd_dynamics/effort_command
Needs MuJoCo (pip install mujoco).  Documentation: doc/sim.md of the rbd_ros sources.
"""

MUJOCO_MISSING = ("[sim_driver] cannot start: MuJoCo's Python package is not available ({error}). "
                  "The simulated robot runs on it: pip install mujoco (from a source checkout: "
                  "pip install '.[sim]'); rosdep has no key for it.")


def mujoco_error():
    """None if MuJoCo can be imported, else the import error's text."""
    try:
        import mujoco  # noqa: F401  (here, not at the top: the optional dependency of the sim)
    except ImportError as e:
        return str(e)
    return None


def main(args=None):
    """``sim_driver [--ros-args ...]``: exit code 0 after a Ctrl-C, 1 without MuJoCo (one
    line says what to install), 2 for bad parameters or robot description; ``-h`` /
    ``--help``: the usage, exit code 0, nothing started."""
    if wants_help(sys.argv if args is None else args):
        print(USAGE, end="")
        return 0
    error = mujoco_error()
    if error is not None:
        print(MUJOCO_MISSING.format(error=error), file=sys.stderr)
        return 1
    import rclpy  # only now: --help and a missing MuJoCo start nothing heavy

    rclpy.init(args=sys.argv if args is None else args)
    driver = None
    rc = 0
    try:
        driver = SimDriver()
        driver.run()
    except KeyboardInterrupt:
        pass
    except ValueError as e:     # bad parameters or robot description (ModelError is one)
        print(f"[sim_driver] cannot start: {e}", file=sys.stderr)
        rc = 2
    finally:
        if driver is not None:
            s = driver.stats
            print(
                f"[sim_driver] stopped after {s['steps']} steps: {s['overruns']} overruns (> 1 period late), "
                f"max lateness {s['late_max_ms']:.2f} ms, {s['resyncs']} resyncs (real time); "
                f"{s['lock_step_timeouts']} timeouts (lock-step)", file=sys.stderr)
            driver.destroy()
        if rclpy.ok():
            rclpy.shutdown()
    return rc


if __name__ == "__main__":
    sys.exit(main())
