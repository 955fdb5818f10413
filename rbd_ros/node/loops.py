"""A robot's closed kinematic loops as the node uses them (ROS-free): which DOFs are
actuated and which are passive, the completion of a measured joint state (the passive
joints from the actuated ones), and the actuator torques and constraint forces that
hold or move the mechanism.

``Loops`` belongs to one Robot (robot.py) and is used by the control thread (the joint
state, the compensation and command terms) and, in the service worker, by the services;
it owns scratch (rbd.LoopCompletion, buffers), so one thread uses one ``Loops``.

Conventions (doc/constraints.md): the constraints are ``model.constraints`` (the URDF's
``<constraint>`` elements and those of the parameter ``constraints_file``); the passive
DOFs are those of the joints not in ``actuated_joints``; a floating base is never
actuated and the topic path keeps it fixed (at rest at the origin), so it counts as
measured there.  Actuator torques come from ``rbd.constrained_inverse_dynamics_into``
(allocation-free); near a singular configuration they diverge like the condition
estimate of the passive DOFs' block J_P (``cond``), so a state above ``cond_limit`` is
refused (``NearSingular``, naming the constraint most involved), never turned into a
huge torque.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

import rbd_ros.core as rbd

DEFAULT_COND_LIMIT = 1000.0     # parameter loop_cond_limit's default
CLOSED = "closed"               # Loops.status of a state that was used


class NearSingular(ValueError):
    """A state too close to a singular configuration of the loops (cond of J_P above the
    limit); ``constraint``: the constraint most involved; ``reason``: the drop reason."""
    reason = "near_singular"

    def __init__(self, text, constraint):
        super().__init__(text)
        self.constraint = constraint


def transmission_joints(urdf_text: str) -> list:
    """The joints of the URDF's ``<transmission>`` elements (a hint for actuated_joints)."""
    try:
        root = ET.fromstring(urdf_text)
    except ET.ParseError:
        return []
    return [j.get("name") for t in root.iter("transmission") for j in t.iter("joint") if j.get("name")]


def check_actuated(model, actuated) -> tuple:
    """The parameter actuated_joints for a model with loops: 1-DOF joints, each once, at
    least one; rbd.ModelError naming the entry otherwise."""
    actuated = tuple(actuated or ())
    if not actuated:
        raise rbd.ModelError(f"parameter actuated_joints: the model has closed loops (constraints "
                             f"{[c.name for c in model.constraints]}): name the joints driven by actuators")
    one_dof = [n for n, nv in zip(model.joint_names, model.joint_nv) if nv == 1]
    for k, n in enumerate(actuated):
        if n in actuated[:k]:
            raise rbd.ModelError(f"parameter actuated_joints: {n!r} is listed twice")
        if n not in one_dof:
            shown = ", ".join(one_dof[:40]) + (" ..." if len(one_dof) > 40 else "")
            raise rbd.ModelError(f"parameter actuated_joints[{k}]: {n!r} is not a 1-DOF joint of the model (its "
                                 f"1-DOF joints: [{shown}])")
    return actuated


