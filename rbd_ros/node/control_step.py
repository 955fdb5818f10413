"""The control step (ROS-free): one joint_states or desired-state message in, the terms
to publish out.

``ControlStep.joint_state`` runs in the control thread for every joint_states message:

1. merge the named positions/velocities (and efforts) into the Robot's state
   (``Robot.update``); bad messages are dropped and counted, never computed;
2. gate: every DOF fresh (``max_state_age``), ``max_publish_rate``;
3. compute, in table order (``terms.TERMS``), every term whose outputs someone
   subscribes to (``set_live``, from the ROS side), with what they need: g always,
   b and H in the same core call, the effort command, the observer's τ̂_ext, the
   wrench at the contact frame and the collision flag;
4. return the keys of the terms to publish for this message.

``desired`` does the same for a ``~/desired_state`` point (the feed-forward term).
Logging goes through ``log`` (any object with info/warning/error); a message that
repeats is throttled here.  The ROS side (control_path.py) owns the publishers and
messages; this module owns the counters the diagnostics report.
"""
from __future__ import annotations

import math
import time

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.node import effort_law, recent, terms, warmup
from rbd_ros.node.logs import log_at
from rbd_ros.node.observer_settings import ObserverSettings
from rbd_ros.node.robot import DROP_NONFINITE, DROP_RANGE

