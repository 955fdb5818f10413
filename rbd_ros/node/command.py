"""The command term (ROS-free): ``~/effort_command`` on every joint state and
``~/feedforward_torques`` on every desired state, from the law of effort_law.py.

``EffortCommand`` owns the law (its desired state and settings), the two buffers, the
command that was last sent (model order: what the joints got, which the observer's
``commanded`` torque source reads) and the counters /diagnostics reports.
"""
from __future__ import annotations

import math

import numpy as np

from rbd_ros.node import effort_law, names
from rbd_ros.node.term import ARRAY, DESIRED, STATE, Output, Term

CLAMP_WARN_PERIOD_S = 2.0


class EffortCommand(Term):
    """The effort command (part ``cmd``) and the feed-forward torques (part ``ff``, on
    ``~/desired_state``) of one Robot; g(q) comes from the compensation term."""
    key = "cmd"
    outputs = (Output(names.TOPIC_EFFORT_COMMAND, ARRAY, "cmd"),
               Output(names.TOPIC_EFFORT_COMMAND_STATE, STATE, "cmd"),
               Output(names.TOPIC_FEEDFORWARD, ARRAY, "ff", on=DESIRED),
               Output(names.TOPIC_FEEDFORWARD_STATE, STATE, "ff", on=DESIRED))

    def __init__(self, rt, report):
        super().__init__(rt, report)
        self.law = effort_law.CommandLaw(rt, self.array("cmd"), self.array("ff"))
        self.g = None                     # g(q) in joints order (the compensation term's buffer, link)
        self.mode = effort_law.MODE_GRAVITY   # the parameter command_mode (diagnostics)
        self.keep_sent = False            # record ``sent`` (the observer's commanded torque source)
        self.sent = np.zeros(rt.model.nv)  # the last command, model order (what the joints got)
        self.sent_valid = False
        self.published = 0                # commands computed for publishing
        self.clamped = 0
        self.fallbacks = 0
        self.failed = 0
        self._fallback_reason = None
        self._clamp_warned_at = -math.inf

    def link(self, terms) -> None:
        self.g = terms["g"].array("g")

    def adopt(self, old) -> None:
        """The desired state (when it names every output joint, CommandLaw.adopt), the
        counters and the error."""
        self.law.adopt(old.law)
        self.published, self.clamped, self.fallbacks, self.failed = \
            old.published, old.clamped, old.fallbacks, old.failed
        self._fallback_reason, self.error, self.mode = old._fallback_reason, old.error, old.mode

    @classmethod
    def check(cls, params, rt) -> None:
        effort_law.make_settings(params, rt)

    def configure(self, params, keep_on_error=False) -> None:
        self.mode = params.command_mode
        try:
            s = effort_law.make_settings(params, self.rt)
        except ValueError as e:
            if not keep_on_error:
                self.law.settings = None
                self.refuse(f"effort_command and feedforward_torques are off: {e} (fix the parameter; the other "
                            "outputs are unaffected)")
            return
        self.law.settings = s
        if self.error is not None:
            self.report.log.info(f"effort_command back on (command_mode {s.mode})")
        self.error = None

    def warm_up(self) -> None:
        self.law.warm_up()

    # ------------------------------------------------------------------ messages
    def compute(self, wanted, stamp: float, now: float) -> bool:
        """The command into ``cmd``; True if it is to be published."""
        law = self.law
        s = law.settings
        if s is None:
            self.sent_valid = False
            return False
        nclamped, reason = law.command(now, s, self.g)
        if reason != self._fallback_reason:
            self._log_fallback(reason, s)
        if nclamped < 0:
            self.sent_valid = False        # not sent: what the joints get is unknown
            self.failed += 1
            self.report.report(f"effort_command not published: the {s.mode} command is not finite (extreme "
                               "gains or states?)", "error")
            return False
        if self.keep_sent:                 # what the joints get (the observer's commanded torque)
            sent = self.sent
            sent[:] = 0.0
            sent[self.rt.out_v] = law.cmd
            self.sent_valid = True
        self.published += 1
        if reason is not None:
            self.fallbacks += 1
        if nclamped:
            self.clamped += 1
            if now - self._clamp_warned_at >= CLAMP_WARN_PERIOD_S:
                self._clamp_warned_at = now
                over = [f"{n} to {lim:+g}" for n, x, lim in zip(self.rt.out_names, law.cmd, s.limit) if abs(x) == lim]
                self.report.report(f"effort_command clamped to the effort limits ({s.limit_source}): "
                                   f"{', '.join(over)} ({self.clamped} commands clamped so far)", "warning",
                                   throttle=False)
        return True

    def on_desired(self, joint_names, pt, now: float):
        """Store one desired point (a JointTrajectoryPoint); returns (ok, why)."""
        status, why = self.law.set_desired(joint_names, pt.positions, pt.velocities, pt.accelerations, now)
        return status == effort_law.DESIRED_OK, why

    def compute_desired(self) -> bool:
        """~/feedforward_torques of the latest desired state into ``ff``; True if it is to be
        published."""
        s = self.law.settings
        if s is None:
            return False
        if not self.law.feedforward(s):
            self.failed += 1
            self.report.report("feedforward_torques not published: the result is not finite", "error")
            return False
        return True

    def _log_fallback(self, reason, s) -> None:
        if reason is not None:
            self.report.log.warning(
                f"effort_command: {reason} (command_mode {s.mode}, max_desired_age {s.max_age:g} s): sending the "
                "damped gravity hold g(q) - hold_damping * qd until a fresh desired state arrives")
        else:
            self.report.log.info(f"effort_command: {s.mode} command resumed"
                                 + (" (fresh desired state)" if s.needs_desired else ""))
        self._fallback_reason = reason

    # ------------------------------------------------------------------ diagnostics
    def diagnostics(self, now: float):
        s = self.law.settings
        reason = self.law.fallback_reason(now, s) if s is not None else None
        kv = [("command_mode", s.mode if s is not None else self.mode),
              ("command_fallback", "true" if reason is not None else "false"),
              ("command_fallback_reason", reason or ""),
              ("command_fallbacks", str(self.fallbacks)),
              ("command_published", str(self.published)),
              ("command_clamped", str(self.clamped)),
              ("command_failed", str(self.failed)),
              ("command_friction", str(bool(s.friction) if s else False).lower()),
              ("command_clamp", str(bool(s.clamp) if s else False).lower()),
              ("effort_limits_source", s.limit_source if s else "")]
        return kv + ([("command_error", self.error)] if self.error else [])
