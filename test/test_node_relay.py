"""Trajectory relay ``~/trajectory_in`` -> ``~/trajectory_out`` over real DDS: efforts
equal the ID service's, a trajectory with missing derivatives is refused (and a good
one after it is relayed), the remap a joint_trajectory_controller needs works, the
in-process relay (service_process: false) too, and the torque stream keeps flowing
while a 10 000-point trajectory is relayed.

Run as a script (``python test_node_relay.py NODE_FQN NPOINTS``) it is the separate
process that sends a big trajectory and waits for the relayed one (building and
(de)serialising ~2 MB would otherwise stall the test process's own stream)."""
import json
import os
import subprocess
import sys
import time

import numpy as np

TOL = 1e-9


def make_trajectory(names, Q, V, A, missing=None):
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    traj = JointTrajectory(joint_names=list(names))
    pts = []
    for i in range(Q.shape[0]):
        p = JointTrajectoryPoint()
        p.positions = Q[i].tolist()
        if missing != ("velocities", i):
            p.velocities = V[i].tolist()
        if missing != ("accelerations", i):
            p.accelerations = A[i].tolist()
        p.time_from_start = Duration(sec=i // 100, nanosec=(i % 100) * 10_000_000)
        pts.append(p)
    traj.points = pts
    return traj


def random_states(seed, n):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1.5, 1.5, (n, 7)), rng.uniform(-1, 1, (n, 7)),
            rng.uniform(-2, 2, (n, 7)))


