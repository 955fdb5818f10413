"""``~/retime_trajectory`` and ``~/payload_capacity`` over real DDS (answered by the service
worker process): the core's answers, joints by name in any order, a subset held at the
latest joint state the node received, a request payload, every refusal naming its field;
the retimed trajectory fed to ``~/trajectory_in`` comes out of the relay unchanged (its
efforts recomputed equal); every joint state sent while a 1000-waypoint request runs is
answered on ``~/gravity_torques``.  Also the ROS-free pieces: the held state and its
protocol lines."""
import re
import threading
import time

import numpy as np
import pytest
from geometry_msgs.msg import InertiaStamped
from ros_harness import (
    ARM_JOINTS,
    ARM_URDF,
    PERM,
    PERM_NAMES,
    JointState,
    NodeProcess,
    Recorder,
    joint_state,
    publish_until,
    stamp_key,
    unique_ns,
    wait_for,
)
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.core as rbd
from rbd_ros.node import held_state, protocol
from rbd_ros.node import planner_services as ps
from rbd_ros.node.qos import QOS_OUTPUT
from rbd_ros.node.robot import Robot
from rbd_ros.node.services import NO_MODEL
from rbd_ros_interfaces.srv import PayloadCapacity, RetimeTrajectory

REL = 1e-9
AMAX = [8.0, 8.0, 10.0, 10.0, 15.0, 15.0, 20.0]   # rad/s^2, ARM_JOINTS order
PAYLOAD = ("flange", 1.5, (0.0, 0.0, 0.06), (3e-3, 0.0, 0.0, 3e-3, 0.0, 2e-3))


def path(model, k, seed=0, reach=0.35):
    """(k, 7) waypoints of a smooth path well inside the arm's position limits."""
    lo, hi = np.asarray(model.position_limit).T
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    s = np.linspace(0.0, 1.0, k)[:, None]
    phase = np.random.default_rng(seed).uniform(0, 2 * np.pi, 7)
    return mid + reach * half * np.sin(2.0 * np.pi * s * np.linspace(0.5, 1.0, 7) + phase)


def request(names, W, **fields):
    req = RetimeTrajectory.Request()
    req.trajectory = JointTrajectory(joint_names=list(names))
    req.trajectory.points = [JointTrajectoryPoint(positions=[float(x) for x in w]) for w in W]
    for k, v in fields.items():
        setattr(req, k, v)
    return req


def inertia_stamped(link, mass, com, inertia):
    m = InertiaStamped()
    m.header.frame_id = link
    m.inertia.m = float(mass)
    m.inertia.com.x, m.inertia.com.y, m.inertia.com.z = (float(c) for c in com)
    (m.inertia.ixx, m.inertia.ixy, m.inertia.ixz, m.inertia.iyy, m.inertia.iyz,
     m.inertia.izz) = (float(c) for c in inertia)
    return m


def columns(traj, field):
    return np.array([list(getattr(p, field)) for p in traj.points])


def times(traj):
    return np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in traj.points])


def assert_close(x, ref, what):
    x, ref = np.asarray(x), np.asarray(ref)
    assert x.shape == ref.shape, (what, x.shape, ref.shape)
    err = np.max(np.abs(x - ref)) / max(1.0, np.max(np.abs(ref)))
    assert err <= REL, (what, err)


def assert_equals_core(resp, r, cols):
    """The response's trajectory is the core result ``r`` in the request's columns ``cols``
    (model DOF index of each joint name)."""
    assert resp.success, resp.message
    for field, ref in (("positions", r.q), ("velocities", r.v), ("accelerations", r.a), ("effort", r.tau)):
        assert_close(columns(resp.trajectory, field), ref[:, cols], field)
    assert np.max(np.abs(times(resp.trajectory) - r.t)) <= 1e-9      # ns resolution
    assert resp.duration == pytest.approx(r.duration, rel=REL)
    assert (resp.binding_joint, resp.binding_limit) == (r.limiting_joint or "", r.limiting_kind or "")


# ------------------------------------------------------------------ ROS-free pieces

