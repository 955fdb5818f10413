"""Payload, armature, friction and limits in rbd_ros.core (issue 10).

Payload and armature are checked against Pinocchio: the payload's inertia is
added to the inertia of the Pinocchio joint that carries the link, at the
link's frame placement; the armature goes into ``pin_model.armature`` (0 on
mimic joints, whose master's value is the DOF's).  Friction is checked by
its formula, limits against the URDF read here with xml.etree.
"""
import re
import xml.etree.ElementTree as ET

import numpy as np
import oracle as orc
import pinocchio as pin
import pytest
from core_util import random_tree_urdf

import rbd_ros.core as rbd

TOL = 1e-9
RANDOM_URDF = random_tree_urdf(7, 10, types=("revolute", "continuous", "prismatic", "fixed"), mimic=2)

# (id, urdf, floating_base, mimic)
CASES = [
    ("panda", "panda", False, True),
    ("ur5", "ur5", False, True),
    ("talos", "talos_full_v2", True, True),
    ("talos-nomimic", "talos_full_v2", True, False),
    ("random-tree", None, False, True),
    ("solo12", "solo12", True, True),
]


def _urdf(robot):
    return RANDOM_URDF if robot is None else orc._urdf_text(orc.robot_urdf(robot))


def _payload_links(model, oracle):
    """Two links to load: the deepest link, and a link merged by a fixed joint
    (or a mimic joint's child when there is one)."""
    info = orc.UrdfInfo.parse(oracle.urdf)
    root = ET.fromstring(oracle.urdf)
    fixed_children = [j.find("child").get("link") for j in root.findall("joint") if j.get("type") == "fixed"]
    mimic_children = [j.find("child").get("link") for j in root.findall("joint")
                      if j.get("name") in info.mimic]
    links = [oracle.deepest_link()]
    for cand in mimic_children + fixed_children:
        if cand not in links and model.links[model.link_index(cand)].body >= 0:
            links.append(cand)
            break
    return links


def _payload(rng):
    m = rng.uniform(0.3, 2.0)
    com = rng.uniform(-0.1, 0.1, 3)
    p = rng.uniform(0.005, 0.02, 3)
    p[2] = rng.uniform(abs(p[0] - p[1]), p[0] + p[1])     # a rigid body's principal moments
    A = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    return m, com, A @ np.diag(p) @ A.T


def _pin_add_payload(pm, link, m, com, I):
    fid = pm.getFrameId(link)
    assert fid < pm.nframes, link
    fr = pm.frames[fid]
    j = fr.parentJoint
    pm.inertias[j] = pm.inertias[j] + fr.placement.act(pin.Inertia(m, np.asarray(com), np.asarray(I)))


def _pin_armature(oracle, model, arm):
    """Our per-DOF armature in Pinocchio's full velocity order (0 on mimic joints)."""
    pm = oracle.model
    full = np.zeros(pm.nv)
    for k, name in enumerate(model.joint_names):
        if model.joint_types[k] == "floating" and name == "root_joint":
            continue
        jid = pm.getJointId(name)
        full[pm.idx_vs[jid]:pm.idx_vs[jid] + pm.nvs[jid]] = arm[model.idx_v[k]:model.idx_v[k] + model.joint_nv[k]]
    return full


class Case:
    def __init__(self, robot, floating, mimic):
        self.urdf = _urdf(robot)
        self.base = rbd.Model.from_urdf(self.urdf, floating_base=floating, mimic=mimic)
        rng = np.random.default_rng(2024)
        self.oracle = orc.Oracle(self.urdf, floating, mimic, layout=self.base)
        self.links = _payload_links(self.base, self.oracle)
        self.payloads = {link: _payload(rng) for link in self.links}
        arm = rng.uniform(0.05, 0.5, self.base.nv)
        for k, t in enumerate(self.base.joint_types):
            if t == "floating":
                arm[self.base.idx_v[k]:self.base.idx_v[k] + 6] = 0.0
        self.arm = arm
        m = self.base
        for link, p in self.payloads.items():
            m = m.with_payload(link, *p)
        self.model = m.with_armature(arm)
        pm = self.oracle.model
        for link, p in self.payloads.items():
            _pin_add_payload(pm, link, *p)
        pm.armature = _pin_armature(self.oracle, self.base, arm)
        self.oracle.data = pm.createData()
        self.states = [self.oracle.random_state(rng) for _ in range(3)]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def case(request):
    _, robot, floating, mimic = request.param
    return Case(robot, floating, mimic)


