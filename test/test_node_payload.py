"""Payloads at run time, armature, friction and effort-limit violations in the node
(issue 10), end to end over real DDS.

References: Pinocchio (payload: the body's inertia added to the inertia of the
joint carrying the link, at the link frame's placement; armature: ``model.armature``)
through test/oracle.py, as test/test_core_robot_terms.py does; friction by the core's
``rbd.friction``, whose formula test_core_robot_terms checks."""
import numpy as np
import oracle as orc
import pinocchio as pin
import pytest
from geometry_msgs.msg import InertiaStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from ros_harness import (
    ARM_JOINTS,
    QOS_LATCHED,
    DiagnosticArray,
    Float64MultiArray,
    JointState,
    NodeProcess,
    array_of,
    diagnostics_of,
    joint_state,
    publish_until,
    read_arm_urdf,
    set_params,
    unique_ns,
    wait_for,
)
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.core as rbd
from rbd_ros.node import model_build as mb
from rbd_ros.node import payload as pl
from rbd_ros_interfaces.srv import ForwardDynamics, InverseDynamics, InverseDynamicsTrajectory, SetPayload

TOL = 1e-9
QOS_PAYLOAD = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)

# payloads used below: (mass kg, com m, inertia ixx ixy ixz iyy iyz izz kg m^2)
GRIPPED = (1.5, (0.01, -0.02, 0.08), (0.004, 0.0002, -0.0001, 0.005, 0.0003, 0.003))
ON_LINK5 = (0.7, (0.0, 0.05, -0.03), (0.002, 0.0, 0.0, 0.0025, 0.0, 0.0015))
ON_LINK3 = (0.4, (0.02, 0.0, 0.01), (0.001, 0.0, 0.0, 0.001, 0.0, 0.0012))


def sym(i6):
    ixx, ixy, ixz, iyy, iyz, izz = i6
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def reference(urdf, payloads=None, armature=None):
    """Pinocchio oracle of urdf with payloads {link: (m, com, inertia6)} and armature
    (7 values, model order)."""
    model = rbd.Model.from_urdf(urdf)
    o = orc.Oracle(urdf, layout=model)
    pm = o.model
    for link, (m, com, i6) in (payloads or {}).items():
        fr = pm.frames[pm.getFrameId(link)]
        j = fr.parentJoint
        pm.inertias[j] = pm.inertias[j] + fr.placement.act(pin.Inertia(m, np.asarray(com),
                                                                      sym(i6)))
    if armature is not None:
        pm.armature = np.asarray(armature, dtype=float)
    o.data = pm.createData()
    return o


def close(got, ref, tol=TOL):
    return orc.rel_err(np.asarray(got, dtype=float), np.asarray(ref, dtype=float)) <= tol


def inertia_msg(link, m, com, i6) -> InertiaStamped:
    msg = InertiaStamped()
    msg.header.frame_id = link
    msg.inertia.m = float(m)
    msg.inertia.com.x, msg.inertia.com.y, msg.inertia.com.z = (float(x) for x in com)
    (msg.inertia.ixx, msg.inertia.ixy, msg.inertia.ixz, msg.inertia.iyy, msg.inertia.iyz,
     msg.inertia.izz) = (float(x) for x in i6)
    return msg


def set_payload(client, node, *entries):
    req = SetPayload.Request(payloads=[inertia_msg(*e) for e in entries])
    return client.call(SetPayload, node.topic("set_payload"), req, timeout=60)


def first_answer(client_pub, rec, q, v=None):
    """Publish joint states (each with a new stamp, all after this call) until one is
    answered; that answer."""
    sent, got = publish_until(client_pub, lambda: joint_state(ARM_JOINTS, q, v), rec, timeout=30)
    assert got is not None, "no answer to a joint state"
    return got


@pytest.fixture(scope="module")
def arm():
    urdf = read_arm_urdf()
    return urdf, rbd.Model.from_urdf(urdf)


@pytest.fixture(scope="module")
def node(client):
    n = NodeProcess(unique_ns("pay"), {"urdf_file": "rbd_arm7", "max_state_age": 5.0})
    yield n
    assert n.alive(), n.log()
    n.stop()


