"""Identification on exact synthetic data (torques from rbd_ros's own RNEA of a
"true" model): base parameters, identify, identify_payload, excitation
trajectories and the URDF write-back."""
import xml.etree.ElementTree as ET

import numpy as np
import oracle as orc
import pytest
from core_util import random_tree_urdf, rel_err
from urdf_parser_py import urdf as up

import rbd_ros.core as rbd
from rbd_ros.core.estimation import regression as reg
from rbd_ros.core.estimation.excitation import excitation_trajectory
from rbd_ros.core.estimation.identification import ExcitationError, identify
from rbd_ros.core.estimation.payload_identification import identify_payload
from rbd_ros.core.model import inertial as ine
from rbd_ros.core.model.urdf_write import identified_urdf
from rbd_ros.robots import bundled_robot_path

ARM_URDF = bundled_robot_path("rbd_arm7")  # the nominal arm (ident_sim's, without MuJoCo)


EPS = 0.01


@pytest.fixture(scope="module")
def arm():
    return rbd.Model.from_urdf(ARM_URDF)


def perturbed(model, seed, friction=True):
    """The model with every body's mass, com and inertia changed, plus friction and armature."""
    rng = np.random.default_rng(seed)
    P = []
    for row in ine.inertial_parameters(model):
        if row[0] == 0:
            P.append(row)
            continue
        m, c, Ic = ine.to_com(row)
        P.append(ine.from_com(m * rng.uniform(0.7, 1.3), c + rng.uniform(-0.02, 0.02, 3), Ic * rng.uniform(0.7, 1.3)))
    out = ine._rebuilt(model, np.array(P), damping=rng.uniform(0.1, 0.5, model.nv) if friction else None,
                       friction=rng.uniform(0.2, 1.0, model.nv) if friction else None)
    return out.with_armature(rng.uniform(0.05, 0.2, model.nv)) if friction else out


@pytest.fixture(scope="module")
def data(arm):
    tr = excitation_trajectory(arm, 24.0, maxiter=0, seed=1)
    truth = perturbed(arm, 2)
    tau = rbd.rnea(truth, tr.q, tr.v, tr.a) + rbd.friction(truth, tr.v, EPS)
    return tr, truth, tau


def test_base_parameters_reproduce_the_torque(arm):
    base = reg.base_parameters(arm)
    assert 0 < base.rank < reg.n_parameters(arm)
    rng = np.random.default_rng(11)
    Q, V, A = reg.random_states(arm, 30, rng)
    Y = reg.regressor_rows(arm, Q, V, A, EPS).reshape(-1, base.size)
    pi = rng.normal(size=base.size)
    assert rel_err(Y[:, base.independent] @ base.to_base(pi), Y @ pi) <= 1e-10
    assert rel_err(base.matrix @ pi, base.to_base(pi)) <= 1e-12
    other = rng.normal(size=base.size)
    full = base.to_full(base.to_base(pi), other)        # dependent entries from `other`, same torques
    assert np.array_equal(full[base.dependent], other[base.dependent])
    assert rel_err(Y @ full, Y @ pi) <= 1e-10
    # the stacked base regressor has full column rank
    assert np.linalg.matrix_rank(Y[:, base.independent]) == base.rank
    # joint 1's axis is vertical: link1's mass, first moments and Ixx..Iyz never matter
    names = reg.parameter_names(arm, ine.body_link_names(arm))
    dead = {names[i] for k, i in enumerate(base.dependent) if not np.any(base.K[:, k])}
    assert {"link1.m", "link1.mcx", "link1.Ixx", "link1.Iyz"} <= dead


