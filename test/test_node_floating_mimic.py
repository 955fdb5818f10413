"""End to end over real DDS with a floating base (solo12 from example-robot-data) and
with mimic + planar joints (a random tree): topics, single-state and trajectory
services, bad requests.  Expected values come from rbd_ros.core in this process."""
import numpy as np
import pytest
from core_util import close_rel, random_tree_urdf
from geometry_msgs.msg import Accel, Pose, Twist, Wrench
from oracle import robot_urdf
from ros_harness import (
    Float64MultiArray,
    JointState,
    NodeProcess,
    array_of,
    joint_state,
    publish_until,
    unique_ns,
    wait_for,
)
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.core as rbd
from rbd_ros_interfaces.srv import (
    ForwardDynamics,
    ForwardDynamicsTrajectory,
    InverseDynamics,
    InverseDynamicsTrajectory,
)

# ------------------------------------------------------------------ floating base

@pytest.fixture(scope="module")
def solo():
    path = robot_urdf("solo12")
    with open(path) as f:
        model = rbd.Model.from_urdf(f.read(), floating_base=True)
    return path, model


@pytest.fixture(scope="module")
def solo_node(client, solo):
    path, _ = solo
    n = NodeProcess(unique_ns("solo"), {"urdf_file": path, "floating_base": True,
                                        "max_state_age": 2.0})
    yield n
    assert n.alive(), n.log()
    n.stop()


def solo_joints(model):
    return [n for n in model.joint_names if n != "root_joint"]


def pose(x, y, z, qx, qy, qz, qw):
    p = Pose()
    p.position.x, p.position.y, p.position.z = float(x), float(y), float(z)
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = (
        float(qx), float(qy), float(qz), float(qw))
    return p


def six(msg_type, x):
    m = msg_type()
    a, b = (m.force, m.torque) if msg_type is Wrench else (m.linear, m.angular)
    a.x, a.y, a.z, b.x, b.y, b.z = (float(c) for c in x)
    return m


def six_of(m):
    a, b = (m.force, m.torque) if isinstance(m, Wrench) else (m.linear, m.angular)
    return np.array([a.x, a.y, a.z, b.x, b.y, b.z])


def base_state(rng):
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    return np.r_[rng.uniform(-1, 1, 3), quat], rng.uniform(-1, 1, 6), rng.uniform(-2, 2, 6)


def test_floating_base_topics_keep_the_base_neutral_and_at_rest(client, solo, solo_node):
    _, model = solo
    names = solo_joints(model)
    assert model.nv == 18 and len(names) == 12
    rec_g = client.record(Float64MultiArray, solo_node.topic("gravity_torques"))
    rec_b = client.record(Float64MultiArray, solo_node.topic("bias_torques"))
    rec_h = client.record(Float64MultiArray, solo_node.topic("inertia_matrix"))
    rec_gs = client.record(JointState, solo_node.topic("gravity_torques_state"))
    pub = client.publisher(JointState, f"/{solo_node.ns}/joint_states")
    rng = np.random.default_rng(5)
    qj, vj = rng.uniform(-1.2, 1.2, 12), rng.uniform(-1, 1, 12)
    order = rng.permutation(12)
    sent, got = publish_until(pub, lambda: joint_state([names[i] for i in order], qj[order],
                                                       vj[order]), rec_gs, timeout=60)
    assert got is not None, solo_node.log()
    assert list(got.name) == names  # outputs: the joint DOFs in model order, no base
    q = np.array(model.neutral(), dtype=float)
    v = np.zeros(model.nv)
    q[7:], v[6:] = qj, vj  # solo12: 12 revolute joints after the free flyer
    assert [model.q_index(n) for n in names] == list(range(7, 19))
    g, b, H = rbd.gravity(model, q)[6:], rbd.bias(model, q, v)[6:], rbd.crba(model, q)[6:, 6:]
    assert close_rel(got.effort, g) and np.max(np.abs(g)) > 0.05
    assert wait_for(lambda: rec_g.latest() is not None and close_rel(array_of(rec_g.latest()), g))
    assert wait_for(lambda: rec_b.latest() is not None and close_rel(array_of(rec_b.latest()), b))
    assert wait_for(lambda: rec_h.latest() is not None
                    and close_rel(array_of(rec_h.latest()).reshape(12, 12), H))


