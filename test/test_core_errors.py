"""Bad robot descriptions and bad arguments: clear errors, never a wrong number."""
import numpy as np
import pytest

import rbd_ros.core as rbd

INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'


def robot(links, joints):
    return f'<robot name="r">{"".join(links)}{"".join(joints)}</robot>'


def link(name, inertial=INERTIAL):
    return f'<link name="{name}">{inertial}</link>'


def joint(name, parent, child, type_="revolute", extra=""):
    return (f'<joint name="{name}" type="{type_}"><parent link="{parent}"/><child link="{child}"/>'
            f'<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>{extra}</joint>')


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
