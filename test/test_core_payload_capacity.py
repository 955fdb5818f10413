"""rbd.payload_capacity (issue 26), checked by its definition: with the capacity on the
link (Model.with_payload, then rnea) some |tau| equals its limit; with a little more,
one exceeds it.  Static holding and along a trajectory; what replaces what; bad input."""
import numpy as np
import pytest

import rbd_ros.core as rbd
from rbd_ros.robots import bundled_robot_path

ARM = open(bundled_robot_path("rbd_arm7")).read()
COM = [0.02, 0.0, 0.08]
PER_KG = np.diag([2e-3, 2e-3, 1e-3])           # inertia per kg about the com (m^2)


@pytest.fixture(scope="module")
def arm():
    return rbd.Model.from_urdf(ARM.replace('velocity="2.175"/>',
                                           'velocity="2.175"/>\n    <dynamics damping="1.0" friction="0.5"/>'))


def _trajectory(model, n=200):
    t = np.linspace(0, 2, n)[:, None]
    w = 1.0 + 0.3 * np.arange(model.nv)[None, :]
    lim = model.position_limit
    mid = 0.5 * (lim[:, 0] + lim[:, 1])
    q = mid + 0.5 * np.sin(w * t)
    return q, 0.5 * w * np.cos(w * t), -0.5 * w ** 2 * np.sin(w * t)


def _ratio(model, mass, q, v, a, limits=None):
    """max |tau| / limit with ``mass`` kg on the flange: per sample."""
    loaded = model.with_payload("flange", mass, COM, mass * PER_KG)
    tau = rbd.rnea(loaded, q, v, a) + model.damping * v + model.friction * np.sign(v)
    lim = model.effort_limit if limits is None else limits
    return np.max(np.abs(np.atleast_2d(tau)) / lim, axis=-1)


def test_static_capacity_by_definition(arm):
    q = arm.neutral() + np.array([0, 0.8, 0, -1.2, 0, 1.5, 0])
    cap = rbd.payload_capacity(arm, "flange", q, com=COM, inertia=PER_KG)
    assert 0 < cap.mass < 100 and cap.per_sample.shape == (1,) and cap.limiting_sample == 0
    z = np.zeros(7)
    assert _ratio(arm, cap.mass, q, z, z)[0] == pytest.approx(1.0, abs=1e-9)
    assert _ratio(arm, cap.mass * (1 + 1e-6), q, z, z)[0] > 1.0
    assert _ratio(arm, cap.mass * (1 - 1e-6), q, z, z)[0] < 1.0
    # the limiting joint is the one at its limit
    loaded = arm.with_payload("flange", cap.mass, COM, cap.mass * PER_KG)
    tau = rbd.rnea(loaded, q, z, z)
    j = int(np.argmax(np.abs(tau) / arm.effort_limit))
    assert cap.limiting_dof == j and cap.limiting_joint == arm.joint_names[j]


def test_capacity_along_a_trajectory_by_definition(arm):
    q, v, a = _trajectory(arm)
    cap = rbd.payload_capacity(arm, "flange", q, v, a, com=COM, inertia=PER_KG)
    assert cap.per_sample.shape == (200,) and cap.mass == cap.per_sample.min()
    r = _ratio(arm, cap.mass, q, v, a)
    assert r.max() == pytest.approx(1.0, abs=1e-9) and int(r.argmax()) == cap.limiting_sample
    assert _ratio(arm, cap.mass * (1 + 1e-6), q, v, a).max() > 1.0
    # every sample's own capacity touches its limit there
    for i in (0, 57, 199):
        assert _ratio(arm, cap.per_sample[i], q[i], v[i], a[i])[0] == pytest.approx(1.0, abs=1e-9)
    # v and a count: the same poses held still give another capacity, true to its definition
    still = rbd.payload_capacity(arm, "flange", q, com=COM, inertia=PER_KG)
    assert abs(still.mass - cap.mass) > 0.1
    z = np.zeros_like(q)
    assert _ratio(arm, still.mass, q, z, z).max() == pytest.approx(1.0, abs=1e-9)


