"""Internal identities of the dynamics on random trees with every joint type."""
import threading

import numpy as np
import pytest
from core_util import integrate, random_state, random_tree_urdf, rel_err

import rbd_ros.core as rbd
from rbd_ros.core.algorithms.reference.jcalc import x_up
from rbd_ros.core.algorithms.reference.rnea import world_transforms
from rbd_ros.core.algorithms.reference.tree import bodies as ref_bodies

TOL = 1e-9

CASES = [
    # (seed, joints, floating_base, mimic count)
    (1, 6, False, 0),
    (2, 10, False, 0),
    (3, 12, True, 0),
    (4, 9, False, 3),
    (5, 14, True, 4),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"seed{c[0]}-n{c[1]}-fb{int(c[2])}-mim{c[3]}")
def model(request):
    seed, n, fb, mim = request.param
    return rbd.Model.from_urdf(random_tree_urdf(seed, n, mimic=mim), floating_base=fb)


def states(model, k=3, seed=0):
    rng = np.random.default_rng(seed)
    return [random_state(model, rng) for _ in range(k)]


def test_inertia_matrix_symmetric_positive_definite(model):
    for q, _, _ in states(model):
        H = rbd.crba(model, q)
        assert np.allclose(H, H.T, rtol=0, atol=1e-12 * np.abs(H).max())
        assert np.linalg.eigvalsh(H)[0] > 0


def test_rnea_splits_into_H_a_plus_bias(model):
    for q, v, a in states(model):
        tau = rbd.rnea(model, q, v, a)
        assert rel_err(tau, rbd.crba(model, q) @ a + rbd.bias(model, q, v)) < TOL
        assert rel_err(rbd.rnea(model, q, v, np.zeros(model.nv)), rbd.bias(model, q, v)) < TOL
        z = np.zeros(model.nv)
        assert rel_err(rbd.rnea(model, q, z, z), rbd.gravity(model, q)) < TOL


def test_forward_dynamics_inverts_inverse_dynamics(model):
    for q, v, a in states(model):
        tau = rbd.rnea(model, q, v, a)
        assert rel_err(rbd.forward_dynamics(model, q, v, tau), a) < 1e-8
        assert rel_err(rbd.aba(model, q, v, tau), rbd.forward_dynamics(model, q, v, tau)) < 1e-8


def test_coriolis_matrix_times_v_is_bias_minus_gravity(model):
    for q, v, _ in states(model):
        C = rbd.coriolis_matrix(model, q, v)
        assert rel_err(C @ v, rbd.bias(model, q, v) - rbd.gravity(model, q)) < TOL


def test_Hdot_minus_2C_is_skew_symmetric(model):
    eps = 1e-6
    for q, v, _ in states(model):
        Hdot = (rbd.crba(model, integrate(model, q, v, eps))
                - rbd.crba(model, integrate(model, q, v, -eps))) / (2 * eps)
        N = Hdot - 2 * rbd.coriolis_matrix(model, q, v)
        assert np.abs(N + N.T).max() < 1e-6 * max(1.0, np.abs(N).max())


def test_ltdl_factor_and_solve(model):
    q, _, _ = states(model, 1)[0]
    H = rbd.crba(model, q)
    LD = rbd.ltdl(model, H)
    L, D = rbd.ltdl_unpack(LD)
    assert rel_err(L.T @ np.diag(D) @ L, H) < 1e-12
    b = np.arange(model.nv, dtype=float)
    assert rel_err(H @ rbd.ltdl_solve(model, LD, b), b) < 1e-9
    B = np.random.default_rng(1).normal(size=(3, model.nv))
    assert rel_err(rbd.ltdl_solve(model, LD, B) @ H.T, B) < 1e-9