@pytest.fixture(scope="module")
def io(client, node):
    pub = client.publisher(JointState, f"/{node.ns}/joint_states")
    rec = client.record(JointState, node.topic("gravity_torques_state"))
    diag = client.record(DiagnosticArray, "/diagnostics")
    return pub, rec, diag


def test_set_payload_service_changes_gravity_at_the_next_message(client, node, io, arm):
    urdf, model = arm
    pub, rec, diag = io
    q = np.array([0.3, -0.6, 0.4, -1.9, 0.5, 1.4, -0.3])
    plain = reference(urdf)
    loaded = reference(urdf, {"flange": GRIPPED, "link5": ON_LINK5})
    g0, g1 = plain.gravity(q), loaded.gravity(q)
    assert orc.rel_err(g0, g1) > 1e-2  # sentinel: the payload matters

    assert close(first_answer(pub, rec, q).effort, g0)
    resp = set_payload(client, node, ("flange", *GRIPPED), ("link5", *ON_LINK5))
    assert resp.success, resp.message
    assert "flange: 1.5 kg" in resp.message and "link5: 0.7 kg" in resp.message
    # every joint state published after the response is answered with the payloads
    for _ in range(3):
        assert close(first_answer(pub, rec, q).effort, g1)

    # the service worker has the same model: inverse dynamics there sees the payloads too
    req = InverseDynamics.Request(name=ARM_JOINTS, position=q.tolist())
    got = wait_for(lambda: (lambda r: r if r.success and close(r.effort, g1) else None)(
        client.call(InverseDynamics, node.topic("inverse_dynamics"), req)), timeout=60, period=0.2)
    assert got, "the service worker never used the payloads"
    d = wait_for(lambda: (lambda x: x if x and "flange" in x.get("payloads", "") else None)(
        diagnostics_of(diag, node.fqn)), timeout=60)
    assert d and d["payloads"] == "flange: 1.5 kg, link5: 0.7 kg", d

    # mass 0 removes one, then the other: the original torques exactly
    resp = set_payload(client, node, ("link5", 0.0, (0, 0, 0), (0,) * 6))
    assert resp.success, resp.message
    assert close(first_answer(pub, rec, q).effort, reference(urdf, {"flange": GRIPPED}).gravity(q))
    resp = set_payload(client, node, ("flange", 0.0, (0, 0, 0), (0,) * 6))
    assert resp.success, resp.message
    got = np.asarray(first_answer(pub, rec, q).effort)
    assert close(got, g0)
    assert np.max(np.abs(got - rbd.gravity(model, q))) <= 1e-12  # bit-level restore


BAD = [
    # (entries, words that must be in the message)
    ([("flange", -1.0, (0, 0, 0), (0.001, 0, 0, 0.001, 0, 0.001))], ["payloads[0].inertia.m"]),
    ([("flange", float("inf"), (0, 0, 0), (0.001, 0, 0, 0.001, 0, 0.001))],
     ["payloads[0].inertia.m", "finite"]),
    ([("link5", *ON_LINK5), ("flange", 1.0, (0, float("nan"), 0), (0.001, 0, 0, 0.001, 0, 0.001))],
     ["payloads[1].inertia.com"]),
    ([("flange", 1.0, (0, 0, 0), (0.001, 0, 0, float("inf"), 0, 0.001))],
     ["payloads[0].inertia.ixx..izz", "finite"]),
    ([("flange", 1.0, (0, 0, 0), (0.001, 0.01, 0, 0.001, 0, 0.001))],
     ["payloads[0].inertia.ixx..izz", "positive semi-definite"]),
    ([("flange", 1.0, (0, 0, 0), (0.001, 0, 0, 0.001, 0, 0.01))],
     ["payloads[0].inertia.ixx..izz", "triangle"]),
    ([("link5", *ON_LINK5), ("flang", *GRIPPED)], ["payloads[1].header.frame_id", "'flange'"]),
    ([("no_such_link", 0.0, (0, 0, 0), (0,) * 6)], ["payloads[0].header.frame_id", "no_such_link"]),
    # issue 17, defect 3: finite but beyond the physical bounds (core.model.errors.BOUNDS); each
    # of these used to be accepted and then stopped every output of the node
    ([("flange", 1e308, (0, 0, 0), (0.001, 0, 0, 0.001, 0, 0.001))], ["payloads[0].inertia.m", "1e+09"]),
    ([("flange", 1.0, (1e155, 0, 0), (0.001, 0, 0, 0.001, 0, 0.001))], ["payloads[0].inertia.com", "1e+06"]),
    ([("flange", 1.0, (0, 0, 0), (1e300, 0, 0, 1e300, 0, 1e300))], ["payloads[0].inertia.ixx..izz", "1e+12"]),
]