def test_held_state_snapshot_fill_and_protocol(arm_model):
    rt = Robot(arm_model)
    assert held_state.snapshot(None, 0.0) == {"error": "the node has no robot model yet"}
    assert "never received" in held_state.snapshot(rt, 0.0)["error"]
    q = path(arm_model, 2)[0]
    assert rt.update(ARM_JOINTS, q.tolist(), [0.0] * 7, 10.0)[0] == "ok"
    snap = held_state.snapshot(rt, 10.5)
    assert snap == {"names": ARM_JOINTS, "positions": q.tolist(), "age_s": 0.5}
    # the reply line round-trips exactly (JSON floats are repr: bit for bit)
    k, back = protocol.parse_state_reply(protocol.state_reply(7, snap))
    assert (k, back) == (7, snap)
    # a model command is never taken for a reply, whatever its URDF says
    model_line = protocol.model_command('<robot name="state_reply"/>', "x", False, False, (0, 0, -9.81))
    assert protocol.parse_state_reply(model_line) is None
    assert protocol.parse_event(protocol.event_state_request(3)) == {"event": "state_request", "id": 3}
    # fill: the joints not named take the held values; all named: held is not asked
    idx, err = held_state.map_subset(rt, ["joint3", "joint1"], "f")
    assert err is None and idx.tolist() == [2, 0]
    out = np.zeros(7)
    note = held_state.fill(rt, idx, out, lambda: snap, "f")
    assert out[[1, 3, 4, 5, 6]].tolist() == q[[1, 3, 4, 5, 6]].tolist() and out[[0, 2]].tolist() == [0, 0]
    assert "5 joints held" in note
    assert held_state.fill(rt, np.arange(7), out, None, "f") is None
    with pytest.raises(held_state.HeldStateError, match="^f: missing joints .* not available here"):
        held_state.fill(rt, idx, out, None, "f")
    with pytest.raises(held_state.HeldStateError, match="^f: the joints .* but boom"):
        held_state.fill(rt, idx, out, lambda: {"error": "boom"}, "f")
    assert held_state.map_subset(rt, ["joint1", "joint1"], "f")[1].startswith("f: joint 'joint1' is listed twice")
    assert held_state.map_subset(rt, ["elbow"], "f")[1].startswith("f[0]: unknown joint 'elbow'")


def test_held_state_requester_waits_matches_ids_and_times_out():
    sent = []
    req = held_state.HeldStateRequester(sent.append, protocol.event_state_request, timeout=0.2)
    # no answer: an error after the timeout (a generous bound: only that it ends)
    assert "did not send" in req()["error"]
    # an answer to a request that timed out is dropped; the next request gets its own
    req.deliver(1, {"names": ["late"]})
    got = {}
    th = threading.Thread(target=lambda: got.update(req()))
    req.timeout = 30.0
    th.start()
    assert wait_for(lambda: len(sent) == 2, timeout=60)
    assert protocol.parse_event(sent[1]) == {"event": "state_request", "id": 2}
    req.deliver(2, {"names": ["a"], "positions": [1.0], "age_s": 0.0})
    th.join(10)
    assert got == {"names": ["a"], "positions": [1.0], "age_s": 0.0}


def test_in_process_refusals_no_model_floating_base_too_many_points(arm_model):
    """What the DDS tests cannot reach cheaply: no model, a floating base, a request past
    the point cap (the response would hold a point per waypoint)."""
    W = path(arm_model, 3)
    for fn, req, resp in ((ps.retime_trajectory, request(ARM_JOINTS, W), RetimeTrajectory.Response()),
                          (ps.payload_capacity, PayloadCapacity.Request(link="flange"), PayloadCapacity.Response())):
        assert fn(None, req, resp).message == NO_MODEL
        floating = Robot(rbd.Model.from_urdf(open(ARM_URDF).read(), floating_base=True))
        out = fn(floating, req, resp)
        assert not out.success and out.message.startswith("the model has a floating base"), out.message
    big = request(ARM_JOINTS, W[:1])
    big.trajectory.points = big.trajectory.points * (ps.MAX_GRIDPOINTS + 1)
    out = ps.retime_trajectory(Robot(arm_model), big, RetimeTrajectory.Response())
    assert not out.success and out.message.startswith("trajectory.points has 100001 waypoints, at most 100000"), \
        out.message
    # the sentinel: a good request in process is answered
    assert ps.retime_trajectory(Robot(arm_model), request(ARM_JOINTS, W), RetimeTrajectory.Response()).success


# ------------------------------------------------------------------ over DDS

@pytest.fixture(scope="module")
def node(client):
    n = NodeProcess(unique_ns("plan"), {"urdf_file": "rbd_arm7", "joint_states_reliable": True,
                                        "max_state_age": 0.0, "publish_inertia": False})
    yield n
    assert n.alive(), n.log()
    n.stop()


