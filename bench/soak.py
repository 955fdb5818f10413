#!/usr/bin/env python3
"""Soak of the rbd_ros dynamics node at 1 kHz with hot swaps and service calls (a benchmark, not a test).

Starts the node (``python -m rbd_ros.node``, bundled 7-dof arm, default
best-effort joint_states) as a subprocess and, for --minutes:

* publishes JointState at --rate Hz from a sleep-to-deadline loop and measures the
  stamp round trip via ``~/gravity_torques_state`` (as bench/latency.py);
* every --swap-period s publishes a new ``robot_description`` (alternately a
  variant of the arm with link3 3.2286 -> 4.2286 kg and the arm itself), and half
  a period later sets the ``gravity`` parameter (alternately tilted by 10 deg
  about x and upright) through ``rcl_interfaces/srv/SetParameters``; after each
  change it waits until the published torques equal rbd_ros.core's g(q) of the
  new model (<= 1e-9 relative), which proves the change reached the control path
  and that the torques really changed (the change of g is reported);
* from a second process (so that building and (de)serialising requests does not
  stall the 1 kHz publisher): inverse_dynamics and forward_dynamics single calls
  every second and an inverse_dynamics_trajectory of --traj-points points every
  10 s, no external wrenches; every answer is checked against rbd_ros.core
  for the four (model, gravity) combinations the node can hold.

Every second it reads VmRSS of the node and of its service worker (the node's child
process) from /proc and the node's /diagnostics.  It prints a Markdown table per
minute (messages sent/received, drops, latency p50/p99/max, RSS, service calls,
swaps, load average) and a verdict against the target: RSS growth <= 1 MB after
warm-up (the first minute excluded, for node and worker), no crash (node alive,
worker never restarted), no unbounded queue (the last minute's median latency and
trajectory call time not above twice the median minute's, and no backlog at the end:
the last answer within 1 s of the last input).  Stops by itself and stops its
subprocesses.

    python bench/soak.py [--minutes 20] [--rate 1000] [--swap-period 30] [--json FILE]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402

JOINTS = [f"joint{i}" for i in range(1, 8)]
ARM_URDF = os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf")
TILT = np.radians(10.0)
GRAVITIES = ([0.0, 0.0, -9.81], [0.0, 9.81 * np.sin(TILT), -9.81 * np.cos(TILT)])
RSS_TARGET_KB = 1024
TOL = 1e-9
LATE_S = 1.0


def arm_urdf():
    with open(ARM_URDF) as f:
        return f.read()


def variant_urdf(text):
    """The arm with a heavier link3 (and its own name, visible in /diagnostics)."""
    old_mass, old_name = '<mass value="3.2286"/>', '<robot name="rbd_arm7">'
    assert text.count(old_mass) == 1 and text.count(old_name) == 1, "bundled arm changed"
    return text.replace(old_mass, '<mass value="4.2286"/>').replace(
        old_name, '<robot name="rbd_arm7_heavy_link3">')


def candidates():
    """Models the node can hold: [(label, model)], index = 2 * model + gravity."""
    out = []
    for mname, text in (("arm", arm_urdf()), ("heavy", variant_urdf(arm_urdf()))):
        for gname, g in zip(("upright", "tilted"), GRAVITIES):
            out.append((f"{mname}/{gname}", rbd.Model.from_urdf(text, gravity=g)))
    return out


def match(value, expected_by_cand):
    """Index of the candidate whose expected value equals value (<= TOL relative), or None."""
    value = np.asarray(value, dtype=float)
    for i, exp in enumerate(expected_by_cand):
        if value.shape == exp.shape and np.all(np.isfinite(value)) and \
                np.max(np.abs(value - exp)) <= TOL * max(1.0, float(np.max(np.abs(exp)))):
            return i
    return None


def vmrss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Spinner:
    """An rclpy node in its own context, spun by a SingleThreadedExecutor in a thread."""

    def __init__(self, name):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.ex = SingleThreadedExecutor(context=self.context)
        self.ex.add_node(self.node)
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        while not self.stop_ev.is_set():
            try:
                self.ex.spin_once(timeout_sec=0.05)
            except Exception:
                if self.stop_ev.is_set() or not self.context.ok():
                    return
                raise

    def call(self, client, req, timeout):
        """(response or None, seconds)."""
        done = threading.Event()
        t0 = time.monotonic()
        fut = client.call_async(req)
        fut.add_done_callback(lambda f: done.set())
        if not done.wait(timeout):
            client.remove_pending_request(fut)
            return None, time.monotonic() - t0
        return fut.result(), time.monotonic() - t0

    def close(self):
        self.stop_ev.set()
        self.thread.join(5)
        self.ex.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


# ------------------------------------------------------------------ service load process
def load_main(ns, seconds, traj_points):
    """Service calls against /<ns>/rbd_dynamics; one JSON line per call on stdout.
    Stops when stdin closes, or after `seconds` (a safety net)."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from rbd_ros_interfaces.srv import ForwardDynamics, InverseDynamics, InverseDynamicsTrajectory

    def emit(**kw):
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()

    cands = [m for _, m in candidates()]
    rng = np.random.default_rng(8)
    nst = 16
    qs, vs, accs = (rng.uniform(-1.5, 1.5, (nst, 7)), rng.uniform(-1, 1, (nst, 7)),
                    rng.uniform(-2, 2, (nst, 7)))
    taus = rng.uniform(-20, 20, (nst, 7))
    id_reqs = [InverseDynamics.Request(name=JOINTS, position=qs[i].tolist(),
                                       velocity=vs[i].tolist(), acceleration=accs[i].tolist())
               for i in range(nst)]
    fd_reqs = [ForwardDynamics.Request(name=JOINTS, position=qs[i].tolist(),
                                       velocity=vs[i].tolist(), effort=taus[i].tolist())
               for i in range(nst)]
    id_exp = [[rbd.rnea(m, qs[i], vs[i], accs[i]) for m in cands] for i in range(nst)]
    fd_exp = [[rbd.forward_dynamics(m, qs[i], vs[i], taus[i]) for m in cands] for i in range(nst)]
    tq, tv, ta = (rng.uniform(-1.5, 1.5, (traj_points, 7)), rng.uniform(-1, 1, (traj_points, 7)),
                  rng.uniform(-2, 2, (traj_points, 7)))
    traj = JointTrajectory(joint_names=JOINTS)
    pts = []
    for i in range(traj_points):
        p = JointTrajectoryPoint()
        p.positions, p.velocities, p.accelerations = tq[i].tolist(), tv[i].tolist(), ta[i].tolist()
        p.time_from_start.nanosec = i * 1_000_000
        pts.append(p)
    traj.points = pts
    traj_req = InverseDynamicsTrajectory.Request(trajectory=traj)
    traj_exp = [rbd.rnea(m, tq, tv, ta) for m in cands]

    sp = Spinner("rbd_soak_services")
    fqn = f"/{ns}/rbd_dynamics"
    cli_id = sp.node.create_client(InverseDynamics, fqn + "/inverse_dynamics")
    cli_fd = sp.node.create_client(ForwardDynamics, fqn + "/forward_dynamics")
    cli_tr = sp.node.create_client(InverseDynamicsTrajectory, fqn + "/inverse_dynamics_trajectory")
    for c in (cli_id, cli_fd, cli_tr):
        if not c.wait_for_service(timeout_sec=120):
            emit(event="error", message=f"{c.srv_name} not available")
            sp.close()
            return
    stop = threading.Event()

    def watch_stdin():
        sys.stdin.read()  # EOF: the soak is over (or the soak process died)
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    emit(event="ready", t=time.monotonic())

    def one(kind, cli, req, extract, expected, timeout):
        t = time.monotonic()
        resp, dt = sp.call(cli, req, timeout)
        if resp is None:
            emit(event="call", kind=kind, t=t, dt=dt, ok=False, message="timeout")
        elif not resp.success:
            emit(event="call", kind=kind, t=t, dt=dt, ok=False, message=resp.message[:200])
        else:
            c = match(extract(resp), expected)
            emit(event="call", kind=kind, t=t, dt=dt, ok=c is not None, cand=c,
                 message="" if c is not None else "result matches no model")

    t_end = time.monotonic() + seconds
    k = 0
    t_next = time.monotonic()
    while not stop.is_set() and time.monotonic() < t_end:
        i = k % nst
        one("id", cli_id, id_reqs[i], lambda r: r.effort, id_exp[i], 10)
        one("fd", cli_fd, fd_reqs[i], lambda r: r.acceleration, fd_exp[i], 10)
        if k % 10 == 5:
            one("traj", cli_tr, traj_req,
                lambda r: np.array([p.effort for p in r.trajectory.points]), traj_exp, 30)
        k += 1
        t_next += 1.0
        stop.wait(max(0.0, t_next - time.monotonic()))
    sp.close()


