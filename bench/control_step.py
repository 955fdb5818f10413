#!/usr/bin/env python3
"""The node's control step (``ControlStep.joint_state``: merge, gate, every live term) of
this tree against another git revision's, or of one robot against another on this tree,
interleaved (a benchmark, not a test).

    python bench/control_step.py [--rev main] [--rounds 21] [--messages 2000] [--robot rbd_arm7]
    python bench/control_step.py --robots rbd_arm7,delta [--rounds 5]

``--robots A,B`` (issue 24): this tree on robot A (the tree arm) and on robot B (the
delta, from its three shoulders: every message completes the ten passive joints and
computes the actuator torques), same cases, interleaved; B / A is the mechanism's cost
per message against the arm's (target <= 1.5, median of 5 interleaved runs).

The other revision's ``rbd_ros`` package is exported (``git archive``) into a temporary
directory (kept between runs of the same revision, with its numba cache: the first run
compiles it, ~1-2 min).  One worker process per tree builds the node's model and
control step in process (no ROS, no DDS) and, on each request, times ``--messages``
calls of ``joint_state`` on the same pre-made messages (positions, velocities and
efforts of every joint published: a smooth motion, 0.1 rad at 1 Hz, sampled every 1 ms,
as the receive times).  Requests alternate A (the other
revision), B (this tree), A, B ...; printed per case: the median µs per message of each
and the median over rounds of B / A.  Cases (``--cases``): ``g`` (only g(q) live),
``gbh`` (g, b and H: the usual), ``all+observer`` (everything live with the momentum
observer on: g, b, H, the command, τ̂_ext, the wrench, the collision flag).  The
other revision's first-start helper may fail (it finds this tree's ``rbd_precompile``
entry point): that revision then compiles its kernels itself, before the timing.
``--robot`` takes a bundled robot (``delta`` or ``fourbar`` on a tree that knows closed
loops: their ``actuated_joints`` are set).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CASES = {"g": {"g"}, "gbh": {"g", "b", "h"},
         "all+observer": {"g", "b", "h", "cmd", "tau_ext", "wrench", "collision"}}

WORKER = r'''
import array, json, logging, sys, time
import numpy as np
from rbd_ros import robots
from rbd_ros.node import model_build as mb
from rbd_ros.node.control_step import ControlStep
from rbd_ros.node.params import Params
from rbd_ros.node.stats import Stats

robot, live, observer, nmsg = sys.argv[1], set(sys.argv[2].split(",")), sys.argv[3] == "1", int(sys.argv[4])
text, where = robots.read_description(robot, "")
kw = dict(max_state_age=0.0, observer=observer, observer_torque_source="measured")
extra = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
kw.update(extra)
params = Params(**kw)
build = dict(floating_base=False, mimic=True, gravity=(0.0, 0.0, -9.81), joints=params.joints, source=where)
if "actuated_joints" in extra:
    build["actuated"] = params.actuated_joints
rt = mb.build_robot(text, **build)
from rbd_ros.node.terms import TERMS
if isinstance(TERMS[0], type):                  # terms as classes (issue 23 on)
    step = ControlStep(TERMS, params, logging.getLogger("bench"))
    arg = step.make(rt)
    step.bind(arg)
else:
    step = ControlStep(params, logging.getLogger("bench"))
    step.bind(rt)
    arg = rt
step.set_live(live, set())
names = list(rt.loops.actuated) if getattr(rt, "loops", None) is not None else list(rt.dof_names)
rng = np.random.default_rng(0)
n = len(names)
q0 = np.array([rt.q[rt.dof_q[rt.dof_index[nm]]] for nm in names])
ph = rng.uniform(0, 2 * np.pi, n)
tt = 1e-3 * np.arange(nmsg)            # a smooth motion sampled at 1 kHz (0.1 rad, 1 Hz), as a robot sends it
msgs = [(names, array.array("d", q0 + 0.1 * np.sin(2 * np.pi * x + ph)),
         array.array("d", 0.2 * np.pi * np.cos(2 * np.pi * x + ph)), array.array("d", rng.uniform(-5, 5, n)))
        for x in tt]
stats = Stats()
js = step.joint_state
t = 1000.0
print(json.dumps({"ready": sys.modules["rbd_ros"].__file__}), flush=True)
for line in sys.stdin:
    start = time.perf_counter()
    for k, (nm, p, v, e) in enumerate(msgs):
        t += 1e-3
        js(arg, stats, nm, p, v, e, t, t)
    us = (time.perf_counter() - start) / len(msgs) * 1e6
    print(json.dumps({"us": us, "out": stats.msgs_out}), flush=True)
'''


def export(rev: str, dest: str) -> str:
    """The directory holding ``rbd_ros`` of ``rev`` (kept between runs)."""
    sha = subprocess.run(["git", "-C", ROOT, "rev-parse", rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    where = os.path.join(dest, sha[:12])
    if not os.path.isdir(os.path.join(where, "rbd_ros")):
        os.makedirs(where, exist_ok=True)
        data = subprocess.run(["git", "-C", ROOT, "archive", sha, "rbd_ros"], capture_output=True, check=True).stdout
        tar = os.path.join(where, "tree.tar")
        with open(tar, "wb") as f:
            f.write(data)
        with tarfile.open(tar) as t:
            t.extractall(where, filter="data")
        os.remove(tar)
    return where


class Worker:
    def __init__(self, path: str, robot: str, live, observer: bool, messages: int, extra: dict):
        env = dict(os.environ, PYTHONPATH=path + os.pathsep + os.environ.get("PYTHONPATH", ""))
        args = [sys.executable, "-c", WORKER, robot, ",".join(sorted(live)), "1" if observer else "0", str(messages)]
        if extra:
            args.append(json.dumps(extra))
        # cwd: the tree itself (``python -c`` puts the working directory first on sys.path)
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=path)
        self.where = json.loads(self.proc.stdout.readline())["ready"]

    def run(self) -> float:
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())["us"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


LOOPS = {"delta": ["shoulder1", "shoulder2", "shoulder3"], "fourbar": ["crank"]}


def _extra(robot: str) -> dict:
    """The parameters a bundled mechanism needs (its actuated joints)."""
    return {"actuated_joints": LOOPS[robot]} if robot in LOOPS else {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", default="main", help="the other revision (A)")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--robot", default="rbd_arm7")
    ap.add_argument("--robots", default="", help="A,B: robot A against robot B on this tree (no --rev)")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of " + ", ".join(CASES))
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "rbd_ros_bench_trees"))
    args = ap.parse_args(argv)
    if args.robots:
        robot_a, robot_b = args.robots.split(",")
        tree_a, tree_b = ROOT, ROOT
        what = f"A = {robot_a}, B = {robot_b}, both this tree ({ROOT})"
    else:
        robot_a = robot_b = args.robot
        tree_a, tree_b = export(args.rev, args.cache), ROOT
        what = f"{args.robot}: A = {args.rev} ({tree_a}), B = this tree ({ROOT})"
    print(f"ControlStep.joint_state, {what}; {args.messages} messages x {args.rounds} rounds, interleaved A, B, "
          "A, B ...")
    print("| live terms | A (µs/msg) | B (µs/msg) | B / A (median of rounds) |")
    print("|---|---|---|---|")
    for case in args.cases.split(","):
        live, observer = CASES[case], "observer" in case
        if observer and (robot_a in LOOPS or robot_b in LOOPS):
            print(f"| {case} | - | - | (the observer needs a tree) |")
            continue
        a = Worker(tree_a, robot_a, live, observer, args.messages, _extra(robot_a))
        b = Worker(tree_b, robot_b, live, observer, args.messages, _extra(robot_b))
        assert a.where.startswith(tree_a) and b.where.startswith(tree_b), (a.where, b.where)
        ta, tb, ratio = [], [], []
        for r in range(args.rounds + 1):
            x, y = a.run(), b.run()
            if r:           # round 0 warms caches up
                ta.append(x)
                tb.append(y)
                ratio.append(y / x)
        a.close()
        b.close()
        print(f"| {case} | {statistics.median(ta):.2f} | {statistics.median(tb):.2f} | "
              f"{statistics.median(ratio):.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
