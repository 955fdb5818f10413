"""~/estimate_payload (issue 19, the node part), end to end over real DDS.

A test client plays the bundled arm carrying an unknown 1.5 kg payload with its
com at (0, 0, 0.05) m on the flange: joint states at 500 Hz along a multi-sine
excitation, efforts = RNEA of the TRUE model (the nominal arm + the payload) plus
white noise of 0.05 N m, in a permuted joint order.  The node loads the nominal URDF.  Its answer must give the
mass within 2 % and the com within 3 mm; applied, the node's gravity torques are
the core's for the nominal model plus the estimate (<= 1e-9) and within 2 % of the
payload's share of the true model's.  Bad requests, joint states without efforts
and a robot at rest are refused, the message naming the field.  At the end, ROS-free:
the window of recent joint states (recent.py) and the control step's hook that fills it."""
import bisect
import logging
import math
import sys
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from ros_harness import (
    ARM_JOINTS,
    PERM,
    PERM_NAMES,
    JointState,
    NodeProcess,
    joint_state,
    publish_until,
    unique_ns,
    wait_for,
)

import rbd_ros.core as rbd
from rbd_ros import robots
from rbd_ros.node import model_build as mb
from rbd_ros.node import payload_estimation as pe
from rbd_ros.node.control_step import ControlStep
from rbd_ros.node.params import Params
from rbd_ros.node.recent import RecentStates
from rbd_ros.node.stats import Stats
from rbd_ros.node.terms import TERMS
from rbd_ros_interfaces.srv import EstimatePayload

LINK = "flange"
MASS, COM, INERTIA = 1.5, (0.0, 0.0, 0.05), (4e-3, 0.0, 0.0, 4e-3, 0.0, 2e-3)
RATE = 500.0            # Hz, the joint-state stream
STREAM_S = 8.0          # s of excitation streamed
ASK_S = 6.0             # s asked for
REST_S, REST_N = 6.0, 800   # s asked for at rest; samples at rest in them (test_a_robot_at_rest_...)
# the excitation: q0 + A (0.7 sin(2 pi f1 t) + 0.3 sin(2 pi f2 t + 1)) per joint, within the URDF's limits
Q0 = np.array([0.0, 0.3, 0.0, -1.2, 0.0, 1.0, 0.0])
AMP = np.array([0.6, 0.4, 0.6, 0.4, 0.6, 0.5, 0.6])
F1 = np.array([0.23, 0.31, 0.37, 0.29, 0.41, 0.47, 0.53])
F2 = np.array([0.61, 0.71, 0.59, 0.67, 0.83, 0.79, 0.89])
T0 = 2000.0             # header stamp (s) of the first streamed sample
NOISE = 0.05            # N m, white noise on the streamed efforts


def excitation(t):
    """(q, v, a) (len(t), 7) of the excitation at the times t."""
    t = np.asarray(t, dtype=float)[:, None]
    w1, w2 = 2 * np.pi * F1, 2 * np.pi * F2
    s1, s2 = np.sin(w1 * t), np.sin(w2 * t + 1.0)
    c1, c2 = np.cos(w1 * t), np.cos(w2 * t + 1.0)
    return (Q0 + AMP * (0.7 * s1 + 0.3 * s2), AMP * (0.7 * w1 * c1 + 0.3 * w2 * c2),
            -AMP * (0.7 * w1 ** 2 * s1 + 0.3 * w2 ** 2 * s2))