# ------------------------------------------------------------------------------ the soak
class Soak:
    def __init__(self, args):
        self.args = args
        self.ns = f"soak{os.getpid()}"
        self.fqn = f"/{self.ns}/rbd_dynamics"
        self.lock = threading.Lock()
        self.minutes = {}        # minute -> dict of counters / lists
        self.last_out = None     # (stamp ns, effort tuple) of the latest output
        self.diag = {}
        self.diag_seen = 0
        self.events = []         # service call events from the load process
        self.load_ready = threading.Event()
        self.load_error = None
        self.swaps = []          # dicts: kind, t, ok, applied_s, dtau, message
        self.samples = []        # (t, rss node, rss worker, worker pid, loadavg1)
        self.worker_pids = []
        self.late = 0
        self.last_rx = 0
        self.t0_ns = time.monotonic_ns()
        self.t_start_ns = None   # minute 0 starts here
        self.recording = False
        self.proc = self.load = None
        self.tmpfiles = []

    # -- helpers
    def q_at(self, t_ns):
        """The published positions as a function of the stamp (so outputs can be checked)."""
        t = (t_ns - self.t0_ns) * 1e-9
        return 0.5 * np.sin(np.pi * 0.5 * t + np.arange(7.0))

    def minute(self, m):
        d = self.minutes.get(m)
        if d is None:
            d = self.minutes[m] = {"sent": 0, "received": 0, "lat": []}
        return d

    # -- callbacks (spin thread)
    def on_out(self, msg):
        now = time.monotonic_ns()
        sent = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.last_out = (sent, tuple(msg.effort), tuple(msg.name))
        self.last_rx = now
        if self.recording and sent >= self.t_start_ns:
            lat = (now - sent) * 1e-9
            with self.lock:
                d = self.minute((sent - self.t_start_ns) // 60_000_000_000)
                d["received"] += 1
                d["lat"].append(lat)
                if lat > LATE_S:
                    self.late += 1

    def on_diag(self, arr):
        for st in arr.status:
            if st.name.endswith(self.fqn):
                self.diag = {kv.key: kv.value for kv in st.values}
                self.diag_seen += 1

    # -- subprocesses
    def start_node(self):
        a = self.args
        params = tempfile.NamedTemporaryFile("w", prefix="rbd_soak_", suffix=".yaml", delete=False)
        params.write("/**/rbd_dynamics:\n  ros__parameters:\n    urdf_file: rbd_arm7\n"
                     f"    joint_states_reliable: {'true' if a.reliable else 'false'}\n")
        params.close()
        self.tmpfiles.append(params.name)
        self.logname = os.path.join(tempfile.gettempdir(), f"rbd_soak_{self.ns}.log")
        self.log = open(self.logname, "w")
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTHONUNBUFFERED="1", RCUTILS_COLORIZED_OUTPUT="0")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rbd_ros.node", "--ros-args", "-r", f"__ns:=/{self.ns}",
             "--params-file", params.name], stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def start_load(self, seconds):
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.load = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--role", "load", "--ns", self.ns,
             "--load-seconds", str(seconds), "--traj-points", str(self.args.traj_points)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env)

        def read():
            for line in self.load.stdout:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("event") == "ready":
                    self.load_ready.set()
                elif ev.get("event") == "error":
                    self.load_error = ev.get("message")
                    self.load_ready.set()
                elif ev.get("event") == "call":
                    with self.lock:
                        self.events.append(ev)

        threading.Thread(target=read, daemon=True).start()

    def stop_all(self):
        if self.load is not None and self.load.poll() is None:
            try:
                self.load.stdin.close()
                self.load.wait(45)
            except (subprocess.TimeoutExpired, OSError):
                self.load.kill()
                self.load.wait()
        if self.proc is not None:
            kids = children(self.proc.pid)
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            t_end = time.monotonic() + 10
            while any(alive(k) for k in kids) and time.monotonic() < t_end:
                time.sleep(0.1)
            for k in kids:
                if alive(k):
                    print(f"service worker {k} still alive after the node stopped: killing it",
                          file=sys.stderr)
                    os.kill(k, signal.SIGKILL)
            self.log.close()
        for f in self.tmpfiles:
            if os.path.exists(f):
                os.unlink(f)

    # -- hot swaps (own thread)
    def swapper(self, sp, stop, cands, texts, desc_pub, param_cli, t_end):
        """Every swap_period / 2 s a description or gravity change, each checked in the
        published torques; none is started later than swap_timeout before t_end."""
        a = self.args
        model_i, grav_i = 0, 0
        k = 0
        t_base = self.t_start_ns * 1e-9
        while True:
            k += 1
            if stop.wait(max(0.0, t_base + k * a.swap_period / 2 - time.monotonic())):
                return
            old = 2 * model_i + grav_i
            t = time.monotonic()
            if t + a.swap_timeout > t_end:
                return
            rec = {"t": t, "ok": False, "applied_s": None, "dtau": None, "message": ""}
            if k % 2 == 1:
                model_i = 1 - model_i
                rec["kind"] = "description"
                desc_pub.publish(String(data=texts[model_i]))
                sent_ok = True
            else:
                grav_i = 1 - grav_i
                rec["kind"] = "gravity"
                p = Parameter(name="gravity", value=ParameterValue(
                    type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                    double_array_value=list(GRAVITIES[grav_i])))
                resp, _ = sp.call(param_cli, SetParameters.Request(parameters=[p]), 10)
                sent_ok = resp is not None and resp.results[0].successful
                if not sent_ok:
                    rec["message"] = "set_parameters: " + (
                        "timeout" if resp is None else resp.results[0].reason)
            new = 2 * model_i + grav_i
            rec["to"] = cands[new][0]
            # wait until the published torques are g(q) of the new model
            t_limit = t + a.swap_timeout
            while sent_ok and time.monotonic() < t_limit and not stop.is_set():
                out = self.last_out
                if out is not None and out[0] * 1e-9 > t:
                    q = self.q_at(out[0])
                    if match(out[1], [rbd.gravity(cands[new][1], q)]) == 0:
                        rec["ok"] = True
                        rec["applied_s"] = out[0] * 1e-9 - t
                        g_old = rbd.gravity(cands[old][1], q)
                        rec["dtau"] = float(np.max(np.abs(np.asarray(out[1]) - g_old)))
                        break
                time.sleep(0.02)
            if sent_ok and not rec["ok"]:
                rec["message"] = f"torques not those of {cands[new][0]} after {a.swap_timeout:g} s"
            with self.lock:
                self.swaps.append(rec)

    # -- the run
    def run(self):
        a = self.args
        cands = candidates()
        texts = (arm_urdf(), variant_urdf(arm_urdf()))
        for _, m in cands:  # compile/load the kernels the swap check uses now
            rbd.gravity(m, np.zeros(7))
        sp = Spinner("rbd_soak")
        node = sp.node
        try:
            self.start_node()
            node.create_subscription(DiagnosticArray, "/diagnostics", self.on_diag, 10)
            qos_in = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE) if a.reliable \
                else qos_profile_sensor_data
            pub = node.create_publisher(JointState, f"/{self.ns}/joint_states", qos_in)
            node.create_subscription(JointState, f"{self.fqn}/gravity_torques_state", self.on_out,
                                     QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
            desc_pub = node.create_publisher(
                String, f"/{self.ns}/robot_description",
                QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL))
            param_cli = node.create_client(SetParameters, f"{self.fqn}/set_parameters")
            msg = JointState()
            msg.name = JOINTS
            msg.velocity = [0.1] * 7

            def publish_one():
                t = time.monotonic_ns()
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(t, 1_000_000_000)
                msg.position = self.q_at(t).tolist()
                pub.publish(msg)
                return t

            # node up: first output, then the service worker ready
            t_limit = time.monotonic() + 300
            while not (self.last_out is not None and
                       self.diag.get("services", "").startswith("on")):
                if time.monotonic() > t_limit or self.proc.poll() is not None:
                    raise RuntimeError(f"node not ready; see {self.logname}")
                publish_one()
                time.sleep(0.01)
            assert list(self.last_out[2]) == JOINTS, self.last_out[2]
            seconds = a.minutes * 60.0
            self.start_load(seconds + 120)
            while not self.load_ready.wait(0.01):
                if time.monotonic() > t_limit or self.load.poll() is not None:
                    raise RuntimeError("service load process did not start")
                publish_one()
            if self.load_error:
                raise RuntimeError(self.load_error)
            print(f"soak: node pid {self.proc.pid}, {a.minutes:g} min at {a.rate:g} Hz, "
                  f"log {self.logname}", file=sys.stderr)

            period = 1.0 / a.rate
            self.t_start_ns = time.monotonic_ns()
            t_start = self.t_start_ns * 1e-9
            self.recording = True
            stop = threading.Event()
            sw = threading.Thread(target=self.swapper, daemon=True, args=(
                sp, stop, cands, texts, desc_pub, param_cli, t_start + seconds))
            sw.start()
            t_next = t_start
            next_sample = t_start
            crashed = None
            t_end = t_start + seconds
            while t_next < t_end and time.monotonic() < t_end:
                t = publish_one()
                m = (t - self.t_start_ns) // 60_000_000_000
                d = self.minutes.get(m)
                if d is None:
                    with self.lock:
                        d = self.minute(m)
                d["sent"] += 1
                now = time.monotonic()
                if now >= next_sample:
                    next_sample += 1.0
                    crashed = self.sample(now - t_start)
                    if crashed:
                        break
                t_next += period
                delay = t_next - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            t_stop = time.monotonic()
            stop.set()
            sw.join(a.swap_timeout + 15)
            time.sleep(2.0)  # answers in flight, one more /diagnostics
            self.drain_s = max(0.0, self.last_rx * 1e-9 - t_stop)
            self.sample(time.monotonic() - t_start)
            self.recording = False
            self.wall = t_stop - t_start
            self.crashed = crashed
        finally:
            self.stop_all()
            sp.close()
        self.node_exit = self.proc.returncode

    def sample(self, t_rel):
        """Once a second: RSS of node and worker, worker pid, load; returns a crash text."""
        if self.proc.poll() is not None:
            return f"node exited with code {self.proc.returncode}"
        kids = children(self.proc.pid)
        wpid = kids[0] if kids else None
        if wpid is not None and (not self.worker_pids or self.worker_pids[-1] != wpid):
            self.worker_pids.append(wpid)
        d = self.diag
        self.samples.append({"t": t_rel, "rss_node": vmrss_kb(self.proc.pid),
                             "rss_worker": vmrss_kb(wpid) if wpid else None, "worker": wpid,
                             "load": os.getloadavg()[0],
                             "in": int(d.get("messages_in", 0)), "out": int(d.get("messages_out", 0)),
                             "dropped": int(d.get("messages_dropped", 0)),
                             "services": d.get("services", ""), "model": d.get("model", "")})
        return None


