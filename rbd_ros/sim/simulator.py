"""The ``sim_driver`` node: MuJoCo as a physically simulated robot behind ROS 2 topics
(the entry point is :mod:`rbd_ros.sim.driver`).

The stand-in for a real robot driver: it loads the URDF into MuJoCo
(:func:`rbd_ros.sim.mujoco_model.load_urdf`: checked equal to the rbd_ros
model, no damping, limits or contacts), steps the physics from a loop in the
main thread, in real time (sleep to each deadline: an rclpy timer cannot hold
1 kHz) or in lock-step with its controller (``lock_step``: after publishing a
joint state it waits for the command stamped with that state's stamp, on
``effort_command_state``, or ``lock_step_timeout`` s; see
:mod:`rbd_ros.sim.lockstep`), and

* publishes ``joint_states`` (sensor_msgs/JointState, reliable depth 10):
  ``joints`` order, position, velocity, and effort = the torque applied in the
  step that produced the state; ``header.stamp`` = the state's simulated time
  (the ROS time at the loop's start + steps x period; in real time the state is
  published at the start of the period it ends, and the count is re-anchored
  after a resync; in lock-step never): stamp differences are the simulated time
  between states, whatever the lateness of the loop on a loaded machine, as a
  real driver's cycle stamps;
* subscribes to ``effort_command`` (std_msgs/Float64MultiArray in ``joints``
  order, reliable depth 10: the shape forward_command_controller's
  ``~/commands`` takes) and applies the latest one through ``qfrc_applied``;
  zero effort once the latest command is older than ``command_timeout``
  (its age counted from its arrival in the middleware, not from its callback);
  a command of the wrong length or with NaN/inf is dropped (throttled warning,
  counted in ``/diagnostics``);
* with ``lock_step`` (switchable at run time) takes its commands from ``effort_command_state``
  (sensor_msgs/JointState: ``name`` = the driver's joints in any order, ``effort``,
  ``header.stamp`` = the stamp of the joint state it answers); a step takes the
  command that answers the last published state; after ``lock_step_timeout``
  s without it (counted: ``lock_step_timeouts``) it steps with the last command
  taken while that is younger than ``command_timeout`` of simulated time, else
  with zero effort; before the first command it sends the state again every
  0.1 s (not counted);
* applies the command through the actuators (:mod:`rbd_ros.sim.actuators`): clamped at
  the URDF's effort limits (``clamp_effort``, on by default), every step at or beyond
  a limit counted per joint (``clamped_steps/<joint>`` in ``/diagnostics``);
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
import threading
import time

import numpy as np

from rbd_ros.robots import read_description
from rbd_ros.sim.actuators import Actuators
from rbd_ros.sim.lockstep import CommandOrder, Handshake
from rbd_ros.sim.params import read_params, run_time_values
from rbd_ros.sim.status import status_values

NODE_NAME = "sim_driver"


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

        from rbd_ros.sim.base_outputs import BaseOutputs
        from rbd_ros.sim.floating import BaseState, place_on_ground
        from rbd_ros.sim.loops import close_loops_in, constraints_of
        from rbd_ros.sim.mujoco_model import Ground, JointMap, load_urdf
        from rbd_ros.sim.wrench import START, WrenchSchedule

        self._mujoco = mujoco
        self._Time = Time
        self.context = context
        self.node = rclpy.create_node(node_name, context=context, cli_args=cli_args)
        n = self.node

        def declare(name, value, text, read_only=True):    # (types: read_params checks them)
            return n.declare_parameter(name, value, ParameterDescriptor(
                description=text, read_only=read_only, dynamic_typing=True)).value

        self.params = p = read_params(declare)
        self.rate = p.rate
        self.command_timeout = p.command_timeout
        self.wait_for_command = p.wait_for_command
        self.lock_step, self.lock_step_timeout = p.lock_step, p.lock_step_timeout
        self.diag_period = p.diagnostics_period

        text, self.source = load_description(p.urdf_file, p.robot_description)
        ground = (Ground(links=tuple(p.contact_links), radius=p.contact_radius, height=p.ground_height,
                         friction=p.contact_friction, solref=tuple(p.contact_solref),
                         solimp=tuple(p.contact_solimp)) if p.contact_links else None)
        self.mjm, self.model = load_urdf(text, mimic_independent=p.mimic_independent, damping=p.damping,
                                         gravity=p.gravity, timestep=1.0 / self.rate,
                                         integrator=p.integrator, floating_base=p.floating_base, ground=ground,
                                         loop_solref=tuple(p.loop_solref), loop_solimp=tuple(p.loop_solimp))
        self.data = mujoco.MjData(self.mjm)
        # MuJoCo's warnings go to the ROS log (by default it appends them to MUJOCO_LOG.TXT in the cwd)
        logger = self.node.get_logger()
        mujoco.set_mju_user_warning(
            lambda text: logger.warning(f"MuJoCo: {text}", throttle_duration_sec=1.0))
        self.map = JointMap(self.mjm, self.model, p.joints)
        self.joints = self.map.joints
        nj = len(self.joints)
        init = p.initial_positions
        if init:
            if len(init) != nj or not all(math.isfinite(x) for x in init):
                raise ValueError(f"initial_positions: expected {nj} finite numbers (one per joint "
                                 f"of {self.joints}) or nothing, got {list(init)}")
            self.data.qpos[self.map.qpos] = init
        if constraints_of(self.model):     # a mechanism: its passive joints close the loops
            close_loops_in(self.mjm, self.model, self.data, self.joints)
        if p.floating_base:
            BaseState(self.mjm).set_pose(self.data, p.initial_base_pose)
            if ground is not None and p.place_on_ground:
                place_on_ground(self.mjm, self.data, ground)
        self.initial_qpos = self.data.qpos.copy()
        mujoco.mj_forward(self.mjm, self.data)

        # command: written by the executor thread as one tuple (atomic), read by the loop
        self._cmd = None                      # (numpy array, receive time monotonic)
        self.counts = {"commands_in": 0, "dropped_wrong_length": 0, "dropped_not_finite": 0,
                       "stale_periods": 0}
        self._warn_t = 0.0
        self._last_wrench_link = ""
        self.command = np.zeros(nj)          # the effort commanded now (or zero: none / stale)
        self.applied = np.zeros(nj)          # what the actuators apply in a step (actuators.py)
        vidx = [self.model.v_index(j) for j in self.joints]
        self.actuators = Actuators(self.model.effort_limit[vidx], clamp=p.clamp_effort)
        if p.pd_kp:
            self.actuators.set_pd(p.pd_kp, p.pd_kd, p.pd_target or self.data.qpos[self.map.qpos])
        self.outputs = BaseOutputs(n, self.mjm, self.model, p) if p.floating_base or p.contact_links else None
        self.stale = True
        self.last_stamp_ns = 0                # stamp of the latest joint state published

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
        if p.publish_description:
            # as robot_state_publisher does: reliable, transient local, depth 1
            qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self._desc_pub = n.create_publisher(String, "robot_description", qos)
            self._desc_pub.publish(String(data=text))
        self.handshake = Handshake()
        self._order = CommandOrder(self.joints)
        self.counts["dropped_wrong_joints"] = 0
        # both inputs: real time takes the latest effort_command, lock-step the effort_command_state
        # stamped with the state it waits on (lockstep.py); lock_step can be switched at run time
        self.sub = n.create_subscription(Float64MultiArray, "effort_command", self._on_command, 10)
        self.sub_state = n.create_subscription(JointState, "effort_command_state", self._on_command_state, 10)
        self.wrench = WrenchSchedule(self.mjm, self.model, self.rate)
        self.counts["wrenches_dropped"] = 0
        self._WrenchStamped = WrenchStamped
        self._wrench_start = START
        self.pub_wrench = n.create_publisher(WrenchStamped, "~/applied_wrench", QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.sub_wrench = n.create_subscription(WrenchStamped, "~/apply_wrench", self._on_wrench, 10)
        n.add_on_set_parameters_callback(self._check_parameters)
        self.publish_every = 1 if p.publish_rate == 0 else max(1, round(self.rate / p.publish_rate))
        self.stats = {"steps": 0, "overruns": 0, "late_max_ms": 0.0, "resyncs": 0, "sim_resets": 0,
                      "lock_step_timeouts": 0}
        self._stop = threading.Event()
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(n)
        self._spin_thread = threading.Thread(target=self._spin, daemon=True, name="sim_executor")
        n.get_logger().info(
            f"simulating '{self.model.name}' ({self.source}) at {self.rate:g} Hz "
            f"{'in lock-step with its commands' if self.lock_step else 'in real time'}, joints {self.joints}, "
            f"commands on {(self.sub_state if self.lock_step else self.sub).topic_name}, "
            f"states on {self.pub_js.topic_name} "
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
        if self.lock_step:                    # (lock-step takes effort_command_state)
            return
        data = np.asarray(msg.data, dtype=np.float64)
        reason = None
        if data.shape != (len(self.joints),):
            reason = "dropped_wrong_length"
            text = f"{data.size} values, expected {len(self.joints)} (one per joint of {self.joints})"
        elif not np.all(np.isfinite(data)):
            reason = "dropped_not_finite"
            text = f"a value is not finite: {data.tolist()}"
        if reason is not None:
            self._drop(reason, text)
            return
        self.counts["commands_in"] += 1
        self._cmd = (data, now)

    def _on_command_state(self, msg):
        """lock_step: a command stamped with the joint state it answers (sensor_msgs/JointState:
        name, effort; the node's ~/effort_command_state); checked, then offered to the loop."""
        if not self.lock_step:                # (real time takes effort_command)
            return
        effort, reason, text = self._order.order(msg.name, msg.effort)
        if reason is not None:
            self._drop(reason, text)
            return
        self.counts["commands_in"] += 1
        self.handshake.offer(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec, effort)

    def _drop(self, reason, text):
        self.counts[reason] += 1
        now = time.monotonic()
        if now - self._warn_t > 1.0:
            self._warn_t = now
            self.node.get_logger().warning(f"effort command dropped: {text}")

    def _check_parameters(self, params):
        """The run-time parameters (params.run_time_values): all or nothing; wrench_duration
        is read per message, the others are taken here (the loop reads them)."""
        from rcl_interfaces.msg import SetParametersResult  # (rclpy imports: see __init__)
        take, reason = run_time_values((p.name, p.value) for p in params)
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        if "clamp_effort" in take:
            self.actuators.clamp = take.pop("clamp_effort")
        for name, value in take.items():
            setattr(self, name, value)
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

    def _stopping(self) -> bool:
        """stop() was called or the context shut down (SIGINT): a lock-step wait ends."""
        return self._stop.is_set() or not self.context_ok()

    def run(self):
        """Step until :meth:`stop`, SIGINT or the context shuts down: in real time, or in
        lock-step with the commands (``lock_step``, switchable at run time: to real time the
        deadlines and stamps start again from the clock; to lock-step the stamps go on)."""
        mujoco = self._mujoco
        mjm, d = self.mjm, self.data
        dof, qadr = self.map.dof, self.map.qpos
        command, applied, pos, vel, eff = self.command, self.applied, self._pos, self._vel, self._eff
        actuate = self.actuators.apply
        pd = self.actuators.kp is not None
        outputs = self.outputs
        clock = self.node.get_clock()
        pub = self.pub_js.publish
        js = self.js
        period = 1.0 / self.rate
        every = self.publish_every
        stats = self.stats
        shared = self._shared
        lock = self.lock_step
        hs = self.handshake
        bad_acc = d.warning[int(mujoco.mjtWarning.mjWARN_BADQACC)]
        bad_acc.number = 0
        wrench_step = self.wrench.before_step
        self._spin_thread.start()
        t0 = time.monotonic()
        ros0 = clock.now().nanoseconds      # stamps: ros0 + steps * period (the state's simulated time)
        period_ns = 1e9 * period
        k = 0
        next_diag = t0 + self.diag_period
        late_hist = []                      # real time: lateness of each step; lock-step: the waits
        work_hist = []
        awaiting = None                     # lock-step: stamp of the published state to be answered
        held = None                         # lock-step: (efforts, stamp) of the last command taken
        commanded = False                   # a command has been taken (wait_for_command; sticky)
        try:
            while not self._stop.is_set():
                timeout = self.command_timeout      # (run-time parameters)
                timeout_ns = int(timeout * 1e9)
                if self.lock_step != lock:          # switched at run time
                    lock, awaiting = self.lock_step, None
                    if not lock:                    # to real time: deadlines and stamps from the clock now
                        t0, k = time.monotonic(), 0
                        ros0 = clock.now().nanoseconds
                if lock:
                    step_ns = ros0 + int((k + 1) * period_ns)   # the time of the state it makes
                    if awaiting is not None:
                        now = time.monotonic()
                        # before the first command nobody is late: the state is sent again soon
                        # (its first copies can go out before the controller is discovered)
                        got = hs.wait(self.lock_step_timeout if commanded else min(0.1, self.lock_step_timeout),
                                      self._stopping)
                        if got is not None:
                            late_hist.append(time.monotonic() - now)
                            held, commanded = (got, awaiting), True
                        else:
                            if self._stopping():            # stop(), or SIGINT shut the context down
                                break
                            if commanded:
                                late_hist.append(time.monotonic() - now)
                                stats["lock_step_timeouts"] += 1
                        awaiting = None
                        # the command taken, else the last one while younger than command_timeout
                        # in simulated time, else zero effort
                        if held is not None and step_ns - held[1] <= timeout_ns:
                            command[:] = held[0]
                            self.stale = False
                        elif not self.stale:
                            command[:] = 0.0
                            self.stale = True
                            self.counts["stale_periods"] += 1
                    now = time.monotonic()
                else:
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
                    step_ns = ros0 + int((k + 1) * period_ns)   # the time of the state it makes
                    cmd = self._cmd
                    commanded = commanded or cmd is not None
                    if cmd is not None and now - cmd[1] <= timeout:
                        command[:] = cmd[0]
                        self.stale = False
                    elif not self.stale:
                        command[:] = 0.0
                        self.stale = True
                        self.counts["stale_periods"] += 1
                if pd:                             # the driver's joint PD: at this step's state
                    actuate(command, applied, d.qpos[qadr], d.qvel[dof])
                else:                              # clamped at the effort limits, counted
                    actuate(command, applied)
                d.qfrc_applied[dof] = applied
                event = None
                if commanded or not self.wait_for_command:
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
                    self.last_stamp_ns = step_ns
                    if outputs is not None:     # base state, contact forces: the same stamp
                        outputs.publish(d, js.header.stamp.sec, js.header.stamp.nanosec)
                    if lock:           # before publishing: the answer cannot come first
                        hs.expect(step_ns)
                        awaiting = step_ns
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

        st = DiagnosticStatus(level=DiagnosticStatus.OK, name=f"{self.node.get_fully_qualified_name()}",
                              message="simulating", hardware_id=self.model.name)
        st.values = [KeyValue(key=k, value=str(v)) for k, v in status_values(self, late, work).items()]
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.pub_diag.publish(msg)

    def destroy(self):
        self._stop.set()
        if self._spin_thread.is_alive():
            self._spin_thread.join(2.0)
        self.executor.shutdown()
        self.node.destroy_node()
