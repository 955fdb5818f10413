"""First-start compile cost: the patterns that multiply numba specialisations stay out,
the precompile step works, the node's warm-up detects a cold cache.

(The cost itself is measured by bench/compile_time.py and bench/first_start.py.)"""
import ast
import glob
import os
import subprocess
import sys

from numba import njit

from rbd_ros.node import warmup

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALGORITHMS = os.path.join(ROOT, "rbd_ros", "core", "algorithms")


def bool_constant_arguments(source: str):
    """(line, call) of every call that passes a literal True/False positionally (the
    kernels call each other positionally; ``dict(JIT, parallel=True)`` is not a kernel)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            args = node.args
            if any(isinstance(a, ast.Constant) and isinstance(a.value, bool) for a in args):
                found.append((node.lineno, ast.unparse(node.func)))
    return found


def test_detector_finds_a_constant_flag():
    # the pattern that made numba compile RNEA five times (Literal[bool] per flag combination)
    assert bool_constant_arguments("rnea_into(md, ws, q, q, q, f, False, False, False, out)") == \
        [(1, "rnea_into")]
    assert bool_constant_arguments("rnea_into(md, ws, q, q, q, f, bool(0), bool(0), bool(0), out)") == []


def test_kernels_pass_no_constant_flags():
    """A constant True/False argument is typed Literal[bool] by numba: one more compiled
    copy of the callee per combination.  The kernels pass bool(0) / bool(1) instead."""
    # the kernels (spatial.py, joints.py and layout.py, their building blocks, moved here
    # from core/ with the regrouping, are not scanned: they were not before)
    files = sorted(p for p in glob.glob(os.path.join(ALGORITHMS, "*.py"))
                   if os.path.basename(p) not in ("spatial.py", "joints.py", "layout.py"))
    assert len(files) >= 8
    bad = {}
    for path in files:
        with open(path) as f:
            hits = bool_constant_arguments(f.read())
        if hits:
            bad[os.path.basename(path)] = hits
    assert bad == {}


def test_warmup_cold_detects_an_uncompiled_kernel():
    @njit(cache=False)
    def fresh(x):
        return x + 1.0

    assert warmup.cold((), [fresh])
    fresh(1.0)
    assert not warmup.cold((), [fresh])


def test_precompile_runs_every_step_in_two_processes():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-m", "rbd_ros.precompile", "--jobs", "2"],
                         capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stderr
    from rbd_ros.core.compile_steps import steps
    names = [n for n, _, _ in steps()]
    reported = [line[2:28].rstrip() for line in res.stdout.splitlines() if line.startswith("  ")]
    assert sorted(reported) == sorted(names), res.stdout  # each step once, by one of the two processes
    assert "kernels compiled into numba's cache" in res.stdout


_LAW_PROBE = r"""
import json, sys
import numpy as np
import rbd_ros.core as rbd
from rbd_ros.core.algorithms.rnea import rnea_k
from rbd_ros.node import effort_law
from rbd_ros.node.robot import Robot
from rbd_ros.robots import resolve_urdf_file
model = rbd.Model.from_urdf(resolve_urdf_file("rbd_arm7"))
rt = Robot(model, (), "probe")
law = effort_law.CommandLaw(rt, np.zeros(rt.nout), np.zeros(rt.nout))
kernels = {"_desired_k": effort_law._desired_k, "_ff_state_k": effort_law._ff_state_k,
           "_accel_k": effort_law._accel_k, "_finish_k": effort_law._finish_k}
law.warm_kernels()
after_kernels = {k: len(d.signatures) for k, d in kernels.items()}
rnea_after_kernels = len(rnea_k.signatures)
law.warm_up()
print(json.dumps({"kernels": after_kernels, "rnea": rnea_after_kernels,
                  "after_warm_up": {k: len(d.signatures) for k, d in kernels.items()},
                  "rnea_after_warm_up": len(rnea_k.signatures)}))
"""


def test_command_law_warm_kernels_compiles_what_warm_up_needs_without_rnea(tmp_path):
    """The first start's helper process compiles the command law's kernels while the node
    compiles RNEA: warm_kernels must compile every signature warm_up uses (so the node
    loads them from the disk cache) and not RNEA (the node's job)."""
    import json
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", _LAW_PROBE], capture_output=True, text=True, env=env,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert all(n >= 1 for n in out["kernels"].values()), out
    assert out["after_warm_up"] == out["kernels"], out     # warm_up compiled nothing new
    assert out["rnea"] == 0 and out["rnea_after_warm_up"] == 1, out
