"""Where inertias are singular or tiny: ABA agrees with CRBA + LᵀDL (its fallback where
an articulated inertia is nearly singular: mimic joints, massless bodies, tiny masses,
single calls and threaded batches with external forces), and a singular or
ill-conditioned H is an error that says so (with its condition), never a number.
Each case reproduced a defect first (issues 8 and 17)."""
import re

import numpy as np
import pytest
from core_util import random_state, random_tree_urdf
from core_util import urdf_joint as joint
from core_util import urdf_link as link
from core_util import urdf_robot as robot

import rbd_ros.core as rbd


@pytest.fixture(scope="module")
def orc():
    """The Pinocchio oracle's helpers (panda from example-robot-data): the tests that use
    it are skipped where the oracles are not installed (the numba lower-bound venv,
    scripts/test_numba_bounds.sh, which runs this file's other tests)."""
    return pytest.importorskip("oracle")


def reference_qdd(m, q, v, tau):
    """solve(H, tau - b) with numpy, and cond(H)."""
    H = rbd.crba(m, q)
    return np.linalg.solve(H, tau - rbd.bias(m, q, v)), np.linalg.cond(H)


def scaled_cond(H):
    d = np.sqrt(np.diag(H))
    return np.linalg.cond(H / np.outer(d, d))


def free_mimic_urdf(mimic_mult="1.0"):
    """A prismatic joint 'slide', a massless link 'm' on a floating joint, and a
    hinge m -> c (axis -1.3 -0.4 -0.4) that mimics 'slide'."""
    mim = f'<mimic joint="slide" multiplier="{mimic_mult}"/>'
    return robot([link("base"), link("s"), '<link name="m"/>', link("c")],
                 [joint("slide", "base", "s", "prismatic", axis="1 0 0"),
                  joint("free", "base", "m", "floating"),
                  joint("hinge", "m", "c", "continuous", axis="-1.3 -0.4 -0.4", xyz="0.1 0.2 0.3", extra=mim)])


def test_aba_equals_forward_dynamics_with_mimic_on_a_massless_free_body():
    m = rbd.Model.from_urdf(free_mimic_urdf())
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, v, tau = random_state(m, rng)
        ref, cond = reference_qdd(m, q, v, tau)
        assert cond < 1e4                                   # H is well conditioned
        np.testing.assert_allclose(rbd.forward_dynamics(m, q, v, tau), ref, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(rbd.aba(m, q, v, tau), ref, rtol=1e-9, atol=1e-9)
        Q, V, T = (np.stack([x, x]) for x in (q, v, tau))
        np.testing.assert_allclose(rbd.aba(m, Q, V, T), np.stack([ref, ref]), rtol=1e-9, atol=1e-9)


def test_aba_falls_back_row_by_row_in_threaded_batches_with_external_forces():
    """aba's kernel reports a failed pivot; dynamics.aba computes those rows by CRBA +
    LᵀDL (single calls, and each such row of a batch split over threads)."""
    m = rbd.Model.from_urdf(free_mimic_urdf())
    rng = np.random.default_rng(3)
    Q, V, T = (np.stack(x) for x in zip(*(random_state(m, rng) for _ in range(40))))
    F = rng.normal(size=(40, len(m.link_names), 6))
    for frame in ("local", "world"):
        want = rbd.forward_dynamics(m, Q, V, T, f_ext=F, f_ext_frame=frame)
        np.testing.assert_allclose(rbd.aba(m, Q, V, T, f_ext=F, f_ext_frame=frame), want, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(rbd.aba(m, Q[7], V[7], T[7], f_ext=F[7], f_ext_frame=frame), want[7],
                                   rtol=1e-9, atol=1e-9)


def test_aba_works_when_a_mimic_joint_moves_a_massless_child():
    m = rbd.Model.from_urdf(robot([link("base"), link("s"), '<link name="c"/>'],
                                  [joint("slide", "base", "s", "prismatic", axis="1 0 0"),
                                   joint("hinge", "s", "c", extra='<mimic joint="slide"/>')]))
    assert m.nv == 1
    q, v, tau = np.array([0.2]), np.array([0.5]), np.array([0.7])
    ref, _ = reference_qdd(m, q, v, tau)
    np.testing.assert_allclose(rbd.forward_dynamics(m, q, v, tau), ref, rtol=1e-12)
    np.testing.assert_allclose(rbd.aba(m, q, v, tau), ref, rtol=1e-12)


def test_singular_inertia_is_reported_by_both_forward_dynamics_paths():
    m = rbd.Model.from_urdf(free_mimic_urdf(), mimic=False)
    rng = np.random.default_rng(2)
    q, v, tau = random_state(m, rng)
    assert np.linalg.eigvalsh(rbd.crba(m, q))[0] < 1e-12 * np.abs(rbd.crba(m, q)).max()
    for f in (rbd.forward_dynamics, rbd.aba):
        with pytest.raises(ValueError, match="singular"):
            f(m, q, v, tau)
        with pytest.raises(ValueError, match=r"singular.*batch row 0"):
            f(m, np.stack([q]), np.stack([v]), np.stack([tau]))
    with pytest.raises(ValueError, match="positive-definite"):
        rbd.ltdl(m, rbd.crba(m, q))


def test_nearly_singular_matrix_is_rejected_by_ltdl():
    m = rbd.Model.from_urdf(robot([link("base"), link("a"), link("b")],
                                  [joint("ja", "base", "a"), joint("jb", "a", "b")]))
    H = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-17]])
    with pytest.raises(ValueError, match="positive-definite"):
        rbd.ltdl(m, H)
    H = np.array([[1e-30, 0.0], [0.0, 1e-30]])          # tiny but well conditioned: fine
    np.testing.assert_allclose(rbd.ltdl_solve(m, rbd.ltdl(m, H), np.ones(2)), [1e30, 1e30])