CLAMP_WARN_PERIOD_S = 2.0
THROTTLE_S = 2.0
class ControlStep:
    """The control path's logic for the bound Robot (see the module docstring)."""

    def __init__(self, params, log, on_error=None):
        self.log = log
        self.on_error = on_error         # on_error(text): every error and dropped message (diagnostics)
        self.rt = None
        self.params = params
        self._live_js = frozenset()      # live joint_states terms (the ROS side's subscriber counts)
        self._live_desired = frozenset()
        self._compute = ()               # (compute function, wanted keys) per message, table order
        self._last_publish = -math.inf
        self._throttled = {}
        # command (written by the control thread, read by diagnostics)
        self.command_error = None        # why the command outputs are off (bad settings), or None
        self.desired_in = 0
        self.desired_dropped = 0
        self.command_out = 0             # commands computed for publishing
        self.command_clamped = 0
        self.command_fallbacks = 0
        self.command_failed = 0
        self._fallback_reason = None
        self._clamp_warned_at = -math.inf
        # observer
        self.observer_error = None       # why the observer outputs are off, or None
        self.observer_waiting = ""       # why no estimate is published now (no efforts, ...), or ""
        self.collisions = 0              # rising edges of the collision flag
        self._estimated = False          # this message has a valid estimate (wrench, collision follow it)
        self._effort_bad = False         # this message's efforts hold NaN/inf
        self.configure(params)

    # ------------------------------------------------------------------ settings
    def configure(self, params) -> None:
        """Take the run-time parameters (switches, max_state_age, max_publish_rate, the
        command and observer parameters)."""
        self.params = params
        self.max_state_age = params.max_state_age
        self.min_period = params.min_publish_period
        self.enabled = {t.key: not t.switch or bool(getattr(params, t.switch)) for t in terms.TERMS}
        rt = self.rt
        if rt is not None:
            # parameters that do not fit the current model were accepted for a new one
            # (a `joints` change with new gains): keep the current settings until bind()
            self._apply_settings(rt, keep_on_error=True)
            rt.recent = recent.for_robot(rt, params, rt.recent)
        self._plan()

    def bind(self, rt) -> None:
        """Use Robot ``rt`` from the next message on (command settings, a fresh observer; the
        recent joint states of the old Robot when they fit, recent.for_robot)."""
        self._apply_settings(rt)
        rt.recent = recent.for_robot(rt, self.params, self.rt.recent if self.rt is not None else None)
        self.rt = rt
        self._plan()

    @staticmethod
    def settings_error(params, rt):
        """None if the command and observer parameters fit Robot rt, else the reason."""
        if rt is None:
            return None
        try:
            effort_law.make_settings(params, rt)
            if params.observer:
                ObserverSettings(params, rt)
        except ValueError as e:
            return str(e)
        return None

    def _apply_settings(self, rt, keep_on_error=False) -> None:
        try:
            s = effort_law.make_settings(self.params, rt)
        except ValueError as e:
            if not keep_on_error:
                rt.law.settings = None
                self._set_error("command", f"effort_command and feedforward_torques are off: {e} (fix the "
                                           "parameter; the other outputs are unaffected)")
        else:
            rt.law.settings = s
            if self.command_error is not None:
                self.log.info(f"effort_command back on (command_mode {s.mode})")
            self.command_error = None
        if not self.params.observer:
            rt.observer = None
            self.observer_error = None
            return
        try:
            o = ObserverSettings(self.params, rt)
        except ValueError as e:
            if not keep_on_error:
                rt.observer = None
                self._set_error("observer", f"external_torques, external_wrench and collision are off: {e}")
            return
        self.observer_error = None
        if o.same(rt.observer_settings) and rt.observer is not None:
            return
        warmup.warm_observer(rt.model, o.frame, self.log)   # compiled or loaded before the first message
        # (the control thread may be reading rt: everything it needs is in place before the
        # observer it checks for)
        rt.observer_settings = o
        rt.detector = rbd.CollisionDetector(o.thresholds, o.debounce, o.release)
        rt.tau_ext = np.zeros(rt.model.nv)
        rt.tau_nan = np.full(rt.model.nv, np.nan)      # fed to the observer for a non-finite sample
        rt.jacobian = np.zeros((6, rt.model.nv))
        rt.wrench_residual = np.zeros(rt.model.nv)
        rt.observer = rbd.MomentumObserver(rt.model, o.gain, friction=o.friction, max_gap=o.max_gap,
                                           tau_held=o.held)

    def _set_error(self, what, text):
        """``what`` ("command" or "observer") is off because of ``text``: logged when it is
        new, kept in ``<what>_error`` and handed to ``on_error`` (the diagnostics' last
        error)."""
        if text != getattr(self, what + "_error"):
            self.log.error(text)
        setattr(self, what + "_error", text)
        if self.on_error is not None:
            self.on_error(text)

    def set_live(self, js_keys, desired_keys) -> None:
        """The terms someone subscribes to (the ROS side reads the counts)."""
        self._live_js = frozenset(js_keys)
        self._live_desired = frozenset(desired_keys)
        self._plan()

    def _plan(self) -> None:
        """What one joint_states message computes: the live, enabled terms and their needs,
        in table order, one call per compute function."""
        keys = {k for k in self._live_js if self.enabled.get(k, False)} | {"g"}
        grow = True
        while grow:
            more = set()
            for k in keys:
                t = terms.BY_KEY[k]
                if t.needs is not None:
                    more |= set(t.needs(self.params))
            grow = not more <= keys
            keys |= more
        plan = []
        for t in terms.TERMS:
            if t.key in keys and t.on == terms.JOINT_STATES:
                fns = [f for f, _ in plan]
                if t.compute in fns:
                    i = fns.index(t.compute)
                    plan[i] = (t.compute, plan[i][1] | {t.key})
                else:
                    plan.append((t.compute, {t.key}))
        self._compute = tuple((f, frozenset(w)) for f, w in plan)
        self._publish_js = frozenset(keys & self._live_js)

    # ------------------------------------------------------------------ messages
    def joint_state(self, rt, stats, names, position, velocity, effort, stamp: float, now: float):
        """One joint_states message: the keys of the terms to publish (a list, maybe empty),
        or None if nothing was computed (dropped, not ready, rate-limited, not finite).
        ``stamp`` its header stamp in s, ``now`` the monotonic receive time."""
        status, detail = rt.update(names, position, velocity, now, effort)
        self._estimated = False
        rec = rt.recent
        if rec is not None and status == "ok":     # ~/estimate_payload's window (recent.py)
            rec.add(rt, stamp, now)
        if status != "ok":
            if status == "no_velocity":
                key = tuple(names)
                if key not in rt.warned_no_velocity:
                    rt.warned_no_velocity.add(key)
                    self.log.warning(f"joint_states without velocities for {list(names)}: taking them as zero "
                                     "(warned once)")
            else:
                stats.drop(status)
                self._report(f"joint_states message dropped ({status}): {detail}", "warning")
                if status in (DROP_NONFINITE, DROP_RANGE):
                    self._observer_not_finite(rt, stamp, "NaN/inf" if status == DROP_NONFINITE else "out of range")
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
        # NaN/inf among the efforts (sum: no allocation; a NaN anywhere makes it NaN)
        self._effort_bad = len(effort) == len(names) and len(effort) > 0 and not math.isfinite(sum(effort))
        out = []
        try:
            for compute, wanted in self._compute:
                if compute(self, rt, wanted, stamp, now):
                    out.extend(wanted)
        except ValueError as e:  # non-finite state or result: never publish it
            stats.drop("compute_failed")
            self._report(f"dynamics not published: {e}", "error")
            return None
        self._last_publish = now
        return [k for k in out if k in self._publish_js]

    def desired(self, rt, joint_names, points, now: float):
        """One ~/desired_state (one JointTrajectoryPoint): store it, or drop it whole;
        True if ~/feedforward_torques is to be published for it."""
        self.desired_in += 1
        if len(points) != 1:
            self._drop_desired(f"points: expected exactly 1 point, got {len(points)}")
            return False
        pt = points[0]
        status, detail = rt.law.set_desired(joint_names, pt.positions, pt.velocities, pt.accelerations, now)
        if status != effort_law.DESIRED_OK:
            self._drop_desired(detail)
            return False
        live = "ff" in self._live_desired and self.enabled.get("ff", True)
        return live and self.feedforward(rt)

    def drop_desired(self, why: str) -> None:
        """A desired state refused before it reached the step (no model yet)."""
        self.desired_in += 1
        self._drop_desired(why)

    def _drop_desired(self, why: str) -> None:
        self.desired_dropped += 1
        self._report(f"desired_state dropped: {why}", "warning")

    # ------------------------------------------------------------------ terms' work
    def command(self, rt, now: float) -> bool:
        """Compute the command into its buffer; True if it is to be published."""
        law = rt.law
        s = law.settings
        if s is None:
            rt.cmd_prev_valid = False
            return False
        nclamped, reason = law.command(now, s)
        if reason != self._fallback_reason:
            self._log_fallback(reason, s)
        if nclamped < 0:
            rt.cmd_prev_valid = False        # not sent: what the joints get is unknown
            self.command_failed += 1
            self._report(f"effort_command not published: the {s.mode} command is not finite (extreme "
                               "gains or states?)", "error")
            return False
        if rt.observer is not None:          # what the joints get: the observer's commanded torque
            np.copyto(rt.cmd_prev, 0.0)
            rt.cmd_prev[rt.out_v] = rt.cmd
            rt.cmd_prev_valid = True
        self.command_out += 1
        if reason is not None:
            self.command_fallbacks += 1
        if nclamped:
            self.command_clamped += 1
            if now - self._clamp_warned_at >= CLAMP_WARN_PERIOD_S:
                self._clamp_warned_at = now
                over = [f"{n} to {lim:+g}" for n, x, lim in zip(rt.out_names, law.cmd, s.limit) if abs(x) == lim]
                self._report(f"effort_command clamped to the effort limits ({s.limit_source}): "
                                   f"{', '.join(over)} ({self.command_clamped} commands clamped so far)", "warning",
                             throttle=False)
        return True

    def feedforward(self, rt) -> bool:
        s = rt.law.settings
        if s is None:
            return False
        if not rt.law.feedforward(s):
            self.command_failed += 1
            self._report("feedforward_torques not published: the result is not finite", "error")
            return False
        return True

    def observe(self, rt, stamp: float, now: float) -> bool:
        """τ̂_ext into the tau_ext buffer (joints order); True while the estimate is valid.
        Without the torques of this sample (``measured``: this message, or the latest one
        of every DOF, carried no finite effort -- decided per message; ``commanded``: no
        command sent for the previous state) the observer is reset and nothing is
        published: it starts again from the next sample that has them.  NaN/inf among the
        efforts restarts it (``not_finite``).  Every restart also resets the collision
        detector: the flag and its debounce start again with the residual, from zero."""
        obs = rt.observer
        if obs is None or not rt.merged:     # (a message of joints the model does not have: no sample)
            return False
        if rt.observer_settings.source == "measured":
            if self._effort_bad:
                self._observer_not_finite(rt, stamp)
                return False
            if not rt.efforts_fresh():
                self._restart(rt)
                self._waiting("joint_states carry no (fresh) efforts for every joint: external_torques needs "
                              "JointState.effort with observer_torque_source measured (or set it to commanded)")
                return False
            tau = rt.tau_meas
        else:
            if not rt.cmd_prev_valid:
                self._restart(rt)
                self._waiting("no effort_command was sent for the previous joint state (observer_torque_source "
                              "commanded)")
                return False
            tau = rt.cmd_prev
        est = obs.update(stamp, rt.q, rt.v, tau)
        if not obs.valid:
            rt.detector.reset()
            self._waiting(f"the observer restarted ({obs.status})" if obs.status != "started" else "")
            return False
        self.observer_waiting = ""
        np.copyto(rt.tau_ext, est)
        np.take(est, rt.out_v, out=rt.arrays["tau_ext"])
        self._estimated = True
        return True

    @staticmethod
    def _restart(rt) -> None:
        """The observer starts again at the next sample with torques; the flag is down."""
        rt.observer.reset()
        rt.detector.reset()

    def _observer_not_finite(self, rt, stamp: float, what: str = "NaN/inf") -> None:
        """A sample with NaN/inf or out of range (dropped, or its efforts): the observer
        restarts, counted as ``not_finite`` (it is fed the sample's non-finite torque), and
        the collision flag goes down."""
        obs = rt.observer
        if obs is not None:
            obs.update(stamp, rt.q, rt.v, rt.tau_nan)
            rt.detector.reset()
            self._waiting(f"the observer restarted ({obs.status}: {what} in joint_states)")

    def wrench(self, rt) -> bool:
        """The wrench at the contact frame (its own axes) that explains τ̂_ext (this
        message's estimate only)."""
        if not self._estimated:
            return False
        F = rt.arrays["wrench"]
        rbd.external_wrench_into(rt.model, rt.q, rt.tau_ext, rt.observer_settings.frame, "local", F,
                                 rt.wrench_residual, rt.jacobian)
        return bool(np.isfinite(F).all())

    def collision(self, rt, stamp: float) -> bool:
        """The collision flag of τ̂_ext (joints order) against the thresholds (this
        message's estimate only)."""
        if not self._estimated:
            return False
        det = rt.detector
        was = det.detected
        st = det.update(stamp, rt.arrays["tau_ext"])
        rt.arrays["collision"][:] = st.ratios
        rt.collision_state = st
        if st.detected and not was:
            self.collisions += 1
            self.log.warning(f"collision detected: {rt.out_names[st.worst]} at {st.ratios[st.worst]:.2f} x its "
                             f"threshold" + (f", most distal joint above: {rt.out_names[st.distal]}"
                                             if st.distal >= 0 else ""))
        return True

    def reset_observer(self, rt) -> bool:
        """Restart the observer (and the collision flag) at the next sample; False if off."""
        if rt is None or rt.observer is None:
            return False
        self._restart(rt)
        return True

    # ------------------------------------------------------------------ helpers
    def _waiting(self, why: str) -> None:
        """Why no estimate now ("" : there is one); logged when it changes, a kind of
        reason at most once per THROTTLE_S (a loaded machine restarts it on gaps often)."""
        if why and why != self.observer_waiting:
            key = "observer: " + why.split("(", 1)[0]
            now = time.monotonic()
            if now - self._throttled.get(key, -math.inf) >= THROTTLE_S:
                self._throttled[key] = now
                self.log.warning(why)
        self.observer_waiting = why

    def _log_fallback(self, reason, s) -> None:
        if reason is not None:
            self.log.warning(f"effort_command: {reason} (command_mode {s.mode}, max_desired_age {s.max_age:g} s): "
                             "sending the damped gravity hold g(q) - hold_damping * qd until a fresh desired state "
                             "arrives")
        else:
            self.log.info(f"effort_command: {s.mode} command resumed"
                          + (" (fresh desired state)" if s.needs_desired else ""))
        self._fallback_reason = reason

    def report_failure(self, text: str) -> None:
        """An unexpected failure of the control path (ControlPath's callback guard): an
        error, throttled like every report."""
        self._report(text, "error")

    def _report(self, text: str, level: str, throttle=True) -> None:
        """Log ``text`` (at most once per THROTTLE_S for the same kind of message) and hand
        it to ``on_error`` (the diagnostics' last error)."""
        if self.on_error is not None:
            self.on_error(text)
        key = text.split(":", 1)[0]
        now = time.monotonic()
        if throttle and now - self._throttled.get(key, -math.inf) < THROTTLE_S:
            return
        self._throttled[key] = now
        log_at(self.log, level, text)

    # ------------------------------------------------------------------ diagnostics
    def command_diagnostics(self, now: float):
        """(key, value) pairs of the command for /diagnostics (any thread)."""
        rt = self.rt
        s = rt.law.settings if rt is not None else None
        mode = s.mode if s is not None else self.params.command_mode
        reason = rt.law.fallback_reason(now, s) if s is not None else None
        kv = [("command_mode", mode),
              ("command_fallback", "true" if reason is not None else "false"),
              ("command_fallback_reason", reason or ""),
              ("command_fallbacks", str(self.command_fallbacks)),
              ("command_published", str(self.command_out)),
              ("command_clamped", str(self.command_clamped)),
              ("command_failed", str(self.command_failed)),
              ("command_friction", str(bool(s.friction) if s else False).lower()),
              ("command_clamp", str(bool(s.clamp) if s else False).lower()),
              ("effort_limits_source", s.limit_source if s else ""),
              ("desired_received", str(self.desired_in)),
              ("desired_dropped", str(self.desired_dropped))]
        if self.command_error:
            kv.append(("command_error", self.command_error))
        return kv

    def observer_diagnostics(self):
        """(key, value) pairs of the observer for /diagnostics."""
        rt = self.rt
        obs = rt.observer if rt is not None else None
        kv = [("observer", "on" if obs is not None else "off")]
        if obs is not None:
            o = rt.observer_settings
            st = rt.collision_state
            kv += [("observer_gain", f"{o.gain:g}"), ("observer_torque_source", o.source),
                   ("observer_status", obs.status), ("contact_frame", o.frame),
                   ("observer_restarts", ", ".join(f"{k}: {v}" for k, v in obs.restarts.items() if v)),
                   ("collision", "true" if st is not None and st.detected else "false"),
                   ("collisions", str(self.collisions))]
        if self.observer_waiting:
            kv.append(("observer_waiting", self.observer_waiting))
        if self.observer_error:
            kv.append(("observer_error", self.observer_error))
        return kv
