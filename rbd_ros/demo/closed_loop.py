"""Demo: the dynamics node closing the loop around a physically simulated arm.

Starts two processes wired like a robot with ``forward_command_controller``:

* the MuJoCo robot driver (``python -m rbd_ros.sim``) on the bundled 7-dof arm
  ``rbd_arm7``: publishes ``joint_states`` at 1 kHz, applies the efforts it
  receives (its ``effort_command`` input is remapped to the node's
  ``~/effort_command``), zero effort once they are older than its
  ``command_timeout`` (0.25 s here); ``wait_for_command``: it holds the start pose
  until the first command arrives (DDS discovery takes seconds on a loaded machine);
* the dynamics node (``python -m rbd_ros.node``) reading those joint states,

and runs four phases, in this order, printing a table and writing a PNG (desired vs
actual joint angles, tracking error, applied torques over time; estimated vs applied
external torques during the push):

1. gravity hold (``command_mode: gravity``): drift in mrad over 3 s;
2. computed torque (``command_mode: computed_torque``, set at run time) tracking a
   smooth joint trajectory sent as desired states on ``~/desired_state`` at 500 Hz:
   RMS and max tracking error;
3. push: the arm held at q0 by computed torque, the node's momentum observer on, 10 N
   at the flange for 1 s through the driver's ``~/apply_wrench`` (``push.py``):
   ``~/external_torques`` vs the applied Jᵀf, ``~/collision``'s rise and fall;
4. no command: the node is stopped, the arm sags under gravity (rad after 1 s) -- last,
   since stopping the node is the cleanest "no command" and the arm does not come back.

Before phase 1 the node brings the arm to rest at the start pose in computed-torque mode.

    python -m rbd_ros.demo [--png PATH] [--rate HZ] [--no-plot]      (demo/run.py)

:class:`ClosedLoop` (the processes, the recording, the desired-state stream) is
shared by ``test/test_closed_loop.py`` and ``bench/closed_loop.py``.
"""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import Parameter
from rcl_interfaces.srv import SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from rbd_ros.demo.processes import NODE_NAME, LoopProcesses
from rbd_ros.demo.service_call import call_service

# the trajectory's names are this module's too (the demo, the tests and the bench use them)
from rbd_ros.demo.trajectory import Q0, TRAJ_AMP, TRAJ_K, TRAJ_S, reference, reference_batch, settle  # noqa: F401
from rbd_ros.node.params import parameter_value
from rbd_ros.node.qos import QOS_DESIRED

ROBOT = "rbd_arm7"
JOINTS = [f"joint{i}" for i in range(1, 8)]
# computed torque: the error obeys e'' + kd e' + kp e = 0 per joint (H(q) scales the gains
# into torques, so the wrist and the shoulder get the same bandwidth).  omega = 30 rad/s,
# critically damped: kd * (1..3 ms of loop delay) stays far below a radian of phase.
OMEGA, ZETA = 12.0, 1.0
KP, KD = OMEGA ** 2, 2.0 * ZETA * OMEGA


# the node: computed torque from the start (it holds the arm at q0 while the driver comes
# up); no services process, no bias/inertia topics (nobody listens in the demo).
# max_desired_age and the driver's command_timeout allow a 0.25 s stall of a process on a
# loaded machine before the node falls back to the damped hold / the driver to zero effort.
NODE_PARAMS = {"command_mode": "computed_torque", "kp": [KP], "kd": [KD], "max_desired_age": 0.25,
               "service_process": False, "publish_inertia": False, "publish_bias": False}
SIM_PARAMS = {"command_timeout": 0.25, "wait_for_command": True, "diagnostics_period": 0.2}
# lock-step (the tests): a desired state goes out for every joint state, so one that is old
# by the node's wall clock only says that a process of the loop stalled meanwhile, not that
# the stream stopped: the node's staleness limit is raised (a test of the fallback lowers it)
LOCK_STEP_NODE_PARAMS = {"max_desired_age": 2.0}


def _stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