def test_identify_recovers_the_true_robot(arm, data):
    tr, truth, tau = data
    noise = 0.02
    meas = tau + np.random.default_rng(3).normal(scale=noise, size=tau.shape)
    model, rep = identify(arm, tr.q, tr.v, tr.a, meas, velocity_eps=EPS)
    assert np.all(rep.rms_after <= 1.1 * noise) and np.all(rep.rms_before >= 5 * noise)
    assert rep.rms_after.shape == (7,) and rep.n_base == reg.base_parameters(arm).rank
    # gravity on random poses: the true robot's, not the URDF's
    Q, _, _ = reg.random_states(arm, 100, np.random.default_rng(4))
    g_true = np.array([rbd.gravity(truth, q) for q in Q])
    err_id = np.sqrt(np.mean((np.array([rbd.gravity(model, q) for q in Q]) - g_true) ** 2))
    err_nom = np.sqrt(np.mean((np.array([rbd.gravity(arm, q) for q in Q]) - g_true) ** 2))
    assert err_id <= err_nom / 50
    # friction and armature of the joints
    assert np.allclose(model.friction, truth.friction, rtol=0.05, atol=0.01)
    assert np.allclose(model.damping, truth.damping, rtol=0.1, atol=0.01)
    # every body physically consistent; link1's unseen parameters stay at the URDF's
    P = ine.inertial_parameters(model)
    assert np.all(ine.consistency_margin(P) >= -1e-10)
    assert P[0, 4] == pytest.approx(ine.inertial_parameters(arm)[0, 4], rel=1e-3)
    assert "link3" in rep.summary() and len(rep.body_changes()) == 7


def test_the_prior_weight_pulls_toward_the_urdf(arm, data):
    tr, _, tau = data
    sigma = np.full(7, 0.05)            # the prior weighs against the data normalised by these
    strong, _ = identify(arm, tr.q[::4], tr.v[::4], tr.a[::4], tau[::4], velocity_eps=EPS, prior_weight=1e9,
                         joint_noise=sigma)
    weak, _ = identify(arm, tr.q[::4], tr.v[::4], tr.a[::4], tau[::4], velocity_eps=EPS, prior_weight=1e-4,
                       joint_noise=sigma)
    P0 = ine.inertial_parameters(arm)
    assert np.abs(ine.inertial_parameters(strong) - P0).sum() < 0.2 * np.abs(ine.inertial_parameters(weak) - P0).sum()


def test_too_little_excitation_is_refused(arm, data):
    tr, _, tau = data
    still = tr.q.copy()
    still[:, 4:] = tr.q[0, 4:]          # wrist joints never move
    v, a = tr.v.copy(), tr.a.copy()
    v[:, 4:] = a[:, 4:] = 0.0
    # counted as moving (min_moving_fraction=0), their columns are zero: the condition number says so
    with pytest.raises(ExcitationError, match="condition number"):
        identify(arm, still, v, a, tau, friction=False, max_condition=1e3, min_moving_fraction=0.0)
    # strict: refused, naming them
    with pytest.raises(ExcitationError, match=r"joints \['joint5', 'joint6', 'joint7'\] do not move .* 0 %, 0 %, 0 %"):
        identify(arm, still, v, a, tau, strict=True)
    for bad in (1.5, None, float("nan")):
        with pytest.raises(ValueError, match="min_moving_fraction"):
            identify(arm, still, v, a, tau, min_moving_fraction=bad)
    # a robot at rest: nothing to identify
    with pytest.raises(ExcitationError, match="no joint moves"):
        identify(arm, np.tile(tr.q[0], (200, 1)), np.zeros((200, 7)), np.zeros((200, 7)), tau[:200])


# ------------------------------------------------------------------ joints that do not move

def _element(text, tag, name):
    """The text of the URDF element <tag name="name" ...>...</tag>."""
    import re
    m = re.search(rf'<{tag} name="{re.escape(name)}"[ >].*?</{tag}>', text, flags=re.S)
    assert m, (tag, name)
    return m.group(0)


def _held(model, truth, still_joints, seconds, seed, brake=4.0):
    """An excitation of ``model`` with the joints ``still_joints`` held at their centre: q, v, a
    and the true robot's torques with noise (0.02), plus ``brake`` on the held joints (their
    torque is not the model's: a brake or stiction holds them)."""
    tr = excitation_trajectory(model, seconds, maxiter=0, seed=seed)
    j = [model.v_index(n) for n in still_joints]
    q, v, a = tr.q.copy(), tr.v.copy(), tr.a.copy()
    q[:, j], v[:, j], a[:, j] = tr.center[j], 0.0, 0.0
    tau = rbd.rnea(truth, q, v, a) + rbd.friction(truth, v, EPS)
    tau[:, j] += brake
    return q, v, a, tau + np.random.default_rng(seed).normal(scale=0.02, size=tau.shape)


