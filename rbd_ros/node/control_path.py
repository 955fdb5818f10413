"""The control path: one ``joint_states`` message in, the dynamics terms out.

``ControlPath.on_joint_state`` runs in the control thread for every message:

1. merge the named positions/velocities into the Robot's state (``Robot.update``);
   bad messages are dropped and counted, never computed;
2. gate: every DOF fresh (``max_state_age``), ``max_publish_rate``;
3. compute the terms some output needs into the Robot's buffers, in one core call
   (``Robot.compute``: g always, b and H only while a subscriber wants them);
4. publish every output that has a subscriber: ``OUTPUTS`` is the list of (topic,
   term, message kind); each one's preallocated message shares the Robot buffer of
   its term, so publishing copies nothing in Python.

The messages belong to this module, not to the Robot: ``bind(rt)`` builds them for
a new Robot and swaps (runtime, messages) in as one object, so the control thread
never sees a Robot with another model's messages.

To add an output: give Robot a buffer and a compute step for the new term (ROS-free),
add an ``Output`` to ``OUTPUTS`` (topic, term, kind), and say in ``_needs`` when the
term must be computed; an input is a second subscription on the control node whose
callback only merges into the Robot (like step 1), read by that compute step.

The command outputs (command.py has the laws):

* ``~/effort_command`` (+ ``_state``, term "cmd"): computed in step 3 while someone
  subscribes, from the measured state and the latest desired state, clamped; falls
  back to the damped gravity hold without a fresh desired state (logged once per
  transition, counted in diagnostics).
* ``~/desired_state`` (``on_desired``, same control thread): validated and stored in
  the Robot's CommandLaw, or dropped whole (counted, throttled warning).
* ``~/feedforward_torques`` (+ ``_state``, term "ff", ``on=DESIRED``): computed and
  published by ``on_desired`` for each good desired state, stamped with its stamp.

Command settings (``effort_law.make_settings``) are built from the parameters for the
bound Robot and replaced as one object; invalid ones (a model swap that no longer
fits ``kp`` etc.) switch the command outputs off until fixed, with the reason logged.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from rbd_ros.node import effort_law, names

# A new subscriber to an output gets data within this time (counts are cached).
COUNTS_PERIOD_S = 0.05

ARRAY = "array"   # Float64MultiArray: data = the term's buffer (H: rows x cols layout)
STATE = "state"   # JointState: name = output joints, effort = the term's buffer, stamp = input's

JOINT_STATES = "joint_states"  # published for each joint_states message
DESIRED = "desired"            # published for each desired state (on_desired)

CLAMP_WARN_PERIOD_S = 2.0


@dataclass(frozen=True)
class Output:
    topic: str
    term: str      # Robot buffer: "g" (rt.g_buf), "b", "h", "cmd", "ff"
    kind: str      # ARRAY or STATE
    switch: str = ""  # Params field that enables it ("" = always on)
    on: str = JOINT_STATES  # which input triggers it: JOINT_STATES or DESIRED


OUTPUTS = (
    Output(names.TOPIC_GRAVITY, "g", ARRAY),
    Output(names.TOPIC_GRAVITY_STATE, "g", STATE),
    Output(names.TOPIC_BIAS, "b", ARRAY, "publish_bias"),
    Output(names.TOPIC_BIAS_STATE, "b", STATE, "publish_bias"),
    Output(names.TOPIC_INERTIA, "h", ARRAY, "publish_inertia"),
    Output(names.TOPIC_EFFORT_COMMAND, "cmd", ARRAY),
    Output(names.TOPIC_EFFORT_COMMAND_STATE, "cmd", STATE),
    Output(names.TOPIC_FEEDFORWARD, "ff", ARRAY, on=DESIRED),
    Output(names.TOPIC_FEEDFORWARD_STATE, "ff", STATE, on=DESIRED),
)


def _new(msg_type):
    try:
        return msg_type(check_fields=True)
    except TypeError:  # distributions before Jazzy: setters always check (and keep arrays)
        return msg_type()


def _buffer(rt, term: str):
    return getattr(rt, term + "_buf")


def _attach(out: Output, msg, rt) -> bool:
    """Point msg at rt's buffer for out.term; True if the message holds the buffer itself
    (no copy).  Constructors copy, and without check_fields the setters copy too (Jazzy),
    so messages are built with check_fields=True and filled via the setters."""
    buf = _buffer(rt, out.term)
    if out.kind == STATE:
        msg.effort = buf
        return msg.effort is buf
    msg.data = buf
    return msg.data is buf


def make_message(out: Output, rt):
    """The preallocated message of one output for Robot rt."""
    n = rt.nout
    if out.kind == STATE:
        msg = _new(JointState)
        msg.name = list(rt.out_names)
    else:
        msg = _new(Float64MultiArray)
        if out.term == "h":
            msg.layout.dim = [MultiArrayDimension(label="rows", size=n, stride=n * n),
                              MultiArrayDimension(label="cols", size=n, stride=n)]
        else:
            msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        msg.layout.data_offset = 0
    return msg


class Bound:
    """A Robot with the output messages built for it (swapped in as one object)."""
    __slots__ = ("rt", "msgs", "shared")

    def __init__(self, rt, outputs):
        self.rt = rt
        self.msgs = [make_message(o, rt) for o in outputs]
        self.shared = all([_attach(o, m, rt) for o, m in zip(outputs, self.msgs)])

    def reattach(self, outputs):
        for o, m in zip(outputs, self.msgs):
            _attach(o, m, self.rt)


class ControlPath:
    """Owns the output publishers (on ``node``), the joint_states and desired_state
    callbacks (control thread) and the command counters."""

    def __init__(self, node, stats, log, params, outputs=OUTPUTS):
        self.stats = stats
        self.log = log
        self.context = node.context  # ok() False once shutting down
        self.outputs = tuple(outputs)
        self.publishers = [node.create_publisher(
            JointState if o.kind == STATE else Float64MultiArray, o.topic, names.QOS_OUTPUT)
            for o in self.outputs]
        self.bound = None            # swapped atomically; read once per message
        self._last_publish = -math.inf
        self._counts_at = -math.inf  # when the subscriber counts were last read
        self._live = ()              # indices of joint_states outputs with subscribers (not cmd)
        self._live_cmd = ()          # ... of the command outputs
        self._live_ff = ()           # ... of the desired-state outputs
        self._need_b = self._need_h = self._need_cmd = False
        # command (written by the control thread, read by diagnostics)
        self.params = params
        self.command_error = None    # why the command outputs are off (bad settings), or None
        self.desired_in = 0
        self.desired_dropped = 0
        self.command_out = 0         # commands published
        self.command_clamped = 0     # commands with at least one joint clamped
        self.command_fallbacks = 0   # commands that were the damped hold
        self.command_failed = 0      # commands not published (non-finite)
        self._fallback_reason = None  # of the last command computed
        self._clamp_warned_at = -math.inf
        self.configure(params)

    @property
    def runtime(self):
        b = self.bound
        return b.rt if b is not None else None

    def configure(self, params) -> None:
        """Take the run-time parameters (publish_*, max_state_age, max_publish_rate, the
        command parameters)."""
        self.params = params
        self.enabled = [not o.switch or bool(getattr(params, o.switch)) for o in self.outputs]
        self.max_state_age = params.max_state_age
        self.min_period = params.min_publish_period
        self._counts_at = -math.inf  # re-read the counts on the next message
        rt = self.runtime
        if rt is not None:
            # parameters that do not fit the current model were accepted for a new one
            # (a `joints` change with new gains): keep the current settings until bind()
            self._apply_settings(rt, keep_on_error=True)

    def bind(self, rt) -> None:
        """Build the messages and command settings for rt and swap (rt, messages) in."""
        self._apply_settings(rt)
        self.bound = Bound(rt, self.outputs)

    @staticmethod
    def command_settings_error(params, rt):
        """None if the command parameters fit Robot rt, else the reason (on-set check)."""
        if rt is None:
            return None
        try:
            effort_law.make_settings(params, rt)
        except ValueError as e:
            return str(e)
        return None

    def _apply_settings(self, rt, keep_on_error=False) -> None:
        try:
            s = effort_law.make_settings(self.params, rt)
        except ValueError as e:
            if keep_on_error:
                return
            rt.law.settings = None
            text = (f"effort_command and feedforward_torques are off: {e} (fix the parameter; "
                    f"the other outputs are unaffected)")
            if text != self.command_error:
                self.log.error(text)
            self.command_error = text
            self.stats.error(text)
            return
        rt.law.settings = s
        if self.command_error is not None:
            self.log.info(f"effort_command back on (command_mode {s.mode})")
        self.command_error = None

    def _refresh_counts(self, now: float) -> None:
        """Outputs nobody subscribes to are neither computed nor published (serialising and
        sending costs 10-100 us per message, b and H ~2.5 us); g is always computed.
        Re-read every COUNTS_PERIOD_S (~0.7 us per output)."""
        self._counts_at = now
        live = tuple(i for i, (pub, on) in enumerate(zip(self.publishers, self.enabled))
                     if on and pub.get_subscription_count())
        outs = self.outputs
        self._live = tuple(i for i in live if outs[i].on == JOINT_STATES and outs[i].term != "cmd")
        self._live_cmd = tuple(i for i in live if outs[i].on == JOINT_STATES
                               and outs[i].term == "cmd")
        self._live_ff = tuple(i for i in live if outs[i].on == DESIRED)
        self._need_b, self._need_h = self._needs(self._live)
        self._need_cmd = bool(self._live_cmd)

    def _needs(self, live):
        """(compute b, compute H) for the outputs in live."""
        terms = {self.outputs[i].term for i in live}
        return "b" in terms, "h" in terms

    # ------------------------------------------------------------- callbacks
    def on_joint_state(self, msg: JointState) -> None:
        t0 = time.perf_counter()
        st = self.stats
        st.msgs_in += 1
        bound = self.bound
        if bound is None:
            st.not_ready += 1
            return
        rt = bound.rt
        now = time.monotonic()
        status, detail = rt.update(msg.name, msg.position, msg.velocity, now)
        if status != "ok":
            if status == "no_velocity":
                key = tuple(msg.name)
                if key not in rt.warned_no_velocity:
                    rt.warned_no_velocity.add(key)
                    self.log.warning(f"joint_states without velocities for {list(msg.name)}: "
                                     f"taking them as zero (warned once)")
            else:
                st.drop(status)
                text = f"joint_states message dropped ({status}): {detail}"
                st.error(text)
                self.log.warning(text, throttle_duration_sec=2.0)
                return
        if detail:
            unknown = frozenset(detail)
            if unknown not in rt.warned_unknown:
                rt.warned_unknown.add(unknown)
                self.log.warning(f"joint_states: ignoring joints not in the model: "
                                 f"{sorted(unknown)} (warned once)")
        if not rt.ready_after_update(now, self.max_state_age):
            st.not_ready += 1
            return
        if self.min_period and now - self._last_publish < self.min_period:
            st.rate_limited += 1
            return
        if now - self._counts_at >= COUNTS_PERIOD_S:
            self._refresh_counts(now)
        t1 = time.perf_counter()
        try:
            rt.compute(self._need_b, self._need_h)
            failed = None
        except ValueError as e:  # non-finite state or result: never publish it
            failed = str(e)
        cmd_ok = self._need_cmd and failed is None and self._command(rt, now)
        t2 = time.perf_counter()
        if failed is not None:
            st.drop("compute_failed")
            text = f"dynamics not published: {failed}"
            st.error(text)
            self.log.error(text, throttle_duration_sec=2.0)
            return
        self._publish(bound, msg.header.stamp, self._live)
        if cmd_ok:
            self._publish(bound, msg.header.stamp, self._live_cmd)
            self.command_out += 1
        self._last_publish = now
        st.msgs_out += 1
        t3 = time.perf_counter()
        st.record((t3 - t0) * 1e6, (t2 - t1) * 1e6, (t3 - t2) * 1e6)

    def _command(self, rt, now: float) -> bool:
        """Compute the command into rt.cmd; True if it is to be published."""
        law = rt.law
        s = law.settings
        if s is None:
            return False
        nclamped, reason = law.command(now, s)
        if reason != self._fallback_reason:
            self._log_fallback(reason, s)
        if nclamped < 0:
            self.command_failed += 1
            text = (f"effort_command not published: the {s.mode} command is not finite "
                    f"(extreme gains or states?)")
            self.stats.error(text)
            self.log.error(text, throttle_duration_sec=2.0)
            return False
        if reason is not None:
            self.command_fallbacks += 1
        if nclamped:
            self.command_clamped += 1
            if now - self._clamp_warned_at >= CLAMP_WARN_PERIOD_S:
                self._clamp_warned_at = now
                self._warn_clamped(rt, s)
        return True

    def _log_fallback(self, reason, s) -> None:
        if reason is not None:
            self.log.warning(f"effort_command: {reason} (command_mode {s.mode}, max_desired_age "
                             f"{s.max_age:g} s): sending the damped gravity hold g(q) - "
                             f"hold_damping * qd until a fresh desired state arrives")
        else:
            self.log.info(f"effort_command: {s.mode} command resumed"
                          + (" (fresh desired state)" if s.needs_desired else ""))
        self._fallback_reason = reason

    def _warn_clamped(self, rt, s) -> None:
        law = rt.law
        over = [f"{n} to {lim:+g}" for n, x, lim in zip(rt.out_names, law.cmd, s.limit)
                if abs(x) == lim]
        text = (f"effort_command clamped to the effort limits ({s.limit_source}): "
                f"{', '.join(over)} ({self.command_clamped} commands clamped so far)")
        self.stats.error(text)
        self.log.warning(text)

    def on_desired(self, msg) -> None:
        """One ~/desired_state (trajectory_msgs/JointTrajectory, one point): store it, or
        drop it whole; publish ~/feedforward_torques for it while someone listens."""
        self.desired_in += 1
        bound = self.bound
        if bound is None:
            self._drop_desired("no robot model loaded yet")
            return
        rt = bound.rt
        now = time.monotonic()
        npts = len(msg.points)
        if npts != 1:
            self._drop_desired(f"points: expected exactly 1 point, got {npts}")
            return
        pt = msg.points[0]
        status, detail = rt.law.set_desired(msg.joint_names, pt.positions, pt.velocities,
                                            pt.accelerations, now)
        if status != effort_law.DESIRED_OK:
            self._drop_desired(detail)
            return
        if now - self._counts_at >= COUNTS_PERIOD_S:
            self._refresh_counts(now)
        if not self._live_ff:
            return
        s = rt.law.settings
        if s is None:
            return
        if not rt.law.feedforward(s):
            self.command_failed += 1
            text = "feedforward_torques not published: the result is not finite"
            self.stats.error(text)
            self.log.error(text, throttle_duration_sec=2.0)
            return
        self._publish(bound, msg.header.stamp, self._live_ff)

    def _drop_desired(self, why: str) -> None:
        self.desired_dropped += 1
        text = f"desired_state dropped: {why}"
        self.stats.error(text)
        self.log.warning(text, throttle_duration_sec=2.0)

    def _publish(self, bound: Bound, stamp, live) -> None:
        if not bound.shared:
            bound.reattach(self.outputs)
        msgs, pubs, outs = bound.msgs, self.publishers, self.outputs
        try:
            for i in live:
                m = msgs[i]
                if outs[i].kind == STATE:
                    m.header.stamp = stamp
                pubs[i].publish(m)
        except Exception:
            # Ctrl-C: rclpy's signal handler shuts the context down from under a callback
            # that is publishing ("publisher's context is invalid"); end quietly then
            if self.context.ok():
                raise

    # ------------------------------------------------------------ diagnostics
    def command_diagnostics(self, now: float):
        """(key, value) pairs of the command for /diagnostics (any thread)."""
        rt = self.runtime
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
