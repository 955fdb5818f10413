#!/usr/bin/env python3
"""Round-trip latency of the rbd_ros dynamics node at 1 kHz (a benchmark, not a test).

For each joint_states QoS (best effort = sensor-data QoS, reliable depth 10) it
starts the node on the bundled 7-dof arm, publishes JointState at 1 kHz from a
sleep-to-deadline loop for --seconds, and measures joint_states stamp ->
~/gravity_torques_state received (the output carries the input stamp; the
stamp holds the sender's monotonic clock).  Reports p50/p95/p99/max, drops
and the CPU use of each process (bench, node, service worker) as a Markdown table.

``--observer``: the node runs its momentum observer on the efforts the bench now sends
(observer_torque_source measured, K 50 1/s) and the latency is measured to its output,
``~/external_torques`` (published after every term of the message is computed), while
the bare node still answers with g on the same messages (efforts included): the ratio
of the two p99 is the observer's cost against the rclpy floor (issue 18: within 1.2x).
With ``--subscribe-all`` the observer's other outputs (~/external_wrench, ~/collision)
and ~/gravity_torques_state are subscribed too.

    python bench/latency.py [--seconds 15] [--rate 1000] [--modes best_effort,reliable] [--observer]
"""
import argparse
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

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from rbd_ros_interfaces.msg import Collision  # noqa: E402

JOINTS = [f"joint{i}" for i in range(1, 8)]
OBSERVER_PARAMS = ["observer=true", "observer_gain=50.0", "observer_torque_source=measured"]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError):
        return float("nan")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def start_node(ns, reliable, executor, extra, kind):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    log = open(os.path.join(tempfile.gettempdir(), f"rbd_bench_{ns}.log"), "w")
    if kind == "bare":
        cmd = [sys.executable, os.path.join(ROOT, "bench", "bare_node.py"), "--ros-args",
               "-r", f"__ns:=/{ns}", "-p", f"joint_states_reliable:={str(reliable).lower()}",
               "-p", f"control_executor:={executor}"]
    else:
        params = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        params.write("/**/rbd_dynamics:\n  ros__parameters:\n"
                     "    urdf_file: rbd_arm7\n"
                     f"    joint_states_reliable: {'true' if reliable else 'false'}\n"
                     f"    control_executor: {executor}\n"
                     + "".join(f"    {kv.split('=')[0]}: {kv.split('=')[1]}\n" for kv in extra))
        params.close()
        cmd = [sys.executable, "-m", "rbd_ros.node", "--ros-args",
               "-r", f"__ns:=/{ns}", "--params-file", params.name]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    return proc, log.name


