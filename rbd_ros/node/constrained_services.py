"""``~/constrained_inverse_dynamics`` and ``~/constrained_forward_dynamics``
(rbd_ros_interfaces srv of those names): request -> completed states -> rbd_ros.core ->
response.  No dynamics maths here.

The constraints of a request are the model's loop closures (``model.constraints``: the
URDF's and the parameter constraints_file's) followed by the request's ``constraints``
and, with ``use_contacts``, the node's current contact set (the parameter contacts or
the latest ``~/contacts``, asked from the node: held_state.py).  A request constraint
with ``friction`` 0 is bilateral (a loop closure: the node closes it with the model's);
with friction > 0 it is a contact (unilateral, inside its friction cone: the core's
``friction`` entry rbd.FrictionCone(μ), a weld with its ``sole_size`` -- zero: the
parameter sole_size); contacts constrain accelerations only (J q̈ + γ = 0 gives the
base's), never positions or velocities.  Inverse dynamics only: the forward dynamics
refuse friction and ``use_contacts``.  Joints by name (DOF names, as everywhere in the
node); one state (name/position/...) or a trajectory (``trajectory.points`` not
empty).

* Inverse dynamics: the actuated joints (``actuated_joints``; every joint of a model
  without loops) are required; passive joints given only seed the closing of the loops
  (``rbd.LoopCompletion``: positions, then velocities from J q̇ = 0); accelerations
  cover the actuated joints (empty: zero), the passive ones (and a floating base's)
  follow from J q̈ + γ = 0.  ``rbd.constrained_inverse_dynamics`` gives the actuator
  efforts (``name`` = the actuated joints; a trajectory's ``points[i].effort`` in that
  order) and λ (``forces``, one ConstraintForces per state, each with its feasibility);
  ``feasible`` / ``violation``: every state realisable inside the friction cones / the
  largest violation (the efforts are then those of the least-violating forces).
* Forward dynamics: positions, velocities and efforts of the actuated joints are
  required; the passive ones are completed unless every DOF is given (efforts of the
  joints not named: zero); ``rbd.constrained_forward_dynamics`` with the request's
  Baumgarte gains kp, kd gives the accelerations of every DOF (``name``: model order)
  and λ.

A trajectory's states are completed in order, each from the previous one (the assembly
branch follows the motion); the first from the model's initial assembly.  A state whose
loops cannot be closed, or near a singular configuration (the passive block's condition
estimate above ``loop_cond_limit``; inverse dynamics only: the forward dynamics do not
need J_P to be regular), refuses the request naming the constraint and the point.
"""
from __future__ import annotations

import array
import functools
import math

import numpy as np
from geometry_msgs.msg import Accel

import rbd_ros.core as rbd
from rbd_ros.node.loops import DEFAULT_COND_LIMIT
from rbd_ros.node.names import SRV_CFD, SRV_CID
from rbd_ros.node.services import NO_MODEL, BadRequest

POINT_MASK = (1, 1, 1, 0, 0, 0)
WELD_MASK = (1, 1, 1, 1, 1, 1)


def _finite(values, field: str) -> list:
    vals = [float(x) for x in values]
    for k, x in enumerate(vals):
        if not math.isfinite(x):
            raise BadRequest(f"{field} is not finite (component {k} = {x})")
    return vals


