"""The node on a legged robot (issue 25, "Node"), in this process (no DDS): solo12 from
example-robot-data with the parameter ``contacts`` = its four feet, the node's control step
(the term table of the node) and its constrained services, against the core.

* g, b, the effort command (gravity, feed-forward, computed torque) and ~/contact_forces
  are the core's ``constrained_inverse_dynamics`` with the friction cones at the state the
  node has: the joints of the joint state, the base of the latest base state (pose in the
  world, twist in the base frame), the base's acceleration from the contacts
  (J q̈ = −γ); the contact forces carry the weight.
* ~/contacts replaces the set (three feet, normals, a friction per link); a bad one is
  dropped whole and the set in use kept (each refusal followed by a good message: the
  sentinel).
* The base state: none yet, or older than max_base_state_age -> nothing published,
  counted, said; bad base states (another frame, NaN, a non-unit quaternion) dropped;
  a model swap keeps the base state and the contact set.
* An infeasible motion (a robot on one foot) publishes the torques of the least-violating
  forces, finite, says so once in the log and in the diagnostics, and once when it is
  feasible again.
* Refusals at model build: contacts without a floating base, an unknown link, a flat
  contact without sole_size, a bad contact_type.
* ~/constrained_inverse_dynamics with contacts (friction > 0, use_contacts, a flat
  contact's sole) against the core, an infeasible request answered with feasible = false
  and the violation; the forward dynamics refuse friction and use_contacts."""
import dataclasses
import math

import daqp  # noqa: F401  (the friction cones' QP solver: a missing one skips this file under colcon)
import numpy as np
import pytest
from geometry_msgs.msg import Pose, Twist
from legged_util import FEET, JOINTS, Q_STAND, SOLO, InProcessNode, ListLog, solo_model

import rbd_ros.core as rbd
from rbd_ros.node import constrained_services as cs
from rbd_ros.node import model_build as mb
from rbd_ros.node.contacts import contact_options
from rbd_ros.node.held_state import snapshot

POSE = np.array([0.05, -0.02, 0.232, 0.02, -0.03, 0.1, 0.0])        # tilted and turned a little
POSE[6] = math.sqrt(1.0 - float(POSE[3:6] @ POSE[3:6]))
TWIST = np.array([0.1, -0.05, 0.02, 0.3, -0.2, 0.1])
RNG = np.random.default_rng(25)
QJ = Q_STAND + RNG.uniform(-0.05, 0.05, 12)
VJ = RNG.uniform(-0.5, 0.5, 12)


def rel(got, ref):
    ref = np.asarray(ref, dtype=float)
    return float(np.max(np.abs(np.asarray(got) - ref)) / max(1.0, float(np.max(np.abs(ref)))))


@pytest.fixture(scope="module")
def node():
    return InProcessNode(command_mode="gravity")


def feet(links=FEET, normals=None):
    ob = [None] * len(links) if normals is None else [_rot(n) for n in normals]
    return tuple(rbd.Constraint(f, None, origin_b=o, name=f) for f, o in zip(links, ob))


def _rot(n):
    """The smallest rotation taking z onto n (the node's ground frame for a normal n)."""
    n = np.asarray(n, float) / np.linalg.norm(n)
    v = np.cross([0.0, 0.0, 1.0], n)
    c = n[2]
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    T = np.eye(4)
    T[:3, :3] = np.eye(3) + K + K @ K / (1.0 + c)
    return T


def base_accel(m, q, v, a, cons):
    """a with the base's acceleration from J q̈ + γ = 0 (least squares; the joints' given)."""
    J, gam = rbd.constraint_jacobian(m, q, cons), rbd.constraint_drift(m, q, v, cons)
    a = a.copy()
    a[:6] = np.linalg.lstsq(J[:, :6], -gam - J[:, 6:] @ a[6:], rcond=None)[0]
    return a


def core(node, q, v, a, cons, mu=0.7):
    return rbd.constrained_inverse_dynamics(node.model, q, v, a, cons, friction=mu)


def lam_of(msg_forces):
    return np.array([x for _, _, mask, w in msg_forces for x, on in zip(w, mask) if on])


