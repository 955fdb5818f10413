"""rbd_ros.node.effort_law (ROS-free): the laws of ~/effort_command and ~/feedforward_torques,
the desired-state merge, the fallback, friction and clamping -- against rbd_ros.core."""
import array
import dataclasses
import logging
import math

import numpy as np
import pytest
from core_util import ARM_JOINTS, random_tree_urdf

import rbd_ros.core as rbd
from rbd_ros.node import effort_law
from rbd_ros.node.command import EffortCommand
from rbd_ros.node.compensation import Compensation
from rbd_ros.node.logs import Reporter
from rbd_ros.node.model_build import build_robot
from rbd_ros.node.params import Params
from rbd_ros.robots import bundled_robot_path

ARM = ARM_JOINTS
TOL = 1e-9


def arm_urdf(dynamics=False, continuous=False):
    with open(bundled_robot_path("rbd_arm7")) as f:
        text = f.read()
    if dynamics:  # viscous + Coulomb friction on every joint (different per joint)
        for k in range(1, 8):
            tag = f'<joint name="joint{k}" type="revolute">'
            assert tag in text
            text = text.replace(tag, tag + f'<dynamics damping="{0.3 * k}" friction="{0.7 + 0.2 * k}"/>')
    if continuous:
        text = text.replace('<joint name="joint1" type="revolute">', '<joint name="joint1" type="continuous">')
    return text


class Arm:
    """A Robot with the terms the law runs in (compensation, command), as the node binds
    them; other attributes are the Robot's."""

    def __init__(self, rt):
        self.rt = rt
        report = Reporter(logging.getLogger("test"))
        self.comp = Compensation(rt, report)
        self.term = EffortCommand(rt, report)
        self.term.link({"g": self.comp})
        self.law, self.g = self.term.law, self.comp.g
        self.cmd, self.ff = self.law.cmd, self.law.ff

    def __getattr__(self, name):
        return getattr(self.rt, name)

    def compute(self):
        """g(q) of the merged state (what the command law reads)."""
        self.comp.compute(frozenset({"g"}), 0.0, 0.0)

    def command(self, now, s):
        return self.law.command(now, s, self.g)

    def adopt_state(self, old):
        """What a model swap carries over: the joint state and the command term's state."""
        self.rt.adopt_state(old.rt)
        self.term.adopt(old.term)

    def buffer(self, part):
        return self.term.buffer(part)


def runtime(text=None, joints=(), floating_base=False, mimic=True):
    return Arm(build_robot(text or arm_urdf(), floating_base=floating_base, mimic=mimic,
                           gravity=[0.0, 0.0, -9.81], joints=joints, source="test"))


def settings(rt, **kw):
    s = effort_law.make_settings(Params(**kw), rt)
    rt.law.settings = s
    return s


def rel(got, ref):
    ref = np.asarray(ref)
    return float(np.max(np.abs(np.asarray(got) - ref)) / max(1.0, float(np.max(np.abs(ref)))))


def d(values):
    return array.array("d", [float(x) for x in values])


def measure(rt, names, q, v, now=0.0):
    st, _ = rt.update(list(names), d(q), d(v), now)
    assert st == "ok"
    rt.compute()


def full_state(rt, names, q, v=None, a=None, base_q=None):
    """Model-order (q, v, a) with the named DOFs set, the rest neutral / zero."""
    qq = np.array(rt.model.neutral(), dtype=float) if base_q is None else np.array(base_q, dtype=float)
    vv, aa = np.zeros(rt.model.nv), np.zeros(rt.model.nv)
    for k, n in enumerate(names):
        i = rt.dof_index[n]
        qq[rt.dof_q[i]] = q[k]
        if v is not None:
            vv[rt.dof_v[i]] = v[k]
        if a is not None:
            aa[rt.dof_v[i]] = a[k]
    return qq, vv, aa


