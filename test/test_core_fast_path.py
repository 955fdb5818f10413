"""The public functions' fast path: it takes plain float64 arrays only and sends
everything else (lists, other dtypes, read-only, strided, unaligned arrays, batches) to
the checked path with the same results; no call compiles a second numba
specialisation; every kernel checks lengths before reading and none writes the model
vector (issue 8)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from core_util import random_state, random_tree_urdf
from core_util import urdf_joint as joint
from core_util import urdf_link as link
from core_util import urdf_robot as robot

import rbd_ros.core as rbd
from rbd_ros.core.algorithms import aba as aba_mod
from rbd_ros.core.algorithms import crba as crba_mod
from rbd_ros.core.algorithms import forward_dynamics as fd_mod
from rbd_ros.core.algorithms import rnea as rnea_mod
from rbd_ros.core.algorithms.common import BAD_SHAPE
from rbd_ros.core.algorithms.compensation import compensation_k
from rbd_ros.core.algorithms.coriolis import coriolis_k


@pytest.fixture(scope="module")
def slider():
    """A revolute joint (axis y) carrying a prismatic joint (axis x): nq = nv = 2."""
    return rbd.Model.from_urdf(robot([link("base"), link("a"), link("b")],
                                     [joint("ja", "base", "a", axis="0 1 0", xyz="0 0 0.1"),
                                      joint("jb", "a", "b", "prismatic", axis="1 0 0", xyz="0.3 0 0")]))


def _kernels():
    return [rnea_mod.rnea_k, rnea_mod.gravity_k, rnea_mod.bias_k, rnea_mod.rnea_batch_k, crba_mod.crba_k,
            crba_mod.crba_batch_k, fd_mod.forward_dynamics_k, fd_mod.forward_dynamics_batch_k,
            aba_mod.aba_k, aba_mod.aba_batch_k]


def _odd_arrays(x):
    """x as read-only, non-contiguous and unaligned float64 arrays (same values)."""
    ro = x.copy()
    ro.setflags(write=False)
    nc = np.empty(x.shape[:-1] + (2 * x.shape[-1],))[..., ::2]
    nc[...] = x
    raw = np.zeros(x.nbytes + 1, dtype=np.uint8)
    un = np.frombuffer(raw.data[1:], dtype=np.float64).reshape(x.shape)
    un[...] = x
    assert not un.flags.aligned and not nc.flags.c_contiguous and not ro.flags.writeable
    return ro, nc, un


def _single_calls(m):
    """The public functions with a fast path, as f(q, v, a)."""
    return [lambda q, v, a: rbd.rnea(m, q, v, a), lambda q, v, a: rbd.gravity(m, q),
            lambda q, v, a: rbd.bias(m, q, v), lambda q, v, a: rbd.crba(m, q),
            lambda q, v, a: rbd.forward_dynamics(m, q, v, a), lambda q, v, a: rbd.aba(m, q, v, a)]


def test_odd_arrays_do_not_compile_new_specialisations(slider):
    rng = np.random.default_rng(9)
    q, v, a = rng.normal(size=(3, 2))
    Q, V, A = rng.normal(size=(3, 4, 2))
    calls = _single_calls(slider)
    ref = [[c(q, v, a), c(Q, V, A)] for c in calls]                     # warm-up
    before = {k: len(k.signatures) for k in _kernels()}
    for x, y, z in zip(_odd_arrays(q), _odd_arrays(v), _odd_arrays(a)):
        for c, r in zip(calls, ref):
            np.testing.assert_array_equal(c(x, y, z), r[0])
    for x, y, z in zip(_odd_arrays(Q), _odd_arrays(V), _odd_arrays(A)):
        for c, r in zip(calls, ref):
            np.testing.assert_array_equal(c(x, y, z), r[1])
    dofs = np.array([1, 0, 1, 0], dtype=np.int64)[::2]
    g = np.zeros(2)
    rbd.compensation_into(slider, q, v, np.ascontiguousarray(dofs), g)
    nsig = len(compensation_k.signatures)
    g2 = np.zeros(2)
    rbd.compensation_into(slider, _odd_arrays(q)[0], _odd_arrays(v)[2], dofs, g2)
    assert np.array_equal(g, g2) and len(compensation_k.signatures) == nsig
    after = {k: len(k.signatures) for k in _kernels()}
    assert after == before


def test_fast_paths_take_only_plain_arrays(slider):
    """The fast paths check only lengths; numba's dispatcher and the guard
    (dynamics._plain_arguments_only) send everything else to the checked path:
    same results, no new specialisation.  slider has nq = nv = 2, so a (2, 2)
    batch passes the length test and must still be run as a batch."""
    rng = np.random.default_rng(10)
    q, v, a = rng.normal(size=(3, 2))
    Q, V, A = rng.normal(size=(3, 2, 2))
    calls = _single_calls(slider)
    ref = [c(q, v, a) for c in calls]
    batches = [c(Q, V, A) for c in calls]                                # warm-up
    before = {k: len(k.signatures) for k in _kernels()}
    for conv in (list, tuple, lambda x: np.asarray(x, dtype=np.longdouble)):
        for c, r in zip(calls, ref):
            np.testing.assert_array_equal(c(conv(q), conv(v), conv(a)), r)
    for x in [np.array([1, -2], dtype=np.int64), np.array([1, -2], dtype=np.int32), q.astype(np.float32)]:
        y = x.astype(np.float64)
        for c in calls:
            np.testing.assert_array_equal(c(x, x, x), c(y, y, y))
    for c, batch in zip(calls, batches):
        assert batch.shape[0] == 2
        for n in range(2):
            np.testing.assert_array_equal(batch[n], c(Q[n], V[n], A[n]))
    for bad, what in ((np.ones(3), "q"), (np.float64(1.0), "q"), ("ab", "q"), (None, "q")):
        with pytest.raises(ValueError, match=what):
            rbd.gravity(slider, bad)
    with pytest.raises(ValueError, match="v"):
        rbd.bias(slider, q, ["x", 1])
    assert {k: len(k.signatures) for k in _kernels()} == before


def test_first_call_with_a_list_compiles_only_the_plain_signature():
    """In a fresh process (kernels loaded from numba's cache on first use), a
    first call with lists must not compile (or load) a signature for them."""
    code = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import rbd_ros.core as rbd
from rbd_ros.core.algorithms.rnea import gravity_k, rnea_k
from core_util import random_tree_urdf
m = rbd.Model.from_urdf(random_tree_urdf(3, 3))
g = rbd.gravity(m, [0.1] * m.nq)
t = rbd.rnea(m, [0.1] * m.nq, (0.2,) * m.nv, [1] * m.nv)
print(json.dumps([str(s) for k in (gravity_k, rnea_k) for s in k.signatures]))
"""
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, "-c", code, here], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    sigs = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(sigs) == 2 and all("reflected" not in s and "int64" not in s for s in sigs), sigs
    assert all(s.count("Array(float64, 1, 'C', False") >= 3 for s in sigs), sigs