def _check_still_identification(model0, truth, still_joints, text, mimic=True):
    """identify on a recording with ``still_joints`` held: the moving part equals the truth, the
    held part keeps the URDF's values, the report says so, and the write-back reloads to the
    identified model with the held joints' and kept links' elements unchanged."""
    q, v, a, tau = _held(model0, truth, still_joints, 20.0, seed=1)
    with pytest.raises(ExcitationError, match="do not move"):
        identify(model0, q, v, a, tau, velocity_eps=EPS, strict=True)
    model, rep = identify(model0, q, v, a, tau, velocity_eps=EPS, max_condition=1e3)
    held = [model0.v_index(n) for n in still_joints]
    moving = np.setdiff1d(np.arange(model0.nv), held)
    names = ine.body_link_names(model0)
    kept = [i for i in range(model0.nbodies) if model0.tree.v_index[i] in held]
    assert rep.still_dofs == list(still_joints) and sorted(rep.kept_bodies) == kept
    assert set(rep.identified_bodies).isdisjoint(kept)
    assert np.all(rep.rows_used[held] == 0) and np.all(rep.rows_used[moving] > 0)
    lines = rep.not_identified()
    assert len(lines) == len(still_joints) + len(kept)
    summary = rep.summary()
    for n in still_joints:
        assert f"joint {n}: still" in summary
    for i in kept:
        assert f"body {names[i]}: moved only by still joints" in summary
    # what moves is the truth's: torques on another recording held the same way, friction
    q2, v2, a2, _ = _held(model0, truth, still_joints, 8.0, seed=5)
    true_tau = rbd.rnea(truth, q2, v2, a2) + rbd.friction(truth, v2, EPS)
    err = (rbd.rnea(model, q2, v2, a2) + rbd.friction(model, v2, EPS) - true_tau)[:, moving]
    err0 = (rbd.rnea(model0, q2, v2, a2) + rbd.friction(model0, v2, EPS) - true_tau)[:, moving]
    assert np.sqrt(np.mean(err ** 2)) <= np.sqrt(np.mean(err0 ** 2)) / 50
    assert np.allclose(model.friction[moving], truth.friction[moving], rtol=0.05, atol=0.01)
    assert np.allclose(model.damping[moving], truth.damping[moving], rtol=0.1, atol=0.01)
    # what is held keeps the URDF's values exactly (friction, armature; the bodies only it moves)
    for x, x0 in ((model.friction, model0.friction), (model.damping, model0.damping),
                  (model.armature, model0.armature)):
        assert np.array_equal(x[held], x0[held])
    P, P0 = ine.inertial_parameters(model), ine.inertial_parameters(model0)
    assert np.array_equal(P[kept], P0[kept])
    assert np.all(ine.consistency_margin(P) >= -1e-10)
    # the write-back: reloads to the identified model; the held joints' and kept links' text untouched
    moving_joints = [n for n in model0.joint_names if n not in still_joints]
    out, _ = identified_urdf(text, model, bodies=rep.identified_bodies, dynamics=True, joints=moving_joints)
    back = rbd.Model.from_urdf(out, mimic=mimic)
    assert rel_err(ine.inertial_parameters(back), P) <= 1e-10
    assert np.allclose(back.friction, model.friction, rtol=1e-11) and np.allclose(back.damping, model.damping,
                                                                                  rtol=1e-11)
    for n in still_joints:
        assert _element(out, "joint", n) == _element(text, "joint", n)
    for i in kept:
        assert _element(out, "link", names[i]) == _element(text, "link", names[i])
    assert _element(out, "link", names[rep.identified_bodies[-1]]) != _element(text, "link",
                                                                               names[rep.identified_bodies[-1]])
    return rep


@pytest.mark.parametrize("lock", ["joint4", "joint7"])
def test_a_locked_joint_keeps_its_urdf_values_and_the_rest_is_identified(arm, lock):
    """The bundled arm with one joint locked (a brake holds it): issue 22, item 5."""
    rep = _check_still_identification(arm, perturbed(arm, 2), [lock], open(ARM_URDF).read())
    assert [ine.body_link_names(arm)[i] for i in rep.kept_bodies] == ["link" + lock[-1]]


def test_a_still_joints_torque_is_never_fitted(arm):
    """Without friction in the model no row is left out for being slow: a held joint's rows
    (here a brake's 4 N m) are left out all the same, so the fit is the truth's."""
    truth = perturbed(arm, 3, friction=False)
    q, v, a, tau = _held(arm, truth, ["joint4"], 12.0, seed=2)
    model, rep = identify(arm, q, v, a, tau, friction=False, armature=False, max_condition=1e3)
    assert rep.rows_used[3] == 0 and np.all(rep.rows_used[np.arange(7) != 3] == len(q))
    assert np.all(np.delete(rep.rms_after, 3) <= 1.1 * 0.02)
    q2, v2, a2, _ = _held(arm, truth, ["joint4"], 6.0, seed=6)
    err = np.delete(rbd.rnea(model, q2, v2, a2) - rbd.rnea(truth, q2, v2, a2), 3, axis=1)
    assert np.sqrt(np.mean(err ** 2)) <= 0.01