class Stream:
    """Joint states (names permuted) from a thread at up to ``rate`` Hz, sleeping to
    deadlines (after a stall of this process it does not catch up), until close(): the
    samples of ``play(fn)``'s ``fn(t) -> (q, v, tau)`` ((n, 7) each for the times t) at
    t = 0, 1/rate, 2/rate, ... from the call on, header stamps T0 + k / rate over all of
    them (increasing: the node's estimate takes its time base from them).  At most
    WINDOW samples are unanswered at a time: the next goes out once the node's output for
    the one WINDOW before has arrived (reliable QoS both ways, the node's queue of 10 never
    overflows), so a loaded machine slows the stream down and loses nothing.  ``answered``
    counts the samples of the current ``fn`` answered, ``answered_since(t)`` those whose
    answer arrived at or after monotonic time ``t``."""

    WINDOW = 8
    CHUNK = 500

    def __init__(self, pub, rec, rate=RATE):
        self.pub, self.rec, self.period = pub, rec, 1.0 / rate
        self.lock = threading.Lock()
        self.fn, self.k, self.answered, self._new = None, 0, 0, False
        self._answer_times: list = []       # monotonic s of each answer of the current fn
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def play(self, fn):
        with self.lock:
            self.fn, self.answered, self._answer_times = fn, 0, []
            self._new = True

    def answered_since(self, t: float) -> int:
        with self.lock:
            return len(self._answer_times) - bisect.bisect_left(self._answer_times, t)

    def wait_answered(self, n, timeout=300.0) -> bool:
        return bool(wait_for(lambda: self.answered >= n, timeout=timeout, period=0.05))

    def close(self):
        self._stop.set()
        self._thread.join()

    def _run(self):
        t_next = time.monotonic()
        pending = []                       # (stamp, index in the recorder to search from)
        fn, j, rows = None, 0, None
        while not self._stop.is_set():
            with self.lock:
                if self._new:
                    fn, self._new, j, rows = self.fn, False, 0, None
                    pending.clear()
            if fn is None:
                time.sleep(0.01)
                continue
            if rows is None or j % self.CHUNK == 0:
                rows = fn((j + np.arange(self.CHUNK)) * self.period)
            if len(pending) >= self.WINDOW:
                stamp, start = pending.pop(0)
                if self.rec.wait_stamp(stamp, 5.0, start) is not None:
                    with self.lock:
                        if self.fn is fn:
                            self.answered += 1
                            self._answer_times.append(time.monotonic())
            q, v, tau = (x[j % self.CHUNK] for x in rows)
            msg = JointState()
            ts = T0 + self.k * self.period
            msg.header.stamp.sec = int(math.floor(ts))
            msg.header.stamp.nanosec = int(round((ts - math.floor(ts)) * 1e9)) % 1_000_000_000
            msg.name = PERM_NAMES
            msg.position, msg.velocity, msg.effort = q[PERM].tolist(), v[PERM].tolist(), tau[PERM].tolist()
            pending.append((msg.header.stamp, self.rec.count()))
            self.pub.publish(msg)
            self.k += 1
            j += 1
            t_next = max(t_next + self.period, time.monotonic())
            time.sleep(max(0.0, t_next - time.monotonic()))


def ask(client, node, link=LINK, seconds=ASK_S, apply=False):
    req = EstimatePayload.Request(link=link, seconds=float(seconds), apply=apply)
    return client.call(EstimatePayload, node.topic("estimate_payload"), req, timeout=120)


def payload_error(resp):
    """(relative mass error, com error in m) of a response against the true payload."""
    c = resp.payload.com
    return abs(resp.payload.m - MASS) / MASS, float(np.linalg.norm(np.array([c.x, c.y, c.z]) - COM))


@pytest.fixture(scope="module")
def models(arm_model):
    return arm_model, arm_model.with_payload(LINK, MASS, COM, INERTIA)


@pytest.fixture(scope="module")
def node(client):
    n = NodeProcess(unique_ns("est"), {"urdf_file": "rbd_arm7", "max_state_age": 5.0, "service_process": False,
                                       "joint_states_reliable": True})
    yield n
    assert n.alive(), n.log()
    n.stop()


@pytest.fixture(scope="module")
def io(client, node):
    pub = client.publisher(JointState, f"/{node.ns}/joint_states")       # reliable (QOS_RELIABLE)
    rec = client.record(JointState, node.topic("gravity_torques_state"))
    return pub, rec


@pytest.fixture(scope="module")
def streamer(io):
    s = Stream(*io)
    yield s
    s.close()


