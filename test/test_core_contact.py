"""external_wrench and CollisionDetector (rbd_ros/core/contact.py)."""
import math

import numpy as np
import oracle as orc
import pytest

import rbd_ros.core as rbd


@pytest.fixture(scope="module")
def panda():
    return rbd.Model.from_urdf(orc.robot_urdf("panda"), mimic=False)


@pytest.mark.parametrize("reference", ["local", "local_world_aligned", "world"])
def test_a_wrench_at_the_frame_is_recovered_exactly(panda, reference):
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.uniform(-1, 1, panda.nq)
        F = rng.normal(size=6) * [10, 10, 10, 1, 1, 1]
        J = rbd.frame_jacobian(panda, q, "panda_link7", reference)
        est = rbd.external_wrench(panda, q, J.T @ F, "panda_link7", reference)
        assert est.rank == 6
        assert np.max(np.abs(est.wrench - F)) <= 1e-9 * np.max(np.abs(F))
        assert np.max(np.abs(est.residual)) <= 1e-9 * np.max(np.abs(F))


def test_wrench_from_rnea_f_ext_in_the_link_frame(panda):
    """rnea(q, 0, 0, f_ext) - g(q) = -Jᵀ f_ext (f_ext on the link, local frame): the
    estimate at that link in 'local' is f_ext itself -- RNEA and the Jacobian agree."""
    rng = np.random.default_rng(2)
    q = rng.uniform(-1, 1, panda.nq)
    f = np.array([3.0, -2.0, 5.0, 0.3, -0.1, 0.2])
    z = np.zeros(panda.nv)
    tau_ext = rbd.gravity(panda, q) - rbd.rnea(panda, q, z, z, f_ext={"panda_hand": f})
    est = rbd.external_wrench(panda, q, tau_ext, "panda_hand", "local")
    assert np.max(np.abs(est.wrench - f)) <= 1e-9 * 5


def test_a_contact_elsewhere_leaves_a_residual(panda):
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, panda.nq)
    J3 = rbd.frame_jacobian(panda, q, "panda_link3")
    tau = J3.T @ np.array([0.0, 20.0, 0.0, 0.0, 0.0, 0.0])
    est = rbd.external_wrench(panda, q, tau, "panda_link7")
    assert est.rank == 6 and np.linalg.norm(est.residual) > 0.05 * np.linalg.norm(tau)
    low = rbd.external_wrench(panda, q, tau, "panda_link2")        # 2 joints above link2: rank 2
    assert low.rank == 2


def test_external_wrench_refuses_bad_input(panda):
    q = np.zeros(panda.nq)
    with pytest.raises(ValueError, match=r"^tau_ext: expected shape"):
        rbd.external_wrench(panda, q, np.zeros(3), "panda_hand")
    with pytest.raises(ValueError, match=r"^tau_ext: expected finite"):
        rbd.external_wrench(panda, q, np.full(panda.nv, np.nan), "panda_hand")
    with pytest.raises(ValueError, match=r"^frame: "):
        rbd.external_wrench(panda, q, np.zeros(panda.nv), "nope")
    with pytest.raises(TypeError, match="model"):
        rbd.external_wrench("panda", q, np.zeros(panda.nv), "panda_hand")


def test_collision_detector_debounce_hysteresis_onset():
    d = rbd.CollisionDetector([1.0, 2.0], debounce=0.005, release=0.5)
    s = None
    for k in range(10):                         # quiet
        s = d.update(k * 1e-3, [0.5, 1.0])
    assert not s.detected and s.distal == -1 and math.isnan(s.onset)
    onset = 10e-3
    states = [d.update(onset + k * 1e-3, [0.2, 3.0]) for k in range(8)]
    assert [x.detected for x in states] == [False] * 5 + [True] * 3     # 5 ms debounce
    assert states[-1].onset == pytest.approx(onset) and states[-1].worst == 1 and states[-1].distal == 1
    assert states[-1].ratios.tolist() == [0.2, 1.5]
    t = onset + 8e-3
    s = d.update(t, [0.2, 1.5])                 # below threshold, above release: stays up
    assert s.detected
    falls = [d.update(t + k * 1e-3, [0.2, 0.5]) for k in range(1, 8)]
    assert falls[4].detected and not falls[5].detected and math.isnan(falls[5].onset)
    s = d.update(t + 0.1, [np.nan, 5.0])        # no evidence: unchanged
    assert not s.detected
    with pytest.raises(ValueError, match="thresholds"):
        rbd.CollisionDetector([1.0, 0.0])
    with pytest.raises(ValueError, match="tau_ext"):
        d.update(1.0, [1.0])