def test_no_kernel_writes_the_model_vector():
    """The kernels take Model.md_k, typed writable for the dispatcher's sake
    (see Model): every public function, single and batch, with and without
    f_ext, on a tree with every joint type and mimic joints, leaves it bit for
    bit as it was; and md is a read-only view of the same memory."""
    m = rbd.Model.from_urdf(random_tree_urdf(41, 10, types=("revolute", "prismatic", "continuous", "planar",
                                                           "floating"), mimic=2, massless_root=False),
                            floating_base=True)
    assert np.shares_memory(m.md, m.md_k) and not m.md.flags.writeable and m.md_k.flags.writeable
    before = m.md_k.copy()
    rng = np.random.default_rng(11)
    q, v, a = random_state(m, rng)
    Q, V, A = (np.stack([x] * 3) for x in (q, v, a))
    fe = rng.normal(size=(len(m.link_names), 6))
    for x, y, z, f in ((q, v, a, fe), (Q, V, A, np.stack([fe] * 3))):
        rbd.rnea(m, x, y, z)
        rbd.rnea(m, x, y, z, f_ext=f, f_ext_frame="world")
        rbd.gravity(m, x)
        rbd.bias(m, x, y)
        H = rbd.crba(m, x)
        rbd.coriolis_matrix(m, x, y)
        rbd.forward_dynamics(m, x, y, z, f_ext=f)
        rbd.aba(m, x, y, z)
        LD = rbd.ltdl(m, H)
        rbd.ltdl_solve(m, LD, z)
    g = np.empty(m.nv)
    rbd.compensation_into(m, q, v, rbd.dof_indices(m), g, np.empty(m.nv), np.empty(m.nv * m.nv))
    assert np.array_equal(m.md_k.view(np.int64), before.view(np.int64))


