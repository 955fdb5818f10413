"""Real-rclpy test harness: the node runs in a subprocess, the test talks to it
through a real rclpy node spun in a background thread.  No mocks."""
from __future__ import annotations

import itertools
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
from builtin_interfaces.msg import Time
from core_util import ARM_JOINTS  # noqa: F401  (re-exported for the node tests)
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from rbd_ros.demo.service_call import call_service

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM_URDF = os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf")
NODE_NAME = "rbd_dynamics"

QOS_LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
QOS_RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)

_ns_counter = itertools.count()
_stamp_counter = itertools.count(1)


def unique_ns(prefix="t"):
    return f"{prefix}{os.getpid()}_{next(_ns_counter)}"


def next_stamp() -> Time:
    """Unique stamps to correlate outputs with inputs (the output JointState carries them)."""
    k = next(_stamp_counter)
    return Time(sec=1000 + k, nanosec=k)


def stamp_key(t: Time):
    return (t.sec, t.nanosec)


# the arm's joints in another order than the model's: requests by name must not
# depend on the order (PERM[k] is the model index of request entry k)
PERM = [4, 0, 6, 2, 1, 5, 3]
PERM_NAMES = [ARM_JOINTS[i] for i in PERM]


def process_children(pid: int) -> list:
    """pids of process ``pid``'s children: /proc's ``children`` file lists a thread's own,
    so every thread's are read ([] once the process is gone)."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def read_arm_urdf() -> str:
    with open(ARM_URDF) as f:
        return f.read()


class NodeProcess:
    """``python -m rbd_ros.node`` in a subprocess with a namespace and a parameter file."""

    def __init__(self, ns: str, params: dict | None = None, extra_args=(),
                 module_args=("-m", "rbd_ros.node")):
        self.ns = ns
        self.fqn = f"/{ns}/{NODE_NAME}"
        self.logfile = tempfile.NamedTemporaryFile("w+", prefix=f"rbd_node_{ns}_", suffix=".log",
                                                   delete=False)
        self.paramfile = None
        args = [sys.executable, *module_args, "--ros-args",
                "-r", f"__ns:=/{ns}"]
        if params:
            self.paramfile = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
            yaml.safe_dump({f"/**/{NODE_NAME}": {"ros__parameters": params}}, self.paramfile)
            self.paramfile.close()
            args += ["--params-file", self.paramfile.name]
        args += list(extra_args)
        env = dict(os.environ)
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        env["RCUTILS_COLORIZED_OUTPUT"] = "0"
        self._final_log = None
        self.proc = subprocess.Popen(args, stdout=self.logfile, stderr=subprocess.STDOUT, env=env)

    def log(self) -> str:
        if self._final_log is not None:
            return self._final_log
        with open(self.logfile.name) as f:
            return f.read()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def children(self):
        """pids of the node's child processes, whichever of its threads started them (the
        service worker: a timer of the background executor)."""
        return process_children(self.proc.pid)

    def stop(self, timeout=10.0):
        """SIGINT the node; it must exit and take its service worker with it."""
        kids = self.children()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.paramfile is not None and os.path.exists(self.paramfile.name):
            os.unlink(self.paramfile.name)
        # keep the output for log() (assertion messages), leave no file behind
        self._final_log = self.log()
        self.logfile.close()
        if os.path.exists(self.logfile.name):
            os.unlink(self.logfile.name)
        wait_for(lambda: not any(_alive(k) for k in kids), timeout=10)
        left = [k for k in kids if _alive(k)]
        for k in left:
            os.kill(k, signal.SIGKILL)
        assert not left, f"node {self.fqn} left processes behind: {left}"
        return self.proc.returncode

    def topic(self, rel: str) -> str:
        return f"{self.fqn}/{rel}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Recorder:
    """Keeps every message of a topic (with the local receive time)."""

    def __init__(self):
        self.lock = threading.Lock()
        self._arrived = threading.Condition(self.lock)
        self.msgs = []
        self.times = []

    def __call__(self, msg):
        with self.lock:
            self.msgs.append(msg)
            self.times.append(time.monotonic())
            self._arrived.notify_all()

    def wait_stamp(self, stamp: Time, timeout: float, start: int = 0):
        """(message, receive time) of the first message from index ``start`` on whose
        header carries ``stamp``, waiting up to ``timeout`` s for it; None without one."""
        key, t_end, seen = stamp_key(stamp), time.monotonic() + timeout, start
        with self.lock:
            while True:
                for i in range(seen, len(self.msgs)):
                    if stamp_key(self.msgs[i].header.stamp) == key:
                        return self.msgs[i], self.times[i]
                seen = len(self.msgs)
                left = t_end - time.monotonic()
                if (left <= 0 or not self._arrived.wait(left)) and seen == len(self.msgs):
                    return None

    def latest(self):
        with self.lock:
            return self.msgs[-1] if self.msgs else None

    def count(self):
        with self.lock:
            return len(self.msgs)

    def snapshot(self):
        with self.lock:
            return list(self.msgs), list(self.times)

    def by_stamp(self, stamp: Time):
        key = stamp_key(stamp)
        with self.lock:
            for m in reversed(self.msgs):
                if stamp_key(m.header.stamp) == key:
                    return m
        return None


class Client:
    """A real rclpy node in its own context, spun in a background thread."""

    def __init__(self, name="rbd_test_client"):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._stop = False
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        while not self._stop and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:
                if self._stop or not self.context.ok():
                    return
                raise

    def close(self):
        self._stop = True
        self.thread.join(5)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)

    # -- helpers
    def record(self, msg_type, topic, qos=QOS_RELIABLE) -> Recorder:
        rec = Recorder()
        self.node.create_subscription(msg_type, topic, rec, qos)
        return rec

    def publisher(self, msg_type, topic, qos=QOS_RELIABLE):
        return self.node.create_publisher(msg_type, topic, qos)

    def latched_description(self, topic, urdf_text):
        pub = self.node.create_publisher(String, topic, QOS_LATCHED)
        pub.publish(String(data=urdf_text))
        return pub

    def call(self, srv_type, name, request, timeout=30.0, resend_after=3.0):
        """The response to ``request`` (TimeoutError after ``timeout`` s), resent every
        ``resend_after`` s without one (``closed_loop.call_service`` says why)."""
        return call_service(self.node, srv_type, name, request, timeout, resend_after)


class PingPong:
    """Joint states at ``q`` (at rest) sent from a thread one at a time: each goes out once
    the answer to the one before has arrived on ``rec`` (the node's output carrying its
    stamp), at most one per ``period`` s, so no queue of the node or of DDS ever holds
    more than one and a loaded machine slows the exchange down without losing anything.  An input not answered
    within ``resend`` s (best effort may lose one) is counted in ``lost`` and a new one
    goes out.  ``trips``: (send time, answer time) of each answered input (monotonic s,
    this machine's clock: the same as another process's time.monotonic()).  ``with``
    starts and stops it."""

    def __init__(self, pub, rec: Recorder, q, resend=5.0, period=0.002):
        self.pub, self.rec, self.q, self.resend = pub, rec, np.asarray(q, float), resend
        self.period = period
        self.trips = []
        self.lost = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            m = joint_state(ARM_JOINTS, self.q, np.zeros(len(self.q)))
            start = self.rec.count()
            t_sent = time.monotonic()
            self.pub.publish(m)
            got = self.rec.wait_stamp(m.header.stamp, self.resend, start)
            if got is None:
                self.lost.append(stamp_key(m.header.stamp))
            else:
                self.trips.append((t_sent, got[1]))
            time.sleep(max(0.0, t_sent + self.period - time.monotonic()))

    def within(self, t0: float, t1: float) -> list:
        """The trips sent after t0 and answered before t1."""
        return [(ts, ta) for ts, ta in list(self.trips) if t0 <= ts and ta <= t1]

    def wait_trip_after(self, t: float, timeout=30.0) -> bool:
        """Wait until an input sent after ``t`` has been answered: the sentinel that the
        exchange went on past t."""
        return bool(wait_for(lambda: self.trips and self.trips[-1][0] > t, timeout=timeout))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def set_params(client, node, atomically=False, **values):
    """Set ``node``'s parameters in one request (typed by
    ``rbd_ros.node.params.parameter_value``); returns the list of
    SetParametersResult (one for all when ``atomically``)."""
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.srv import SetParameters, SetParametersAtomically

    from rbd_ros.node.params import parameter_value
    params = [ParameterMsg(name=k, value=parameter_value(v)) for k, v in values.items()]
    if atomically:
        return [client.call(SetParametersAtomically, f"{node.fqn}/set_parameters_atomically",
                            SetParametersAtomically.Request(parameters=params)).result]
    return list(client.call(SetParameters, f"{node.fqn}/set_parameters",
                            SetParameters.Request(parameters=params)).results)


def wait_for(predicate, timeout=10.0, period=0.01):
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        value = predicate()
        if value:
            return value
        time.sleep(period)
    return predicate()


def joint_state(names, q, v=None, stamp=None) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp if stamp is not None else next_stamp()
    msg.name = list(names)
    msg.position = [float(x) for x in q]
    if v is not None:
        msg.velocity = [float(x) for x in v]
    return msg


class JointStateStream:
    """Publishes the same joint state at a fixed rate from a thread (sleep to deadlines),
    remembering {stamp key: monotonic send time} in ``sent``; ``with`` starts and stops it."""

    def __init__(self, pub, q, period=0.002):
        self.pub, self.q, self.period = pub, np.asarray(q, float), period
        self.sent = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        t_next = time.monotonic()
        while not self._stop.is_set():
            m = joint_state(ARM_JOINTS, self.q, np.zeros(len(self.q)))
            self.sent[stamp_key(m.header.stamp)] = time.monotonic()
            self.pub.publish(m)
            t_next += self.period
            time.sleep(max(0.0, t_next - time.monotonic()))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def publish_until(pub, make_msg, rec, timeout=10.0, period=0.02, accept=None):
    """Publish fresh messages (new stamps) until rec gets an output carrying one of them
    (and, with accept, one that accept(output) approves)."""
    t_end = time.monotonic() + timeout

    def answer(stamp):
        got = rec.by_stamp(stamp)
        return got if got is not None and (accept is None or accept(got)) else None

    while time.monotonic() < t_end:
        msg = make_msg()
        pub.publish(msg)
        got = wait_for(lambda m=msg: answer(m.header.stamp), timeout=period, period=0.002)
        if got is not None:
            return msg, got
    return None, None


def publish_answered(pub, make_msg, rec: Recorder, timeout=20.0, wait=1.0):
    """Publish a fresh message (new stamp) and wait up to ``wait`` s for the output carrying
    its stamp, again until one is answered: (message, output), (None, None) after
    ``timeout``.  Unlike publish_until, nothing sent on ``pub`` is in flight afterwards:
    the answered message was the last one, and one writer's messages arrive in order."""
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        msg = make_msg()
        start = rec.count()
        pub.publish(msg)
        got = rec.wait_stamp(msg.header.stamp, min(wait, max(0.0, t_end - time.monotonic())), start)
        if got is not None:
            return msg, got[0]
    return None, None


def array_of(msg: Float64MultiArray) -> np.ndarray:
    return np.asarray(msg.data, dtype=np.float64)


def diagnostics_of(rec: Recorder, node_fqn: str):
    """Latest /diagnostics status of that node as a dict (values) plus level/message."""
    with rec.lock:
        msgs = list(rec.msgs)
    for arr in reversed(msgs):
        for st in arr.status:
            if st.name.endswith(node_fqn):
                d = {kv.key: kv.value for kv in st.values}
                d["_level"] = st.level
                d["_message"] = st.message
                d["_hardware_id"] = st.hardware_id
                return d
    return None


__all__ = ["ARM_JOINTS", "Client", "DiagnosticArray", "Float64MultiArray", "JointState",
           "NodeProcess", "PingPong", "Recorder", "array_of", "diagnostics_of", "joint_state",
           "next_stamp", "publish_answered", "publish_until", "read_arm_urdf", "stamp_key", "unique_ns", "wait_for"]
