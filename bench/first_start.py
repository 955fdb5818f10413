"""The node's time to its first torque: from an empty numba cache (a fresh install) and warm.

    python bench/first_start.py [--rounds 1] [--rev REV] [--colcon] [--verbose] [--timeout 300]

Starts ``python -m rbd_ros.node`` on the bundled arm (rbd_arm7) with an empty
NUMBA_CACHE_DIR (cold), publishes joint states at 100 Hz from the moment it is started,
and reports, counted from the start of the process:

* the first-start log line (``first start: compiling ...``),
* the first ``~/gravity_torques_state`` message received,
* the service worker's ``services ready`` line,
* the CPU seconds the node and the children it has reaped (the precompile helper) used
  until the first torque, and the node's alone (its compile is the critical path, the
  helper's runs on the other core): on a busy machine the wall time stretches, these much
  less.

Then starts it again on the same, now filled, cache (warm: a later start).  With ``--rev
REV`` the same runs alternate with the tree of another git revision (extracted to a
temporary directory, run by this venv's Python): cold A, cold B, warm A, warm B per round,
and each round prints the ratios this tree / REV -- the machine's speed drifts, so compare
within a round.  ``--verbose`` prints the node's log lines with their times.  Set
ROS_DOMAIN_ID to keep the runs away from other ROS traffic.  A benchmark, not a test.

``--colcon``: the ROS user's path instead.  Each tree is copied into ``src/rbd_ros`` of a
fresh colcon workspace and built with ``colcon build --packages-select rbd_ros`` (this
venv's colcon, this venv as the ament prefix that holds rbd_ros_interfaces; the build's
wall and CPU time are printed), and the node is started as ``ros2 run`` would, the installed
``lib/rbd_ros/dynamics_node`` with ``install/setup.bash``'s environment and no
NUMBA_CACHE_DIR: "cold" is the first start after that build, "warm" the second.
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tarfile
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
# (what, words of the log line; one per tree generation)
MARKS = (("compile line", ("first start: compiling", "on first start")), ("services ready", ("services ready",)))
TICK = os.sysconf("SC_CLK_TCK")
VERBOSE = False


def _cpu_s(pid: int):
    """(utime + stime of pid, the same plus its reaped children's: the helper), seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = [int(x) for x in fields[11:15]]
        return sum(ticks[:2]) / TICK, sum(ticks) / TICK
    except (OSError, IndexError, ValueError):
        return float("nan"), float("nan")


def source_start(tree, cache_dir):
    """(argv, environment, cwd) of ``python -m rbd_ros.node`` from source tree ``tree`` on numba
    cache ``cache_dir``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir,
               PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return [sys.executable, "-m", "rbd_ros.node"], env, tree


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def colcon_build(tree, workspace):
    """A colcon workspace ``workspace`` with a copy of ``tree`` in src/rbd_ros, built (rbd_ros
    alone, this venv as the underlay that holds rbd_ros_interfaces); returns (wall s, CPU s of
    the build, the installed node's (argv, environment, cwd) as ``ros2 run`` starts it)."""
    src = os.path.join(workspace, "src", "rbd_ros")
    shutil.copytree(tree, src, ignore=shutil.ignore_patterns(".venv*", ".git", "build", "install", "log",
                                                           "__pycache__", "*.egg-info", "demo_output"))
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
               AMENT_PREFIX_PATH=sys.prefix)
    env.pop("NUMBA_CACHE_DIR", None)
    c, t = _children_cpu(), time.perf_counter()
    done = subprocess.run([os.path.join(bindir, "colcon"), "build", "--packages-select", "rbd_ros",
                           "--base-paths", "src"], cwd=workspace, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t, _children_cpu() - c
    if done.returncode:
        sys.exit(f"colcon build failed in {workspace}:\n{done.stdout}{done.stderr}")
    # install/setup.bash's environment, as a shell that sourced it has it
    out = subprocess.run(["bash", "-c", "source install/setup.bash && env -0"], cwd=workspace, env=env,
                         capture_output=True, check=True).stdout
    run_env = dict(kv.split("=", 1) for kv in out.decode().split("\0") if "=" in kv)
    run_env.pop("NUMBA_CACHE_DIR", None)
    node = os.path.join(workspace, "install", "rbd_ros", "lib", "rbd_ros", "dynamics_node")
    return wall, cpu, ([node], run_env, workspace)


def one_start(node, start, ns, timeout):
    """One start of the node (``start``: argv, environment, cwd); a dict of seconds after the
    start (and "cpu": CPU seconds until the first torque)."""
    with open(URDF) as f:
        urdf = f.read()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as pf:
        yaml.safe_dump({"/**/rbd_dynamics": {"ros__parameters": {"robot_description": urdf}}}, pf)
    argv, env, cwd = start
    env = dict(env, PYTHONUNBUFFERED="1", RCUTILS_COLORIZED_OUTPUT="0")
    times = {}
    got = threading.Event()
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    proc = None

    def on_torque(_msg):
        if not got.is_set():
            times["first gravity torque"] = time.perf_counter() - t0
            times["cpu node"], times["cpu"] = _cpu_s(proc.pid)
            got.set()

    sub = node.create_subscription(JointState, f"/{ns}/rbd_dynamics/gravity_torques_state", on_torque, qos)
    pub = node.create_publisher(JointState, f"/{ns}/joint_states", qos)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv + ["--ros-args", "-r", f"__ns:=/{ns}", "--params-file", pf.name],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    lines = []

    def read():
        for line in proc.stdout:
            lines.append(f"{time.perf_counter() - t0:7.2f} s  {line}")
            for name, words in MARKS:
                if any(w in line for w in words) and name not in times:
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
        t_int = time.perf_counter()
        proc.send_signal(2)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        times["exit after Ctrl-C"] = time.perf_counter() - t_int
        reader.join(5)
        node.destroy_subscription(sub)
        node.destroy_publisher(pub)
        os.unlink(pf.name)
    if not got.is_set() or VERBOSE:
        sys.stderr.write("".join(lines[-40:]))
    return times


def show(title, times):
    print(f"  {title}")
    for name in ("compile line", "first gravity torque", "services ready"):
        t = times.get(name)
        print(f"    {name:22s} " + (f"{t:6.1f} s after the start" if t is not None else "   -- (not seen)"))
    print(f"    {'CPU until the torque':22s} {times.get('cpu', float('nan')):6.1f} s (node + reaped helper; the node "
          f"alone {times.get('cpu node', float('nan')):.1f} s)")
    print(f"    {'exit after Ctrl-C':22s} {times.get('exit after Ctrl-C', float('nan')):6.1f} s", flush=True)


def _tree_of(rev: str, into: str) -> str:
    """The source tree of git revision ``rev`` extracted under ``into``."""
    path = os.path.join(into, rev)
    os.makedirs(path)
    data = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", rev], check=True,
                          capture_output=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(path)
    return path


def _ratio(a, b, key):
    x, y = a.get(key), b.get(key)
    return f"{y / x:.2f}" if x and y else "--"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--rev", help="also run this git revision's tree, alternating with this one")
    ap.add_argument("--verbose", action="store_true", help="print the node's log lines with their times")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--colcon", action="store_true",
                    help="build each tree in a fresh colcon workspace and start the installed node")
    a = ap.parse_args()
    global VERBOSE
    VERBOSE = a.verbose
    rclpy.init()
    node = rclpy.create_node("first_start_bench")
    with tempfile.TemporaryDirectory(prefix="rbd_first_start_") as tmp:
        trees = [("this tree", ROOT)]
        if a.rev:
            trees.insert(0, (a.rev, _tree_of(a.rev, tmp)))
        try:
            for r in range(a.rounds):
                print(f"\nround {r + 1} (load average {os.getloadavg()[0]:.1f})")
                res = {}
                starts = {}
                for name, tree in trees:
                    if a.colcon:
                        ws = tempfile.mkdtemp(prefix="rbd_colcon_ws_", dir=tmp)
                        wall, cpu, starts[name] = colcon_build(tree, ws)
                        res["build", name] = {"wall": wall, "cpu": cpu}
                        print(f"  colcon build, {name}: {wall:.1f} s ({cpu:.1f} s CPU)", flush=True)
                    else:
                        starts[name] = source_start(tree, tempfile.mkdtemp(prefix="rbd_numba_cache_", dir=tmp))
                for kind in ("cold", "warm"):
                    for name, _ in trees:
                        t = one_start(node, starts[name], f"fs{os.getpid()}_{r}_{kind}_{len(res)}", a.timeout)
                        res[kind, name] = t
                        what = ("first start after the build" if kind == "cold" else "second start") if a.colcon \
                            else f"{'empty' if kind == 'cold' else 'filled'} numba cache"
                        show(f"{kind} ({what}), {name}", t)
                if a.rev:
                    if a.colcon:
                        A, B = res["build", a.rev], res["build", "this tree"]
                        print(f"  colcon build: this tree / {a.rev}: wall {_ratio(A, B, 'wall')}, "
                              f"CPU {_ratio(A, B, 'cpu')}")
                    for kind in ("cold", "warm"):
                        A, B = res[kind, a.rev], res[kind, "this tree"]
                        print(f"  {kind}: this tree / {a.rev}: first torque {_ratio(A, B, 'first gravity torque')}, "
                              f"CPU {_ratio(A, B, 'cpu')}")
        finally:
            node.destroy_node()
            rclpy.try_shutdown()


if __name__ == "__main__":
    main()