@pytest.mark.parametrize("mass", ["1e-9", "1e-12", "1e-15", "1e-20", "5e-324"])
def test_aba_agrees_with_crba_ltdl_when_a_mimic_master_is_tiny(mass, orc):
    """panda, mimic on (finger_joint2 follows finger_joint1), panda_leftfinger of
    ``mass`` kg: the reduced H stays well conditioned (the right finger carries
    the joint), so ABA must return what CRBA + LᵀDL returns.  Was: error 1.6e-4 at
    1e-12 kg, 0.09 at 1e-15, wrong by 62 at 1e-20, "tau not finite" at 5e-324."""
    m = rbd.Model.from_urdf(orc.robot_text("panda", ("panda_leftfinger", mass)))
    assert "panda_finger_joint2" in m.mimic_joints
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, v, tau = random_state(m, rng)
        assert scaled_cond(rbd.crba(m, q)) < 1e3
        fd = rbd.forward_dynamics(m, q, v, tau)
        assert np.max(np.abs(rbd.aba(m, q, v, tau) - fd)) <= 1e-9 * max(1.0, np.max(np.abs(fd)))


@pytest.mark.parametrize("seed", [21, 26, 29, 35])
def test_aba_agrees_on_random_mimic_trees_with_tiny_bodies(seed):
    text = random_tree_urdf(seed, 9, mimic=2)
    rng = np.random.default_rng(seed)
    for tiny in ("1e-14", "1e-30"):
        k = int(rng.integers(1, 10))
        t = re.sub(rf'(<link name="l{k}"><inertial>.*?<mass value=")[^"]*"', rf'\g<1>{tiny}"', text, flags=re.S)
        m = rbd.Model.from_urdf(t)
        for _ in range(4):
            q, v, tau = random_state(m, rng)
            if scaled_cond(rbd.crba(m, q)) > 1e6:
                continue
            fd = rbd.forward_dynamics(m, q, v, tau)
            assert np.max(np.abs(rbd.aba(m, q, v, tau) - fd)) <= 1e-9 * max(1.0, np.max(np.abs(fd)))


def test_ill_conditioned_H_is_named_with_its_condition(orc):
    m = rbd.Model.from_urdf(orc.robot_text("panda"), mimic=False)
    m2 = m.with_payload("panda_hand", 1e6, [0, 0, 1e3], np.eye(3) * 1e12)
    q = np.full(m.nq, 0.3)
    with pytest.raises(ValueError, match=r"ill-conditioned at this q \(cond\(H\) ~ [0-9.e+]+ with its diagonal"):
        rbd.forward_dynamics(m2, q, q * 0, q * 0)
