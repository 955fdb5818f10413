"""rbd.compensation_into: g, b and H in a chosen DOF order, in one call."""
import numpy as np
import pytest
from core_util import random_state, random_tree_urdf

import rbd_ros.core as rbd


@pytest.fixture(scope="module", params=[(11, 9, False, 0), (12, 12, True, 3)],
                ids=["fixed", "floating-mimic"])
def model(request):
    seed, n, fb, mim = request.param
    return rbd.Model.from_urdf(random_tree_urdf(seed, n, mimic=mim), floating_base=fb)


def test_equals_separate_calls_in_any_order_and_subset(model):
    rng = np.random.default_rng(3)
    for trial in range(4):
        q, v, _ = random_state(model, rng)
        dofs = rbd.dof_indices(model, rng.permutation(model.nv)[: max(1, model.nv - trial)])
        m = len(dofs)
        g, b, H = np.full(m, np.nan), np.full(m, np.nan), np.full((m, m), np.nan)
        rbd.compensation_into(model, q, v, dofs, g, b, H)
        assert np.array_equal(g, rbd.gravity(model, q)[dofs])
        assert np.array_equal(b, rbd.bias(model, q, v)[dofs])
        assert np.array_equal(H, rbd.crba(model, q)[np.ix_(dofs, dofs)])
        # flat H, and b or H left out (None): what is asked for still comes out right
        Hf, b2 = np.full(m * m, 7.0), np.full(m, 7.0)
        rbd.compensation_into(model, q, v, dofs, g, b2, Hf)
        assert np.array_equal(Hf, H.ravel()) and np.array_equal(b2, b)
        g2, Hf2 = np.full(m, np.nan), np.full(m * m, np.nan)
        rbd.compensation_into(model, q, v, dofs, g2, None, Hf2)
        assert np.array_equal(g2, g) and np.array_equal(Hf2, H.ravel())
        g3, b3 = np.full(m, np.nan), np.full(m, np.nan)
        rbd.compensation_into(model, q, v, dofs, g3, b3, None)
        assert np.array_equal(g3, g) and np.array_equal(b3, b)
        g4 = np.full(m, np.nan)
        rbd.compensation_into(model, q, v, dofs, g4)
        assert np.array_equal(g4, g)


def test_default_dofs_are_model_order(model):
    assert np.array_equal(rbd.dof_indices(model), np.arange(model.nv))


def test_errors_name_the_argument(model):
    q, v = np.array(model.neutral(), dtype=float), np.zeros(model.nv)
    dofs = rbd.dof_indices(model)
    g = np.empty(model.nv)
    with pytest.raises(ValueError, match=r"dofs\[1\] = -1"):
        rbd.dof_indices(model, [0, -1])
    with pytest.raises(ValueError, match=rf"dofs\[0\] = {model.nv} is not a velocity index"):
        rbd.dof_indices(model, [model.nv])
    with pytest.raises(ValueError, match="dofs: expected an int64 array"):
        rbd.compensation_into(model, q, v, [0, 1], g)
    with pytest.raises(ValueError, match=rf"g: expected .* {model.nv} elements"):
        rbd.compensation_into(model, q, v, dofs, np.empty(model.nv + 1))
    with pytest.raises(ValueError, match=rf"H: expected .* {model.nv ** 2} elements"):
        rbd.compensation_into(model, q, v, dofs, g, None, np.empty(model.nv))
    with pytest.raises(ValueError, match="b: expected"):
        rbd.compensation_into(model, q, v, dofs, g, np.empty(model.nv, dtype=np.float32))
    bad = v.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="^v: expected finite"):
        rbd.compensation_into(model, q, bad, dofs, g, np.empty(model.nv))
    # gravity alone does not look at v
    rbd.compensation_into(model, q, bad, dofs, g)
    assert np.isfinite(g).all()
    qb = q.copy()
    qb[-1] = np.inf
    with pytest.raises(ValueError, match="^q: expected finite"):
        rbd.compensation_into(model, qb, v, dofs, g)


def test_overflowing_result_is_an_error_not_a_number(model):
    q, v = np.array(model.neutral(), dtype=float), np.full(model.nv, 1e200)
    dofs = rbd.dof_indices(model)
    with pytest.raises(ValueError, match="result is not finite"):
        rbd.compensation_into(model, q, v, dofs, np.empty(model.nv), np.empty(model.nv))