def run_mode(node, mode, seconds, rate, executor, extra, subscribe_all, kind, observer=False):
    reliable = mode == "reliable"
    ns = f"bench{os.getpid()}_{kind}_{mode}"
    proc, logname = start_node(ns, reliable, executor, extra, kind)
    diag = {}

    def on_diag(arr):
        for st in arr.status:
            if st.name.endswith(f"/{ns}/rbd_dynamics"):
                diag.update({kv.key: kv.value for kv in st.values})

    dsub = node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 10)
    qos_in = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE) if reliable \
        else qos_profile_sensor_data
    pub = node.create_publisher(JointState, f"/{ns}/joint_states", qos_in)
    lat = []
    lock = threading.Lock()
    recording = [False, 0]  # on, first stamp (ns) of the measurement

    def on_out(msg):
        now = time.monotonic_ns()
        sent = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if recording[0] and sent >= recording[1]:  # answers to warm-up inputs do not count
            with lock:
                lat.append((now - sent) * 1e-9)

    # the observer's output (rbd_ros node with --observer), else g (and the bare node: always g)
    out_topic = "external_torques" if observer and kind != "bare" else "gravity_torques_state"
    sub = node.create_subscription(JointState, f"/{ns}/rbd_dynamics/{out_topic}",
                                   on_out, QoSProfile(depth=100,
                                                      reliability=ReliabilityPolicy.RELIABLE))
    others = []
    if subscribe_all:  # every output matched, so the node publishes all five messages
        topics = (("gravity_torques", Float64MultiArray), ("bias_torques", Float64MultiArray),
                  ("bias_torques_state", JointState), ("inertia_matrix", Float64MultiArray))
        if observer:
            topics += (("gravity_torques_state", JointState), ("external_wrench", WrenchStamped),
                       ("collision", Collision))
        for topic, mtype in topics:
            others.append(node.create_subscription(mtype, f"/{ns}/rbd_dynamics/{topic}",
                                                   lambda m: None, 10))
    msg = JointState()
    msg.name = JOINTS
    if observer:   # measured efforts for the observer (the same messages to the bare node)
        msg.effort = [0.0, -40.0, 0.5, 18.0, 0.5, 1.5, 0.0]
    q = np.zeros(7)

    def publish_one(k):
        t = time.monotonic_ns()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(t, 1_000_000_000)
        q[:] = 0.5 * np.sin(2 * np.pi * 0.5 * k / rate + np.arange(7))
        msg.position = q.tolist()
        msg.velocity = [0.1] * 7
        pub.publish(msg)

    # wait for the node's output (model loaded, discovery done)
    t_end = time.monotonic() + 120
    got_first = [False]
    probe = node.create_subscription(JointState, f"/{ns}/rbd_dynamics/{out_topic}",
                                     lambda m: got_first.__setitem__(0, True), 10)
    k = 0
    while not got_first[0]:
        if time.monotonic() > t_end or proc.poll() is not None:
            raise RuntimeError(f"node did not answer; see {logname}")
        publish_one(k)
        k += 1
        time.sleep(0.01)
    node.destroy_subscription(probe)
    # the service worker compiles its kernels at start: wait until it is ready, so that
    # the measurement sees the node in its steady state
    while kind != "bare" and not diag.get("services", "").startswith(("on", "off")):
        if time.monotonic() > t_end:
            raise RuntimeError(f"services never became ready; see {logname}")
        publish_one(k)
        k += 1
        time.sleep(0.01)
    time.sleep(0.5)

    # warm-up 2 s, then measure
    period = 1.0 / rate
    for phase, dur in (("warmup", 2.0), ("measure", float(seconds))):
        if phase == "measure":
            pids = {"node": proc.pid}
            for c in children(proc.pid):
                pids["service worker"] = c
            cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
            cpu0["bench"] = cpu_seconds(os.getpid())
            recording[1] = time.monotonic_ns()
            recording[0] = True
            t_start = time.monotonic()
        n = int(dur * rate)
        t_next = time.monotonic()
        for _ in range(n):
            publish_one(k)
            k += 1
            t_next += period
            delay = t_next - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        if phase == "measure":
            sent = n
            wall = time.monotonic() - t_start
    time.sleep(1.2)  # one more /diagnostics
    recording[0] = False
    node.destroy_subscription(dsub)
    cpu = {name: (cpu_seconds(pid) - cpu0[name]) / wall * 100 for name, pid in pids.items()}
    cpu["bench"] = (cpu_seconds(os.getpid()) - cpu0["bench"]) / wall * 100
    node.destroy_subscription(sub)
    for o in others:
        node.destroy_subscription(o)
    node.destroy_publisher(pub)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    with lock:
        a = np.array(lat) * 1e3
    label = kind + (" + observer" if observer and kind != "bare" else "")
    return {"node": kind, "label": label, "mode": mode, "sent": sent, "received": len(a), "rate": sent / wall,
            "p50": np.percentile(a, 50), "p95": np.percentile(a, 95),
            "p99": np.percentile(a, 99), "max": a.max(), "over1ms": float(np.mean(a > 1.0) * 100),
            "cpu": cpu, "diag": dict(diag)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--modes", default="best_effort,reliable")
    ap.add_argument("--executor", default="events", choices=["events", "single"],
                    help="control_executor of the node (and the executor of the bare node)")
    ap.add_argument("--subscribe-all", action="store_true",
                    help="also subscribe to the four other outputs (the node then publishes "
                         "five messages per input; it skips topics without subscribers)")
    ap.add_argument("--param", action="append", default=[],
                    help="extra node parameter NAME=VALUE (repeatable)")
    ap.add_argument("--observer", action="store_true",
                    help="the rbd_ros node runs its momentum observer on the efforts the bench sends "
                         "(measured, K 50 1/s); latency measured to ~/external_torques")
    ap.add_argument("--nodes", default="rbd_ros,bare",
                    help="which nodes to measure, in turn per QoS: rbd_ros (the dynamics node) "
                         "and/or bare (bench/bare_node.py: one rclpy node, one executor, "
                         "gravity only -- the floor rclpy and Fast DDS set on this machine)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure every (QoS, node) pair this many times, interleaved; the "
                         "summary gives the median p50/p99 per pair (runs on a shared VM vary)")
    args = ap.parse_args()
    kinds = args.nodes.split(",")
    rclpy.init()
    node = rclpy.create_node("rbd_latency_bench")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ex.spin_once(timeout_sec=0.05)

    th = threading.Thread(target=spin, daemon=True)
    th.start()
    rows = []
    try:
        for rep in range(args.repeat):
            for mode in args.modes.split(","):
                for kind in kinds:
                    extra = args.param + (OBSERVER_PARAMS if args.observer else [])
                    r = run_mode(node, mode, args.seconds, args.rate, args.executor, extra,
                                 args.subscribe_all, kind, args.observer)
                    rows.append(r)
                    print(f"{kind} {mode} (run {rep + 1}/{args.repeat}): done", file=sys.stderr)
    finally:
        stop.set()
        th.join()
        node.destroy_node()
        rclpy.shutdown()
    measured = "external_torques" if args.observer else "gravity_torques_state"
    print(f"\n{args.seconds:g} s at {args.rate:g} Hz per row, node control_executor="
          f"{args.executor}, {os.cpu_count()} CPUs, outputs subscribed: "
          f"{'all' if args.subscribe_all else measured + ' only'}"
          f"{', observer on (measured efforts, K 50 1/s)' if args.observer else ''} "
          f"{' '.join(args.param)}\n")
    print("| node | joint_states QoS | sent | received (drops) | p50 ms | p95 ms | p99 ms | max ms "
          "| > 1 ms | CPU node | CPU worker | CPU bench |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["node"] == "bare":
            continue
        d = r["diag"]
        print(f"node-side {r['mode']}: callback p50/p99 {d.get('callback_time_p50_us')}/"
              f"{d.get('callback_time_p99_us')} us, dynamics p50/p99 {d.get('compute_time_p50_us')}/"
              f"{d.get('compute_time_p99_us')} us, publishing p50/p99 {d.get('publish_time_p50_us')}/"
              f"{d.get('publish_time_p99_us')} us (last 4096 messages)", file=sys.stderr)
    for r in rows:
        c = r["cpu"]
        print(f"| {r['label']} | {r['mode'].replace('_', ' ')}{' depth 10' if r['mode'] == 'reliable' else ' depth 5'} "
              f"| {r['sent']} | {r['received']} ({r['sent'] - r['received']}) "
              f"| {r['p50']:.3f} | {r['p95']:.3f} | {r['p99']:.3f} | {r['max']:.2f} "
              f"| {r['over1ms']:.2f} % | {c['node']:.0f} % | {c.get('service worker', float('nan')):.0f} % "
              f"| {c['bench']:.0f} % |")
    print(f"\nmedian over {args.repeat} run(s) per row:\n")
    print("| node | joint_states QoS | runs | received / sent | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|---|")
    med = {}
    for mode in args.modes.split(","):
        for kind in kinds:
            rs = [r for r in rows if r["node"] == kind and r["mode"] == mode]
            if not rs:
                continue
            med[kind, mode] = m = {k: float(np.median([r[k] for r in rs])) for k in ("p50", "p99")}
            print(f"| {rs[0]['label']} | {mode.replace('_', ' ')} | {len(rs)} | "
                  f"{sum(r['received'] for r in rs)} / {sum(r['sent'] for r in rs)} | "
                  f"{m['p50']:.3f} | {m['p99']:.3f} | {max(r['max'] for r in rs):.2f} |")
    for mode in args.modes.split(","):
        a, b = med.get(("rbd_ros", mode)), med.get(("bare", mode))
        if a and b:
            print(f"\n{mode}: rbd_ros / bare rclpy node (medians): p50 {a['p50'] / b['p50']:.2f}, "
                  f"p99 {a['p99'] / b['p99']:.2f}")

if __name__ == "__main__":
    main()
