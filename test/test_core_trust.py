"""No silent wrong number from any input (issue 8, "Core defects found" 1-9).

Each test reproduces one defect class found by URDF mutation and argument
fuzzing; the models are small URDFs built in code."""
import os
import sys

import numpy as np
import pytest

import rbd_ros.core as rbd
from rbd_ros.core.algorithms import aba as aba_mod
from rbd_ros.core.algorithms import crba as crba_mod
from rbd_ros.core.algorithms import forward_dynamics as fd_mod
from rbd_ros.core.algorithms import rnea as rnea_mod

sys.path.insert(0, os.path.dirname(__file__))
from core_util import random_state  # noqa: E402


def inertial(m=1.0, i=0.1, xyz="0 0 0", rpy="0 0 0"):
    return (f'<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{m}"/>'
            f'<inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>')


def link(name, body=None):
    return f'<link name="{name}">{inertial() if body is None else body}</link>'


def joint(name, parent, child, type_="revolute", axis="0 0 1", xyz="0 0 0", rpy="0 0 0", extra=""):
    lim = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' if type_ in ("revolute", "prismatic") else ""
    return (f'<joint name="{name}" type="{type_}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{lim}{extra}</joint>')


def robot(links, joints, name="r"):
    return f'<robot name="{name}">{"".join(links)}{"".join(joints)}</robot>'


def reference_qdd(m, q, v, tau):
    """solve(H, tau - b) with numpy, and cond(H)."""
    H = rbd.crba(m, q)
    return np.linalg.solve(H, tau - rbd.bias(m, q, v)), np.linalg.cond(H)


# ---------------------------------------------------------------- 1. aba with mimic joints
def free_mimic_urdf(mimic_mult="1.0"):
    """A prismatic joint 'slide', a massless link 'm' on a floating joint, and a
    hinge m -> c (axis -1.3 -0.4 -0.4) that mimics 'slide'."""
    mim = f'<mimic joint="slide" multiplier="{mimic_mult}"/>'
    return robot([link("base"), link("s"), '<link name="m"/>', link("c")],
                 [joint("slide", "base", "s", "prismatic", axis="1 0 0"),
                  joint("free", "base", "m", "floating"),
                  joint("hinge", "m", "c", "continuous", axis="-1.3 -0.4 -0.4", xyz="0.1 0.2 0.3", extra=mim)])


def test_aba_equals_forward_dynamics_with_mimic_on_a_massless_free_body():
    m = rbd.Model.from_urdf(free_mimic_urdf())
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, v, tau = random_state(m, rng)
        ref, cond = reference_qdd(m, q, v, tau)
        assert cond < 1e4                                   # H is well conditioned
        np.testing.assert_allclose(rbd.forward_dynamics(m, q, v, tau), ref, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(rbd.aba(m, q, v, tau), ref, rtol=1e-9, atol=1e-9)
        Q, V, T = (np.stack([x, x]) for x in (q, v, tau))
        np.testing.assert_allclose(rbd.aba(m, Q, V, T), np.stack([ref, ref]), rtol=1e-9, atol=1e-9)


def test_aba_falls_back_row_by_row_in_threaded_batches_with_external_forces():
    """aba's kernel reports a failed pivot; dynamics.aba computes those rows by CRBA +
    LᵀDL (single calls, and each such row of a batch split over threads)."""
    m = rbd.Model.from_urdf(free_mimic_urdf())
    rng = np.random.default_rng(3)
    Q, V, T = (np.stack(x) for x in zip(*(random_state(m, rng) for _ in range(40))))
    F = rng.normal(size=(40, len(m.link_names), 6))
    for frame in ("local", "world"):
        want = rbd.forward_dynamics(m, Q, V, T, f_ext=F, f_ext_frame=frame)
        np.testing.assert_allclose(rbd.aba(m, Q, V, T, f_ext=F, f_ext_frame=frame), want, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(rbd.aba(m, Q[7], V[7], T[7], f_ext=F[7], f_ext_frame=frame), want[7],
                                   rtol=1e-9, atol=1e-9)


def test_aba_works_when_a_mimic_joint_moves_a_massless_child():
    m = rbd.Model.from_urdf(robot([link("base"), link("s"), '<link name="c"/>'],
                                  [joint("slide", "base", "s", "prismatic", axis="1 0 0"),
                                   joint("hinge", "s", "c", extra='<mimic joint="slide"/>')]))
    assert m.nv == 1
    q, v, tau = np.array([0.2]), np.array([0.5]), np.array([0.7])
    ref, _ = reference_qdd(m, q, v, tau)
    np.testing.assert_allclose(rbd.forward_dynamics(m, q, v, tau), ref, rtol=1e-12)
    np.testing.assert_allclose(rbd.aba(m, q, v, tau), ref, rtol=1e-12)


# ---------------------------------------------------------------- 2. singular H is an error
def test_singular_inertia_is_reported_by_both_forward_dynamics_paths():
    m = rbd.Model.from_urdf(free_mimic_urdf(), mimic=False)
    rng = np.random.default_rng(2)
    q, v, tau = random_state(m, rng)
    assert np.linalg.eigvalsh(rbd.crba(m, q))[0] < 1e-12 * np.abs(rbd.crba(m, q)).max()
    for f in (rbd.forward_dynamics, rbd.aba):
        with pytest.raises(ValueError, match="singular"):
            f(m, q, v, tau)
        with pytest.raises(ValueError, match=r"singular.*batch row 0"):
            f(m, np.stack([q]), np.stack([v]), np.stack([tau]))
    with pytest.raises(ValueError, match="positive-definite"):
        rbd.ltdl(m, rbd.crba(m, q))


def test_nearly_singular_matrix_is_rejected_by_ltdl():
    m = rbd.Model.from_urdf(robot([link("base"), link("a"), link("b")],
                                  [joint("ja", "base", "a"), joint("jb", "a", "b")]))
    H = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-17]])
    with pytest.raises(ValueError, match="positive-definite"):
        rbd.ltdl(m, H)
    H = np.array([[1e-30, 0.0], [0.0, 1e-30]])          # tiny but well conditioned: fine
    np.testing.assert_allclose(rbd.ltdl_solve(m, rbd.ltdl(m, H), np.ones(2)), [1e30, 1e30])