_CLIENTS = {}     # (client node, service) -> rclpy client, kept for the module: a new client
                 # per call waits for discovery and can lose its first response (resent after 3 s)


def _call(client, srv_type, name, req, timeout=60.0, resend_after=3.0):
    """``req``'s response, through one client per service; resent every ``resend_after`` s
    without one (see rbd_ros.demo.service_call: only the first response of a new client
    can be lost)."""
    cli = _CLIENTS.get((id(client), name))
    if cli is None:
        cli = _CLIENTS[(id(client), name)] = client.node.create_client(srv_type, name)
        assert cli.wait_for_service(timeout_sec=timeout), f"service {name} not available"
    t_end = time.monotonic() + timeout
    futs = []
    while time.monotonic() < t_end:
        futs.append(cli.call_async(req))
        done = wait_for(lambda: next((f for f in futs if f.done()), None), timeout=resend_after, period=0.001)
        if done is not None:
            return done.result()
    raise TimeoutError(f"no response from {name}")


def retime(client, node, req):
    return _call(client, RetimeTrajectory, node.topic("retime_trajectory"), req)


def capacity(client, node, req):
    return _call(client, PayloadCapacity, node.topic("payload_capacity"), req)


def test_refusals_name_the_field(client, node, arm_model):
    """Each bad request is refused with a message naming the field; the first two run
    before the node has any joint state (this module publishes none before them)."""
    W = path(arm_model, 6)
    sub = request(ARM_JOINTS[:3], W[:, :3])
    resp = retime(client, node, sub)
    assert not resp.success
    assert resp.message.startswith("trajectory.joint_names: the joints ['joint4', 'joint5', 'joint6', "
                                   "'joint7'] are not named, so they are held at the latest joint state, "
                                   "but joints ["), resp.message
    resp = capacity(client, node, PayloadCapacity.Request(link="flange"))
    assert not resp.success and resp.message.startswith("trajectory (no points: the latest joint state): the "
                                                        "joints ['joint1', "), resp.message
    nan = W.copy()
    nan[2, 4] = np.nan
    outside = W.copy()
    outside[3, 3] = 0.2                                   # joint4's limits are [-3.07, -0.07]
    swing = np.tile(W[0], (4, 1))
    swing[:, 3] = [-1.0, -0.1, -0.1, -1.0]                # the spline between 1 and 2 leaves them
    swing[:, 0] = [0.0, 0.1, 0.9, 1.0]
    cases = [
        (request(ARM_JOINTS[:6] + ["elbow"], W), r"^trajectory.joint_names\[6\]: unknown joint 'elbow'"),
        (request(["joint1", "joint2", "joint1"], W[:, :3]), r"^trajectory.joint_names: joint 'joint1' is listed "
                                                          r"twice"),
        (request(ARM_JOINTS, nan), r"^trajectory.points\[2\].positions\[4\] is nan \(must be a finite number\)"),
        (request(ARM_JOINTS, W[:, :6]), r"^trajectory.points\[0\].positions has 6 entries, expected 7"),
        (request(ARM_JOINTS, W[:1]), r"^trajectory.points has 1 points, expected at least 2"),
        (request(ARM_JOINTS, outside), r"^trajectory.points\[3\]: joint 'joint4' at 0.2 is outside its position "
                                       r"limits"),
        (request(ARM_JOINTS, swing), r"^trajectory.points: the cubic spline through them leaves joint 'joint4'.* "
                                     r"between waypoints 1 and 2"),
        (request(ARM_JOINTS, W, velocity_scale=-0.5), r"^velocity_scale: expected a number in \(0, 1\] "
                                                      r"\(0 = 1.0\), got -0.5"),
        (request(ARM_JOINTS, W, acceleration_scale=1.5), r"^acceleration_scale: expected a number in \(0, 1\]"),
        (request(ARM_JOINTS, W, effort_scale=float("nan")), r"^effort_scale: expected a number in \(0, 1\]"),
        (request(ARM_JOINTS, W, acceleration_limits=[1.0, 2.0]), r"^acceleration_limits has 2 entries, expected 7"),
        (request(PERM_NAMES, W, acceleration_limits=[1.0, 2.0, -1.0, 1.0, 1.0, 1.0, 1.0]),
         r"^acceleration_limits\[2\] \(joint7\): expected a number > 0"),
        (request(ARM_JOINTS, W, gridpoints=5), r"^gridpoints: expected 0 .* or a number in \[10, 100000\], got 5"),
        (request(ARM_JOINTS, W, gridpoints=100_001), r"^gridpoints: .* got 100001"),
        (request(ARM_JOINTS, W, payload=inertia_stamped("hand", 1.0, (0, 0, 0), (0,) * 6)),
         r"^payload.header.frame_id: 'hand' is not a link of the model"),
        (request(ARM_JOINTS, W, payload=inertia_stamped("flange", -1.0, (0, 0, 0), (0,) * 6)),
         r"^payload.inertia.m: expected a finite number >= 0"),
        (request(ARM_JOINTS, W, payload=inertia_stamped("flange", 1.0, (0, float("inf"), 0), (0,) * 6)),
         r"^payload.inertia.com: "),
        (request(ARM_JOINTS, W, effort_scale=0.05), r"^effort limits \(the URDF's x effort_scale\): the path "
                                                    r"cannot be followed .* holding still there needs"),
    ]
    for req, match in cases:
        resp = retime(client, node, req)
        assert not resp.success and resp.trajectory.points == [], (match, resp.message)
        assert re.match(match, resp.message), (match, resp.message)

    def cap(link="flange", names=ARM_JOINTS, Q=W, **kw):
        req = PayloadCapacity.Request(link=link)
        req.trajectory = JointTrajectory(joint_names=list(names))
        req.trajectory.points = [JointTrajectoryPoint(positions=[float(x) for x in q]) for q in Q]
        for k, v in kw.items():
            setattr(req, k, v)
        return req

    bad_v = cap()
    bad_v.trajectory.points[1].velocities = [0.0] * 3
    cap_cases = [
        (cap(link="hand"), r"^link: 'hand' is not a link of the model"),
        (cap(link="link0"), r"^link: no joint with a finite effort limit feels a payload on link 'link0'"),
        (cap(inertia=[1e-3] * 3), r"^inertia has 3 entries, expected 6"),
        (cap(inertia=[1e-3, 0, 0, 1e-3, 0, 5e-2]), r"^inertia: principal moments .* violate the triangle"),
        (cap(effort_scale=2.0), r"^effort_scale: expected a number in \(0, 1\]"),
        (cap(names=ARM_JOINTS[:6] + ["elbow"]), r"^trajectory.joint_names\[6\]: unknown joint 'elbow'"),
        (cap(Q=nan), r"^trajectory.points\[2\].positions\[4\] is nan"),
        (bad_v, r"^trajectory.points\[1\].velocities has 3 entries, expected 7 \(one per joint_names\) or 0"),
    ]
    com_inf = cap()
    com_inf.com.y = float("inf")
    cap_cases.append((com_inf, r"^com: "))
    for req, match in cap_cases:
        resp = capacity(client, node, req)
        assert not resp.success and re.match(match, resp.message), (match, resp.message)
    # the sentinel: the same requests without the fault are answered
    full = retime(client, node, request(ARM_JOINTS, W))
    assert full.success and capacity(client, node, cap()).success
    # the relay too refuses a subset while there is no joint state: nothing comes out for
    # it, and the full trajectory sent after it on the same channel does
    subset = JointTrajectory(joint_names=ARM_JOINTS[:3], points=[
        JointTrajectoryPoint(positions=list(p.positions)[:3], velocities=list(p.velocities)[:3],
                             accelerations=list(p.accelerations)[:3]) for p in full.trajectory.points])
    io = RelayIO(client, node)
    try:
        assert wait_for(lambda: io.pub.get_subscription_count() > 0, timeout=60)
        io.pub.publish(subset)
        out = io.send(full.trajectory)
        assert out is not None and list(out.joint_names) == ARM_JOINTS, node.log()
        assert [len(m.joint_names) for m in io.rec.snapshot()[0]] == [7]     # the subset: refused
        assert wait_for(lambda: "refused, nothing relayed: trajectory.joint_names: the joints ['joint4'"
                        in node.log(), timeout=10), node.log()
    finally:
        io.close()


