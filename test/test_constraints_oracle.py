"""Constraints against Pinocchio 4.1 (RigidConstraintModel, LOCAL; getConstraintJacobian;
constraintDynamics with an exact solve): point and weld, with and without Baumgarte
gains, on the delta's tree (constraints across its arms and to the world) and on solo12
standing on four point feet (a floating base).  ≤ 1e-9 relative."""
import numpy as np
import oracle as orc
import pinocchio as pin
import pytest
from constraint_util import pin_constraint
from scipy.spatial.transform import Rotation

import rbd_ros.core as rbd
from rbd_ros.robots import bundled_robot_path

TOL = 1e-9


def rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, np.max(np.abs(b)))


def transform(rotvec, xyz):
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    T[:3, 3] = xyz
    return T


T1, T2 = transform([0.3, -0.2, 0.5], [0.01, 0.02, -0.03]), transform([-0.1, 0.4, 0.2], [0.03, -0.01, 0.02])


def delta_case():
    path = bundled_robot_path("delta")
    model = rbd.Model.from_urdf(path).with_constraints([])
    cons = [rbd.Constraint("wrist_cross2", "platform", origin_a=T1, origin_b=T2, name="point"),
            rbd.Constraint.weld("platform", "wrist_cross3", origin_a=T1, origin_b=T2, name="weld"),
            rbd.Constraint("tool0", None, origin_a=T1, origin_b=T2, name="point_world")]
    return model, orc.Oracle(path, layout=model), cons


def solo_case():
    path = orc.robot_urdf("solo12")
    model = rbd.Model.from_urdf(path, floating_base=True)
    feet = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
    cons = [rbd.Constraint(f, None, origin_b=transform([0, 0, 0], [0.2 * k, 0.1, 0.0]), name=f) for k, f in
            enumerate(feet)]
    return model, orc.Oracle(path, floating_base=True, layout=model), cons


def pin_dynamics(o, cms, q, v, tau):
    models = pin.StdVec_RigidConstraintModel()
    datas = pin.StdVec_RigidConstraintData()
    for cm in cms:
        models.append(cm)
        datas.append(cm.createData())
    d = o.model.createData()
    pin.initConstraintDynamics(o.model, d, models, datas)
    qdd = pin.constraintDynamics(o.model, d, o.q_to_pin(q), o.v_to_pin(v), o.v_to_pin(tau), models, datas,
                                 pin.ProximalSettings(1e-14, 0.0, 1))
    return o.v_from_pin(qdd), d.lambda_c.copy()


@pytest.mark.parametrize("case", [delta_case, solo_case])
def test_error_and_jacobian_equal_pinocchios(case):
    model, o, cons = case()
    rng = np.random.default_rng(10)
    for _ in range(3):
        q, v, _, _ = o.random_state(rng)
        qf = o.q_to_pin(q)
        d = o.model.createData()
        pin.computeJointJacobians(o.model, d, qf)
        for c in cons:
            cm = pin_constraint(pin, o.model, c)
            cd = cm.createData()
            cm.calc(o.model, d, cd)
            Jp = pin.getConstraintJacobian(o.model, d, cm, cd) @ o.G
            assert rel(rbd.constraint_jacobian(model, q, [c]), Jp) < TOL, c.name
            expected = -cd.c1Mc2.translation if c.is_point else -pin.log6(cd.c1Mc2).vector
            assert rel(rbd.constraint_error(model, q, [c]), expected) < TOL, c.name


@pytest.mark.parametrize("case", [delta_case, solo_case])
def test_constrained_forward_dynamics_equals_pinocchios(case):
    """qdd and λ of constraintDynamics (exact solve), Baumgarte gains included.  The
    drift: a weld's equals Pinocchio's at any state; a point's where J q̇ = 0 (the
    velocities are projected there), elsewhere Pinocchio's adds ω_a × (J q̇)."""
    model, o, cons = case()
    rng = np.random.default_rng(11)
    sets = [cons] if case is solo_case else [[c] for c in cons]
    for cset in sets:
        for kp, kd in ((0.0, 0.0), (100.0, 20.0)):
            q, v, _, _ = o.random_state(rng)
            J = rbd.constraint_jacobian(model, q, cset)
            N = np.linalg.svd(J)[2][np.linalg.matrix_rank(J):]
            v = N.T @ rng.normal(size=N.shape[0])              # J v = 0
            tau = rng.normal(size=model.nv)
            cms = [pin_constraint(pin, o.model, c) for c in cset]
            for cm in cms:
                cm.m_baumgarte_parameters.Kp = kp
                cm.m_baumgarte_parameters.Kd = kd
            qdd_p, lam_p = pin_dynamics(o, cms, q, v, tau)
            qdd, lam = rbd.constrained_forward_dynamics(model, q, v, tau, cset, kp=kp, kd=kd)
            assert rel(qdd, qdd_p) < TOL and rel(lam, lam_p) < TOL, ([c.name for c in cset], kp, kd)
    # off J q̇ = 0: a weld's drift still equals Pinocchio's; a point's differs by ω_a × (J q̇)
    model, o, cons = delta_case()
    q, v, _, _ = o.random_state(rng)
    tau = rng.normal(size=model.nv)
    weld, point = cons[1], cons[0]
    qdd_p, lam_p = pin_dynamics(o, [pin_constraint(pin, o.model, weld)], q, v, tau)
    qdd, lam = rbd.constrained_forward_dynamics(model, q, v, tau, [weld])
    assert rel(qdd, qdd_p) < TOL and rel(lam, lam_p) < TOL
    qdd_p, _ = pin_dynamics(o, [pin_constraint(pin, o.model, point)], q, v, tau)
    J = rbd.constraint_jacobian(model, q, [point])
    jv = J @ v
    d = o.model.createData()
    pin.forwardKinematics(o.model, d, o.q_to_pin(q), o.v_to_pin(v))
    cm = pin_constraint(pin, o.model, point)
    w_a = cm.joint1_placement.actInv(d.v[cm.joint1_id]).angular
    assert rel(-J @ qdd_p, rbd.constraint_drift(model, q, v, [point]) + np.cross(w_a, jv)) < TOL
