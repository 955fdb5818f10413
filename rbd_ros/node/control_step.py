"""The control step (ROS-free): one joint_states or desired-state message in, the parts
of the terms to publish out.

A ``Bound`` is a Robot with its terms (one object per class of the term table the step
was made with, ``terms.TERMS``; term.py says what a term is), made by ``make`` in the
background thread and swapped in as one object.  ``ControlStep.joint_state`` runs in the
control thread for every joint_states message:

1. merge the named positions/velocities (and efforts) into the Robot's state
   (``Robot.update``); bad messages are dropped and counted, never computed; the
   ``MERGED`` terms (the window of recent joint states) see every merged message;
2. gate: every DOF fresh (``max_state_age``), ``max_publish_rate``;
3. compute, in table order, every term with a part whose outputs someone subscribes to
   (``set_live``, from the ROS side) and whose switch is on, with what they need
   (``Term.needs``, ``Term.always``);
4. return the parts to publish for this message.

``desired`` hands a ``~/desired_state`` point to the term with outputs on it (the
command term), which then computes ``~/feedforward_torques``; ``base_state`` and
``contacts`` hand a base state and a ``~/contacts`` set to a Robot with contacts.  Logging and the
diagnostics' last error go through one ``logs.Reporter`` shared with the terms; the ROS
side (control_path.py) owns the publishers and messages.
"""
from __future__ import annotations

import math

from rbd_ros.node.logs import Reporter
from rbd_ros.node.robot import DROP_NONFINITE, DROP_RANGE
from rbd_ros.node.term import DESIRED, JOINT_STATES, MERGED

THROTTLE_S = 2.0


class Bound:
    """A Robot and its terms (table order), swapped in as one object."""
    __slots__ = ("rt", "terms", "by_key")

    def __init__(self, rt, terms):
        self.rt = rt
        self.terms = tuple(terms)
        self.by_key = {t.key: t for t in self.terms}


