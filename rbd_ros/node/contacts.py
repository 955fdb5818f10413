"""A floating-base robot standing on its feet, as the node uses it (ROS-free): the
contact set (parameters ``contacts``, ``contact_type``, ``friction_coefficient``,
``sole_size``; replaced per step by ``~/contacts``), the base state (nav_msgs/Odometry
on ``base_state_topic``), and the joint torques and contact forces that hold or move
the robot on its current contacts (doc/contacts.md, "The node").

``Contacts`` belongs to one Robot (robot.py) and is used by the control thread: the
``~/contacts`` and base-state callbacks write it, the compensation and command terms
call it.  It offers the hooks part 1's closed loops (loops.Loops) offer the same terms
-- ``compensate``, ``torques``, ``bias_state``, ``close`` -- so the effort laws are the
same code for both; the maths is the core's: ``rbd.constrained_inverse_dynamics_into``
with the friction cones of the current set (unilateral contacts, ``rbd.FrictionCone``)
and ``rbd.LoopCompletion.accelerations`` for the base's acceleration (J q̈ = −γ with the
joints' accelerations given).

Conventions: a contact is ``rbd.Constraint(link, None, origin_b=R_n)``: frame a = the
link's frame (its origin is where the force acts), frame b = the ground, whose z axis is
the ground normal (world z, or the ``~/contacts`` normal); a point contact (3 rows) or a
flat one (a weld, 6 rows, its centre of pressure inside ``sole_size`` centred on the
link's origin).  λ is in frame a's axes, the force of the ground on the foot.  Every
joint is actuated, the floating base never.  The base pose and twist come from the
latest base state (pose in the world, twist in the base frame: Pinocchio's free-flyer
q[:7], v[:6]); a state older than ``max_age`` (receive time) stops the outputs
(``BaseStateStale``).  When no force inside the cones realises the motion, the torques
of the least-violating forces are published (never NaN) and ``log`` says so once.
"""
from __future__ import annotations

import math

import numpy as np

import rbd_ros.core as rbd

POINT, FLAT = "point", "flat"
CONTACT_TYPES = (POINT, FLAT)
DEFAULT_MU = 0.7
DEFAULT_MAX_BASE_AGE = 0.1          # s, parameter max_base_state_age's default
QUAT_TOL = 1e-3                     # a base quaternion whose norm is off 1 by more is refused
MAX_SETS = 256                      # contact sets kept (a gait cycles through a few)
NO_BASE = "no_base_state"           # drop reasons (diagnostics: dropped_<reason>)
STALE_BASE = "base_state_stale"


class BaseStateStale(ValueError):
    """The base state is missing or older than ``max_base_state_age``: the contact outputs
    stop; ``reason`` is the drop reason counted."""

    def __init__(self, text, reason):
        super().__init__(text)
        self.reason = reason


def contact_options(links, types, mu, sole) -> dict | None:
    """The contact parameters as plain data (Robot.options["contacts"], sent to the
    service worker), checked against each other (not yet against a model): None when
    ``links`` is empty.  rbd.ModelError naming the parameter."""
    links = [str(x) for x in links or ()]
    if not links:
        return None
    for k, link in enumerate(links):
        if link in links[:k]:
            raise rbd.ModelError(f"parameter contacts: {link!r} is listed twice")
    types = [str(t) for t in types or ()] or [POINT]
    if len(types) == 1:
        types = types * len(links)
    if len(types) != len(links):
        raise rbd.ModelError(f"parameter contact_type: {len(types)} values, expected one or {len(links)} (one per "
                             f"entry of contacts {links})")
    for k, t in enumerate(types):
        if t not in CONTACT_TYPES:
            raise rbd.ModelError(f"parameter contact_type[{k}] ({links[k]}): expected one of {list(CONTACT_TYPES)}, "
                                 f"got {t!r}")
    mu = float(mu)
    if not (math.isfinite(mu) and mu >= 0.0):
        raise rbd.ModelError(f"parameter friction_coefficient: expected a finite number >= 0, got {mu}")
    sole = [float(x) for x in sole or ()]
    if FLAT in types:
        if len(sole) != 2 or not all(math.isfinite(x) and x > 0.0 for x in sole):
            raise rbd.ModelError(f"parameter sole_size: flat contacts {[n for n, t in zip(links, types) if t == FLAT]} "
                                 f"need the sole's [length, width] (m, two numbers > 0), got {sole}")
    return {"links": links, "types": types, "mu": mu, "sole": sole if FLAT in types else []}


