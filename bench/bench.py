#!/usr/bin/env python3
"""rbd_ros.core vs Pinocchio: speed, agreement, memory, cold start, model build.

    python bench/bench.py            # the full benchmark (a few minutes)
    python bench/bench.py --quick    # seconds: panda only, few repeats (CI)

Both libraries run in this process on the same states (example-robot-data
robots, mimic joints independent in both so the DOF counts match, states
mapped by joint name with test/oracle.py).  Every timed result is also checked
against Pinocchio (relative error <= 1e-9 of the largest reference entry);
the exit status is 1 when any check fails.  Times are medians over many
samples of many calls each, after warm-up, in microseconds per call through
Python.  Nothing here asserts on speed: the numbers are for people.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test"))  # oracle.py
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # rbd_ros from this checkout

import oracle as orc  # noqa: E402
import pinocchio as pin  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402

TOL = 1e-9
FULL_ROBOTS = ["panda", "ur5", "solo12", "talos_full_v2"]
QUICK_ROBOTS = ["panda"]


# --------------------------------------------------------------------- timing
def _sample(fn, inner):
    t0 = time.perf_counter_ns()
    for _ in range(inner):
        fn()
    return (time.perf_counter_ns() - t0) / inner


def _inner_for(fn, sample_s):
    t = _sample(fn, 1)
    n = 1
    while t * n < 0.2 * sample_s * 1e9 and n < 1 << 20:  # quick calibration
        n *= 4
        t = _sample(fn, n)
    return max(1, int(sample_s * 1e9 / max(t, 1.0)))


def time_group(fns, repeats, sample_s, warmup=20, raw=False):
    """Median ns per call of each function; samples interleaved (one of each in
    turn: A, B, A, B ...) so that drift and other processes' load hit all of them
    alike.  ``raw``: the per-round samples instead of their medians."""
    for _ in range(warmup):
        for f in fns:
            f()
    inner = [_inner_for(f, sample_s) for f in fns]
    samples = [[] for _ in fns]
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for f, n, acc in zip(fns, inner, samples):
                acc.append(_sample(f, n))
    finally:
        if gc_was:
            gc.enable()
    if raw:
        return samples
    return [statistics.median(acc) for acc in samples]


def time_pair(fa, fb, repeats, sample_s, warmup=20):
    """(median ns of A, median ns of B, median of the per-round ratios A/B): a ratio
    taken within each round, so that one noisy second moves one ratio, not the result."""
    sa, sb = time_group([fa, fb], repeats, sample_s, warmup, raw=True)
    return (statistics.median(sa), statistics.median(sb),
            statistics.median(x / y for x, y in zip(sa, sb)))


# ------------------------------------------------------------------ checking
class Checks:
    def __init__(self):
        self.n = 0
        self.failures = []
        self.worst = {}

    def close(self, what, got, ref):
        self.n += 1
        got = np.asarray(got, float)
        ref = np.asarray(ref, float)
        if got.shape != ref.shape or not np.all(np.isfinite(got)):
            self.failures.append(f"{what}: shape {got.shape} vs {ref.shape} or non-finite")
            return float("inf")
        err = orc.rel_err(got, ref)
        self.worst[what] = max(self.worst.get(what, 0.0), err)
        if not err <= TOL:
            self.failures.append(f"{what}: relative error {err:.3e} > {TOL:g}")
        return err


# --------------------------------------------------------------------- robot
class Robot:
    def __init__(self, name, n_states, seed=0):
        self.name = name
        path = orc.robot_urdf(name)
        floating = orc.ROBOTS[name][1]
        # mimic=False on both sides: the same DOFs, the same work
        self.model = rbd.Model.from_urdf(path, floating_base=floating, mimic=False)
        self.o = orc.Oracle(path, floating, False, layout=self.model)
        self.pm, self.pd = self.o.model, self.o.model.createData()
        rng = np.random.default_rng(seed)
        S = [self.o.random_state(rng) for _ in range(n_states)]
        self.Q, self.V, self.A, self.T = (np.ascontiguousarray(np.stack([s[k] for s in S]))
                                          for k in range(4))
        o = self.o
        # Pinocchio's arrays: one column per state (its parallel API), Fortran order
        self.Qp = np.asfortranarray(np.stack([o.q_to_pin(q) for q in self.Q]).T)
        self.Vp = np.asfortranarray((o.G @ self.V.T))
        self.Ap = np.asfortranarray((o.G @ self.A.T))
        self.Tp = np.asfortranarray((o.G @ self.T.T))

    def to_ours(self, x_full):
        """Pinocchio generalized vector(s) (nv,) or (nv, N) -> ours (nv,) or (N, nv)."""
        return (self.o.G.T @ x_full).T

    def pin_fd(self, q, v, tau):
        """Pinocchio's CRBA + sparse LTDL (its cholesky module), the analogue of
        rbd_ros.forward_dynamics."""
        m, d = self.pm, self.pd
        pin.crba(m, d, q)
        b = pin.nonLinearEffects(m, d, q, v)
        pin.cholesky.decompose(m, d)
        return pin.cholesky.solve(m, d, tau - b)


def bench_single(r: Robot, checks: Checks, repeats, sample_s):
    m, pm, pd = r.model, r.pm, r.pd
    q, v, a, tau = r.Q[0], r.V[0], r.A[0], r.T[0]
    qp, vp, ap, tp = (np.ascontiguousarray(x[:, 0]) for x in (r.Qp, r.Vp, r.Ap, r.Tp))
    G = r.o.G

    def red_mat(M):
        M = np.triu(M) + np.triu(M, 1).T
        return G.T @ M @ G

    cases = [
        ("rnea", lambda: rbd.rnea(m, q, v, a), lambda: pin.rnea(pm, pd, qp, vp, ap), r.to_ours),
        ("gravity", lambda: rbd.gravity(m, q), lambda: pin.computeGeneralizedGravity(pm, pd, qp),
         r.to_ours),
        ("bias", lambda: rbd.bias(m, q, v), lambda: pin.nonLinearEffects(pm, pd, qp, vp), r.to_ours),
        ("crba", lambda: rbd.crba(m, q), lambda: pin.crba(pm, pd, qp), red_mat),
        ("forward_dynamics", lambda: rbd.forward_dynamics(m, q, v, tau),
         lambda: r.pin_fd(qp, vp, tp), r.to_ours),
        ("aba", lambda: rbd.aba(m, q, v, tau), lambda: pin.aba(pm, pd, qp, vp, tp), r.to_ours),
    ]
    rows = []
    for name, fr, fp, conv in cases:
        checks.close(f"{r.name} {name}", fr(), conv(np.array(fp())))
        tr, tp_, ratio = time_pair(fr, fp, repeats, sample_s)
        rows.append((r.name, r.model.nv, name, tr / 1e3, tp_ / 1e3, ratio, ""))
    # agreement on more states than the timed one
    for i in range(1, min(len(r.Q), 8)):
        q, v, a, tau = r.Q[i], r.V[i], r.A[i], r.T[i]
        o = r.o
        checks.close(f"{r.name} rnea", rbd.rnea(m, q, v, a), o.rnea(q, v, a))
        checks.close(f"{r.name} crba", rbd.crba(m, q), o.crba(q))
        checks.close(f"{r.name} forward_dynamics", rbd.forward_dynamics(m, q, v, tau), o.aba(q, v, tau))
        checks.close(f"{r.name} aba", rbd.aba(m, q, v, tau), o.aba(q, v, tau))
    return rows


def bench_batch(r: Robot, checks: Checks, threads, repeats):
    m, pm, pd = r.model, r.pm, r.pd
    Q, V, A, T = r.Q, r.V, r.A, r.T
    Qp, Vp, Ap, Tp = r.Qp, r.Vp, r.Ap, r.Tp
    N = len(Q)
    pool = pin.ModelPool(pm, threads)
    cols = [np.ascontiguousarray(Qp[:, i]) for i in range(N)]
    vcols = [np.ascontiguousarray(Vp[:, i]) for i in range(N)]
    acols = [np.ascontiguousarray(Ap[:, i]) for i in range(N)]
    tcols = [np.ascontiguousarray(Tp[:, i]) for i in range(N)]

    def pin_loop(fn):
        def run():
            return [fn(i) for i in range(N)]
        return run

    loops = {
        "rnea": pin_loop(lambda i: pin.rnea(pm, pd, cols[i], vcols[i], acols[i])),
        "crba": pin_loop(lambda i: pin.crba(pm, pd, cols[i])),
        "forward_dynamics": pin_loop(lambda i: r.pin_fd(cols[i], vcols[i], tcols[i])),
        "aba": pin_loop(lambda i: pin.aba(pm, pd, cols[i], vcols[i], tcols[i])),
    }
    ours = {
        "rnea": lambda: rbd.rnea(m, Q, V, A),
        "crba": lambda: rbd.crba(m, Q),
        "forward_dynamics": lambda: rbd.forward_dynamics(m, Q, V, T),
        "aba": lambda: rbd.aba(m, Q, V, T),
    }
    parallel = {
        "rnea": ("rneaInParallel", lambda: pin.rneaInParallel(threads, pool, Qp, Vp, Ap)),
        "forward_dynamics": ("abaInParallel", lambda: pin.abaInParallel(threads, pool, Qp, Vp, Tp)),
        "aba": ("abaInParallel", lambda: pin.abaInParallel(threads, pool, Qp, Vp, Tp)),
    }
    rows = []
    G = r.o.G
    for name in ("rnea", "crba", "forward_dynamics", "aba"):
        got = np.asarray(ours[name]())
        if name == "crba":
            ref = np.stack([G.T @ (np.triu(H) + np.triu(H, 1).T) @ G for H in
                            (np.array(h) for h in loops[name]())])
        else:  # the serial results: pin's abaInParallel differs from its own aba
            # by up to ~4e-12 relative on some talos states (rbd_ros: 4e-16)
            ref = np.stack([r.to_ours(np.array(x)) for x in loops[name]()])
        for i in range(N):  # each state on its own scale
            checks.close(f"{r.name} batch {name}", got[i], ref[i])
        # Each side in its own block, back to back after its own warm-up: that is
        # batch throughput.  Interleaving would time the wake-up of OpenMP workers
        # that went to sleep during the other side's serial loop: ~8 ms per call
        # when another process keeps the second core busy.
        fns = [ours[name], loops[name]] + ([parallel[name][1]] if name in parallel else [])
        t_ours, t_loop, *t_par = [time_group([f], repeats, 0.0, warmup=3)[0] for f in fns]
        rows.append((r.name, m.nv, f"batch{N} {name}", t_ours / 1e3, t_loop / 1e3,
                     t_ours / t_loop, "pin loop"))
        if name in parallel:
            label = parallel[name][0]
            t_par = t_par[0]
            rows.append((r.name, m.nv, f"batch{N} {name}", t_ours / 1e3, t_par / 1e3,
                         t_ours / t_par, f"pin {label}({threads})"))
    return rows


# -------------------------------------------------------------------- memory
def rss_kib():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:  # not Linux: peak RSS is the best we have
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def bench_memory(r: Robot, checks: Checks, n_calls):
    m = r.model
    q, v, a, tau = r.Q[0], r.V[0], r.A[0], r.T[0]
    rows = []
    for name, fn in [("rnea", lambda: rbd.rnea(m, q, v, a)),
                     ("crba", lambda: rbd.crba(m, q)),
                     ("aba", lambda: rbd.aba(m, q, v, tau))]:
        for _ in range(10000):
            fn()
        gc.collect()
        before = rss_kib()
        t0 = time.perf_counter()
        for _ in range(n_calls):
            out = fn()
        dt = time.perf_counter() - t0
        gc.collect()
        after = rss_kib()
        ref = {"rnea": lambda: r.o.rnea(q, v, a), "crba": lambda: r.o.crba(q),
               "aba": lambda: r.o.aba(q, v, tau)}[name]()
        checks.close(f"{r.name} memory-loop {name}", out, ref)
        rows.append((name, n_calls, before, after, after - before, dt))
    return rows


# ---------------------------------------------------------------- cold start
COLD_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import rbd_ros.core as rbd
t2 = time.perf_counter()
m = rbd.Model.from_urdf(sys.argv[1])
t3 = time.perf_counter()
tau = rbd.rnea(m, m.neutral(), np.zeros(m.nv), np.zeros(m.nv))
t4 = time.perf_counter()
assert np.all(np.isfinite(tau))
print(json.dumps({"numpy": t1 - t0, "import": t2 - t1, "build": t3 - t2, "first_call": t4 - t3,
                  "total": t4 - t0}))
"""