@pytest.mark.parametrize("mimic", [False, True])
def test_panda_with_still_fingers_is_identified(mimic):
    """The panda (example-robot-data) recorded with its gripper fingers still: identified by
    default, the fingers keep their URDF values (issue 22, item 5).  ``mimic=False``: both
    finger joints are DOFs; True: the second mimics the first."""
    text = open(orc.robot_urdf("panda")).read()
    panda = rbd.Model.from_urdf(text, mimic=mimic)
    fingers = [n for n in panda.joint_names if "finger" in n]
    assert len(fingers) == (1 if mimic else 2)
    rep = _check_still_identification(panda, perturbed(panda, 2), fingers, text, mimic=mimic)
    assert {ine.body_link_names(panda)[i] for i in rep.kept_bodies} == {"panda_leftfinger", "panda_rightfinger"}


def test_base_parameters_of_data_with_a_still_joint(arm):
    """With joint4 held, link4 cannot be told from link3: base parameters of such data, and a
    sentinel (held nowhere: the ordinary base parameters)."""
    still = np.zeros(7, bool)
    still[3] = True
    p = reg.n_parameters(arm)
    free = np.arange(10 * arm.nbodies)
    full = reg.base_parameters(arm, free=free)
    held = reg.base_parameters(arm, free=free, still=still, q_still=np.full(7, 0.3))
    assert held.rank < full.rank
    assert reg.base_parameters(arm, free=free, still=np.zeros(7, bool), q_still=None).rank == full.rank
    # with link4's 10 parameters out of the fit the rank left is that of the held data
    rest = np.setdiff1d(free, np.arange(30, 40))
    assert reg.base_parameters(arm, free=rest, still=still, q_still=np.full(7, 0.3)).rank == held.rank
    assert p == 10 * arm.nbodies + 3 * 7


def test_bad_arguments_name_the_field(arm, data):
    tr, _, tau = data
    with pytest.raises(ValueError, match=r"tau: expected shape \(N, 7\)"):
        identify(arm, tr.q, tr.v, tr.a, tau[:, :3])
    bad = tau.copy()
    bad[5, 2] = np.nan
    with pytest.raises(ValueError, match=r"tau\[5, 2\] is nan"):
        identify(arm, tr.q, tr.v, tr.a, bad)
    with pytest.raises(ValueError, match="bodies"):
        identify(arm, tr.q, tr.v, tr.a, tau, bodies=["nope"])


@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_identify_payload_on_exact_data(arm, noise):
    tr = excitation_trajectory(arm, 20.0, maxiter=0, seed=5)
    loaded = arm.with_payload("flange", 1.5, [0.0, 0.0, 0.05], [4e-3, 0, 0, 4e-3, 0, 2e-3])
    tau = rbd.rnea(loaded, tr.q, tr.v, tr.a) + np.random.default_rng(6).normal(scale=noise, size=(len(tr.t), 7))
    est = identify_payload(arm, "flange", tr.q, tr.v, tr.a, tau)
    assert abs(est.mass - 1.5) <= (1e-9 if noise == 0 else 0.005)
    assert np.linalg.norm(est.com - [0, 0, 0.05]) <= (1e-9 if noise == 0 else 5e-4)
    if noise:
        assert 0.3 < abs(est.mass - 1.5) / est.mass_std < 4 or abs(est.mass - 1.5) < 3 * est.mass_std
        assert np.all(est.rms_after <= 1.1 * noise)
    assert "payload on 'flange'" in est.summary()


def test_identify_payload_rejects_bad_links(arm):
    z = np.zeros((10, 7))
    with pytest.raises(ValueError, match="not a link"):
        identify_payload(arm, "flang", z, z, z, z)
    with pytest.raises(ValueError, match="fixed to the world"):
        identify_payload(arm, "link0", z, z, z, z)