def test_floating_base_single_state_services(client, solo, solo_node):
    _, model = solo
    names = solo_joints(model)
    rng = np.random.default_rng(6)
    qb, vb, ab = base_state(rng)
    qj, vj, aj = rng.uniform(-1.2, 1.2, 12), rng.uniform(-1, 1, 12), rng.uniform(-2, 2, 12)
    q, v, a = np.r_[qb, qj], np.r_[vb, vj], np.r_[ab, aj]
    rev = names[::-1]
    req = InverseDynamics.Request(name=rev, position=qj[::-1].tolist(), velocity=vj[::-1].tolist(),
                                  acceleration=aj[::-1].tolist(), base_pose=pose(*qb),
                                  base_velocity=six(Twist, vb), base_acceleration=six(Accel, ab))
    resp = client.call(InverseDynamics, f"{solo_node.fqn}/inverse_dynamics", req, timeout=60)
    assert resp.success, resp.message
    tau = rbd.rnea(model, q, v, a)
    assert close_rel(np.asarray(resp.effort)[::-1], tau[6:])
    assert close_rel(six_of(resp.base_wrench), tau[:6]) and np.max(np.abs(tau[:6])) > 1.0

    req = ForwardDynamics.Request(name=rev, position=qj[::-1].tolist(), velocity=vj[::-1].tolist(),
                                  effort=tau[6:][::-1].tolist(), base_pose=pose(*qb),
                                  base_velocity=six(Twist, vb), base_wrench=six(Wrench, tau[:6]))
    resp = client.call(ForwardDynamics, f"{solo_node.fqn}/forward_dynamics", req)
    assert resp.success, resp.message
    # FD of ID gives the accelerations back, base included
    assert np.max(np.abs(np.asarray(resp.acceleration)[::-1] - aj)) <= 1e-8
    assert np.max(np.abs(six_of(resp.base_acceleration) - ab)) <= 1e-8

    # the default Pose is the identity (base at the origin, upright), at rest
    req = InverseDynamics.Request(name=names, position=qj.tolist())
    resp = client.call(InverseDynamics, f"{solo_node.fqn}/inverse_dynamics", req)
    q0 = np.array(model.neutral(), dtype=float)
    q0[7:] = qj
    assert resp.success and close_rel(resp.effort, rbd.gravity(model, q0)[6:])
    # a quaternion that is not unit is refused, naming the field
    req = InverseDynamics.Request(name=names, position=qj.tolist(),
                                  base_pose=pose(0, 0, 0, 0.5, 0, 0, 0.5))
    resp = client.call(InverseDynamics, f"{solo_node.fqn}/inverse_dynamics", req)
    assert not resp.success and "base_pose.orientation must be a unit quaternion" in resp.message


def base_trajectory(names, Qj, Vj, Xj, field):
    t = JointTrajectory()
    t.joint_names = list(names)
    pts = []
    for i in range(Qj.shape[0]):
        p = JointTrajectoryPoint()
        p.positions, p.velocities = Qj[i].tolist(), Vj[i].tolist()
        setattr(p, field, Xj[i].tolist())
        pts.append(p)
    t.points = pts
    return t