def _pose(p, field: str) -> np.ndarray:
    """geometry_msgs/Pose -> 4x4 (an all-zero orientation is the identity)."""
    xyz = _finite((p.position.x, p.position.y, p.position.z), f"{field}.position")
    x, y, z, w = _finite((p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w),
                         f"{field}.orientation")
    n = math.sqrt(x * x + y * y + z * z + w * w)
    T = np.eye(4)
    T[:3, 3] = xyz
    if n == 0.0:
        return T
    if abs(n - 1.0) > 1e-3:
        raise BadRequest(f"{field}.orientation must be a unit quaternion or all zero (norm {n:.6g})")
    x, y, z, w = x / n, y / n, z / n, w / n
    T[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    return T


def constraint_of(msg, k: int, sole=None, friction_ok: bool = True):
    """rbd_ros_interfaces/Constraint ``msg`` (request field constraints[k]) -> (rbd.Constraint,
    its friction entry: None for friction 0 (bilateral), else rbd.FrictionCone); ``sole``:
    the default sole (the parameter sole_size, or None) of a flat contact whose sole_size
    is zero; ``friction_ok`` False: friction > 0 is refused (forward dynamics).
    BadRequest naming the field."""
    field = f"constraints[{k}]"
    fr = float(msg.friction)
    if not math.isfinite(fr) or fr < 0:
        raise BadRequest(f"{field}.friction: expected a finite number >= 0, got {fr}")
    if fr > 0 and not friction_ok:
        raise BadRequest(f"{field}.friction: the forward dynamics take bilateral constraints only (friction 0); "
                         "contacts with friction are for ~/constrained_inverse_dynamics")
    mask = [int(x) for x in msg.mask]
    if any(x not in (0, 1) for x in mask):
        raise BadRequest(f"{field}.mask: expected six 0/1 values over [vx vy vz wx wy wz], got {mask}")
    try:
        c = rbd.Constraint(msg.link_a, msg.link_b or None, origin_a=_pose(msg.origin_a, f"{field}.origin_a"),
                           origin_b=_pose(msg.origin_b, f"{field}.origin_b"), mask=mask if any(mask) else None,
                           name=msg.name or None)
    except ValueError as e:
        raise BadRequest(f"{field}: {e}") from None
    if fr == 0:
        return c, None
    if c.mask == POINT_MASK:
        return c, rbd.FrictionCone(fr)
    if c.mask != WELD_MASK:
        raise BadRequest(f"{field}.mask: a contact with friction is a point (1 1 1 0 0 0, or all zero) or flat (all "
                         f"one) contact, got {list(c.mask)}")
    size = [float(x) for x in msg.sole_size]
    if size == [0.0, 0.0]:
        if sole is None:
            raise BadRequest(f"{field}.sole_size: a flat contact with friction needs its sole [length, width] (m); "
                             "the node has no default (parameter sole_size)")
        size = list(sole)
    if not all(math.isfinite(x) and 0.0 < x <= 1e3 for x in size):
        raise BadRequest(f"{field}.sole_size: expected two lengths > 0 (m), got {size}")
    return c, rbd.FrictionCone(fr, sole_size=size)


def _base_q(pose, field):
    p = _finite((pose.position.x, pose.position.y, pose.position.z), f"{field}.position")
    quat = _finite((pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w),
                   f"{field}.orientation")
    norm = math.sqrt(sum(c * c for c in quat))
    if abs(norm - 1.0) > 1e-3:
        raise BadRequest(f"{field}.orientation must be a unit quaternion (norm {norm:.6g})")
    return p + [c / norm for c in quat]


def _node_contacts(rt, held):
    """(constraint, FrictionCone) of the node's current contact set (``held()``: the node's
    snapshot, held_state.py); BadRequest when there is none."""
    if rt.contacts is None:
        raise BadRequest("use_contacts: the node keeps no contact set (parameter contacts is empty); give the "
                         "contacts in constraints instead")
    if held is None:
        raise BadRequest("use_contacts: the node's contact set is not available here; give the contacts in "
                         "constraints instead")
    snap = held()
    spec = snap.get("contacts")
    if spec is None:
        raise BadRequest(f"use_contacts: the node did not give its contact set ({snap.get('error', 'no model?')})")
    try:
        cs = rt.contacts.make_set(spec["links"], spec["normals"], spec["friction"])
    except (ValueError, KeyError) as e:
        raise BadRequest(f"use_contacts: the node's contact set does not fit this model ({e})") from None
    return list(zip(cs.constraints, cs.friction))


class Mechanism:
    """One request's mechanism: the Robot's model and loops plus the request's
    constraints (and the node's contacts with ``use_contacts``, from ``held``);
    completions of positions/velocities over the bilateral ones (actuated joints and a
    floating base fixed) and of accelerations over all (actuated joints fixed).
    ``friction``: the core's friction argument (None: every constraint bilateral);
    ``forward``: the forward dynamics (bilateral constraints only)."""

    def __init__(self, rt, req, held=None, forward=False):
        if forward and getattr(req, "use_contacts", False):
            raise BadRequest("use_contacts: the forward dynamics take bilateral constraints only (a contact holds "
                             "no position); give them in constraints with friction 0")
        self.rt = rt
        model = rt.model
        sole = rt.contacts.sole if rt.contacts is not None else None
        items = [constraint_of(c, k, sole, not forward) for k, c in enumerate(req.constraints)]
        if getattr(req, "use_contacts", False):
            items += _node_contacts(rt, held)
        self.extra = tuple(c for c, _ in items)
        fric = tuple(f for _, f in items)
        self.unilateral = any(f is not None for f in fric)
        self.friction = fric if self.unilateral else None
        bilateral = tuple(c for c, f in items if f is None)
        lp = rt.loops
        if lp is not None:
            self.actuated = lp.actuated
        else:
            self.actuated = tuple(n for n, t in zip(model.joint_names, model.joint_types) if t != "floating")
        base = [n for n, t in zip(model.joint_names, model.joint_types) if t == "floating"]
        try:
            self.pos = rbd.LoopCompletion(model, list(self.actuated) + base, bilateral)
            self.acc = rbd.LoopCompletion(model, list(self.actuated), self.extra)
        except ValueError as e:        # a constraint naming an unknown link, a repeated name ...
            raise BadRequest(f"constraints: {e}") from None
        self.constraints = self.acc.constraints
        self.m = self.acc.m
        self.cond_limit = lp.cond_limit if lp is not None else DEFAULT_COND_LIMIT
        self.act_v = np.asarray([model.v_index(n) for n in self.actuated], dtype=np.int64)
        self.seed = np.array(lp.q_initial if lp is not None else model.neutral(), dtype=np.float64)

    def names(self, names, field: str, need_all: bool):
        """Request names -> (dof index per name, every DOF named); BadRequest for an
        unknown, repeated or missing (actuated) joint."""
        rt = self.rt
        idx, seen = [], {}
        for k, n in enumerate(names):
            i = rt.dof_index.get(n)
            if i is None:
                raise BadRequest(rt.unknown_joint_text(n, f"{field}[{k}]"))
            if i in seen:
                raise BadRequest(f"{field}: joint {n!r} is listed twice ({field}[{seen[i]}] and {field}[{k}])")
            seen[i] = k
            idx.append(i)
        named = {rt.dof_names[i] for i in idx}
        missing = [n for n in self.actuated if n not in named] if not need_all else \
            [n for n in rt.dof_names if n not in named]
        if missing:
            raise BadRequest(f"{field}: missing joints {missing} (the actuated joints {list(self.actuated)} are "
                             "required; passive joints are completed from them)")
        return np.asarray(idx, dtype=np.int64), len(named) == rt.ndof

    def state(self, idx, pos, vel, complete: bool, where: str, base=None):
        """(q, v) with the named values (and ``base(q, v)``: a floating base's), the rest
        of q from the previous state's solution (``seed``), closed (when ``complete``);
        BadRequest naming the constraint."""
        rt = self.rt
        q = self.seed.copy()
        v = np.zeros(rt.model.nv)
        q[rt.dof_q[idx]] = pos
        if vel is not None:
            v[rt.dof_v[idx]] = vel
        if base is not None:
            base(q, v)
        if complete and self.pos.m:
            try:
                self.pos.positions(q)
                self.pos.velocities(q, v)
            except ValueError as e:
                raise BadRequest(f"{where}: {e}") from None
        np.copyto(self.seed, q)
        return q, v

    def forces(self, lam, msg_type, entry_type, feasible=True, violation=0.0):
        """A ConstraintForces message of λ."""
        msg = msg_type()
        msg.feasible, msg.violation = bool(feasible), float(violation)
        r = 0
        for c in self.constraints:
            e = entry_type(name=c.name, frame_id=c.link_a, mask=list(c.mask))
            w = [0.0] * 6
            for k, on in enumerate(c.mask):
                if on:
                    w[k] = float(lam[r])
                    r += 1
            f, t = e.wrench.force, e.wrench.torque
            f.x, f.y, f.z, t.x, t.y, t.z = w
            msg.constraints.append(e)
        return msg


def _vec(values, n: int, field: str, required: bool):
    if len(values) == 0 and not required:
        return None
    if len(values) != n:
        expect = f"{n} (one per name)" if required else f"{n} (one per name) or 0 (all zero)"
        raise BadRequest(f"{field} has {len(values)} entries, expected {expect}")
    return np.asarray(_finite(values, field), dtype=np.float64)


def _states(mech, req, third: str, third_point: str):
    """([(where, idx, pos, vel, third values)], every DOF named) of a request (one state or
    its trajectory's points), names checked."""
    traj = req.trajectory
    if len(traj.points):
        idx, every = mech.names(traj.joint_names, "trajectory.joint_names", False)
        n = len(idx)
        out = []
        for i, pt in enumerate(traj.points):
            where = f"trajectory.points[{i}]"
            pos = _vec(pt.positions, n, f"{where}.positions", True)
            vel = _vec(pt.velocities, n, f"{where}.velocities", False)
            x = _vec(getattr(pt, third_point), n, f"{where}.{third_point}", False)
            out.append((where, idx, pos, vel, x))
        return out, every
    idx, every = mech.names(req.name, "name", False)
    n = len(idx)
    return [("state", idx, _vec(req.position, n, "position", True), _vec(req.velocity, n, "velocity", False),
             _vec(getattr(req, third), n, third, False))], every


def _base(rt, req, k: int, nstates: int, q, v):
    """A floating base's pose (required) and velocity (optional) of state k into q, v."""
    if not rt.floating:
        return
    if len(req.base_poses) != nstates:
        raise BadRequest(f"base_poses has {len(req.base_poses)} entries, expected {nstates} (one per state) for a "
                         "floating-base model")
    q[0:7] = _base_q(req.base_poses[k], f"base_poses[{k}]")
    if len(req.base_velocities):
        if len(req.base_velocities) != nstates:
            raise BadRequest(f"base_velocities has {len(req.base_velocities)} entries, expected {nstates} or 0")
        t = req.base_velocities[k]
        v[0:6] = _finite((t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z),
                         f"base_velocities[{k}]")


def _fail(resp, message):
    resp.success = False
    resp.message = message
    return resp


def constrained_inverse_dynamics(rt, req, resp, held=None):
    """~/constrained_inverse_dynamics (module docstring); ``held()``: the node's snapshot
    (its contact set for ``use_contacts``)."""
    if rt is None:
        return _fail(resp, NO_MODEL)
    from rbd_ros_interfaces.msg import ConstraintForce, ConstraintForces  # (present where services run)
    try:
        mech = Mechanism(rt, req, held)
        states, _ = _states(mech, req, "acceleration", "accelerations")
        model = rt.model
        efforts, forces, worst, feasible, violation = [], [], 0.0, True, 0.0
        for k, (where, idx, pos, vel, acc) in enumerate(states):
            q, v = mech.state(idx, pos, vel, True, where, lambda q, v, k=k: _base(rt, req, k, len(states), q, v))
            a = np.zeros(model.nv)
            if acc is not None:
                a[rt.dof_v[idx]] = acc
            try:
                if mech.m:
                    mech.acc.accelerations(q, v, a)
                res = rbd.constrained_inverse_dynamics(model, q, v, a, mech.extra, actuated=mech.actuated,
                                                       friction=mech.friction)
            except (ValueError, ImportError) as e:      # ImportError: no QP solver (daqp) for the cones
                raise BadRequest(f"{where}: {e}") from None
            if mech.m and not mech.unilateral and len(mech.acc.free) and not res.cond <= mech.cond_limit:
                raise BadRequest(f"{where}: {_singular_text(rt, mech, q, res.cond)}")
            efforts.append(res.tau[mech.act_v])
            forces.append(mech.forces(res.lam, ConstraintForces, ConstraintForce, res.feasible, res.violation))
            feasible = feasible and res.feasible
            violation = max(violation, res.violation)
            if res.feasible:        # (infeasible: the residual is the violation, reported as such)
                worst = max(worst, res.residual)
    except BadRequest as e:
        return _fail(resp, str(e))
    E = np.array(efforts)
    if not np.isfinite(E).all():
        return _fail(resp, "the computed efforts are not finite: use physically plausible values")
    resp.name = list(mech.actuated)
    if len(req.trajectory.points):
        for pt, row in zip(req.trajectory.points, E):
            pt.effort = array.array("d", row.tobytes())
        resp.trajectory = req.trajectory
    else:
        resp.effort = array.array("d", E[0].tobytes())
    resp.forces = forces
    resp.feasible, resp.violation, resp.residual = bool(feasible), float(violation), float(worst)
    resp.success = True
    resp.message = f"ok: {len(states)} state{'s' if len(states) != 1 else ''}" + \
        (f"; over-determined, largest residual {worst:.3g}" if worst > 1e-9 else "") + \
        ("" if feasible else f"; infeasible: no forces inside the friction cones realise "
         f"{sum(not f.feasible for f in forces)} of them (largest violation {violation:.3g} N / N m): the efforts "
         "are those of the least-violating forces")
    return resp


def _singular_text(rt, mech, q, cond) -> str:
    lp = rt.loops
    if lp is not None and not mech.extra:
        return str(lp.near_singular(q, cond))
    return (f"the passive joints are near a singular configuration of the loops (condition estimate of J_P "
            f"{cond:.3g} > loop_cond_limit {mech.cond_limit:g}): actuator torques diverge there")


def constrained_forward_dynamics(rt, req, resp):
    """~/constrained_forward_dynamics (module docstring)."""
    if rt is None:
        return _fail(resp, NO_MODEL)
    from rbd_ros_interfaces.msg import ConstraintForce, ConstraintForces  # (present where services run)
    try:
        kp, kd = (float(x) for x in _finite((req.kp, req.kd), "kp, kd"))
        if kp < 0 or kd < 0:
            raise BadRequest(f"kp, kd: expected numbers >= 0 (Baumgarte gains), got {kp}, {kd}")
        mech = Mechanism(rt, req, forward=True)
        states, every = _states(mech, req, "effort", "effort")
        model = rt.model
        qdds, forces = [], []
        for k, (where, idx, pos, vel, eff) in enumerate(states):
            q, v = mech.state(idx, pos, vel, not every, where, lambda q, v, k=k: _base(rt, req, k, len(states), q, v))
            tau = np.zeros(model.nv)
            if eff is not None:
                tau[rt.dof_v[idx]] = eff
            try:
                res = rbd.constrained_forward_dynamics(model, q, v, tau, mech.extra, kp=kp, kd=kd)
            except ValueError as e:
                raise BadRequest(f"{where}: {e}") from None
            qdds.append(res.qdd)
            forces.append(mech.forces(res.lam, ConstraintForces, ConstraintForce))
    except BadRequest as e:
        return _fail(resp, str(e))
    Q = np.array(qdds)
    if not np.isfinite(Q).all():
        return _fail(resp, "the computed accelerations are not finite: use physically plausible values")
    resp.name = list(rt.dof_names)
    out = np.ascontiguousarray(Q[:, rt.dof_v])
    if len(req.trajectory.points):
        for pt, row in zip(req.trajectory.points, out):
            pt.accelerations = array.array("d", row.tobytes())
        resp.trajectory = req.trajectory
    else:
        resp.acceleration = array.array("d", out[0].tobytes())
    if rt.floating:
        resp.base_accelerations = [_accel(row[0:6]) for row in Q]
    resp.forces = forces
    resp.success = True
    resp.message = f"ok: {len(states)} state{'s' if len(states) != 1 else ''}"
    return resp


def _accel(row):
    m = Accel()
    m.linear.x, m.linear.y, m.linear.z, m.angular.x, m.angular.y, m.angular.z = (float(x) for x in row)
    return m


def table(held=None):
    """(srv type, name, fn(rt, req, resp)) of both services for
    ``services.create_dynamics_services(extra=...)``; ``held()``: the node's snapshot
    (held_state.py: its contact set for ``use_contacts``; None: refused).  ImportError if
    rbd_ros_interfaces is missing."""
    from rbd_ros_interfaces import srv as isrv  # may be missing: ImportError (see the docstring)
    return [(isrv.ConstrainedInverseDynamics, SRV_CID, functools.partial(constrained_inverse_dynamics, held=held)),
            (isrv.ConstrainedForwardDynamics, SRV_CFD, constrained_forward_dynamics)]