# ------------------------------------------------------------------------------ report
def pct(a, p):
    return float(np.percentile(a, p)) if len(a) else float("nan")


def report(s, args):
    rows = []
    nmin = min(max(s.minutes) + 1 if s.minutes else 0, int(np.ceil(args.minutes)))
    samples = s.samples
    for m in range(nmin):
        d = s.minutes[m]
        lat = np.array(d["lat"]) * 1e3
        in_min = [x for x in samples if m * 60 <= x["t"] < (m + 1) * 60] or samples[-1:]
        last = in_min[-1]
        prev = [x for x in samples if x["t"] < m * 60]
        first = prev[-1] if prev else in_min[0]
        evs = [e for e in s.events if m * 60 <= e["t"] - s.t_start_ns * 1e-9 < (m + 1) * 60]
        sw = [w for w in s.swaps if m * 60 <= w["t"] - s.t_start_ns * 1e-9 < (m + 1) * 60]
        rows.append({
            "minute": m + 1, "sent": d["sent"], "received": d["received"],
            "drops": d["sent"] - d["received"],
            "node_in": last["in"] - first["in"], "node_out": last["out"] - first["out"],
            "node_dropped": last["dropped"] - first["dropped"],
            "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
            "max_ms": float(lat.max()) if len(lat) else float("nan"),
            "rss_node_kb": last["rss_node"], "rss_worker_kb": last["rss_worker"],
            "calls_ok": sum(e["ok"] for e in evs), "calls_failed": sum(not e["ok"] for e in evs),
            "traj_ms_p50": pct([e["dt"] * 1e3 for e in evs if e["kind"] == "traj"], 50),
            "single_ms_p50": pct([e["dt"] * 1e3 for e in evs if e["kind"] != "traj"], 50),
            "swaps_ok": sum(w["ok"] for w in sw), "swaps": len(sw),
            "load1": float(np.mean([x["load"] for x in in_min])),
        })

    # RSS growth after warm-up: from the last sample of minute 1 to the end
    base = [x for x in samples if x["t"] < 60]
    after = [x for x in samples if x["t"] >= 60]
    growth = {}
    for key in ("rss_node", "rss_worker"):
        if base and after and base[-1][key] and after[-1][key]:
            vals = [x[key] for x in after if x[key]]
            ts = np.array([x["t"] for x in after if x[key]]) / 60.0
            slope = float(np.polyfit(ts, vals, 1)[0]) if len(vals) > 2 else float("nan")
            growth[key] = {"baseline_kb": base[-1][key], "end_kb": after[-1][key],
                           "slope_kb_per_min": slope,
                           "growth_kb": after[-1][key] - base[-1][key],
                           "max_growth_kb": max(vals) - base[-1][key]}
    restarts = len(s.worker_pids) - 1
    with open(s.logname) as f:
        log = f.read()
    worker_exits = log.count("service worker exited")
    swaps_failed = [w for w in s.swaps if not w["ok"]]
    calls_failed = [e for e in s.events if not e["ok"]]
    cand_seen = sorted({e.get("cand") for e in s.events if e.get("cand") is not None})
    dtau = [w["dtau"] for w in s.swaps if w["dtau"] is not None]
    applied = [w["applied_s"] for w in s.swaps if w["applied_s"] is not None]

    # queue: no backlog at the end (the last answer within 1 s of the last input) and no
    # trend (the last minute's median latency and trajectory call time against the median
    # minute after warm-up); absolute latencies depend on the machine's load
    full = [r for r in rows[1:] if r["sent"] > 0.5 * 60 * args.rate] or rows
    med_p50 = float(np.median([r["p50_ms"] for r in full]))
    med_traj = float(np.nanmedian([r["traj_ms_p50"] for r in full])) if full else float("nan")
    last = full[-1]
    queue_ok = (s.drain_s <= LATE_S and last["p50_ms"] <= max(2 * med_p50, 5.0)
                and not (last["traj_ms_p50"] > max(2 * med_traj, med_traj + 200)))
    crash_ok = s.crashed is None and restarts == 0 and worker_exits == 0
    rss_ok = all(g["growth_kb"] <= RSS_TARGET_KB for g in growth.values()) and len(growth) == 2
    summary = {
        "minutes": args.minutes, "rate": args.rate, "wall_s": s.wall, "rows": rows,
        "rss": growth, "crash": s.crashed, "node_exit_code": s.node_exit,
        "worker_pids": s.worker_pids, "worker_exits_in_log": worker_exits,
        "late_answers": s.late, "drain_s": s.drain_s,
        "swaps": len(s.swaps), "swaps_failed": swaps_failed,
        "swap_dtau_min": min(dtau) if dtau else None,
        "swap_applied_max_s": max(applied) if applied else None,
        "calls": len(s.events), "calls_failed": calls_failed[:20],
        "candidates_seen_by_services": cand_seen,
        "verdict": {"rss": rss_ok, "no_crash": crash_ok, "no_unbounded_queue": queue_ok,
                    "swaps_and_calls": not swaps_failed and not calls_failed},
    }

    out = []
    p = out.append
    tot_sent = sum(r["sent"] for r in rows)
    tot_recv = sum(r["received"] for r in rows)
    p(f"\nSoak: {args.minutes:g} min at {args.rate:g} Hz (wall {s.wall:.0f} s), joint_states "
      f"{'reliable depth 10' if args.reliable else 'best effort'}, bundled 7-dof arm; hot swap "
      f"every {args.swap_period / 2:g} s (description and gravity alternately); ID + FD every "
      f"1 s, ID trajectory of {args.traj_points} points every 10 s; {os.cpu_count()} CPUs, "
      f"load average (1 min) {min(r['load1'] for r in rows):.1f}–{max(r['load1'] for r in rows):.1f}\n")
    p("| min | sent | node in | node dropped | node out | received | drops | p50 ms | p99 ms "
      "| max ms | RSS node MB | RSS worker MB | calls ok / failed | ID/FD ms p50 | traj ms p50 "
      "| swaps ok | load 1m |")
    p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def mb(kb):
        return f"{kb / 1024:.2f}" if kb else "–"

    for r in rows:
        p(f"| {r['minute']} | {r['sent']} | {r['node_in']} | {r['node_dropped']} | {r['node_out']} "
          f"| {r['received']} | {r['drops']} "
          f"| {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['max_ms']:.1f} | {mb(r['rss_node_kb'])} "
          f"| {mb(r['rss_worker_kb'])} | {r['calls_ok']} / {r['calls_failed']} "
          f"| {r['single_ms_p50']:.1f} | {r['traj_ms_p50']:.0f} | {r['swaps_ok']}/{r['swaps']} "
          f"| {r['load1']:.1f} |")
    p(f"\nTotal: {tot_sent} sent, {tot_recv} received ({tot_sent - tot_recv} drops, "
      f"{100 * (tot_sent - tot_recv) / max(tot_sent, 1):.3f} %), answers later than "
      f"{LATE_S:g} s: {s.late}; service calls {len(s.events)} ({len(calls_failed)} failed), "
      f"answers matched models {[candidates_labels()[i] for i in cand_seen]}; "
      f"hot swaps {len(s.swaps)} ({len(swaps_failed)} failed), applied within "
      f"{(max(applied) if applied else float('nan')):.2f} s, smallest torque change "
      f"{(min(dtau) if dtau else float('nan')):.3f} N m.")
    for key, name in (("rss_node", "node"), ("rss_worker", "worker")):
        g = growth.get(key)
        if g:
            p(f"RSS {name}: {g['baseline_kb']} kB after minute 1 -> {g['end_kb']} kB at the end: "
              f"{g['growth_kb']:+d} kB (max {g['max_growth_kb']:+d} kB; fitted slope "
              f"{g['slope_kb_per_min']:+.1f} kB/min)")
    p(f"Crash: {s.crashed or 'none'}; node exit code {s.node_exit} (SIGINT at the end); worker "
      f"pids {s.worker_pids} ({restarts} restarts, {worker_exits} 'service worker exited' in "
      f"the node log).")
    v = summary["verdict"]
    p(f"\nVerdict: RSS growth <= 1 MB after warm-up: {'PASS' if v['rss'] else 'FAIL'}; no crash: "
      f"{'PASS' if v['no_crash'] else 'FAIL'}; no unbounded queue (last answer "
      f"{s.drain_s:.3f} s after the last input, last-minute p50 {last['p50_ms']:.2f} ms vs "
      f"median minute {med_p50:.2f} ms, "
      f"trajectory call {last['traj_ms_p50']:.0f} ms vs {med_traj:.0f} ms): "
      f"{'PASS' if v['no_unbounded_queue'] else 'FAIL'}; swaps and calls all correct: "
      f"{'PASS' if v['swaps_and_calls'] else 'FAIL'}")
    for w in swaps_failed[:5]:
        p(f"  swap failed: {w}")
    for e in calls_failed[:5]:
        p(f"  call failed: {e}")
    return "\n".join(out), summary


