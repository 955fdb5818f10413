"""The rbd_ros dynamics node (rclpy): composition of the parts (ARCHITECTURE.md has the
module map).

Threads and executors
---------------------
* control path: a small node ``<name>_control`` that holds only the
  ``joint_states`` and ``~/desired_state`` subscriptions, spun by its own executor
  in the main thread (rclpy's EventsExecutor by default, or a SingleThreadedExecutor
  with ``control_executor: single``).  Its callbacks (control_path.py) merge the state,
  call the terms (terms.py) and publish preallocated messages.
* background: the main node ``<name>`` (parameters, ``robot_description``,
  ``~/set_payload``, ``~/estimate_payload``, ``~/payload``, services, ``/diagnostics``), spun by a
  SingleThreadedExecutor in a second thread.  Model builds (URDF, armature,
  payload changes), parameter changes and in-process service requests run
  here, one at a time; the numba kernels release the GIL, and the GIL switch interval is
  shortened so the control thread gets the interpreter back quickly.
Publishing from the control thread on the main node's publishers is safe in
rclpy (publishers need no executor).
"""
from __future__ import annotations

import sys
import threading
import time

import numba
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import InertiaStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from rbd_ros.node import (
    constrained_services,
    diagnostics,
    held_state,
    names,
    param_table,
    params,
    payload_estimation,
    planner_services,
    qos,
    terms,
)
from rbd_ros.node import payload as pl
from rbd_ros.node.control_path import ControlPath
from rbd_ros.node.heap import freeze_heap
from rbd_ros.node.model_manager import ModelManager, friction_eps
from rbd_ros.node.relay import TrajectoryRelay
from rbd_ros.node.services import create_dynamics_services
from rbd_ros.node.stats import Stats
from rbd_ros.node.worker_client import WorkerClient

try:    # rbd_ros_interfaces may be missing (the node says so at start-up): no ~/contacts then
    from rbd_ros_interfaces.msg import Contacts
except ImportError:     # pragma: no cover - a broken install
    Contacts = None

DEFAULT_NAME = names.DEFAULT_NAME

# Executors wake on work and on shutdown; this timeout only bounds an idle wait.  Each
# empty spin_once of the main node is ~190 us of Python holding the GIL, which the
# control thread then waits for: at 10 Hz (0.1 s) that delayed ~1 % of the messages.
IDLE_WAKE_S = 1.0

# The service worker starts once the control path has published its first output (its
# start -- ~1 s of CPU in imports, then its kernels -- would compete with the node's last
# steps before it), at the latest WORKER_WAIT_S after spinning began, and after
# WORKER_GRACE_S if nothing publishes joint states by then (no first output is coming soon).
WORKER_WAIT_S = 1.0
WORKER_GRACE_S = 0.3
WORKER_POLL_S = 0.02


def _plain(value):
    """A parameter value as the table checks it (arrays as lists)."""
    return list(value) if not isinstance(value, (str, bytes, bool, int, float)) and value is not None else value