@pytest.mark.parametrize("entries,words", BAD, ids=[
    "negative-mass", "inf-mass", "nan-com", "inf-inertia", "not-psd", "triangle",
    "unknown-link", "remove-unknown-link", "huge-mass", "huge-com", "huge-inertia"])
def test_bad_payload_requests_are_refused(client, node, io, arm, entries, words):
    urdf, _ = arm
    pub, rec, _ = io
    q = np.array([0.1, 0.5, -0.2, -1.5, 0.3, 1.0, 0.2])
    base = set_payload(client, node, ("link3", *ON_LINK3))   # a known state to keep
    assert base.success, base.message
    before = reference(urdf, {"link3": ON_LINK3}).gravity(q)
    resp = set_payload(client, node, *entries)
    assert not resp.success
    for w in words:
        assert w in resp.message, resp.message
    # all or nothing: the torques are those of the model before the request
    assert close(first_answer(pub, rec, q).effort, before)
    # sentinel: the node still takes a good request right after
    resp = set_payload(client, node, ("link3", 0.0, (0, 0, 0), (0,) * 6))
    assert resp.success, resp.message
    assert close(first_answer(pub, rec, q).effort, reference(urdf).gravity(q))
    assert node.alive()


def test_payload_topic_refuses_bad_messages_and_counts_them(client, node, io, arm):
    urdf, _ = arm
    pub, rec, diag = io
    q = np.array([-0.4, 0.2, 0.6, -2.0, -0.5, 1.8, 0.9])
    ppub = client.publisher(InertiaStamped, node.topic("payload"), QOS_PAYLOAD)
    wait_for(lambda: ppub.get_subscription_count() > 0, timeout=60)
    d0 = wait_for(lambda: diagnostics_of(diag, node.fqn), timeout=60)
    rejected0 = int(d0["payloads_rejected"])
    ppub.publish(inertia_msg("flange", -2.0, (0, 0, 0), (0.001, 0, 0, 0.001, 0, 0.001)))
    ppub.publish(inertia_msg("flange", 1.0, (0, 0, 0), (0.001, 0, 0, 0.001, 0, 0.01)))
    ppub.publish(inertia_msg("flang", *GRIPPED))
    # sentinel, after the bad ones on the same reliable topic: a good payload
    ppub.publish(inertia_msg("link5", *ON_LINK5))
    want = reference(urdf, {"link5": ON_LINK5}).gravity(q)
    sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q), rec, timeout=60,
                              accept=lambda m: close(m.effort, want))
    assert got is not None, node.log()
    d = wait_for(lambda: (lambda x: x if x and int(x["payloads_rejected"]) >= rejected0 + 3
                          else None)(diagnostics_of(diag, node.fqn)), timeout=60)
    assert d and int(d["payloads_rejected"]) == rejected0 + 3, d
    assert d["payloads"] == "link5: 0.7 kg", d
    # the warning is throttled (the first is logged), the last reason is in diagnostics
    assert "payload message refused: inertia.m" in node.log()
    assert "payload message refused: header.frame_id: 'flang'" in d["last_error"], d
    assert "did you mean ['flange']" in d["last_error"], d
    ppub.publish(inertia_msg("link5", 0.0, (0, 0, 0), (0,) * 6))
    want = reference(urdf).gravity(q)
    sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q), rec, timeout=60,
                              accept=lambda m: close(m.effort, want))
    assert got is not None
    client.node.destroy_publisher(ppub)


def renamed_flange_urdf(urdf):
    """The arm with link1 heavier and the flange renamed (tool0)."""
    out = urdf.replace('<link name="flange"/>', '<link name="tool0"/>').replace(
        '<child link="flange"/>', '<child link="tool0"/>')
    heavier = out.replace('<mass value="1.66656"/>', '<mass value="2.5"/>')
    assert heavier != out and '"flange"' not in heavier
    return heavier