def test_computed_torque_is_h_times_commanded_acceleration_plus_bias():
    rt = runtime()
    rng = np.random.default_rng(3)
    kp, kd = rng.uniform(10, 200, 7), rng.uniform(1, 30, 7)
    s = settings(rt, command_mode="computed_torque", kp=tuple(kp), kd=tuple(kd), clamp_effort=False)
    for _ in range(5):
        q, v = rng.uniform(-1.5, 1.5, 7), rng.uniform(-1, 1, 7)
        qd, vd, ad = rng.uniform(-1.5, 1.5, 7), rng.uniform(-1, 1, 7), rng.uniform(-2, 2, 7)
        measure(rt, ARM, q, v, 1.0)
        assert rt.law.set_desired(ARM, d(qd), d(vd), d(ad), 1.0) == (effort_law.DESIRED_OK, "")
        nclamped, reason = rt.command(1.0, s)
        assert (nclamped, reason) == (0, None)
        a_cmd = ad + kp * (qd - q) + kd * (vd - v)
        # independent form: H(q) a + b(q, v) (CRBA + bias), and the RNEA form
        expected = rbd.crba(rt.model, q) @ a_cmd + rbd.bias(rt.model, q, v)
        assert rel(rt.cmd, expected) <= TOL
        assert rel(rt.cmd, rbd.rnea(rt.model, q, v, a_cmd)) <= TOL
        assert np.max(np.abs(rt.cmd - rbd.gravity(rt.model, q))) > 1.0  # not the hold


def test_one_gain_value_applies_to_every_joint_and_zero_error_leaves_feedforward_at_q():
    rt = runtime()
    s = settings(rt, command_mode="computed_torque", kp=(50.0,), kd=(7.0,), clamp_effort=False)
    rng = np.random.default_rng(4)
    q, v, a = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    measure(rt, ARM, q, v)
    rt.law.set_desired(ARM, d(q + 0.01), d(v - 0.02), d(a), 0.0)
    rt.command(0.0, s)
    assert rel(rt.cmd, rbd.rnea(rt.model, q, v, a + 50.0 * 0.01 + 7.0 * -0.02)) <= TOL
    # on the trajectory (e = 0): computed torque = RNEA(q, v, a_d) = the feed-forward
    rt.law.set_desired(ARM, d(q), d(v), d(a), 0.0)
    rt.command(0.0, s)
    assert rt.law.feedforward(s)
    assert rel(rt.cmd, rt.ff) <= TOL


def test_feedforward_is_rnea_of_the_desired_state_and_gravity_is_g():
    rt = runtime()
    rng = np.random.default_rng(5)
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    qd, vd, ad = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    measure(rt, ARM, q, v)
    s = settings(rt, command_mode="feedforward", clamp_effort=False)
    rt.law.set_desired(ARM, d(qd), d(vd), d(ad), 0.0)
    assert rt.law.feedforward(s)
    ff = rbd.rnea(rt.model, qd, vd, ad)
    assert rel(rt.ff, ff) <= TOL
    assert rt.command(0.0, s) == (0, None)
    assert rel(rt.cmd, ff) <= TOL
    # empty velocities / accelerations are zero
    rt.law.set_desired(ARM, d(qd), d([]), d([]), 0.0)
    assert rt.law.feedforward(s)
    assert rel(rt.ff, rbd.gravity(rt.model, qd)) <= TOL
    # gravity mode: g(q) at the measured q, whatever the desired state
    s = settings(rt, command_mode="gravity", clamp_effort=False)
    assert rt.command(0.0, s) == (0, None)
    assert rel(rt.cmd, rbd.gravity(rt.model, q)) <= TOL
    # the same buffers every time (the messages share them)
    assert np.shares_memory(rt.cmd, np.frombuffer(rt.buffer("cmd"))) and rt.law.cmd is rt.cmd


