"""The control path: one ``joint_states`` message in, the dynamics terms out.

``ControlPath.on_joint_state`` runs in the control thread for every message:

1. merge the named positions/velocities into the Runtime's state (``Runtime.update``);
   bad messages are dropped and counted, never computed;
2. gate: every DOF fresh (``max_state_age``), ``max_publish_rate``;
3. compute the terms some output needs into the Runtime's buffers, in one core call
   (``Runtime.compute``: g always, b and H only while a subscriber wants them);
4. publish every output that has a subscriber: ``OUTPUTS`` is the list of (topic,
   term, message kind); each one's preallocated message shares the Runtime buffer of
   its term, so publishing copies nothing in Python.

The messages belong to this module, not to the Runtime: ``bind(rt)`` builds them for
a new Runtime and swaps (runtime, messages) in as one object, so the control thread
never sees a Runtime with another model's messages.

To add an output (e.g. ``~/effort_command``): give Runtime a buffer and a compute step
for the new term (ROS-free), add an ``Output`` to ``OUTPUTS`` (topic, term, kind), and
say in ``_needs`` when the term must be computed; an input such as ``~/desired_state``
is a second subscription on the control node whose callback only merges into the
Runtime (like step 1), read by that compute step.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from rbd_ros.node import names

# A new subscriber to an output gets data within this time (counts are cached).
COUNTS_PERIOD_S = 0.05

ARRAY = "array"   # Float64MultiArray: data = the term's buffer (H: rows x cols layout)
STATE = "state"   # JointState: name = output joints, effort = the term's buffer, stamp = input's


@dataclass(frozen=True)
class Output:
    topic: str
    term: str      # Runtime buffer: "g" (rt.g_buf), "b" (rt.b_buf), "h" (rt.h_buf)
    kind: str      # ARRAY or STATE
    switch: str = ""  # Params field that enables it ("" = always on)


OUTPUTS = (
    Output(names.TOPIC_GRAVITY, "g", ARRAY),
    Output(names.TOPIC_GRAVITY_STATE, "g", STATE),
    Output(names.TOPIC_BIAS, "b", ARRAY, "publish_bias"),
    Output(names.TOPIC_BIAS_STATE, "b", STATE, "publish_bias"),
    Output(names.TOPIC_INERTIA, "h", ARRAY, "publish_inertia"),
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
    """The preallocated message of one output for Runtime rt."""
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
    """A Runtime with the output messages built for it (swapped in as one object)."""
    __slots__ = ("rt", "msgs", "shared")

    def __init__(self, rt, outputs):
        self.rt = rt
        self.msgs = [make_message(o, rt) for o in outputs]
        self.shared = all([_attach(o, m, rt) for o, m in zip(outputs, self.msgs)])

    def reattach(self, outputs):
        for o, m in zip(outputs, self.msgs):
            _attach(o, m, self.rt)


class ControlPath:
    """Owns the output publishers (on ``node``) and the joint_states callback."""

    def __init__(self, node, stats, log, params, outputs=OUTPUTS):
        self.stats = stats
        self.log = log
        self.outputs = tuple(outputs)
        self.publishers = [node.create_publisher(
            JointState if o.kind == STATE else Float64MultiArray, o.topic, names.QOS_OUTPUT)
            for o in self.outputs]
        self.bound = None            # swapped atomically; read once per message
        self._last_publish = -math.inf
        self._counts_at = -math.inf  # when the subscriber counts were last read
        self._live = ()              # indices of outputs with subscribers
        self._need_b = self._need_h = False
        self.configure(params)

    @property
    def runtime(self):
        b = self.bound
        return b.rt if b is not None else None

    def configure(self, params) -> None:
        """Take the run-time parameters (publish_*, max_state_age, max_publish_rate)."""
        self.enabled = [not o.switch or bool(getattr(params, o.switch)) for o in self.outputs]
        self.max_state_age = params.max_state_age
        self.min_period = params.min_publish_period
        self._counts_at = -math.inf  # re-read the counts on the next message

    def bind(self, rt) -> None:
        """Build the messages for rt and swap (rt, messages) in."""
        self.bound = Bound(rt, self.outputs)

    def _refresh_counts(self, now: float) -> None:
        """Outputs nobody subscribes to are neither computed nor published (serialising and
        sending costs 10-100 us per message, b and H ~2.5 us); g is always computed.
        Re-read every COUNTS_PERIOD_S (~0.7 us per output)."""
        self._counts_at = now
        live = tuple(i for i, (pub, on) in enumerate(zip(self.publishers, self.enabled))
                     if on and pub.get_subscription_count())
        self._live = live
        self._need_b, self._need_h = self._needs(live)

    def _needs(self, live):
        """(compute b, compute H) for the outputs in live."""
        terms = {self.outputs[i].term for i in live}
        return "b" in terms, "h" in terms

    # ------------------------------------------------------------- callback
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
        t2 = time.perf_counter()
        if failed is not None:
            st.drop("compute_failed")
            text = f"dynamics not published: {failed}"
            st.error(text)
            self.log.error(text, throttle_duration_sec=2.0)
            return
        self._publish(bound, msg.header.stamp)
        self._last_publish = now
        st.msgs_out += 1
        t3 = time.perf_counter()
        st.record((t3 - t0) * 1e6, (t2 - t1) * 1e6, (t3 - t2) * 1e6)

    def _publish(self, bound: Bound, stamp) -> None:
        if not bound.shared:
            bound.reattach(self.outputs)
        msgs, pubs, outs = bound.msgs, self.publishers, self.outputs
        for i in self._live:
            m = msgs[i]
            if outs[i].kind == STATE:
                m.header.stamp = stamp
            pubs[i].publish(m)