def _rotation_to(n) -> np.ndarray:
    """The smallest rotation taking the z axis onto the unit vector ``n`` (4x4)."""
    T = np.eye(4)
    c = float(n[2])
    if c < -1.0 + 1e-12:
        T[:3, :3] = np.diag([1.0, -1.0, -1.0])
        return T
    v = np.array([-n[1], n[0], 0.0])                 # z x n
    K = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    T[:3, :3] = np.eye(3) + K + K @ K / (1.0 + c)
    return T


class ContactSet:
    """The links in contact now: ``constraints`` (rbd.Constraint, one per link, named
    after it), ``friction`` (rbd.FrictionCone per contact), ``accel`` (the completion of
    the base's acceleration, rbd.LoopCompletion with the joints fixed), ``m`` rows,
    ``lam`` (the forces of the last bias-state solve) and their ``feasible`` /
    ``violation``.  Made off the per-message path, kept by the Contacts object."""

    def __init__(self, model, links, kinds, mus, sole, normals, actuated, spec):
        self.spec = spec                # (links, normals, friction) as ~/contacts gave them
        cons, fric = [], []
        for link, kind, mu, n in zip(links, kinds, mus, normals):
            ob = None if n is None else _rotation_to(n)
            if kind == FLAT:
                cons.append(rbd.Constraint.weld(link, None, origin_b=ob, name=link))
                fric.append(rbd.FrictionCone(mu, sole_size=sole))
            else:
                cons.append(rbd.Constraint(link, None, origin_b=ob, name=link))
                fric.append(rbd.FrictionCone(mu))
        self.links = tuple(links)
        self.constraints = tuple(cons)
        self.friction = tuple(fric)
        self.accel = rbd.LoopCompletion(model, actuated, self.constraints)     # ValueError: an unknown link
        self.m = self.accel.m
        self.lam = np.zeros(self.m)         # the bias state's (~/contact_forces)
        self.lam_g = np.zeros(self.m)       # held still (g)
        self.lam_cmd = np.zeros(self.m)     # the last ``torques`` call's (the effort laws)
        self.feasible = True
        self.violation = 0.0
        self.msg_entries = None         # the ROS side's ConstraintForce entries of this set (made once)
        self.rows = []
        r = 0
        for c in self.constraints:
            self.rows.append((c, r))
            r += sum(c.mask)

    def forces(self, lam=None) -> list:
        """Per contact (name, link, mask, wrench [fx fy fz tx ty tz]) of ``lam`` (default: the
        bias state's)."""
        lam = self.lam if lam is None else lam
        out = []
        for c, r in self.rows:
            w = [0.0] * 6
            for k, on in enumerate(c.mask):
                if on:
                    w[k] = float(lam[r])
                    r += 1
            out.append((c.name, c.link_a, c.mask, w))
        return out