def test_payload_survives_a_robot_description_update(client, node, io, arm):
    urdf, _ = arm
    pub, rec, diag = io
    q = np.array([0.2, 0.4, -0.3, -1.2, 0.8, 1.1, -0.6])
    resp = set_payload(client, node, ("flange", *GRIPPED), ("link7", *ON_LINK5))
    assert resp.success, resp.message
    assert close(first_answer(pub, rec, q).effort,
                 reference(urdf, {"flange": GRIPPED, "link7": ON_LINK5}).gravity(q))
    new_urdf = renamed_flange_urdf(urdf)
    want = reference(new_urdf, {"link7": ON_LINK5}).gravity(q)
    assert orc.rel_err(want, reference(new_urdf).gravity(q)) > 1e-3  # the payload matters
    dpub = client.publisher(String, f"/{node.ns}/robot_description", QOS_LATCHED)
    try:
        dpub.publish(String(data=new_urdf))
        sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q), rec, timeout=30,
                                  accept=lambda m: close(m.effort, want))
        assert got is not None, node.log()
        assert "payload on link 'flange' dropped: the model has no link 'flange'" in node.log()
        d = wait_for(lambda: (lambda x: x if x and x["payloads"] == "link7: 0.7 kg" else None)(
            diagnostics_of(diag, node.fqn)), timeout=60)
        assert d, diagnostics_of(diag, node.fqn)
        # back to the original arm: the flange payload is gone for good, link7's stays
        dpub.publish(String(data=urdf))
        want = reference(urdf, {"link7": ON_LINK5}).gravity(q)
        sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q), rec, timeout=30,
                                  accept=lambda m: close(m.effort, want))
        assert got is not None, node.log()
    finally:
        client.node.destroy_publisher(dpub)
    resp = set_payload(client, node, ("link7", 0.0, (0, 0, 0), (0,) * 6))
    assert resp.success, resp.message


def test_latched_topic_and_start_up_payloads(client, arm):
    """A gripper driver latched its payload before the node started; the node also has
    a start-up payload from its parameters: both are in the first torques."""
    urdf, _ = arm
    ns = unique_ns("latch")
    ppub = client.publisher(InertiaStamped, f"/{ns}/rbd_dynamics/payload", QOS_PAYLOAD)
    ppub.publish(inertia_msg("flange", *GRIPPED))
    m3, c3, i3 = ON_LINK3
    node = NodeProcess(ns, {"urdf_file": "rbd_arm7", "max_state_age": 5.0,
                            "payload_links": ["link3"], "payload_masses": [m3],
                            "payload_coms": list(c3), "payload_inertias": list(i3)})
    try:
        rec = client.record(JointState, node.topic("gravity_torques_state"))
        diag = client.record(DiagnosticArray, "/diagnostics")
        pub = client.publisher(JointState, f"/{ns}/joint_states")
        q = np.array([0.5, -0.3, 0.2, -1.7, 0.1, 1.6, 0.4])
        want = reference(urdf, {"flange": GRIPPED, "link3": ON_LINK3}).gravity(q)
        assert orc.rel_err(want, reference(urdf, {"link3": ON_LINK3}).gravity(q)) > 1e-2
        sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q), rec, timeout=60,
                                  accept=lambda m: close(m.effort, want))
        assert got is not None, node.log()
        d = wait_for(lambda: (lambda x: x if x and x["payloads"] ==
                              "flange: 1.5 kg, link3: 0.4 kg" else None)(
            diagnostics_of(diag, node.fqn)), timeout=60)
        assert d, diagnostics_of(diag, node.fqn)
        assert d["command_friction"] in ("true", "false") and d["armature"] == "none"
    finally:
        node.stop()
        client.node.destroy_publisher(ppub)


