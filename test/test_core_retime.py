"""rbd.retime (issue 26): the limits hold at every sample, torque limits slow the path
only where they bind, a closed-form bang-coast-bang, payloads, friction, bad input.

The torques are checked with rbd.rnea on the result's own q, v, a (the retiming builds
its constraint from M q', M q'' + C q' and g; the check does not).  Against toppra and
Pinocchio: test_oracle_toppra.py."""
import numpy as np
import pytest
from scipy.interpolate import CubicSpline

import rbd_ros.core as rbd
from rbd_ros.robots import bundled_robot_path

REL = 1e-9                     # a limit may be exceeded by rounding only
ARM = open(bundled_robot_path("rbd_arm7")).read()
# URDF friction on the four big joints (they have velocity="2.175")
ARM_FRICTION = ARM.replace('velocity="2.175"/>', 'velocity="2.175"/>\n    <dynamics damping="2.0" friction="0.8"/>')
AMAX = np.full(7, 15.0)
PAYLOAD = ("flange", 2.0, [0.0, 0.0, 0.05], np.diag([4e-3, 4e-3, 2e-3]))


def _waypoints(model, k=12, seed=3, reach=0.6):
    """k waypoints of a wide, smooth motion inside the position limits."""
    lim = model.position_limit
    mid, half = 0.5 * (lim[:, 0] + lim[:, 1]), 0.5 * (lim[:, 1] - lim[:, 0])
    phase = np.random.default_rng(seed).uniform(0, 6, model.nv)
    f = np.linspace(0, 2.5, k)[:, None] * (1 + np.arange(model.nv))[None, :] * 0.6 + phase
    return mid + reach * half * np.sin(f)


@pytest.fixture(scope="module")
def loaded():
    """The arm with a payload, armature and URDF friction (damping and Coulomb)."""
    m = rbd.Model.from_urdf(ARM_FRICTION).with_armature(np.linspace(0.1, 0.3, 7))
    return m.with_payload(*PAYLOAD)


def chord(wp):
    """The path parameter of the waypoints: cumulative joint-space distance (doc/planners.md)."""
    return np.concatenate(([0], np.cumsum(np.linalg.norm(np.diff(wp, axis=0), axis=1))))


def _direction(r, wp):
    """sign(q') per sample, from the documented path: a not-a-knot cubic spline in s."""
    return np.sign(CubicSpline(chord(wp), wp, bc_type="not-a-knot")(r.s, 1))


def _torque(model, r, wp):
    return rbd.rnea(model, r.q, r.v, r.a) + model.damping * r.v + model.friction * _direction(r, wp)


def assert_within(what, x, lim):
    ratio = np.max(np.abs(x) / lim)
    assert ratio <= 1 + REL, f"{what}: |x| / limit reaches {ratio:.12f}"
    return ratio


def test_limits_hold_at_every_sample(loaded):
    wp = _waypoints(loaded)
    tmax = 0.6 * loaded.effort_limit
    r = rbd.retime(loaded, wp, acceleration_limits=AMAX, effort_scale=0.6)
    n = r.t.shape[0]
    assert n >= 100 and r.q.shape == r.v.shape == r.a.shape == r.tau.shape == (n, 7)
    assert np.all(np.diff(r.t) > 0) and r.t[0] == 0 and r.duration == r.t[-1]
    assert np.all(np.isfinite(r.tau))
    assert r.sd[0] == 0 and r.sd[-1] == 0 and np.all(r.v[[0, -1]] == 0)
    # the path goes through every waypoint (they are gridpoints when grid=None)
    at = np.searchsorted(r.s, chord(wp))
    assert np.max(np.abs(r.q[at] - wp)) < 1e-12
    # each constraint is reached (the sentinels: limits that never bind would prove nothing)
    assert assert_within("velocity", r.v, loaded.velocity_limit) > 1 - 1e-9
    assert assert_within("acceleration", r.a, AMAX) > 1 - 1e-9
    tau = _torque(loaded, r, wp)
    assert assert_within("effort", tau, tmax) > 1 - 1e-9
    # the reported torques are the model's (rnea with armature, payload, friction)
    assert np.max(np.abs(r.tau - tau)) <= 1e-9 * np.max(np.abs(tau))
    assert set(r.binding) >= {"velocity", "acceleration", "effort"}
    assert r.limiting_joint in loaded.joint_names and r.limiting_kind in ("velocity", "acceleration", "effort")
    j = loaded.joint_names.index(r.limiting_joint)
    counts = np.bincount(r.binding_joint[r.binding_joint >= 0], minlength=7)
    assert counts[j] == counts.max()
    per_kind = {k: np.sum((r.binding_joint == j) & (r.binding == k)) for k in ("velocity", "acceleration", "effort")}
    assert per_kind[r.limiting_kind] == max(per_kind.values())