def test_floating_base_trajectory_services(client, solo, solo_node):
    _, model = solo
    names = solo_joints(model)
    rng = np.random.default_rng(7)
    N = 20
    base = [base_state(rng) for _ in range(N)]
    Qb, Vb, Ab = (np.array([b[k] for b in base]) for k in range(3))
    Qj, Vj, Aj = rng.uniform(-1.2, 1.2, (N, 12)), rng.uniform(-1, 1, (N, 12)), rng.uniform(-2, 2, (N, 12))
    Q, V, A = np.c_[Qb, Qj], np.c_[Vb, Vj], np.c_[Ab, Aj]
    tau = rbd.rnea(model, Q, V, A)

    req = InverseDynamicsTrajectory.Request(
        trajectory=base_trajectory(names, Qj, Vj, Aj, "accelerations"),
        base_poses=[pose(*x) for x in Qb], base_velocities=[six(Twist, x) for x in Vb],
        base_accelerations=[six(Accel, x) for x in Ab])
    resp = client.call(InverseDynamicsTrajectory, f"{solo_node.fqn}/inverse_dynamics_trajectory",
                       req, timeout=60)
    assert resp.success, resp.message
    assert close_rel([p.effort for p in resp.trajectory.points], tau[:, 6:])
    assert len(resp.base_wrenches) == N
    assert close_rel([six_of(w) for w in resp.base_wrenches], tau[:, :6])

    # base velocities / accelerations may be empty (zero)
    req = InverseDynamicsTrajectory.Request(
        trajectory=base_trajectory(names, Qj, Vj, Aj, "accelerations"),
        base_poses=[pose(*x) for x in Qb])
    resp = client.call(InverseDynamicsTrajectory, f"{solo_node.fqn}/inverse_dynamics_trajectory",
                       req)
    assert resp.success, resp.message
    V0, A0 = V.copy(), A.copy()
    V0[:, :6] = A0[:, :6] = 0.0
    tau0 = rbd.rnea(model, Q, V0, A0)
    assert close_rel([six_of(w) for w in resp.base_wrenches], tau0[:, :6])

    req = ForwardDynamicsTrajectory.Request(
        trajectory=base_trajectory(names, Qj, Vj, tau[:, 6:], "effort"),
        base_poses=[pose(*x) for x in Qb], base_velocities=[six(Twist, x) for x in Vb],
        base_wrenches=[six(Wrench, x) for x in tau[:, :6]])
    resp = client.call(ForwardDynamicsTrajectory, f"{solo_node.fqn}/forward_dynamics_trajectory",
                       req)
    assert resp.success, resp.message
    assert np.max(np.abs(np.array([p.accelerations for p in resp.trajectory.points]) - Aj)) <= 1e-8
    assert np.max(np.abs(np.array([six_of(a) for a in resp.base_accelerations]) - Ab)) <= 1e-8

    # bad requests name the field
    traj = base_trajectory(names, Qj[:3], Vj[:3], Aj[:3], "accelerations")
    bad_quat = [pose(*x) for x in Qb[:3]]
    bad_quat[1] = pose(0, 0, 0, 0, 0, 0, 2.0)
    nan_twist = [six(Twist, x) for x in Vb[:3]]
    nan_twist[2].angular.y = float("nan")
    cases = [
        (dict(), "base_poses has 0 entries, expected 3 (one per trajectory point) for a "
                 "floating-base model"),
        (dict(base_poses=[pose(*Qb[0])]), "base_poses has 1 entries, expected 3"),
        (dict(base_poses=bad_quat), "base_poses[1]: base_pose.orientation must be a unit quaternion"),
        (dict(base_poses=[pose(*x) for x in Qb[:3]], base_velocities=[Twist()]),
         "base_velocities has 1 entries, expected 3 (one per trajectory point) or 0"),
        (dict(base_poses=[pose(*x) for x in Qb[:3]], base_velocities=nan_twist),
         "base_velocities[2] is not finite"),
    ]
    for fields, expect in cases:
        resp = client.call(InverseDynamicsTrajectory,
                           f"{solo_node.fqn}/inverse_dynamics_trajectory",
                           InverseDynamicsTrajectory.Request(trajectory=traj, **fields))
        assert not resp.success and expect in resp.message, (expect, resp.message)
    resp = client.call(ForwardDynamicsTrajectory, f"{solo_node.fqn}/forward_dynamics_trajectory",
                       ForwardDynamicsTrajectory.Request(
                           trajectory=traj, base_poses=[pose(*x) for x in Qb[:3]],
                           base_wrenches=[Wrench()] * 2))
    assert not resp.success and "base_wrenches has 2 entries, expected 3" in resp.message
    assert solo_node.alive()


# ------------------------------------------------------------------ mimic + planar

MIMIC_URDF = random_tree_urdf(21, 10, types=("revolute", "continuous", "prismatic", "planar"),
                              mimic=3)


