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
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import Parameter
from rcl_interfaces.srv import SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from rbd_ros.node.params import parameter_value
from rbd_ros.node.qos import QOS_DESIRED

ROBOT = "rbd_arm7"
JOINTS = [f"joint{i}" for i in range(1, 8)]
Q0 = (0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0)     # elbow bent, wrist up: gravity loads every link
NODE_NAME = "rbd_dynamics"
# computed torque: the error obeys e'' + kd e' + kp e = 0 per joint (H(q) scales the gains
# into torques, so the wrist and the shoulder get the same bandwidth).  omega = 30 rad/s,
# critically damped: kd * (1..3 ms of loop delay) stays far below a radian of phase.
OMEGA, ZETA = 12.0, 1.0
KP, KD = OMEGA ** 2, 2.0 * ZETA * OMEGA
# the demo trajectory: q0 + A (1 - cos(2 pi k t / D)) / 2 per joint, starts and ends at rest
TRAJ_S = 4.0
TRAJ_AMP = (0.4, 0.3, 0.4, 0.3, 0.4, 0.4, 0.4)
TRAJ_K = (1, 1, 2, 1, 2, 2, 2)


# the node: computed torque from the start (it holds the arm at q0 while the driver comes
# up); no services process, no bias/inertia topics (nobody listens in the demo).
# max_desired_age and the driver's command_timeout allow a 0.25 s stall of a process on a
# loaded machine before the node falls back to the damped hold / the driver to zero effort.
NODE_PARAMS = {"command_mode": "computed_torque", "kp": [KP], "kd": [KD], "max_desired_age": 0.25,
               "service_process": False, "publish_inertia": False, "publish_bias": False}
SIM_PARAMS = {"command_timeout": 0.25, "wait_for_command": True, "diagnostics_period": 0.2}


def reference(t: float, q0=Q0, duration=TRAJ_S, amp=TRAJ_AMP, k=TRAJ_K):
    """(q, v, a) of the demo trajectory at t seconds after its start (q0 at rest outside)."""
    q0 = np.asarray(q0, dtype=float)
    if t <= 0.0 or t >= duration:
        return q0.copy(), np.zeros(q0.size), np.zeros(q0.size)
    w = 2.0 * np.pi * np.asarray(k, dtype=float) / duration
    a_ = np.asarray(amp, dtype=float)
    return (q0 + 0.5 * a_ * (1.0 - np.cos(w * t)), 0.5 * a_ * w * np.sin(w * t),
            0.5 * a_ * w * w * np.cos(w * t))


def reference_batch(t, **kw):
    """reference() at each time of the array t: (Q, V, A) of shape (len(t), 7)."""
    out = [reference(float(x), **kw) for x in np.asarray(t)]
    return tuple(np.array([o[i] for o in out]) for i in range(3))


def _stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec



def call_service(node, srv_type, name: str, request, timeout=10.0, resend_after=3.0):
    """The response of service ``name`` to ``request``, through a client on ``node`` (whose
    executor spins elsewhere); TimeoutError after ``timeout`` s.

    A new client can lose its first response: wait_for_service sees the server, but the
    server may not have discovered this client's response reader yet, and Fast DDS gives
    it 100 ms ("failed to send response (timeout)" in the server's log; seen in CI on a
    loaded machine).  So the request is sent again, on the same client, every
    ``resend_after`` s without a response, and the first response wins: only for
    services that a repeated request leaves as one request would (every one called
    here and in the tests)."""
    cli = node.create_client(srv_type, name)
    try:
        if not cli.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {name} not available")
        t_end = time.monotonic() + timeout
        futs = []
        while True:
            futs.append(cli.call_async(request))
            t_resend = time.monotonic() + resend_after
            while time.monotonic() < min(t_resend, t_end):
                done = next((f for f in futs if f.done()), None)
                if done is not None:
                    return done.result()
                time.sleep(0.002)
            if time.monotonic() >= t_end:
                raise TimeoutError(f"no response from {name} ({len(futs)} requests)")
    finally:
        node.destroy_client(cli)


