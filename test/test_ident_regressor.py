"""The joint-torque regressor, the compiled ``rbd.regressor`` and its numpy twin
(rbd_ros/core/reference/regressor.py), each: Y pi equals the RNEA on random trees (mimic joints, floating base, planar
joints, armature and friction columns), and Y equals Pinocchio's
computeJointTorqueRegressor on the example-robot-data models (mimic joints
independent, as in the other Pinocchio tests; bodies matched by joint name)."""
import numpy as np
import oracle as orc
import pinocchio as pin
import pytest
from core_util import random_state, random_tree_urdf, rel_err

import rbd_ros.core as rbd
from rbd_ros.core.algorithms.reference.regressor import body_parameters, parameter_vector, regressor, regressor_batch
from rbd_ros.core.algorithms.reference.tree import bodies
from rbd_ros.core.model import inertial as ine

TOL = 1e-10
IMPLS = {"kernel": (rbd.regressor, rbd.regressor), "twin": (regressor, regressor_batch)}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("floating", [False, True])
def test_regressor_times_parameters_is_rnea_on_random_trees(seed, floating, impl):
    one, batch = IMPLS[impl]
    model = rbd.Model.from_urdf(random_tree_urdf(seed, n_joints=9, mimic=2), floating_base=floating)
    one_axis = np.concatenate([[t not in ("floating", "planar")] * nv
                               for t, nv in zip(model.joint_types, model.joint_nv)])
    rng = np.random.default_rng(seed)
    model = model.with_armature(np.where(one_axis, rng.uniform(0.01, 0.5, model.nv), 0.0))
    model = ine._rebuilt(model, ine.inertial_parameters(model), damping=rng.uniform(0, 1, model.nv),
                         friction=rng.uniform(0, 1, model.nv))
    states = [random_state(model, rng) for _ in range(4)]
    Q, V, A = (np.array([s[k] for s in states]) for k in range(3))
    Y = batch(model, Q, V, A, armature=True, damping=True, friction=True, velocity_eps=0.05)
    assert Y.shape == (4, model.nv, 10 * model.nbodies + 3 * model.nv)
    pi = parameter_vector(model, armature=True, damping=True, friction=True)
    for k, (q, v, a) in enumerate(states):
        ref = rbd.rnea(model, q, v, a) + rbd.friction(model, v, 0.05)
        assert rel_err(Y[k] @ pi, ref) <= TOL
        # the single-state form and the rigid-body block alone
        assert rel_err(one(model, q, v, a) @ parameter_vector(model), rbd.rnea(model, q, v, a)
                       - model.armature * a) <= TOL


def test_random_trees_cover_mimic_and_planar_joints():
    kinds = set()
    for seed in range(8):
        m = rbd.Model.from_urdf(random_tree_urdf(seed, n_joints=9, mimic=2))
        kinds |= set(m.joint_types) | ({"mimic"} if m.mimic_joints else set())
    assert {"planar", "mimic", "prismatic", "revolute"} <= kinds


def test_body_parameters_of_the_model_are_its_inertial_parameters():
    model = rbd.Model.from_urdf(random_tree_urdf(3, n_joints=9, mimic=2))
    P = np.array([body_parameters(b.I) for b in bodies(model)])
    assert np.allclose(P, ine.inertial_parameters(model), rtol=0, atol=1e-15)


CASES = [("panda", False), ("ur5", False), ("kinova", False), ("solo12", True), ("anymal_c", True)]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("robot,floating", CASES, ids=[c[0] for c in CASES])
def test_regressor_equals_pinocchio(robot, floating, impl):
    urdf = orc.robot_urdf(robot)
    model = rbd.Model.from_urdf(urdf, floating_base=floating, mimic=False)
    o = orc.Oracle(urdf, floating, False, layout=model)
    pm, pd = o.model, o.data
    # our body i is the body of DOF joint model.joint_names[i] (no mimic, no planar joints here)
    assert model.nbodies == len(model.joint_names)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v, a, _ = o.random_state(rng)
        Yp = pin.computeJointTorqueRegressor(pm, pd, o.q_to_pin(q), o.v_to_pin(v), o.v_to_pin(a))
        Y = IMPLS[impl][0](model, q, v, a)
        for i, name in enumerate(model.joint_names):
            jp = o.pin_joint[name]
            block = Yp[:, 10 * (jp - 1):10 * jp]
            ref = np.column_stack([o.v_from_pin(block[:, k]) for k in range(10)])
            assert rel_err(Y[:, 10 * i:10 * i + 10], ref) <= 1e-9, (robot, name)
        # and the parameters: Pinocchio's dynamicParameters of the same joint's body
        for i, name in enumerate(model.joint_names):
            ref = pm.inertias[o.pin_joint[name]].toDynamicParameters()
            assert rel_err(ine.inertial_parameters(model)[i], ref) <= 1e-12, (robot, name)
