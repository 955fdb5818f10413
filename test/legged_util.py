"""Helpers of the node's contact tests and bench/contacts_node.py: solo12 (example-robot-data)
standing on four point feet, the node's control step in this process (no ROS, no DDS),
and MuJoCo's solo12 on a ground plane (the sim driver's model) stepped with it.

* ``InProcessNode``: the node's Robot and ControlStep (the term table of the node) for
  solo12 with the parameter ``contacts`` = its four feet; ``base(q7, v6, now)`` and
  ``state(q, v, now)`` hand it a base state and a joint state as the ROS callbacks do.
* ``Sim``: the MuJoCo model the driver builds (free joint, ground plane, a contact
  sphere of the foot's radius on each foot), read and commanded as the driver does
  (the base state as ``rbd_ros.sim.floating.BaseState`` converts it).
* ``feet_ik``: joint positions, velocities and accelerations that keep the feet at given
  world points while the base follows a given motion (the core's loop closure with the
  feet as point constraints to the world and the base fixed).
"""
from __future__ import annotations

import array
import logging
import math

import numpy as np
from oracle import robot_urdf

import rbd_ros.core as rbd
from rbd_ros.node import model_build as mb
from rbd_ros.node.contacts import contact_options
from rbd_ros.node.control_step import ControlStep
from rbd_ros.node.params import Params
from rbd_ros.node.stats import Stats
from rbd_ros.node.terms import TERMS

SOLO = robot_urdf("solo12")
FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
FOOT_RADIUS = 0.016          # the solo_foot mesh: a ball of 16 mm radius about the foot frame
JOINTS = [f"{leg}_{j}" for leg in ("FL", "FR", "HL", "HR") for j in ("HAA", "HFE", "KFE")]
# example-robot-data's "standing" (solo.srdf), in JOINTS order
Q_STAND = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
G = 9.81
DT = 1e-3


def solo_model():
    return rbd.Model.from_urdf(SOLO, floating_base=True)


def translation(p) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


class ListLog:
    """A logger that keeps (level, text) (what the node's terms log)."""

    def __init__(self):
        self.lines = []

    def _add(self, level, text, **_):
        self.lines.append((level, str(text)))

    def debug(self, text, **kw):
        self._add("debug", text)

    def info(self, text, **kw):
        self._add("info", text)

    def warning(self, text, **kw):
        self._add("warning", text)

    warn = warning

    def error(self, text, **kw):
        self._add("error", text)

    def count(self, part: str, level: str | None = None) -> int:
        return sum(1 for lv, t in self.lines if part in t and (level is None or lv == level))


class InProcessNode:
    """The node's control step for solo12 on its four feet (``params``: more node
    parameters, e.g. command_mode).  ``live``: the parts someone subscribes to."""

    def __init__(self, live=("g", "b", "contact", "cmd"), log=None, **params):
        params.setdefault("max_state_age", 0.0)
        params.setdefault("contacts", FEET)
        self.params = Params(**params)
        p = self.params
        with open(SOLO) as f:
            self.urdf = f.read()
        self.rt = self.build(p)
        self.log = log if log is not None else logging.getLogger("legged")
        self.stats = Stats()
        self.step = ControlStep(TERMS, p, self.log, on_error=self.stats.error)   # every report: stats.last_error
        self.bound = self.step.make(self.rt)
        self.step.bind(self.bound)
        self.step.set_live(set(live), ())
        self.names = list(self.rt.out_names)

    def build(self, p):
        co = contact_options(p.contacts, p.contact_type, p.friction_coefficient, p.sole_size)
        return mb.build_robot(self.urdf, floating_base=True, mimic=True, gravity=(0.0, 0.0, -G), joints=p.joints,
                              source="test", contacts=co)

    @property
    def model(self):
        return self.rt.model

    def part(self, key, part):
        return self.bound.by_key[key].array(part)

    @property
    def contacts(self):
        return self.rt.contacts

    def base(self, pose, twist, now, child="base_link") -> bool:
        return self.step.base_state(self.bound, child, list(pose), list(twist), now)

    def state(self, q, v, now, stamp=None):
        """One joint state (JOINTS order); the parts published, or None (dropped)."""
        return self.step.joint_state(self.bound, self.stats, self.names, array.array("d", q),
                                     array.array("d", v), [], now if stamp is None else stamp, now)

    def set_contacts(self, links, normals=(), friction=()) -> bool:
        return self.step.contacts(self.bound, list(links), list(normals), list(friction))

    def desired(self, q, v, a, now) -> None:
        pt = type("Point", (), {})()
        pt.positions, pt.velocities, pt.accelerations = list(q), list(v), list(a)
        self.step.desired(self.bound, self.names, [pt], now)

    def model_q(self, pose, qj):
        """The model's q of base pose [x y z qx qy qz qw] and joint positions (JOINTS order)."""
        q = np.array(self.model.neutral(), dtype=np.float64)
        q[:7] = pose
        q[[self.model.q_index(j) for j in JOINTS]] = qj
        return q

    def model_v(self, twist, vj):
        v = np.zeros(self.model.nv)
        v[:6] = twist
        v[[self.model.v_index(j) for j in JOINTS]] = vj
        return v