def cold_start(cache_dir=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", COLD_SCRIPT, orc.robot_urdf("panda")],
                       env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"cold-start subprocess failed:\n{p.stderr[-2000:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["process_wall"] = wall
    return res


def bench_build(repeats):
    text = orc._urdf_text(orc.robot_urdf("talos_full_v2"))
    t0 = time.perf_counter()
    rbd.Model.from_urdf(text, floating_base=True)
    first = time.perf_counter() - t0
    ts, tp = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        rbd.Model.from_urdf(text, floating_base=True)
        ts.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
        tp.append(time.perf_counter() - t0)
    return first, statistics.median(ts), statistics.median(tp)


# ---------------------------------------------------------------------- main
def _worst(checks):
    if not checks.worst:
        return "-"
    k = max(checks.worst, key=checks.worst.get)
    return f"{checks.worst[k]:.1e}: {k}"


def _loadavg():
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _threading_layer():
    try:
        import numba
        return numba.threading_layer()
    except Exception:  # noqa: BLE001 - known only after a parallel kernel ran
        return "threading layer not chosen yet"

def fmt_table(rows):
    head = ("robot", "nv", "function", "rbd_ros µs", "pinocchio µs", "ratio", "pinocchio side")
    lines = [f"{head[0]:<14}{head[1]:>4}  {head[2]:<24}{head[3]:>12}{head[4]:>14}{head[5]:>8}  {head[6]}"]
    for rob, nv, fn, tr, tp, ratio, note in rows:
        lines.append(f"{rob:<14}{nv:>4}  {fn:<24}{tr:>12.2f}{tp:>14.2f}{ratio:>8.2f}  {note}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="seconds: panda only, few repeats, small batch and memory loop, no cold start")
    ap.add_argument("--robots", help="comma-separated, from: " + ", ".join(orc.ROBOTS))
    ap.add_argument("--threads", type=int, default=2, help="threads on both sides for batches")
    ap.add_argument("--batch", type=int, help="states per batch (1000; quick: 50)")
    ap.add_argument("--repeats", type=int, help="samples per median (31; quick: 3)")
    ap.add_argument("--memory-calls", type=int, help="calls per memory loop (1e6; quick: 1e4)")
    ap.add_argument("--no-cold-start", action="store_true", help="skip the subprocess cold starts")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)

    quick = args.quick
    robots = args.robots.split(",") if args.robots else (QUICK_ROBOTS if quick else FULL_ROBOTS)
    batch = args.batch or (50 if quick else 1000)
    repeats = args.repeats or (3 if quick else 31)
    sample_s = 0.0005 if quick else 0.003
    mem_calls = args.memory_calls or (10_000 if quick else 1_000_000)

    try:
        import numba
        numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
        nthreads = numba.get_num_threads()
    except Exception:  # noqa: BLE001 - informative only
        nthreads = "?"
    print(f"rbd_ros vs Pinocchio {pin.__version__}; Python {sys.version.split()[0]}, "
          f"numpy {np.__version__}, {os.cpu_count()} CPUs, batch threads: pin {args.threads}, "
          f"numba {nthreads}; {'quick' if quick else 'full'} mode, "
          f"median of {repeats} samples; load average before: {_loadavg()}")
    checks = Checks()
    results = {"single_and_batch": [], "memory": [], "cold_start": {}, "build": {}}
    rows = []
    for name in robots:
        r = Robot(name, batch)
        rows += bench_single(r, checks, repeats, sample_s)
        rows += bench_batch(r, checks, args.threads, max(3, repeats // 2))
    print()
    print(fmt_table(rows))
    results["single_and_batch"] = rows

    r = Robot(robots[0], 8)
    print(f"\nmemory: {mem_calls:,} calls each on {r.name} (RSS, KiB)")
    for fn, n, before, after, delta, dt in bench_memory(r, checks, mem_calls):
        print(f"  {fn:<6} RSS {before} -> {after} KiB: {delta:+d} KiB "
              f"({delta * 1024 / n:+.4f} B/call), {dt / n * 1e6:.2f} µs/call in the loop")
        results["memory"].append(dict(function=fn, calls=n, rss_before_kib=before,
                                      rss_after_kib=after, delta_kib=delta))

    first, med, pmed = bench_build(2 if quick else 7)
    print(f"\nmodel build from the talos_full_v2 URDF string: first {first * 1e3:.1f} ms, "
          f"median {med * 1e3:.1f} ms (Pinocchio buildModelFromXML {pmed * 1e3:.1f} ms)")
    results["build"] = dict(first_ms=first * 1e3, median_ms=med * 1e3, pinocchio_ms=pmed * 1e3)

    if not (quick or args.no_cold_start):
        print("\ncold start (fresh interpreter: import rbd_ros.core, build panda, first rnea), s")
        cold_start()  # make sure the cache is warm
        warm = cold_start()
        tmp = tempfile.mkdtemp(prefix="rbd_numba_cache_")
        try:
            cold = cold_start(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for label, res in (("warm cache", warm), ("empty NUMBA_CACHE_DIR", cold)):
            print(f"  {label:<22} import {res['import']:.3f}  build {res['build']:.3f}  first call "
                  f"{res['first_call']:.3f}  total {res['total']:.3f} (numpy {res['numpy']:.3f}; "
                  f"whole process {res['process_wall']:.3f})")
        results["cold_start"] = {"warm": warm, "cold": cold}

    print(f"\nnumba threading layer: {_threading_layer()}; load average after: {_loadavg()} "
          "(other processes on the machine make the times noisy)")
    print(f"agreement with Pinocchio: {checks.n - len(checks.failures)} of {checks.n} "
          f"checks within {TOL:g} (worst {_worst(checks)})")
    for f in checks.failures[:50]:
        print("  FAIL", f)
    if args.json:
        results["checks"] = dict(n=checks.n, failures=checks.failures)
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, default=str)
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
