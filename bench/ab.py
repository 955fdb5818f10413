#!/usr/bin/env python3
"""This tree's core against another git revision's, single calls and batches, in one process.

    python bench/ab.py [--rev HEAD~1] [--robots panda,talos_full_v2] [--rounds 41] [--batch 1000]
    python bench/ab.py --callgrind [--rev HEAD~1] [--calls 200]   # instruction counts instead

The other revision's ``rbd_ros/core`` is exported (``git archive``) into a temporary
directory as the package ``rbd_ros_ab`` (its own numba cache there: the first run
compiles it, ~1 min), both are imported, and each public function is timed in
interleaved rounds (old, new, old, new ...) on the same states; the ratio printed is
the median over rounds of new/old, so one noisy second cannot swing it.  Results of
the two trees are also compared (they must agree to 1e-12 relative).  Batches
(``--batch N`` different states, ``--batch 0`` to skip) are timed the same way after
the single calls, with the same number of threads on both sides.  ``--callgrind``
counts instructions per call instead (single calls only, each function of both trees
run ``--calls`` times under ``valgrind --tool=callgrind``, each measurement in its own
dump; the kernels compiled for a generic x86-64 CPU, ``NUMBA_CPU_NAME=generic``, which
valgrind runs from numba's cache): repeatable whatever the machine's load, so a change
of a few per cent shows on a busy host (instructions, not time).  A benchmark, not a test: nothing here asserts
on speed.
"""
from __future__ import annotations

import argparse
import glob
import importlib
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test"))  # oracle.py (robot URDFs)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import oracle as orc  # noqa: E402

import rbd_ros.core as new  # noqa: E402