def gravity_answer(io, q):
    """The node's ~/gravity_torques_state (model order) for a joint state at q, at rest."""
    pub, rec = io
    _, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q, np.zeros(7)), rec, timeout=30)
    assert got is not None, "no gravity torques for a joint state"
    return np.array([got.effort[list(got.name).index(n)] for n in ARM_JOINTS])


def test_bad_requests_are_refused_naming_the_field(client, node):
    r = ask(client, node)      # the node is up and answers; nothing received yet
    assert not r.success and "no joint states received yet" in r.message, r.message
    for kw, words in (({"link": "flang"}, ["link: 'flang' is not a link", "did you mean", "'flange'"]),
                      ({"link": ""}, ["link: expected the name"]),
                      ({"link": "link0"}, ["link: 'link0' is fixed to the world"]),
                      ({"seconds": 0.0}, ["seconds: expected a number > 0"]),
                      ({"seconds": -2.0}, ["seconds: expected a number > 0"]),
                      ({"seconds": float("nan")}, ["seconds: expected a number > 0"]),
                      ({"seconds": 31.0}, ["seconds: 31 s is more than the node keeps", "payload_window = 30 s"])):
        r = ask(client, node, **kw)
        assert not r.success and not r.applied, (kw, r.message)
        for w in words:
            assert w in r.message, (kw, r.message)


def test_joint_states_without_efforts_give_a_clear_error(client, node, io, models):
    nominal, _ = models
    # the node merges them (its gravity torques answer: it is listening) ...
    g = gravity_answer(io, Q0)
    assert np.allclose(g, rbd.gravity(nominal, Q0), rtol=1e-9, atol=1e-9)
    # ... but they carry no efforts
    r = ask(client, node, seconds=2.0)
    assert not r.success and not r.applied
    assert "JointState.effort" in r.message and "carry no efforts" in r.message, r.message


@pytest.fixture(scope="module")
def excited(client, node, streamer, models):
    """The excitation with the true model's efforts (+ noise) streamed from here on (until
    another test plays something else), STREAM_S s of it answered, then an ask (apply
    false): the response.  The stream goes on during the asks, so that whenever a test asks
    (however long the machine makes it wait) its window holds the excitation."""
    _, true = models
    noise = np.random.default_rng(19)

    def samples(t):
        q, v, a = excitation(t)
        return q, v, rbd.rnea(true, q, v, a) + NOISE * noise.standard_normal(q.shape)

    streamer.play(samples)
    assert streamer.wait_answered(int(STREAM_S * RATE)), "the node does not answer the stream"
    return ask(client, node)


def test_the_payload_is_estimated_from_the_recent_joint_states(client, node, io, models, excited):
    nominal, _ = models
    r = excited
    assert r.success, r.message
    dm, dc = payload_error(r)
    assert dm <= 0.02 and dc <= 3e-3, (r.payload, r.message)
    assert not r.applied and "not applied" in r.message and "header stamps" in r.message, r.message
    assert len(r.stddev) == 10 and all(math.isfinite(x) and x >= 0 for x in r.stddev), list(r.stddev)
    assert r.stddev[0] < 0.02 * MASS                     # the uncertainty says the mass is well determined
    assert r.samples >= 200 and math.isfinite(r.residual_rms) and r.residual_rms < 0.05, (r.samples, r.residual_rms)
    # not applied: the node's gravity torques are still the nominal model's
    assert np.allclose(gravity_answer(io, Q0), rbd.gravity(nominal, Q0), rtol=1e-9, atol=1e-9)
    # more seconds than the node has held complete joint states for
    r = ask(client, node, seconds=28.0)
    assert not r.success and "seconds: 28 s asked, but the node holds joint states" in r.message, r.message