def test_g_b_and_contact_forces_are_the_core_s_on_the_measured_state(node):
    m = node.model
    iv = [m.v_index(j) for j in JOINTS]
    assert node.base(POSE, TWIST, 10.0)
    parts = node.state(QJ, VJ, 10.0)
    assert parts is not None and {"g", "b", "contact", "cmd"} <= set(parts), node.stats.dropped
    q, v = node.model_q(POSE, QJ), node.model_v(TWIST, VJ)
    cons = feet()
    held = core(node, q, np.zeros(m.nv), np.zeros(m.nv), cons)
    moving = core(node, q, v, base_accel(m, q, v, np.zeros(m.nv), cons), cons)
    assert held.feasible and moving.feasible
    assert rel(node.part("g", "g"), held.tau[iv]) <= 1e-9
    assert rel(node.part("g", "b"), moving.tau[iv]) <= 1e-9
    assert rel(node.part("cmd", "cmd"), held.tau[iv]) <= 1e-9            # gravity mode: the command is g
    cs = node.bound.by_key["g"].contact_set
    assert cs.links == FEET and cs.feasible
    assert rel(lam_of(cs.forces()), moving.lam) <= 1e-9
    # held still, the forces (world axes) carry the weight; the torques depend on the base's
    # orientation (the base state is used, not the origin)
    weight = m.mass * 9.81
    f_world = _world_sum(m, q, held.lam)
    np.testing.assert_allclose(f_world, [0.0, 0.0, weight], atol=1e-9 * weight)
    upright = core(node, node.model_q([0, 0, 0.232, 0, 0, 0, 1], QJ), np.zeros(m.nv), np.zeros(m.nv), cons)
    assert rel(upright.tau[iv], held.tau[iv]) > 1e-3


def _world_sum(m, q, lam):
    """Σ R_foot λ_foot (world axes): the feet's orientations from the point constraints' error
    at two origins (e = R_aᵀ(p_a − p_b): differences over p_b give R_a's columns)."""
    total = np.zeros(3)
    for k, f in enumerate(FEET):
        e0 = rbd.constraint_error(m, q, (rbd.Constraint(f, None),))
        cols = [e0 - rbd.constraint_error(m, q, (rbd.Constraint(f, None, origin_b=_tr(u)),)) for u in np.eye(3)]
        Rt = np.array(cols).T                    # column u: R_aᵀ u
        total += Rt.T @ lam[3 * k:3 * k + 3]
    return total


def _tr(p):
    T = np.eye(4)
    T[:3, 3] = p
    return T


def test_computed_torque_and_feedforward_on_the_contacts():
    node = InProcessNode(command_mode="computed_torque", kp=(100.0,), kd=(20.0,), max_desired_age=0.0)
    m = node.model
    iv = [m.v_index(j) for j in JOINTS]
    qd, vd, ad = Q_STAND, np.zeros(12), RNG.uniform(-1, 1, 12)
    node.base(POSE, TWIST, 1.0)
    node.desired(qd, vd, ad, 1.0)
    assert node.state(QJ, VJ, 1.0) is not None, node.stats.dropped
    q, v = node.model_q(POSE, QJ), node.model_v(TWIST, VJ)
    a = np.zeros(m.nv)
    a[iv] = ad + 100.0 * (qd - QJ) + 20.0 * (vd - VJ)
    ref = core(node, q, v, base_accel(m, q, v, a, feet()), feet())
    assert rel(node.part("cmd", "cmd"), ref.tau[iv]) <= 1e-9
    # ~/contact_forces stays the bias state's (q̇ measured, zero joint acceleration), not the command's
    bias = core(node, q, v, base_accel(m, q, v, np.zeros(m.nv), feet()), feet())
    assert rel(lam_of(node.bound.by_key["g"].contact_set.forces()), bias.lam) <= 1e-9
    assert rel(bias.lam, ref.lam) > 1e-3
    # feed-forward: the desired joints with the measured base, its acceleration from the contacts
    node.step.configure(dataclasses.replace(node.params, command_mode="feedforward"))
    node.desired(qd, vd, ad, 1.0)
    assert node.state(QJ, VJ, 1.0) is not None
    qf, vf = node.model_q(POSE, qd), node.model_v(TWIST, vd)
    a = np.zeros(m.nv)
    a[iv] = ad
    ref = core(node, qf, vf, base_accel(m, qf, vf, a, feet()), feet())
    assert rel(node.part("cmd", "cmd"), ref.tau[iv]) <= 1e-9


