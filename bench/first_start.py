"""Node time-to-first-torque from an empty numba cache (a fresh install), then warm.

    python bench/first_start.py [--runs-warm 1] [--timeout 300]

Starts ``python -m rbd_ros.node`` on the bundled arm (rbd_arm7) with an empty
NUMBA_CACHE_DIR, publishes joint states at 100 Hz from the moment it is started,
and reports, counted from the start of the process:

* the first-start log line (``first start: compiling ...``),
* the first ``~/gravity_torques_state`` message received,
* the service worker's ``services ready`` line.

Then starts it again on the same (now filled) cache: a normal later start.  Set
ROS_DOMAIN_ID to keep the run away from other ROS traffic.  A benchmark, not a test.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

import rclpy
import yaml
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
URDF = os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf")
JOINTS = [f"joint{i}" for i in range(1, 8)]
MARKS = (("compile line", "first start: compiling"), ("services ready", "services ready"))


def one_start(node, cache_dir, ns, timeout):
    with open(URDF) as f:
        urdf = f.read()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as pf:
        yaml.safe_dump({"/**/rbd_dynamics": {"ros__parameters": {"robot_description": urdf}}}, pf)
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONUNBUFFERED="1", RCUTILS_COLORIZED_OUTPUT="0",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    times = {}
    got = threading.Event()
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)

    def on_torque(_msg):
        if not got.is_set():
            times["first gravity torque"] = time.perf_counter() - t0
            got.set()

    sub = node.create_subscription(JointState, f"/{ns}/rbd_dynamics/gravity_torques_state", on_torque, qos)
    pub = node.create_publisher(JointState, f"/{ns}/joint_states", qos)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rbd_ros.node", "--ros-args", "-r", f"__ns:=/{ns}",
                             "--params-file", pf.name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    lines = []

    def read():
        for line in proc.stdout:
            lines.append(f"{time.perf_counter() - t0:7.2f} s  {line}")
            for name, text in MARKS:
                if text in line and name not in times:
                    times[name] = time.perf_counter() - t0

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    msg = JointState(name=JOINTS, position=[0.1] * 7, velocity=[0.0] * 7)
    try:
        while time.perf_counter() - t0 < timeout and not (got.is_set() and "services ready" in times):
            msg.header.stamp = node.get_clock().now().to_msg()
            pub.publish(msg)
            rclpy.spin_once(node, timeout_sec=0.01)
            if proc.poll() is not None:
                break
    finally:
        proc.send_signal(2)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        reader.join(5)
        node.destroy_subscription(sub)
        node.destroy_publisher(pub)
        os.unlink(pf.name)
    if not got.is_set() or VERBOSE:
        sys.stderr.write("".join(lines[-40:]))
    return times


VERBOSE = False


def show(title, times):
    print(f"\n{title}")
    for name in ("compile line", "first gravity torque", "services ready"):
        t = times.get(name)
        print(f"  {name:22s} " + (f"{t:6.1f} s after the start" if t is not None else "   -- (not seen)"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs-warm", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="print the node's log lines with their times")
    ap.add_argument("--timeout", type=float, default=300.0)
    a = ap.parse_args()
    global VERBOSE
    VERBOSE = a.verbose
    rclpy.init()
    node = rclpy.create_node("first_start_bench")
    try:
        with tempfile.TemporaryDirectory(prefix="rbd_numba_cache_") as cache:
            show("empty numba cache (first start after an install)",
                 one_start(node, cache, f"fs{os.getpid()}_0", a.timeout))
            for k in range(a.runs_warm):
                show("warm numba cache (a later start)", one_start(node, cache, f"fs{os.getpid()}_{k + 1}",
                                                                    a.timeout))
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