def test_bad_start_up_payload_is_dropped_not_fatal(client, arm):
    urdf, _ = arm
    node = NodeProcess(unique_ns("badp"), {
        "urdf_file": "rbd_arm7", "max_state_age": 5.0,
        "payload_links": ["link3", "flange"], "payload_masses": [ON_LINK3[0], -1.0],
        "payload_coms": [*ON_LINK3[1], 0.0, 0.0, 0.0],
        "payload_inertias": [*ON_LINK3[2], 0.001, 0.0, 0.0, 0.001, 0.0, 0.001]})
    try:
        rec = client.record(JointState, node.topic("gravity_torques_state"))
        pub = client.publisher(JointState, f"/{node.ns}/joint_states")
        q = np.array([0.5, -0.3, 0.2, -1.7, 0.1, 1.6, 0.4])
        got = first_answer(pub, rec, q)
        assert close(got.effort, reference(urdf, {"link3": ON_LINK3}).gravity(q)), node.log()
        assert "payload on link 'flange' dropped: payload_masses[1]: expected a finite number" \
            in node.log()
    finally:
        node.stop()


# ------------------------------------------------------------------ friction, limits
def urdf_with_friction(urdf):
    """The arm with <dynamics damping friction> on every joint (different per joint)."""
    out = urdf
    for k, j in enumerate(ARM_JOINTS):
        tag = f'<joint name="{j}" type="revolute">'
        assert out.count(tag) == 1
        out = out.replace(tag, tag + f'\n    <dynamics damping="{0.1 + 0.05 * k}" '
                                     f'friction="{0.5 + 0.1 * k}"/>')
    return out


@pytest.fixture(scope="module")
def fnode(client, arm):
    urdf = urdf_with_friction(arm[0])
    n = NodeProcess(unique_ns("fric"), {"robot_description": urdf, "max_state_age": 5.0})
    yield n, urdf, rbd.Model.from_urdf(urdf)
    assert n.alive(), n.log()
    n.stop()


def test_trajectory_limit_violations_and_friction(client, fnode):
    node, urdf, model = fnode
    assert np.all(model.friction > 0) and np.all(model.damping > 0)
    lim = np.asarray(model.effort_limit)
    assert list(lim) == [87, 87, 87, 87, 12, 12, 12]
    rng = np.random.default_rng(5)
    n = 40
    Q = rng.uniform(-1.0, 1.0, (n, 7))
    V = rng.uniform(-1.0, 1.0, (n, 7))
    A = rng.uniform(-1.0, 1.0, (n, 7))
    A[7] = [0, 0, 0, 0, 800.0, 0, 0]          # joint5 far beyond its 12 N m
    A[23] = [1000.0, 0, 0, 0, 0, 0, -4000.0]   # joint1 (87 N m) and joint7 (12 N m)
    tau = rbd.rnea(model, Q, V, A) + rbd.friction(model, V, 0.01)
    assert orc.rel_err(tau, rbd.rnea(model, Q, V, A)) > 1e-3  # friction matters
    over = np.argwhere(np.abs(tau) > lim)
    assert 3 <= len(over) < n * 7 // 4
    assert {(7, 4), (23, 0), (23, 6)} <= {(int(i), int(k)) for i, k in over}
    order = [3, 0, 6, 1, 5, 2, 4]  # request joint order != model order
    traj = JointTrajectory(joint_names=[ARM_JOINTS[k] for k in order])
    traj.points = [JointTrajectoryPoint(positions=Q[i, order].tolist(),
                                        velocities=V[i, order].tolist(),
                                        accelerations=A[i, order].tolist()) for i in range(n)]
    req = InverseDynamicsTrajectory.Request(trajectory=traj, include_friction=True)
    resp = client.call(InverseDynamicsTrajectory, node.topic("inverse_dynamics_trajectory"), req,
                       timeout=60)
    assert resp.success, resp.message
    eff = np.array([p.effort for p in resp.trajectory.points])
    assert close(eff, tau[:, order])
    expect = sorted((int(i), ARM_JOINTS[k]) for i, k in over)
    got = [(v.point, v.joint) for v in resp.limit_violations]
    assert sorted(got) == expect
    assert got == sorted(got, key=lambda x: (x[0], traj.joint_names.index(x[1])))
    for v in resp.limit_violations:
        k = ARM_JOINTS.index(v.joint)
        assert v.limit == lim[k] and abs(v.effort - tau[v.point, k]) <= TOL * abs(tau[v.point, k])
        assert abs(v.effort) > v.limit
    assert f"{len(expect)} effort limit violations" in resp.message, resp.message

    # without include_friction: exactly rnea (the friction term is opt-in)
    req = InverseDynamicsTrajectory.Request(trajectory=traj)
    resp = client.call(InverseDynamicsTrajectory, node.topic("inverse_dynamics_trajectory"), req)
    assert resp.success, resp.message
    assert close(np.array([p.effort for p in resp.trajectory.points]),
                 rbd.rnea(model, Q, V, A)[:, order])

    # a trajectory within the limits: no violations, plain message
    traj.points = traj.points[:7]
    resp = client.call(InverseDynamicsTrajectory, node.topic("inverse_dynamics_trajectory"),
                       InverseDynamicsTrajectory.Request(trajectory=traj, include_friction=True))
    assert resp.success and len(resp.limit_violations) == 0 and resp.message == "ok: 7 points"


