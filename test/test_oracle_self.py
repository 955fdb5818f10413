"""Checks of the Pinocchio oracle itself (no rbd_ros needed): the conversions
it makes must agree with Pinocchio's own kinematics, or every comparison
against it would be meaningless."""

import numpy as np
import oracle as orc
import pinocchio as pin
import pytest

CASES = [("panda", True), ("kinova", True), ("solo12", True), ("talos_full_v2", True),
         ("talos_full_v2", False)]


@pytest.fixture(scope="module")
def oracles():
    cache = {}

    def get(name, mimic):
        if (name, mimic) not in cache:
            cache[name, mimic] = orc.Oracle(orc.robot_urdf(name), orc.ROBOTS[name][1], mimic)
        return cache[name, mimic]
    return get


def test_robots_dir_has_all_robots():
    for name in orc.ROBOTS:
        assert orc.os.path.isfile(orc.robot_urdf(name)), name


def test_expected_sizes(oracles):
    # URDF facts: panda has 1 mimic finger, talos 12 mimic gripper joints,
    # kinova 3 continuous joints.
    assert (oracles("panda", True).nv, oracles("panda", False).nv) == (8, 9)
    assert oracles("talos_full_v2", False).nv == 50
    assert oracles("talos_full_v2", True).nv == 50 - 12
    k = oracles("kinova", True)
    assert (k.nq, k.nv, k.nq_full) == (6, 6, 9)


@pytest.mark.parametrize("name,mimic", CASES)
def test_q_roundtrip_and_velocity_map(oracles, name, mimic):
    """q_to_pin / G agree with Pinocchio's differentiation of configurations:
    (q_full(q + eps v) -(pin) q_full(q)) / eps == G v (free-flyer at rest)."""
    o = oracles(name, mimic)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = o.random_q(rng)
        np.testing.assert_allclose(o.q_from_pin(o.q_to_pin(q)), q, rtol=0, atol=1e-12)
        v = rng.uniform(-1, 1, o.nv)
        dq = np.zeros(o.nq)
        lay = o.layout
        for nq, nv, iq, iv in zip(lay.joint_nq, lay.joint_nv, lay.idx_q, lay.idx_v):
            if nq == nv:
                dq[iq:iq + nq] = v[iv:iv + nv]
            else:  # free-flyer held still
                v[iv:iv + nv] = 0.0
        eps = 1e-6
        d = pin.difference(o.model, o.q_to_pin(q), o.q_to_pin(q + eps * dq)) / eps
        np.testing.assert_allclose(d, o.G @ v, rtol=0, atol=1e-6)
        np.testing.assert_allclose(o.v_from_pin(o.G @ v), v, rtol=0, atol=0)


def test_mimic_offset_applied():
    text = orc.with_mimic(orc._urdf_text(orc.robot_urdf("panda")), "panda_joint7",
                          "panda_joint1", 0.7, 0.3)
    o = orc.Oracle(text, False, True)
    assert "panda_joint7" not in o.layout.joint_names and o.nv == 7
    q = o.random_q(np.random.default_rng(2))
    qf = o.q_to_pin(q)
    pm = o.model
    j1 = pm.joints[pm.getJointId("panda_joint1")].idx_q
    j7 = pm.joints[pm.getJointId("panda_joint7")].idx_q
    assert qf[j7] == pytest.approx(0.7 * qf[j1] + 0.3, abs=1e-15)


@pytest.mark.parametrize("name,mimic", CASES)
def test_fext_maps_to_jacobian_transpose(oracles, name, mimic):
    """rnea(q,v,a,f) = rnea(q,v,a) - sum_k J_k^T f_k with J_k the link frame
    Jacobian (LOCAL: link axes, link origin); and the same wrenches given in
    world coordinates (about the world origin) give the same torques."""
    o = oracles(name, mimic)
    rng = np.random.default_rng(3)
    q, v, a, _ = o.random_state(rng)
    f = o.random_fext(rng)
    qf = o.q_to_pin(q)
    m, d = o.model, o.model.createData()
    pin.computeJointJacobians(m, d, qf)
    pin.updateFramePlacements(m, d)
    ref = o.rnea(q, v, a)
    f_world = np.empty_like(f)
    for k, link in enumerate(o.layout.link_names):
        fid = m.getFrameId(link, pin.FrameType.BODY)
        J = pin.getFrameJacobian(m, d, fid, pin.ReferenceFrame.LOCAL)
        ref = ref - o.G.T @ (J.T @ f[k])
        f_world[k] = d.oMf[fid].act(pin.Force(f[k, :3], f[k, 3:])).vector
    got = o.rnea(q, v, a, f, "local")
    assert orc.rel_err(got, ref) < 1e-12
    assert orc.rel_err(o.rnea(q, v, a, f_world, "world"), ref) < 1e-12
    as_dict = {link: f[k] for k, link in enumerate(o.layout.link_names)}
    assert orc.rel_err(o.rnea(q, v, a, as_dict, "local"), ref) < 1e-12


@pytest.mark.parametrize("name,mimic", CASES)
def test_reduced_quantities_consistent(oracles, name, mimic):
    o = oracles(name, mimic)
    rng = np.random.default_rng(4)
    q, v, a, tau = o.random_state(rng)
    H, g, b, C = o.crba(q), o.gravity(q), o.bias(q, v), o.coriolis_matrix(q, v)
    # H column by column from Pinocchio's RNEA: H e_j = rnea(q, 0, e_j) - g(q)
    # (the oracle mirrors pin.crba's upper triangle, so this checks both halves)
    z = np.zeros(o.nv)
    cols = np.array([o.rnea(q, z, e) - g for e in np.eye(o.nv)]).T
    assert orc.rel_err(H, cols) < 1e-12
    assert orc.rel_err(H @ a + b, o.rnea(q, v, a)) < 1e-12
    assert orc.rel_err(C @ v, b - g) < 1e-12
    qdd = o.forward_dynamics(q, v, tau)
    r, scale = o.fd_residual(q, v, qdd, tau)
    assert np.max(np.abs(r)) / scale < 1e-10
    r, scale = o.fd_residual(q, v, o.aba(q, v, tau), tau)
    assert np.max(np.abs(r)) / scale < 1e-10