def _caller_main(fqn, npts):
    """The big-trajectory sender (see the module docstring); prints 'ready', waits for a
    line on stdin, sends, waits for the relayed trajectory, prints a JSON summary."""
    import rclpy
    from ros_harness import ARM_JOINTS, read_arm_urdf
    from trajectory_msgs.msg import JointTrajectory

    import rbd_ros.core as rbd
    from rbd_ros.node.qos import QOS_OUTPUT
    Q, V, A = random_states(50, npts)
    traj = make_trajectory(ARM_JOINTS, Q, V, A)
    rclpy.init()
    node = rclpy.create_node("rbd_relay_caller")
    got = []
    node.create_subscription(JointTrajectory, fqn + "/trajectory_out",
                             lambda m: got.append((time.monotonic(), m)), QOS_OUTPUT)
    pub = node.create_publisher(JointTrajectory, fqn + "/trajectory_in", QOS_OUTPUT)
    t_end = time.monotonic() + 60
    while pub.get_subscription_count() == 0 or node.count_publishers(fqn + "/trajectory_out") == 0:
        rclpy.spin_once(node, timeout_sec=0.05)
        if time.monotonic() > t_end:
            print(json.dumps({"success": False, "message": "relay not discovered"}), flush=True)
            return
    print("ready", flush=True)
    sys.stdin.readline()
    t0 = time.monotonic()
    pub.publish(traj)
    t_end = t0 + 120
    while not got and time.monotonic() < t_end:
        rclpy.spin_once(node, timeout_sec=0.05)
    out = {"success": bool(got), "t_start": t0}
    if got:
        t1, msg = got[0]
        eff = np.array([p.effort for p in msg.points])
        tau = rbd.rnea(rbd.Model.from_urdf(read_arm_urdf()), Q, V, A)
        out.update(t_end=t1, call_s=t1 - t0, points=len(msg.points),
                   max_err=float(np.max(np.abs(eff - tau)) / max(1.0, np.max(np.abs(tau)))))
    print(json.dumps(out), flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    _caller_main(sys.argv[1], int(sys.argv[2]))
    sys.exit(0)


import pytest  # noqa: E402
from ros_harness import (  # noqa: E402
    ARM_JOINTS,
    PERM,
    PERM_NAMES,
    ROOT,
    DiagnosticArray,
    JointState,
    NodeProcess,
    PingPong,
    Recorder,
    diagnostics_of,
    read_arm_urdf,
    unique_ns,
    wait_for,
)

import rbd_ros.core as rbd  # noqa: E402


@pytest.fixture(scope="module")
def node(client):
    n = NodeProcess(unique_ns("relay"), {"urdf_file": "rbd_arm7", "max_state_age": 1.0,
                                         "diagnostics_period": 0.2})
    yield n
    assert n.alive(), n.log()
    n.stop()


class RelayIO:
    """This process's publisher to the relay's input and recorder of its output, until
    close(): a subscription left behind would make this process convert every later
    relayed trajectory too (~0.3 s of GIL for 10 000 points, starving its other threads)."""

    def __init__(self, client, in_topic, out_topic):
        from trajectory_msgs.msg import JointTrajectory

        from rbd_ros.node.qos import QOS_OUTPUT
        self.node = client.node
        self.rec = Recorder()
        self.sub = self.node.create_subscription(JointTrajectory, out_topic, self.rec, QOS_OUTPUT)
        self.pub = client.publisher(JointTrajectory, in_topic, QOS_OUTPUT)

    def close(self):
        self.node.destroy_subscription(self.sub)
        self.node.destroy_publisher(self.pub)

    def send(self, traj, timeout=60.0):
        """Publish until the relay is matched, then once; return the relayed trajectory
        with as many points as traj (None after timeout)."""
        assert wait_for(lambda: self.pub.get_subscription_count() > 0, timeout=timeout)
        n0 = self.rec.count()
        self.pub.publish(traj)
        npts = len(traj.points)
        return wait_for(lambda: next((m for m in self.rec.snapshot()[0][n0:]
                                      if len(m.points) == npts), None), timeout=timeout)


@pytest.fixture
def relay(client, node):
    io = RelayIO(client, node.topic("trajectory_in"), node.topic("trajectory_out"))
    yield io
    io.close()


def _efforts(traj):
    return np.array([list(p.effort) for p in traj.points])


def test_relay_efforts_equal_id_service(client, node, relay, arm_model):
    from rbd_ros_interfaces.srv import InverseDynamicsTrajectory
    Q, V, A = random_states(1, 40)
    traj = make_trajectory(PERM_NAMES, Q, V, A)
    out = relay.send(traj)
    assert out is not None, node.log()
    assert list(out.joint_names) == PERM_NAMES
    for p_in, p_out in zip(traj.points, out.points, strict=True):  # effort filled, else equal
        assert list(p_out.positions) == list(p_in.positions)
        assert list(p_out.velocities) == list(p_in.velocities)
        assert list(p_out.accelerations) == list(p_in.accelerations)
        assert p_out.time_from_start == p_in.time_from_start
    req = InverseDynamicsTrajectory.Request(trajectory=make_trajectory(PERM_NAMES, Q, V, A))
    resp = client.call(InverseDynamicsTrajectory, node.topic("inverse_dynamics_trajectory"), req)
    assert resp.success, resp.message
    eff, ref = _efforts(out), _efforts(resp.trajectory)
    assert eff.shape == (40, 7)
    assert np.max(np.abs(eff - ref)) <= TOL * max(1.0, np.max(np.abs(ref)))
    # and both are the core's RNEA (request order -> model order)
    inv = np.argsort(PERM)
    tau = rbd.rnea(arm_model, Q[:, inv], V[:, inv], A[:, inv])[:, PERM]
    assert np.max(np.abs(eff - tau)) <= TOL * max(1.0, np.max(np.abs(tau)))


@pytest.mark.parametrize("field", ["accelerations", "velocities"])
def test_missing_derivatives_refused(client, node, relay, field):
    diag = client.record(DiagnosticArray, "/diagnostics")
    Q, V, A = random_states(2, 13)
    bad = make_trajectory(ARM_JOINTS, Q, V, A, missing=(field, 5))
    n0 = relay.rec.count()
    relay.pub.publish(bad)
    # sentinel: a good trajectory sent after the bad one is relayed (same reliable
    # channel, one subscription, processed in order), so the bad one was seen and dropped
    Q2, V2, A2 = random_states(3, 17)
    assert relay.send(make_trajectory(ARM_JOINTS, Q2, V2, A2)) is not None, node.log()
    assert not any(len(m.points) == 13 for m in relay.rec.snapshot()[0][n0:])
    assert wait_for(lambda: f"points[5].{field} missing" in node.log(), timeout=60), node.log()
    assert "refused, nothing relayed" in node.log()
    d = wait_for(lambda: (lambda s: s if s and int(s.get("trajectories_refused", 0)) >= 1
                          and int(s["trajectories_relayed"]) >= 1 else None)(
        diagnostics_of(diag, node.fqn)), timeout=60)
    assert d, diagnostics_of(diag, node.fqn)


def test_service_refusals_are_not_relayed(client, node, relay):
    """What the ID service refuses (unknown joint, NaN) is refused by the relay too."""
    Q, V, A = random_states(4, 11)
    names = list(ARM_JOINTS)
    names[2] = "elbow"
    relay.pub.publish(make_trajectory(names, Q, V, A))
    Q[3, 1] = np.nan
    relay.pub.publish(make_trajectory(ARM_JOINTS, Q, V, A))
    n0 = relay.rec.count()
    Q2, V2, A2 = random_states(5, 19)
    assert relay.send(make_trajectory(ARM_JOINTS, Q2, V2, A2)) is not None, node.log()
    assert not any(len(m.points) == 11 for m in relay.rec.snapshot()[0][n0:])
    assert wait_for(lambda: "unknown joint 'elbow'" in node.log() and "is nan" in node.log(),
                    timeout=60), node.log()


@pytest.mark.parametrize("service_process", [True, False])
def test_remap_to_controller_topic(client, service_process):
    """``-r ~/trajectory_out:=/joint_trajectory_controller/joint_trajectory`` (the JTC
    wiring); in the worker process (default) and in process."""
    ns = unique_ns("relayremap")
    jtc = f"/{ns}_jtc/joint_trajectory"
    n = NodeProcess(ns, {"urdf_file": "rbd_arm7", "service_process": service_process},
                    extra_args=["-r", f"~/trajectory_out:={jtc}"])
    io = RelayIO(client, n.topic("trajectory_in"), jtc)
    try:
        Q, V, A = random_states(6, 5)
        out = io.send(make_trajectory(ARM_JOINTS, Q, V, A))
        assert out is not None, n.log()
        tau = rbd.rnea(rbd.Model.from_urdf(read_arm_urdf()), Q, V, A)
        assert np.max(np.abs(_efforts(out) - tau)) <= TOL * max(1.0, np.max(np.abs(tau)))
    finally:
        io.close()
        assert n.alive(), n.log()
        n.stop()


def test_stream_keeps_flowing_during_10k_relay(client, node):
    """Joint states while another process sends a 10 000-point trajectory through the
    relay (in the node's worker process): inputs sent after the relay began are answered
    before the relayed trajectory arrived.  The inputs go one at a time, each once the one
    before is answered (ros_harness.PingPong: nothing queues, so a loaded machine slows
    the exchange but loses nothing); the relay's CPU work (2 MB (de)serialised in three
    processes) and a round trip (two wake-ups) are slowed alike by a busy machine, so no
    bound is on the wall clock.  Latency belongs to a benchmark."""
    rec = client.record(JointState, node.topic("gravity_torques_state"))
    pub = client.publisher(JointState, f"/{node.ns}/joint_states")
    q0 = np.linspace(-0.4, 0.4, 7)
    # (this process does not subscribe to ~/trajectory_out here: the relay fixture closes its
    # recorder after each test, and converting the 2 MB result would hold its GIL)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    caller = subprocess.Popen([sys.executable, os.path.abspath(__file__), node.fqn, "10000"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = caller.stdout.readline().strip()
        assert line == "ready", line
        with PingPong(pub, rec, q0) as pp:
            assert wait_for(lambda: len(pp.trips) >= 3, timeout=60), "the node does not answer"
            caller.stdin.write("go\n")
            caller.stdin.flush()
            result = json.loads(caller.stdout.readline())
            assert result["success"], result
            assert pp.wait_trip_after(result["t_end"]), (len(pp.trips), pp.lost)   # the sentinel
    finally:
        caller.wait(60)
    assert result["points"] == 10_000 and result["max_err"] <= TOL, result
    during = pp.within(result["t_start"], result["t_end"])
    print(f"10k-point relay {result['call_s'] * 1e3:.0f} ms; {len(during)} round trips inside it; "
          f"{len(pp.trips)} answered, {len(pp.lost)} lost in all")
    # a control path blocked for the relay answers none inside it
    assert len(during) >= 3, (len(during), result["call_s"])


def test_check_derivatives_names_the_first_bad_point():
    from rbd_ros.node.relay import check_derivatives
    Q, V, A = random_states(7, 4)
    assert check_derivatives(make_trajectory(ARM_JOINTS, Q, V, A)) is None
    why = check_derivatives(make_trajectory(ARM_JOINTS, Q, V, A, missing=("accelerations", 2)))
    assert why.startswith("trajectory.points[2].accelerations missing, expected 7"), why
    traj = make_trajectory(ARM_JOINTS, Q, V, A)
    traj.points[1].velocities = [0.0, 1.0]
    why = check_derivatives(traj)
    assert why.startswith("trajectory.points[1].velocities has 2 entries, expected 7"), why
    traj.points = []
    assert check_derivatives(traj) == "trajectory.points is empty"


def test_worker_argv_carries_the_relay_topics():
    from rbd_ros.node import protocol
    argv = protocol.worker_argv("/a/b", 2, True, python="py", relay=("/a/b/in", "/jtc/traj"))
    args = protocol.parse_argv(argv[3:])
    assert args.relay == ("/a/b/in", "/jtc/traj") and args.expect_model and args.threads == 2
    assert protocol.parse_argv(protocol.worker_argv("/a/b", 0, False)[3:]).relay is None
    ev = protocol.parse_event(protocol.event_relay(3, 1))
    assert ev == {"event": protocol.EVENT_RELAY, "relayed": 3, "refused": 1}