def test_single_inverse_dynamics_friction_and_violation(client, fnode):
    node, urdf, model = fnode
    q = np.array([0.1, 0.2, -0.1, -1.5, 0.2, 1.2, 0.0])
    v = np.array([0.5, -0.4, 0.3, 0.2, -0.6, 0.1, 0.05])
    a = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3000.0])
    tau = rbd.rnea(model, q, v, a) + rbd.friction(model, v, 0.01)
    assert abs(tau[6]) > 12 and np.all(np.abs(tau[:6]) < model.effort_limit[:6])
    req = InverseDynamics.Request(name=ARM_JOINTS, position=q.tolist(), velocity=v.tolist(),
                                  acceleration=a.tolist(), include_friction=True)
    resp = client.call(InverseDynamics, node.topic("inverse_dynamics"), req, timeout=60)
    assert resp.success, resp.message
    assert close(resp.effort, tau)
    (viol,) = resp.limit_violations
    assert (viol.joint, viol.point, viol.limit) == ("joint7", 0, 12.0)
    assert abs(viol.effort - tau[6]) <= TOL * abs(tau[6])
    assert "1 effort limit violation" in resp.message
    req.include_friction = False
    resp = client.call(InverseDynamics, node.topic("inverse_dynamics"), req)
    assert close(resp.effort, rbd.rnea(model, q, v, a))


# ------------------------------------------------------------------ armature
def test_armature_parameter_adds_to_the_inertia_matrix(client, arm):
    urdf, model = arm
    joints = ARM_JOINTS[::-1]                       # output order != model order
    arm_out = [0.05, 0.0, 0.1, 0.2, 0.3, 0.15, 0.25]   # in `joints` order
    arm_model = np.array(arm_out[::-1])
    node = NodeProcess(unique_ns("arm"), {"urdf_file": "rbd_arm7", "max_state_age": 5.0,
                                          "joints": joints, "armature": arm_out})
    try:
        rec = client.record(Float64MultiArray, node.topic("inertia_matrix"))
        grec = client.record(JointState, node.topic("gravity_torques_state"))
        diag = client.record(DiagnosticArray, "/diagnostics")
        pub = client.publisher(JointState, f"/{node.ns}/joint_states")
        q = np.array([0.3, -0.2, 0.5, -1.4, 0.6, 1.3, -0.7])
        perm = [ARM_JOINTS.index(j) for j in joints]
        H0 = reference(urdf).crba(q)
        Ha = reference(urdf, armature=arm_model).crba(q)
        assert np.allclose(Ha - H0, np.diag(arm_model), atol=1e-12, rtol=0)
        got = first_answer(pub, grec, q)
        assert close(got.effort, reference(urdf).gravity(q)[perm])  # gravity unaffected
        assert wait_for(lambda: rec.latest() is not None
                        and close(array_of(rec.latest()).reshape(7, 7), Ha[np.ix_(perm, perm)]),
                        timeout=60), (array_of(rec.latest()) if rec.latest() else None)
        d = wait_for(lambda: (lambda x: x if x and x["armature"] != "none" else None)(
            diagnostics_of(diag, node.fqn)), timeout=60)
        assert d["armature"] == ("joint1: 0.25, joint2: 0.15, joint3: 0.3, joint4: 0.2, "
                                 "joint5: 0.1, joint7: 0.05"), d

        # forward dynamics (service worker) uses it
        v = np.full(7, 0.2)
        tau = np.linspace(-5, 5, 7)
        fd = client.call(ForwardDynamics, node.topic("forward_dynamics"),
                         ForwardDynamics.Request(name=ARM_JOINTS, position=q.tolist(),
                                                 velocity=v.tolist(), effort=tau.tolist()),
                         timeout=60)
        assert fd.success, fd.message
        assert close(fd.acceleration, reference(urdf, armature=arm_model).aba(q, v, tau))

        # run time: refused when negative / wrong length (reason names it), applied when good
        r = set_params(client, node, armature=[0.1, -0.2, 0, 0, 0, 0, 0])[0]
        assert not r.successful and "armature[1]: expected a number in [0, 1e+12]" in r.reason, r.reason
        r = set_params(client, node, armature=[0.1, 0.2])[0]
        assert not r.successful and "armature: 2 values, expected 7" in r.reason
        r = set_params(client, node, armature=[float("nan")] + [0.0] * 6)[0]
        assert not r.successful and "armature[0]: expected a number in [0, 1e+12]" in r.reason
        r = set_params(client, node, armature=[0.0] * 6 + [1.7e308])[0]
        assert not r.successful and "armature[6]: expected a number in [0, 1e+12]" in r.reason
        arm2 = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5])   # joint1 only (joints order)
        r = set_params(client, node, armature=arm2)[0]
        assert r.successful, r.reason
        H2 = H0.copy()
        H2[0, 0] += 0.5

        def h_is(H):
            first_answer(pub, grec, q)   # keeps the outputs flowing
            return close(array_of(rec.latest()).reshape(7, 7), H[np.ix_(perm, perm)])
        assert wait_for(lambda: h_is(H2), timeout=30)
    finally:
        node.stop()