def test_contacts_topic_replaces_the_set_and_bad_ones_are_dropped():
    node = InProcessNode(command_mode="gravity")
    m = node.model
    iv = [m.v_index(j) for j in JOINTS]
    node.base(POSE, np.zeros(6), 0.0)
    q = node.model_q(POSE, QJ)
    z = np.zeros(m.nv)
    three = FEET[1:]
    assert node.set_contacts(three)
    assert node.state(QJ, VJ, 0.0) is not None
    assert rel(node.part("g", "g"), core(node, q, z, z, feet(three)).tau[iv]) <= 1e-9
    assert node.bound.by_key["g"].contact_set.links == three
    # normals (a slope under two feet) and a friction coefficient per link
    normals = [(0.0, 0.2, 1.0), (0.0, 0.0, 1.0), (0.1, 0.0, 1.0)]
    assert node.set_contacts(three, normals, [0.5, 0.9, 0.3])
    assert node.state(QJ, VJ, 0.0) is not None
    ref = rbd.constrained_inverse_dynamics(m, q, z, z, feet(three, normals), friction=[0.5, 0.9, 0.3])
    assert rel(node.part("g", "g"), ref.tau[iv]) <= 1e-9
    # bad ones: dropped whole, the set in use kept; each followed by a good joint state (sentinel)
    bad = [(["FL_FOOT", "toe"], (), ()), (three, [(0.0, 0.0, 0.0)] * 3, ()), (three, (), [0.5]),
           (three, (), [0.5, -1.0, 0.5]), (["FR_FOOT", "FR_FOOT"], (), ()), (three, [(0, 0, float("nan"))] * 3, ())]
    for k, (links, n, mu) in enumerate(bad):
        assert not node.set_contacts(links, n, mu), (links, n, mu)
        assert node.rt.contacts.contacts_dropped == k + 1
        assert node.state(QJ, VJ, 0.0) is not None
        assert rel(node.part("g", "g"), ref.tau[iv]) <= 1e-9
    # a link of the model not in the parameter's set is a point contact
    assert node.set_contacts(["FL_FOOT", "FR_FOOT", "HL_LOWER_LEG", "HR_FOOT"])
    assert node.state(QJ, VJ, 0.0) is not None
    # back to the parameter's set
    assert node.set_contacts(FEET)
    assert node.state(QJ, VJ, 0.0) is not None
    assert rel(node.part("g", "g"), core(node, q, z, z, feet()).tau[iv]) <= 1e-9
    assert dict(node.step.diagnostics(0.0))["contacts_source"] == "parameter contacts"


def test_no_or_stale_base_state_publishes_nothing_and_bad_ones_are_dropped():
    log = ListLog()
    node = InProcessNode(command_mode="gravity", max_base_state_age=0.05, log=log)
    assert node.state(QJ, VJ, 0.0) is None
    assert node.stats.dropped == {"no_base_state": 1}
    assert dict(node.step.diagnostics(0.0))["base_state"] == "never received"
    assert log.count("no base state received yet", "error") == 1 and "no base state" in node.stats.last_error
    assert node.base(POSE, TWIST, 1.0)
    assert node.state(QJ, VJ, 1.04) is not None                 # 40 ms old: fresh (the sentinel)
    assert node.state(QJ, VJ, 1.06) is None                     # 60 ms > 50 ms: stale
    assert node.stats.dropped["base_state_stale"] == 1
    diag = dict(node.step.diagnostics(1.06))
    assert diag["base_state"].startswith("stale: 0.06 s old > max_base_state_age 0.05 s"), diag
    assert node.base(POSE, TWIST, 1.07) and node.state(QJ, VJ, 1.08) is not None
    assert dict(node.step.diagnostics(1.08))["base_state"] == "ok"
    # bad base states: dropped (counted, said), the last good one kept
    good = node.part("g", "g").copy()
    quat_off = POSE.copy()
    quat_off[6] *= 1.01
    for child, pose, twist, text in [("world", POSE, TWIST, "child_frame_id: 'world' is not the model's root link"),
                                     ("base_link", [float("nan")] + list(POSE[1:]), TWIST, "pose: not finite"),
                                     ("base_link", POSE, [0, 0, float("inf"), 0, 0, 0], "twist: not finite"),
                                     ("base_link", quat_off, TWIST, "not a unit quaternion")]:
        assert not node.base(pose, twist, 1.08, child=child)
        assert node.stats.last_error.startswith("base state dropped: ") and text in node.stats.last_error
        assert node.state(QJ, VJ, 1.09) is not None
        assert np.array_equal(node.part("g", "g"), good)
    assert node.rt.contacts.base_dropped == 4
    # a model swap keeps the base state and the contact set
    assert node.set_contacts(FEET[:3])
    new = node.build(node.params)
    new.adopt_state(node.rt)
    assert new.contacts.current.links == FEET[:3] and np.array_equal(new.contacts.base_q, node.rt.contacts.base_q)
    assert new.contacts.base_time == node.rt.contacts.base_time