# ---------------------------------------------------------------- 3. model numbers
SIMPLE = (link("base"), link("a"))


@pytest.mark.parametrize("text, words", [
    (robot(SIMPLE, [joint("ja", "base", "a", xyz="nan 0 0")]), ["'ja'", "origin"]),
    (robot(SIMPLE, [joint("ja", "base", "a", xyz="0 inf 0")]), ["'ja'", "origin"]),
    (robot(SIMPLE, [joint("ja", "base", "a", xyz="0 0 1e160")]), ["'ja'", "origin", "1e+06"]),
    (robot(SIMPLE, [joint("ja", "base", "a", rpy="0 nan 0")]), ["'ja'", "rpy"]),
    (robot(SIMPLE, [joint("ja", "base", "a", rpy="0 1e300 0")]), ["'ja'", "rpy"]),
    (robot((link("base"), link("a", inertial(xyz="1e160 0 0"))), [joint("ja", "base", "a")]),
     ["'a'", "inertial", "origin"]),
    (robot((link("base"), link("a", inertial(rpy="inf 0 0"))), [joint("ja", "base", "a")]),
     ["'a'", "inertial", "rpy"]),
    (robot((link("base"), link("a", inertial(m=1e308))), [joint("ja", "base", "a")]), ["'a'", "mass"]),
    (robot((link("base"), link("a", inertial(i=1e308))), [joint("ja", "base", "a")]), ["'a'", "inertia"]),
    (robot((link("base"), link("a"), link("b")),
           [joint("ja", "base", "a"), joint("jb", "a", "b", extra='<mimic joint="ja" multiplier="1e308"/>')]),
     ["'jb'", "multiplier"]),
    (robot((link("base"), link("a"), link("b")),
           [joint("ja", "base", "a"), joint("jb", "a", "b", extra='<mimic joint="ja" offset="nan"/>')]),
     ["'jb'", "offset"]),
])
def test_non_finite_or_huge_model_numbers_are_rejected(text, words):
    with pytest.raises(rbd.ModelError) as e:
        rbd.Model.from_urdf(text)
    for w in words:
        assert w in str(e.value), str(e.value)


@pytest.mark.parametrize("g", [(0, 0, 1e308), (0, 0, 1e5), (0, np.nan, 0)])
def test_huge_gravity_is_rejected(g):
    text = robot(SIMPLE, [joint("ja", "base", "a")])
    with pytest.raises(rbd.ModelError, match="gravity"):
        rbd.Model.from_urdf(text, gravity=g)
    with pytest.raises(ValueError, match="gravity"):
        rbd.Model.from_urdf(text).with_gravity(g)


