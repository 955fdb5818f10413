"""``sim_driver``: MuJoCo as a physically simulated robot behind ROS 2 topics.

The stand-in for a real robot driver: it loads the URDF into MuJoCo
(:func:`rbd_ros.sim.mujoco_model.load_urdf`: checked equal to the rbd_ros
model, no damping, limits or contacts), steps the physics in real time from a
sleep-to-deadline loop in the main thread (an rclpy timer cannot hold 1 kHz),
and

* publishes ``joint_states`` (sensor_msgs/JointState, reliable depth 10):
  ``joints`` order, position, velocity, and effort = the torque applied in the
  step that produced the state; ``header.stamp`` = the step's scheduled time
  (the ROS time at the loop's start + steps x period, re-anchored after a resync):
  stamp differences are the simulated time between states, whatever the
  lateness of the loop on a loaded machine, as a real driver's cycle stamps;
* subscribes to ``effort_command`` (std_msgs/Float64MultiArray in ``joints``
  order, reliable depth 10: the shape forward_command_controller's
  ``~/commands`` takes) and applies the latest one through ``qfrc_applied``;
  zero effort once the latest command is older than ``command_timeout``
  (its age counted from its arrival in the middleware, not from its callback);
  a command of the wrong length or with NaN/inf is dropped (throttled warning,
  counted in ``/diagnostics``);
* if MuJoCo finds a non-finite or huge acceleration (e.g. a command of
  1e12 N·m) it resets its state; the driver then restarts from the initial
  pose at rest, logs an error and counts ``sim_resets`` in ``/diagnostics``;
* subscribes to ``~/apply_wrench`` (geometry_msgs/WrenchStamped): a known
  external wrench on the URDF link ``header.frame_id``, force and torque in
  *world axes at the link's origin*, applied through MuJoCo's ``xfrc_applied``
  for ``wrench_duration`` s (a new message replaces the current wrench, a zero
  one ends it; bad ones are dropped with a warning and counted), see
  :mod:`rbd_ros.sim.wrench`; ``~/applied_wrench`` (WrenchStamped, reliable,
  transient local) reports what is applied: at its start the wrench, at its end
  zeros, each stamped with the joint_states stamp of the first state the change
  acted on (a state stamped in [start, end) was produced by a step with it);
* optionally publishes ``robot_description`` (transient local, like
  robot_state_publisher) and every ``diagnostics_period`` s ``/diagnostics``.

Joints not in ``joints`` get zero effort.
"""
from __future__ import annotations

import array
import math
import sys
import threading
import time

import numpy as np

from rbd_ros.robots import read_description

NODE_NAME = "sim_driver"


def wants_help(argv) -> bool:
    """True if ``-h`` or ``--help`` is among the arguments (``argv[1:]``)."""
    return any(arg in ("-h", "--help") for arg in argv[1:])


def float_buffer(n: int):
    """A float64 array.array (what rclpy messages hold without copying) and a numpy view on it."""
    buf = array.array("d", bytes(8 * n))
    return buf, np.frombuffer(buf, dtype=np.float64)


def load_description(urdf_file: str, robot_description: str) -> tuple[str, str]:
    """(URDF text, source) from the parameters: ``robot_description`` XML wins over ``urdf_file``
    (``rbd_ros.robots.read_description``, as in the node); ValueError if both are empty."""
    got = read_description(urdf_file, robot_description)
    if got is None:
        raise ValueError("no robot: set the urdf_file (path or bundled name, e.g. rbd_arm7) "
                             "or robot_description parameter")
    return got