class ClosedLoop:
    """The node and the sim driver in subprocesses under namespace ``/ns``, and an rclpy
    node here (own context, spun in a thread) that records ``joint_states`` (and
    optionally ``~/effort_command_state``), streams desired states from a function of
    wall time and sets the node's parameters.  Times are wall-clock seconds (the stamps
    of the ROS clock both processes publish with)."""

    def __init__(self, ns: str, node_params: dict, *, q0=Q0, sim_params: dict | None = None,
                 desired_rate: float = 500.0, record_commands: bool = False, robot=ROBOT):

        self.ns = ns.strip("/")
        self.fqn = f"/{self.ns}/{NODE_NAME}"
        self.q0 = tuple(float(x) for x in q0)
        self.robot = robot
        self.node_params = dict(node_params)
        self.sim_params = dict(sim_params or {})
        self.desired_rate = desired_rate
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
        if record_commands:
            self.node.create_subscription(JointState, f"{self.fqn}/effort_command_state",
                                          self._on_command, deep)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)
        self.pub_desired = self.node.create_publisher(JointTrajectory, f"{self.fqn}/desired_state",
                                                      QOS_DESIRED)
        self._traj_type = JointTrajectory
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
    def _env(self):
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        env["RCUTILS_COLORIZED_OUTPUT"] = "0"
        return env

    def _popen(self, what, args):
        log = tempfile.NamedTemporaryFile("w+", prefix=f"rbd_{what}_{self.ns}_", suffix=".log",
                                          delete=False)
        self._tmp.append(log.name)
        self._logs[what] = log.name
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self._env())

    def log(self, what: str) -> str:
        """The output of 'node' or 'sim' so far."""
        try:
            with open(self._logs[what]) as f:
                return f.read()
        except (KeyError, OSError):
            return ""

    def start_node(self):
        params = {"urdf_file": self.robot, "diagnostics_period": 0.2, **self.node_params}
        pf = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        yaml.safe_dump({f"/**/{NODE_NAME}": {"ros__parameters": params}}, pf)
        pf.close()
        self._tmp.append(pf.name)
        self.node_proc = self._popen("node", [sys.executable, "-m", "rbd_ros.node", "--ros-args",
                                              "-r", f"__ns:=/{self.ns}", "--params-file", pf.name])

    def wait_node_ready(self, timeout=60.0) -> bool:
        """Until the node's /diagnostics shows its model (it then waits for joint states)."""
        return self._wait(lambda: self.node_status is not None
                          and self.node_status.get("model") not in (None, ""), timeout,
                          self.node_proc)

    def start_sim(self):
        p = {"urdf_file": self.robot, "initial_positions": list(self.q0),
             "command_timeout": 0.05, **self.sim_params}
        args = [sys.executable, "-m", "rbd_ros.sim", "--ros-args", "-r", f"__ns:=/{self.ns}",
                # the wiring: the driver's effort input <- the node's ~/effort_command
                "-r", f"effort_command:={self.fqn}/effort_command"]
        for k, v in p.items():
            args += ["-p", f"{k}:={v}"]
        self.sim_proc = self._popen("sim", args)

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

    def stop_node(self, timeout=10.0) -> int | None:
        return self._stop_proc(self.node_proc, timeout)

    @staticmethod
    def _stop_proc(proc, timeout):
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

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

    def _on_command(self, msg):
        with self.lock:
            self.commands.append((_stamp(msg), np.array(msg.effort)))

    def _on_diag(self, msg):
        for st in msg.status:
            if st.name.endswith(self.fqn):
                self.node_status = {kv.key: kv.value for kv in st.values}
            elif st.name == f"/{self.ns}/sim_driver":
                self.sim_status = {kv.key: kv.value for kv in st.values}
                self.sim_status["_received"] = time.monotonic()

    def sim_counters(self, wait=True) -> dict:
        """The driver's stall counters from a /diagnostics status received from now on
        (wait=True): commands gone stale, loop resyncs after a stall, MuJoCo resets."""
        if wait:
            t = time.monotonic()
            self._wait(lambda: self.sim_status and self.sim_status["_received"] > t, 5.0, None)
        st = self.sim_status or {}
        return {k: int(st.get(k, 0)) for k in ("stale_periods", "resyncs", "sim_resets")}

    def _stream(self):
        """Desired states at desired_rate from desired_fn(wall time)."""
        period = 1.0 / self.desired_rate
        msg = self._traj_type(joint_names=list(JOINTS))
        clock = self.node.get_clock()
        t_next = time.monotonic()
        while not self._stop.is_set():
            fn = self.desired_fn
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
        return self.node.get_clock().now().nanoseconds * 1e-9

    def set_params(self, timeout=10.0, **values) -> list:
        """Set node parameters (one request); returns the list of (successful, reason)."""

        params = [Parameter(name=k, value=parameter_value(v)) for k, v in values.items()]
        res = self.call(SetParameters, f"{self.fqn}/set_parameters", SetParameters.Request(parameters=params),
                        timeout)
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
    def wait_recorded(self, t: float, timeout=10.0) -> bool:
        """Until a joint state stamped t or later has been recorded (this process can lag
        behind the stream on a loaded machine)."""
        return self._wait(lambda: self.states and self.states[-1][0] >= t, timeout, None)

    def window(self, t0: float, t1: float):
        """(stamps, Q, V, applied effort) of the joint states stamped in [t0, t1]."""
        with self.lock:
            sel = [s for s in self.states if t0 <= s[0] <= t1]
        if not sel:
            return np.zeros(0), np.zeros((0, 7)), np.zeros((0, 7)), np.zeros((0, 7))
        return (np.array([s[0] for s in sel]), np.array([s[1] for s in sel]),
                np.array([s[2] for s in sel]), np.array([s[3] for s in sel]))


# ---------------------------------------------------------------- the three measurements


def settle(loop: ClosedLoop, q0=Q0, tol=5e-3, vtol=5e-2, hold=0.3, timeout=30.0) -> bool:
    """Computed torque to q0 (the driver steps from start-up on, so the arm has fallen and
    swung until the node's first command reached it) until the arm has stayed within tol
    rad of q0 and vtol rad/s of rest for `hold` s."""
    loop.desired_fn = lambda t: reference(0.0, q0)
    res = loop.set_params(command_mode="computed_torque")
    assert all(ok for ok, _ in res), res
    q0 = np.asarray(q0)

    def still():   # under command (the driver applies an effort) and at rest near q0
        t1 = loop.now()
        t, Q, V, E = loop.window(t1 - hold, t1)
        return len(t) > 10 and t[-1] - t[0] > 0.8 * hold and np.all(np.any(E != 0.0, axis=1)) \
            and np.max(np.abs(Q - q0)) < tol and np.max(np.abs(V)) < vtol
    return loop._wait(still, timeout, loop.node_proc)
