"""The node's model, from description to swap (ROS-free): robot description (URDF) ->
Model (+ armature, + payloads) -> Robot, warmed up -> checked -> swapped in atomically.

Builds run in the node's background thread (or the on-set-parameters callback), one at
a time (a lock); the control path never waits for one: ``bind`` (ControlPath.bind)
replaces the Robot it reads with one reference assignment.  A Robot is swapped in only
once it has computed g, b and H at the current joint state: a model that cannot be
built, or whose numbers are not finite there, never replaces a working one (the
request that asked for it is refused with the reason).
"""
from __future__ import annotations

import math
import threading

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.node import model_build as mb
from rbd_ros.node import payload as pl
from rbd_ros.node.contacts import contact_options
from rbd_ros.node.logs import log_at


def friction_eps(p) -> float:
    """friction_velocity_eps, when valid (finite, > 0), else the default."""
    eps = p.friction_velocity_eps
    return eps if math.isfinite(eps) and eps > 0 else pl.DEFAULT_FRICTION_VELOCITY_EPS


class ModelManager:
    """The current model's source and payloads, and every way to replace it.

    ``bind(rt)``: puts a Robot in use (the control path's); ``current()``: the Robot in
    use or None; ``on_model(rt, text)``: called after each swap (the node resends the
    model to its service worker, logs); ``log``: info/warning/error; ``on_error(text)``:
    the diagnostics' last error."""

    def __init__(self, bind, current, on_model, log, on_error):
        self._bind = bind
        self.current = current
        self._on_model = on_model
        self.log = log
        self.on_error = on_error
        self.lock = threading.Lock()
        self.source = None                 # (urdf text, where) of the model in use
        self.startup_payloads = {}         # link -> Payload, until the first model

    # ------------------------------------------------------------------ building
    def read_startup_payloads(self, p) -> None:
        """The payload_* parameters (refused whole, with a logged reason, if inconsistent)."""
        try:
            self.startup_payloads = {x.link: x for x in pl.from_params(p.payload_links, p.payload_masses,
                                                                       p.payload_coms, p.payload_inertias)
                                     if x.mass != 0.0}
        except pl.PayloadError as e:
            self._error(f"start-up payloads ignored: {e}", "error")
            self.startup_payloads = {}

    def build(self, text: str, where: str, p):
        """A warmed-up Robot for this URDF and parameters, with the active payloads (the
        start-up ones before the first model), checked at the current state.  Raises
        ValueError / OSError (rbd.ModelError is a ValueError) naming the cause."""
        rt = self.current()
        payloads = rt.options.get("payloads", {}) if rt is not None else self.startup_payloads
        with self.lock:
            constraints = mb.read_constraints_file(p.constraints_file) if p.constraints_file else ()
            contacts = contact_options(p.contacts, p.contact_type, p.friction_coefficient, p.sole_size)
            new = mb.build_robot(text, floating_base=p.floating_base, mimic=p.mimic, gravity=p.gravity,
                                 joints=p.joints, source=where, armature=p.armature, payloads=payloads,
                                 friction_velocity_eps=friction_eps(p), actuated=p.actuated_joints,
                                 constraints=constraints, initial_positions=p.initial_positions,
                                 loop_cond_limit=p.loop_cond_limit, contacts=contacts)
        self.check(new, rt)
        return new

    @staticmethod
    def check(new, old) -> None:
        """ValueError unless ``new`` computes finite g, b and H at ``old``'s joint state
        (the neutral pose at rest without one)."""
        if old is not None:
            new.adopt_state(old)
        m = new.model
        g, b, H = np.empty(m.nv), np.empty(m.nv), np.empty(m.nv * m.nv)
        try:
            rbd.compensation_into(m, new.q, new.v, rbd.dof_indices(m), g, b, H)
        except ValueError as e:
            raise ValueError(f"the new model's dynamics are not finite at the current joint state ({e})") \
                from None

    # ------------------------------------------------------------------ swapping
    def swap(self, rt, source=None) -> None:
        """Put ``rt`` in use (state and desired state carried over from the old Robot)."""
        old = self.current()
        if old is not None:
            rt.adopt_state(old)
        if source is not None:
            self.source = source
        self._bind(rt)
        for link, reason in rt.options.get("dropped_payloads", ()):
            self._error(f"payload on link {link!r} dropped: {reason}", "warning")
        m = rt.model
        extra = ""
        if m.payloads:
            extra += f"; payloads {mb.payloads_text(m)}"
        if rt.options.get("armature"):
            extra += f"; armature {mb.armature_text(rt)}"
        self._on_model(rt, f"model {m.name!r} loaded from {rt.source}: {rt.ndof} joint DOF"
                           f"{' + floating base' if rt.floating else ''}, {m.mass:.3f} kg; outputs in order "
                           f"{list(rt.out_names)}{extra}")

    def try_swap(self, text: str, where: str, p) -> bool:
        """Build and swap; on failure log why and keep the model in use."""
        try:
            rt = self.build(text, where, p)
        except (ValueError, OSError) as e:
            old = self.current()
            keep = f"keeping model {old.model.name!r}" if old is not None else "no model loaded"
            self._error(f"robot description from {where} rejected: {e} ({keep})", "error")
            return False
        self.swap(rt, (text, where))
        return True

    def set_payloads(self, changes) -> str:
        """Apply payload changes (list of payload.Payload; mass 0 removes) all or nothing: the
        new model is built and checked here and swapped in before this returns.  Returns a
        summary; raises PayloadError (the model in use stays)."""
        rt = self.current()
        if rt is None:
            raise pl.PayloadError("no robot model loaded yet: payloads attach to its links "
                                  "(publish robot_description first)")
        with self.lock:
            new = pl.apply_payloads(rt.model, rt.options.get("payloads", {}), changes)
            new_rt = mb.with_payloads(rt, new)
        try:
            self.check(new_rt, rt)
        except ValueError as e:
            raise pl.PayloadError(f"refused: {e}") from None
        self.swap(new_rt)
        return f"payloads now: {mb.payloads_text(new_rt.model)} (model mass {new_rt.model.mass:.4g} kg)"

    def _error(self, text: str, level: str) -> None:
        log_at(self.log, level, text)
        self.on_error(text)
