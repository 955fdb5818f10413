"""A mechanism's loop closures in MuJoCo (no ROS here): the rbd_ros model's constraints
(``model.constraints``, from the URDF's ``<constraint>`` elements: doc/constraints.md)
become MuJoCo equality constraints between sites placed at the two constraint frames.

How each rbd_ros mask is realised (MuJoCo has point, weld and no other frame equality):

* no rotation constrained (a point, (1,1,1,0,0,0), or fewer translations): one
  ``connect`` of the two frames' origins;
* all three rotations (a weld): one ``weld`` of the two frames;
* two rotations, the third free (a revolute closure, (1,1,1,1,1,0) about z): two
  ``connect``\\ s of points :data:`HINGE_HALF` m either side of the origins on the free
  axis (frames a and b coincide on a closed loop, so the points pair up);
* anything else (one rotation constrained) is refused.

A realisation constrains at least the rows of the mask, maybe more (a planar four-bar
states only the in-plane rows, 1 1 0 0 0 0, of its revolute closure; the connect adds
vz).  :func:`check_realisation` refuses the mechanism unless the extra rows constrain no
motion the model's constraints leave free (at the start configuration: the stacked
Jacobians of the realisations have the rank of the model's).

MuJoCo's equalities are soft: their impedance (``solimp``) and time constant
(``solref``) set how far a loop opens under load.  The defaults are the stiffest MuJoCo
takes: impedance 0.9999 (its maximum) and a time constant of 2 ms (2 steps at 1 kHz;
MuJoCo raises a shorter one to 2 steps).  Measured on the bundled mechanisms at 1 kHz
(RK4, a PD moving the actuated joints 0.1 rad): the joint positions follow rbd_ros's
``constrained_forward_dynamics`` (RK4, Baumgarte 400/40) to 9e-8 rad over 1 s, loops
closed to 2-7e-9 m holding still; MuJoCo's defaults (0.9-0.95, 20 ms) leave 5e-4 m.
"""
from __future__ import annotations

import numpy as np

import rbd_ros.core as rbd

from .errors import SimModelError

HINGE_HALF = 0.05        # m: a revolute closure's two connects, each this far from the frame origin
LOOP_SOLREF = (0.002, 1.0)
LOOP_SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)


def constraints_of(model) -> tuple:
    """The model's loop closures (``model.constraints``; none for a core without them)."""
    return tuple(getattr(model, "constraints", ()))


def realisation(c):
    """(kind, the mask it constrains) for constraint ``c``: kind "connect", "weld" or
    ("hinge", free axis 0/1/2).  SimModelError naming the constraint otherwise."""
    rot = tuple(c.mask[3:])
    if sum(rot) == 0:
        return "connect", (1, 1, 1, 0, 0, 0)
    if sum(rot) == 3:
        return "weld", (1, 1, 1, 1, 1, 1)
    if sum(rot) == 2:
        return ("hinge", rot.index(0)), (1, 1, 1) + rot
    raise SimModelError(f"constraint {c.name!r}: mask {list(c.mask)} (one rotation constrained) has no "
                        f"MuJoCo equality (point, revolute closure, weld)")


def _quat(R):
    """MuJoCo's [w x y z] of a rotation matrix."""
    import mujoco  # the sim extra (optional): imported where a MuJoCo model is made

    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R, dtype=np.float64).reshape(9))
    return q