class ControlStep:
    """The control path's logic (see the module docstring) for the term classes ``table``
    (in compute order)."""

    def __init__(self, table, params, log, on_error=None):
        self.table = tuple(table)
        self.report = Reporter(log, on_error, THROTTLE_S)
        self.log = log
        self.bound = None                # the Bound in use (diagnostics, configure)
        self.params = params
        self._live_js = frozenset()      # live joint_states parts (the ROS side's subscriber counts)
        self._live_desired = frozenset()
        self._compute = ()               # (term index, wanted parts) per message, table order
        self._merged = tuple(i for i, c in enumerate(self.table) if c.on == MERGED)
        self._desired = next((i for i, c in enumerate(self.table) if any(o.on == DESIRED for o in c.outputs)),
                             None)
        self._publish_js = frozenset()
        self._last_publish = -math.inf
        self.desired_in = 0
        self.desired_dropped = 0
        self.configure(params)

    # ------------------------------------------------------------------ settings
    def configure(self, params) -> None:
        """Take the run-time parameters (switches, max_state_age, max_publish_rate, the
        terms' own)."""
        self.params = params
        self.max_state_age = params.max_state_age
        self.min_period = params.min_publish_period
        self.enabled = {o.part: not o.switch or bool(getattr(params, o.switch))
                        for c in self.table for o in c.outputs}
        b = self.bound
        if b is not None:
            # parameters that do not fit the current model were accepted for a new one
            # (a `joints` change with new gains): keep the current settings until the next bind
            for t in b.terms:
                t.configure(params, keep_on_error=True)
        self._plan()

    def make(self, rt) -> Bound:
        """The terms for Robot ``rt`` (background thread): made, linked, warmed up,
        carrying over what the terms of the Robot in use keep (desired state, counters,
        the recent joint states when they fit), configured (a term whose parameters do not
        fit ``rt`` is off, saying why)."""
        terms = [c(rt, self.report) for c in self.table]
        by_key = {t.key: t for t in terms}
        for t in terms:
            t.link(by_key)
        for t in terms:
            t.warm_up()             # (before adopt: a warm-up may leave the term's state blank)
        old = self.bound
        if old is not None:
            for t in terms:
                o = old.by_key.get(t.key)
                if type(o) is type(t):
                    t.adopt(o)
        for t in terms:
            t.configure(self.params)
        return Bound(rt, terms)

    def bind(self, bound: Bound) -> None:
        """Use ``bound`` (from ``make``) from now on for diagnostics and configure; the
        control path hands it to every message."""
        self.bound = bound

    def settings_error(self, params, rt):
        """None if the terms' parameters fit Robot ``rt`` (``Term.check``), else the
        reason (the on-set check of a parameter change)."""
        if rt is None:
            return None
        for c in self.table:
            try:
                c.check(params, rt)
            except ValueError as e:
                return str(e)
        return None

    def set_live(self, js_parts, desired_parts) -> None:
        """The parts someone subscribes to (the ROS side reads the counts)."""
        self._live_js = frozenset(js_parts)
        self._live_desired = frozenset(desired_parts)
        self._plan()

    def _plan(self) -> None:
        """What one joint_states message computes: the live, enabled parts, what they need
        and the parts always computed, one call per term in table order."""
        owner = {o.part: i for i, c in enumerate(self.table) for o in c.outputs}
        parts = {p for p in self._live_js if self.enabled.get(p, False)}
        parts |= {p for c in self.table for p in c.always}
        grow = True
        while grow:
            more = set()
            for p in parts:
                more |= set(self.table[owner[p]].needs(self.params))
            grow = not more <= parts
            parts |= more
        plan = []
        for i, c in enumerate(self.table):
            wanted = frozenset(p for p in parts if owner[p] == i)
            if wanted and c.on == JOINT_STATES:
                plan.append((i, wanted))
        self._compute = tuple(plan)
        self._publish_js = frozenset(parts & self._live_js)

    # ------------------------------------------------------------------ messages
    def joint_state(self, b: Bound, stats, names, position, velocity, effort, stamp: float, now: float):
        """One joint_states message: the parts to publish (a list, maybe empty), or None if
        nothing was computed (dropped, not ready, rate-limited, not finite).  ``stamp`` its
        header stamp in s, ``now`` the monotonic receive time."""
        rt, terms = b.rt, b.terms
        status, detail = rt.update(names, position, velocity, now, effort)
        if status == "ok":
            for i in self._merged:          # ~/estimate_payload's window (terms.PayloadWindow)
                terms[i].compute((), stamp, now)
        elif status == "no_velocity":
            key = tuple(names)
            if key not in rt.warned_no_velocity:
                rt.warned_no_velocity.add(key)
                self.log.warning(f"joint_states without velocities for {list(names)}: taking them as zero "
                                 "(warned once)")
        else:
            stats.drop(status)
            self.report.report(f"joint_states message dropped ({status}): {detail}", "warning")
            if status in (DROP_NONFINITE, DROP_RANGE):
                what = "NaN/inf" if status == DROP_NONFINITE else "out of range"
                for t in terms:
                    t.not_finite(stamp, what)
            return None
        if detail:
            unknown = frozenset(detail)
            if unknown not in rt.warned_unknown:
                rt.warned_unknown.add(unknown)
                self.log.warning(f"joint_states: ignoring joints not in the model: {sorted(unknown)} (warned once)")
        if not rt.ready_after_update(now, self.max_state_age):
            stats.not_ready += 1
            return None
        if self.min_period and now - self._last_publish < self.min_period:
            stats.rate_limited += 1
            return None
        out = []
        try:
            for i, wanted in self._compute:
                done = terms[i].compute(wanted, stamp, now)
                if done is True:
                    out.extend(wanted)
                elif done:
                    out.extend(done)
        except ValueError as e:  # non-finite state or result, a singular configuration: never publish it
            stats.drop(getattr(e, "reason", "compute_failed"))
            self.report.report(f"dynamics not published: {e}", "error")
            return None
        self._last_publish = now
        return [k for k in out if k in self._publish_js]

    def desired(self, b: Bound, joint_names, points, now: float):
        """One ~/desired_state (one JointTrajectoryPoint): stored, or dropped whole; the
        parts to publish for it (maybe empty)."""
        self.desired_in += 1
        if len(points) != 1:
            self._drop_desired(f"points: expected exactly 1 point, got {len(points)}")
            return ()
        term = b.terms[self._desired]
        ok, why = term.on_desired(joint_names, points[0], now)
        if not ok:
            self._drop_desired(why)
            return ()
        parts = list(dict.fromkeys(o.part for o in term.outputs if o.on == DESIRED and o.part in self._live_desired
                                   and self.enabled.get(o.part, True)))
        return parts if parts and term.compute_desired() else ()

    def base_state(self, b: Bound, child_frame_id: str, pose, twist, now: float) -> bool:
        """One base state (nav_msgs/Odometry fields: the base pose [x y z qx qy qz qw] in the
        world, its twist [v; w] in the base frame), received at ``now``: stored for the
        next joint states, or dropped (a throttled warning, counted); True if stored.
        Ignored (False) for a Robot without contacts."""
        ct = b.rt.contacts if b is not None else None
        if ct is None:
            return False
        try:
            ct.set_base(child_frame_id, pose, twist, now)
        except ValueError as e:
            ct.base_dropped += 1
            self.report.report(f"base state dropped: {e}", "warning")
            return False
        return True

    def contacts(self, b: Bound, links, normals, friction) -> bool:
        """One ``~/contacts`` (rbd_ros_interfaces/Contacts fields; normals as (x, y, z)):
        the contact set from the next joint state on, or dropped whole (a throttled
        warning, counted; the set in use is kept); True if taken."""
        ct = b.rt.contacts if b is not None else None
        if ct is None:
            self.report.report("~/contacts ignored: the node has no contacts (parameter contacts is empty)",
                               "warning")
            return False
        ct.contacts_in += 1
        try:
            ct.set_contacts(links, normals, friction)
        except ValueError as e:
            ct.contacts_dropped += 1
            self.report.report(f"~/contacts dropped: {e}", "warning")
            return False
        return True

    def drop_desired(self, why: str) -> None:
        """A desired state refused before it reached the step (no model yet)."""
        self.desired_in += 1
        self._drop_desired(why)

    def _drop_desired(self, why: str) -> None:
        self.desired_dropped += 1
        self.report.report(f"desired_state dropped: {why}", "warning")

    def reset_observer(self, b) -> bool:
        """Restart the observer (and the collision flag) at the next sample; False if off."""
        t = b.by_key.get("tau_ext") if b is not None else None
        return t is not None and t.reset()

    def report_failure(self, text: str) -> None:
        """An unexpected failure of the control path (ControlPath's callback guard): an
        error, throttled like every report."""
        self.report.report(text, "error")

    # ------------------------------------------------------------------ diagnostics
    def diagnostics(self, now: float):
        """(key, value) pairs of the terms (command, observer, ...) for /diagnostics (any
        thread)."""
        b = self.bound
        kv = []
        if b is None:
            kv += [("command_mode", self.params.command_mode), ("observer", "off")]
        else:
            for t in b.terms:
                kv += t.diagnostics(now)
        return kv + [("desired_received", str(self.desired_in)), ("desired_dropped", str(self.desired_dropped))]
