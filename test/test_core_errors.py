"""Bad robot descriptions and bad arguments: clear errors naming what is wrong, never a
wrong number -- malformed URDFs, unknown names, wrong shapes, NaN, arguments so large the
result overflows, bad DOF lists and factors, complex numbers, strings and booleans where
numbers belong, a non-Model ``model`` (issues 8 and 17 reproduced each first)."""
import numpy as np
import pytest
from core_util import urdf_inertial as inertial
from core_util import urdf_joint as joint
from core_util import urdf_link as link
from core_util import urdf_robot as robot

import rbd_ros.core as rbd
from rbd_ros.core.calls.registry import BY_NAME

INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'


@pytest.fixture(scope="module")
def orc():
    """The Pinocchio oracle's helpers (panda from example-robot-data): the tests that use
    it are skipped where the oracles are not installed (the numba lower-bound venv,
    scripts/test_numba_bounds.sh, which runs this file's other tests)."""
    return pytest.importorskip("oracle")


GOOD = robot([link("base"), link("a"), link("b")], [joint("ja", "base", "a"), joint("jb", "a", "b")])


@pytest.mark.parametrize("text, words", [
    ("this is not xml", ["not XML"]),
    ("<robot name='r'><link name='a'></robot>", ["not a valid URDF"]),
    (robot([link("base"), link("a"), link("c")], [joint("ja", "base", "a")]), ["several root links"]),
    (robot([link("a"), link("b")], [joint("j1", "a", "b"), joint("j2", "b", "a")]), ["cycle"]),
    (robot([link("base"), link("a"), link("b"), link("c")],
           [joint("ja", "base", "a"), joint("j1", "b", "c"), joint("j2", "c", "b")]), ["cycle"]),
    (robot([link("base"), link("a"), link("b")], [joint("ja", "base", "a"), joint("jb", "base", "b"),
                                                  joint("jc", "a", "b")]), ["'b'", "loop"]),
    (robot([link("base"), link("a")], [joint("ja", "base", "a", "ball")]), ["'ja'", "joint type", "ball"]),
    (robot([link("base"), link("a", INERTIAL.replace('value="1"', 'value="-2"'))], [joint("ja", "base", "a")]),
     ["'a'", "negative mass"]),
    (robot([link("base"), link("a", INERTIAL.replace('ixx="0.1"', 'ixx="-0.1"'))], [joint("ja", "base", "a")]),
     ["'a'", "positive"]),
    (robot([link("base"), link("a", INERTIAL.replace('ixy="0"', 'ixy="5"'))], [joint("ja", "base", "a")]),
     ["'a'", "positive"]),
    (robot([link("base"), link("a")], [joint("ja", "base", "a", extra='<mimic joint="nope"/>')]),
     ["'ja'", "mimics unknown joint", "'nope'"]),
    (robot([link("base"), link("a")], [joint("ja", "base", "ghost")]), ["'ja'", "'ghost'", "does not exist"]),
    (robot([link("base"), link("base")], []), ["'base'", "twice"]),
    (robot([link("base"), link("a")], [joint("ja", "base", "a").replace('0 0 1', '0 0 0')]), ["'ja'", "axis"]),
])
def test_bad_descriptions_raise_model_error_naming_the_problem(text, words):
    with pytest.raises(rbd.ModelError) as e:
        rbd.Model.from_urdf(text)
    assert isinstance(e.value, ValueError)
    for w in words:
        assert w in str(e.value)


def test_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(rbd.ModelError, match="not XML and not a readable file"):
        rbd.Model.from_urdf(str(tmp_path / "missing.urdf"))


def test_file_path_and_text_give_the_same_model(tmp_path):
    p = tmp_path / "r.urdf"
    p.write_text(GOOD)
    a, b = rbd.Model.from_urdf(str(p)), rbd.Model.from_urdf(GOOD)
    assert np.array_equal(a.mi, b.mi) and a.joint_names == b.joint_names == ("ja", "jb")


