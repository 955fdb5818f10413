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
  solver is disabled as a whole) -- unless a :class:`Ground` is given: then a
  plane and a contact sphere on each of its links, and only those collide;
* gravity is the rbd_ros model's;
* ``floating_base=True`` gives the root link a free joint named ``root_joint``,
  as ``rbd.Model.from_urdf(floating_base=True)`` adds its free-flyer;
* the model's loop closures (``model.constraints``, the URDF's ``<constraint>``
  elements) become MuJoCo equality constraints (:mod:`rbd_ros.sim.loops`), the only
  equalities on: MuJoCo's URDF import ignores the element.

With a floating base, a ground or loop closures the MuJoCo model is built through
mjSpec.

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
from dataclasses import dataclass

import numpy as np

import rbd_ros.core as rbd

from .errors import SimModelError
from .loops import LOOP_SOLIMP, LOOP_SOLREF, add_loop_equalities, constraints_of

_COMPILER = {"discardvisual": "true", "balanceinertia": "false", "fusestatic": "false",
             "inertiafromgeom": "false"}


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
ROOT_JOINT = "root_joint"        # the free joint of floating_base (rbd_ros's free-flyer's name)


@dataclass(frozen=True)
class Ground:
    """A ground plane at z = ``height`` (world) and a contact sphere of ``radius`` (m)
    centred on the origin of each link in ``links`` (a point foot; its mass and inertia
    are the URDF link's, the sphere adds none).  Only spheres and plane collide (no
    self-collision).  Contact: ``condim`` 3 (a point foot: sliding friction ``friction``
    (Coulomb mu), no torsional or rolling friction), an elliptic friction cone, MuJoCo's
    soft-contact ``solref`` (time constant s, damping ratio) and ``solimp``.  The default
    solref (0.005 s, critically damped) is as stiff as MuJoCo allows at 1 ms steps (time
    constant >= 2 steps): solo12 (2.5 kg) sinks ~0.1 mm into the plane at rest; solimp
    is MuJoCo's default."""
    links: tuple = ()
    radius: float = 0.02
    height: float = 0.0
    friction: float = 1.0
    solref: tuple = (0.005, 1.0)
    solimp: tuple = (0.9, 0.95, 0.001, 0.5, 2.0)


def load_urdf(urdf: str, *, mimic_independent: bool = False, damping: bool = False,
              gravity=None, timestep: float | None = None, integrator: str | None = None,
              check: bool = True, floating_base: bool = False, ground: Ground | None = None,
              loop_solref=LOOP_SOLREF, loop_solimp=LOOP_SOLIMP):
    """URDF text or path -> ``(mjModel, rbd Model)``, the two checked equal.

    ``mimic_independent``: accept mimic joints as independent DOFs (otherwise
    a URDF with mimic joints raises :class:`SimModelError`).  ``damping``:
    keep the URDF's joint damping (default: zero).  ``gravity``: world gravity
    (default: the rbd_ros default, (0, 0, -9.81)).  ``timestep``: MuJoCo's
    step in s.  ``integrator``: ``"rk4"`` (conserves the energy of an undamped
    arm: a 7-dof arm falling freely for 60 s at 1 ms keeps its energy to 1e-5
    relative, where MuJoCo's default semi-implicit Euler gains 430 % and
    blows up after 14 s), ``"euler"`` or ``"implicitfast"``; None keeps
    MuJoCo's default (Euler).  ``check``: run :func:`check_inertias`.
    ``floating_base``: the root link on a free joint (:data:`ROOT_JOINT`; the rbd
    model then has ``floating_base=True``).  ``ground``: a :class:`Ground` (contacts
    on), or None (contacts and the constraint solver off)."""
    import mujoco  # the sim extra (optional): imported where a MuJoCo model is made

    text = read_urdf(urdf)
    kw = {} if gravity is None else {"gravity": gravity}
    model = rbd.Model.from_urdf(text, mimic=not mimic_independent, floating_base=bool(floating_base), **kw)
    if model.mimic_joints and not mimic_independent:
        raise SimModelError(
            f"mimic joints {sorted(model.mimic_joints)}: MuJoCo cannot make them dependent "
            f"the way rbd_ros does (mimic=True); set mimic_independent to simulate them as "
            f"independent DOFs")
    bad = [n for n, t in zip(model.joint_names, model.joint_types)
           if t in ("floating", "planar") and not (floating_base and n == ROOT_JOINT)]
    if bad:
        raise SimModelError(f"joints {bad}: floating and planar joints of the URDF are not simulated "
                            f"(revolute/continuous/prismatic, on a fixed base or floating_base)")
    loops = constraints_of(model)
    n_urdf = 0                             # the URDF import's own equalities (mimic): off
    try:
        if floating_base or ground is not None or loops:
            spec = _spec(mujoco, mujoco_urdf_text(text), model, floating_base, ground)
            n_urdf = len(spec.equalities)
            add_loop_equalities(mujoco, spec, model, loop_solref, loop_solimp)
            mjm = spec.compile()
        else:
            mjm = mujoco.MjModel.from_xml_string(mujoco_urdf_text(text))
            n_urdf = mjm.neq
    except ValueError as e:
        raise SimModelError(f"MuJoCo rejected the URDF: {e}") from None
    mjm.dof_damping[:] = mjm.dof_damping if damping else 0.0
    mjm.dof_armature[:] = 0.0
    mjm.dof_frictionloss[:] = 0.0
    mjm.jnt_stiffness[:] = 0.0
    mjm.jnt_limited[:] = 0
    mjm.eq_active0[:n_urdf] = 0
    if ground is None:
        mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
        if not loops:
            mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    else:
        mjm.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
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