def test_models_at_the_bounds_give_finite_results():
    """Every number at its documented bound at once: nothing overflows."""
    b = rbd.urdf.BOUNDS
    big = inertial(m=b["mass"], i=b["inertia"], xyz=f"{b['length']} 0 0", rpy=f"0 {b['angle']} 0")
    x = f"{b['length']} {-b['length']} {b['length']}"
    links = [link("base", big)] + [link(f"l{k}", big) for k in range(1, 6)]
    joints = [joint("j1", "base", "l1", xyz=x, rpy=f"{b['angle']} 0 0"),
              joint("j2", "l1", "l2", "prismatic", xyz=x),
              joint("j3", "l2", "l3", xyz=x, extra=f'<mimic joint="j1" multiplier="{b["multiplier"]}" '
                                                    f'offset="{b["offset"]}"/>'),
              joint("j4", "l3", "l4", "floating", xyz=x),
              joint("j5", "l4", "l5", "continuous", xyz=x)]
    m = rbd.Model.from_urdf(robot(links, joints), floating_base=True, gravity=(0, 0, -b["gravity"]))
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v, a = random_state(m, rng)
        for r in (rbd.rnea(m, q, v, a), rbd.crba(m, q), rbd.bias(m, q, v), rbd.gravity(m, q),
                  rbd.coriolis_matrix(m, q, v)):
            assert np.all(np.isfinite(r))


# ---------------------------------------------------------------- 4. extreme finite arguments
def arm(m, i):
    """A revolute joint (axis y) carrying a prismatic joint (axis x): gravity,
    H and the velocity terms grow with q_b, v and a."""
    return rbd.Model.from_urdf(robot([link("base"), link("a", inertial(m, i)), link("b", inertial(m, i))],
                                     [joint("ja", "base", "a", axis="0 1 0", xyz="0 0 0.1"),
                                      joint("jb", "a", "b", "prismatic", axis="1 0 0", xyz="0.3 0 0")]))


@pytest.fixture(scope="module")
def slider():
    return arm(1.0, 0.1)


HEAVY, LIGHT = (1e3, 10.0), (1e-3, 1e-6)
Z, Z2 = np.zeros(2), np.zeros((2, 2))


def _row2(x):
    return np.stack([np.zeros(2), x])


@pytest.mark.parametrize("inertia, big, call, arg", [
    (HEAVY, 1e200, lambda m, x: rbd.rnea(m, Z, x, Z), "v"),
    (HEAVY, 1e308, lambda m, x: rbd.rnea(m, Z, Z, x), "a"),
    (HEAVY, 1e308, lambda m, x: rbd.rnea(m, Z, Z, Z, f_ext=np.full((3, 6), x[0])), "f_ext"),
    (HEAVY, 1e200, lambda m, x: rbd.bias(m, Z, x), "v"),
    (HEAVY, 1e200, lambda m, x: rbd.crba(m, x), "q"),
    (HEAVY, 1e308, lambda m, x: rbd.gravity(m, x), "q"),
    (HEAVY, 1e308, lambda m, x: rbd.coriolis_matrix(m, Z, x), "v"),
    (HEAVY, 1e200, lambda m, x: rbd.forward_dynamics(m, x, Z, Z), "q"),
    (HEAVY, 1e200, lambda m, x: rbd.aba(m, Z, x, Z), "v"),
    (LIGHT, 1e308, lambda m, x: rbd.forward_dynamics(m, Z, Z, x), "tau"),
    (LIGHT, 1e308, lambda m, x: rbd.aba(m, Z, Z, x), "tau"),
    (LIGHT, 1e308, lambda m, x: rbd.ltdl_solve(m, rbd.ltdl(m, np.diag([1e-300, 1e-300])), x), "b"),
    (HEAVY, 1e200, lambda m, x: rbd.rnea(m, Z2, _row2(x), Z2), "v"),
    (HEAVY, 1e200, lambda m, x: rbd.crba(m, _row2(x)), "q"),
    (HEAVY, 1e308, lambda m, x: rbd.gravity(m, _row2(x)), "q"),
    (LIGHT, 1e308, lambda m, x: rbd.aba(m, Z2, Z2, _row2(x)), "tau"),
    (HEAVY, 1e200, lambda m, x: rbd.forward_dynamics(m, Z2, _row2(x), Z2), "v"),
])
def test_overflowing_results_name_the_argument(inertia, big, call, arg):
    m = arm(*inertia)
    with pytest.raises(ValueError) as e:
        call(m, np.array([big, big]))
    msg = str(e.value)
    assert msg.startswith(arg) and "not finite" in msg, msg
    assert np.all(np.isfinite(call(m, np.array([0.5, -0.5]))))   # the same call with small numbers works


def test_overflowing_batch_row_is_named(slider):
    Q = np.zeros((3, 2))
    Q[2, 1] = 1e200
    with pytest.raises(ValueError, match=r"^q \(batch row 2\).*not finite"):
        rbd.crba(slider, Q)


# ---------------------------------------------------------------- 5. compensation dofs
@pytest.mark.parametrize("dofs", [[10 ** 6], [-1], [0, 2], [-(10 ** 9)]])
def test_compensation_into_checks_dofs(slider, dofs):
    z = np.zeros(2)
    d = np.array(dofs, dtype=np.int64)
    g = np.zeros(len(dofs))
    with pytest.raises(ValueError, match=r"^dofs"):
        rbd.compensation_into(slider, z, z, d, g)
    rbd.compensation_into(slider, z, z, np.array([1, 0], dtype=np.int64), np.zeros(2))   # valid dofs work