def candidates_labels():
    return ["arm/upright", "arm/tilted", "heavy/upright", "heavy/tilted"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--swap-period", type=float, default=30.0,
                    help="s between two description swaps (a gravity change half-way between)")
    ap.add_argument("--swap-timeout", type=float, default=15.0,
                    help="s a swap may take to show in the published torques")
    ap.add_argument("--traj-points", type=int, default=1000)
    ap.add_argument("--reliable", action="store_true", help="reliable joint_states (depth 10)")
    ap.add_argument("--json", help="also write the rows and the summary to this file")
    ap.add_argument("--role", default="soak", choices=["soak", "load"], help=argparse.SUPPRESS)
    ap.add_argument("--ns", help=argparse.SUPPRESS)
    ap.add_argument("--load-seconds", type=float, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "load":
        load_main(args.ns, args.load_seconds, args.traj_points)
        return
    def on_term(*_):
        raise KeyboardInterrupt  # stop_all() runs in Soak.run's finally

    signal.signal(signal.SIGTERM, on_term)
    s = Soak(args)
    s.run()
    text, summary = report(s, args)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1, default=str)
    if s.crashed is None and not summary["verdict"]["no_crash"]:
        print(f"node log: {s.logname}", file=sys.stderr)
    elif all(summary["verdict"].values()):
        os.unlink(s.logname)
    else:
        print(f"node log kept: {s.logname}", file=sys.stderr)


if __name__ == "__main__":
    main()