def test_torque_limits_slow_the_path_only_where_they_bind(loaded):
    wp = _waypoints(loaded)
    r = rbd.retime(loaded, wp, acceleration_limits=AMAX, effort_scale=0.6)
    free = rbd.retime(loaded, wp, acceleration_limits=AMAX, effort_limits=np.inf)
    np.testing.assert_array_equal(r.s, free.s)
    assert np.all(r.sd <= free.sd * (1 + 1e-9) + 1e-12), "a torque limit made the path faster somewhere"
    effort = (r.binding == "effort") & (r.sd > 0)
    assert effort.sum() >= 3, "the sentinel: a torque limit must bind on this path"
    assert np.all(r.sd[effort] < free.sd[effort] * (1 - 1e-6)), \
        "where the torque limit binds, the path must be strictly slower than without it"
    assert r.duration > free.duration
    # without the torque constraint, its torques leave the limit on those samples
    assert np.max(np.abs(_torque(loaded, free, wp)) / (0.6 * loaded.effort_limit)) > 1.01


def test_bang_coast_bang_in_closed_form():
    """One joint, a straight line: accelerate at a_max, coast at v_max, brake:
    T = D / v + v / a.  The discrete optimum is within the grid's resolution of it."""
    m = rbd.Model.from_urdf(ARM)
    a0 = m.neutral() + np.array([0, 0, 0, -1.5, 0, 1.5, 0])
    wp = np.array([a0, a0 + np.array([2.0, 0, 0, 0, 0, 0, 0])])
    vmax, amax = 1.0, 3.0
    r = rbd.retime(m, wp, velocity_limits=vmax, acceleration_limits=amax, effort_limits=np.inf, grid=2000)
    assert r.t.shape == (2000,)
    assert r.duration == pytest.approx(2.0 / vmax + vmax / amax, rel=2e-3)
    assert np.max(np.abs(r.v[:, 0])) == pytest.approx(vmax, rel=1e-12)
    np.testing.assert_allclose(r.q[:, 1:], np.tile(a0[1:], (2000, 1)), atol=1e-12)
    # scales scale the limits: half the speed and acceleration, T = D / (v/2) + v / a
    h = rbd.retime(m, wp, velocity_limits=vmax, acceleration_limits=amax, effort_limits=np.inf, grid=2000,
                   velocity_scale=0.5, acceleration_scale=0.5)
    assert h.duration == pytest.approx(2.0 / (0.5 * vmax) + vmax / amax, rel=2e-3)


def test_payload_and_armature_count():
    m = rbd.Model.from_urdf(ARM)
    wp = _waypoints(m)
    opts = dict(acceleration_limits=AMAX, effort_scale=0.7)
    light = rbd.retime(m, wp, **opts)
    heavy_model = m.with_payload("flange", 3.0, [0, 0, 0.05], np.diag([1e-2, 1e-2, 5e-3]))
    heavy_model = heavy_model.with_armature(np.full(7, 0.3))
    heavy = rbd.retime(heavy_model, wp, **opts)
    assert heavy.duration > light.duration * 1.01
    assert_within("effort", _torque(heavy_model, heavy, wp), 0.7 * m.effort_limit)
    # the light trajectory is too much for the loaded arm
    assert np.max(np.abs(_torque(heavy_model, light, wp)) / (0.7 * m.effort_limit)) > 1.01


def test_viscous_friction_is_bounded_not_ignored(loaded):
    """Damping makes the path slower than Coulomb friction alone, and the bound is tight
    enough that the effort limit still binds."""
    wp = _waypoints(loaded)
    coulomb = rbd.Model.from_urdf(ARM_FRICTION.replace('damping="2.0"', 'damping="0.0"'))
    coulomb = coulomb.with_armature(loaded.armature).with_payload(*PAYLOAD)
    r = rbd.retime(loaded, wp, acceleration_limits=AMAX, effort_scale=0.6)
    c = rbd.retime(coulomb, wp, acceleration_limits=AMAX, effort_scale=0.6)
    assert r.duration > c.duration
    assert np.all(r.sd <= c.sd * (1 + 1e-9) + 1e-12)
    ratio = np.abs(_torque(loaded, r, wp)) / (0.6 * loaded.effort_limit)
    assert ratio.max() == pytest.approx(1.0, abs=1e-6)


def test_grids():
    m = rbd.Model.from_urdf(ARM)
    wp = _waypoints(m, k=4)
    few = rbd.retime(m, wp, acceleration_limits=AMAX)
    assert few.t.shape[0] >= 100
    many = _waypoints(m, k=300)
    assert rbd.retime(m, many, acceleration_limits=AMAX).t.shape == (300,)
    r = rbd.retime(m, wp, acceleration_limits=AMAX, grid=57)
    assert r.t.shape == (57,) and np.allclose(np.diff(r.s), r.s[-1] / 56)
    # a finer grid converges: durations of 1000 and 2000 gridpoints within 0.5 %
    d1 = rbd.retime(m, wp, acceleration_limits=AMAX, grid=1000).duration
    d2 = rbd.retime(m, wp, acceleration_limits=AMAX, grid=2000).duration
    assert d1 == pytest.approx(d2, rel=5e-3)