def test_friction_adds_exactly_rbd_friction_at_the_right_velocity():
    rt = runtime(arm_urdf(dynamics=True))
    model = rt.model
    assert np.all(model.damping > 0) and np.all(model.friction > 0)
    rng = np.random.default_rng(6)
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-0.05, 0.05, 7)   # inside the tanh knee too
    qd, vd, ad = rng.uniform(-1, 1, 7), rng.uniform(-0.5, 0.5, 7), rng.uniform(-1, 1, 7)
    measure(rt, ARM, q, v)
    eps = 0.02
    base = dict(clamp_effort=False, friction_velocity_eps=eps)
    for mode, expected in (
            ("gravity", rbd.gravity(model, q) + rbd.friction(model, v, velocity_eps=eps)),
            ("feedforward", rbd.rnea(model, qd, vd, ad) + rbd.friction(model, vd, velocity_eps=eps)),
            ("computed_torque", rbd.rnea(model, q, v, ad + 30 * (qd - q) + 4 * (vd - v))
             + rbd.friction(model, v, velocity_eps=eps))):
        s = settings(rt, command_mode=mode, command_friction=True, kp=(30.0,), kd=(4.0,), **base)
        rt.law.set_desired(ARM, d(qd), d(vd), d(ad), 0.0)
        assert rt.command(0.0, s) == (0, None)
        assert rel(rt.cmd, expected) <= TOL, mode
        s_off = settings(rt, command_mode=mode, command_friction=False, kp=(30.0,), kd=(4.0,), **base)
        rt.command(0.0, s_off)
        assert np.min(np.abs(expected - rt.cmd)) > 1e-3, mode  # the term is really there
    # ~/feedforward_torques carries friction at qd_d when command_friction is on
    s = settings(rt, command_mode="gravity", command_friction=True, **base)
    rt.law.set_desired(ARM, d(qd), d(vd), d(ad), 0.0)
    assert rt.law.feedforward(s)
    assert rel(rt.ff, rbd.rnea(model, qd, vd, ad) + rbd.friction(model, vd, velocity_eps=eps)) <= TOL
    # a settings change (friction off) recomputes it for the same desired state
    s = settings(rt, command_mode="gravity", command_friction=False, **base)
    assert rt.law.feedforward(s)
    assert rel(rt.ff, rbd.rnea(model, qd, vd, ad)) <= TOL


def test_missing_or_stale_desired_state_falls_back_to_the_damped_hold_and_recovers():
    rt = runtime()
    rng = np.random.default_rng(7)
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    measure(rt, ARM, q, v, 10.0)
    hold = np.linspace(0.5, 3.5, 7)
    g = rbd.gravity(rt.model, q)
    for mode in ("feedforward", "computed_torque"):
        rt.law.clear_desired()
        s = settings(rt, command_mode=mode, kp=(40.0,), kd=(5.0,), hold_damping=tuple(hold),
                     max_desired_age=0.1, clamp_effort=False, command_friction=True)
        assert rt.command(10.0, s) == (0, effort_law.FALLBACK_MISSING)
        assert rel(rt.cmd, g - hold * v) <= TOL   # no friction term in the hold
        rt.law.set_desired(ARM, d(q + 0.1), d(v), d(np.zeros(7)), 10.0)
        assert rt.command(10.05, s)[1] is None
        assert rel(rt.cmd, g - hold * v) > 1e-3
        assert rt.command(10.1 + 1e-6, s) == (0, effort_law.FALLBACK_STALE)
        assert rel(rt.cmd, g - hold * v) <= TOL
        rt.law.set_desired(ARM, d(q + 0.1), d(v), d(np.zeros(7)), 11.0)  # fresh again
        assert rt.command(11.0, s)[1] is None
        # max_desired_age 0: never stale
        s = settings(rt, command_mode=mode, kp=(40.0,), kd=(5.0,), max_desired_age=0.0)
        assert rt.command(1e6, s)[1] is None
    s = settings(rt, command_mode="gravity", max_desired_age=0.1)
    rt.law.clear_desired()
    assert rt.command(100.0, s) == (0, None)  # gravity needs no desired state


