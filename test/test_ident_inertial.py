"""Inertial parameters of a Model (rbd_ros/core/inertial.py): read, rebuilt,
checked for physical consistency (pseudo-inertia), transformed, parametrised."""
import numpy as np
import pytest
from core_util import random_state, random_tree_urdf, rel_err

import rbd_ros.core as rbd
from rbd_ros.core.model import inertial as ine
from rbd_ros.robots import bundled_robot_path

ARM_URDF = bundled_robot_path("rbd_arm7")  # the nominal arm (ident_sim's, without MuJoCo)


@pytest.fixture(scope="module")
def arm():
    return rbd.Model.from_urdf(ARM_URDF)


def test_round_trip_keeps_the_dynamics_and_folds_payloads(arm):
    loaded = arm.with_payload("flange", 1.5, [0, 0, 0.05], [4e-3, 0, 0, 4e-3, 0, 2e-3])
    P = ine.inertial_parameters(loaded)
    assert P.shape == (7, 10)
    assert P[6, 0] == pytest.approx(ine.inertial_parameters(arm)[6, 0] + 1.5, rel=1e-14)
    same = ine.with_inertial_parameters(loaded, P)
    assert dict(same.payloads) == {} and same.mass == pytest.approx(loaded.mass, rel=1e-14)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, a = random_state(arm, rng)
        assert rel_err(rbd.rnea(same, q, v, a), rbd.rnea(loaded, q, v, a)) <= 1e-14
    assert np.array_equal(ine.inertial_parameters(same), P)


def test_new_parameters_change_the_dynamics_exactly(arm):
    P = ine.inertial_parameters(arm)
    P2 = P.copy()
    P2[3] = ine.from_com(5.0, [0.01, 0.02, -0.03], np.diag([0.02, 0.03, 0.04]))
    m2 = ine.with_inertial_parameters(arm, P2)
    assert np.array_equal(ine.inertial_parameters(m2), P2)
    assert m2.mass == pytest.approx(arm.mass - P[3, 0] + 5.0, rel=1e-14)
    from rbd_ros.core.algorithms.reference.regressor import regressor
    q, v, a = random_state(arm, np.random.default_rng(1))
    assert rel_err(rbd.rnea(m2, q, v, a), regressor(arm, q, v, a) @ P2.ravel()) <= 1e-12


def test_planar_and_floating_trees_round_trip():
    m = rbd.Model.from_urdf(random_tree_urdf(3, n_joints=10, mimic=2), floating_base=True)
    names = ine.body_link_names(m)
    assert len(names) == m.nbodies and any("(planar x)" in n for n in names)
    P = ine.inertial_parameters(m)
    assert np.all(P[[i for i, n in enumerate(names) if "(planar" in n]] == 0)    # massless auxiliary bodies
    m2 = ine.with_inertial_parameters(m, P)
    q, v, a = random_state(m, np.random.default_rng(2))
    assert rel_err(rbd.rnea(m2, q, v, a), rbd.rnea(m, q, v, a)) <= 1e-13


def test_bad_parameters_raise_naming_the_body(arm):
    P = ine.inertial_parameters(arm)
    cases = []
    bad = P.copy()
    bad[2, 5] = np.nan
    cases.append((bad, "pi[2] (body 'link3'): expected finite"))
    bad = P.copy()
    bad[4, 0] = 0.0
    cases.append((bad, "pi[4] (body 'link5'): mass 0"))
    bad = P.copy()        # inertia at the com breaking the triangle inequality: Izz > Ixx + Iyy
    bad[5] = ine.from_com(1.0, [0, 0, 0], np.diag([0.01, 0.01, 0.05]))
    cases.append((bad, "pi[5] (body 'link6'): not physically consistent"))
    bad = P.copy()        # positive-definite inertia at the com, but its com far outside its extent? no: negative mass
    bad[6, 0] = -1.0
    cases.append((bad, "pi[6] (body 'link7'): mass -1"))
    cases.append((P[:3], "expected shape (7, 10)"))
    for pi, msg in cases:
        with pytest.raises(ValueError) as e:
            ine.with_inertial_parameters(arm, pi)
        assert msg in str(e.value)
    # a zero row is a massless body: accepted
    ok = P.copy()
    ok[6] = 0.0
    assert ine.inertial_parameters(ine.with_inertial_parameters(arm, ok))[6, 0] == 0.0


def test_pseudo_inertia_consistency_matches_the_triangle_inequality():
    rng = np.random.default_rng(3)
    for _ in range(200):
        d = rng.uniform(0.001, 0.1, 3)
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        pi = ine.from_com(rng.uniform(0.1, 5), rng.normal(scale=0.1, size=3), R @ np.diag(d) @ R.T)
        triangle = d.max() <= d.sum() - d.max()
        assert (ine.consistency_margin(pi) >= -1e-12) == triangle


def test_transform_moves_a_body_between_frames():
    rng = np.random.default_rng(4)
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    R *= np.sign(np.linalg.det(R))
    p = rng.normal(size=3)
    c, Ic = rng.normal(scale=0.1, size=3), np.diag([0.02, 0.03, 0.04])
    got = ine.transform(ine.from_com(2.0, c, Ic), R, p)
    assert rel_err(got, ine.from_com(2.0, R @ c + p, R @ Ic @ R.T)) <= 1e-14
    M = ine.transform_matrix(R, p)
    assert rel_err(M @ ine.from_com(2.0, c, Ic), got) <= 1e-14


def test_cholesky_parametrisation_round_trip_and_jacobian():
    rng = np.random.default_rng(5)
    for _ in range(20):
        th = rng.normal(size=10)
        pi, J = ine.cholesky_to_parameters(th, jacobian=True)
        assert pi[0] > 0 and ine.consistency_margin(pi) >= -1e-14
        assert rel_err(ine.cholesky_to_parameters(ine.parameters_to_cholesky(pi)), pi) <= 1e-10
        h = 1e-6
        num = np.column_stack([(ine.cholesky_to_parameters(th + h * e) - ine.cholesky_to_parameters(th - h * e))
                               / (2 * h) for e in np.eye(10)])
        assert rel_err(J, num) <= 1e-7
    # a body that is not consistent still gets a θ: the nearest consistent one
    bad = ine.from_com(1.0, [0, 0, 0], np.diag([0.01, 0.01, 0.05]))
    assert ine.consistency_margin(ine.cholesky_to_parameters(ine.parameters_to_cholesky(bad))) >= -1e-12