def test_excitation_trajectory_stays_within_the_limits(arm):
    tr = excitation_trajectory(arm, 12.0, harmonics=3, acceleration_limit=4.0, maxiter=2, n_starts=3, n_eval=40)
    lo, hi = arm.position_limit[:, 0], arm.position_limit[:, 1]
    assert np.all(tr.q >= lo) and np.all(tr.q <= hi)
    assert np.all(np.abs(tr.v) <= arm.velocity_limit + 1e-12) and np.all(np.abs(tr.a) <= 4.0 + 1e-9)
    assert np.allclose(tr.v[[0, -1]], 0, atol=1e-12) and np.allclose(tr.q[0], tr.center)
    assert tr.condition_number <= tr.initial_condition_number
    # every joint uses one of its limits fully (the scale is the largest feasible)
    used = np.maximum.reduce([np.abs(tr.q - tr.center).max(0) / (0.9 * (hi - lo) / 2),
                              np.abs(tr.v).max(0) / arm.velocity_limit, np.abs(tr.a).max(0) / 4.0])
    assert np.all(used > 0.97)
    # the derivatives are the trajectory's
    assert rel_err(np.gradient(tr.q, tr.t, axis=0)[5:-5], tr.v[5:-5]) < 1e-4
    q, v, a = tr.at(tr.t[100:103])
    assert np.allclose(q, tr.q[100:103]) and np.allclose(a, tr.a[100:103])


def test_excitation_trajectory_refuses_planar_joints():
    with pytest.raises(ValueError, match="planar"):
        excitation_trajectory(rbd.Model.from_urdf(random_tree_urdf(3, n_joints=10)), 10.0)


# ------------------------------------------------------------------ write-back

def _outside_edits_equal(a, b):
    """a and b are equal once every <inertial> element and <dynamics> tag is cut out (and lines left
    empty by the cuts dropped)."""
    import re

    def cut(x):
        x = re.sub(r"<inertial>.*?</inertial>", "", x, flags=re.S)
        x = re.sub(r"<dynamics[^>]*>", "", x)
        return "\n".join(line for line in x.split("\n") if line.strip())
    return cut(a) == cut(b)


@pytest.mark.parametrize("which", ["arm", "panda", "random"])
def test_write_back_reloads_to_the_identified_model(which):
    text = {"arm": lambda: open(ARM_URDF).read(), "panda": lambda: open(orc.robot_urdf("panda")).read(),
            "random": lambda: random_tree_urdf(3, n_joints=10, mimic=2)}[which]()
    model = rbd.Model.from_urdf(text)
    new = perturbed(model, 7, friction=False)
    one_axis = np.concatenate([[t not in ("floating", "planar")] * n for t, n in zip(model.joint_types,
                                                                                    model.joint_nv)])
    rng = np.random.default_rng(8)
    new = ine._rebuilt(new, ine.inertial_parameters(new), damping=np.where(one_axis, rng.uniform(0, 1, model.nv), 0),
                       friction=np.where(one_axis, rng.uniform(0, 1, model.nv), 0))
    out, notes = identified_urdf(text, new, dynamics=True)
    back = rbd.Model.from_urdf(out)
    assert rel_err(ine.inertial_parameters(back), ine.inertial_parameters(new)) <= 1e-10
    assert np.allclose(back.damping, new.damping, rtol=1e-11) and np.allclose(back.friction, new.friction, rtol=1e-11)
    robot = up.URDF.from_xml_string(out.encode())
    assert {link.name for link in robot.links} == set(model.link_names)
    assert _outside_edits_equal(text, out)
    if which == "random":            # a body of two links whose remainder is not a body: folded, and said so
        assert notes and "written whole" in notes[0]
    if which == "panda":             # Gazebo's extra <dynamics> attributes stay
        assert 'mu_viscous="16"' in out and 'K="7000"' in out


def test_write_back_keeps_other_links_when_the_remainder_is_a_body():
    text = random_tree_urdf(3, n_joints=10, mimic=2)
    model = rbd.Model.from_urdf(text)
    P = ine.inertial_parameters(model)
    P[P[:, 0] > 0, 0] *= 1.0            # nothing changes: every remainder is the link's own inertial
    out, notes = identified_urdf(text, ine.with_inertial_parameters(model, P))
    assert notes == []
    assert len(ET.fromstring(out).findall("link/inertial")) == len(ET.fromstring(text).findall("link/inertial"))
    assert rel_err(ine.inertial_parameters(rbd.Model.from_urdf(out)), P) <= 1e-10