def test_infeasible_publishes_the_least_violating_torques_and_says_so_once():
    log = ListLog()
    node = InProcessNode(command_mode="gravity", log=log)
    m = node.model
    iv = [m.v_index(j) for j in JOINTS]
    node.base(POSE, np.zeros(6), 0.0)
    q, z = node.model_q(POSE, QJ), np.zeros(m.nv)
    assert node.set_contacts(["FL_FOOT"])                     # one point foot cannot hold the robot
    for k in range(3):
        parts = node.state(QJ, VJ, 0.01 * k)
        assert parts is not None and "cmd" in parts
    ref = core(node, q, z, z, feet(["FL_FOOT"]))
    assert not ref.feasible and ref.violation > 1.0
    g = node.part("g", "g")
    assert np.all(np.isfinite(g)) and rel(g, ref.tau[iv]) <= 1e-6
    assert np.all(np.isfinite(node.part("cmd", "cmd")))
    assert log.count("no forces inside the friction cones realise the motion", "warning") == 1
    diag = dict(node.step.diagnostics(0.0))
    assert diag["contact_feasible"] == "false" and float(diag["contact_violation"]) > 1.0
    cs = node.bound.by_key["g"].contact_set
    assert not cs.feasible and cs.violation > 1.0
    assert node.set_contacts(FEET)
    assert node.state(QJ, VJ, 0.05) is not None and node.state(QJ, VJ, 0.06) is not None
    assert log.count("realisable inside the friction cones again", "info") == 1
    assert dict(node.step.diagnostics(0.06))["contact_feasible"] == "true"
    assert log.count("no forces inside the friction cones", "warning") == 1
    # no contact at all (a flight phase): the base's equations cannot hold; the violation is
    # the weight, the torques those of the joints with the base held (finite, published)
    assert node.set_contacts([])
    assert node.state(QJ, VJ, 0.07) is not None and np.all(np.isfinite(node.part("g", "g")))
    assert log.count("no forces inside the friction cones", "warning") == 2
    assert abs(float(dict(node.step.diagnostics(0.07))["contact_violation"]) - m.mass * 9.81) < 0.01 * m.mass * 9.81


@pytest.mark.parametrize("kw, text", [
    (dict(floating_base=False), "contacts with the ground need a floating base"),
    (dict(contacts=("FL_FOOT", "toe")), "parameter contacts: "),
    (dict(contact_type=("flat",)), "parameter sole_size: flat contacts"),
    (dict(contact_type=("point", "knee")), "parameter contact_type: 2 values, expected one or 4"),
    (dict(contact_type=("knee",)), "parameter contact_type[0] (FL_FOOT): expected one of"),
    (dict(contacts=("FL_FOOT", "FL_FOOT")), "parameter contacts: 'FL_FOOT' is listed twice"),
])
def test_bad_contact_parameters_refuse_the_model(kw, text):
    floating = kw.pop("floating_base", True)
    p = dict(contacts=FEET, contact_type=(), friction_coefficient=0.7, sole_size=())
    p.update(kw)
    with open(SOLO) as f:
        urdf = f.read()
    with pytest.raises(rbd.ModelError) as e:
        co = contact_options(p["contacts"], p["contact_type"], p["friction_coefficient"], p["sole_size"])
        mb.build_robot(urdf, floating_base=floating, mimic=True, gravity=(0, 0, -9.81), joints=(), source="t",
                       contacts=co)
    assert text in str(e.value), str(e.value)


