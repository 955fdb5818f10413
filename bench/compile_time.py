"""First-start cost: numba compilation of each public function, from an empty cache.

    python bench/compile_time.py [--robot rbd_arm7] [--warm]
    python bench/compile_time.py --against 692cde9 --runs 2   # old, new, old, new

Runs in a child process with an empty NUMBA_CACHE_DIR (a fresh install) and times the
first call of each function in the order the node needs them (control path first),
then the same calls again (cached in memory: the per-call cost, for scale).  With
--warm the child reuses one cache directory for a second run, to show what a cached
start costs.  With --against REV the same child also runs in that git revision's tree
(exported to a temporary directory), alternating old and new --runs times, since the
machine's speed drifts between minutes.  Prints one line per function (wall and CPU
seconds of the first call) and the totals.  CPU time (``getrusage``: user + system, all threads of the child) is
the number to compare: on a shared machine the wall time mostly measures the load.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0 = time.perf_counter()
import numpy as np
import rbd_ros.core as rbd
from rbd_ros.robots import resolve_urdf_file
t_import = time.perf_counter() - t0
model = rbd.Model.from_urdf(resolve_urdf_file(sys.argv[1]))
q = model.neutral(); z = np.zeros(model.nv)
dofs = rbd.dof_indices(model)
g, b, H = np.empty(model.nv), np.empty(model.nv), np.empty(model.nv ** 2)
Q, Z = np.tile(q, (2, 1)), np.zeros((2, model.nv))
fe = np.zeros((len(model.link_names), 6))
steps = [
    ("compensation_into (control path)", lambda: rbd.compensation_into(model, q, z, dofs, g, b, H)),
    ("friction", lambda: rbd.friction(model, z) if hasattr(rbd, "friction") else None),
    ("gravity", lambda: rbd.gravity(model, q)),
    ("bias", lambda: rbd.bias(model, q, z)),
    ("crba", lambda: rbd.crba(model, q)),
    ("rnea", lambda: rbd.rnea(model, q, z, z)),
    ("rnea f_ext", lambda: rbd.rnea(model, q, z, z, f_ext=fe, f_ext_frame="world")),
    ("forward_dynamics", lambda: rbd.forward_dynamics(model, q, z, z)),
    ("forward_dynamics f_ext", lambda: rbd.forward_dynamics(model, q, z, z, f_ext=fe)),
    ("aba", lambda: rbd.aba(model, q, z, z)),
    ("coriolis_matrix", lambda: rbd.coriolis_matrix(model, q, z)),
    ("rnea batch", lambda: rbd.rnea(model, Q, Z, Z)),
    ("forward_dynamics batch", lambda: rbd.forward_dynamics(model, Q, Z, Z)),
    ("crba batch", lambda: rbd.crba(model, Q)),
    ("aba batch", lambda: rbd.aba(model, Q, Z, Z)),
]
out = {"import": t_import, "import_cpu": cpu(), "steps": []}
for name, fn in steps:
    c = cpu(); t = time.perf_counter(); fn(); first = time.perf_counter() - t; first_cpu = cpu() - c
    t = time.perf_counter(); fn(); again = time.perf_counter() - t
    out["steps"].append((name, first, first_cpu, again))
out["cpu"] = cpu()
print(json.dumps(out))
"""


def run(robot, cache_dir, tree=None):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    if tree is not None:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", CHILD, robot], env=env, capture_output=True,
                         text=True, check=True, cwd=tree)
    wall = time.perf_counter() - t
    return json.loads(res.stdout.strip().splitlines()[-1]), wall


def show(title, data, wall):
    print(f"\n{title}: process wall {wall:.1f} s, CPU {data['cpu']:.1f} s "
          f"(import {data['import']:.2f} s wall, {data['import_cpu']:.2f} s CPU)")
    total = total_cpu = 0.0
    for name, first, first_cpu, again in data["steps"]:
        total += first
        total_cpu += first_cpu
        print(f"  {name:34s} first call {first:7.2f} s wall {first_cpu:7.2f} s CPU   "
              f"again {again * 1e6:8.1f} us")
    print(f"  {'sum of first calls':34s} {total:7.2f} s wall {total_cpu:7.2f} s CPU")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robot", default="rbd_arm7")
    ap.add_argument("--warm", action="store_true", help="also time a second start on the same cache")
    ap.add_argument("--against", metavar="REV", help="also time this git revision, alternating")
    ap.add_argument("--runs", type=int, default=1, help="with --against: rounds of (old, new)")
    a = ap.parse_args()
    if a.against:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        with tempfile.TemporaryDirectory(prefix="rbd_old_tree_") as old:
            archive = subprocess.run(["git", "-C", root, "archive", a.against], capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
            totals = {"old": [], "new": []}
            for k in range(a.runs):
                for name, tree in (("old", old), ("new", root)):
                    with tempfile.TemporaryDirectory(prefix="rbd_numba_cache_") as cache:
                        data, wall = run(a.robot, cache, tree)
                    show(f"{name} ({a.against if name == 'old' else 'this tree'}), run {k + 1}", data, wall)
                    totals[name].append(data["cpu"])
            o, n = sum(totals["old"]) / a.runs, sum(totals["new"]) / a.runs
            print(f"\nprocess CPU, mean of {a.runs}: old {o:.1f} s, new {n:.1f} s ({100 * (n / o - 1):+.0f} %)")
        return
    with tempfile.TemporaryDirectory(prefix="rbd_numba_cache_") as cache:
        data, wall = run(a.robot, cache)
        show("empty numba cache (first start after an install)", data, wall)
        if a.warm:
            data, wall = run(a.robot, cache)
            show("warm numba cache (every later start)", data, wall)


if __name__ == "__main__":
    main()