def test_apply_makes_the_gravity_torques_the_true_models(client, node, io, models, excited):
    nominal, true = models
    r = ask(client, node, apply=True)
    assert r.success and r.applied, r.message
    dm, dc = payload_error(r)
    assert dm <= 0.02 and dc <= 3e-3, (r.payload, r.message)
    p = r.payload
    est = nominal.with_payload(LINK, p.m, (p.com.x, p.com.y, p.com.z), (p.ixx, p.ixy, p.ixz, p.iyy, p.iyz, p.izz))
    for q in (Q0, Q0 + np.array([0.4, -0.3, 0.5, 0.3, -0.6, 0.4, 0.8])):
        g = gravity_answer(io, q)
        assert np.allclose(g, rbd.gravity(est, q), rtol=1e-9, atol=1e-9)            # the estimate is in use
        share = rbd.gravity(true, q) - rbd.gravity(nominal, q)                      # the payload's torques
        assert np.max(np.abs(g - rbd.gravity(true, q))) <= 0.02 * np.max(np.abs(share)), (g, share)
    # asked again, the estimate replaces the applied payload (the model without it is fitted)
    r2 = ask(client, node, seconds=ASK_S)
    assert r2.success and "replaces the" in r2.message, r2.message
    dm, dc = payload_error(r2)
    assert dm <= 0.02 and dc <= 3e-3, (r2.payload, r2.message)


def test_a_robot_at_rest_is_too_little_excitation(client, node, streamer, models):
    _, true = models
    g = rbd.gravity(true, Q0)

    def at_rest(t):
        q = np.tile(Q0, (len(t), 1))
        return q, np.zeros_like(q), np.tile(g, (len(t), 1))

    # The ask's window is the last REST_S s of receive time; the filter works on header
    # stamps (1 / RATE apart) and keeps MIN_SAMPLES only from >= 1.3 s of them, however
    # slowly a loaded machine lets the stream go.  Once WINDOW + 1 samples at rest are
    # answered the node has received every sample of the excitation (at most WINDOW are
    # unanswered), at t1; then eventually REST_S s have passed since t1 and the last
    # REST_S - 1 s (a second for the answers' way back) hold REST_N answered samples at
    # rest (REST_N / RATE = 1.6 s of stamps): the window holds those and no other.
    streamer.play(at_rest)
    assert streamer.wait_answered(Stream.WINDOW + 1), "the node does not answer the stream"
    t1 = time.monotonic()

    def window_at_rest():
        now = time.monotonic()
        return now >= t1 + REST_S and streamer.answered_since(now - (REST_S - 1.0)) >= REST_N

    assert wait_for(window_at_rest, timeout=300, period=0.05), \
        f"{streamer.answered} samples at rest answered, {streamer.answered_since(time.monotonic() - REST_S + 1.0)} " \
        f"in the last {REST_S - 1.0:g} s"
    r = ask(client, node, seconds=REST_S)
    assert not r.success and not r.applied
    assert "too little excitation" in r.message and "condition number" in r.message, r.message
    r = ask(client, node, seconds=0.5)        # shorter than the filter's edges
    assert not r.success and r.message.startswith("seconds: "), r.message
    assert wait_for(lambda: node.alive(), timeout=60), node.log()


# ------------------------------------------------------------------ the window itself (ROS-free)

def _sample(k: float, n=7):
    """A complete sample whose every value is k (rt-like: what RecentStates.add reads)."""
    return SimpleNamespace(q=np.full(n, k), v=np.full(n, k), tau_meas=np.full(n, k),
                           effort_stamp=np.full(n, k), oldest=k)


def _check_rows(w):
    """Each row is one sample (all its values equal), the rows consecutive, oldest first."""
    k = w.recv
    for x in (w.stamp, *w.q.T, *w.v.T, *w.tau.T):
        assert np.array_equal(x, k)
    assert np.all(np.diff(k) == 1.0)