def test_clamping_to_urdf_limits_or_the_parameter_and_counting():
    rt = runtime()
    limit = rt.model.effort_limit
    assert list(limit) == [87, 87, 87, 87, 12, 12, 12]
    q, v = np.full(7, 0.2), np.zeros(7)
    measure(rt, ARM, q, v)
    qd = q.copy()
    qd[1] += 1.0   # joint2 far from target with a big gain: beyond 87 N m
    s = settings(rt, command_mode="computed_torque", kp=(1000.0,), kd=(10.0,))
    rt.law.set_desired(ARM, d(qd), d(np.zeros(7)), d(np.zeros(7)), 0.0)
    raw = rbd.rnea(rt.model, q, v, 1000.0 * (qd - q))
    over = np.abs(raw) > limit
    assert over[1] and over.sum() >= 1
    nclamped, _ = rt.command(0.0, s)
    assert nclamped == over.sum()
    assert np.array_equal(rt.cmd, np.clip(raw, -limit, limit))
    assert rt.cmd[1] == math.copysign(87.0, raw[1])
    # clamp_effort off: the raw command
    s = settings(rt, command_mode="computed_torque", kp=(1000.0,), kd=(10.0,), clamp_effort=False)
    assert rt.command(0.0, s)[0] == 0
    assert rel(rt.cmd, raw) <= TOL
    # effort_limits overrides the URDF (inf: no limit on that joint)
    lim = (5.0, np.inf, 5.0, 5.0, 1.0, 1.0, 1.0)
    s = settings(rt, command_mode="computed_torque", kp=(1000.0,), kd=(10.0,), effort_limits=lim)
    assert s.limit_source == "parameter effort_limits"
    nclamped, _ = rt.command(0.0, s)
    assert np.array_equal(rt.cmd, np.clip(raw, -np.array(lim), np.array(lim)))
    assert rt.cmd[1] == raw[1] and nclamped == int(np.sum(np.abs(raw) > np.array(lim)))
    # the fallback is clamped too
    s = settings(rt, command_mode="computed_torque", kp=(1.0,), kd=(1.0,), effort_limits=(0.5,),
                 max_desired_age=0.1)
    rt.law.clear_desired()
    n, reason = rt.command(0.0, s)
    g = rbd.gravity(rt.model, q)
    assert reason == effort_law.FALLBACK_MISSING and n == int(np.sum(np.abs(g) > 0.5))
    assert np.array_equal(rt.cmd, np.clip(g, -0.5, 0.5))


def test_bad_desired_states_change_nothing():
    rt = runtime()
    rng = np.random.default_rng(8)
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    measure(rt, ARM, q, v)
    s = settings(rt, command_mode="computed_torque", kp=(20.0,), kd=(3.0,), clamp_effort=False)
    qd, vd, ad = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    assert rt.law.set_desired(ARM, d(qd), d(vd), d(ad), 5.0)[0] == effort_law.DESIRED_OK
    rt.command(5.0, s)
    good = rt.cmd.copy()
    saved = (rt.law.qd.copy(), rt.law.vd.copy(), rt.law.ad.copy(), rt.law.named.copy())
    nan = list(qd)
    nan[3] = math.nan
    inf = list(vd)
    inf[6] = -math.inf
    cases = [
        ((ARM[:6] + ["wrist_9"], qd, vd, ad), "unknown joint 'wrist_9'"),
        ((ARM[:6], qd[:6], vd[:6], ad[:6]), "missing joints ['joint7']"),
        ((ARM[:6] + ["joint1"], qd, vd, ad), "'joint1' is listed twice"),
        ((ARM, nan, vd, ad), "positions: not finite for ['joint4']"),
        ((ARM, qd, inf, ad), "velocities: not finite for ['joint7']"),
        ((ARM, qd, vd, [math.nan] * 7), "accelerations: not finite for"),
        ((ARM, qd[:6], vd, ad), "positions has 6 entries for 7"),
        ((ARM, qd, vd[:3], ad), "velocities has 3 entries for 7 joint_names (expected 7 or 0)"),
        ((ARM, qd, vd, list(ad) + [0.0]), "accelerations has 8 entries"),
    ]
    for (names, p, vel, acc), text in cases:
        status, why = rt.law.set_desired(names, d(p), d(vel), d(acc), 6.0)
        assert status == effort_law.DESIRED_BAD and text in why, (status, why)
        for a, b in zip(saved, (rt.law.qd, rt.law.vd, rt.law.ad, rt.law.named)):
            assert np.array_equal(a, b)
        assert rt.law.desired_time == 5.0
        rt.command(5.0, s)
        assert np.array_equal(rt.cmd, good)