def test_kernels_check_lengths_before_reading(slider):
    """Every kernel a fast path or the node calls returns BAD_SHAPE, leaving its output
    untouched, for a q, v, a, output, f_ext or workspace that does not fit the model
    (numba does not bounds-check: without this a short array is read past its end)."""
    m = slider
    md, ws, nv = m.md_k, m.workspace(), m.nv
    small_ws = np.zeros(8)
    ok = np.zeros(nv)
    F = np.zeros((0, 6))
    for bad in (np.zeros(nv + 1), np.zeros(nv - 1)):
        cases = [
            lambda o, b=bad: rnea_mod.rnea_k(md, ws, b, ok, ok, o),
            lambda o, b=bad: rnea_mod.rnea_k(md, ws, ok, b, ok, o),
            lambda o, b=bad: rnea_mod.rnea_k(md, ws, ok, ok, b, o),
            lambda o, b=bad: rnea_mod.gravity_k(md, ws, b, o),
            lambda o, b=bad: rnea_mod.bias_k(md, ws, ok, b, o),
            lambda o, b=bad: fd_mod.forward_dynamics_k(md, ws, ok, ok, b, F, False, o),
            lambda o, b=bad: fd_mod.forward_dynamics_k(md, ws, b, ok, ok, F, False, o),
            lambda o, b=bad: aba_mod.aba_k(md, ws, ok, b, ok, F, False, o),
            lambda o, b=bad: aba_mod.aba_k(md, ws, ok, ok, b, F, False, o),
        ]
        for k, call in enumerate(cases):
            out = np.full(nv, 7.0)
            assert call(out) == BAD_SHAPE, k
            assert np.all(out == 7.0), k
        H = np.full((nv, nv), 7.0)
        assert crba_mod.crba_k(md, ws, bad, H) == BAD_SHAPE and np.all(H == 7.0)
        assert coriolis_k(md, ws, ok, bad, H) == BAD_SHAPE and np.all(H == 7.0)
        g = np.full(nv, 7.0)
        assert compensation_k(md, ws, ok, bad, np.arange(nv), False, False, g, g, g) == BAD_SHAPE
        assert np.all(g == 7.0)
    out = np.full(nv, 7.0)
    assert rnea_mod.rnea_k(md, small_ws, ok, ok, ok, out) == BAD_SHAPE and np.all(out == 7.0)
    assert rnea_mod.rnea_k(md, ws, ok, ok, ok, np.zeros(nv + 1)) == BAD_SHAPE
    assert crba_mod.crba_k(md, ws, ok, np.zeros((nv, nv + 1))) == BAD_SHAPE
    assert fd_mod.forward_dynamics_k(md, ws, ok, ok, ok, np.zeros((3, 6)), False, out) == BAD_SHAPE
    assert aba_mod.aba_k(md, ws, ok, ok, ok, np.zeros((m.nbodies, 5)), False, out) == BAD_SHAPE
    assert np.all(out == 7.0)
    # and the public functions name the argument
    for name, call in (("q", lambda: rbd.crba(m, np.zeros(nv + 1))),
                       ("v", lambda: rbd.bias(m, ok, np.zeros(nv - 1))),
                       ("tau", lambda: rbd.aba(m, ok, ok, np.zeros(nv + 1)))):
        with pytest.raises(ValueError, match=f"^{name}: "):
            call()
