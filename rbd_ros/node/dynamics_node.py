"""The rbd_ros dynamics node (rclpy).

Threads and executors
---------------------
* control path: a small node ``<name>_control`` that holds only the
  ``joint_states`` subscription, spun by its own executor in the main thread
  (rclpy's EventsExecutor by default, or a SingleThreadedExecutor with
  ``control_executor: single``).  Its callback merges the state, calls
  rbd_ros.core and publishes preallocated messages.
* background: the main node ``<name>`` (parameters, ``robot_description``,
  services, ``/diagnostics``), spun by a SingleThreadedExecutor in a second
  thread.  Model builds, parameter changes and service requests (including
  the (de)serialisation of long trajectories) run here; the numba kernels
  release the GIL, and the GIL switch interval is shortened so the control
  thread gets the interpreter back quickly.
Publishing from the control thread on the main node's publishers is safe in
rclpy (publishers need no executor).
"""
from __future__ import annotations

import gc
import json
import math
import os
import queue
import subprocess
import sys
import threading
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import (FloatingPointRange, ParameterDescriptor, ParameterType,
                                SetParametersResult)
from rclpy.exceptions import ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

from rbd_ros.node import runtime as rtm
from rbd_ros.node import services as svc

DEFAULT_NAME = "rbd_dynamics"

# topics (relative to the node: ~/ = /<namespace>/<node name>/)
TOPIC_JOINT_STATES = "joint_states"
TOPIC_DESCRIPTION = "robot_description"
TOPIC_GRAVITY = "~/gravity_torques"
TOPIC_GRAVITY_STATE = "~/gravity_torques_state"
TOPIC_BIAS = "~/bias_torques"
TOPIC_BIAS_STATE = "~/bias_torques_state"
TOPIC_INERTIA = "~/inertia_matrix"
TOPIC_DIAGNOSTICS = "/diagnostics"
SRV_ID = "~/inverse_dynamics"
SRV_ID_TRAJ = "~/inverse_dynamics_trajectory"
SRV_FD = "~/forward_dynamics"
SRV_FD_TRAJ = "~/forward_dynamics_trajectory"

# Executors wake on work and on shutdown; this timeout only bounds an idle wait.  Each
# empty spin_once of the main node is ~190 us of Python holding the GIL, which the
# control thread then waits for: at 10 Hz (0.1 s) that delayed ~1 % of the messages.
IDLE_WAKE_S = 1.0

# A new subscriber to an output gets data within this time (counts are cached).
COUNTS_PERIOD_S = 0.05

STRUCTURAL = ("robot_description", "urdf_file", "joints", "gravity", "floating_base", "mimic")

QOS_DESCRIPTION = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
QOS_JOINT_STATES_RELIABLE = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                                       reliability=ReliabilityPolicy.RELIABLE,
                                       durability=DurabilityPolicy.VOLATILE)
QOS_OUTPUT = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)


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


def create_dynamics_services(node, base_name: str, get_runtime, log):
    """The four services under ``base_name`` (the dynamics node's fully qualified name),
    answered with the runtime returned by get_runtime().  ImportError if
    rbd_ros_interfaces is missing."""
    from rbd_ros_interfaces import srv as isrv
    table = [
        (isrv.InverseDynamics, SRV_ID, svc.inverse_dynamics),
        (isrv.InverseDynamicsTrajectory, SRV_ID_TRAJ, svc.inverse_dynamics_trajectory),
        (isrv.ForwardDynamics, SRV_FD, svc.forward_dynamics),
        (isrv.ForwardDynamicsTrajectory, SRV_FD_TRAJ, svc.forward_dynamics_trajectory),
    ]
    services = []
    for srv_type, rel, fn in table:
        name = base_name.rstrip("/") + "/" + rel[2:]

        def callback(request, response, fn=fn, name=name):
            try:
                response = fn(get_runtime(), request, response)
            except Exception as e:  # never let a request kill the node
                response.success = False
                response.message = f"internal error: {type(e).__name__}: {e}"
                log.error(f"{name}: {response.message}")
            if not response.success:
                log.warning(f"{name}: request refused: {response.message}",
                            throttle_duration_sec=1.0)
            return response

        services.append(node.create_service(srv_type, name, callback))
    return services