def test_subset_of_joints_mimic_and_planar_dofs_by_name():
    """joints = a subset: the message names at least those; unnamed DOFs take the measured
    state (zero acceleration); mimic joint names are ignored."""
    text = random_tree_urdf(11, n_joints=9, types=("revolute", "prismatic", "planar", "continuous"),
                            mimic=2)
    rt0 = runtime(text)
    assert rt0.mimic and any("/" in n for n in rt0.dof_names), (rt0.dof_names, rt0.mimic)
    out = [n for n in rt0.dof_names[::2]]
    rt = runtime(text, joints=out)
    rng = np.random.default_rng(9)
    n = rt.ndof
    q, v = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    measure(rt, rt.dof_names, q, v)
    named = list(out) + [rt.dof_names[1]] + [next(iter(rt.mimic))]
    m = len(named)
    qd, vd, ad = rng.uniform(-1, 1, m), rng.uniform(-1, 1, m), rng.uniform(-1, 1, m)
    assert rt.law.set_desired(named, d(qd), d(vd), d(ad), 0.0) == (effort_law.DESIRED_OK, "")
    s = settings(rt, command_mode="computed_torque", kp=(25.0,), kd=(6.0,), clamp_effort=False)
    assert rt.law.feedforward(s)
    qm, vm, _ = full_state(rt, rt.dof_names, q, v)
    # desired: the named DOFs (not the mimic one), the rest measured
    qf, vf, af = qm.copy(), vm.copy(), np.zeros(rt.model.nv)
    for k, nm in enumerate(named[:-1]):
        i = rt.dof_index[nm]
        qf[rt.dof_q[i]], vf[rt.dof_v[i]], af[rt.dof_v[i]] = qd[k], vd[k], ad[k]
    assert rel(rt.ff, rbd.rnea(rt.model, qf, vf, af)[rt.out_v]) <= TOL
    rt.command(0.0, s)
    a_cmd = af.copy()
    for nm in out:
        i = rt.dof_index[nm]
        a_cmd[rt.dof_v[i]] += 25.0 * (qf[rt.dof_q[i]] - qm[rt.dof_q[i]]) + 6.0 * (vf[rt.dof_v[i]] - vm[rt.dof_v[i]])
    assert rel(rt.cmd, rbd.rnea(rt.model, qm, vm, a_cmd)[rt.out_v]) <= TOL
    # a message without every output joint is refused
    status, why = rt.law.set_desired(named[1:], d(qd[1:]), d([]), d([]), 0.0)
    assert status == effort_law.DESIRED_BAD and f"missing joints ['{out[0]}']" in why


def test_floating_base_stays_at_the_origin_at_rest():
    rt = runtime(floating_base=True)
    assert rt.floating
    rng = np.random.default_rng(10)
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    measure(rt, ARM, q, v)
    qd, vd, ad = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    rt.law.set_desired(ARM, d(qd), d(vd), d(ad), 0.0)
    s = settings(rt, command_mode="computed_torque", kp=(9.0,), kd=(2.0,), clamp_effort=False)
    rt.command(0.0, s)
    qm, vm, _ = full_state(rt, ARM, q, v)
    _, _, a = full_state(rt, ARM, qd, vd, ad + 9.0 * (qd - q) + 2.0 * (vd - v))
    assert np.array_equal(qm[:7], [0, 0, 0, 0, 0, 0, 1]) and not vm[:6].any() and not a[:6].any()
    assert rel(rt.cmd, rbd.rnea(rt.model, qm, vm, a)[rt.out_v]) <= TOL
    assert rt.law.feedforward(s)
    qf, vf, af = full_state(rt, ARM, qd, vd, ad)
    assert rel(rt.ff, rbd.rnea(rt.model, qf, vf, af)[rt.out_v]) <= TOL


def test_continuous_joint_error_is_not_wrapped():
    rt = runtime(arm_urdf(continuous=True))
    assert rt.model.joint_types[0] == "continuous"
    q, v = np.zeros(7), np.zeros(7)
    q[0] = 3.1
    measure(rt, ARM, q, v)
    qd = q.copy()
    qd[0] = -3.1   # 0.083 rad away through +-pi, 6.2 rad by subtraction
    rt.law.set_desired(ARM, d(qd), d([]), d([]), 0.0)
    s = settings(rt, command_mode="computed_torque", kp=(10.0,), kd=(0.0,), clamp_effort=False)
    rt.command(0.0, s)
    assert rel(rt.cmd, rbd.rnea(rt.model, q, v, 10.0 * (qd - q))) <= TOL


