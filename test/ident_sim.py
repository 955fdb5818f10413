"""A "true" robot for the identification proofs: the bundled arm with other
inertial parameters, joint friction and rotor inertia, simulated in MuJoCo
(in process, faster than real time) while a computed-torque controller built
on the *nominal* URDF tracks a trajectory.  Used by test_ident_mujoco.py and
bench/identify.py."""
import os
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

import rbd_ros.core as rbd
from rbd_ros.sim.mujoco_model import load_urdf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM_URDF = os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf")
ARM_LINKS = [f"link{i}" for i in range(1, 8)]
# the true robot's joint terms (MuJoCo dof_damping, dof_frictionloss, dof_armature), per joint
TRUE_DAMPING = np.array([0.6, 0.5, 0.5, 0.4, 0.15, 0.15, 0.1])       # N m s / rad
TRUE_FRICTION = np.array([0.8, 0.9, 0.6, 0.7, 0.25, 0.3, 0.2])       # N m (Coulomb)
TRUE_ARMATURE = np.array([0.25, 0.25, 0.2, 0.2, 0.08, 0.08, 0.05])   # kg m^2
PAYLOAD = ("flange", 1.5, (0.0, 0.0, 0.05), (4e-3, 0.0, 0.0, 4e-3, 0.0, 2e-3))   # link, kg, m, ixx ixy ixz iyy iyz izz
KP, KD = 400.0, 40.0            # computed-torque gains (1/s², 1/s)


def nominal_text():
    with open(ARM_URDF, encoding="utf-8") as f:
        return f.read()


def true_arm_urdf(seed=0, payload=None):
    """URDF text of the true arm: every moving link's mass changed by ±20-40 %,
    its COM moved by up to 3 cm, its inertia at the COM scaled by 0.6-1.4;
    ``payload`` (link, mass, com, inertia6) adds a rigid body fixed to that link."""
    rng = np.random.default_rng(seed)
    root = ET.fromstring(nominal_text())
    for link in root.findall("link"):
        if link.get("name") not in ARM_LINKS:
            continue
        inertial = link.find("inertial")
        mass = inertial.find("mass")
        mass.set("value", repr(float(mass.get("value")) * (1 + float(rng.choice([-1, 1])) * rng.uniform(0.2, 0.4))))
        origin = inertial.find("origin")
        xyz = np.array([float(x) for x in origin.get("xyz").split()])
        d = rng.normal(size=3)
        xyz += d / np.linalg.norm(d) * rng.uniform(0.01, 0.03)
        origin.set("xyz", " ".join(repr(float(x)) for x in xyz))
        k = rng.uniform(0.6, 1.4)
        I = inertial.find("inertia")
        for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
            I.set(a, repr(float(I.get(a)) * float(k)))
    if payload is not None:
        link, m, com, I6 = payload
        pl = ET.SubElement(root, "link", name="payload")
        inertial = ET.SubElement(pl, "inertial")
        ET.SubElement(inertial, "origin", xyz=" ".join(map(repr, com)), rpy="0 0 0")
        ET.SubElement(inertial, "mass", value=repr(m))
        ET.SubElement(inertial, "inertia", **dict(zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), map(repr, I6))))
        j = ET.SubElement(root, "joint", name="payload_joint", type="fixed")
        ET.SubElement(j, "parent", link=link)
        ET.SubElement(j, "child", link="payload")
    return ET.tostring(root, encoding="unicode")


def true_robot(seed=0, payload=None):
    """(mjModel, rbd Model) of the true arm; MuJoCo gets the true damping,
    Coulomb friction (frictionloss: the constraint solver is on, contacts and
    joint limits stay off) and armature; the rbd model the same terms."""
    text = true_arm_urdf(seed, payload)
    mjm, model = load_urdf(text, timestep=1e-3)
    dof = np.array([mjm.jnt_dofadr[mjm.joint(n).id] for n in model.joint_names])
    mjm.dof_damping[dof] = TRUE_DAMPING
    mjm.dof_frictionloss[dof] = TRUE_FRICTION
    mjm.dof_armature[dof] = TRUE_ARMATURE
    mjm.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    from rbd_ros.core.model.inertial import _rebuilt, inertial_parameters
    truth = _rebuilt(model, inertial_parameters(model), damping=TRUE_DAMPING, friction=TRUE_FRICTION)
    return mjm, truth.with_armature(TRUE_ARMATURE)


def simulate(mjm, controller, q_d, v_d, a_d, kp=KP, kd=KD):
    """Track (q_d, v_d, a_d) (T, 7) sampled at the MuJoCo step with
    tau = rnea(controller, q, v, a_d + kp (q_d - q) + kd (v_d - v)), starting at
    (q_d[0], v_d[0]).  Returns t, q, v, tau (T, ...): the state at each step and
    the torque applied during it (what a driver would publish)."""
    d = mujoco.MjData(mjm)
    names = controller.joint_names
    qa = np.array([mjm.jnt_qposadr[mjm.joint(n).id] for n in names])
    va = np.array([mjm.jnt_dofadr[mjm.joint(n).id] for n in names])
    d.qpos[qa], d.qvel[va] = q_d[0], v_d[0]
    mujoco.mj_forward(mjm, d)
    T = len(q_d)
    Q, V, U = np.empty((T, 7)), np.empty((T, 7)), np.empty((T, 7))
    for k in range(T):
        q, v = d.qpos[qa].copy(), d.qvel[va].copy()
        tau = rbd.rnea(controller, q, v, a_d[k] + kp * (q_d[k] - q) + kd * (v_d[k] - v))
        d.qfrc_applied[va] = tau
        Q[k], V[k], U[k] = q, v, tau
        mujoco.mj_step(mjm, d)
    return np.arange(T) * mjm.opt.timestep, Q, V, U


def gravity_mujoco(mjm, names, Q):
    """MuJoCo's own bias force at v = 0 (its gravity torques) at the poses Q (N, 7)."""
    d = mujoco.MjData(mjm)
    qa = np.array([mjm.jnt_qposadr[mjm.joint(n).id] for n in names])
    va = np.array([mjm.jnt_dofadr[mjm.joint(n).id] for n in names])
    out = np.empty_like(Q)
    for k, q in enumerate(Q):
        d.qpos[qa], d.qvel[:] = q, 0.0
        mujoco.mj_forward(mjm, d)
        out[k] = d.qfrc_bias[va]
    return out