def assert_close(what, got, ref, tol=TOL):
    got = np.asarray(got)
    assert got.shape == np.shape(ref), f"{what}: shape {got.shape}, expected {np.shape(ref)}"
    assert np.all(np.isfinite(got)), f"{what}: non-finite values"
    err = orc.rel_err(got, ref)
    assert err <= tol, f"{what}: relative error {err:.3e} > {tol:g}"


# ------------------------------------------------------------- payload + armature vs Pinocchio
def test_terms_change_the_numbers(case):
    """Sentinel: without the payload and armature the reference differs."""
    q, v, a, _ = case.states[0]
    assert orc.rel_err(rbd.rnea(case.base, q, v, a), case.oracle.rnea(q, v, a)) > 1e-4
    assert orc.rel_err(rbd.crba(case.base, q), case.oracle.crba(q)) > 1e-4
    assert case.model.mass == pytest.approx(case.base.mass + sum(p[0] for p in case.payloads.values()), rel=1e-14)


def test_rnea_gravity_bias(case):
    o = case.oracle
    for q, v, a, _ in case.states:
        assert_close("rnea", rbd.rnea(case.model, q, v, a), o.rnea(q, v, a))
        assert_close("gravity", rbd.gravity(case.model, q), o.gravity(q))
        assert_close("bias", rbd.bias(case.model, q, v), o.bias(q, v))


def test_crba_has_the_armature_diagonal(case):
    o = case.oracle
    for q, *_ in case.states:
        H = rbd.crba(case.model, q)
        assert_close("crba", H, o.crba(q))
        # the armature is exactly a diagonal term
        Hp = rbd.crba(case.model.with_armature(np.zeros(case.model.nv)), q)
        assert_close("crba armature diagonal", H - Hp, np.diag(case.arm), 1e-12)


@pytest.mark.parametrize("fn", ["forward_dynamics", "aba"])
def test_forward_dynamics_and_aba(case, fn):
    o = case.oracle
    for q, v, _, tau in case.states:
        qdd = getattr(rbd, fn)(case.model, q, v, tau)
        assert_close(fn, qdd, o.forward_dynamics(q, v, tau), 1e-8)
        r, scale = o.fd_residual(q, v, qdd, tau)
        assert np.max(np.abs(r)) / scale <= TOL, f"{fn}: residual {np.max(np.abs(r)) / scale:.3e}"


def test_aba_vs_pinocchio_aba(case):
    """pin.aba itself where there is no mimic reduction (the oracle falls back to
    the reduced CRBA solve otherwise: pin.aba has no mimic constraints)."""
    o = case.oracle
    q, v, _, tau = case.states[0]
    assert_close("aba vs pin.aba", rbd.aba(case.model, q, v, tau), o.aba(q, v, tau), 1e-8)


def test_compensation_into_and_batches(case):
    m, o = case.model, case.oracle
    dofs = rbd.dof_indices(m)
    Q = np.array([s[0] for s in case.states])
    V = np.array([s[1] for s in case.states])
    A = np.array([s[2] for s in case.states])
    T = np.array([s[3] for s in case.states])
    for q, v, *_ in case.states:
        g, b, H = np.empty(m.nv), np.empty(m.nv), np.empty((m.nv, m.nv))
        rbd.compensation_into(m, q, v, dofs, g, b, H)
        assert_close("compensation g", g, o.gravity(q))
        assert_close("compensation b", b, o.bias(q, v))
        assert_close("compensation H", H, o.crba(q))
    ref_tau = np.array([o.rnea(*s[:3]) for s in case.states])
    assert_close("rnea batch", rbd.rnea(m, Q, V, A), ref_tau)
    assert_close("crba batch", rbd.crba(m, Q), np.array([o.crba(q) for q in Q]))
    assert_close("gravity batch", rbd.gravity(m, Q), np.array([o.gravity(q) for q in Q]))
    ref_qdd = np.array([o.forward_dynamics(*s[:2], s[3]) for s in case.states])
    assert_close("forward_dynamics batch", rbd.forward_dynamics(m, Q, V, T), ref_qdd, 1e-8)
    assert_close("aba batch", rbd.aba(m, Q, V, T), ref_qdd, 1e-8)