def test_external_forces_local_and_world_agree(model):
    """The same physical wrench given in the link frame and in the world frame."""
    rng = np.random.default_rng(7)
    q, v, a = random_state(model, rng)
    nl = len(model.link_names)
    local = rng.normal(size=(nl, 6))
    # each link's world placement from the reference twin (independent of the
    # kernels): X0_b = plux(E, r) is world -> body b, so body b sits at
    # R_b = Eᵀ, p_b = r, and the link at R_b R_L, p_b + R_b p_L
    tree = ref_bodies(model)
    X0 = world_transforms(tree, [x_up(b, q) for b in tree])
    world = np.zeros_like(local)
    for k, info in enumerate(model.links):
        if info.body < 0:
            R_b, p_b = np.eye(3), np.zeros(3)
        else:
            E = X0[info.body][:3, :3]
            rx = -E.T @ X0[info.body][3:, :3]
            R_b, p_b = E.T, np.array([rx[2, 1], rx[0, 2], rx[1, 0]])
        R, p = R_b @ info.R, p_b + R_b @ info.p
        f, tau = R @ local[k, :3], R @ local[k, 3:]
        world[k] = np.concatenate([f, tau + np.cross(p, f)])     # moment about the world origin
    tau0 = rbd.rnea(model, q, v, a)
    tau_l = rbd.rnea(model, q, v, a, f_ext=local, f_ext_frame="local")
    tau_w = rbd.rnea(model, q, v, a, f_ext=world, f_ext_frame="world")
    assert np.linalg.norm(tau_l - tau0) > 1e-3 * (1 + np.linalg.norm(tau0))
    assert rel_err(tau_l, tau_w) <= TOL
    # the frame matters: the local numbers read as world ones give other torques
    assert rel_err(rbd.rnea(model, q, v, a, f_ext=local, f_ext_frame="world"), tau_l) > 1e-3
    # forward dynamics with the same wrench inverts rnea with it, in both frames
    for frame in rbd.FEXT_FRAMES:
        tau = rbd.rnea(model, q, v, a, f_ext=local, f_ext_frame=frame)
        assert rel_err(rbd.forward_dynamics(model, q, v, tau, f_ext=local, f_ext_frame=frame), a) < 1e-8
        assert rel_err(rbd.aba(model, q, v, tau, f_ext=local, f_ext_frame=frame), a) < 1e-8
    # linearity in f_ext
    tau_2l = rbd.rnea(model, q, v, a, f_ext=2 * local, f_ext_frame="local")
    assert rel_err(tau_2l - tau0, 2 * (tau_l - tau0)) < 1e-9
    # a dict names links
    name = model.link_names[-1]
    d = rbd.rnea(model, q, v, a, f_ext={name: local[-1]})
    only = np.zeros_like(local)
    only[-1] = local[-1]
    assert rel_err(d, rbd.rnea(model, q, v, a, f_ext=only)) < 1e-12


def test_batch_equals_single_calls(model):
    rng = np.random.default_rng(11)
    S = [random_state(model, rng) for _ in range(7)]
    Q, V, A = (np.array([s[k] for s in S]) for k in range(3))
    tau = rbd.rnea(model, Q, V, A)
    assert tau.shape == (7, model.nv)
    for n in range(7):
        assert np.array_equal(tau[n], rbd.rnea(model, Q[n], V[n], A[n]))
        assert np.array_equal(rbd.gravity(model, Q)[n], rbd.gravity(model, Q[n]))
        assert np.array_equal(rbd.bias(model, Q, V)[n], rbd.bias(model, Q[n], V[n]))
        assert np.array_equal(rbd.crba(model, Q)[n], rbd.crba(model, Q[n]))
        assert np.array_equal(rbd.forward_dynamics(model, Q, V, tau)[n],
                              rbd.forward_dynamics(model, Q[n], V[n], tau[n]))
        assert np.array_equal(rbd.aba(model, Q, V, tau)[n], rbd.aba(model, Q[n], V[n], tau[n]))
        assert np.array_equal(rbd.coriolis_matrix(model, Q, V)[n], rbd.coriolis_matrix(model, Q[n], V[n]))
    F = rng.normal(size=(7, len(model.link_names), 6))
    for frame in rbd.FEXT_FRAMES:
        tb = rbd.rnea(model, Q, V, A, f_ext=F, f_ext_frame=frame)
        for n in range(7):
            # the per-link -> per-body map is a BLAS product: last-bit differences
            assert rel_err(tb[n], rbd.rnea(model, Q[n], V[n], A[n], f_ext=F[n], f_ext_frame=frame)) < 1e-13


def test_threads_do_not_share_scratch_memory(model):
    rng = np.random.default_rng(5)
    S = [random_state(model, rng) for _ in range(4)]
    ref = [rbd.rnea(model, *s) for s in S]
    bad = []

    def work(k):
        for _ in range(3000):
            if not np.array_equal(rbd.rnea(model, *S[k]), ref[k]):
                bad.append(k)
                return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_mimic_true_is_the_reduction_of_mimic_false():
    text = random_tree_urdf(21, 10, types=("revolute", "prismatic", "fixed"), mimic=3)
    dep = rbd.Model.from_urdf(text, mimic=True)
    ind = rbd.Model.from_urdf(text, mimic=False)
    assert dep.mimic_joints and ind.nv == dep.nv + len(dep.mimic_joints)
    G = np.zeros((ind.nv, dep.nv))
    off = np.zeros(ind.nq)
    for k, name in enumerate(ind.joint_names):
        master, mult, o = dep.mimic_joints.get(name, (name, 1.0, 0.0))
        G[ind.idx_v[k], dep.v_index(master)] = mult
        off[ind.idx_q[k]] = o
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, v, a = random_state(dep, rng)
        qf = G @ q + off
        assert rel_err(rbd.rnea(dep, q, v, a), G.T @ rbd.rnea(ind, qf, G @ v, G @ a)) < TOL
        assert rel_err(rbd.crba(dep, q), G.T @ rbd.crba(ind, qf) @ G) < TOL
        assert rel_err(rbd.gravity(dep, q), G.T @ rbd.gravity(ind, qf)) < TOL
        assert rel_err(rbd.coriolis_matrix(dep, q, v), G.T @ rbd.coriolis_matrix(ind, qf, G @ v) @ G) < TOL
        tau = rbd.rnea(dep, q, v, a)
        assert rel_err(rbd.forward_dynamics(dep, q, v, tau), a) < 1e-8
        assert rel_err(rbd.aba(dep, q, v, tau), a) < 1e-8