# ------------------------------------------------------------------ ROS-free parts
def test_payload_module_parses_checks_and_labels_fields(arm):
    urdf, model = arm
    ps = pl.from_params(["flange", "link3"], [GRIPPED[0], ON_LINK3[0]],
                        [*GRIPPED[1], *ON_LINK3[1]], [*GRIPPED[2], *ON_LINK3[2]])
    assert [p.link for p in ps] == ["flange", "link3"] and ps[1].com == ON_LINK3[1]
    for args, words in (
            ((["a"], [1.0, 2.0], [0.0] * 3, [0.0] * 6), "payload_masses: 2 values for 1"),
            ((["a"], [1.0], [0.0] * 2, [0.0] * 6), "payload_coms: 2 values for 1"),
            ((["a"], [1.0], [0.0] * 3, [0.0] * 5), "payload_inertias: 5 values for 1"),
            ((["a", "a"], [1.0] * 2, [0.0] * 6, [0.0] * 12), "payload_links: ['a'] listed")):
        with pytest.raises(pl.PayloadError, match=r"^" + words.replace("[", r"\[").replace(
                "]", r"\]")):
            pl.from_params(*args)
    # the core's checks, re-labelled with the parameter that holds the value
    bad = pl.from_params(["link3"], [1.0], [0.0] * 3, [0.001, 0.0, 0.0, 0.001, 0.0, 0.01])[0]
    with pytest.raises(pl.PayloadError, match=r"^payload_inertias\[0:6\]: .*triangle"):
        pl.apply_payloads(model, {}, [bad])
    # all or nothing, mass 0 removes, a later entry on the same link wins
    cur = pl.apply_payloads(model, {}, ps)
    assert sorted(cur) == ["flange", "link3"]
    msg = inertia_msg("link3", 0.0, (0, 0, 0), (0,) * 6)
    new = pl.apply_payloads(model, cur, [pl.from_inertia_stamped(msg, "payloads[0].")])
    assert sorted(new) == ["flange"] and sorted(cur) == ["flange", "link3"]
    twice = [pl.from_inertia_stamped(inertia_msg("link5", *ON_LINK5)),
             pl.from_inertia_stamped(inertia_msg("link5", *ON_LINK3))]
    assert pl.apply_payloads(model, {}, twice)["link5"].mass == ON_LINK3[0]
    with pytest.raises(pl.PayloadError, match=r"^payloads\[1\]\.inertia\.m: "):
        pl.apply_payloads(model, cur, [pl.from_inertia_stamped(inertia_msg("link5", *ON_LINK5)),
                                       pl.from_inertia_stamped(inertia_msg("link5", -1.0, (0, 0, 0),
                                                                           (0,) * 6), "payloads[1].")])
    with pytest.raises(pl.PayloadError, match=r"^inertia\.com: expected finite"):
        pl.apply_payloads(model, cur, [pl.from_inertia_stamped(
            inertia_msg("link3", 0.0, (float("nan"), 0, 0), (0,) * 6))])


