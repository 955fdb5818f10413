"""The control path's ROS side: the joint_states and desired_state callbacks (control
thread), one publisher per output of ``terms.TERMS``, and preallocated messages.

For each message the logic is ``ControlStep``'s (control_step.py, ROS-free): it
merges the state, gates, computes the live terms and returns the ones to publish;
this module publishes their outputs.  Each output's message is built once per Robot
(``bind``) and, where the type allows it, *shares* the term's buffer (JointState
effort, Float64MultiArray data: array.array fields rclpy does not copy), so
publishing copies nothing in Python; a WrenchStamped or Collision message is filled
from the buffer per message.  ``bind(rt)`` swaps (Robot, messages) in as one object,
so the control thread never sees a Robot with another model's messages.  Outputs
nobody subscribes to are neither computed nor published (the counts are re-read
every COUNTS_PERIOD_S).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from rbd_ros.node import qos, terms
from rbd_ros.node.control_step import ControlStep

# A new subscriber to an output gets data within this time (counts are cached).
COUNTS_PERIOD_S = 0.05

try:    # rbd_ros_interfaces may be missing (services off, see dynamics_node): no ~/collision then
    from rbd_ros_interfaces.msg import Collision
except ImportError:     # pragma: no cover - a broken install; the node says so at start-up
    Collision = None

MESSAGE_TYPES = {terms.ARRAY: Float64MultiArray, terms.MATRIX: Float64MultiArray, terms.STATE: JointState,
                 terms.WRENCH: WrenchStamped, terms.COLLISION: Collision}


@dataclass(frozen=True)
class Output:
    """One published output: a term and one of its topics."""
    term: str
    topic: str
    kind: str
    on: str


OUTPUTS = tuple(Output(t.key, o.topic, o.kind, t.on) for t in terms.TERMS for o in t.outputs
                if MESSAGE_TYPES[o.kind] is not None)


def _new(msg_type):
    try:
        return msg_type(check_fields=True)
    except TypeError:  # distributions before Jazzy: setters always check (and keep arrays)
        return msg_type()


def _attach(out: Output, msg, rt) -> bool:
    """Point msg at rt's buffer for out.term; True if the message holds the buffer itself
    (no copy) or needs none.  Constructors copy, and without check_fields the setters
    copy too (Jazzy), so messages are built with check_fields=True and filled via the
    setters."""
    buf = rt.buffer(out.term)
    if out.kind == terms.STATE:
        msg.effort = buf
        return msg.effort is buf
    if out.kind in (terms.ARRAY, terms.MATRIX):
        msg.data = buf
        return msg.data is buf
    if out.kind == terms.COLLISION:
        msg.ratios = buf
        return msg.ratios is buf
    return True


def make_message(out: Output, rt):
    """The preallocated message of one output for Robot rt."""
    n = rt.nout
    msg = _new(MESSAGE_TYPES[out.kind])
    if out.kind == terms.STATE:
        msg.name = list(rt.out_names)
    elif out.kind == terms.MATRIX:
        msg.layout.dim = [MultiArrayDimension(label="rows", size=n, stride=n * n),
                          MultiArrayDimension(label="cols", size=n, stride=n)]
    elif out.kind == terms.ARRAY:
        msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
    elif out.kind == terms.COLLISION:
        msg.joint_names = list(rt.out_names)
    return msg


def _fill(out: Output, msg, rt, stamp) -> None:
    """Per message: the stamp, and the fields no buffer shares."""
    if out.kind in (terms.STATE, terms.WRENCH, terms.COLLISION):
        msg.header.stamp = stamp
    if out.kind == terms.WRENCH:
        msg.header.frame_id = rt.observer_settings.frame     # contact_frame may change at run time
        w = rt.arrays["wrench"]
        f, t = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z, t.x, t.y, t.z = (float(x) for x in w)
    elif out.kind == terms.COLLISION:
        st = rt.collision_state
        msg.detected = bool(st.detected)
        msg.worst_joint = rt.out_names[st.worst]
        msg.worst_ratio = float(st.ratios[st.worst])
        msg.distal_joint = rt.out_names[st.distal] if st.distal >= 0 else ""
        onset = 0.0 if math.isnan(st.onset) else st.onset
        msg.onset.sec = int(math.floor(onset))
        msg.onset.nanosec = int(round((onset - math.floor(onset)) * 1e9)) % 1_000_000_000


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
    callbacks (control thread) and the ControlStep (``step``: its counters feed the
    diagnostics)."""

    def __init__(self, node, stats, log, params, outputs=OUTPUTS):
        self.stats = stats
        self.log = log
        self.context = node.context  # ok() False once shutting down
        self.outputs = tuple(outputs)
        self.publishers = [node.create_publisher(MESSAGE_TYPES[o.kind], o.topic, qos.QOS_OUTPUT)
                           for o in self.outputs]
        self.by_term = {}
        for i, o in enumerate(self.outputs):
            self.by_term.setdefault(o.term, []).append(i)
        self.step = ControlStep(params, log, on_error=stats.error)
        self.bound = None            # swapped atomically; read once per message
        self._counts_at = -math.inf  # when the subscriber counts were last read
        self._live = frozenset()     # indices of outputs with subscribers

    @property
    def runtime(self):
        b = self.bound
        return b.rt if b is not None else None

    def configure(self, params) -> None:
        """Take the run-time parameters (see ControlStep.configure)."""
        self.step.configure(params)
        self._counts_at = -math.inf  # re-read the counts on the next message

    def bind(self, rt) -> None:
        """Build the messages and settings for rt and swap (rt, messages) in."""
        self.step.bind(rt)
        self.bound = Bound(rt, self.outputs)

    @staticmethod
    def settings_error(params, rt):
        """None if the command and observer parameters fit Robot rt, else the reason (on-set check)."""
        return ControlStep.settings_error(params, rt)

    def _refresh_counts(self, now: float) -> None:
        """Re-read which outputs have subscribers."""
        self._counts_at = now
        live = frozenset(i for i, pub in enumerate(self.publishers) if pub.get_subscription_count())
        self._live = live
        outs = self.outputs
        self.step.set_live({outs[i].term for i in live if outs[i].on == terms.JOINT_STATES},
                           {outs[i].term for i in live if outs[i].on == terms.DESIRED})

    # ------------------------------------------------------------- callbacks
    def on_joint_state(self, msg: JointState) -> None:
        """One joint_states message (control thread).  Never raises: anything unexpected
        is counted (``dropped_internal_error``) and reported, and the next message is
        handled as usual."""
        try:
            self._joint_state(msg)
        except Exception as e:
            self._failed("joint_states", e)

    def _joint_state(self, msg: JointState) -> None:
        t0 = time.perf_counter()
        c0 = time.thread_time()          # this thread's CPU time (CLOCK_THREAD_CPUTIME_ID: ns resolution)
        st = self.stats
        st.msgs_in += 1
        bound = self.bound
        if bound is None:
            st.not_ready += 1
            return
        now = time.monotonic()
        if now - self._counts_at >= COUNTS_PERIOD_S:
            self._refresh_counts(now)
        stamp = msg.header.stamp
        keys = self.step.joint_state(bound.rt, st, msg.name, msg.position, msg.velocity, msg.effort,
                                     stamp.sec + 1e-9 * stamp.nanosec, now)
        if keys is None:
            return
        t2 = time.perf_counter()
        self._publish(bound, stamp, keys)
        st.msgs_out += 1
        t3 = time.perf_counter()
        st.record((t3 - t0) * 1e6, (t2 - t0) * 1e6, (t3 - t2) * 1e6, (time.thread_time() - c0) * 1e6)

    def on_desired(self, msg) -> None:
        """One ~/desired_state (trajectory_msgs/JointTrajectory, one point): stored or
        dropped by the step; ~/feedforward_torques published for it while someone listens.
        Never raises (as on_joint_state)."""
        try:
            self._desired(msg)
        except Exception as e:
            self._failed("desired_state", e)

    def _desired(self, msg) -> None:
        bound = self.bound
        if bound is None:
            self.step.drop_desired("no robot model loaded yet")
            return
        now = time.monotonic()
        if now - self._counts_at >= COUNTS_PERIOD_S:
            self._refresh_counts(now)
        if self.step.desired(bound.rt, msg.joint_names, msg.points, now):
            self._publish(bound, msg.header.stamp, ("ff",))

    def _failed(self, topic: str, e: Exception) -> None:
        """A callback failed unexpectedly: count and report it (never raises).  Quiet once
        the context is shut down (Ctrl-C: publishing from under a callback fails then)."""
        try:
            if not self.context.ok():
                return
            self.stats.drop("internal_error")
            self.step.report_failure(f"{topic} message not handled: {type(e).__name__}: {e}")
        except Exception:   # reporting must not raise either
            pass

    def _publish(self, bound: Bound, stamp, keys) -> None:
        if not bound.shared:
            bound.reattach(self.outputs)
        msgs, pubs, outs, live = bound.msgs, self.publishers, self.outputs, self._live
        for key in keys:
            for i in self.by_term[key]:
                if i in live:
                    m = msgs[i]
                    _fill(outs[i], m, bound.rt, stamp)
                    pubs[i].publish(m)

    # ------------------------------------------------------------ diagnostics
    def command_diagnostics(self, now: float):
        """(key, value) pairs of the command and the observer for /diagnostics (any thread)."""
        return self.step.command_diagnostics(now) + self.step.observer_diagnostics()