class Sim:
    """solo12 in MuJoCo as the sim driver builds it (RK4 at 1 kHz, a ground plane, contact
    spheres of ``radius`` on the feet), standing in ``qj`` (JOINTS order; default
    example-robot-data's standing pose) with its lowest foot on the ground, at rest."""

    def __init__(self, qj=None, base_pose=None, radius=FOOT_RADIUS):
        import mujoco  # the sim extra (optional): the MuJoCo tests importorskip it first

        from rbd_ros.sim.floating import BaseState, FootForces, place_on_ground
        from rbd_ros.sim.mujoco_model import Ground, JointMap, load_urdf
        self.mj = mujoco
        ground = Ground(links=FEET, radius=radius)
        self.mjm, self.model = load_urdf(SOLO, floating_base=True, ground=ground, timestep=DT, integrator="rk4")
        self.d = mujoco.MjData(self.mjm)
        self.jm = JointMap(self.mjm, self.model, JOINTS)
        self.basestate = BaseState(self.mjm)
        self.feet = FootForces(self.mjm, FEET)
        self.d.qpos[self.jm.qpos] = Q_STAND if qj is None else qj
        self.basestate.set_pose(self.d, [0, 0, 0, 0, 0, 0, 1] if base_pose is None else base_pose)
        if base_pose is None:
            place_on_ground(self.mjm, self.d, ground)
        mujoco.mj_forward(self.mjm, self.d)
        self.t = 0.0

    def q(self):
        return self.d.qpos[self.jm.qpos].copy()

    def v(self):
        return self.d.qvel[self.jm.dof].copy()

    def pose(self):
        return self.basestate.pose(self.d)

    def twist(self):
        return self.basestate.twist(self.d)

    def step(self, effort) -> None:
        """One physics step with the joint efforts (JOINTS order)."""
        d = self.d
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[self.jm.dof] = effort
        self.mj.mj_step(self.mjm, d)
        self.t += DT

    def forces(self):
        """(4, 3): each foot's contact force, world axes (after an mj_forward of the state)."""
        self.mj.mj_forward(self.mjm, self.d)
        return self.feet.world(self.d)

    def foot_positions(self):
        self.mj.mj_forward(self.mjm, self.d)
        return np.array([self.d.xpos[self.mjm.body(f).id] for f in FEET])

    def foot_rotations(self, q_model=None):
        """(4, 3, 3): each foot's rotation (world), now or at the rbd_ros model's q."""
        d = self.d
        if q_model is not None:
            d = self._kin = getattr(self, "_kin", None) or self.mj.MjData(self.mjm)
            d.qpos[self.jm.qpos] = [q_model[self.model.q_index(j)] for j in JOINTS]
            self.basestate.set_pose(d, q_model[:7])
            self.mj.mj_kinematics(self.mjm, d)
        else:
            self.mj.mj_forward(self.mjm, d)
        return np.array([d.xmat[self.mjm.body(f).id].reshape(3, 3) for f in FEET])


def tilt_deg(pose0, pose) -> float:
    """The angle (deg) of the rotation between two base orientations ([.., qx qy qz qw])."""
    dot = abs(float(np.dot(pose0[3:7], pose[3:7])))
    return 2.0 * math.degrees(math.acos(min(1.0, dot)))


def feet_ik(model, feet_world, base_ref, times, qj0):
    """(Q, V, A) of the joints (JOINTS order) at ``times``: the feet held at
    ``feet_world`` (4 x 3) while the base follows ``base_ref(t)`` -> (position, linear
    velocity, linear acceleration), upright.  The core's loop closure (the feet as point
    constraints to the world, the base fixed): positions from ``qj0`` on, then velocities
    (J q̇ = 0) and accelerations (J q̈ + γ = 0)."""
    cons = tuple(rbd.Constraint(f, None, origin_b=translation(p), name=f) for f, p in zip(FEET, feet_world))
    lc = rbd.LoopCompletion(model, ["root_joint"], cons)
    iq = [model.q_index(j) for j in JOINTS]
    iv = [model.v_index(j) for j in JOINTS]
    q = np.array(model.neutral(), dtype=np.float64)
    q[iq] = qj0
    out = []
    for t in times:
        p, pd, pdd = base_ref(t)
        q[:3], q[3:7] = p, (0.0, 0.0, 0.0, 1.0)
        lc.positions(q)
        v = np.zeros(model.nv)
        v[:3] = pd
        lc.velocities(q, v)
        a = np.zeros(model.nv)
        a[:3] = pdd
        lc.accelerations(q, v, a)
        out.append((q[iq].copy(), v[iv].copy(), a[iv].copy()))
    return tuple(np.array([o[k] for o in out]) for k in range(3))