def export(rev: str, dest: str):
    """rbd_ros/core of ``rev`` as the package ``rbd_ros_ab`` under ``dest`` (kept between
    runs of the same revision, so its numba cache is too)."""
    sha = subprocess.run(["git", "-C", ROOT, "rev-parse", rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    pkg = os.path.join(dest, sha[:12], "rbd_ros_ab")
    if not os.path.isdir(pkg):
        tmp = tempfile.mkdtemp(dir=dest)
        data = subprocess.run(["git", "-C", ROOT, "archive", sha, "rbd_ros/core"], capture_output=True,
                              check=True).stdout
        tar = os.path.join(tmp, "core.tar")
        with open(tar, "wb") as f:
            f.write(data)
        with tarfile.open(tar) as t:
            t.extractall(tmp, filter="data")
        os.makedirs(os.path.dirname(pkg), exist_ok=True)
        os.makedirs(os.path.join(tmp, "rbd_ros_ab"))
        open(os.path.join(tmp, "rbd_ros_ab", "__init__.py"), "w").close()
        shutil.move(os.path.join(tmp, "rbd_ros", "core"), os.path.join(tmp, "rbd_ros_ab", "core"))
        shutil.move(os.path.join(tmp, "rbd_ros_ab"), pkg)
        shutil.rmtree(tmp)
    sys.path.insert(0, os.path.dirname(pkg))
    return importlib.import_module("rbd_ros_ab.core"), sha[:12]


def calls(lib, model, q, v, a):
    return {
        "rnea": lambda: lib.rnea(model, q, v, a),
        "gravity": lambda: lib.gravity(model, q),
        "bias": lambda: lib.bias(model, q, v),
        "crba": lambda: lib.crba(model, q),
        "forward_dynamics": lambda: lib.forward_dynamics(model, q, v, a),
        "aba": lambda: lib.aba(model, q, v, a),
        "coriolis_matrix": lambda: lib.coriolis_matrix(model, q, v),
    }


def single_calls(lib, model, q, v, a):
    """{name: (call, result)}: the allocation-free ``_into`` forms a control loop calls and
    the functions with options or keywords, one state (``result()`` reads what the call
    wrote: timing the call alone)."""
    nv, frame = model.nv, model.link_names[-1]
    out, H, J, dofs = np.empty(nv), np.empty((nv, nv)), np.empty((6, nv)), lib.dof_indices(model)
    g, b, Hc = np.empty(nv), np.empty(nv), np.empty(nv * nv)
    return {
        "rnea_into": (lambda: lib.rnea_into(model, q, v, a, out), lambda: out.copy()),
        "gravity_into": (lambda: lib.gravity_into(model, q, out), lambda: out.copy()),
        "crba_into": (lambda: lib.crba_into(model, q, H), lambda: H.copy()),
        "aba_into": (lambda: lib.aba_into(model, q, v, a, out), lambda: out.copy()),
        "coriolis_transpose_v_into": (lambda: lib.coriolis_transpose_v_into(model, q, v, out), lambda: out.copy()),
        "compensation_into": (lambda: lib.compensation_into(model, q, v, dofs, g, b, Hc),
                              lambda: np.concatenate([g, b, Hc])),
        "frame_jacobian": (lambda: lib.frame_jacobian(model, q, frame), None),
        "frame_jacobian_into": (lambda: lib.frame_jacobian_into(model, q, frame, "local_world_aligned", J),
                                lambda: J.copy()),
        "regressor": (lambda: lib.regressor(model, q, v, a), None),
    }


def per_call_ns(fn, n):
    t = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t) / n


# ---- callgrind: each measurement runs inside one call of itertools.dropwhile's C
# ``dropwhile_next`` (its predicate runs it), the toggle (as bench/overhead.py does)

def _run(fn, n):
    for _ in range(n):
        fn()


def _measure_once(fn, n):
    next(itertools.dropwhile(lambda _: _run(fn, n), (0,)))


def _cases(old, robots, rng):
    """[(robot, name, old call, new call)] of every single call, on one state per robot."""
    out = []
    for robot in robots:
        urdf = orc.robot_urdf(robot)
        floating = orc.ROBOTS[robot][1]
        mo = old.Model.from_urdf(urdf, floating_base=floating, mimic=False)
        mn = new.Model.from_urdf(urdf, floating_base=floating, mimic=False)
        q = state(mn, floating, rng)
        v = rng.standard_normal(mn.nv)
        acc = rng.standard_normal(mn.nv)
        co, cn = calls(old, mo, q, v, acc), calls(new, mn, q, v, acc)
        co.update({k: f for k, (f, _) in single_calls(old, mo, q, v, acc).items()})
        cn.update({k: f for k, (f, _) in single_calls(new, mn, q, v, acc).items()})
        out += [(robot, name, co[name], cn[name]) for name in co]
    return out


def child(old, robots, n, listing):
    """Under callgrind: every (robot, function) of the old tree, then the new, n calls each."""
    cases = _cases(old, robots, np.random.default_rng(0))
    with open(listing, "w") as f:
        f.write("".join(f"{robot} {name}\n" for robot, name, _, _ in cases))
    for _, _, fo, fn in cases:
        _run(fo, 3)
        _run(fn, 3)
        _measure_once(fo, n)
        _measure_once(fn, n)


def callgrind(a, sha):
    out = tempfile.mkdtemp(prefix="rbd_ab_cg_")
    listing = os.path.join(out, "order.txt")
    me = [sys.executable, os.path.abspath(__file__), "--rev", a.rev, "--robots", a.robots, "--calls", str(a.calls),
          "--cache", a.cache, "--child", listing]
    # valgrind's CPU is not the host's: numba would miss its cache and compile every kernel
    # under valgrind (~50x slower); compiled for a generic x86-64 CPU both runs share it
    env = dict(os.environ, NUMBA_CPU_NAME="generic")
    subprocess.run(me, check=True, env=env)  # compiles what is not cached, outside valgrind
    subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=dropwhile_next",
                    "--dump-after=dropwhile_next", f"--callgrind-out-file={out}/cg.%p"] + me,
                   check=True, stderr=subprocess.DEVNULL, env=env)
    with open(listing) as f:
        order = [line.split() for line in f.read().splitlines()]
    dumps = sorted(glob.glob(os.path.join(out, "cg.*.*")), key=lambda p: int(p.rsplit(".", 1)[1]))
    counts = []
    for path in dumps[-2 * len(order):]:    # the measurements are the last dumps
        with open(path) as f:
            counts.append(next(int(line.split()[1]) for line in f if line.startswith(("summary:", "totals:"))))
    print(f"new: this tree; old: {a.rev} ({sha}); instructions per call (callgrind, {a.calls} calls each, "
          f"including the Python loop); ratio = new / old")
    print(f"{'robot':16s} {'function':26s} {'old':>9s} {'new':>9s} {'ratio':>7s}")
    for k, (robot, name) in enumerate(order):
        co, cn = counts[2 * k] / a.calls, counts[2 * k + 1] / a.calls
        print(f"{robot:16s} {name:26s} {co:9.0f} {cn:9.0f} {cn / co:7.3f}")
    shutil.rmtree(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", default="HEAD~1", help="the other revision (default HEAD~1)")
    ap.add_argument("--robots", default="panda,talos_full_v2")
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--calls", type=int, default=2000, help="calls per function per round")
    ap.add_argument("--batch", type=int, default=1000, help="states per batch (0: no batches)")
    ap.add_argument("--batch-calls", type=int, default=10, help="batch calls per function per round")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "rbd_ros_ab"))
    ap.add_argument("--callgrind", action="store_true", help="instruction counts under valgrind instead of times")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    os.makedirs(a.cache, exist_ok=True)
    old, sha = export(a.rev, a.cache)
    if a.child:
        return child(old, a.robots.split(","), a.calls, a.child)
    if a.callgrind:
        return callgrind(a, sha)
    print(f"new: this tree; old: {a.rev} ({sha}); median over {a.rounds} interleaved rounds of "
          f"{a.calls} calls; ratio = new / old (< 1: new is faster)")
    print(f"{'robot':16s} {'function':26s} {'old us':>8s} {'new us':>8s} {'ratio':>7s}")
    rng = np.random.default_rng(0)
    models = {}
    for robot in a.robots.split(","):
        urdf = orc.robot_urdf(robot)
        floating = orc.ROBOTS[robot][1]
        mo = old.Model.from_urdf(urdf, floating_base=floating, mimic=False)
        mn = new.Model.from_urdf(urdf, floating_base=floating, mimic=False)
        models[robot] = (mo, mn, floating)
        q = state(mn, floating, rng)
        v = rng.standard_normal(mn.nv)
        acc = rng.standard_normal(mn.nv)
        compare(robot, calls(old, mo, q, v, acc), calls(new, mn, q, v, acc), a.rounds, a.calls, "")
        co, cn = single_calls(old, mo, q, v, acc), single_calls(new, mn, q, v, acc)
        compare(robot, {k: f for k, (f, _) in co.items()}, {k: f for k, (f, _) in cn.items()}, a.rounds, a.calls,
                "", {k: r for k, (_, r) in co.items()}, {k: r for k, (_, r) in cn.items()})
    if a.batch <= 0:
        return
    print(f"batches of {a.batch} different states, {a.batch_calls} calls per round")
    for robot, (mo, mn, floating) in models.items():
        Q = np.stack([state(mn, floating, rng) for _ in range(a.batch)])
        V = rng.standard_normal((a.batch, mn.nv))
        A = rng.standard_normal((a.batch, mn.nv))
        compare(robot, calls(old, mo, Q, V, A), calls(new, mn, Q, V, A), a.rounds, a.batch_calls, " batch")