def worker_start_reason(outputs: int, waited: float, publishers):
    """Why the service worker may start now, or None to wait (see WORKER_WAIT_S):
    ``outputs`` published so far, ``waited`` s since spinning began, ``publishers()`` the
    number of joint_states publishers (asked only once WORKER_GRACE_S has passed)."""
    if outputs > 0:
        return "the first output is out"
    if waited >= WORKER_WAIT_S:
        return f"no output after {WORKER_WAIT_S:g} s"
    if waited >= WORKER_GRACE_S and publishers() == 0:
        return f"nothing publishes joint states after {WORKER_GRACE_S:g} s"
    return None


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
        self.node = n = Node(node_name, **kw)
        self.log = n.get_logger()
        self.stats = Stats()
        self._pending = None  # (robot, source) validated by the on-set callback
        self.worker = None
        self.relay = None     # the in-process trajectory relay (service_process: false)
        self.services_error = None
        self.services_ready = False
        self.sub_payload = None      # ~/payload, created with the first model (latched input)
        self.payload_rejected = 0    # ~/payload messages refused
        self._stopping = threading.Event()  # request_stop(): spin() returns
        self._executors = []                # spin()'s executors, for request_stop to wake

        p = params.startup_params(n, self.log, self.stats.error)
        self.control_executor_kind = p.control_executor
        self.control_path = ControlPath(n, self.stats, self.log, p, terms.TERMS)
        self.models = ModelManager(self.control_path.bind, lambda: self.control_path.runtime, self._on_model,
                                   self.log, self.stats.error)
        self.models.read_startup_payloads(p)
        self.max_state_age = p.max_state_age
        self.pub_diag = n.create_publisher(DiagnosticArray, names.TOPIC_DIAGNOSTICS, 10)

        # initial model from parameters (before anything spins)
        try:
            source = p.description()
        except (ValueError, OSError) as e:
            source = None
            self.log.error(f"{e}; waiting for the robot_description topic")
            self.stats.error(str(e))
        if source is not None:
            self.models.try_swap(source[0], source[1], p)
        else:
            self.log.info("no model from parameters: waiting for the "
                          f"{n.resolve_topic_name(names.TOPIC_DESCRIPTION)} topic")
        self.sub_description = n.create_subscription(
            String, names.TOPIC_DESCRIPTION, self._on_description, qos.QOS_DESCRIPTION)

        self._create_services(p)
        self._create_payload_service()
        self.srv_reset_observer = n.create_service(Trigger, names.SRV_RESET_OBSERVER, self._on_reset_observer)

        n.add_on_set_parameters_callback(self._on_set_parameters)
        n.add_post_set_parameters_callback(self._post_set_parameters)
        self.diag_timer = n.create_timer(p.diagnostics_period, self._publish_diagnostics)

        # control node: only the joint_states and desired_state subscriptions, resolved
        # against the main node's name, namespace and remappings
        js_topic = n.resolve_topic_name(names.TOPIC_JOINT_STATES)
        self.control = Node(n.get_name() + "_control", namespace=n.get_namespace(),
                            context=context, use_global_arguments=False,
                            start_parameter_services=False)
        js_qos = qos.QOS_JOINT_STATES_RELIABLE if p.joint_states_reliable \
            else qos_profile_sensor_data
        self.sub_js = self.control.create_subscription(
            JointState, js_topic, self.control_path.on_joint_state, js_qos)
        self.sub_desired = self.control.create_subscription(
            JointTrajectory, n.resolve_topic_name(names.TOPIC_DESIRED),
            self.control_path.on_desired, qos.QOS_DESIRED)
        # contacts (a floating base on its feet): the base state and the contact set, in
        # the control thread too (they are read by the joint states' callback)
        self.sub_base = self.sub_contacts = None
        if p.base_state_topic:
            self.sub_base = self.control.create_subscription(
                Odometry, n.resolve_topic_name(p.base_state_topic), self.control_path.on_base_state, js_qos)
        if Contacts is not None:
            self.sub_contacts = self.control.create_subscription(
                Contacts, n.resolve_topic_name(names.TOPIC_CONTACTS), self.control_path.on_contacts,
                qos.QOS_DESIRED)
        self.log.info(
            f"listening on {js_topic} ({'reliable' if p.joint_states_reliable else 'best effort'})"
            f", publishing {n.resolve_topic_name(names.TOPIC_GRAVITY)} and friends")

    @property
    def runtime(self):
        """The current Robot (None before the first model)."""
        return self.control_path.runtime

    # ------------------------------------------------------------ parameters
    def _on_set_parameters(self, changes):
        new = params.read(self.node).updated(changes)
        for c in changes:
            error = param_table.check(c.name, _plain(c.value)) if c.name in param_table.BY_NAME else None
            if error:
                return SetParametersResult(successful=False, reason=error)
        if any(c.name in params.STRUCTURAL for c in changes):
            try:
                source = self.models.source
                if any(c.name in ("robot_description", "urdf_file") for c in changes) \
                        or source is None:
                    source = new.description() or source
                if source is not None:
                    self._pending = (self.models.build(source[0], source[1], new), source)
            except (ValueError, OSError) as e:  # rbd.ModelError is a ValueError
                return SetParametersResult(successful=False, reason=str(e))
        if any(c.name in params.COMMAND or c.name in params.OBSERVER or c.name in params.STRUCTURAL
               for c in changes):
            rt = self._pending[0] if self._pending is not None else self.runtime
            error = self.control_path.settings_error(new, rt)
            if error:
                self._pending = None
                return SetParametersResult(successful=False, reason=error)
        return SetParametersResult(successful=True)

    def _post_set_parameters(self, changes):
        p = params.read(self.node)
        self.control_path.configure(p)
        self.max_state_age = p.max_state_age
        pending, self._pending = self._pending, None
        if pending is not None:
            self.models.swap(*pending)
        elif any(c.name == "friction_velocity_eps" for c in changes):
            self._set_friction_eps(friction_eps(p))

    def _set_friction_eps(self, eps: float):
        """The services' Coulomb smoothing (an option of the Robot, resent to the worker)."""
        rt = self.runtime
        if rt is None or rt.options.get("friction_velocity_eps") == eps:
            return
        rt.options["friction_velocity_eps"] = eps
        if self.worker is not None:
            self.worker.send_model(self.models.source[0], rt.source, rt.options)

    # ----------------------------------------------------------------- model
    def _on_model(self, rt, text: str):
        """After each swap (ModelManager): the payload subscription, the worker, the log."""
        if self.sub_payload is None:
            # created once a model exists: a latched payload is then delivered to a
            # model that can check its link
            self.sub_payload = self.node.create_subscription(
                InertiaStamped, names.TOPIC_PAYLOAD, self._on_payload, qos.QOS_PAYLOAD)
        if self.worker is not None:
            self.worker.send_model(self.models.source[0], rt.source, rt.options)
        self.log.info(text)

    def _on_description(self, msg: String):
        where = "topic " + self.node.resolve_topic_name(names.TOPIC_DESCRIPTION)
        try:
            self.models.try_swap(msg.data, where, params.read(self.node))
        except Exception as e:  # anything unexpected: keep the old model, keep running
            text = f"robot description from {where} rejected: {type(e).__name__}: {e}"
            self.log.error(text)
            self.stats.error(text)

    # --------------------------------------------------------------- payloads
    def set_payloads(self, changes) -> str:
        """Apply payload changes all or nothing (ModelManager.set_payloads)."""
        return self.models.set_payloads(changes)

    def _on_reset_observer(self, request, response):
        response.success = self.control_path.reset_observer()
        response.message = "observer restarts at the next joint state" if response.success else \
            "the observer is off (parameter observer, or no model yet)"
        return response

    def _on_payload(self, msg):
        try:
            text = self.set_payloads([pl.from_inertia_stamped(msg)])
            self.log.info(f"{names.TOPIC_PAYLOAD}: {text}")
        except Exception as e:  # refused (or unexpected): count it, keep the old model
            self.payload_rejected += 1
            why = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
            text = f"payload message refused: {why} (model unchanged)"
            self.stats.error(text)
            self.log.warning(text, throttle_duration_sec=1.0)

    def _on_set_payload(self, request, response):
        try:
            changes = [pl.from_inertia_stamped(m, f"payloads[{i}].")
                       for i, m in enumerate(request.payloads)]
            response.message = self.set_payloads(changes)
            response.success = True
        except Exception as e:  # refused (or unexpected): the old model stays
            response.success = False
            response.message = str(e) if isinstance(e, ValueError) \
                else f"internal error: {type(e).__name__}: {e}"
            self.log.warning(f"set_payload refused: {response.message}",
                             throttle_duration_sec=1.0)
        return response

    def _create_payload_service(self):
        try:
            from rbd_ros_interfaces.srv import SetPayload  # may be missing: the service is then off
        except ImportError as e:
            self.srv_set_payload = self.srv_estimate_payload = None
            if self.services_error is None:  # else already said: no rbd_ros_interfaces at all
                text = (f"rbd_ros_interfaces has no SetPayload ({e}): the "
                        f"{names.SRV_SET_PAYLOAD} service is OFF (rebuild rbd_ros_interfaces); "
                        f"the {names.TOPIC_PAYLOAD} topic works")
                self.log.error(text)
                self.stats.error(text)
            return
        self.srv_set_payload = self.node.create_service(SetPayload, names.SRV_SET_PAYLOAD,
                                                        self._on_set_payload)
        try:
            from rbd_ros_interfaces.srv import EstimatePayload  # may be missing (an older build): then off
        except ImportError as e:
            self.srv_estimate_payload = None
            text = f"rbd_ros_interfaces has no EstimatePayload ({e}): the {names.SRV_ESTIMATE_PAYLOAD} service is OFF"
            self.log.error(text)
            self.stats.error(text)
            return
        self.srv_estimate_payload = self.node.create_service(EstimatePayload, names.SRV_ESTIMATE_PAYLOAD,
                                                             self._on_estimate_payload)

    def _on_estimate_payload(self, request, response):
        """~/estimate_payload (payload_estimation.py), in the background thread."""
        try:
            b = self.control_path.bound      # the Robot and its window of recent joint states, together
            rt, window = (b.rt, b.bound.by_key["recent"].window) if b is not None else (None, None)
            response = payload_estimation.answer(rt, window, request, response,
                                                 params.read(self.node).payload_cutoff, time.monotonic(),
                                                 self.set_payloads, self.log)
        except Exception as e:  # never let a request kill the node
            response.success, response.applied = False, False
            response.message = f"internal error: {type(e).__name__}: {e}"
        if response.success:
            self.log.info(f"estimate_payload: {response.message}")
        else:
            self.log.warning(f"estimate_payload refused: {response.message}", throttle_duration_sec=1.0)
        return response

    # --------------------------------------------------------------- services
    def _create_services(self, p: params.Params):
        try:
            import rbd_ros_interfaces.srv  # noqa: F401
        except ImportError as e:
            self.services_error = (
                f"rbd_ros_interfaces is not available ({e}): the inverse/forward dynamics "
                "set_payload and estimate_payload services are OFF; the torque topics (and ~/payload) work. "
                "Build the package (colcon build "
                "--base-paths src src/rbd_ros/rbd_ros_interfaces, or "
                "scripts/build_interfaces.sh VENV) and restart the node.")
            self.log.error(self.services_error)
            self.stats.error(self.services_error)
            return
        relay = (self.node.resolve_topic_name(names.TOPIC_TRAJECTORY_IN),
                 self.node.resolve_topic_name(names.TOPIC_TRAJECTORY_OUT))
        if p.service_process:
            self.worker = WorkerClient(self.node.get_fully_qualified_name(), p.numba_threads,
                                       self.log, on_error=self.stats.error, relay=relay,
                                       held_state=self.held_state)
            rt = self.runtime
            if rt is not None:
                self.worker.send_model(self.models.source[0], rt.source, rt.options)
            if rt is None:
                self.worker.start(expect_model=False)
            else:
                self._start_worker_after_first_output()
        else:
            self.services = create_dynamics_services(
                self.node, self.node.get_fully_qualified_name(), lambda: self.runtime, self.log,
                extra=planner_services.table(self.held_state) + constrained_services.table(self.held_state))
            self.relay = TrajectoryRelay(self.node, *relay, lambda: self.runtime, self.log,
                                         held=self.held_state)
            self.services_ready = True

    def _start_worker_after_first_output(self) -> None:
        """Start the service worker (it has the model) from a timer of the background
        executor, when ``worker_start_reason`` gives one (counted from the timer's first
        run); logs the reason."""
        since = []

        def check():
            now = time.monotonic()
            if not since:
                since.append(now)
            reason = worker_start_reason(self.stats.msgs_out, now - since[0],
                                         lambda: self.node.count_publishers(self.sub_js.topic_name))
            if reason is None:
                return
            timer.cancel()
            self.node.destroy_timer(timer)
            self.log.info(f"starting the service worker: {reason}")
            self.worker.start(expect_model=True)

        timer = self.node.create_timer(WORKER_POLL_S, check)

    def held_state(self) -> dict:
        """The latest joint state, for the joints a planner request or a relayed trajectory
        does not name (held_state.py); any thread."""
        return held_state.snapshot(self.runtime, time.monotonic())

    def services_state(self):
        """(text for diagnostics, error or None)."""
        w = self.worker
        error = self.services_error or (w.error if w is not None else None)
        if error:
            return "off", error
        ready = w.ready if w is not None else self.services_ready
        where = " (in process)" if w is None else f" (worker pid {w.pid})" if w.pid is not None \
            else " (worker starts after the first output)"
        return ("on" if ready else "starting") + where, None

    # ------------------------------------------------------------ diagnostics
    def _publish_diagnostics(self):
        text, error = self.services_state()
        now = time.monotonic()
        w, r = self.worker, self.relay
        relay = w.relay_counts if w is not None else \
            {"relayed": r.relayed, "refused": r.refused} if r is not None else None
        status = diagnostics.build_status(
            self.node.get_fully_qualified_name(), self.runtime, self.stats, now,
            self.max_state_age, services=text, services_error=error,
            command_friction=bool(params.read(self.node).command_friction),
            payload_rejected=self.payload_rejected,
            command=self.control_path.diagnostics(now), relay=relay)
        self.pub_diag.publish(diagnostics.as_array(status, self.node.get_clock().now().to_msg()))

    # ---------------------------------------------------------------- running
    def spin(self, switch_interval: float = 0.0002):
        """Spin the background executor in a thread and the control path here until shutdown."""
        if switch_interval:
            sys.setswitchinterval(switch_interval)
        freeze_heap()
        bg = SingleThreadedExecutor(context=self.context)
        self._executors.append(bg)
        bg.add_node(self.node)
        bg_thread = threading.Thread(target=self._spin_background, args=(bg,), daemon=True,
                                     name="rbd_ros_background")
        bg_thread.start()
        ctx = self.context or rclpy.get_default_context()
        ex = None
        try:
            ex = self._control_executor()
            self._executors.append(ex)
            ex.add_node(self.control)
            while ctx.ok() and not self._stopping.is_set():
                ex.spin_once(timeout_sec=IDLE_WAKE_S)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            # shut both executors down and join the background thread before the nodes
            # are destroyed: an executor left to the interpreter's finalisation can end
            # the process in std::terminate (seen as exit code -6 on Ctrl-C)
            if ex is not None:
                try:
                    ex.shutdown(timeout_sec=1.0)
                except Exception as e:  # already shut down with the context
                    self.log.debug(f"control executor shutdown: {e}")
            bg.shutdown(timeout_sec=1.0)
            bg_thread.join(timeout=2.0)

    def request_stop(self):
        """End spin() promptly, with the context still valid: both executors are shut down
        (ending a wait at once) and their loops end.  Call it from a thread other than
        spin()'s (not from inside a callback).  The caller then destroys the node and only
        after that shuts the context down, so nothing logs through a node whose context is
        gone (main.py)."""
        self._stopping.set()
        for ex in list(self._executors):
            try:
                ex.shutdown(timeout_sec=0)
            except Exception:  # shut down already
                pass

    def _control_executor(self):
        if self.control_executor_kind == "events":
            try:
                from rclpy.experimental import EventsExecutor  # Jazzy on; older rclpy: single
                return EventsExecutor(context=self.context)
            except ImportError as e:  # rclpy before Jazzy
                self.log.warning(f"control_executor: events is not available in this rclpy ({e}); "
                                 "using single")
                self.control_executor_kind = "single"
        return SingleThreadedExecutor(context=self.context)

    def _spin_background(self, ex):
        ctx = self.context or rclpy.get_default_context()
        self._limit_numba_threads()
        while ctx.ok() and not self._stopping.is_set():
            try:
                ex.spin_once(timeout_sec=IDLE_WAKE_S)
            except (ExternalShutdownException, KeyboardInterrupt):
                return
            except Exception as e:  # a failing callback must not stop services/diagnostics
                if not ctx.ok():
                    return
                text = f"background callback failed: {type(e).__name__}: {e}"
                self.stats.error(text)
                self.log.error(text, throttle_duration_sec=1.0)

    def _limit_numba_threads(self):
        """Batch functions split a batch over ``numba.get_num_threads()`` threads; cap
        that in this (background) thread only -- numba's thread count is per calling
        thread."""
        try:
            n = min(params.read(self.node).numba_threads, numba.config.NUMBA_NUM_THREADS)
            numba.set_num_threads(n)
        except Exception as e:  # not fatal: batches then use every core
            self.log.warning(f"could not limit numba threads: {e}")

    def destroy(self):
        if self.worker is not None:
            self.worker.stop()
        self.control.destroy_node()
        self.node.destroy_node()
