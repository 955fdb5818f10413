"""MuJoCo as a second, independent oracle for rbd_ros.core (no ROS).

The URDF is loaded into MuJoCo by rbd_ros.sim.mujoco_model (visuals stripped,
damping/armature/limits/contacts/equalities off, mimic joints independent on
both sides) and compared *by joint name* on random states: bias forces
(qfrc_bias after mj_forward), the mass matrix (mj_fullM(model, data, dst) in MuJoCo 4) and inverse dynamics
(mj_rne with flg_acc=1) against rbd.bias, rbd.crba, rbd.rnea (<= 1e-9 relative).
"""
import os

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="MuJoCo oracle: pip install '.[sim]'")

from oracle import robot_urdf  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.sim.mujoco_model import JointMap, SimModelError, check_inertias, load_urdf, mujoco_urdf_text  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM = os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf")
ROBOTS = ["rbd_arm7", "panda", "ur5"]
RTOL = 1e-9


def _path(name):
    return ARM if name == "rbd_arm7" else robot_urdf(name)


@pytest.fixture(scope="module", params=ROBOTS)
def pair(request):
    mjm, model = load_urdf(_path(request.param), mimic_independent=True)
    return request.param, mjm, model, JointMap(mjm, model)


def _close(a, b, what):
    scale = max(1.0, float(np.max(np.abs(b))))
    err = float(np.max(np.abs(a - b)))
    assert err <= RTOL * scale, f"{what}: max error {err:.3g} (scale {scale:.3g})"


def _states(model, n=30, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield (rng.uniform(-np.pi, np.pi, model.nv), rng.uniform(-3, 3, model.nv),
               rng.uniform(-5, 5, model.nv))


def _load_state(mjm, data, jm, q, v):
    data.qpos[:] = 0.0
    data.qvel[:] = 0.0
    data.qpos[jm.model_qpos] = q
    data.qvel[jm.model_dof] = v


def test_bias_mass_matrix_inverse_dynamics(pair):
    name, mjm, model, jm = pair
    data = mujoco.MjData(mjm)
    M = np.zeros((mjm.nv, mjm.nv))
    tau_mj = np.zeros(mjm.nv)
    d = jm.model_dof
    for q, v, a in _states(model):
        _load_state(mjm, data, jm, q, v)
        mujoco.mj_forward(mjm, data)
        _close(data.qfrc_bias[d], rbd.bias(model, q, v), f"{name} bias")
        mujoco.mj_fullM(mjm, data, M)
        _close(M[np.ix_(d, d)], rbd.crba(model, q), f"{name} mass matrix")
        data.qacc[:] = 0.0
        data.qacc[d] = a
        mujoco.mj_rne(mjm, data, 1, tau_mj)
        _close(tau_mj[d], rbd.rnea(model, q, v, a), f"{name} inverse dynamics (mj_rne)")
        mujoco.mj_inverse(mjm, data)
        _close(data.qfrc_inverse[d], rbd.rnea(model, q, v, a), f"{name} inverse dynamics (mj_inverse)")


def test_gravity_vector_follows_model():
    mjm, model = load_urdf(ARM, gravity=(1.0, -2.0, -3.0))
    assert np.array_equal(mjm.opt.gravity, [1.0, -2.0, -3.0])
    jm = JointMap(mjm, model)
    data = mujoco.MjData(mjm)
    q = np.linspace(-1, 1, model.nv)
    _load_state(mjm, data, jm, q, np.zeros(model.nv))
    mujoco.mj_forward(mjm, data)
    _close(data.qfrc_bias[jm.model_dof], rbd.gravity(model, q), "tilted gravity")


def test_import_leaves_no_damping_limits_or_contacts():
    mjm, _ = load_urdf(robot_urdf("panda"), mimic_independent=True)
    # panda's URDF has <dynamics damping> and a mimic joint: both undone
    assert not np.any(mjm.dof_damping) and not np.any(mjm.dof_armature)
    assert not np.any(mjm.dof_frictionloss) and not np.any(mjm.jnt_stiffness)
    assert not np.any(mjm.jnt_limited)
    assert mjm.neq == 0 or not np.any(mjm.eq_active0)
    assert mjm.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT
    assert mjm.ngeom == 0 or "<collision" not in mujoco_urdf_text(open(robot_urdf("panda")).read())
    kept, _ = load_urdf(robot_urdf("panda"), mimic_independent=True, damping=True)
    assert np.any(kept.dof_damping)  # the sentinel: the URDF does carry damping


def test_mimic_joints_refused_unless_independent():
    with pytest.raises(SimModelError, match=r"mimic joints \['panda_finger_joint2'\]"):
        load_urdf(robot_urdf("panda"))


@pytest.mark.parametrize("name", ROBOTS)
def test_inertia_import_check(name):
    mjm, model = load_urdf(_path(name), mimic_independent=True)
    check_inertias(mjm, model, rtol=1e-12)
    assert abs(float(np.sum(mjm.body_mass)) - model.mass) <= 1e-12 * model.mass
    # the check can fail: one changed mass is reported; a moved CoM names the link
    b = int(np.argmax(mjm.body_mass * (mjm.body_weldid != 0)))  # the heaviest moving body
    mjm.body_mass[b] *= 1.001
    with pytest.raises(SimModelError, match="mass"):
        check_inertias(mjm, model)
    mjm.body_mass[b] /= 1.001
    mjm.body_ipos[b, 0] += 1e-4
    with pytest.raises(SimModelError, match="first moment|inertia") as err:
        check_inertias(mjm, model)
    assert repr(mjm.body(b).name) in str(err.value)


def test_bad_descriptions():
    with pytest.raises(rbd.ModelError, match="not a valid URDF"):
        load_urdf("<robot")
    with pytest.raises(SimModelError, match="cannot read"):
        load_urdf("/no/such/robot.urdf")
    with pytest.raises(SimModelError, match="unknown joints"):
        mjm, model = load_urdf(ARM)
        JointMap(mjm, model, ["joint1", "elbow"])


def test_rk4_keeps_the_energy_of_a_free_arm():
    """Why the driver integrates with RK4: the undamped arm falling freely for 20 s
    keeps its energy; MuJoCo's default Euler gains energy until it blows up (~14 s)."""
    energy = {}
    saved = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda text: None)   # not into MUJOCO_LOG.TXT in the cwd
    try:
        _free_fall(energy)
    finally:
        mujoco.set_mju_user_warning(saved)
    e0, e1, resets = energy["rk4"]
    assert resets == 0 and abs(e1 - e0) < 1e-3 * abs(e0), energy
    e0, e1, resets = energy["euler"]
    assert resets > 0 or abs(e1 - e0) > 0.5 * abs(e0), energy   # the sentinel: Euler does drift
    with pytest.raises(SimModelError, match="integrator: expected one of"):
        load_urdf(ARM, integrator="verlet")


def _free_fall(energy):
    for integ in ("rk4", "euler"):
        mjm, model = load_urdf(ARM, timestep=1e-3, integrator=integ)
        mjm.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
        data = mujoco.MjData(mjm)
        jm = JointMap(mjm, model)
        _load_state(mjm, data, jm, np.array([0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0]), np.zeros(model.nv))
        mujoco.mj_forward(mjm, data)
        e0 = float(np.sum(data.energy))
        resets = 0
        for _ in range(20000):
            t = data.time
            mujoco.mj_step(mjm, data)
            resets += data.time <= t
        energy[integ] = (e0, float(np.sum(data.energy)), resets)
