#!/usr/bin/env python3
"""Where a public call's time goes: the bare kernel, numba's dispatcher, the public
function, and Pinocchio's call for the same quantity.

    python bench/overhead.py [--robots panda] [--rounds 31] [--calls 2000]
    python bench/overhead.py --callgrind [--calls 2000]   # instruction counts instead
    python bench/overhead.py --root DIR                   # another checkout's rbd_ros (same layout)
    python bench/overhead.py --pieces [--callgrind]       # what the layers around a kernel are made of

Levels, per function, on one state (the same kind of state as bench.py):

* ``kernel``: the compiled kernel called from a compiled loop (no Python, no dispatch);
* ``dispatch``: the kernel's numba dispatcher called from Python with the same
  arguments (adds argument typing, unboxing and the Python call);
* ``public``: ``rbd.<name>(model, ...)`` (adds the fast path: the guard, the result's
  allocation, the status test);
* ``pinocchio``: Pinocchio 4's Python call for the same quantity (as bench.py times it).

``--pieces`` times the parts of that overhead instead: numba's dispatcher on an empty
kernel of 0..6 array arguments (with and without releasing the GIL), and the Python
work of a public fast path (a call, ``np.empty``, the workspace lookup).

Timed mode: interleaved rounds (one sample of each level in turn), the median per
level over rounds and the median of the per-round ratios public / pinocchio; the
differences between levels are what each layer costs.  ``--callgrind`` runs the same
calls once under ``valgrind --tool=callgrind`` and prints instructions per call:
repeatable whatever the machine's load (instructions, not time: Pinocchio's
vectorised Eigen code does more per instruction than numba's scalar code).  Each
Python-level sample includes the same loop and lambda call (~60 ns, ~300 instructions)
that bench.py's samples include.  A benchmark, not a test: nothing here asserts on
speed.

The compiled loops are cached by numba in a directory named after a hash of the
``rbd_ros/core`` sources (numba's cache does not notice a changed callee), so the
first run after a change compiles the kernels (a minute or two).
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _root(argv) -> str:
    for k, a in enumerate(argv):
        if a == "--root" and k + 1 < len(argv):
            return os.path.abspath(argv[k + 1])
        if a.startswith("--root="):
            return os.path.abspath(a.split("=", 1)[1])
    return os.path.dirname(HERE)


ROOT = _root(sys.argv)


def _source_hash() -> str:
    h = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(ROOT, "rbd_ros", "core", "**", "*.py"), recursive=True)
                       + [os.path.abspath(__file__)]):
        with open(path, "rb") as f:
            h.update(path.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


# numba reads NUMBA_CACHE_DIR when it is first imported: before rbd_ros and numba
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"rbd_overhead_{_source_hash()}"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test"))  # oracle.py (robot URDFs, Pinocchio states)
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import oracle as orc  # noqa: E402
import pinocchio as pin  # noqa: E402
from numba import njit  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.core.algorithms import aba as _aba  # noqa: E402
from rbd_ros.core.algorithms import crba as _crba  # noqa: E402
from rbd_ros.core.algorithms import forward_dynamics as _fd  # noqa: E402
from rbd_ros.core.algorithms import rnea as _rnea  # noqa: E402

FUNCS = ("rnea", "gravity", "bias", "crba", "forward_dynamics", "aba")
LEVELS = ("kernel", "dispatch", "public", "pinocchio")

# ---- the compiled loops: one per kernel (a dispatcher passed as an argument would be
# compiled again in every process: numba cannot cache a function of a dispatcher type)


@njit(cache=True, nogil=True)
def _loop_rnea(n, md, ws, q, v, a, out):
    s = 0
    for _ in range(n):
        s += _rnea.rnea_k(md, ws, q, v, a, out)
    return s


@njit(cache=True, nogil=True)
def _loop_gravity(n, md, ws, q, out):
    s = 0
    for _ in range(n):
        s += _rnea.gravity_k(md, ws, q, out)
    return s


@njit(cache=True, nogil=True)
def _loop_bias(n, md, ws, q, v, out):
    s = 0
    for _ in range(n):
        s += _rnea.bias_k(md, ws, q, v, out)
    return s


@njit(cache=True, nogil=True)
def _loop_crba(n, md, ws, q, out):
    s = 0
    for _ in range(n):
        s += _crba.crba_k(md, ws, q, out)
    return s


@njit(cache=True, nogil=True)
def _loop_fd(n, md, ws, q, v, tau, fe, world, out):
    s = 0
    for _ in range(n):
        s += _fd.forward_dynamics_k(md, ws, q, v, tau, fe, world, out)
    return s


@njit(cache=True, nogil=True)
def _loop_aba(n, md, ws, q, v, tau, fe, world, out):
    s = 0
    for _ in range(n):
        s += _aba.aba_k(md, ws, q, v, tau, fe, world, out)
    return s


def cases(robot: str, seed: int = 0):
    """{function: {level: (callable, calls per call of it)}} for ``robot``: the kernel
    level's callable runs its loop ``n`` times per call, the others one call."""
    path = orc.robot_urdf(robot)
    floating = orc.ROBOTS[robot][1]
    m = rbd.Model.from_urdf(path, floating_base=floating, mimic=False)
    o = orc.Oracle(path, floating, False, layout=m)
    pm, pd = o.model, o.model.createData()
    q, v, a, tau = o.random_state(np.random.default_rng(seed))
    qp, vp, ap, tp = o.q_to_pin(q), o.G @ v, o.G @ a, o.G @ tau
    md, ws = m.md_k, m.workspace()
    nofext = np.zeros((0, 6))
    H = np.empty((m.nv, m.nv))
    out = np.empty(m.nv)

    def pin_fd():
        pin.crba(pm, pd, qp)
        b = pin.nonLinearEffects(pm, pd, qp, vp)
        pin.cholesky.decompose(pm, pd)
        return pin.cholesky.solve(pm, pd, tp - b)

    table = {
        "rnea": (_loop_rnea, _rnea.rnea_k, (md, ws, q, v, a, out), lambda: rbd.rnea(m, q, v, a),
                 lambda: pin.rnea(pm, pd, qp, vp, ap)),
        "gravity": (_loop_gravity, _rnea.gravity_k, (md, ws, q, out), lambda: rbd.gravity(m, q),
                    lambda: pin.computeGeneralizedGravity(pm, pd, qp)),
        "bias": (_loop_bias, _rnea.bias_k, (md, ws, q, v, out), lambda: rbd.bias(m, q, v),
                 lambda: pin.nonLinearEffects(pm, pd, qp, vp)),
        "crba": (_loop_crba, _crba.crba_k, (md, ws, q, H), lambda: rbd.crba(m, q), lambda: pin.crba(pm, pd, qp)),
        "forward_dynamics": (_loop_fd, _fd.forward_dynamics_k, (md, ws, q, v, tau, nofext, False, out),
                             lambda: rbd.forward_dynamics(m, q, v, tau), pin_fd),
        "aba": (_loop_aba, _aba.aba_k, (md, ws, q, v, tau, nofext, False, out), lambda: rbd.aba(m, q, v, tau),
                lambda: pin.aba(pm, pd, qp, vp, tp)),
    }
    res = {}
    for name, (loop, kernel, args, public, pinoc) in table.items():
        res[name] = {
            "kernel": (lambda loop=loop, args=args: loop(KERNEL_CALLS, *args), KERNEL_CALLS),
            "dispatch": (lambda kernel=kernel, args=args: kernel(*args), 1),
            "public": (public, 1),
            "pinocchio": (pinoc, 1),
        }
        # every level compiled and run once (and every status OK)
        assert loop(1, *args) == 0 and kernel(*args) == 0, name
        public()
        pinoc()
    return res