def freeze_heap():
    """Collect once, then move every object alive now (numba, llvmlite, rclpy, the model:
    ~120 000 objects) out of the cyclic garbage collector's reach (gc.freeze).  A full
    collection over them took 50-135 ms here and stalls the control path long enough to
    overflow a depth-10 joint_states queue at 1 kHz; afterwards it only scans what was
    allocated since.  Objects created later (new models) are collected as usual."""
    gc.collect()
    gc.freeze()


def _short(names, n=10):
    return str(list(names[:n]))[:-1] + (", ...]" if len(names) > n else "]")


def _msg(msg_type):
    try:
        return msg_type(check_fields=True)
    except TypeError:  # distributions before Jazzy: setters always check (and keep arrays)
        return msg_type()


class Stats:
    """Counters and timing of the control path (written by the control thread only)."""

    def __init__(self, window: int = 4096):
        self.msgs_in = 0
        self.msgs_out = 0
        self.dropped = {}
        self.not_ready = 0
        self.rate_limited = 0
        self.window = window
        self.callback_us = np.zeros(window)
        self.compute_us = np.zeros(window)
        self.publish_us = np.zeros(window)
        self.n = 0
        self.last_error = ""
        self.last_error_time = 0.0

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def record(self, callback_us: float, compute_us: float, publish_us: float) -> None:
        k = self.n % self.window
        self.callback_us[k] = callback_us
        self.compute_us[k] = compute_us
        self.publish_us[k] = publish_us
        self.n += 1

    def error(self, text: str) -> None:
        self.last_error = text
        self.last_error_time = time.time()

    def percentiles(self):
        m = min(self.n, self.window)
        if m == 0:
            return None
        cb = np.percentile(self.callback_us[:m], [50, 99])
        co = np.percentile(self.compute_us[:m], [50, 99])
        pu = np.percentile(self.publish_us[:m], [50, 99])
        return cb, co, pu