def test_flat_contacts_take_the_sole():
    node = InProcessNode(command_mode="gravity", contact_type=("flat",), sole_size=(0.04, 0.03))
    m = node.model
    iv = [m.v_index(j) for j in JOINTS]
    node.base(POSE, np.zeros(6), 0.0)
    assert node.state(QJ, VJ, 0.0) is not None, node.stats.dropped
    q, z = node.model_q(POSE, QJ), np.zeros(m.nv)
    soles = tuple(rbd.Constraint.weld(f, None, name=f) for f in FEET)
    ref = rbd.constrained_inverse_dynamics(m, q, z, z, soles, friction=rbd.FrictionCone(0.7, sole_size=(0.04, 0.03)))
    assert rel(node.part("g", "g"), ref.tau[iv]) <= 1e-9
    assert node.bound.by_key["g"].contact_set.m == 24


# ------------------------------------------------------------------ the services (in process)

def _service_modules():
    # rbd_ros_interfaces is built into the venv; imported where used, as the other node tests do
    from rbd_ros_interfaces.msg import Constraint as CMsg
    from rbd_ros_interfaces.srv import ConstrainedForwardDynamics as CFD
    from rbd_ros_interfaces.srv import ConstrainedInverseDynamics as CID
    return CMsg, CID, CFD


def _pose_msg(p):
    msg = Pose()
    msg.position.x, msg.position.y, msg.position.z = (float(x) for x in p[:3])
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = (float(x) for x in p[3:])
    return msg


def _twist_msg(t):
    msg = Twist()
    msg.linear.x, msg.linear.y, msg.linear.z = (float(x) for x in t[:3])
    msg.angular.x, msg.angular.y, msg.angular.z = (float(x) for x in t[3:])
    return msg