def test_parser_chatter_stays_off_stderr(capfd):
    rbd.Model.from_urdf(GOOD.replace('<link name="base">', '<link name="base"><bogus_tag/>'))
    assert capfd.readouterr().err == ""


@pytest.fixture(scope="module")
def model():
    return rbd.Model.from_urdf(GOOD)


@pytest.fixture(scope="module")
def floating():
    return rbd.Model.from_urdf(GOOD, floating_base=True)


@pytest.mark.parametrize("call, arg", [
    (lambda m, x: rbd.rnea(m, x, np.zeros(2), np.zeros(2)), "q"),
    (lambda m, x: rbd.rnea(m, np.zeros(2), x, np.zeros(2)), "v"),
    (lambda m, x: rbd.rnea(m, np.zeros(2), np.zeros(2), x), "a"),
    (lambda m, x: rbd.gravity(m, x), "q"),
    (lambda m, x: rbd.bias(m, np.zeros(2), x), "v"),
    (lambda m, x: rbd.crba(m, x), "q"),
    (lambda m, x: rbd.coriolis_matrix(m, np.zeros(2), x), "v"),
    (lambda m, x: rbd.forward_dynamics(m, np.zeros(2), np.zeros(2), x), "tau"),
    (lambda m, x: rbd.aba(m, np.zeros(2), np.zeros(2), x), "tau"),
    (lambda m, x: rbd.aba(m, x, np.zeros(2), np.zeros(2)), "q"),
])
@pytest.mark.parametrize("bad, what", [
    (np.zeros(3), "shape"),
    (np.zeros((2, 2, 2)), "shape"),
    ([0.0, np.nan], "NaN"),
    (np.array([np.inf, 0.0]), "NaN or inf"),
    (["a", "b"], "real numbers"),
    (np.array([1 + 1j, 0]), "real numbers"),
    (None, "real numbers"),
    (np.array([True, False]), "real numbers"),
])
def test_bad_arguments_name_the_argument(model, call, arg, bad, what):
    with pytest.raises(ValueError) as e:
        call(model, bad)
    msg = str(e.value)
    assert msg.startswith(arg) and what in msg


def test_integer_and_list_arguments_are_accepted(model):
    assert np.array_equal(rbd.rnea(model, [0, 1], [0, 0], [1, 0]), rbd.rnea(model, np.array([0.0, 1.0]),
                                                                         np.zeros(2), np.array([1.0, 0.0])))