class DynamicsNode:
    """Owns both rclpy nodes; see the module docstring."""

    def __init__(self, *, context=None, node_name: str = DEFAULT_NAME, namespace: str = None,
                 cli_args=None):
        self.context = context
        kw = {"context": context}
        if namespace is not None:
            kw["namespace"] = namespace
        if cli_args is not None:
            kw["cli_args"] = cli_args
        self.node = Node(node_name, **kw)
        self.log = self.node.get_logger()
        self.stats = Stats()
        self.runtime = None          # swapped atomically; read once per message
        self._build_lock = threading.Lock()
        self._pending = None

        for name, default, descriptor in PARAMETERS:
            self.node.declare_parameter(name, default, descriptor)
        p = self._params()
        self.publish_bias = p["publish_bias"]
        self.publish_inertia = p["publish_inertia"]
        self.max_state_age = p["max_state_age"]
        self.min_period = 1.0 / p["max_publish_rate"] if p["max_publish_rate"] > 0 else 0.0
        self._last_publish = -math.inf
        self._counts_at = -math.inf  # subscriber counts of the outputs, and when read
        self._counts = (0, 0, 0, 0, 0)
        self.control_executor_kind = p["control_executor"]
        if self.control_executor_kind not in ("single", "events"):
            self.log.error(f"parameter control_executor: expected 'events' or 'single', got "
                           f"{self.control_executor_kind!r}; using 'events'")
            self.control_executor_kind = "events"

        n = self.node
        self.pub_g = n.create_publisher(Float64MultiArray, TOPIC_GRAVITY, QOS_OUTPUT)
        self.pub_gs = n.create_publisher(JointState, TOPIC_GRAVITY_STATE, QOS_OUTPUT)
        self.pub_b = n.create_publisher(Float64MultiArray, TOPIC_BIAS, QOS_OUTPUT)
        self.pub_bs = n.create_publisher(JointState, TOPIC_BIAS_STATE, QOS_OUTPUT)
        self.pub_h = n.create_publisher(Float64MultiArray, TOPIC_INERTIA, QOS_OUTPUT)
        self.pub_diag = n.create_publisher(DiagnosticArray, TOPIC_DIAGNOSTICS, 10)

        # initial model from parameters (before anything spins)
        self._source = None  # (urdf text, where) of the loaded model
        try:
            source = self._description_from_params(p)
        except (ValueError, OSError) as e:
            source = None
            self.log.error(f"{e}; waiting for the robot_description topic")
            self.stats.error(str(e))
        if source is not None:
            self._try_swap(source[0], source[1], p)
        else:
            self.log.info("no model from parameters: waiting for the "
                          f"{n.resolve_topic_name(TOPIC_DESCRIPTION)} topic")
        self.sub_description = n.create_subscription(
            String, TOPIC_DESCRIPTION, self._on_description, QOS_DESCRIPTION)

        self._create_services(p)

        n.add_on_set_parameters_callback(self._on_set_parameters)
        n.add_post_set_parameters_callback(self._post_set_parameters)
        self.diag_timer = n.create_timer(p["diagnostics_period"], self._publish_diagnostics)

        # control node: only the joint_states subscription, resolved against the main node's
        # name, namespace and remappings
        js_topic = n.resolve_topic_name(TOPIC_JOINT_STATES)
        self.control = Node(n.get_name() + "_control", namespace=n.get_namespace(),
                            context=context, use_global_arguments=False,
                            start_parameter_services=False)
        qos = QOS_JOINT_STATES_RELIABLE if p["joint_states_reliable"] else qos_profile_sensor_data
        self.sub_js = self.control.create_subscription(JointState, js_topic, self._on_joint_state,
                                                       qos)
        self.log.info(
            f"listening on {js_topic} ({'reliable' if p['joint_states_reliable'] else 'best effort'})"
            f", publishing {n.resolve_topic_name(TOPIC_GRAVITY)} and friends")

    # ------------------------------------------------------------ parameters
    def _params(self) -> dict:
        out = {}
        for name, _, _ in PARAMETERS:
            try:
                out[name] = self.node.get_parameter(name).value
            except ParameterUninitializedException:  # joints: declared without a value
                out[name] = None
        out["joints"] = list(out["joints"] or [])
        out["gravity"] = list(out["gravity"])
        return out

    @staticmethod
    def _description_from_params(p):
        if p["robot_description"].strip():
            return p["robot_description"], "parameter robot_description"
        if p["urdf_file"].strip():
            path = rtm.resolve_urdf_file(p["urdf_file"].strip())
            with open(path) as f:
                return f.read(), f"file {path}"
        return None

    def _on_set_parameters(self, params):
        new = self._params()
        for prm in params:
            value = prm.value
            if prm.name == "joints":
                value = list(value or [])
            new[prm.name] = value
        g = new["gravity"]
        if len(g) != 3 or not all(math.isfinite(x) for x in g):
            return SetParametersResult(successful=False,
                                       reason=f"gravity: expected 3 finite numbers, got {list(g)}")
        if any(prm.name in STRUCTURAL for prm in params):
            try:
                source = self._source
                if any(prm.name in ("robot_description", "urdf_file") for prm in params) \
                        or source is None:
                    source = self._description_from_params(new) or source
                if source is not None:
                    rt = self._build(source[0], source[1], new)
                    self._pending = (rt, source)
            except (ValueError, OSError) as e:  # rbd.ModelError is a ValueError
                return SetParametersResult(successful=False, reason=str(e))
        return SetParametersResult(successful=True)

    def _post_set_parameters(self, params):
        self._counts_at = -math.inf  # publish_bias / publish_inertia may have changed
        p = self._params()
        self.publish_bias = p["publish_bias"]
        self.publish_inertia = p["publish_inertia"]
        self.max_state_age = p["max_state_age"]
        self.min_period = 1.0 / p["max_publish_rate"] if p["max_publish_rate"] > 0 else 0.0
        pending, self._pending = self._pending, None
        if pending is not None:
            self._source = pending[1]
            self._swap(pending[0])

    # ----------------------------------------------------------------- model
    def _build(self, text: str, where: str, p: dict):
        with self._build_lock:
            return rtm.build_runtime(text, floating_base=p["floating_base"], mimic=p["mimic"],
                                     gravity=p["gravity"], joints=p["joints"], source=where)

    def _attach_messages(self, rt):
        """Preallocated output messages sharing the runtime's buffers."""
        # The messages hold the runtime's array.array buffers themselves, so the control path
        # only writes numbers into them.  Constructors copy, and without check_fields the
        # setters copy too (Jazzy), so build with check_fields=True and assign via the setters;
        # rt.shared says whether that worked (else the control path reassigns per message).
        names = list(rt.out_names)
        rt.msg_g, rt.msg_b, rt.msg_h = _msg(Float64MultiArray), _msg(Float64MultiArray), \
            _msg(Float64MultiArray)
        rt.msg_g.data, rt.msg_b.data, rt.msg_h.data = rt.g_buf, rt.b_buf, rt.h_buf
        for m in (rt.msg_g, rt.msg_b):
            m.layout.dim = [MultiArrayDimension(label="joints", size=rt.nout, stride=rt.nout)]
        rt.msg_gs, rt.msg_bs = _msg(JointState), _msg(JointState)
        rt.msg_gs.name, rt.msg_bs.name = names, list(names)
        rt.msg_gs.effort, rt.msg_bs.effort = rt.g_buf, rt.b_buf
        rt.shared = (rt.msg_g.data is rt.g_buf and rt.msg_b.data is rt.b_buf
                     and rt.msg_h.data is rt.h_buf and rt.msg_gs.effort is rt.g_buf
                     and rt.msg_bs.effort is rt.b_buf)
        rt.msg_h.layout.dim = [
            MultiArrayDimension(label="rows", size=rt.nout, stride=rt.nout * rt.nout),
            MultiArrayDimension(label="cols", size=rt.nout, stride=rt.nout)]
        rt.msg_h.layout.data_offset = 0

    def _swap(self, rt):
        self._attach_messages(rt)
        old = self.runtime
        if old is not None:
            rt.adopt_state(old)
        self.runtime = rt  # atomic: the control path reads self.runtime once per message
        self._send_model(rt)
        m = rt.model
        self.log.info(f"model {m.name!r} loaded from {rt.source}: {rt.ndof} joint DOF"
                      f"{' + floating base' if rt.floating else ''}, {m.mass:.3f} kg; outputs in "
                      f"order {list(rt.out_names)}")

    def _try_swap(self, text: str, where: str, p: dict = None) -> bool:
        try:
            rt = self._build(text, where, p or self._params())
        except (ValueError, OSError) as e:
            old = self.runtime
            keep = f"keeping model {old.model.name!r}" if old is not None else "no model loaded"
            msg = f"robot description from {where} rejected: {e} ({keep})"
            self.log.error(msg)
            self.stats.error(msg)
            return False
        self._source = (text, where)
        self._swap(rt)
        return True

    def _on_description(self, msg: String):
        where = "topic " + self.node.resolve_topic_name(TOPIC_DESCRIPTION)
        try:
            self._try_swap(msg.data, where)
        except Exception as e:  # anything unexpected: keep the old model, keep running
            text = f"robot description from {where} rejected: {type(e).__name__}: {e}"
            self.log.error(text)
            self.stats.error(text)

    # ----------------------------------------------------------- control path
    def _on_joint_state(self, msg: JointState):
        t0 = time.perf_counter()
        st = self.stats
        st.msgs_in += 1
        rt = self.runtime
        if rt is None:
            st.not_ready += 1
            return
        now = time.monotonic()
        status, detail = rt.update(msg.name, msg.position, msg.velocity, now)
        if status != "ok":
            if status == "no_velocity":
                key = tuple(msg.name)
                if key not in rt.warned_no_velocity:
                    rt.warned_no_velocity.add(key)
                    self.log.warning(f"joint_states without velocities for {list(msg.name)}: "
                                     f"taking them as zero (warned once)")
            else:
                st.drop(status)
                text = f"joint_states message dropped ({status}): {detail}"
                st.error(text)
                self.log.warning(text, throttle_duration_sec=2.0)
                return
        if detail:
            unknown = frozenset(detail)
            if unknown not in rt.warned_unknown:
                rt.warned_unknown.add(unknown)
                self.log.warning(f"joint_states: ignoring joints not in the model: {sorted(unknown)}"
                                 " (warned once)")
        if not rt.ready_after_update(now, self.max_state_age):
            st.not_ready += 1
            return
        if self.min_period and now - self._last_publish < self.min_period:
            st.rate_limited += 1
            return
        # outputs nobody subscribes to are neither computed nor published (serialising and
        # sending costs 10-100 us per message, b and H ~2.5 us); g is always computed.
        # Subscriber counts are re-read every COUNTS_PERIOD_S (5 calls, ~3.5 us).
        if now - self._counts_at >= COUNTS_PERIOD_S:
            self._counts_at = now
            self._counts = (
                self.pub_g.get_subscription_count(), self.pub_gs.get_subscription_count(),
                self.pub_b.get_subscription_count() if self.publish_bias else 0,
                self.pub_bs.get_subscription_count() if self.publish_bias else 0,
                self.pub_h.get_subscription_count() if self.publish_inertia else 0)
        n_g, n_gs, n_b, n_bs, n_h = self._counts
        t1 = time.perf_counter()
        try:
            rt.compute(bool(n_b or n_bs), bool(n_h))
            failed = None
        except ValueError as e:  # non-finite state or result: never publish it
            failed = str(e)
        t2 = time.perf_counter()
        if failed is not None:
            st.drop("compute_failed")
            text = f"dynamics not published: {failed}"
            st.error(text)
            self.log.error(text, throttle_duration_sec=2.0)
            return
        stamp = msg.header.stamp
        if not rt.shared:
            rt.msg_g.data = rt.msg_gs.effort = rt.g_buf
            rt.msg_b.data = rt.msg_bs.effort = rt.b_buf
            rt.msg_h.data = rt.h_buf
        if n_g:
            self.pub_g.publish(rt.msg_g)
        if n_gs:
            rt.msg_gs.header.stamp = stamp
            self.pub_gs.publish(rt.msg_gs)
        if n_b:
            self.pub_b.publish(rt.msg_b)
        if n_bs:
            rt.msg_bs.header.stamp = stamp
            self.pub_bs.publish(rt.msg_bs)
        if n_h:
            self.pub_h.publish(rt.msg_h)
        self._last_publish = now
        st.msgs_out += 1
        t4 = time.perf_counter()
        st.record((t4 - t0) * 1e6, (t2 - t1) * 1e6, (t4 - t2) * 1e6)

    # --------------------------------------------------------------- services
    def _create_services(self, p):
        self.services_error = None
        self.worker = None
        self.services_ready = False
        try:
            import rbd_ros_interfaces.srv  # noqa: F401
        except ImportError as e:
            self.services_error = (
                f"rbd_ros_interfaces is not available ({e}): the inverse/forward dynamics "
                "services are OFF; the torque topics work. Build the package (colcon build "
                "--base-paths src src/rbd_ros/rbd_ros_interfaces, or "
                "scripts/build_interfaces.sh VENV) and restart the node.")
            self.log.error(self.services_error)
            self.stats.error(self.services_error)
            return
        if p["service_process"]:
            self._worker_restarts = 0
            self._start_worker()
        else:
            self.services = create_dynamics_services(
                self.node, self.node.get_fully_qualified_name(), lambda: self.runtime, self.log)
            self.services_ready = True

    # ---------------------------------------------------- service worker process
    def _start_worker(self):
        threads = int(self.node.get_parameter("service_threads").value)
        if threads <= 0:
            threads = max(1, (os.cpu_count() or 2) - 1)
        rt = self.runtime
        args = [sys.executable, "-m", "rbd_ros.node.service_worker",
                self.node.get_fully_qualified_name(), str(threads), "1" if rt else "0"]
        worker = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        worker.queue = queue.Queue()
        self.worker = worker
        self.log.info(f"service worker started (pid {worker.pid})")
        threading.Thread(target=self._read_worker, args=(worker,), daemon=True,
                         name="rbd_ros_worker_reader").start()
        threading.Thread(target=self._write_worker, args=(worker,), daemon=True,
                         name="rbd_ros_worker_writer").start()
        if rt is not None:
            self._send_model(rt)

    def _send_model(self, rt):
        """Queue the model for the worker (a writer thread feeds its stdin: never blocks)."""
        worker = getattr(self, "worker", None)
        if worker is None or self._source is None:
            return
        worker.queue.put(json.dumps(dict(rt.options, urdf=self._source[0], where=rt.source)))

    def _write_worker(self, worker):
        while True:
            line = worker.queue.get()
            if line is None:
                break
            try:
                worker.stdin.write(line + "\n")
                worker.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as e:
                if not getattr(self, "_closing", False):
                    self.log.error(f"service worker unreachable: {e}")
                break

    def _read_worker(self, worker):
        for line in worker.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("event") == "ready":
                self.services_ready = True
                self.log.info("services ready (worker process)")
            elif ev.get("event") == "model" and not ev.get("ok"):
                self.stats.error(f"service worker: {ev.get('error')}")
        code = worker.wait()
        self.services_ready = False
        if getattr(self, "_closing", False):
            return
        self._worker_restarts += 1
        text = f"service worker exited with code {code}"
        self.stats.error(text)
        if self._worker_restarts <= 5:
            self.log.error(text + "; restarting it")
            time.sleep(1.0)
            if not getattr(self, "_closing", False):
                self._start_worker()
        else:
            self.services_error = text + " too often; services are OFF"
            self.log.error(self.services_error)

    def _stop_worker(self):
        self._closing = True
        worker = getattr(self, "worker", None)
        if worker is None:
            return
        worker.queue.put(None)
        try:
            worker.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            worker.wait(3.0)
        except subprocess.TimeoutExpired:
            worker.terminate()
            try:
                worker.wait(2.0)
            except subprocess.TimeoutExpired:
                worker.kill()

    # ------------------------------------------------------------ diagnostics
    def _publish_diagnostics(self):
        st, rt = self.stats, self.runtime
        status = DiagnosticStatus()
        status.name = f"rbd_ros: {self.node.get_fully_qualified_name()}"
        kv = []
        if rt is None:
            status.level = DiagnosticStatus.WARN
            status.message = "no robot model (waiting for robot_description)"
            kv += [KeyValue(key="model", value=""), KeyValue(key="dof", value="0")]
        else:
            status.hardware_id = rt.model.name
            now = time.monotonic()
            if rt.ready(now, self.max_state_age):
                status.level = DiagnosticStatus.OK
                status.message = "streaming"
            else:
                status.level = DiagnosticStatus.WARN
                missing, stale = rt.missing_and_stale(now, self.max_state_age)
                parts = []
                if missing:
                    parts.append(f"never received {_short(missing)}")
                if stale:
                    parts.append(f"older than max_state_age {self.max_state_age:g} s "
                                 f"{_short(stale)}")
                status.message = "waiting for joint states: " + "; ".join(parts)
            kv += [KeyValue(key="model", value=rt.model.name),
                   KeyValue(key="dof", value=str(rt.ndof)),
                   KeyValue(key="floating_base", value=str(rt.floating).lower()),
                   KeyValue(key="model_source", value=rt.source)]
        dropped = sum(st.dropped.values())
        kv += [KeyValue(key="messages_in", value=str(st.msgs_in)),
               KeyValue(key="messages_out", value=str(st.msgs_out)),
               KeyValue(key="messages_dropped", value=str(dropped))]
        for reason, count in sorted(st.dropped.items()):
            kv.append(KeyValue(key=f"dropped_{reason}", value=str(count)))
        kv += [KeyValue(key="waiting_for_state", value=str(st.not_ready)),
               KeyValue(key="rate_limited", value=str(st.rate_limited))]
        pct = st.percentiles()
        if pct is not None:
            (cb50, cb99), (co50, co99), (pu50, pu99) = pct
            kv += [KeyValue(key="compute_time_p50_us", value=f"{co50:.1f}"),
                   KeyValue(key="compute_time_p99_us", value=f"{co99:.1f}"),
                   KeyValue(key="callback_time_p50_us", value=f"{cb50:.1f}"),
                   KeyValue(key="callback_time_p99_us", value=f"{cb99:.1f}"),
                   KeyValue(key="publish_time_p50_us", value=f"{pu50:.1f}"),
                   KeyValue(key="publish_time_p99_us", value=f"{pu99:.1f}")]
        services = ("off" if self.services_error else
                    ("on" if self.services_ready else "starting")
                    + (f" (worker pid {self.worker.pid})" if self.worker else " (in process)"))
        kv += [KeyValue(key="services", value=services),
               KeyValue(key="last_error", value=st.last_error)]
        if self.services_error:
            status.level = max(status.level, DiagnosticStatus.WARN)
            status.message += "; services off (see last_error / the log)"
        status.values = kv
        arr = DiagnosticArray()
        arr.header.stamp = self.node.get_clock().now().to_msg()
        arr.status = [status]
        self.pub_diag.publish(arr)

    # ---------------------------------------------------------------- running
    def spin(self, switch_interval: float = 0.0002):
        """Spin the background executor in a thread and the control path here until shutdown."""
        if switch_interval:
            sys.setswitchinterval(switch_interval)
        freeze_heap()
        bg = SingleThreadedExecutor(context=self.context)
        bg.add_node(self.node)
        self.bg_executor = bg
        bg_thread = threading.Thread(target=self._spin_background, args=(bg,), daemon=True,
                                     name="rbd_ros_background")
        bg_thread.start()
        ctx = self.context or rclpy.get_default_context()
        try:
            ex = self._control_executor()
            ex.add_node(self.control)
            while ctx.ok():
                ex.spin_once(timeout_sec=IDLE_WAKE_S)
        except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
            pass
        finally:
            bg.shutdown(timeout_sec=1.0)

    def _control_executor(self):
        if self.control_executor_kind == "events":
            try:
                from rclpy.experimental import EventsExecutor
                return EventsExecutor(context=self.context)
            except ImportError as e:  # rclpy before Jazzy
                self.log.warning(f"control_executor: events is not available in this rclpy ({e}); "
                                 "using single")
                self.control_executor_kind = "single"
        return SingleThreadedExecutor(context=self.context)

    def _spin_background(self, ex):
        ctx = self.context or rclpy.get_default_context()
        self._limit_numba_threads()
        while ctx.ok():
            try:
                ex.spin_once(timeout_sec=IDLE_WAKE_S)
            except (rclpy.executors.ExternalShutdownException, KeyboardInterrupt):
                return
            except Exception as e:  # a failing callback must not stop services/diagnostics
                if not ctx.ok():
                    return
                text = f"background callback failed: {type(e).__name__}: {e}"
                self.stats.error(text)
                self.log.error(text, throttle_duration_sec=1.0)

    def _limit_numba_threads(self):
        """Batch kernels run numba prange loops; cap their threads in this (background)
        thread only -- numba's thread count is per calling thread."""
        try:
            import numba
            n = int(self.node.get_parameter("service_threads").value)
            if n <= 0:
                n = max(1, (os.cpu_count() or 2) - 1)
            n = min(n, numba.config.NUMBA_NUM_THREADS)
            numba.set_num_threads(n)
            self.service_threads = n
        except Exception as e:  # not fatal: batches then use every core
            self.log.warning(f"could not limit numba threads: {e}")

    def destroy(self):
        self._stop_worker()
        self.control.destroy_node()
        self.node.destroy_node()