# ---------------------------------------------------------------- 6. ltdl_solve inputs
def test_ltdl_solve_rejects_non_finite_inputs(slider):
    LD = rbd.ltdl(slider, np.eye(2) * 2.0)
    assert np.allclose(rbd.ltdl_solve(slider, LD, np.ones(2)), 0.5)
    for b in ([np.nan, 1.0], [1.0, np.inf]):
        with pytest.raises(ValueError, match=r"^b.*NaN or inf"):
            rbd.ltdl_solve(slider, LD, np.array(b))
    bad = LD.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"^LD.*NaN or inf"):
        rbd.ltdl_solve(slider, bad, np.ones(2))
    with pytest.raises(ValueError, match=r"^LD"):
        rbd.ltdl_solve(slider, np.zeros((2, 2)), np.ones(2))        # zero pivot: not a factor
    with pytest.raises(ValueError, match=r"^b \(batch row 1\)"):
        rbd.ltdl_solve(slider, np.stack([LD, LD]), np.array([[1.0, 1.0], [np.nan, 1.0]]))


# ---------------------------------------------------------------- 7. root_joint name clash
def test_floating_base_refuses_a_urdf_joint_named_root_joint():
    text = robot([link("base"), link("a"), link("b")],
                 [joint("ja", "base", "a"), joint("root_joint", "a", "b", extra='<mimic joint="ja"/>')])
    assert rbd.Model.from_urdf(text).nv == 1                       # fine without a free-flyer
    with pytest.raises(rbd.ModelError, match="'root_joint'"):
        rbd.Model.from_urdf(text, floating_base=True)


# ---------------------------------------------------------------- 8. error messages
def test_f_ext_dict_with_a_wrong_shape_names_the_entry(slider):
    z = np.zeros(2)
    with pytest.raises(ValueError, match=r"^f_ext\['a'\]: expected shape \(6,\)"):
        rbd.rnea(slider, z, z, z, f_ext={"a": np.zeros((2, 6))})


def test_binary_file_is_a_model_error(tmp_path):
    p = tmp_path / "robot.urdf"
    p.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(rbd.ModelError, match="robot.urdf"):
        rbd.Model.from_urdf(str(p))
    with pytest.raises(rbd.ModelError):
        rbd.Model.from_urdf(p)


@pytest.mark.parametrize("call", [
    lambda m: rbd.rnea(m, np.zeros(2), np.zeros(2), np.zeros(2)),
    lambda m: rbd.gravity(m, np.zeros(2)),
    lambda m: rbd.bias(m, np.zeros(2), np.zeros(2)),
    lambda m: rbd.crba(m, np.zeros(2)),
    lambda m: rbd.coriolis_matrix(m, np.zeros(2), np.zeros(2)),
    lambda m: rbd.forward_dynamics(m, np.zeros(2), np.zeros(2), np.zeros(2)),
    lambda m: rbd.aba(m, np.zeros(2), np.zeros(2), np.zeros(2)),
    lambda m: rbd.ltdl(m, np.eye(2)),
    lambda m: rbd.ltdl_solve(m, np.eye(2), np.ones(2)),
    lambda m: rbd.compensation_into(m, np.zeros(2), np.zeros(2), np.zeros(2, dtype=np.int64), np.zeros(2)),
    lambda m: rbd.dof_indices(m, [0]),
])
@pytest.mark.parametrize("bad", [None, "panda.urdf", np.zeros(3)])
def test_a_non_model_is_a_type_error(call, bad):
    with pytest.raises(TypeError, match=r"^model: expected an rbd_ros.core.Model"):
        call(bad)


@pytest.mark.parametrize("call", [
    lambda m, fr: rbd.rnea(m, np.zeros(2), np.zeros(2), np.zeros(2), f_ext_frame=fr),
    lambda m, fr: rbd.forward_dynamics(m, np.zeros(2), np.zeros(2), np.zeros(2), f_ext_frame=fr),
    lambda m, fr: rbd.aba(m, np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 2)), f_ext_frame=fr),
])
def test_bad_f_ext_frame_is_refused_without_f_ext(slider, call):
    assert call(slider, "world") is not None
    with pytest.raises(ValueError, match="f_ext_frame"):
        call(slider, "body")


# ---------------------------------------------------------------- 9. no compile after warm-up
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
    from rbd_ros.core.algorithms.compensation import compensation_k
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
    import json
    import subprocess
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
    from core_util import random_tree_urdf
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
    from rbd_ros.core.algorithms.common import BAD_SHAPE
    from rbd_ros.core.algorithms.compensation import compensation_k
    from rbd_ros.core.algorithms.coriolis import coriolis_k
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