def test_duplicates_and_zero_length():
    m = rbd.Model.from_urdf(ARM)
    wp = _waypoints(m, k=6)
    dup = np.insert(wp, [0, 3, 6], wp[[0, 2, 5]], axis=0)
    a, b = rbd.retime(m, wp, acceleration_limits=AMAX), rbd.retime(m, dup, acceleration_limits=AMAX)
    assert a.duration == b.duration
    still = rbd.retime(m, np.tile(wp[0], (3, 1)), acceleration_limits=AMAX)
    assert still.duration == 0.0 and still.q.shape == (1, 7)
    np.testing.assert_allclose(still.tau[0], rbd.gravity(m, wp[0]), rtol=1e-12)


# ----------------------------------------------------------------------------- bad input

@pytest.fixture(scope="module")
def arm():
    return rbd.Model.from_urdf(ARM)


def _bad(arm, match, wp=None, **kw):
    wp = _waypoints(arm, k=5) if wp is None else wp
    with pytest.raises(ValueError, match=match):
        rbd.retime(arm, wp, **kw)


def test_bad_waypoints(arm):
    wp = _waypoints(arm, k=5)
    nan = wp.copy()
    nan[2, 3] = np.nan
    _bad(arm, r"^waypoints\[2, 3\]: expected finite", nan)
    far = wp.copy()
    far[1, 0] = 1e300                   # no joint limit would catch it on a continuous joint
    _bad(arm, r"^waypoints\[1, 0\]: expected finite joint positions of magnitude <= 1e\+06", far)
    _bad(arm, r"^waypoints: expected a \(K, 7\) array", wp[:, :6])
    _bad(arm, r"^waypoints: expected a \(K, 7\) array", wp[:1])
    _bad(arm, r"^waypoints: expected .* real numbers", [["a"] * 7] * 2)
    out = wp.copy()
    out[1, 3] = 0.5                      # joint4's limits are [-3.07, -0.07]
    _bad(arm, r"^waypoints\[1\]: joint 'joint4' at 0.5 is outside its position limits", out)
    # waypoints inside the limits, the spline between them outside: joint4 near its upper limit
    swing = np.tile(wp[0], (4, 1))
    swing[:, 0] = [0.0, 0.1, 0.9, 1.0]
    swing[:, 3] = [-1.0, -0.1, -0.1, -1.0]          # the spline reaches -0.007 between the middle two
    _bad(arm, r"^waypoints: the cubic spline through them leaves joint 'joint4'.* between waypoints 1 and 2 ",
         swing)
    # named by the caller's indices, also when repeated waypoints before them are merged
    _bad(arm, r"^waypoints: the cubic spline .* between waypoints 3 and 4 ", swing[[0, 0, 0, 1, 2, 3]])


def test_bad_limits_scales_and_grid(arm):
    for name in ("velocity_limits", "acceleration_limits", "effort_limits"):
        for value, shown in ((0.0, "0.0"), (-1.0, "-1.0"), (np.nan, "nan")):
            _bad(arm, rf"^{name}\[0\] \(joint1\): expected a number > 0 .* got {shown}", **{name: value})
        _bad(arm, rf"^{name}: expected a number or 7 numbers", **{name: [1.0] * 6})
        _bad(arm, rf"^{name}: expected a number or 7 numbers", **{name: "fast"})
    for name in ("velocity_scale", "acceleration_scale", "effort_scale"):
        for value in (0.0, -0.5, 1.5, np.nan):
            _bad(arm, rf"^{name}: expected a number in \(0, 1\]", **{name: value})
        _bad(arm, rf"^{name}: expected a number in \(0, 1\]", **{name: "1"})
    for grid in (5, 2.5, True, "100", 10**7):
        _bad(arm, r"^grid: expected None", grid=grid)


def test_limits_that_cannot_be_kept(arm):
    # too weak to hold the arm: named, with the joint and the torque it needs
    _bad(arm, r"^effort_limits: the path cannot be followed .* holding still there needs \|tau\| = .* at joint "
              r"'joint2'", effort_limits=[87, 1, 87, 87, 12, 12, 12])
    # near the caller's waypoints (found first on the last interval), repeated ones merged
    wp = _waypoints(arm, k=5)
    weak = [87, 1, 87, 87, 12, 12, 12]
    _bad(arm, r"^effort_limits: .* near waypoints 3-4 ", wp, effort_limits=weak)
    _bad(arm, r"^effort_limits: .* near waypoints 5-6 ", wp[[0, 0, 0, 1, 2, 3, 4]], effort_limits=weak)
    # a velocity limit so small that v_max / |q'| underflows: no motion
    _bad(arm, r"^velocity_limits: too small to move along the path", velocity_limits=1e-300)
    # nothing bounds the speed
    _bad(arm, r"^velocity_limits: nothing bounds the speed", velocity_limits=np.inf, effort_limits=np.inf)
    # a sentinel: the same path with finite limits works
    assert rbd.retime(arm, _waypoints(arm, k=5)).duration > 0


def test_floating_base_refused():
    m = rbd.Model.from_urdf(ARM, floating_base=True)
    with pytest.raises(ValueError, match="^model: retime needs"):
        rbd.retime(m, np.tile(m.neutral(), (2, 1)))
    with pytest.raises(TypeError, match="^model:"):
        rbd.retime("arm", np.zeros((2, 7)))
