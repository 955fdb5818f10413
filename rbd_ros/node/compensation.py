"""The compensation term (ROS-free): g(q), b(q, q̇) = C(q, q̇) q̇ + g(q) and H(q) of the
merged joint state, in ``joints`` order, from one core call
(``rbd.compensation_into``).

With closed loops (``rt.loops``, loops.py) g and b are the *actuator* torques that
hold the mechanism still at q and that move it with q̇ at zero actuated acceleration
(the passive accelerations from J q̈ + γ = 0), from ``rbd.constrained_inverse_dynamics_into``
in ``joints`` (= ``actuated_joints``) order, and ``lam`` the constraint forces of the
latter (``~/constraint_forces``); H stays the tree's H (the loops cut open) of the
``joints``.  A state near a singular configuration (loops.NearSingular) publishes
nothing.

With contacts (``rt.contacts``, contacts.py) the latest base state goes into the state
first (a missing or stale one publishes nothing: contacts.BaseStateStale); g and b are
the joint torques that hold the robot still on its current contacts and that move it
with q̇ at zero joint acceleration (the base's from the contacts), from
``rbd.constrained_inverse_dynamics_into`` with the friction cones, and
``~/contact_forces`` carries the contact forces of the latter (part ``contact``)."""
from __future__ import annotations

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.node import names
from rbd_ros.node.term import ARRAY, CONSTRAINT_FORCES, CONTACT_FORCES, MATRIX, STATE, Output, Term

_FORCES = frozenset(("lam", "contact"))      # the parts of the constraint and contact forces


class Compensation(Term):
    """``g`` (always computed: the command law reads it), ``b`` and ``h`` while wanted."""
    key = "g"
    outputs = (Output(names.TOPIC_GRAVITY, ARRAY, "g"),
               Output(names.TOPIC_GRAVITY_STATE, STATE, "g"),
               Output(names.TOPIC_BIAS, ARRAY, "b", switch="publish_bias"),
               Output(names.TOPIC_BIAS_STATE, STATE, "b", switch="publish_bias"),
               Output(names.TOPIC_INERTIA, MATRIX, "h", switch="publish_inertia"),
               Output(names.TOPIC_CONSTRAINT_FORCES, CONSTRAINT_FORCES, "lam"),
               Output(names.TOPIC_CONTACT_FORCES, CONTACT_FORCES, "contact"))
    always = ("g",)

    def size(self, part: str) -> int:
        rt = self.rt
        if part == "contact":
            return 0                # the contact set's own λ (its size changes with the set)
        if part == "lam":
            return rt.loops.m if rt.loops is not None else 0
        return rt.nout * rt.nout if part == "h" else rt.nout

    def __init__(self, rt, report):
        super().__init__(rt, report)
        self.g, self.b, self.h, self.lam = self.array("g"), self.array("b"), self.array("h"), self.array("lam")

    def link(self, terms) -> None:
        if self.rt.contacts is not None:
            self.rt.contacts.log = self.report.log       # says once when the motion leaves the cones

    def configure(self, params, keep_on_error=False) -> None:
        if self.rt.loops is not None:
            self.rt.loops.cond_limit = float(params.loop_cond_limit)
        if self.rt.contacts is not None:
            self.rt.contacts.max_age = float(params.max_base_state_age)

    def compute(self, wanted, stamp: float, now: float) -> bool:
        """g (and b, H while wanted) for the merged state; ValueError (nothing to publish)
        if the state or a result is not finite, or (closed loops) near a singular
        configuration."""
        rt = self.rt
        ct = rt.contacts
        if ct is not None:
            ct.apply_base(rt.q, rt.v, now)          # BaseStateStale: nothing published
            bias = "b" in wanted or "contact" in wanted
            ct.compensate(rt.q, rt.v, self.g, self.b if "b" in wanted else None, bias,
                          self.h if "h" in wanted else None)
            return True if "lam" not in wanted else tuple(p for p in wanted if p != "lam")
        lp = rt.loops
        if lp is None:
            rbd.compensation_into(rt.model, rt.q, rt.v, rt.out_v, self.g, self.b if "b" in wanted else None,
                                  self.h if "h" in wanted else None)
            # no loops: no λ; no contacts: no contact forces
            return True if _FORCES.isdisjoint(wanted) else tuple(p for p in wanted if p not in _FORCES)
        bias = "b" in wanted or "lam" in wanted
        lp.compensate(rt.q, rt.v, self.g, self.b if bias else None, self.lam if bias else None,
                      self.h if "h" in wanted else None)
        return True if "contact" not in wanted else tuple(p for p in wanted if p != "contact")

    @property
    def forces(self):
        """Per constraint (name, link_a, mask, wrench) of the ``lam`` buffer (message fill)."""
        return self.rt.loops.forces(self.lam)

    @property
    def contact_set(self):
        """The contact set in use (contacts.ContactSet: its links, ``lam``, ``feasible``)."""
        return self.rt.contacts.current

    def diagnostics(self, now: float):
        if self.rt.contacts is not None:
            return self.rt.contacts.diagnostics(now)
        lp = self.rt.loops
        if lp is None:
            return []
        return [("loop_constraints", ", ".join(c.name for c in lp.constraints)),
                ("actuated_joints", ", ".join(lp.actuated)),
                ("loop_status", lp.status), ("loop_cond", f"{lp.cond:.3g}"),
                ("loop_cond_limit", f"{lp.cond_limit:g}")]

    def warm_up(self) -> None:
        rt = self.rt
        z = np.zeros(rt.model.nv)
        rbd.compensation_into(rt.model, np.array(rt.model.neutral(), dtype=np.float64), z, rt.out_v,
                              np.empty(rt.nout), np.empty(rt.nout), np.empty(rt.nout * rt.nout))
