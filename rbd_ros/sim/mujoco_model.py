"""URDF -> MuJoCo model whose rigid-body dynamics are the rbd_ros ``Model``'s.

No ROS here.  MuJoCo loads URDF directly, but its import changes the model
unless told otherwise; :func:`load_urdf` undoes that:

* ``<visual>`` / ``<collision>`` are stripped (mesh URIs such as
  ``package://`` cannot be resolved, and contacts are not simulated), and a
  ``<mujoco><compiler discardvisual="true" balanceinertia="false"
  fusestatic="false"/></mujoco>`` element keeps every link a body with the
  URDF's inertia, unchanged;
* joint damping, armature, friction loss and stiffness are zeroed (MuJoCo
  applies the URDF ``<dynamics damping>``; pass ``damping=True`` to keep it);
* contacts, joint limits and equality constraints are off (the constraint
  solver is disabled as a whole);
* gravity is the rbd_ros model's.

Mimic joints: rbd_ros (``mimic=True``) makes a mimic joint dependent;
MuJoCo can only approximate that with a soft equality constraint.  So a
URDF with mimic joints is refused unless ``mimic_independent=True``, which
makes them independent DOFs on both sides (rbd_ros ``mimic=False``).

:func:`check_inertias` proves the import: every rbd_ros body's mass, first
moment and rotational inertia equal the sum of the MuJoCo bodies of the URDF
links attached to it.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

import rbd_ros.core as rbd

_COMPILER = {"discardvisual": "true", "balanceinertia": "false", "fusestatic": "false",
             "inertiafromgeom": "false"}


class SimModelError(rbd.ModelError):
    """The URDF cannot be simulated as the rbd_ros model (names the joint or link)."""


def mujoco_urdf_text(urdf_text: str) -> str:
    """The URDF with visuals/collisions removed and MuJoCo's compiler options added."""
    try:
        root = ET.fromstring(urdf_text)
    except ET.ParseError as e:
        raise SimModelError(f"robot description: not valid XML ({e})") from None
    if root.tag != "robot":
        raise SimModelError(f"robot description: root element is <{root.tag}>, expected <robot>")
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for el in link.findall(tag):
                link.remove(el)
    for el in root.findall("mujoco"):
        root.remove(el)
    mj = ET.SubElement(root, "mujoco")
    ET.SubElement(mj, "compiler", dict(_COMPILER))
    return ET.tostring(root, encoding="unicode")


def read_urdf(urdf: str) -> str:
    """URDF text from text or a path."""
    if urdf.lstrip().startswith("<"):
        return urdf
    try:
        with open(urdf) as f:
            return f.read()
    except OSError as e:
        raise SimModelError(f"urdf: cannot read {urdf!r} ({e.strerror})") from None


INTEGRATORS = ("rk4", "euler", "implicitfast")


def load_urdf(urdf: str, *, mimic_independent: bool = False, damping: bool = False,
              gravity=None, timestep: float | None = None, integrator: str | None = None,
              check: bool = True):
    """URDF text or path -> ``(mjModel, rbd Model)``, the two checked equal.

    ``mimic_independent``: accept mimic joints as independent DOFs (otherwise
    a URDF with mimic joints raises :class:`SimModelError`).  ``damping``:
    keep the URDF's joint damping (default: zero).  ``gravity``: world gravity
    (default: the rbd_ros default, (0, 0, -9.81)).  ``timestep``: MuJoCo's
    step in s.  ``integrator``: ``"rk4"`` (conserves the energy of an undamped
    arm: a 7-dof arm falling freely for 60 s at 1 ms keeps its energy to 1e-5
    relative, where MuJoCo's default semi-implicit Euler gains 430 % and
    blows up after 14 s), ``"euler"`` or ``"implicitfast"``; None keeps
    MuJoCo's default (Euler).  ``check``: run :func:`check_inertias`."""
    import mujoco  # the sim extra (optional): imported where a MuJoCo model is made

    text = read_urdf(urdf)
    kw = {} if gravity is None else {"gravity": gravity}
    model = rbd.Model.from_urdf(text, mimic=not mimic_independent, **kw)
    if model.mimic_joints and not mimic_independent:
        raise SimModelError(
            f"mimic joints {sorted(model.mimic_joints)}: MuJoCo cannot make them dependent "
            f"the way rbd_ros does (mimic=True); set mimic_independent to simulate them as "
            f"independent DOFs")
    if any(t in ("floating", "planar") for t in model.joint_types):
        bad = [n for n, t in zip(model.joint_names, model.joint_types) if t in ("floating", "planar")]
        raise SimModelError(f"joints {bad}: floating and planar joints are not simulated "
                            f"(fixed-base revolute/continuous/prismatic only)")
    try:
        mjm = mujoco.MjModel.from_xml_string(mujoco_urdf_text(text))
    except ValueError as e:
        raise SimModelError(f"MuJoCo rejected the URDF: {e}") from None
    mjm.dof_damping[:] = mjm.dof_damping if damping else 0.0
    mjm.dof_armature[:] = 0.0
    mjm.dof_frictionloss[:] = 0.0
    mjm.jnt_stiffness[:] = 0.0
    mjm.jnt_limited[:] = 0
    if mjm.neq:
        mjm.eq_active0[:] = 0
    mjm.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT
                             | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    mjm.opt.gravity[:] = model.gravity
    if timestep is not None:
        mjm.opt.timestep = float(timestep)
    if integrator is not None:
        if integrator.lower() not in INTEGRATORS:
            raise SimModelError(f"integrator: expected one of {list(INTEGRATORS)}, got {integrator!r}")
        mjm.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
    if check:
        check_joints(mjm, model)
        check_inertias(mjm, model)
    return mjm, model