KERNEL_CALLS = 100      # kernel calls per call of a kernel-level loop


# ---- pieces of the overhead: empty kernels of 0..6 arrays, and a public path's Python work

@njit(cache=True, nogil=False)
def _k0():
    return 0


@njit(cache=True, nogil=False)
def _k2(a, b):
    return 0


@njit(cache=True, nogil=False)
def _k4(a, b, c, d):
    return 0


@njit(cache=True, nogil=True)
def _k4_nogil(a, b, c, d):
    return 0


@njit(cache=True, nogil=False)
def _k6(a, b, c, d, e, f):
    return 0


def pieces():
    """{piece: (callable, calls per call)}: the parts a public call is made of."""
    m = rbd.Model.from_urdf(orc.robot_urdf("panda"), mimic=False)
    x = np.zeros(m.nv)
    H = np.zeros((m.nv, m.nv))
    md = m.md_k
    rbd.gravity(m, m.neutral())            # this thread's workspace exists
    res = {
        "python call of a lambda": (lambda: None, 1),
        "empty kernel, 0 arrays": (lambda: _k0(), 1),
        "empty kernel, 2 arrays": (lambda: _k2(md, x), 1),
        "empty kernel, 4 arrays": (lambda: _k4(md, x, x, H), 1),
        "empty kernel, 4 arrays, nogil": (lambda: _k4_nogil(md, x, x, H), 1),
        "empty kernel, 6 arrays": (lambda: _k6(md, x, x, x, x, H), 1),
        "np.empty(nv)": (lambda: np.empty(m._nv), 1),
        "np.empty((nv, nv))": (lambda: np.empty(m._shape_H), 1),
        "model.md_k, model._tls.ws": (lambda: (m.md_k, m._tls.ws), 1),
    }
    for fn, _ in res.values():
        fn()
    return res