def test_constrained_inverse_dynamics_service_with_contacts(node):
    CMsg, CID, CFD = _service_modules()
    m = node.model
    iv = [m.v_index(j) for j in JOINTS]
    q, v = node.model_q(POSE, QJ), node.model_v(TWIST, VJ)
    aj = RNG.uniform(-1, 1, 12)
    a = np.zeros(m.nv)
    a[iv] = aj
    rt = node.rt

    def request(**kw):
        return CID.Request(name=JOINTS[::-1], position=QJ[::-1].tolist(), velocity=VJ[::-1].tolist(),
                           acceleration=aj[::-1].tolist(), base_poses=[_pose_msg(POSE)],
                           base_velocities=[_twist_msg(TWIST)], **kw)
    # the feet as request constraints with friction (a point each)
    msgs = [CMsg(name=f, link_a=f, friction=0.6) for f in FEET]
    resp = cs.constrained_inverse_dynamics(rt, request(constraints=msgs), CID.Response())
    assert resp.success, resp.message
    ref = rbd.constrained_inverse_dynamics(m, q, v, base_accel(m, q, v, a, feet()), feet(), friction=0.6)
    assert list(resp.name) == JOINTS and rel(resp.effort, ref.tau[iv]) <= 1e-9
    assert rel(lam_of([(0, 0, c.mask, [c.wrench.force.x, c.wrench.force.y, c.wrench.force.z, c.wrench.torque.x,
                                         c.wrench.torque.y, c.wrench.torque.z]) for c in resp.forces[0].constraints]),
               ref.lam) <= 1e-9
    assert resp.feasible and resp.forces[0].feasible
    # use_contacts: the node's set in use (its held-state snapshot: here three feet, μ per link)
    rt.contacts.set_contacts(FEET[1:], (), (0.4, 0.8, 0.5))
    try:
        resp = cs.constrained_inverse_dynamics(rt, request(use_contacts=True), CID.Response(),
                                               held=lambda: snapshot(rt, 0.0))
        assert resp.success, resp.message
        three = feet(FEET[1:])
        ref = rbd.constrained_inverse_dynamics(m, q, v, base_accel(m, q, v, a, three), three, friction=[0.4, 0.8, 0.5])
        assert rel(resp.effort, ref.tau[iv]) <= 1e-9
        assert [c.name for c in resp.forces[0].constraints] == list(FEET[1:])
    finally:
        rt.contacts.set_contacts(FEET)
    # infeasible: one foot -> success, feasible false, the violation, finite efforts
    resp = cs.constrained_inverse_dynamics(rt, request(constraints=[CMsg(link_a="FL_FOOT", friction=0.6)]),
                                           CID.Response())
    assert resp.success and not resp.feasible and resp.violation > 1.0, resp.message
    assert "infeasible" in resp.message and np.all(np.isfinite(resp.effort))
    ref = rbd.constrained_inverse_dynamics(m, q, v, base_accel(m, q, v, a, feet(["FL_FOOT"])), feet(["FL_FOOT"]),
                                           friction=0.6)
    assert not ref.feasible and abs(resp.violation - ref.violation) <= 1e-6 * ref.violation
    # a flat contact takes the request's sole, or the node's sole_size; refusals name the field
    weld = [1] * 6
    resp = cs.constrained_inverse_dynamics(
        rt, request(constraints=[CMsg(link_a=f, mask=weld, friction=0.6, sole_size=[0.04, 0.03]) for f in FEET]),
        CID.Response())
    soles = tuple(rbd.Constraint.weld(f, None, name=f"{f}-world") for f in FEET)
    ref = rbd.constrained_inverse_dynamics(m, q, v, base_accel(m, q, v, a, soles), soles,
                                           friction=rbd.FrictionCone(0.6, sole_size=(0.04, 0.03)))
    assert resp.success and rel(resp.effort, ref.tau[iv]) <= 1e-9, resp.message
    for req, text in [
        (request(constraints=[CMsg(link_a="FL_FOOT", mask=weld, friction=0.6)]),
         "constraints[0].sole_size: a flat contact with friction needs its sole"),
        (request(constraints=[CMsg(link_a="FL_FOOT", mask=[1, 1, 1, 1, 1, 0], friction=0.6)]),
         "constraints[0].mask: a contact with friction is a point"),
        (request(constraints=[CMsg(link_a="FL_FOOT", friction=-1.0)]), "constraints[0].friction: expected"),
        (request(use_contacts=True), "use_contacts: the node's contact set is not available here"),
    ]:
        resp = cs.constrained_inverse_dynamics(rt, req, CID.Response())
        assert not resp.success and text in resp.message, (text, resp.message)
    # the forward dynamics take bilateral constraints only
    for req, text in [(CFD.Request(name=JOINTS, position=QJ.tolist(), base_poses=[_pose_msg(POSE)],
                                   constraints=[CMsg(link_a="FL_FOOT", friction=0.6)]),
                       "constraints[0].friction: the forward dynamics take bilateral constraints only"),
                      (CFD.Request(name=JOINTS, position=QJ.tolist(), base_poses=[_pose_msg(POSE)], use_contacts=True),
                       "use_contacts: the forward dynamics take bilateral constraints only")]:
        resp = cs.constrained_forward_dynamics(rt, req, CFD.Response())
        assert not resp.success and text in resp.message, (text, resp.message)


def test_use_contacts_without_a_contact_set_is_refused():
    _, CID, _ = _service_modules()
    m = solo_model()
    rt = mb.build_robot(open(SOLO).read(), floating_base=True, mimic=True, gravity=(0, 0, -9.81), joints=(),
                        source="t")
    assert rt.contacts is None and m.nv == rt.model.nv
    resp = cs.constrained_inverse_dynamics(rt, CID.Request(name=JOINTS, position=Q_STAND.tolist(),
                                                           base_poses=[_pose_msg(POSE)], use_contacts=True),
                                           CID.Response())
    assert not resp.success and "use_contacts: the node keeps no contact set" in resp.message