def test_retime_equals_the_core_by_name_with_payload_and_grid(client, node, arm_model):
    W = path(arm_model, 30, seed=1)
    inv = np.argsort(PERM)
    # joints in another order than the model's, limits per request joint
    req = request(PERM_NAMES, W[:, PERM], acceleration_limits=[AMAX[i] for i in PERM], effort_scale=0.9,
                  velocity_scale=0.8)
    resp = retime(client, node, req)
    r = rbd.retime(arm_model, W, acceleration_limits=AMAX, effort_scale=0.9, velocity_scale=0.8)
    assert_equals_core(resp, r, PERM)
    assert list(resp.trajectory.joint_names) == PERM_NAMES
    assert np.all(np.abs(columns(resp.trajectory, "effort")[:, inv]) <= 0.9 * arm_model.effort_limit * (1 + REL))
    # a payload for this request only, one acceleration limit for all, a grid
    req = request(ARM_JOINTS, W, payload=inertia_stamped(*PAYLOAD), acceleration_limits=[12.0], gridpoints=250)
    resp = retime(client, node, req)
    r_load = rbd.retime(arm_model.with_payload(*PAYLOAD), W, acceleration_limits=12.0, grid=250)
    assert_equals_core(resp, r_load, list(range(7)))
    assert "with a 1.5 kg payload on flange" in resp.message
    # ... and not for the next one (the node's model has no payload)
    resp = retime(client, node, request(ARM_JOINTS, W, acceleration_limits=[12.0], gridpoints=250))
    assert_equals_core(resp, rbd.retime(arm_model, W, acceleration_limits=12.0, grid=250), list(range(7)))