def dof_names(model):
    """The node's DOF names: 1-DOF joints by name, planar joints as <joint>/x|y|theta;
    with (q index, v index) each."""
    out = []
    for jn, t, iq, iv in zip(model.joint_names, model.joint_types, model.idx_q, model.idx_v):
        if t == "planar":
            out += [(f"{jn}/{s}", iq + k, iv + k) for k, s in enumerate(("x", "y", "theta"))]
        else:
            out.append((jn, iq, iv))
    return out


def test_mimic_and_planar_joints_topics_and_services(client):
    model = rbd.Model.from_urdf(MIMIC_URDF)
    mimics = sorted(model.mimic_joints)
    assert len(mimics) >= 1 and "planar" in model.joint_types
    dofs = dof_names(model)
    names = [d[0] for d in dofs]
    node = NodeProcess(unique_ns("mimic"), {"robot_description": MIMIC_URDF, "max_state_age": 2.0})
    try:
        rec_gs = client.record(JointState, node.topic("gravity_torques_state"))
        rec_b = client.record(Float64MultiArray, node.topic("bias_torques"))
        rec_h = client.record(Float64MultiArray, node.topic("inertia_matrix"))
        pub = client.publisher(JointState, f"/{node.ns}/joint_states")
        rng = np.random.default_rng(8)
        x, xd = rng.uniform(-1, 1, len(names)), rng.uniform(-1, 1, len(names))
        # a driver also reports the mimic joints (with whatever values): ignored silently
        msg_names = names[::-1] + mimics
        msg_q = np.r_[x[::-1], np.full(len(mimics), 9.0)]
        msg_v = np.r_[xd[::-1], np.full(len(mimics), 9.0)]
        sent, got = publish_until(pub, lambda: joint_state(msg_names, msg_q, msg_v), rec_gs,
                                  timeout=60)
        assert got is not None, node.log()
        assert list(got.name) == names
        q = np.array(model.neutral(), dtype=float)
        v = np.zeros(model.nv)
        for (_, iq, iv), xi, vi in zip(dofs, x, xd):
            q[iq], v[iv] = xi, vi
        vi = [d[2] for d in dofs]
        g = rbd.gravity(model, q)[vi]
        assert close_rel(got.effort, g)
        assert wait_for(lambda: rec_b.latest() is not None
                        and close_rel(array_of(rec_b.latest()), rbd.bias(model, q, v)[vi]))
        n = len(names)
        assert wait_for(lambda: rec_h.latest() is not None
                        and close_rel(array_of(rec_h.latest()).reshape(n, n),
                                  rbd.crba(model, q)[np.ix_(vi, vi)]))
        assert "ignoring joints not in the model" not in node.log()

        a = rng.uniform(-2, 2, n)
        req = InverseDynamics.Request(name=names, position=x.tolist(), velocity=xd.tolist(),
                                      acceleration=a.tolist())
        resp = client.call(InverseDynamics, f"{node.fqn}/inverse_dynamics", req, timeout=60)
        assert resp.success, resp.message
        av = np.zeros(model.nv)
        av[vi] = a
        tau = rbd.rnea(model, q, v, av)
        assert close_rel(resp.effort, tau[vi])

        req = InverseDynamics.Request(name=names + [mimics[0]], position=np.r_[x, 0].tolist())
        resp = client.call(InverseDynamics, f"{node.fqn}/inverse_dynamics", req)
        master = model.mimic_joints[mimics[0]][0]
        assert not resp.success
        assert f"{mimics[0]!r} is a mimic joint of {master!r}" in resp.message, resp.message

        t = JointTrajectory()
        t.joint_names = names
        p = JointTrajectoryPoint()
        p.positions, p.velocities, p.effort = x.tolist(), xd.tolist(), tau[vi].tolist()
        t.points = [p, p]
        resp = client.call(ForwardDynamicsTrajectory, f"{node.fqn}/forward_dynamics_trajectory",
                           ForwardDynamicsTrajectory.Request(trajectory=t))
        assert resp.success, resp.message
        for pt in resp.trajectory.points:
            assert np.max(np.abs(np.asarray(pt.accelerations) - a)) <= 1e-8
        assert node.alive()
    finally:
        node.stop()