def state(model, floating, rng):
    q = model.neutral() + 0.1 * rng.standard_normal(model.nq) * (np.arange(model.nq) >= (7 if floating else 0))
    q[:3] += 0.1 if floating else 0.0
    return q


def compare(robot, co, cn, rounds, n, label, result_old=None, result_new=None):
    """Time every function of ``co`` (old) and ``cn`` (new) in interleaved rounds; print.
    ``result_*[name]``: reads what a call wrote (``_into`` forms), else the call's return."""
    for f in co:
        ro, rn = co[f](), cn[f]()
        if result_old and result_old.get(f):
            ro, rn = result_old[f](), result_new[f]()
        err = np.max(np.abs(ro - rn)) / max(1.0, np.max(np.abs(ro)))
        assert err <= 1e-12, (robot, f, err)
        for _ in range(3):
            per_call_ns(co[f], max(1, n // 4))
            per_call_ns(cn[f], max(1, n // 4))
        to, tn = [], []
        for _ in range(rounds):
            to.append(per_call_ns(co[f], n))
            tn.append(per_call_ns(cn[f], n))
        ratio = statistics.median(x / y for x, y in zip(tn, to))
        print(f"{robot:16s} {f + label:26s} {statistics.median(to) / 1e3:8.2f} {statistics.median(tn) / 1e3:8.2f} "
              f"{ratio:7.3f}", flush=True)


if __name__ == "__main__":
    main()