def per_call_ns(fn, per, n):
    r = range(n)
    t = time.perf_counter_ns()
    for _ in r:
        fn()
    return (time.perf_counter_ns() - t) / (n * per)


def timed(robots, rounds, calls):
    print(f"median over {rounds} interleaved rounds of {calls} calls (kernel level: {calls} loops of "
          f"{KERNEL_CALLS} calls / {KERNEL_CALLS}); load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'robot':14s} {'function':17s} {'kernel':>8s} {'dispatch':>9s} {'public':>8s} {'pinocchio':>10s}"
          f" {'+disp':>7s} {'+public':>8s} {'pub/pin':>8s}   (ns per call)")
    for robot in robots:
        table = cases(robot)
        for name, levels in table.items():
            fns = [levels[k] for k in LEVELS]
            for fn, per in fns:
                per_call_ns(fn, per, max(1, calls // (10 * (KERNEL_CALLS if per > 1 else 1))))
            samples = [[] for _ in fns]
            for _ in range(rounds):
                for (fn, per), acc in zip(fns, samples, strict=True):
                    acc.append(per_call_ns(fn, per, max(1, calls // per) if per > 1 else calls))
            med = [statistics.median(s) for s in samples]
            ratio = statistics.median(p / q for p, q in zip(samples[2], samples[3], strict=True))
            print(f"{robot:14s} {name:17s} {med[0]:8.0f} {med[1]:9.0f} {med[2]:8.0f} {med[3]:10.0f}"
                  f" {med[1] - med[0]:7.0f} {med[2] - med[1]:8.0f} {ratio:8.2f}", flush=True)


def timed_pieces(rounds, calls):
    table = pieces()
    fns = list(table.values())
    samples = [[] for _ in fns]
    for _ in range(rounds):
        for (fn, per), acc in zip(fns, samples, strict=True):
            acc.append(per_call_ns(fn, per, calls))
    print(f"median ns per call over {rounds} interleaved rounds of {calls} calls (each includes the loop and "
          f"lambda call); load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, acc in zip(table, samples, strict=True):
        print(f"  {name:36s} {statistics.median(acc):8.0f}")


# ---- callgrind: each measurement runs inside one call of itertools.dropwhile's C
# ``dropwhile_next`` (the predicate runs it), the toggle: a C function that calls back into
# Python and that numba, numpy and Pinocchio do not use (functools.reduce: thousands of calls)

def _run(fn, n):
    for _ in range(n):
        fn()


def _measure_once(fn, n):
    next(itertools.dropwhile(lambda _: _run(fn, n), (0,)))


def child(robots, calls, listing, with_pieces=False):
    """Run under callgrind: every (robot, function, level) once, each in its own dump."""
    order = []
    work = []
    if with_pieces:
        for name, (fn, _per) in pieces().items():
            order.append(f"pieces {name.replace(' ', '_')} - {calls}")
            work.append((fn, calls))
        robots = []
    for robot in robots:
        table = cases(robot)
        for name, levels in table.items():
            for level in LEVELS:
                fn, per = levels[level]
                n = max(1, calls // per)
                order.append(f"{robot} {name} {level} {n * per}")
                work.append((fn, n))
    with open(listing, "w") as f:
        f.write("\n".join(order) + "\n")
    for fn, n in work:
        _measure_once(fn, n)


def callgrind(robots, calls, with_pieces=False):
    out = tempfile.mkdtemp(prefix="rbd_overhead_cg_")
    listing = os.path.join(out, "order.txt")
    me = [sys.executable, os.path.abspath(__file__), "--root", ROOT, "--robots", ",".join(robots),
          "--calls", str(calls)] + (["--pieces"] if with_pieces else [])
    # valgrind's CPU is not the host's: numba would miss its cache and compile every kernel
    # under valgrind (~50x slower); compiled for a generic x86-64 CPU both runs share it
    env = dict(os.environ, NUMBA_CPU_NAME="generic")
    subprocess.run(me + ["--child", listing], check=True, env=env)   # compiles what is not cached, outside valgrind
    subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes", "--collect-atstart=no",
                    "--toggle-collect=dropwhile_next", "--dump-after=dropwhile_next",
                    f"--callgrind-out-file={out}/cg.%p"] + me + ["--child", listing],
                   check=True, stderr=subprocess.DEVNULL, env=env)
    with open(listing) as f:
        order = f.read().split("\n")[:-1]
    dumps = sorted((p for p in glob.glob(os.path.join(out, "cg.*.*"))), key=lambda p: int(p.rsplit(".", 1)[1]))
    counts = []
    for path in dumps[-len(order):]:                            # the measurements are the last dumps
        with open(path) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    counts.append(int(line.split()[1]))
                    break
    if with_pieces:
        print(f"instructions per call (callgrind; {calls} calls each; each includes the loop and lambda call)")
        for what, c in zip(order, counts, strict=True):
            _, name, _, n = what.split()
            print(f"  {name.replace('_', ' '):36s} {c / int(n):8.0f}")
        return
    rows = {}
    for what, c in zip(order, counts, strict=True):
        robot, name, level, n = what.split()
        rows.setdefault((robot, name), {})[level] = c / int(n)
    print(f"instructions per call (callgrind; {calls} calls per level; Python levels include the loop "
          f"and lambda call)")
    print(f"{'robot':14s} {'function':17s} {'kernel':>8s} {'dispatch':>9s} {'public':>8s} {'pinocchio':>10s}"
          f" {'+disp':>7s} {'+public':>8s} {'pub/pin':>8s}")
    for (robot, name), c in rows.items():
        print(f"{robot:14s} {name:17s} {c['kernel']:8.0f} {c['dispatch']:9.0f} {c['public']:8.0f} "
              f"{c['pinocchio']:10.0f} {c['dispatch'] - c['kernel']:7.0f} {c['public'] - c['dispatch']:8.0f} "
              f"{c['public'] / c['pinocchio']:8.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", default="panda")
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--callgrind", action="store_true", help="instruction counts under valgrind instead of times")
    ap.add_argument("--root", default=ROOT, help="the checkout whose rbd_ros is measured (default: this one)")
    ap.add_argument("--pieces", action="store_true", help="the parts of the overhead instead (see above)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    robots = a.robots.split(",")
    print(f"rbd_ros from {ROOT}") if a.child is None else None
    if a.child:
        child(robots, a.calls, a.child, a.pieces)
    elif a.callgrind:
        callgrind(robots, a.calls, a.pieces)
    elif a.pieces:
        timed_pieces(a.rounds, a.calls)
    else:
        timed(robots, a.rounds, a.calls)


if __name__ == "__main__":
    main()