def test_removing_payloads_restores_the_model_exactly(case):
    m = case.model
    for link in case.links:
        m = m.without_payload(link)
    assert m.payloads == {}
    bare = case.base.with_armature(case.arm)
    assert np.array_equal(m.mi, bare.mi)
    assert m.mass == bare.mass
    q, v, a, _ = case.states[0]
    assert np.array_equal(rbd.rnea(m, q, v, a), rbd.rnea(bare, q, v, a))
    assert np.array_equal(m.armature, case.arm)


# ------------------------------------------------------------- payload specifics
@pytest.fixture(scope="module")
def panda():
    return rbd.Model.from_urdf(orc.robot_urdf("panda"))


def test_payload_on_fixed_merged_links_lands_on_the_moving_parent(panda):
    """panda_hand and panda_link8 hang from panda_link7 by fixed joints: the same
    physical payload given in either frame gives the same torques."""
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, panda.nv)
    m, com, I = _payload(rng)
    hand, link8 = panda.links[panda.link_index("panda_hand")], panda.links[panda.link_index("panda_link8")]
    assert hand.body == link8.body >= 0
    # hand frame -> link8 frame: R = R8^T R_hand, p = R8^T (p_hand - p8)
    R = link8.R.T @ hand.R
    p = link8.R.T @ (hand.p - link8.p)
    g_hand = rbd.gravity(panda.with_payload("panda_hand", m, com, I), q)
    g_8 = rbd.gravity(panda.with_payload("panda_link8", m, p + R @ com, R @ I @ R.T), q)
    assert_close("same payload in two frames", g_hand, g_8, 1e-12)
    assert orc.rel_err(g_hand, rbd.gravity(panda, q)) > 1e-3


def test_second_payload_on_a_link_replaces_the_first(panda):
    q = np.linspace(-1, 1, panda.nv)
    m1 = panda.with_payload("panda_hand", 1.0, [0, 0, 0.1], np.eye(3) * 1e-3)
    m2 = m1.with_payload("panda_hand", 0.5, [0, 0, 0.05], [1e-3, 0, 0, 1e-3, 0, 1e-3])
    ref = panda.with_payload("panda_hand", 0.5, [0, 0, 0.05], np.eye(3) * 1e-3)
    assert np.array_equal(rbd.gravity(m2, q), rbd.gravity(ref, q))
    assert set(m2.payloads) == {"panda_hand"} and m2.payloads["panda_hand"][0] == 0.5
    assert m2.mass == pytest.approx(panda.mass + 0.5, rel=1e-15)
    # payloads on two links compose, and the original model is untouched
    m3 = m2.with_payload("panda_link3", 2.0, [0.1, 0, 0], np.eye(3) * 1e-2)
    assert set(m3.payloads) == {"panda_hand", "panda_link3"}
    assert panda.payloads == {} and m1.payloads["panda_hand"][0] == 1.0
    with pytest.raises(TypeError):
        m3.payloads["panda_link4"] = (1.0, np.zeros(3), np.eye(3))     # read-only: use with_payload


def test_payload_on_a_link_fixed_to_the_world(panda):
    """panda_link0 is the fixed base: no torque changes, the mass counts."""
    q = np.linspace(-1, 1, panda.nv)
    m = panda.with_payload("panda_link0", 5.0, [0, 0, 0.1], np.eye(3) * 1e-2)
    assert np.array_equal(rbd.gravity(m, q), rbd.gravity(panda, q))
    assert m.mass == pytest.approx(panda.mass + 5.0)


def test_payload_on_a_floating_base_link():
    urdf = orc.robot_urdf("solo12")
    model = rbd.Model.from_urdf(urdf, floating_base=True)
    root = model.link_names[0] if model.links[0].body == 0 else \
        next(n for n, li in zip(model.link_names, model.links) if li.body == 0)
    m = model.with_payload(root, 2.0, [0, 0, 0.05], np.eye(3) * 1e-2)
    q = model.neutral()
    g0, g1 = rbd.gravity(model, q), rbd.gravity(m, q)
    assert g1[2] - g0[2] == pytest.approx(2.0 * 9.81, rel=1e-12)   # vertical force on the base