def test_build_runtime_armature_payloads_and_dropped(arm):
    urdf, model = arm
    ps = {p.link: p for p in pl.from_params(
        ["flange", "gone", "link3"], [GRIPPED[0], 1.0, -1.0],
        [*GRIPPED[1], 0, 0, 0, *ON_LINK3[1]], [*GRIPPED[2], *ON_LINK3[2], *ON_LINK3[2]])}
    joints = ("joint3", "joint1")
    rt = mb.build_robot(urdf, floating_base=False, mimic=True, gravity=(0, 0, -9.81),
                          joints=joints, source="test", armature=[0.2, 0.0], payloads=ps)
    assert sorted(rt.options["payloads"]) == ["flange"]
    dropped = dict(rt.options["dropped_payloads"])
    assert dropped["gone"] == "the model has no link 'gone'"
    assert dropped["link3"].startswith("payload_masses[2]: expected a finite number >= 0")
    assert rt.options["armature"] == {"joint3": 0.2}
    assert list(rt.model.armature) == [0, 0, 0.2, 0, 0, 0, 0]
    ref = model.with_payload("flange", GRIPPED[0], GRIPPED[1], sym(GRIPPED[2]))
    q = np.linspace(-1, 1, 7)
    assert np.array_equal(rbd.gravity(rt.model, q), rbd.gravity(ref, q))
    assert mb.payloads_text(rt.model) == "flange: 1.5 kg" and mb.armature_text(rt) == "joint3: 0.2"
    with pytest.raises(pl.PayloadError, match=r"armature\[1\] \(joint1\): expected a finite"):
        mb.build_robot(urdf, floating_base=False, mimic=True, gravity=(0, 0, -9.81),
                         joints=joints, source="test", armature=[0.2, -1.0])
    # the worker's model command carries the same model
    from rbd_ros.node import protocol
    line = protocol.model_command(urdf, "test", False, True, (0, 0, -9.81), rt.options["armature"],
                                  tuple(rt.options["payloads"].values()), 0.05)
    kw = protocol.parse_model_command(line)
    assert kw["friction_velocity_eps"] == 0.05 and kw["armature"] == {"joint3": 0.2}
    w = mb.build_robot(joints=(), **kw)
    assert np.array_equal(w.model.mi, rt.model.mi) and w.options["payloads"] == rt.options["payloads"]
    # a payload change keeps the armature and the joints
    rt2 = mb.with_payloads(rt, {})
    assert rt2.out_names == joints and list(rt2.model.armature) == list(rt.model.armature)
    assert np.array_equal(rt2.model.mi, model.with_armature(rt.model.armature).mi)


def test_diagnostics_show_payloads_armature_friction(arm):
    from rbd_ros.node.diagnostics import build_status
    from rbd_ros.node.stats import Stats
    urdf, _ = arm
    rt = mb.build_robot(urdf, floating_base=False, mimic=True, gravity=(0, 0, -9.81), joints=(),
                          source="t", armature=[0, 0.1, 0, 0, 0, 0, 0.02],
                          payloads={"link5": pl.from_params(["link5"], [ON_LINK5[0]], ON_LINK5[1],
                                                            ON_LINK5[2])[0]})
    v = {kv.key: kv.value for kv in build_status("/n", rt, Stats(), 0.0, 0.1, services="on",
                                                  command_friction=True,
                                                  payload_rejected=4).values}
    assert v["payloads"] == "link5: 0.7 kg" and v["armature"] == "joint2: 0.1, joint7: 0.02"
    assert v["command_friction"] == "true" and v["payloads_rejected"] == "4"
    v = {kv.key: kv.value for kv in build_status("/n", None, Stats(), 0.0, 0.1,
                                                  services="on").values}
    assert v["command_friction"] == "false" and "payloads" not in v