def test_it_replaces_the_payload_on_the_link_and_keeps_others(arm):
    q, v, a = _trajectory(arm, 50)
    base = rbd.payload_capacity(arm, "flange", q, v, a, com=COM, inertia=PER_KG)
    heavy = arm.with_payload("flange", 50.0, [0, 0, 0.2], np.eye(3) * 0.1)
    assert rbd.payload_capacity(heavy, "flange", q, v, a, com=COM, inertia=PER_KG).mass == \
        pytest.approx(base.mass, rel=1e-12)
    # a payload elsewhere counts
    other = arm.with_payload("link4", 3.0, [0, 0, 0], np.zeros((3, 3)))
    assert rbd.payload_capacity(other, "flange", q, v, a, com=COM, inertia=PER_KG).mass < base.mass


def test_effort_limits_argument(arm):
    q, v, a = _trajectory(arm, 50)
    lim = arm.effort_limit * np.array([1, 0.8, 1, 0.9, 1, 1, 1])
    cap = rbd.payload_capacity(arm, "flange", q, v, a, com=COM, effort_limits=lim)
    loaded = arm.with_payload("flange", cap.mass, COM, np.zeros((3, 3)))
    tau = rbd.rnea(loaded, q, v, a) + arm.damping * v + arm.friction * np.sign(v)
    assert np.max(np.abs(tau) / lim) == pytest.approx(1.0, abs=1e-9)
    # a point mass at the default com (the link origin) differs from one off it
    assert rbd.payload_capacity(arm, "flange", q, v, a).mass != cap.mass


def test_a_motion_over_its_limits_without_payload_carries_nothing(arm):
    """Not an error: mass 0, feasible False, and the joint and sample that exceed most."""
    q, v, a = _trajectory(arm, 20)
    lim = np.full(7, 8.0)
    cap = rbd.payload_capacity(arm, "flange", q, v, a, effort_limits=lim)
    tau0 = rbd.rnea(arm, q, v, a) + arm.damping * v + arm.friction * np.sign(v)
    load = np.abs(tau0) / lim
    assert load.max() > 1 and not cap.feasible and cap.mass == 0.0
    assert (cap.limiting_sample, cap.limiting_dof) == np.unravel_index(np.argmax(load), load.shape)
    over = np.any(load > 1, axis=1)
    assert np.all(cap.per_sample[over] == 0) and np.all(cap.per_sample[~over] > 0)
    assert np.all(np.isfinite(cap.per_sample))
    assert rbd.payload_capacity(arm, "flange", q, v, a).feasible       # the sentinel: URDF limits fit


def test_bad_input(arm):
    q, v, a = _trajectory(arm, 5)
    with pytest.raises(ValueError, match=r"^link: 'flang' is not a link of the model; did you mean \['flange'"):
        rbd.payload_capacity(arm, "flang", q)
    bad = q.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"^q"):
        rbd.payload_capacity(arm, "flange", bad)
    with pytest.raises(ValueError, match=r"^v: expected shape \(5, 7\)"):
        rbd.payload_capacity(arm, "flange", q, v[:3])
    with pytest.raises(ValueError, match=r"^com: expected 3 numbers"):
        rbd.payload_capacity(arm, "flange", q, com=[0, 0])
    with pytest.raises(ValueError, match=r"^inertia: not positive semi-definite"):
        rbd.payload_capacity(arm, "flange", q, inertia=-PER_KG)
    for lim in (0.0, -3.0, np.nan):
        with pytest.raises(ValueError, match=r"^effort_limits\[0\] \(joint1\): expected a number > 0"):
            rbd.payload_capacity(arm, "flange", q, effort_limits=lim)
    with pytest.raises(ValueError, match=r"^effort_limits: no joint with a finite effort limit feels"):
        rbd.payload_capacity(arm, "link0", q)        # fixed to the world
    with pytest.raises(TypeError, match=r"^model:"):
        rbd.payload_capacity(None, "flange", q)
    assert rbd.payload_capacity(arm, "flange", q).mass > 0        # the sentinel: good input works