@pytest.mark.parametrize("kwargs, words", [
    (dict(mass=-1.0), ["mass", ">= 0"]),
    (dict(mass=float("nan")), ["mass", "finite"]),
    (dict(mass="heavy"), ["mass", "number"]),
    (dict(com=[0, float("inf"), 0]), ["com", "finite"]),
    (dict(com=[0, 0]), ["com", "3 numbers"]),
    (dict(inertia=[1, 0, 0, 1, 0]), ["inertia", "3x3", "6 numbers"]),
    (dict(inertia=[1, 0, 0, float("nan"), 0, 1]), ["inertia", "finite"]),
    (dict(inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), ["inertia", "symmetric"]),
    (dict(inertia=[-1e-2, 0, 0, 1e-2, 0, 1e-2]), ["inertia", "positive semi-definite"]),
    (dict(inertia=[1e-3, 0, 0, 1e-3, 0, 5e-3]), ["inertia", "triangle inequality"]),
    (dict(link="panda_hnad"), ["link", "panda_hnad", "panda_hand"]),
])
def test_bad_payloads_are_refused_naming_the_field(panda, kwargs, words):
    args = dict(link="panda_hand", mass=1.0, com=[0, 0, 0.1], inertia=np.eye(3) * 1e-3)
    args.update(kwargs)
    with pytest.raises(ValueError) as e:
        panda.with_payload(args["link"], args["mass"], args["com"], args["inertia"])
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_without_payload_on_a_bare_link_is_an_error(panda):
    with pytest.raises(ValueError, match="panda_hand.*no payload"):
        panda.without_payload("panda_hand")


def test_payload_build_does_not_parse_again():
    """The links, names and tables are shared; only one body row of md changes."""
    model = rbd.Model.from_urdf(orc.robot_urdf("talos_full_v2"), floating_base=True)
    m = model.with_payload("gripper_left_base_link", 1.0, [0, 0, -0.1], np.eye(3) * 1e-3)
    assert m.links is model.links and m.joint_names is model.joint_names
    assert m.effort_limit is model.effort_limit
    diff = np.flatnonzero(m.mi != model.mi)
    assert 0 < diff.size <= 13       # one body row's inertia: m, h, Ibar


# ------------------------------------------------------------- armature specifics
def test_armature_dict_array_and_from_urdf_agree(panda):
    names = panda.joint_names
    d = {names[0]: 0.2, names[3]: 0.1}
    arr = np.zeros(panda.nv)
    arr[panda.v_index(names[0])], arr[panda.v_index(names[3])] = 0.2, 0.1
    a1 = panda.with_armature(d)
    a2 = panda.with_armature(arr)
    a3 = rbd.Model.from_urdf(orc.robot_urdf("panda"), armature=d)
    for m in (a1, a2, a3):
        assert np.array_equal(m.armature, arr)
        assert not m.armature.flags.writeable
    assert np.array_equal(a1.mi, a2.mi) and np.array_equal(a1.mi, a3.mi)
    assert np.array_equal(panda.armature, np.zeros(panda.nv))
    # gravity and bias do not see the armature; tau does, by armature * a
    q, v, a = np.linspace(-1, 1, panda.nv), np.linspace(1, -1, panda.nv), np.linspace(-2, 3, panda.nv)
    assert np.array_equal(rbd.gravity(a1, q), rbd.gravity(panda, q))
    assert np.array_equal(rbd.bias(a1, q, v), rbd.bias(panda, q, v))
    assert_close("rnea armature", rbd.rnea(a1, q, v, a) - rbd.rnea(panda, q, v, a), arr * a, 1e-12)
    # armature and payload survive each other and with_gravity
    m = a1.with_payload("panda_hand", 1.0, [0, 0, 0.1], np.eye(3) * 1e-3).with_gravity([0, 0, -1.62])
    assert np.array_equal(m.armature, arr) and "panda_hand" in m.payloads
    assert np.allclose(m.gravity, [0, 0, -1.62])
    m2 = m.without_payload("panda_hand")
    assert np.array_equal(m2.mi, a1.with_gravity([0, 0, -1.62]).mi)