def test_subsets_are_held_at_the_latest_joint_state(client, node, arm_model):
    """Joints a request leaves out keep the position the node last received (here: a state
    published by this test, confirmed by the node's output stamped with it)."""
    pub = client.publisher(JointState, f"/{node.ns}/joint_states")
    rec = client.record(JointState, node.topic("gravity_torques_state"))
    q_held = path(arm_model, 7, seed=2)[3]
    sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q_held, np.zeros(7)), rec, timeout=30)
    assert got is not None, node.log()
    names = ["joint6", "joint2", "joint4"]
    cols = [ARM_JOINTS.index(n) for n in names]
    W = np.tile(q_held, (12, 1))
    W[:, cols] = path(arm_model, 12, seed=3)[:, cols]
    resp = retime(client, node, request(names, W[:, cols], acceleration_limits=[6.0], effort_scale=0.9))
    r = rbd.retime(arm_model, W, acceleration_limits=np.where(np.isin(np.arange(7), cols), 6.0, np.inf),
                   effort_scale=0.9)
    assert_equals_core(resp, r, cols)
    assert list(resp.trajectory.joint_names) == names
    assert "4 joints held at the latest joint state" in resp.message
    # payload capacity: no points = the latest state, held still
    req = PayloadCapacity.Request(link="flange", inertia=list(PAYLOAD[3]))
    req.com.x, req.com.y, req.com.z = PAYLOAD[2]
    resp = capacity(client, node, req)
    ref = rbd.payload_capacity(arm_model, "flange", q_held, com=PAYLOAD[2], inertia=PAYLOAD[3])
    assert resp.success, resp.message
    assert resp.mass == pytest.approx(ref.mass, rel=REL) and resp.mass > 0
    assert (resp.limiting_joint, resp.limiting_point, len(resp.per_point)) == (ref.limiting_joint, 0, 1)
    # along the retimed subset trajectory, with its velocities and accelerations, scaled limits
    req.trajectory = retime(client, node, request(names, W[:, cols], acceleration_limits=[6.0])).trajectory
    req.effort_scale = 0.8
    resp = capacity(client, node, req)
    V = np.zeros((len(req.trajectory.points), 7))
    A = np.zeros_like(V)
    Q = np.tile(q_held, (len(V), 1))
    for field, X in (("positions", Q), ("velocities", V), ("accelerations", A)):
        X[:, cols] = columns(req.trajectory, field)
    ref = rbd.payload_capacity(arm_model, "flange", Q, V, A, com=PAYLOAD[2], inertia=PAYLOAD[3],
                               effort_limits=0.8 * arm_model.effort_limit)
    assert resp.success and resp.mass == pytest.approx(ref.mass, rel=REL), resp.message
    assert (resp.limiting_joint, resp.limiting_point) == (ref.limiting_joint, ref.limiting_sample)
    assert_close(resp.per_point, ref.per_sample, "per_point")