class Loops:
    """The closed loops of ``model`` with ``actuated`` joint names (the parameter
    actuated_joints: 1-DOF joints; rbd.ModelError naming a bad one), for a Robot whose
    output DOFs (velocity indices) are ``out_v`` (set by the Robot)."""

    def __init__(self, model, actuated, cond_limit: float | None = None):
        self.model = model
        self.constraints = model.constraints
        self.actuated = check_actuated(model, actuated)
        cond_limit = DEFAULT_COND_LIMIT if cond_limit is None else cond_limit
        fixed = list(self.actuated) + [n for n, t in zip(model.joint_names, model.joint_types) if t == "floating"]
        self.measured = rbd.LoopCompletion(model, fixed)        # the measured state (actuated + base fixed)
        self.free = self.measured.free                          # passive DOFs (velocity indices)
        self.compensation = rbd.LoopCompensation(model, self.actuated, free=self.free)   # g, b, λ in one call
        self.m = self.measured.m
        self.rows = []
        r = 0
        for c in self.constraints:
            self.rows.append((c, r, r + sum(c.mask)))
            r += sum(c.mask)
        self.out_v = np.zeros(0, dtype=np.int64)     # the Robot's output DOFs
        self.cond_limit = float(cond_limit)
        nv = model.nv
        self.zero = np.zeros(nv)
        self.a = np.zeros(nv)          # scratch: accelerations
        self.tau = np.zeros(nv)        # scratch: actuator torques, model order
        self.lam = np.zeros(self.m)    # scratch: constraint forces
        self.info = np.zeros(4)        # [residual, acceleration residual, rank, cond]
        self.cond = math.nan           # the last condition estimate of J_P
        self.status = CLOSED           # or why the last measured state was not used (diagnostics)
        self._q_good = np.zeros(model.nq)
        self._v_good = np.zeros(nv)
        self.good = False              # _q_good holds a closed state
        self.q_initial = None          # the initial assembly (Robot: from initial_positions)

    # ------------------------------------------------------------------ the joint state
    def complete(self, q, v) -> None:
        """Close the loops of the measured state (q, v) in place: the passive positions
        from the previous solution (or the passive values just received: a seed), then
        their velocities.  rbd.LoopsNotClosed naming the constraint when the loops cannot
        be closed: q and v are then the last closed state again."""
        try:
            self.measured.state(q, v, False)      # (cond: from the torques, compensate)
        except ValueError as e:
            if self.good:
                np.copyto(q, self._q_good)
                np.copyto(v, self._v_good)
            self.status = f"not closed: {e}"
            raise
        np.copyto(self._q_good, q)
        np.copyto(self._v_good, v)
        self.good = True
        if self.status[0] == "n":          # "not closed: ..." until now
            self.status = CLOSED

    # ------------------------------------------------------------------ dynamics
    def compensate(self, q, v, g, b=None, lam=None, h=None) -> None:
        """At the measured (closed) state: ``g`` the actuator torques holding the
        mechanism still, ``b`` (when given) moving it with q̇ at zero actuated acceleration
        and ``lam`` (when given) the constraint forces of the latter, in ``out_v`` order,
        and the tree's H of those DOFs into ``h`` (when given) (rbd.LoopCompensation: one
        call).  NearSingular above ``cond_limit`` (its ``cond`` and ``status`` kept for
        the diagnostics)."""
        self.cond = cond = self.compensation.compute(q, v, self.out_v, g, b, lam, h)
        if not cond <= self.cond_limit:
            e = self.near_singular(q, cond)
            self.status = f"near singular: {e}"
            raise e
        if self.status[0] == "n" and self.status[1] == "e":     # "near singular: ..." until now
            self.status = CLOSED

    def torques(self, q, v, a, out=None, lam=None) -> None:
        """The actuator torques of (q, v, a) (a consistent with the loops) into ``tau``
        (model order) and ``out`` (``out_v`` order) when given, and the constraint forces
        into ``lam`` (m) when given (rbd.constrained_inverse_dynamics_into).  NearSingular
        above ``cond_limit``; ValueError when not finite."""
        rbd.constrained_inverse_dynamics_into(self.model, q, v, a, (), self.tau, self.lam if lam is None else lam,
                                              actuated=self.actuated, info=self.info)
        cond = self.info[3]
        if not cond <= self.cond_limit:
            raise self.near_singular(q, cond)
        if out is not None:
            np.take(self.tau, self.out_v, out=out)

    def close(self, q, v) -> None:
        """Close the loops of a state that is not the measured one (a desired state: its
        passive entries seed the solve) in place, positions and velocities."""
        self.measured.positions(q)
        self.measured.velocities(q, v)

    def bias_state(self, q, v, a_actuated=None):
        """The accelerations of the motion with the actuated accelerations ``a_actuated``
        (model order, passive entries ignored; None: zero) and the passive ones from
        J q̈ + γ = 0, in the scratch ``a`` (returned)."""
        a = self.a
        if a_actuated is None:
            a.fill(0.0)
        else:
            np.copyto(a, a_actuated)
        self.measured.accelerations(q, v, a)
        return a

    def near_singular(self, q, cond) -> NearSingular:
        """The error for a state whose J_P has condition estimate ``cond`` (allocates: the
        failure path): the constraint with the largest share of J_P's weakest direction."""
        name = "?"
        try:
            J = rbd.constraint_jacobian(self.model, q)[:, self.free]
            u = np.linalg.svd(J)[0][:, -1] if J.shape[0] <= J.shape[1] else np.linalg.svd(J)[0][:, J.shape[1] - 1]
            row = int(np.argmax(np.abs(u)))
            name = next(c.name for c, r0, r1 in self.rows if r0 <= row < r1)
        except (ValueError, np.linalg.LinAlgError, StopIteration):
            pass
        return NearSingular(f"the passive joints are near a singular configuration of the loops (condition estimate "
                            f"of J_P {cond:.3g} > loop_cond_limit {self.cond_limit:g}; constraint {name!r}): "
                            "actuator torques diverge there", name)

    def forces(self, lam) -> list:
        """Per constraint (name, link_a, mask, wrench [fx fy fz tx ty tz]) of ``lam``."""
        out = []
        for c, r0, _ in self.rows:
            w = [0.0] * 6
            r = r0
            for k, on in enumerate(c.mask):
                if on:
                    w[k] = float(lam[r])
                    r += 1
            out.append((c.name, c.link_a, c.mask, w))
        return out
