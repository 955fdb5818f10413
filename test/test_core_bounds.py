"""Every number of a model within its physical bound (``rbd_ros.core.model.errors.BOUNDS``),
whichever way it comes: URDF origins, inertias, mimic multipliers and offsets, gravity,
payloads, armature, joint damping -- beyond it a ModelError or ValueError naming the
element; at every bound at once, finite results (issues 8 and 17)."""
import re

import numpy as np
import pytest
from core_util import random_state
from core_util import urdf_inertial as inertial
from core_util import urdf_joint as joint
from core_util import urdf_link as link
from core_util import urdf_robot as robot

import rbd_ros.core as rbd
from rbd_ros.core.model.errors import BOUNDS

SIMPLE = (link("base"), link("a"))


@pytest.fixture(scope="module")
def orc():
    """The Pinocchio oracle's helpers (panda from example-robot-data): the tests that use
    it are skipped where the oracles are not installed (the numba lower-bound venv,
    scripts/test_numba_bounds.sh, which runs this file's other tests)."""
    return pytest.importorskip("oracle")


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
    b = BOUNDS
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


@pytest.mark.parametrize("field,args", [
    ("mass", (1e308, [0, 0, 0], np.zeros((3, 3)))),
    ("mass", (BOUNDS["mass"] * 1.01, [0, 0, 0], np.zeros((3, 3)))),
    ("com", (1.0, [0, 0, 1e155], np.zeros((3, 3)))),
    ("com", (1.0, [BOUNDS["length"] * 1.01, 0, 0], np.zeros((3, 3)))),
    ("inertia", (1.0, [0, 0, 0], np.eye(3) * 1e300)),
])
def test_payload_beyond_the_urdf_bounds_is_refused(field, args, orc):
    m = rbd.Model.from_urdf(orc.robot_text("panda"))
    with pytest.raises(ValueError, match=rf"^{field}: "):
        m.with_payload("panda_hand", *args)


def test_payload_and_armature_at_the_bounds_keep_every_result_finite(orc):
    """The largest payload and armature the bounds admit: every algorithm's result is
    finite (or a ValueError naming the cause), never inf/NaN in the model."""
    m = rbd.Model.from_urdf(orc.robot_text("panda"), mimic=False)
    big = m.with_payload("panda_hand", BOUNDS["mass"], [BOUNDS["length"]] * 3, np.eye(3) * BOUNDS["inertia"])
    big = big.with_armature(np.full(m.nv, BOUNDS["armature"]))
    assert np.all(np.isfinite(big.md[np.isfinite(big.md)])) and np.all(np.isfinite(big.tree.inertia))
    q = np.full(m.nq, 0.3)
    for f, args in ((rbd.gravity, (q,)), (rbd.bias, (q, q)), (rbd.crba, (q,)), (rbd.rnea, (q, q, q)),
                    (rbd.forward_dynamics, (q, q, q)), (rbd.aba, (q, q, q))):
        try:
            assert np.all(np.isfinite(f(big, *args)))
        except ValueError as e:
            assert "ill-conditioned" in str(e) or "not finite" in str(e)


def test_armature_beyond_its_bound_is_refused(orc):
    m = rbd.Model.from_urdf(orc.robot_text("panda"), mimic=False)
    with pytest.raises(ValueError, match=r"armature\[0\] \(panda_joint1\): expected a finite number >= 0 and <="):
        m.with_armature(np.r_[1.7e308, np.zeros(m.nv - 1)])
    with pytest.raises(ValueError, match=r"armature\['panda_joint2'\]"):
        m.with_armature({"panda_joint2": 2 * BOUNDS["armature"]})


def test_urdf_damping_beyond_its_bound_is_refused_and_friction_never_returns_inf(orc):
    text = orc.robot_text("panda")
    huge = re.sub(r'(<joint name="panda_joint1".*?<dynamics[^>]*?)damping="[^"]*"', r'\1damping="1e308"', text,
                  count=1, flags=re.S)
    assert huge != text
    with pytest.raises(rbd.ModelError, match=r"panda_joint1.*<dynamics damping> 1e\+308 exceeds the bound"):
        rbd.Model.from_urdf(huge)
    at_bound = huge.replace('damping="1e308"', f'damping="{BOUNDS["damping"]:g}"')
    m = rbd.Model.from_urdf(at_bound)
    tau = rbd.friction(m, np.full(m.nv, 2.0))
    assert np.all(np.isfinite(tau)) and tau[0] == 2 * BOUNDS["damping"]     # the sentinel: damping is there
    with pytest.raises(ValueError, match=r"^v: the result is not finite"):
        rbd.friction(m, np.full(m.nv, 1e300))