def add_loop_equalities(mujoco, spec, model, solref=LOOP_SOLREF, solimp=LOOP_SOLIMP) -> int:
    """Add the sites and equalities of every loop closure of ``model`` to ``spec``; returns
    how many equalities were added."""
    n = 0
    for c in constraints_of(model):
        kind, _ = realisation(c)
        bodies = []
        for link in (c.link_a, c.link_b):
            if link is None:
                bodies.append(spec.worldbody)
                continue
            try:
                bodies.append(spec.body(link))
            except (KeyError, AttributeError):
                raise SimModelError(f"constraint {c.name!r}: MuJoCo made no body of link {link!r}") from None
        frames = (c.origin_a, c.origin_b)
        if kind == "weld":
            pairs = [[(frames[k][:3, 3], _quat(frames[k][:3, :3])) for k in (0, 1)]]
            etype = mujoco.mjtEq.mjEQ_WELD
        elif kind == "connect":
            pairs = [[(frames[k][:3, 3], np.array([1.0, 0.0, 0.0, 0.0])) for k in (0, 1)]]
            etype = mujoco.mjtEq.mjEQ_CONNECT
        else:
            axis = kind[1]
            pairs = [[(frames[k][:3, 3] + s * HINGE_HALF * frames[k][:3, axis], np.array([1.0, 0.0, 0.0, 0.0]))
                      for k in (0, 1)] for s in (1.0, -1.0)]
            etype = mujoco.mjtEq.mjEQ_CONNECT
        for i, pair in enumerate(pairs):
            names = []
            for k, (pos, quat) in enumerate(pair):
                names.append(f"loop/{c.name}/{'ab'[k]}{i}")
                bodies[k].add_site(name=names[-1], pos=list(pos), quat=list(quat))
            spec.add_equality(name=f"loop/{c.name}/{i}", type=etype, objtype=mujoco.mjtObj.mjOBJ_SITE,
                              name1=names[0], name2=names[1], solref=list(solref), solimp=list(solimp))
            n += 1
    return n


def check_realisation(model, q, rtol=1e-9) -> None:
    """At configuration ``q`` (rbd_ros order, the loops closed): SimModelError unless the
    MuJoCo realisations of the loop closures constrain no more motion than the model's
    constraints do (rank of the stacked Jacobians)."""
    cons = constraints_of(model)
    if not cons:
        return
    bare = model.with_constraints([])
    real = [rbd.Constraint(c.link_a, c.link_b, origin_a=c.origin_a, origin_b=c.origin_b,
                           mask=realisation(c)[1], name=c.name) for c in cons]
    J = rbd.constraint_jacobian(bare, q, list(cons))
    Jr = rbd.constraint_jacobian(bare, q, real)

    def rank(A):
        s = np.linalg.svd(A, compute_uv=False)
        return int(np.sum(s > rtol * max(1.0, s[0]))) if s.size else 0
    if rank(Jr) != rank(J):
        raise SimModelError(
            f"constraints {[c.name for c in cons]}: their MuJoCo equalities (point, weld, revolute "
            f"closure) would constrain {rank(Jr) - rank(J)} more direction(s) of motion than the masks "
            f"{[list(c.mask) for c in cons]} do here")


def close_at_start(model, q, fixed):
    """``q`` (rbd_ros order) with the loops closed, moving only the joints not in ``fixed``
    (the commanded ones keep their start positions); ValueError (from rbd.close_loops,
    naming the constraint) when they cannot be closed from there."""
    if not constraints_of(model):
        return np.asarray(q, dtype=float)
    return rbd.close_loops(model, q, fixed=list(fixed))


def close_loops_in(mjm, model, data, joints) -> None:
    """Close ``model``'s loops in MuJoCo's ``data`` (a fixed base), moving only the joints not in
    ``joints`` (the driver's: their start positions stay), and check that the MuJoCo
    equalities constrain no more than the model does there.  ValueError naming
    initial_positions / joints when the loops cannot be closed so."""
    if "floating" in model.joint_types:
        raise SimModelError("floating_base: loop closures on a floating base are not simulated (fixed-base "
                            "mechanisms only)")
    adr = np.array([mjm.jnt_qposadr[mjm.joint(n).id] for n in model.joint_names], dtype=np.intp)
    try:
        q = close_at_start(model, data.qpos[adr], joints)
    except ValueError as e:
        raise ValueError(f"initial_positions: the loop closures cannot be closed moving only the joints "
                         f"not in `joints` ({list(joints)}; set `joints` to the actuated ones): {e}") from None
    data.qpos[adr] = q
    check_realisation(model, q)