class ClosedLoop(LoopProcesses):
    """The node and the sim driver in subprocesses under namespace ``/ns``, and an rclpy
    node here (own context, spun in a thread) that records ``joint_states`` (and
    optionally ``~/effort_command_state``), streams desired states from a function of
    time and sets the node's parameters.

    In real time (the demo) times are wall-clock seconds (the stamps of the ROS clock
    both processes publish with) and desired states go out at ``desired_rate`` from a
    thread.  With ``lock_step`` the driver steps only once the command for its last
    joint state has arrived (the node's ``~/effort_command_state``, matched by stamp),
    times are simulated (the joint-state stamps: :meth:`now`, :meth:`sleep`), and this
    process is in the loop: it receives each command, sends the desired state for the
    next joint state, ``desired_fn(stamp + state period)``, then passes the command on
    to the driver unchanged (``/<ns>/lock_step_command``).  The node thus has the
    desired state before the joint state it is meant for (it was sent before the step
    that makes that state), whatever the load: the loop is as fast as its slowest
    member and no faster."""

    def __init__(self, ns: str, node_params: dict, *, q0=Q0, sim_params: dict | None = None,
                 desired_rate: float = 500.0, record_commands: bool = False, robot=ROBOT,
                 lock_step: bool = False, joints=JOINTS):

        self.ns = ns.strip("/")
        self.fqn = f"/{self.ns}/{NODE_NAME}"
        self.q0 = tuple(float(x) for x in q0)
        self.robot = robot
        self.joints = list(joints)      # the driver's and the desired states' joints (q0's order)
        self.node_params = dict(node_params)
        self.sim_params = dict(sim_params or {})
        self.desired_rate = desired_rate
        self.lock_step = bool(lock_step)
        rate = float(self.sim_params.get("rate", 1000.0))
        pub_rate = float(self.sim_params.get("publish_rate", 0.0))
        self.state_period = (1 if pub_rate == 0 else max(1, round(rate / pub_rate))) / rate
        if self.lock_step:    # a lost joint state would stall the loop for lock_step_timeout
            self.node_params.setdefault("joint_states_reliable", True)
        self.node_proc = self.sim_proc = None
        self._logs = {}
        self._tmp = []
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("rbd_closed_loop", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self.states = []          # (stamp, q, v, applied effort)
        self.commands = []        # (stamp, effort) of ~/effort_command_state
        self.node_status = None   # latest /diagnostics values of the node
        self.sim_status = None    # ... and of the sim driver
        # best effort: a reliable reader that falls behind costs the driver resends
        deep = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.node.create_subscription(JointState, f"/{self.ns}/joint_states", self._on_state, deep)
        self.record_commands = record_commands
        self.pub_relay = None     # lock-step: commands pass through here on their way to the driver
        if self.lock_step:
            self._relay_commands()
        elif record_commands:
            self.node.create_subscription(JointState, f"{self.fqn}/effort_command_state",
                                          self._on_command, deep)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)
        self.pub_desired = self.node.create_publisher(JointTrajectory, f"{self.fqn}/desired_state",
                                                      QOS_DESIRED)
        self._traj_type = JointTrajectory
        self._desired_msg = JointTrajectory(joint_names=self.joints)     # lock-step: sent from _on_state
        self._pub_wrench = None   # ~/apply_wrench of the driver (push())
        self._recordings = {}     # id(list) -> subscription (record())
        self._destroy = []        # (subscription, Event) for the spinning thread to destroy
        self.desired_fn = None    # wall time -> (q, v, a) or None (send nothing)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._spin, daemon=True),
                         threading.Thread(target=self._stream, daemon=True)]
        for th in self._threads:
            th.start()

    # ------------------------------------------------------------ processes
    def wait_states(self, n=50, timeout=30.0) -> bool:
        return self._wait(lambda: len(self.states) >= n, timeout, self.sim_proc)

    def start(self, n_states=100, progress=None) -> str | None:
        """The start-up every closed-loop run makes: desired state q0, the node, the sim
        driver, ``n_states`` joint states, then the arm settled at q0 by computed torque
        (see :func:`settle`).  ``progress(step)`` is called before the steps "node" and
        "sim".  Returns None when the loop is running, else what failed (with log tails)."""
        say = progress or (lambda step: None)
        self.desired_fn = lambda t: reference(0.0, self.q0)
        say("node")
        self.start_node()
        if not self.wait_node_ready():
            return "the dynamics node did not come up:\n" + self.log("node")
        say("sim")
        self.start_sim()
        if not self.wait_states(n_states):
            return "no joint states from the simulated arm:\n" + self.log("sim")
        if not settle(self, self.q0):
            return ("the arm did not come to rest at q0 (machine too loaded?)\n--- node:\n"
                    + self.log("node")[-3000:] + "\n--- sim:\n" + self.log("sim")[-2000:])
        return None

    def _wait(self, pred, timeout, proc):
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            if pred():
                return True
            if proc is not None and proc.poll() is not None:
                return False
            time.sleep(0.02)
        return bool(pred())

    def close(self):
        self._stop.set()
        rc = (self._stop_proc(self.node_proc, 10.0), self._stop_proc(self.sim_proc, 10.0))
        for th in self._threads:
            th.join(5)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        self._final_logs = {k: self.log(k) for k in self._logs}
        for path in self._tmp:
            try:
                os.unlink(path)
            except OSError:
                pass
        self._logs = {}
        return rc

    # ------------------------------------------------------------ ROS side
    def _spin(self):
        while not self._stop.is_set() and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
                while self._destroy:      # (destroying it while the executor waits on it kills spin_once)
                    sub, done = self._destroy.pop()
                    self.node.destroy_subscription(sub)
                    done.set()
            except Exception:
                if self._stop.is_set() or not self.context.ok():
                    return
                raise

    def _on_state(self, msg):
        item = (_stamp(msg), np.array(msg.position), np.array(msg.velocity), np.array(msg.effort))
        with self.lock:
            self.states.append(item)

    def _relay_commands(self):
        reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self._relay_records = self.record_commands and self.lock_step     # (else _on_command does)
        self.pub_relay = self.node.create_publisher(JointState, f"/{self.ns}/lock_step_command", reliable)
        self.node.create_subscription(JointState, f"{self.fqn}/effort_command_state",
                                      self._on_lock_step_command, reliable)

    def _on_lock_step_command(self, msg):
        """The node's command for a joint state -> (recorded,) in lock-step the desired
        state for the next joint state, then the command to the driver."""
        if self._relay_records:
            self._on_command(msg)
        if self.lock_step:
            self._send_desired(_stamp(msg) + self.state_period, msg.header.stamp)
            self.pub_relay.publish(msg)

    def set_lock_step(self, on: bool) -> None:
        """Switch the loop (the driver's run-time ``lock_step`` and this harness) between
        lock-step and real time.  To real time the driver's stamps start again from the
        clock: the recorded states and commands are dropped (their stamps were simulated
        time)."""
        if on:
            if self.pub_relay is None:
                self._relay_commands()
            self.lock_step = True           # (relaying before the driver waits for it)
        res = self.set_sim_params(lock_step=bool(on))
        assert all(ok for ok, _ in res), res
        if not on:
            self.lock_step = False
            with self.lock:
                self.states.clear()
                self.commands.clear()

    def _send_desired(self, t: float, stamp) -> None:
        """Publish desired_fn(t) (nothing if it or its result is None), stamped ``stamp``."""
        fn = self.desired_fn
        state = fn(t) if fn is not None else None
        if state is not None:
            q, v, a = state
            msg = self._desired_msg
            msg.header.stamp = stamp
            msg.points = [JointTrajectoryPoint(positions=q.tolist(), velocities=v.tolist(),
                                               accelerations=a.tolist())]
            self.pub_desired.publish(msg)

    def _on_command(self, msg):
        with self.lock:
            self.commands.append((_stamp(msg), np.array(msg.effort)))

    def _on_diag(self, msg):
        for st in msg.status:
            if st.name.endswith(self.fqn):
                self.node_status = {kv.key: kv.value for kv in st.values}
            elif st.name == f"/{self.ns}/sim_driver":
                status = {kv.key: kv.value for kv in st.values}
                status["_received"] = time.monotonic()
                status["_published"] = _stamp(msg)       # the ROS clock when the driver sent it
                self.sim_status = status

    def sim_counters(self, wait=True) -> dict:
        """The driver's stall counters from a /diagnostics status received from now on
        (wait=True): commands gone stale, loop resyncs after a stall, MuJoCo resets,
        lock-step steps taken without their command (timeouts)."""
        st = self._sim_status(wait)
        return {k: int(st.get(k, 0)) for k in ("stale_periods", "resyncs", "sim_resets", "lock_step_timeouts")}

    def clamped_steps(self, wait=True) -> dict:
        """{joint: physics steps in which the driver clamped its effort at the limit} (and
        "any": steps with at least one), from a /diagnostics status received from now on
        (wait=True)."""
        st = self._sim_status(wait)
        out = {k.split("/", 1)[1]: int(v) for k, v in st.items() if k.startswith("clamped_steps/")}
        out["any"] = int(st.get("clamped_steps", 0))
        return out

    def _sim_status(self, wait):
        if wait:
            t = time.monotonic()
            self._wait(lambda: self.sim_status and self.sim_status["_received"] > t, 5.0, None)
        return self.sim_status or {}

    def _stream(self):
        """Real time: desired states at desired_rate from desired_fn(wall time)."""
        period = 1.0 / self.desired_rate
        msg = self._traj_type(joint_names=self.joints)
        clock = self.node.get_clock()
        t_next = time.monotonic()
        while not self._stop.is_set():
            fn = None if self.lock_step else self.desired_fn
            if fn is not None:
                now = clock.now()
                state = fn(now.nanoseconds * 1e-9)
                if state is not None:
                    q, v, a = state
                    msg.header.stamp = now.to_msg()
                    msg.points = [JointTrajectoryPoint(positions=q.tolist(), velocities=v.tolist(),
                                                       accelerations=a.tolist())]
                    self.pub_desired.publish(msg)
            t_next += period
            delay = t_next - time.monotonic()
            if delay < -0.05:               # stalled: do not race to catch up
                t_next = time.monotonic()
            time.sleep(max(0.0, delay))

    def now(self) -> float:
        """Seconds: the ROS clock in real time; with lock_step the simulated time, i.e. the
        stamp of the latest joint state recorded (the clock before the first)."""
        if self.lock_step:
            with self.lock:
                if self.states:
                    return self.states[-1][0]
        return self.node.get_clock().now().nanoseconds * 1e-9

    def sync(self, timeout: float = 10.0) -> float:
        """A time (s) no earlier than the loop's when this is called.  Real time: now().  With
        lock_step the loop can be ahead of what this process has recorded: the stamp of the
        latest joint state the driver had published when it sent a /diagnostics status after
        this call (a state stamped later was answered by the node after this call: after any
        parameter it set before).  TimeoutError without such a status within ``timeout`` s."""
        if not self.lock_step:
            return self.now()
        t = self.node.get_clock().now().nanoseconds * 1e-9
        if not self._wait(lambda: self.sim_status is not None and self.sim_status["_published"] > t,
                          timeout, self.sim_proc):
            raise TimeoutError("no /diagnostics from the sim driver")
        return float(self.sim_status["state_stamp_s"])

    def sleep(self, seconds: float, timeout: float | None = None) -> bool:
        """Let ``seconds`` pass: of wall-clock time in real time, of simulated time with
        lock_step (until a joint state stamped now() + seconds is recorded; False if none
        within ``timeout`` s of wall-clock time, default 30 s + 20 x seconds)."""
        if not self.lock_step:
            time.sleep(seconds)
            return True
        return self.wait_recorded(self.now() + seconds, timeout)

    def set_params(self, timeout=10.0, **values) -> list:
        """Set node parameters (one request); returns the list of (successful, reason)."""

        params = [Parameter(name=k, value=parameter_value(v)) for k, v in values.items()]
        res = self.call(SetParameters, f"{self.fqn}/set_parameters", SetParameters.Request(parameters=params),
                        timeout)
        return [(r.successful, r.reason) for r in res.results]

    def set_sim_params(self, timeout=10.0, **values) -> list:
        """Set the sim driver's run-time parameters (``wrench_duration``); returns the list
        of (successful, reason)."""
        params = [Parameter(name=k, value=parameter_value(v)) for k, v in values.items()]
        res = self.call(SetParameters, f"/{self.ns}/sim_driver/set_parameters",
                        SetParameters.Request(parameters=params), timeout)
        return [(r.successful, r.reason) for r in res.results]

    def call(self, srv_type, name: str, request, timeout=10.0):
        """Call service ``name`` (absolute, or relative to the node: ``~/x`` -> its ``x``)
        and return the response; TimeoutError if it does not answer within ``timeout`` s."""
        if name.startswith("~/"):
            name = f"{self.fqn}/{name[2:]}"
        return call_service(self.node, srv_type, name, request, timeout)

    def record(self, topic: str, msg_type, convert=None, latched=False) -> list:
        """Record ``topic`` (``~/x``: the node's ``x``; ``sim/x``: the driver's) from now on:
        returns the list that gets (header stamp in s, convert(msg) or msg) per message
        (append only; read it under ``self.lock``).  Reliable depth 1000 (a best-effort
        reader in this loaded process loses a good part of a 500 Hz stream), transient
        local if ``latched`` (the driver's ~/applied_wrench)."""
        if topic.startswith("~/"):
            topic = f"{self.fqn}/{topic[2:]}"
        elif topic.startswith("sim/"):
            topic = f"/{self.ns}/sim_driver/{topic[4:]}"
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)
        out = []
        fn = convert or (lambda m: m)

        def on_msg(msg):
            item = (_stamp(msg), fn(msg))
            with self.lock:
                out.append(item)
        self._recordings[id(out)] = self.node.create_subscription(msg_type, topic, on_msg, qos)
        return out

    def stop_recording(self, out: list) -> None:
        """End the recording that fills ``out`` (the node stops computing an output nobody
        subscribes to)."""
        sub = self._recordings.pop(id(out), None)
        if sub is not None:       # destroyed by the spinning thread, between two spin_once
            done = threading.Event()
            self._destroy.append((sub, done))
            done.wait(5.0)

    def push(self, force, link="flange", torque=(0.0, 0.0, 0.0)):
        """Send one wrench to the driver's ~/apply_wrench (world axes at ``link``'s origin;
        applied for the driver's ``wrench_duration``)."""
        if self._pub_wrench is None:
            self._pub_wrench = self.node.create_publisher(WrenchStamped, f"/{self.ns}/sim_driver/apply_wrench", 10)
            self._wait(lambda: self._pub_wrench.get_subscription_count() > 0, 10.0, None)
        msg = WrenchStamped()
        msg.header.frame_id = link
        msg.header.stamp = self.node.get_clock().now().to_msg()
        f, m = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z = (float(x) for x in force)
        m.x, m.y, m.z = (float(x) for x in torque)
        self._pub_wrench.publish(msg)

    # ------------------------------------------------------------ data
    def wait_recorded(self, t: float, timeout: float | None = None) -> bool:
        """Until a joint state stamped t or later has been recorded (this process can lag
        behind the stream on a loaded machine); False if none within ``timeout`` s of
        wall-clock time (default 30 s + 20 x the seconds from now() to t: with lock_step
        the loop is as fast as the machine lets it be)."""
        if timeout is None:
            timeout = 30.0 + 20.0 * max(0.0, t - self.now())
        return self._wait(lambda: self.states and self.states[-1][0] >= t, timeout, None)

    def window(self, t0: float, t1: float):
        """(stamps, Q, V, applied effort) of the joint states stamped in [t0, t1]."""
        with self.lock:
            sel = [s for s in self.states if t0 <= s[0] <= t1]
        if not sel:
            n = len(self.joints)
            return np.zeros(0), np.zeros((0, n)), np.zeros((0, n)), np.zeros((0, n))
        return (np.array([s[0] for s in sel]), np.array([s[1] for s in sel]),
                np.array([s[2] for s in sel]), np.array([s[3] for s in sel]))