def test_settings_refused_with_the_reason():
    rt = runtime(joints=["joint7", "joint2"])
    ok = Params(command_mode="computed_torque", kp=(1.0, 2.0), kd=(3.0,))
    s = effort_law.make_settings(ok, rt)
    assert s.kp[rt.out_v].tolist() == [1.0, 2.0] and s.kd[rt.out_v].tolist() == [3.0, 3.0]
    assert np.count_nonzero(s.kp) == 2
    assert s.limit.tolist() == [12.0, 87.0] and s.limit_source == "URDF"
    bad = [
        (dict(command_mode="torque"), "command_mode: expected one of ['gravity', 'feedforward', 'computed_torque']"),
        (dict(command_mode="computed_torque"), "kp: command_mode computed_torque needs gains"),
        (dict(command_mode="computed_torque", kp=(1.0,)), "kd: command_mode computed_torque needs gains"),
        (dict(kp=(1.0, 2.0, 3.0)), "kp: expected one value or 2 (one per joint in `joints` order "
                                   "['joint7', 'joint2']), got 3"),
        (dict(kd=(1.0, -2.0)), "kd[1] (joint2): expected a finite number >= 0, got -2.0"),
        (dict(kp=(math.nan,)), "kp[0] (joint7): expected a finite number >= 0, got nan"),
        (dict(hold_damping=()), "hold_damping: expected one value or one per joint"),
        (dict(hold_damping=(math.inf,)), "hold_damping[0] (joint7): expected a finite number >= 0"),
        (dict(effort_limits=(1.0, 0.0)), "effort_limits[1] (joint2): expected a number > 0 (inf: no limit), got 0.0"),
        (dict(effort_limits=(-math.inf,)), "effort_limits[0] (joint7): expected a number > 0"),
        (dict(friction_velocity_eps=0.0), "friction_velocity_eps: expected a finite number > 0"),
        (dict(max_desired_age=-1.0), "max_desired_age: expected a finite number >= 0"),
    ]
    for kw, text in bad:
        with pytest.raises(ValueError) as e:
            effort_law.make_settings(dataclasses.replace(Params(), **kw), rt)
        assert text in str(e.value), (kw, str(e.value))


def test_a_new_model_keeps_the_desired_state_when_it_names_the_new_outputs():
    rt1 = runtime()
    rng = np.random.default_rng(12)
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    measure(rt1, ARM, q, v)
    qd, vd, ad = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    rt1.law.set_desired(ARM, d(qd), d(vd), d(ad), 3.0)
    # a payload changes the model (same joints): the desired state carries over
    rt2 = runtime(joints=["joint6", "joint3"])
    rt2.adopt_state(rt1)
    assert rt2.law.desired_time == 3.0
    s = settings(rt2, command_mode="computed_torque", kp=(10.0, 20.0), kd=(1.0, 2.0), clamp_effort=False)
    rt2.compute()
    assert rt2.command(3.0, s) == (0, None)
    a = ad.copy()
    a[[5, 2]] += np.array([10.0, 20.0]) * (qd - q)[[5, 2]] + np.array([1.0, 2.0]) * (vd - v)[[5, 2]]
    assert rel(rt2.cmd, rbd.rnea(rt2.model, q, v, a)[[5, 2]]) <= TOL
    # a desired state that does not name every new output joint is not carried over
    rt3 = runtime(joints=["joint1", "joint2"])
    measure(rt3, ARM, q, v)
    rt3.law.set_desired(["joint1", "joint2"], d(qd[:2]), d([]), d([]), 4.0)
    rt4 = runtime(joints=["joint1", "joint5"])
    rt4.adopt_state(rt3)
    assert rt4.law.desired_time == -math.inf
    s = settings(rt4, command_mode="feedforward")
    rt4.compute()
    assert rt4.command(4.0, s)[1] == effort_law.FALLBACK_MISSING
