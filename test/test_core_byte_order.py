"""Non-native byte order is never read unswapped (issue 17, defect 1).

numba types every odd float64 array of one ndim (strided, read-only, unaligned,
byte-swapped) by the first such array the *process* passes to any kernel
(``_numba_compat``).  So the order of calls matters, and each order runs in a
fresh process: every public function, every argument, each odd kind first, then
every kind -- and, last, a process in which foreign numba code passes an
unaligned array before rbd_ros.core is imported (the case the import-time claim
cannot prevent; the fast paths then test dtypes themselves)."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

SCRIPT = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
first, foreign = sys.argv[2], sys.argv[3] == "1"
if foreign:     # foreign numba code sees an unaligned float64 array of every ndim first
    from numba import njit
    @njit
    def f(x):
        return x.size
    for shape in ((9,), (2, 9), (2, 3, 6)):
        raw = bytearray(b"\0" + np.zeros(shape).tobytes())
        f(np.frombuffer(raw, np.float64, offset=1).reshape(shape))
import rbd_ros.core as rbd
from rbd_ros.core.calls import checked
from rbd_ros.core.calls.registry import ALGORITHMS
from core_util import random_state, random_tree_urdf
from test_core_registry import odd_forms

m = rbd.Model.from_urdf(random_tree_urdf(29, 9, mimic=2))
rng = np.random.default_rng(0)
q, v, a = random_state(m, rng)
Q, V, A = (np.array([random_state(m, rng)[k] for _ in range(3)]) for k in range(3))
bad = []
kinds = [first] + [k for k in ("list", "readonly", "strided", "unaligned", "swapped") if k != first]
for e in ALGORITHMS:
    for batch in (False, True):
        args = [(Q if batch else q) if n == "q" else (V if batch else v) if n == "v" else (A if batch else a)
                for n in e.inputs]
        opts = {o.name: o.example(m) for o in e.options}
        ref = getattr(rbd, e.name)(m, *args, **opts)
        for kind in kinds:
            for k in range(len(args)):
                wrong = list(args)
                wrong[k] = odd_forms(args[k])[kind]
                try:
                    got = getattr(rbd, e.name)(m, *wrong, **opts)
                except ValueError as ex:        # garbage bytes can overflow
                    bad.append(f"{e.name} {e.inputs[k]} {kind} batch={batch}: {ex}")
                    continue
                if not np.array_equal(got, ref):
                    bad.append(f"{e.name} {e.inputs[k]} {kind} batch={batch}: {np.max(np.abs(got - ref)):.3g}")
                if not batch:
                    out = np.empty(e.out_shape(m))
                    try:
                        getattr(rbd, e.name + "_into")(m, *wrong, *opts.values(), out)
                    except ValueError:
                        out[:] = np.nan
                    if not np.array_equal(out, ref):
                        bad.append(f"{e.name}_into {e.inputs[k]} {kind}")
dofs = rbd.dof_indices(m)
g0, g1 = np.empty(m.nv), np.empty(m.nv)
rbd.compensation_into(m, q, v, dofs, g0)
for kind in kinds:
    rbd.compensation_into(m, odd_forms(q)[kind], odd_forms(v)[kind], dofs, g1)
    if not np.array_equal(g0, g1):
        bad.append(f"compensation_into {kind}")
print(json.dumps({"bad": bad, "safe": checked.BYTE_ORDER_SAFE}))
"""


def run(first, foreign=False):
    p = subprocess.run([sys.executable, "-c", SCRIPT, HERE, first, "1" if foreign else "0"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("first", ["unaligned", "swapped", "readonly", "strided", "list"])
def test_every_public_function_reads_swapped_bytes_right_whatever_came_first(first):
    r = run(first)
    assert r["safe"] is True
    assert r["bad"] == []


def test_foreign_unaligned_array_before_import_switches_the_fast_paths_to_dtype_checks():
    r = run("swapped", foreign=True)
    assert r["safe"] is False      # the sentinel: the claim really was pre-empted
    assert r["bad"] == []
