"""C(q, v)ᵀ v, the momentum observer's term: against Pinocchio's
computeCoriolisMatrix (reduced through the mimic map G), and the identity it
relies on, Ḣ = C + Cᵀ, checked along trajectories (Ḣ by a fourth-order
central difference of H(q(t)) in time)."""
import numpy as np
import oracle as orc
import pinocchio as pin
import pytest
from core_util import integrate, random_state, random_tree_urdf

import rbd_ros.core as rbd


@pytest.mark.parametrize("robot,mimic", [("panda", True), ("ur5", False), ("solo12", False),
                                         ("talos_full_v2", True)])
def test_coriolis_transpose_v_equals_pinocchio(robot, mimic):
    urdf = orc.robot_urdf(robot)
    fb = orc.ROBOTS[robot][1]
    model = rbd.Model.from_urdf(urdf, floating_base=fb, mimic=mimic)
    o = orc.Oracle(urdf, floating_base=fb, mimic=mimic, layout=model)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v, _, _ = o.random_state(rng)
        C_full = pin.computeCoriolisMatrix(o.model, o.model.createData(), o.q_to_pin(q), o.v_to_pin(v))
        want = o.reduce_matrix(C_full).T @ v
        got = rbd.coriolis_transpose_v(model, q, v)
        assert np.max(np.abs(got - want)) <= 1e-9 * max(1.0, np.max(np.abs(want)))


@pytest.mark.parametrize("seed,fb,nmim", [(29, False, 2), (21, True, 2), (32, True, 0)])
def test_hdot_equals_c_plus_c_transpose_along_a_trajectory(seed, fb, nmim):
    """q(t) = q0 (+) v t (free-flyer on the manifold), v constant in the model's
    coordinates: Ḣ(t) = dH/dt from H at t ± h, t ± 2h (O(h⁴)), against C + Cᵀ, with
    C^T v checked against (C + Cᵀ) v - C v = Ḣ v - C v at the same time."""
    model = rbd.Model.from_urdf(random_tree_urdf(seed, 9, mimic=nmim), floating_base=fb)
    rng = np.random.default_rng(seed)
    q0, v, _ = random_state(model, rng)
    h = 1e-4
    for t in (0.0, 0.3, 0.7):
        q = integrate(model, q0, v, t)
        H = [rbd.crba(model, integrate(model, q0, v, t + k * h)) for k in (-2, -1, 1, 2)]
        Hdot = (H[0] - 8 * H[1] + 8 * H[2] - H[3]) / (12 * h)
        C = rbd.coriolis_matrix(model, q, v)
        scale = max(1.0, np.max(np.abs(Hdot)))
        assert np.max(np.abs(Hdot - (C + C.T))) <= 1e-6 * scale
        ctv = rbd.coriolis_transpose_v(model, q, v)
        assert np.max(np.abs(ctv - (Hdot @ v - C @ v))) <= 1e-6 * scale * max(1.0, np.max(np.abs(v)))
        assert np.max(np.abs(ctv - C.T @ v)) <= 1e-12 * max(1.0, np.max(np.abs(ctv)))