class SimDriver:
    """The node and its physics loop (call :meth:`run` from the main thread)."""

    def __init__(self, context=None, node_name=NODE_NAME, cli_args=None):
        # imported here, not at the top: ``--help`` and the MuJoCo check (main) start
        # nothing heavy, and mujoco is the sim's optional dependency
        import mujoco
        import rclpy
        from builtin_interfaces.msg import Time
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import WrenchStamped
        from rcl_interfaces.msg import ParameterDescriptor
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, String

        from rbd_ros.sim.mujoco_model import JointMap, load_urdf
        from rbd_ros.sim.wrench import START, WrenchSchedule

        self._mujoco = mujoco
        self._Time = Time
        self.context = context
        self.node = rclpy.create_node(node_name, context=context, cli_args=cli_args)
        n = self.node

        def declare(name, value, text, read_only=True):
            return n.declare_parameter(name, value, ParameterDescriptor(
                description=text, read_only=read_only)).value

        urdf_file = declare("urdf_file", "", "URDF path or bundled robot name (rbd_arm7)")
        description = declare("robot_description", "", "URDF XML (wins over urdf_file)")
        joints = declare("joints", [""], "command/joint_states order; unset = every DOF in model order")
        initial = declare("initial_positions", [math.nan], "initial positions in joints order; unset = zeros")
        self.rate = float(declare("rate", 1000.0, "physics steps per second (real time); "
                                                  "MuJoCo's timestep is 1/rate"))
        publish_rate = float(declare("publish_rate", 0.0, "joint_states rate in Hz; 0 = every step"))
        self.command_timeout = float(declare("command_timeout", 0.05,
                                             "s; older commands are replaced by zero effort"))
        # (closed-loop demo/tests: a controller that connects seconds after start-up would
        # otherwise find the arm fallen and spinning)
        self.wait_for_command = bool(declare(
            "wait_for_command", False, "hold the initial pose (no physics steps; joint_states "
            "still published) until the first effort command arrives"))
        publish_desc = bool(declare("publish_description", False,
                                    "publish the URDF on robot_description (transient local)"))
        mimic_independent = bool(declare("mimic_independent", False,
                                         "simulate URDF mimic joints as independent DOFs "
                                         "(otherwise a URDF with mimic joints is refused)"))
        damping = bool(declare("damping", False, "apply the URDF's joint damping"))
        integrator = declare("integrator", "rk4", "rk4 (energy-conserving), euler or implicitfast")
        gravity = declare("gravity", [0.0, 0.0, -9.81], "gravity in the world frame, m/s^2")
        self.diag_period = float(declare("diagnostics_period", 1.0, "s between /diagnostics"))
        declare("wrench_duration", 1.0, "s; how long a wrench from ~/apply_wrench is applied "
                "(read when the message arrives; settable at run time)", read_only=False)
        if not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError(f"rate: expected a positive number of Hz, got {self.rate}")
        if not (publish_rate >= 0 and math.isfinite(publish_rate)):
            raise ValueError(f"publish_rate: expected >= 0 Hz, got {publish_rate}")
        if not (self.command_timeout > 0):
            raise ValueError(f"command_timeout: expected > 0 s, got {self.command_timeout}")

        text, self.source = load_description(urdf_file, description)
        self.mjm, self.model = load_urdf(text, mimic_independent=mimic_independent, damping=damping,
                                         gravity=gravity, timestep=1.0 / self.rate,
                                         integrator=integrator)
        self.data = mujoco.MjData(self.mjm)
        # MuJoCo's warnings go to the ROS log (by default it appends them to MUJOCO_LOG.TXT in the cwd)
        logger = self.node.get_logger()
        mujoco.set_mju_user_warning(
            lambda text: logger.warning(f"MuJoCo: {text}", throttle_duration_sec=1.0))
        joints = [j for j in joints if j]
        self.map = JointMap(self.mjm, self.model, joints)
        self.joints = self.map.joints
        nj = len(self.joints)
        init = [x for x in initial if not (isinstance(x, float) and math.isnan(x))]
        if init:
            if len(init) != nj or not all(math.isfinite(x) for x in init):
                raise ValueError(f"initial_positions: expected {nj} finite numbers (one per joint "
                                 f"of {self.joints}) or nothing, got {list(initial)}")
            self.data.qpos[self.map.qpos] = init
        self.initial_qpos = self.data.qpos.copy()
        mujoco.mj_forward(self.mjm, self.data)

        # command: written by the executor thread as one tuple (atomic), read by the loop
        self._cmd = None                      # (numpy array, receive time monotonic)
        self.counts = {"commands_in": 0, "dropped_wrong_length": 0, "dropped_not_finite": 0,
                       "stale_periods": 0}
        self._warn_t = 0.0
        self._last_wrench_link = ""
        self.applied = np.zeros(nj)
        self._stale = True

        # messages, preallocated: the loop writes into the numpy views
        try:   # field checks on: the setters then keep our array.array instead of copying it
            self.js = JointState(check_fields=True)
        except TypeError:
            self.js = JointState()
        self.js.name = list(self.joints)
        self._pos_buf, self._pos = float_buffer(nj)
        self._vel_buf, self._vel = float_buffer(nj)
        self._eff_buf, self._eff = float_buffer(nj)
        self.js.position, self.js.velocity, self.js.effort = self._pos_buf, self._vel_buf, self._eff_buf
        self._shared = (self.js.position is self._pos_buf and self.js.velocity is self._vel_buf
                        and self.js.effort is self._eff_buf)
        self.pub_js = n.create_publisher(JointState, "joint_states", 10)
        self.pub_diag = n.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._desc_pub = None
        if publish_desc:
            # as robot_state_publisher does: reliable, transient local, depth 1
            qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self._desc_pub = n.create_publisher(String, "robot_description", qos)
            self._desc_pub.publish(String(data=text))
        self.sub = n.create_subscription(Float64MultiArray, "effort_command", self._on_command, 10)
        self.wrench = WrenchSchedule(self.mjm, self.model, self.rate)
        self.counts["wrenches_dropped"] = 0
        self._WrenchStamped = WrenchStamped
        self._wrench_start = START
        self.pub_wrench = n.create_publisher(WrenchStamped, "~/applied_wrench", QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.sub_wrench = n.create_subscription(WrenchStamped, "~/apply_wrench", self._on_wrench, 10)
        n.add_on_set_parameters_callback(self._check_parameters)
        self.publish_every = 1 if publish_rate == 0 else max(1, round(self.rate / publish_rate))
        self.stats = {"steps": 0, "overruns": 0, "late_max_ms": 0.0, "resyncs": 0, "sim_resets": 0}
        self._stop = threading.Event()
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(n)
        self._spin_thread = threading.Thread(target=self._spin, daemon=True, name="sim_executor")
        n.get_logger().info(
            f"simulating '{self.model.name}' ({self.source}) at {self.rate:g} Hz, joints {self.joints}, "
            f"commands on {self.sub.topic_name}, states on {self.pub_js.topic_name} "
            f"every {self.publish_every} step(s)")

    # ------------------------------------------------------------ commands
    def _on_command(self, msg, info):
        """A command is as old as its arrival in the middleware (``info``'s
        received_timestamp, system clock), not its turn in this executor: a command that
        waited in the queue while this thread was starved must not count as fresh."""
        now = time.monotonic()
        if info.get("received_timestamp"):
            waited = (time.time_ns() - info["received_timestamp"]) * 1e-9
            now -= min(max(waited, 0.0), 3600.0)   # a wall-clock jump: at most "very old"
        data = np.asarray(msg.data, dtype=np.float64)
        reason = None
        if data.shape != (len(self.joints),):
            reason = "dropped_wrong_length"
            text = f"{data.size} values, expected {len(self.joints)} (one per joint of {self.joints})"
        elif not np.all(np.isfinite(data)):
            reason = "dropped_not_finite"
            text = f"a value is not finite: {data.tolist()}"
        if reason is not None:
            self.counts[reason] += 1
            if now - self._warn_t > 1.0:
                self._warn_t = now
                self.node.get_logger().warning(f"effort command dropped: {text}")
            return
        self.counts["commands_in"] += 1
        self._cmd = (data, now)

    def _check_parameters(self, params):
        from rcl_interfaces.msg import SetParametersResult  # (rclpy imports: see __init__)
        for p in params:
            if p.name == "wrench_duration":
                x = p.value
                if not (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0):
                    return SetParametersResult(successful=False,
                                               reason=f"wrench_duration: expected a number of s > 0, got {x!r}")
        return SetParametersResult(successful=True)

    def _on_wrench(self, msg):
        f, m = msg.wrench.force, msg.wrench.torque
        try:
            self.wrench.request(msg.header.frame_id, (f.x, f.y, f.z), (m.x, m.y, m.z),
                                self.node.get_parameter("wrench_duration").value)
        except ValueError as e:
            self.counts["wrenches_dropped"] += 1
            self.node.get_logger().warning(f"apply_wrench dropped: {e}", throttle_duration_sec=1.0)

    def _publish_wrench(self, event, stamp):
        """~/applied_wrench at a START (the wrench) or END (zeros) event."""
        msg = self._WrenchStamped()
        msg.header.stamp = stamp
        act = self.wrench.active if event == self._wrench_start else None
        msg.header.frame_id = act[0] if act is not None else self._last_wrench_link
        if act is not None:
            self._last_wrench_link = act[0]
            (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z) = (float(x) for x in act[2])
            (msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z) = (float(x) for x in act[3])
        self.pub_wrench.publish(msg)

    # ------------------------------------------------------------ loop
    def _spin(self):
        while not self._stop.is_set() and self.context_ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:
                if self._stop.is_set() or not self.context_ok():
                    return
                raise

    def context_ok(self):
        import rclpy  # (rclpy imports: see __init__)
        return rclpy.ok(context=self.context)

    def stop(self):
        self._stop.set()

    def run(self):
        """Step in real time until :meth:`stop`, SIGINT or the context shuts down."""
        mujoco = self._mujoco
        mjm, d = self.mjm, self.data
        dof, qadr = self.map.dof, self.map.qpos
        applied, pos, vel, eff = self.applied, self._pos, self._vel, self._eff
        clock = self.node.get_clock()
        pub = self.pub_js.publish
        js = self.js
        period = 1.0 / self.rate
        timeout = self.command_timeout
        every = self.publish_every
        stats = self.stats
        shared = self._shared
        bad_acc = d.warning[int(mujoco.mjtWarning.mjWARN_BADQACC)]
        bad_acc.number = 0
        wrench_step = self.wrench.before_step
        self._spin_thread.start()
        t0 = time.monotonic()
        ros0 = clock.now().nanoseconds      # stamps: ros0 + k * period (the step's scheduled time)
        period_ns = 1e9 * period
        k = 0
        next_diag = t0 + self.diag_period
        late_hist = []
        work_hist = []
        try:
            while not self._stop.is_set():
                deadline = t0 + k * period
                now = time.monotonic()
                if deadline > now:
                    time.sleep(deadline - now)
                    now = time.monotonic()
                late = now - deadline
                if late > period:
                    stats["overruns"] += 1
                    if late > 50 * period:         # a stall: drop the lost time, do not race
                        stats["resyncs"] += 1
                        t0, k = now, 0
                        ros0 = clock.now().nanoseconds
                if late * 1e3 > stats["late_max_ms"]:
                    stats["late_max_ms"] = late * 1e3
                late_hist.append(late)
                step_ns = ros0 + int(k * period_ns)
                cmd = self._cmd
                if cmd is not None and now - cmd[1] <= timeout:
                    applied[:] = cmd[0]
                    self._stale = False
                elif not self._stale:
                    applied[:] = 0.0
                    self._stale = True
                    self.counts["stale_periods"] += 1
                d.qfrc_applied[dof] = applied
                event = None
                if cmd is not None or not self.wait_for_command:
                    event = wrench_step(d)
                    mujoco.mj_step(mjm, d)
                if bad_acc.number:      # MuJoCo found a non-finite/huge acceleration and reset d
                    bad_acc.number = 0
                    self._on_reset()
                    event = self.wrench.reset(d) or event
                k += 1
                stats["steps"] += 1
                if stats["steps"] % every == 0:
                    pos[:] = d.qpos[qadr]
                    vel[:] = d.qvel[dof]
                    eff[:] = applied
                    if not shared:     # this rclpy copies arrays on assignment
                        js.position, js.velocity, js.effort = self._pos_buf, self._vel_buf, self._eff_buf
                    js.header.stamp.sec, js.header.stamp.nanosec = divmod(step_ns, 1_000_000_000)
                    pub(js)
                if event is not None:
                    sec, nsec = divmod(step_ns, 1_000_000_000)
                    self._publish_wrench(event, self._Time(sec=sec, nanosec=nsec))
                work_hist.append(time.monotonic() - now)
                if now >= next_diag:
                    next_diag = now + self.diag_period
                    self._publish_diagnostics(late_hist, work_hist)
                    late_hist = []
                    work_hist = []
                if k % 100 == 0 and not self.context_ok():   # SIGINT shut the context down
                    break
        except KeyboardInterrupt:
            pass
        except Exception:
            if self.context_ok():
                raise
            # SIGINT: rclpy shut the context down between two checks (publish then fails)
        finally:
            self._stop.set()

    def _on_reset(self):
        """MuJoCo reset the data (unstable simulation): restart from the initial pose, at rest."""
        self.stats["sim_resets"] += 1
        self.data.qpos[:] = self.initial_qpos
        self.data.qvel[:] = 0.0
        self._mujoco.mj_forward(self.mjm, self.data)
        self.node.get_logger().error(
            "the simulation became unstable (non-finite or huge acceleration); restarted from the "
            "initial pose at rest", throttle_duration_sec=1.0)

    def _publish_diagnostics(self, late, work):
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue  # (see __init__)

        lat = np.asarray(late) * 1e3 if late else np.zeros(1)
        wk = np.asarray(work) * 1e6 if work else np.zeros(1)
        st = DiagnosticStatus(level=DiagnosticStatus.OK, name=f"{self.node.get_fully_qualified_name()}",
                              message="simulating", hardware_id=self.model.name)
        values = {"model": self.model.name, "rate_hz": self.rate, "sim_time_s": self.data.time,
                  **self.stats, **self.counts, "command_stale": self._stale,
                  "wrenches_applied": self.wrench.applied, "wrench_active": self.wrench.active is not None,
                  "step_late_p50_ms": float(np.percentile(lat, 50)),
                  "step_late_p99_ms": float(np.percentile(lat, 99)),
                  "step_work_p50_us": float(np.percentile(wk, 50)),
                  "step_work_p99_us": float(np.percentile(wk, 99))}
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.pub_diag.publish(msg)

    def destroy(self):
        self._stop.set()
        if self._spin_thread.is_alive():
            self._spin_thread.join(2.0)
        self.executor.shutdown()
        self.node.destroy_node()


USAGE = """\
usage: ros2 run rbd_ros sim_driver [-h] [--ros-args ...]
       ros2 launch rbd_ros sim.launch.py [urdf_file:=...] [namespace:=...]

A simulated robot (MuJoCo, real time) behind ROS 2 topics, the stand-in for a real
robot driver (default node name sim_driver).

  out  joint_states (sensor_msgs/JointState: position, velocity, applied effort)
       robot_description (std_msgs/String, latched; publish_description: true)
       /diagnostics
  in   effort_command (std_msgs/Float64MultiArray, one effort per joint in `joints`
       order; zero effort once the latest is older than command_timeout)

Parameters (ros2 param describe /sim_driver <name>): urdf_file (path or bundled robot
name, e.g. rbd_arm7) or robot_description, joints, initial_positions, rate,
publish_rate, command_timeout, wait_for_command, publish_description, gravity,
integrator, damping, mimic_independent, diagnostics_period.  Example:
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
                f"max lateness {s['late_max_ms']:.2f} ms, {s['resyncs']} resyncs", file=sys.stderr)
            driver.destroy()
        if rclpy.ok():
            rclpy.shutdown()
    return rc


if __name__ == "__main__":
    sys.exit(main())