class Contacts:
    """The contacts of a floating-base ``model`` (the Robot's), from the contact options
    (``contact_options``); ``actuated``: the joint names (every joint but the base).
    The Robot gives its output DOFs (``bind_outputs``).  rbd.ModelError naming the
    parameter for a link the model does not have."""

    def __init__(self, model, options: dict, actuated):
        self.model = model
        self.options = dict(options)
        self.actuated = tuple(actuated)
        self.kind = dict(zip(options["links"], options["types"]))
        self.mu = float(options["mu"])
        self.sole = tuple(options["sole"]) if options["sole"] else None
        self.root = model.link_names[0]
        self._sets = {}
        try:
            self.default = self._set(tuple(options["links"]), (), ())
        except ValueError as e:
            raise rbd.ModelError(f"parameter contacts: {e}") from None
        self.current = self.default
        self.spec = None                 # the ~/contacts fields in use (None: the parameter's set)
        nv = model.nv
        self.out_v = np.zeros(0, dtype=np.int64)
        self.zero = np.zeros(nv)
        self.a = np.zeros(nv)            # scratch: accelerations
        self.tau = np.zeros(nv)          # scratch: joint torques, model order
        self._g = np.zeros(0)            # scratch (compensation_into's g when only H is wanted)
        self.info = np.zeros(7)
        # the base state (Odometry): Pinocchio's q[:7], v[:6]; receive time (monotonic)
        self.base_q = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
        self.base_v = np.zeros(6)
        self._p, self._t = np.zeros(7), np.zeros(6)          # scratch: a base state being checked
        self.base_time = -math.inf
        self.base_in = 0
        self.base_dropped = 0
        self.max_age = DEFAULT_MAX_BASE_AGE
        self.base_status = "never received"
        # feasibility: the solves of the messages (log once per change)
        self.log = None                  # logging.Logger-like (warning, info); None: silent
        self.infeasible = False          # the last message had an infeasible solve
        self._msg_infeasible = False
        self.infeasible_count = 0        # solves without forces inside the cones
        self.last_violation = 0.0
        self.contacts_in = 0
        self.contacts_dropped = 0

    def bind_outputs(self, out_v) -> None:
        """The Robot's output DOFs (velocity indices): the order of g, b and H."""
        self.out_v = np.asarray(out_v, dtype=np.int64)
        self._g = np.zeros(self.out_v.shape[0])

    # ------------------------------------------------------------------ the contact set
    def _set(self, links, normals, friction) -> ContactSet:
        key = (links, normals, friction)
        cs = self._sets.get(key)
        if cs is None:
            kinds = [self.kind.get(link, POINT) for link in links]
            mus = list(friction) if friction else [self.mu] * len(links)
            ns = list(normals) if normals else [None] * len(links)
            cs = ContactSet(self.model, links, kinds, mus, self.sole, ns, self.actuated, key)
            if len(self._sets) >= MAX_SETS:
                self._sets.clear()
            self._sets[key] = cs
        return cs

    def set_contacts(self, links, normals=(), friction=()) -> None:
        """The links in contact now (``~/contacts``: rbd_ros_interfaces/Contacts fields;
        ``normals``: (x, y, z) per link in world axes or empty: world z; ``friction``: a μ
        per link or empty: friction_coefficient).  Links not in the parameter contacts are
        point contacts.  ValueError naming the field (the set in use is kept then)."""
        cs = self.make_set(links, normals, friction)
        self.current, self.spec = cs, (None if cs is self.default else cs.spec)

    def make_set(self, links, normals=(), friction=()) -> ContactSet:
        """The ContactSet of these ``~/contacts`` fields (checked as ``set_contacts`` says),
        without using it (the services)."""
        links = tuple(str(x) for x in links)
        n = len(links)
        for k, link in enumerate(links):
            if link in links[:k]:
                raise ValueError(f"links: {link!r} is listed twice")
        if len(normals) not in (0, n):
            raise ValueError(f"normals: {len(normals)} entries for {n} links (expected {n} or 0)")
        if len(friction) not in (0, n):
            raise ValueError(f"friction: {len(friction)} entries for {n} links (expected {n} or 0)")
        ns = []
        for k, v in enumerate(normals):
            v = [float(x) for x in v]
            norm = math.sqrt(sum(x * x for x in v))
            if not (all(math.isfinite(x) for x in v) and norm > 1e-9):
                raise ValueError(f"normals[{k}] ({links[k]}): expected a finite non-zero vector, got {v}")
            ns.append(tuple(x / norm for x in v))
        mus = []
        for k, mu in enumerate(friction):
            mu = float(mu)
            if not (math.isfinite(mu) and mu >= 0.0):
                raise ValueError(f"friction[{k}] ({links[k]}): expected a finite number >= 0, got {mu}")
            mus.append(mu)
        spec = (links, tuple(ns), tuple(mus))
        if spec == (self.default.links, (), ()):
            return self.default
        try:
            return self._set(*spec)
        except ValueError as e:
            raise ValueError(f"links: {e} (a contact is a link of the model)") from None

    def adopt(self, old: "Contacts") -> None:
        """Carry the base state and the ``~/contacts`` set over from the previous Robot's
        contacts (a set this model refuses: the parameter's set)."""
        self.base_q[:], self.base_v[:] = old.base_q, old.base_v
        self.base_time, self.base_in, self.base_dropped = old.base_time, old.base_in, old.base_dropped
        self.contacts_in, self.contacts_dropped = old.contacts_in, old.contacts_dropped
        self.infeasible_count = old.infeasible_count
        if old.spec is not None:
            try:
                self.set_contacts(*old.spec)
            except ValueError:
                pass

    # ------------------------------------------------------------------ the base state
    def set_base(self, child_frame_id: str, pose, twist, now: float) -> None:
        """One base state: ``pose`` [x y z qx qy qz qw] (the base in the world), ``twist``
        [vx vy vz wx wy wz] (base frame), received at ``now`` (monotonic).  ValueError
        naming the field (the previous state is kept)."""
        if child_frame_id != self.root:
            raise ValueError(f"child_frame_id: {child_frame_id!r} is not the model's root link {self.root!r} (the "
                             "base state must be that link's pose and twist)")
        p, t = self._p, self._t
        p[:] = pose
        t[:] = twist
        # |x| <= 1e6 is False for NaN too: one comparison per array (the per-message path)
        if not (np.abs(p).max() <= 1e6 and np.abs(t).max() <= 1e6):
            for name, x in (("pose", p), ("twist", t)):
                if not np.all(np.isfinite(x)):
                    raise ValueError(f"{name}: not finite ({x.tolist()})")
            raise ValueError("pose/twist: beyond 1e6 in magnitude (not a state of a real robot)")
        norm = math.sqrt(p[3] * p[3] + p[4] * p[4] + p[5] * p[5] + p[6] * p[6])
        if abs(norm - 1.0) > QUAT_TOL:
            raise ValueError(f"pose.orientation: not a unit quaternion (norm {norm:.6g})")
        p[3:] /= norm
        self.base_q[:] = p
        self.base_v[:] = t
        self.base_time = now
        self.base_in += 1

    def apply_base(self, q, v, now: float) -> None:
        """The latest base state into q[:7], v[:6]; BaseStateStale when there is none or it
        is older than ``max_age`` (> 0) by the monotonic clock ``now``.  Starts a message
        (the feasibility of its solves)."""
        self._begin()
        age = now - self.base_time
        if self.base_time == -math.inf:
            self.base_status = "never received"
            raise BaseStateStale("no base state received yet (parameter base_state_topic): the contact outputs "
                                 "need the base's pose and twist", NO_BASE)
        if self.max_age > 0 and age > self.max_age:
            self.base_status = f"stale: {age:.3g} s old > max_base_state_age {self.max_age:g} s"
            raise BaseStateStale(f"the base state is {age:.3g} s old (max_base_state_age {self.max_age:g} s): the "
                                 "contact outputs stop until a fresh one arrives", STALE_BASE)
        self.base_status = "ok"
        q[:7] = self.base_q
        v[:6] = self.base_v

    # ------------------------------------------------------------------ dynamics
    def _begin(self) -> None:
        if self.infeasible and not self._msg_infeasible:
            self.infeasible = False
            if self.log is not None:
                self.log.info(f"contacts {list(self.current.links)}: the motion is realisable inside the friction "
                              "cones again")
        self._msg_infeasible = False

    def _solve(self, cs, q, v, a, lam) -> None:
        """τ (self.tau, model order) and λ of (q, v, a) on contact set ``cs``; tracks
        feasibility (log once per change)."""
        info = self.info
        rbd.constrained_inverse_dynamics_into(self.model, q, v, a, cs.constraints, self.tau, lam,
                                              actuated=self.actuated, info=info, friction=cs.friction)
        if info[5] == 0.0:
            self.infeasible_count += 1
            self.last_violation = float(info[6])
            self._msg_infeasible = True
            if not self.infeasible:
                self.infeasible = True
                if self.log is not None:
                    self.log.warning(
                        f"contacts {list(cs.links)}: no forces inside the friction cones realise the motion "
                        f"(violation {info[6]:.3g} of the base's equations, N and N m): publishing the torques of "
                        "the least-violating forces (said once; /diagnostics contact_feasible)")

    def torques(self, q, v, a, out=None, lam=None) -> None:
        """The joint torques of (q, v, a) on the current contacts into ``tau`` (model
        order) and ``out`` (``out_v`` order) when given, the forces into ``lam`` (the set's
        m) when given.  ValueError when not finite."""
        cs = self.current
        self._solve(cs, q, v, a, cs.lam_cmd if lam is None else lam)
        if out is not None:
            np.take(self.tau, self.out_v, out=out)

    def bias_state(self, q, v, a_actuated=None):
        """The accelerations with the joints' ``a_actuated`` (model order, the base's entries
        ignored; None: zero) and the base's from the contacts (J q̈ + γ = 0, least squares),
        in the scratch ``a`` (returned)."""
        a = self.a
        if a_actuated is None:
            a.fill(0.0)
        else:
            np.copyto(a, a_actuated)
        self.current.accel.accelerations(q, v, a)
        return a

    def close(self, q, v) -> None:
        """Nothing to complete: every joint is measured, the base comes from the base state."""

    def compensate(self, q, v, g, b=None, bias=False, h=None) -> None:
        """At the measured state: ``g`` the joint torques holding the robot still on its
        contacts (q̇ = q̈ = 0), ``b`` (when given) those moving it with q̇ at zero joint
        acceleration (the base's from the contacts), in ``out_v`` order; with ``bias`` (or
        ``b``) the set's ``lam`` the forces of the latter, else of the former; H of the
        ``out_v`` DOFs into ``h`` (when given)."""
        cs = self.current
        z = self.zero
        self._solve(cs, q, z, z, cs.lam_g)
        np.take(self.tau, self.out_v, out=g)
        f, viol = self.info[5], self.info[6]
        if b is not None or bias:
            self._solve(cs, q, v, self.bias_state(q, v), cs.lam)
            f, viol = self.info[5], self.info[6]
            if b is not None:
                np.take(self.tau, self.out_v, out=b)
        else:
            np.copyto(cs.lam, cs.lam_g)
        cs.feasible, cs.violation = bool(f), float(viol)
        if h is not None:
            rbd.compensation_into(self.model, q, v, self.out_v, self._g, None, h)

    def diagnostics(self, now: float) -> list:
        cs = self.current
        age = now - self.base_time
        return [("contacts", ", ".join(cs.links) or "(none)"),
                ("contacts_source", "~/contacts" if self.spec is not None else "parameter contacts"),
                ("contact_feasible", "false" if self.infeasible else "true"),
                ("contact_violation", f"{self.last_violation:.3g}" if self.infeasible else "0"),
                ("contact_infeasible_solves", str(self.infeasible_count)),
                ("contacts_received", str(self.contacts_in)), ("contacts_dropped", str(self.contacts_dropped)),
                ("base_state", self.base_status),
                ("base_state_age_ms", f"{age * 1e3:.3g}" if math.isfinite(age) else "inf"),
                ("base_state_received", str(self.base_in)), ("base_state_dropped", str(self.base_dropped))]