def _spec(mujoco, text, model, floating_base, ground):
    """The MuJoCo model's mjSpec: the URDF, a free joint on the root link, the ground."""
    spec = mujoco.MjSpec.from_string(text)
    if floating_base:
        root = model.link_names[0]
        try:
            spec.body(root).add_freejoint(name=ROOT_JOINT)
        except (KeyError, AttributeError):
            raise SimModelError(f"floating_base: MuJoCo made no body of the root link {root!r}") from None
    if ground is not None:
        if not (ground.radius > 0 and np.isfinite(ground.radius)):
            raise SimModelError(f"contact_radius: expected a finite number of m > 0, got {ground.radius}")
        if not (ground.friction >= 0 and np.isfinite(ground.friction)):
            raise SimModelError(f"contact_friction: expected a finite number >= 0, got {ground.friction}")
        contact = {"condim": 3, "friction": [ground.friction, 0.0, 0.0], "solref": list(ground.solref),
                   "solimp": list(ground.solimp)}
        spec.worldbody.add_geom(name="ground", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 1.0],
                                pos=[0.0, 0.0, float(ground.height)], contype=0, conaffinity=1, **contact)
        for link in ground.links:
            if link not in model.link_names:
                raise SimModelError(f"contact_links: {link!r} is not a link of the robot "
                                    f"(links: {list(model.link_names)})")
            if model.links[model.link_names.index(link)].body < 0:
                raise SimModelError(f"contact_links: link {link!r} is fixed to the world")
            spec.body(link).add_geom(name=contact_geom(link), type=mujoco.mjtGeom.mjGEOM_SPHERE,
                                     size=[float(ground.radius), 0.0, 0.0], contype=1, conaffinity=0,
                                     mass=0.0, **contact)
    return spec


def contact_geom(link: str) -> str:
    """The name of the contact sphere a :class:`Ground` puts on ``link``."""
    return f"{link}/contact"


def check_joints(mjm, model) -> None:
    """Every rbd_ros DOF joint is a MuJoCo joint with the same name (1-DOF: hinge or slide;
    the free-flyer :data:`ROOT_JOINT`: free), and nothing else moves."""
    import mujoco  # the sim extra (optional): imported where a MuJoCo model is made

    names = {mjm.joint(i).name for i in range(mjm.njnt)}
    missing = [n for n in model.joint_names if n not in names]
    if missing:
        raise SimModelError(f"joints {missing}: not in MuJoCo's model (its joints: {sorted(names)})")
    if mjm.nv != model.nv:
        extra = sorted(names - set(model.joint_names))
        raise SimModelError(f"MuJoCo has {mjm.nv} DOFs, rbd_ros {model.nv}; extra MuJoCo joints: {extra}")
    for n, t in zip(model.joint_names, model.joint_types):
        jt = int(mjm.jnt_type[mjm.joint(n).id])
        want = ((int(mujoco.mjtJoint.mjJNT_FREE),) if t == "floating" else
                (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)))
        if jt not in want:
            raise SimModelError(f"joint {n!r}: MuJoCo made it a joint of type {jt}, not "
                                f"{'free' if t == 'floating' else 'hinge/slide'}")


def quat_wxyz_to_R(q) -> np.ndarray:
    """Rotation matrix of a unit quaternion ``[w x y z]`` (MuJoCo's order)."""
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
        Rc = quat_wxyz_to_R(b.iquat)
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
    """rbd_ros joint order <-> MuJoCo addresses, by joint name, for the 1-DOF joints
    (``joints``: default every one in model order; a floating base's free joint is not
    one of them: :class:`rbd_ros.sim.floating.BaseState` reads it)."""

    def __init__(self, mjm, model, joints=()):
        one_dof = [n for n, t in zip(model.joint_names, model.joint_types) if t != "floating"]
        self.joints = list(joints) if joints else one_dof
        unknown = [j for j in self.joints if j not in one_dof]
        if unknown:
            raise SimModelError(f"joints: unknown joints {unknown}; the model's joints are {one_dof}")
        if len(set(self.joints)) != len(self.joints):
            raise SimModelError(f"joints: a joint is named twice in {self.joints}")
        self.qpos = np.array([qpos_address(mjm, j) for j in self.joints], dtype=np.intp)
        self.dof = np.array([qvel_address(mjm, j) for j in self.joints], dtype=np.intp)
        # model order (the 1-DOF joints) -> MuJoCo addresses
        self.model_qpos = np.array([qpos_address(mjm, j) for j in one_dof], dtype=np.intp)
        self.model_dof = np.array([qvel_address(mjm, j) for j in one_dof], dtype=np.intp)


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