def test_batch_shape_mismatch(model):
    with pytest.raises(ValueError, match="same N"):
        rbd.rnea(model, np.zeros((3, 2)), np.zeros((4, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="same N"):
        rbd.bias(model, np.zeros((3, 2)), np.zeros(2))


def test_nan_in_one_batch_row_is_named(model):
    Q = np.zeros((5, 2))
    Q[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"q \(batch row 3\)"):
        rbd.gravity(model, Q)


def test_zero_quaternion(floating):
    q = floating.neutral()
    q[3:7] = 0
    with pytest.raises(ValueError, match="quaternion"):
        rbd.rnea(floating, q, np.zeros(8), np.zeros(8))


def test_bad_external_forces(model):
    z = np.zeros(2)
    with pytest.raises(ValueError, match=r"f_ext: expected shape \(3, 6\)"):
        rbd.rnea(model, z, z, z, f_ext=np.zeros((2, 6)))
    with pytest.raises(ValueError, match="f_ext_frame"):
        rbd.rnea(model, z, z, z, f_ext=np.zeros((3, 6)), f_ext_frame="body")
    with pytest.raises(ValueError, match="unknown link 'nope'"):
        rbd.rnea(model, z, z, z, f_ext={"nope": np.zeros(6)})
    bad = np.zeros((3, 6))
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="f_ext"):
        rbd.rnea(model, z, z, z, f_ext=bad)


def test_singular_inertia_is_reported():
    text = robot([link("base"), link("a", "")], [joint("ja", "base", "a")])   # massless moving link
    m = rbd.Model.from_urdf(text)
    with pytest.raises(ValueError, match="singular"):
        rbd.forward_dynamics(m, [0.0], [0.0], [1.0])
    with pytest.raises(ValueError, match="singular"):
        rbd.aba(m, [0.0], [0.0], [1.0])


def test_unknown_joint_name(model):
    with pytest.raises(ValueError, match="unknown joint 'nope'"):
        model.q_index("nope")


def test_ltdl_rejects_non_positive_definite(model):
    with pytest.raises(ValueError, match="positive-definite"):
        rbd.ltdl(model, -np.eye(2))
    with pytest.raises(ValueError, match="shape"):
        rbd.ltdl(model, np.eye(3))


def test_fast_paths_in_a_fresh_thread_and_on_a_non_model(model):
    """The single-call fast paths read this thread's workspace directly: the first call in
    a new thread makes it (same results as the main thread), and a non-Model is still a
    TypeError naming ``model``."""
    import threading
    q, v, a = np.full(model.nq, 0.3), np.full(model.nv, 0.2), np.full(model.nv, 0.1)
    calls = {"rnea": lambda: rbd.rnea(model, q, v, a), "gravity": lambda: rbd.gravity(model, q),
             "bias": lambda: rbd.bias(model, q, v), "crba": lambda: rbd.crba(model, q),
             "forward_dynamics": lambda: rbd.forward_dynamics(model, q, v, a),
             "aba": lambda: rbd.aba(model, q, v, a)}
    here = {name: f() for name, f in calls.items()}
    for name, f in calls.items():       # one fresh thread per function: each call is a first one
        got = {}
        t = threading.Thread(target=lambda f=f, name=name, got=got: got.setdefault(name, f()))
        t.start()
        t.join()
        assert name in got and np.array_equal(got[name], here[name]), name
    for fn in (rbd.rnea, rbd.forward_dynamics, rbd.aba):
        with pytest.raises(TypeError, match="model"):
            fn("panda", q, v, a)
    with pytest.raises(TypeError, match="model"):
        rbd.bias(object(), q, v)
    for fn in (rbd.gravity, rbd.crba):
        with pytest.raises(TypeError, match="model"):
            fn(None, q)


# ----------------------------------------------------------------------------- extreme arguments
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


# ----------------------------------------------------------------------------- compensation dofs, ltdl_solve
@pytest.mark.parametrize("dofs", [[10 ** 6], [-1], [0, 2], [-(10 ** 9)]])
def test_compensation_into_checks_dofs(slider, dofs):
    z = np.zeros(2)
    d = np.array(dofs, dtype=np.int64)
    g = np.zeros(len(dofs))
    with pytest.raises(ValueError, match=r"^dofs"):
        rbd.compensation_into(slider, z, z, d, g)
    rbd.compensation_into(slider, z, z, np.array([1, 0], dtype=np.int64), np.zeros(2))   # valid dofs work


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


# ----------------------------------------------------------------------------- descriptions, messages
def test_floating_base_refuses_a_urdf_joint_named_root_joint():
    text = robot([link("base"), link("a"), link("b")],
                 [joint("ja", "base", "a"), joint("root_joint", "a", "b", extra='<mimic joint="ja"/>')])
    assert rbd.Model.from_urdf(text).nv == 1                       # fine without a free-flyer
    with pytest.raises(rbd.ModelError, match="'root_joint'"):
        rbd.Model.from_urdf(text, floating_base=True)


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


# ----------------------------------------------------------------------------- numbers that are not real
@pytest.mark.parametrize("call,field", [
    (lambda m: m.with_payload("panda_hand", 1.0, np.array([0, 0, 0.1 + 1j]), np.eye(3) * 1e-3), "com"),
    (lambda m: m.with_payload("panda_hand", 1.0, [0, 0, 0.1], np.eye(3) * (1e-3 + 1e-4j)), "inertia"),
    (lambda m: m.with_armature(np.full(m.nv, 0.1 + 0.2j)), "armature"),
    (lambda m: m.with_payload("panda_hand", "1.5", [0, 0, 0], np.zeros((3, 3))), "mass"),
    (lambda m: m.with_payload("panda_hand", True, [0, 0, 0], np.zeros((3, 3))), "mass"),
    (lambda m: m.with_payload("panda_hand", 1.0 + 0j, [0, 0, 0], np.zeros((3, 3))), "mass"),
    (lambda m: m.with_payload("panda_hand", 1.0, ["0", "0", "0"], np.zeros((3, 3))), "com"),
    (lambda m: m.with_armature({"panda_joint1": "0.1"}), r"armature\['panda_joint1'\]"),
    (lambda m: m.with_armature({"panda_joint1": True}), r"armature\['panda_joint1'\]"),
    (lambda m: rbd.friction(m, np.zeros(m.nv), velocity_eps="1.5"), "velocity_eps"),
    (lambda m: rbd.friction(m, np.zeros(m.nv), velocity_eps=True), "velocity_eps"),
    (lambda m: rbd.friction(m, np.zeros(m.nv) + 0j), "v"),
    (lambda m: m.with_gravity(np.array([0, 0, -9.81 + 1j])), "gravity"),
])
def test_complex_strings_and_booleans_are_not_numbers(call, field, orc):
    m = rbd.Model.from_urdf(orc.robot_text("panda"))
    with pytest.raises(ValueError, match=rf"^{field}"):
        call(m)


# ----------------------------------------------------------------------------- a non-Model model
def test_every_core_function_raises_type_error_for_a_non_model(orc):
    m = rbd.Model.from_urdf(orc.robot_text("panda"))
    q, z = np.zeros(m.nq), np.zeros(m.nv)
    args = {"friction": (z,), "compensation_into": (q, z, np.arange(m.nv), np.empty(m.nv)),
            "dof_indices": (), "ltdl": (np.eye(m.nv),), "ltdl_solve": (np.eye(m.nv), z),
            "external_wrench": (q, z, "panda_hand"), "MomentumObserver": (10.0,),
            "external_wrench_into": (q, z, "panda_hand", "local", np.empty(6)),
            "identify": (q[None], z[None], z[None], z[None]),
            "identify_payload": ("panda_hand", q[None], z[None], z[None], z[None]),
            "excitation_trajectory": (10.0,), "retime": (np.array([q, q]),),
            "payload_capacity": ("panda_hand", q),
            "constraint_error": (q,), "constraint_jacobian": (q,), "constraint_drift": (q, z),
            "constraint_velocity": (q, z), "constrained_forward_dynamics": (q, z, z),
            "constrained_inverse_dynamics": (q, z, z), "close_loops": (q,), "loop_velocity": (q, z),
            "constrained_forward_dynamics_into": (q, z, z, (), np.empty(m.nv), np.empty(0)),
            "constrained_inverse_dynamics_into": (q, z, z, (), np.empty(m.nv), np.empty(0)),
            "LoopCompletion": ([],), "LoopCompensation": ([],)}
    names = [n for n in rbd.__all__ if callable(getattr(rbd, n)) and n not in (
        "Model", "ModelError", "ltdl_unpack", "CollisionDetector", "RetimeResult", "PayloadCapacity",
        "Constraint", "FrictionCone", "ConstrainedForwardDynamics", "ConstrainedInverseDynamics",
        "LoopsNotClosed")]
    assert {"friction", "rnea", "rnea_into", "crba", "aba_into", "compensation_into"} <= set(names)
    for name in names:
        if name in args:
            a = args[name]
        else:
            e = BY_NAME[name[:-5] if name.endswith("_into") else name]
            a = tuple(q if x == "q" else z for x in e.inputs) + tuple(o.example(m) for o in e.options)
            if name.endswith("_into"):
                a += (np.empty(e.out_shape(m)),)
        for bad in ("panda", None, 3.0):
            with pytest.raises(TypeError, match="model: expected an rbd_ros.core.Model"):
                getattr(rbd, name)(bad, *a)