def test_armature_makes_a_massless_joint_solvable():
    urdf = ('<robot name="r"><link name="b"/><link name="l"/>'
            '<joint name="j" type="revolute"><parent link="b"/><child link="l"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    m = rbd.Model.from_urdf(urdf)
    with pytest.raises(ValueError, match="singular"):
        rbd.aba(m, [0.0], [0.0], [1.0])
    m = m.with_armature([0.5])
    assert rbd.aba(m, [0.0], [0.0], [1.0])[0] == pytest.approx(2.0)
    assert rbd.forward_dynamics(m, [0.0], [0.0], [1.0])[0] == pytest.approx(2.0)


@pytest.mark.parametrize("arm, words", [
    ({"panda_joint1": -0.1}, ["armature", "panda_joint1", ">= 0"]),
    ({"panda_joint1": float("inf")}, ["armature", "panda_joint1", "finite"]),
    ({"panda_jiont1": 0.1}, ["armature", "panda_jiont1", "panda_joint1"]),
    ({"panda_finger_joint2": 0.1}, ["armature", "mimic", "panda_finger_joint1"]),
    ([0.1, 0.2], ["armature", "8 numbers"]),
    ([0.1] * 7 + [float("nan")], ["armature[7]", "finite"]),
])
def test_bad_armature_is_refused_naming_the_field(panda, arm, words):
    with pytest.raises(ValueError) as e:
        panda.with_armature(arm)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_floating_joint_takes_no_armature():
    m = rbd.Model.from_urdf(orc.robot_urdf("solo12"), floating_base=True)
    with pytest.raises(ValueError, match="root_joint.*floating"):
        m.with_armature({"root_joint": 1.0})


# ------------------------------------------------------------- friction
def _with_dynamics(text, values):
    root = ET.fromstring(text)
    for j in root.findall("joint"):
        if j.get("name") in values:
            for old in j.findall("dynamics"):
                j.remove(old)
            d, f = values[j.get("name")]
            ET.SubElement(j, "dynamics", {"damping": repr(d), "friction": repr(f)})
    return ET.tostring(root, encoding="unicode")


def test_friction_is_its_formula():
    text = orc._urdf_text(orc.robot_urdf("panda"))
    base = rbd.Model.from_urdf(text)
    values = {n: (0.1 * (k + 1), 0.5 * (k + 1)) for k, n in enumerate(base.joint_names[:7])}
    m = rbd.Model.from_urdf(_with_dynamics(text, values))
    d = np.array([values[n][0] for n in m.joint_names[:7]] + [m.damping[7]])
    f = np.array([values[n][1] for n in m.joint_names[:7]] + [m.friction[7]])
    assert np.array_equal(m.damping, d) and np.array_equal(m.friction, f)
    rng = np.random.default_rng(5)
    v = rng.uniform(-0.01, 0.01, m.nv)
    for eps in (1e-3, 0.05):
        assert_close("friction", rbd.friction(m, v, velocity_eps=eps), d * v + f * np.tanh(v / eps), 1e-15)
    V = rng.uniform(-1, 1, (4, m.nv))
    assert_close("friction batch", rbd.friction(m, V), d * V + f * np.tanh(V / 1e-3), 1e-15)
    # the Coulomb part has the sign of the velocity and saturates at `friction`
    assert np.allclose(rbd.friction(m, np.full(m.nv, 1.0)) - d, f, rtol=1e-12)
    assert np.array_equal(rbd.friction(m, np.zeros(m.nv)), np.zeros(m.nv))
    # not part of rnea / bias
    q = np.zeros(m.nv)
    assert np.array_equal(rbd.bias(m, q, V[0]), rbd.bias(base, q, V[0]))


@pytest.mark.parametrize("v, eps, words", [
    ([0.0] * 7, 1e-3, ["v", "shape"]),
    ([0.0] * 7 + [float("nan")], 1e-3, ["v", "finite"]),
    ([0.0] * 8, 0.0, ["velocity_eps", "> 0"]),
    ([0.0] * 8, float("nan"), ["velocity_eps"]),
    (["a"] * 8, 1e-3, ["v", "real numbers"]),
])
def test_friction_bad_arguments(panda, v, eps, words):
    with pytest.raises(ValueError) as e:
        rbd.friction(panda, v, velocity_eps=eps)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_negative_urdf_damping_is_a_model_error():
    text = orc._urdf_text(orc.robot_urdf("panda"))
    with pytest.raises(rbd.ModelError, match="panda_joint2.*damping"):
        rbd.Model.from_urdf(_with_dynamics(text, {"panda_joint2": (-1.0, 0.0)}))


# ------------------------------------------------------------- limits
def _urdf_limits(text, model):
    """Limits per DOF read from the XML: (effort, velocity, lower, upper)."""
    joints = {j.get("name"): j for j in ET.fromstring(text).findall("joint")}
    eff, vel = np.full(model.nv, np.inf), np.full(model.nv, np.inf)
    pos = np.array([[-np.inf, np.inf]] * model.nv)
    for name, t, i in zip(model.joint_names, model.joint_types, model.idx_v):
        if t not in ("revolute", "continuous", "prismatic"):
            continue
        lim = joints[name].find("limit")
        if lim is None:
            continue
        e, s = float(lim.get("effort", 0)), float(lim.get("velocity", 0))
        eff[i] = e if e > 0 else np.inf
        vel[i] = s if s > 0 else np.inf
        lo, hi = float(lim.get("lower", 0)), float(lim.get("upper", 0))
        if t != "continuous" and lo < hi:
            pos[i] = lo, hi
    return eff, vel, pos


@pytest.mark.parametrize("robot, floating, mimic", [
    ("panda", False, True), ("ur5", False, True), ("talos_full_v2", True, True),
    ("talos_full_v2", True, False), ("solo12", True, True), (None, False, True)])
def test_limits_equal_the_urdf(robot, floating, mimic):
    text = _urdf(robot)
    m = rbd.Model.from_urdf(text, floating_base=floating, mimic=mimic)
    eff, vel, pos = _urdf_limits(text, m)
    assert m.effort_limit.shape == (m.nv,) and m.position_limit.shape == (m.nv, 2)
    assert np.array_equal(m.effort_limit, eff)
    assert np.array_equal(m.velocity_limit, vel)
    assert np.array_equal(m.position_limit, pos)
    assert np.isfinite(eff).sum() > 0      # the URDF does have limits
    for x in (m.effort_limit, m.velocity_limit, m.position_limit, m.damping, m.friction):
        assert not x.flags.writeable
    if floating:
        assert np.all(np.isinf(m.effort_limit[:6])) and np.all(np.isinf(m.position_limit[:6]))


def test_continuous_joint_has_no_position_limit_and_zero_means_none():
    urdf = ('<robot name="r"><link name="b"/><link name="l1"><inertial><mass value="1"/>'
            '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link><link name="l2"/>'
            '<joint name="c" type="continuous"><parent link="b"/><child link="l1"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" effort="0" velocity="3"/></joint>'
            '<joint name="p" type="prismatic"><parent link="l1"/><child link="l2"/><axis xyz="1 0 0"/>'
            '<limit lower="-0.5" upper="0.25" effort="40" velocity="0"/><dynamics damping="2"/></joint></robot>')
    m = rbd.Model.from_urdf(urdf)
    assert np.array_equal(m.position_limit, [[-np.inf, np.inf], [-0.5, 0.25]])
    assert np.array_equal(m.effort_limit, [np.inf, 40.0])
    assert np.array_equal(m.velocity_limit, [3.0, np.inf])
    assert np.array_equal(m.damping, [0.0, 2.0]) and np.array_equal(m.friction, [0.0, 0.0])


def test_random_tree_case_has_mimic_joints():
    """The random tree above exercises mimic joints (their armature is the master's)."""
    assert rbd.Model.from_urdf(RANDOM_URDF).mimic_joints


def test_mimic_joint_dynamics_fold_into_the_master():
    text = orc.robot_text("panda")
    text = re.sub(r'(<joint name="panda_finger_joint2".*?)<dynamics[^>]*/>',
                  r'\1<dynamics damping="0.5" friction="0.2"/>', text, count=1, flags=re.S)
    m = rbd.Model.from_urdf(text)
    free = rbd.Model.from_urdf(text, mimic=False)     # the mimic joint a DOF of its own: its own terms
    mult = m.mimic_joints["panda_finger_joint2"][1]
    k, k1, k2 = m.v_index("panda_finger_joint1"), free.v_index("panda_finger_joint1"), \
        free.v_index("panda_finger_joint2")
    assert free.damping[k2] == 0.5 and free.friction[k2] == 0.2
    assert m.damping[k] == pytest.approx(free.damping[k1] + mult ** 2 * 0.5)
    assert m.friction[k] == pytest.approx(free.friction[k1] + abs(mult) * 0.2)