class RelayIO:
    """A publisher to the relay's input and a recorder of its output, closed after use
    (a subscription left behind converts every later relayed trajectory too)."""

    def __init__(self, client, node):
        self.node = client.node
        self.rec = Recorder()
        self.sub = self.node.create_subscription(JointTrajectory, node.topic("trajectory_out"), self.rec,
                                                 QOS_OUTPUT)
        self.pub = client.publisher(JointTrajectory, node.topic("trajectory_in"), QOS_OUTPUT)

    def send(self, traj, timeout=60.0):
        assert wait_for(lambda: self.pub.get_subscription_count() > 0, timeout=timeout)
        n0 = self.rec.count()
        self.pub.publish(traj)
        return wait_for(lambda: next((m for m in self.rec.snapshot()[0][n0:]
                                      if len(m.points) == len(traj.points)), None), timeout=timeout)

    def close(self):
        self.node.destroy_subscription(self.sub)
        self.node.destroy_publisher(self.pub)


def test_retimed_trajectory_feeds_the_relay_unchanged(client, node, arm_model):
    """The response goes to ~/trajectory_in as it is: the relay publishes the same joints,
    positions, velocities, accelerations and times, and efforts equal to the retimed
    feed-forward (the relay's inverse dynamics; the arm has no friction, so both are RNEA
    of the same states), for every joint and for a planning group's subset."""
    io = RelayIO(client, node)
    try:
        W = path(arm_model, 20, seed=4)
        names = ["joint5", "joint3", "joint1", "joint2"]            # a subset: the others held
        cols = [ARM_JOINTS.index(n) for n in names]
        for req in (request(PERM_NAMES, W[:, PERM], acceleration_limits=[10.0], effort_scale=0.9),
                    request(names, W[:, cols], acceleration_limits=[10.0], effort_scale=0.9)):
            resp = retime(client, node, req)
            assert resp.success, resp.message
            out = io.send(resp.trajectory)
            assert out is not None, node.log()
            assert list(out.joint_names) == list(resp.trajectory.joint_names)
            for p_in, p_out in zip(resp.trajectory.points, out.points, strict=True):
                assert list(p_out.positions) == list(p_in.positions)
                assert list(p_out.velocities) == list(p_in.velocities)
                assert list(p_out.accelerations) == list(p_in.accelerations)
                assert p_out.time_from_start == p_in.time_from_start
            assert_close(columns(out, "effort"), columns(resp.trajectory, "effort"), "relayed effort")
    finally:
        io.close()


def test_every_joint_state_is_answered_during_a_1000_waypoint_request(client, node, arm_model):
    """While a 1000-waypoint retime request runs in the worker, joint states keep being
    answered on ~/gravity_torques: each is sent once its predecessor was answered (so no
    queue can overflow, and a stalled control path would stall this exchange until the
    call ends), and every one sent during the call must get its output.  No timing bound:
    a precondition only asks that the call lasted for a few exchanges (else it is
    repeated, on a loaded machine the call can be short compared to an exchange)."""
    pub = client.publisher(JointState, f"/{node.ns}/joint_states")
    rec = client.record(JointState, node.topic("gravity_torques_state"))
    q0 = path(arm_model, 5, seed=5)[2]
    assert publish_until(pub, lambda: joint_state(ARM_JOINTS, q0, np.zeros(7)), rec, timeout=30)[1] is not None
    g_ref = rbd.gravity(arm_model, q0)
    req = request(ARM_JOINTS, path(arm_model, 1000, seed=6, reach=0.5), acceleration_limits=AMAX,
                  effort_scale=0.9)
    for _attempt in range(3):
        call = {}

        def run(call=call):
            call["t0"] = time.monotonic()
            call["resp"] = retime(client, node, req)
            call["t1"] = time.monotonic()

        th = threading.Thread(target=run)
        exchanged = []          # (stamp key, send time, answer) of each state sent during the call
        th.start()
        while th.is_alive():
            msg = joint_state(ARM_JOINTS, q0, np.zeros(7))
            t_send = time.monotonic()
            pub.publish(msg)
            got = wait_for(lambda m=msg: rec.by_stamp(m.header.stamp), timeout=20, period=0.0005)
            exchanged.append((stamp_key(msg.header.stamp), t_send, got))
        th.join()
        resp = call["resp"]
        assert resp.success and len(resp.trajectory.points) == 1000, resp.message
        during = [e for e in exchanged if call["t0"] <= e[1] <= call["t1"]]
        if len(during) >= 3:
            break
    assert len(during) >= 3, (len(during), call["t1"] - call["t0"])
    missing = [k for k, _, got in exchanged if got is None]
    assert not missing, f"{len(missing)} of {len(exchanged)} joint states were not answered: {missing[:5]}"
    for _, _, got in during:
        assert_close(got.effort, g_ref, "gravity torques during the call")
