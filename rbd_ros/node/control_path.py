"""The control path's ROS side: the joint_states and desired_state callbacks (control
thread), one publisher per output of the term table (``terms.TERMS``), and
preallocated messages.

For each message the logic is ``ControlStep``'s (control_step.py, ROS-free): it
merges the state, gates, computes the live terms and returns the parts to publish;
this module publishes their outputs.  Each output's message is built once per Robot
(``bind``) and, where the type allows it, *shares* its term's buffer (JointState
effort, Float64MultiArray data: array.array fields rclpy does not copy), so
publishing copies nothing in Python; a WrenchStamped or Collision message is filled
from its term per message.  ``bind(rt)`` swaps (Robot, terms, messages) in as one
object, so the control thread never sees a Robot with another model's terms or
messages.  Outputs nobody subscribes to are neither computed nor published (the
counts are re-read every COUNTS_PERIOD_S).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from rbd_ros.node import qos
from rbd_ros.node import term as kinds
from rbd_ros.node.control_step import ControlStep

# A new subscriber to an output gets data within this time (counts are cached).
COUNTS_PERIOD_S = 0.05

try:    # rbd_ros_interfaces may be missing (services off, see dynamics_node): no ~/collision then
    from rbd_ros_interfaces.msg import Collision, ConstraintForce, ConstraintForces
except ImportError:     # pragma: no cover - a broken install; the node says so at start-up
    Collision = ConstraintForce = ConstraintForces = None

MESSAGE_TYPES = {kinds.ARRAY: Float64MultiArray, kinds.MATRIX: Float64MultiArray, kinds.STATE: JointState,
                 kinds.WRENCH: WrenchStamped, kinds.COLLISION: Collision, kinds.CONSTRAINT_FORCES: ConstraintForces,
                 kinds.CONTACT_FORCES: ConstraintForces}


@dataclass(frozen=True)
class Output:
    """One published output: the index of its term in the table, the part it carries and
    its topic."""
    term: int
    part: str
    topic: str
    kind: str
    on: str


def outputs_of(table) -> tuple:
    """The published outputs of the term classes ``table`` (those whose message type
    exists), table order."""
    return tuple(Output(i, o.part, o.topic, o.kind, o.on) for i, c in enumerate(table) for o in c.outputs
                 if MESSAGE_TYPES[o.kind] is not None)


def _new(msg_type):
    try:
        return msg_type(check_fields=True)
    except TypeError:  # distributions before Jazzy: setters always check (and keep arrays)
        return msg_type()


def _attach(out: Output, msg, term) -> bool:
    """Point msg at the term's buffer of out.part; True if the message holds the buffer
    itself (no copy) or needs none.  Constructors copy, and without check_fields the
    setters copy too (Jazzy), so messages are built with check_fields=True and filled
    via the setters."""
    if out.kind == kinds.WRENCH:
        return True
    buf = term.buffer(out.part)
    if out.kind == kinds.STATE:
        msg.effort = buf
        return msg.effort is buf
    if out.kind in (kinds.ARRAY, kinds.MATRIX):
        msg.data = buf
        return msg.data is buf
    if out.kind == kinds.COLLISION:
        msg.ratios = buf
        return msg.ratios is buf
    return True


def make_message(out: Output, rt):
    """The preallocated message of one output for Robot rt."""
    n = rt.nout
    msg = _new(MESSAGE_TYPES[out.kind])
    if out.kind == kinds.STATE:
        msg.name = list(rt.out_names)
    elif out.kind == kinds.MATRIX:
        msg.layout.dim = [MultiArrayDimension(label="rows", size=n, stride=n * n),
                          MultiArrayDimension(label="cols", size=n, stride=n)]
    elif out.kind == kinds.ARRAY:
        msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
    elif out.kind == kinds.COLLISION:
        msg.joint_names = list(rt.out_names)
    elif out.kind == kinds.CONSTRAINT_FORCES:
        msg.feasible = True
        cons = rt.loops.constraints if rt.loops is not None else ()
        msg.constraints = [ConstraintForce(name=c.name, frame_id=c.link_a, mask=list(c.mask)) for c in cons]
    return msg


def _fill(out: Output, msg, term, stamp) -> None:
    """Per message: the stamp, and the fields no buffer shares."""
    if out.kind in (kinds.STATE, kinds.WRENCH, kinds.COLLISION, kinds.CONSTRAINT_FORCES, kinds.CONTACT_FORCES):
        msg.header.stamp = stamp
    if out.kind == kinds.WRENCH:
        msg.header.frame_id = term.frame     # contact_frame may change at run time
        w = term.array(out.part)
        f, t = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z, t.x, t.y, t.z = (float(x) for x in w)
    elif out.kind == kinds.COLLISION:
        st = term.state
        names = term.rt.out_names
        msg.detected = bool(st.detected)
        msg.worst_joint = names[st.worst]
        msg.worst_ratio = float(st.ratios[st.worst])
        msg.distal_joint = names[st.distal] if st.distal >= 0 else ""
        onset = 0.0 if math.isnan(st.onset) else st.onset
        msg.onset.sec = int(math.floor(onset))
        msg.onset.nanosec = int(round((onset - math.floor(onset)) * 1e9)) % 1_000_000_000
    elif out.kind == kinds.CONSTRAINT_FORCES:
        for entry, (_, _, _, w) in zip(msg.constraints, term.forces):
            f, t = entry.wrench.force, entry.wrench.torque
            f.x, f.y, f.z, t.x, t.y, t.z = w
    elif out.kind == kinds.CONTACT_FORCES:
        cs = term.contact_set
        entries = cs.msg_entries
        if entries is None:         # once per contact set
            entries = cs.msg_entries = [ConstraintForce(name=c.name, frame_id=c.link_a, mask=list(c.mask))
                                        for c in cs.constraints]
        msg.constraints = entries
        for entry, (_, _, _, w) in zip(entries, cs.forces()):
            f, t = entry.wrench.force, entry.wrench.torque
            f.x, f.y, f.z, t.x, t.y, t.z = w
        msg.feasible = cs.feasible
        msg.violation = cs.violation


class Published:
    """A Robot with its terms (control_step.Bound) and the output messages built for them,
    swapped in as one object; ``terms[i]``: the term of output i."""
    __slots__ = ("bound", "rt", "msgs", "terms", "shared")

    def __init__(self, bound, outputs):
        self.bound = bound
        self.rt = bound.rt
        self.terms = [bound.terms[o.term] for o in outputs]
        self.msgs = [make_message(o, self.rt) for o in outputs]
        self.shared = all([_attach(o, m, t) for o, m, t in zip(outputs, self.msgs, self.terms)])

    def reattach(self, outputs):
        for o, m, t in zip(outputs, self.msgs, self.terms):
            _attach(o, m, t)


class ControlPath:
    """Owns the output publishers (on ``node``) of the term classes ``table``
    (``terms.TERMS``), the joint_states and desired_state callbacks (control thread) and
    the ControlStep (``step``: its counters feed the diagnostics)."""

    def __init__(self, node, stats, log, params, table):
        self.stats = stats
        self.log = log
        self.context = node.context  # ok() False once shutting down
        self.outputs = outputs_of(table)
        self.publishers = [node.create_publisher(MESSAGE_TYPES[o.kind], o.topic, qos.QOS_OUTPUT)
                           for o in self.outputs]
        self.by_part = {}
        for i, o in enumerate(self.outputs):
            self.by_part.setdefault(o.part, []).append(i)
        self.step = ControlStep(table, params, log, on_error=stats.error)
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
        """Build the terms and messages for rt and swap (rt, terms, messages) in."""
        b = self.step.make(rt)
        self.bound = Published(b, self.outputs)
        self.step.bind(b)

    def term(self, key: str):
        """The term ``key`` of the Robot in use, or None."""
        b = self.bound
        return b.bound.by_key.get(key) if b is not None else None

    def settings_error(self, params, rt):
        """None if the terms' parameters fit Robot rt, else the reason (on-set check)."""
        return self.step.settings_error(params, rt)

    def reset_observer(self) -> bool:
        """Restart the observer at the next joint state; False if it is off (or no model)."""
        b = self.bound
        return self.step.reset_observer(b.bound if b is not None else None)

    def _refresh_counts(self, now: float) -> None:
        """Re-read which outputs have subscribers."""
        self._counts_at = now
        live = frozenset(i for i, pub in enumerate(self.publishers) if pub.get_subscription_count())
        self._live = live
        outs = self.outputs
        self.step.set_live({outs[i].part for i in live if outs[i].on == kinds.JOINT_STATES},
                           {outs[i].part for i in live if outs[i].on == kinds.DESIRED})

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
        keys = self.step.joint_state(bound.bound, st, msg.name, msg.position, msg.velocity, msg.effort,
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
        parts = self.step.desired(bound.bound, msg.joint_names, msg.points, now)
        if parts:
            self._publish(bound, msg.header.stamp, parts)

    def on_base_state(self, msg) -> None:
        """One base state (nav_msgs/Odometry; control thread): kept for the next joint
        states of a Robot with contacts.  Never raises (as on_joint_state)."""
        try:
            bound = self.bound
            if bound is None:
                return
            p, o, t = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist
            self.step.base_state(bound.bound, msg.child_frame_id, (p.x, p.y, p.z, o.x, o.y, o.z, o.w),
                                 (t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z),
                                 time.monotonic())
        except Exception as e:
            self._failed("base_state", e)

    def on_contacts(self, msg) -> None:
        """One ``~/contacts`` (rbd_ros_interfaces/Contacts; control thread): the contact set
        from the next joint state on.  Never raises."""
        try:
            bound = self.bound
            if bound is None:
                self.step.report.report("~/contacts dropped: no robot model loaded yet", "warning")
                return
            self.step.contacts(bound.bound, msg.links, [(n.x, n.y, n.z) for n in msg.normals], msg.friction)
        except Exception as e:
            self._failed("contacts", e)

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

    def _publish(self, bound: Published, stamp, parts) -> None:
        if not bound.shared:
            bound.reattach(self.outputs)
        msgs, pubs, outs, live, terms = bound.msgs, self.publishers, self.outputs, self._live, bound.terms
        for part in parts:
            for i in self.by_part[part]:
                if i in live:
                    m = msgs[i]
                    _fill(outs[i], m, terms[i], stamp)
                    pubs[i].publish(m)

    # ------------------------------------------------------------ diagnostics
    def diagnostics(self, now: float):
        """(key, value) pairs of the terms (command, observer, ...) for /diagnostics (any thread)."""
        return self.step.diagnostics(now)