def test_the_window_keeps_the_newest_complete_samples():
    rec = RecentStates(7, 7, (), window=10.0, max_rate=1.0)          # 12 rows, one per s
    assert rec.capacity == 12 and rec.rows_since(-math.inf) is None
    for k in range(30):
        rec.add(_sample(float(k)), float(k), float(k))
    w = rec.rows_since(-math.inf)
    _check_rows(w)
    # the oldest of the 12 rows is the next to be overwritten: not read (a write may be under way)
    assert w.recv.tolist() == list(range(19, 30)) and rec.oldest_receive_time() == 19.0
    assert rec.rows_since(25.0).recv.tolist() == [25.0, 26.0, 27.0, 28.0, 29.0]
    assert rec.rows_since(30.0) is None
    # incomplete: a DOF's position or effort not received with this message -> not kept
    s = _sample(30.0)
    s.effort_stamp[3] = 29.0
    rec.add(s, 30.0, 30.0)
    s = _sample(31.0)
    s.oldest = 30.0
    rec.add(s, 31.0, 31.0)
    assert rec.written == 30


def test_the_window_thins_fast_streams_to_max_rate():
    rec = RecentStates(7, 7, (), window=10.0, max_rate=500.0)
    for k in range(8000):                                              # 4 s at 2 kHz
        rec.add(_sample(k * 5e-4), k * 5e-4, k * 5e-4)
    assert 1995 <= rec.written <= 2002                                 # 500 a second
    w = rec.rows_since(-math.inf)
    # a token bucket of one period: two rows may come closer (jitter), never three
    assert np.all(w.recv[2:] - w.recv[:-2] >= 2e-3 - 1e-12)


def test_a_concurrent_reader_never_sees_a_torn_row():
    rec = RecentStates(7, 7, (), window=0.2, max_rate=1000.0)          # 202 rows: wraps often
    stop = threading.Event()

    def write():
        k = 0
        while not stop.is_set():
            k += 1
            rec.add(_sample(float(k)), float(k), float(k))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    th = threading.Thread(target=write)
    th.start()
    try:
        seen = 0
        t_end = time.monotonic() + 1.5
        while time.monotonic() < t_end:
            w = rec.rows_since(-math.inf)
            if w is not None:
                _check_rows(w)
                seen += 1
    finally:
        stop.set()
        th.join()
        sys.setswitchinterval(old)
    assert seen > 10 and rec.written > 10 * rec.capacity


def test_the_control_step_keeps_only_messages_with_every_effort(arm_model):
    text, where = robots.read_description("rbd_arm7", "")
    rt = mb.build_robot(text, floating_base=False, mimic=True, gravity=(0.0, 0.0, -9.81), joints=(), source=where)
    step = ControlStep(TERMS, Params(max_state_age=0.0, payload_window=5.0), logging.getLogger("test"))
    b = step.make(rt)
    step.bind(b)
    stats = Stats()
    q = np.linspace(-0.5, 0.5, 7)
    step.joint_state(b, stats, ARM_JOINTS, q, q, [], 1.0, 1.0)                  # no efforts
    step.joint_state(b, stats, ARM_JOINTS[:6], q[:6], q[:6], q[:6], 2.0, 2.0)   # not every joint
    step.joint_state(b, stats, ARM_JOINTS, q, [], q, 3.0, 3.0)                  # no velocities
    e = q.copy()
    e[2] = np.nan
    step.joint_state(b, stats, ARM_JOINTS, q, q, e, 4.0, 4.0)                   # a non-finite effort
    window = b.by_key["recent"].window
    assert window.written == 0
    step.joint_state(b, stats, PERM_NAMES, q[PERM], 2 * q[PERM], 3 * q[PERM], 5.0, 5.0)
    w = window.rows_since(0.0)
    assert window.written == 1 and w.stamp.tolist() == [5.0] and w.recv.tolist() == [5.0]
    assert np.array_equal(w.q[0], q) and np.array_equal(w.v[0], 2 * q) and np.array_equal(w.tau[0], 3 * q)
    # a payload change keeps the window (same joints); payload_window 0 drops it, and the service says so
    new = mb.with_payloads(rt, {})
    b2 = step.make(new)
    step.bind(b2)
    assert b2.by_key["recent"].window is window
    step.configure(Params(max_state_age=0.0, payload_window=0.0))
    assert b2.by_key["recent"].window is None
    with pytest.raises(pe.EstimateError, match="parameter payload_window is 0"):
        pe.estimate(new, b2.by_key["recent"].window, LINK, 1.0, 10.0, 6.0)