def check_joints(mjm, model) -> None:
    """Every rbd_ros DOF joint is a 1-DOF MuJoCo joint with the same name, and nothing else moves."""
    import mujoco  # the sim extra (optional): imported where a MuJoCo model is made

    names = {mjm.joint(i).name for i in range(mjm.njnt)}
    missing = [n for n in model.joint_names if n not in names]
    if missing:
        raise SimModelError(f"joints {missing}: not in MuJoCo's model (its joints: {sorted(names)})")
    if mjm.nv != model.nv:
        extra = sorted(names - set(model.joint_names))
        raise SimModelError(f"MuJoCo has {mjm.nv} DOFs, rbd_ros {model.nv}; extra MuJoCo joints: {extra}")
    for n in model.joint_names:
        jt = int(mjm.jnt_type[mjm.joint(n).id])
        if jt not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            raise SimModelError(f"joint {n!r}: MuJoCo made it a joint of type {jt}, not hinge/slide")


def _quat_to_R(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def body_inertias(mjm, model):
    """Per rbd_ros body: (m, h, Ibar) summed from MuJoCo's bodies (one per URDF link),
    expressed in the rbd_ros body frame, about its origin."""
    nb = model.nbodies
    m = np.zeros(nb)
    h = np.zeros((nb, 3))
    Ibar = np.zeros((nb, 3, 3))
    for k, link in enumerate(model.link_names):
        info = model.tree.links[k]
        if info.body < 0:
            continue
        try:
            b = mjm.body(link)
        except KeyError:
            raise SimModelError(f"link {link!r}: no MuJoCo body of that name") from None
        mass = float(b.mass[0])
        Rc = _quat_to_R(b.iquat)
        Ic = Rc @ np.diag(b.inertia) @ Rc.T            # about the CoM, link axes
        c = info.R @ b.ipos + info.p                  # CoM in body coordinates
        Ic = info.R @ Ic @ info.R.T
        m[info.body] += mass
        h[info.body] += mass * c
        Ibar[info.body] += Ic + mass * (c @ c * np.eye(3) - np.outer(c, c))
    return m, h, Ibar


def body_label(model, b):
    """Name rbd_ros body ``b`` for a message: the URDF links rigidly attached to it
    (MuJoCo has one body per link); a planar joint's massless intermediate bodies
    carry no link and are named by index."""
    links = [n for n, info in zip(model.link_names, model.tree.links) if info.body == b]
    return f"body carrying link(s) {links}" if links else f"body {b} (no link attached)"


def check_inertias(mjm, model, rtol: float = 1e-9) -> None:
    """Raise :class:`SimModelError` unless MuJoCo's masses, CoMs and inertias equal the
    rbd_ros model's (per rbd_ros body, relative tolerance ``rtol``) and the total masses agree."""
    m, h, Ibar = body_inertias(mjm, model)
    tree = model.tree
    total = float(np.sum(mjm.body_mass))
    if abs(total - model.mass) > rtol * max(1.0, model.mass):
        raise SimModelError(f"total mass: MuJoCo {total!r} kg, URDF {model.mass!r} kg")
    for b in range(model.nbodies):
        ref_m, ref_h, ref_I = tree.mass[b], tree.mass_com[b], tree.inertia[b]
        scale = max(1.0, abs(ref_m), float(np.max(np.abs(ref_I))))
        for what, a, r in (("mass", m[b], ref_m), ("first moment m*c", h[b], ref_h),
                           ("inertia", Ibar[b], ref_I)):
            err = float(np.max(np.abs(np.asarray(a) - r)))
            if err > rtol * scale:
                raise SimModelError(
                    f"{body_label(model, b)}: MuJoCo's {what} {np.round(a, 12).tolist()} "
                    f"!= URDF's {np.round(r, 12).tolist()} (error {err:.3g})")


class JointMap:
    """rbd_ros DOF order <-> MuJoCo addresses, by joint name."""

    def __init__(self, mjm, model, joints=()):
        self.joints = list(joints) if joints else list(model.joint_names)
        unknown = [j for j in self.joints if j not in model.joint_names]
        if unknown:
            raise SimModelError(f"joints: unknown joints {unknown}; the model's joints are "
                                f"{list(model.joint_names)}")
        if len(set(self.joints)) != len(self.joints):
            raise SimModelError(f"joints: a joint is named twice in {self.joints}")
        self.qpos = np.array([qpos_address(mjm, j) for j in self.joints], dtype=np.intp)
        self.dof = np.array([qvel_address(mjm, j) for j in self.joints], dtype=np.intp)
        # model order (all DOFs) -> MuJoCo addresses
        self.model_qpos = np.array([qpos_address(mjm, j) for j in model.joint_names], dtype=np.intp)
        self.model_dof = np.array([qvel_address(mjm, j) for j in model.joint_names], dtype=np.intp)


def qpos_address(mjm, joint: str) -> int:
    return int(mjm.jnt_qposadr[mjm.joint(joint).id])


def qvel_address(mjm, joint: str) -> int:
    return int(mjm.jnt_dofadr[mjm.joint(joint).id])


def wrench_at_com(data, body: int, force, torque, out=None):
    """MuJoCo's ``xfrc_applied`` row (6,) for a wrench given at the origin of ``body``'s
    frame in world axes (force N, torque N·m about that origin): MuJoCo applies
    ``xfrc_applied`` at the body's centre of mass (``xipos``), world axes, so the torque
    becomes torque + (origin − com) × force.  ``data`` after ``mj_forward``/``mj_step``
    (positions current).  Writes into ``out`` if given."""
    f = np.asarray(force, dtype=float)
    m = np.asarray(torque, dtype=float) + np.cross(data.xpos[body] - data.xipos[body], f)
    if out is None:
        out = np.empty(6)
    out[:3] = f
    out[3:] = m
    return out
