"""The MuJoCo robot driver (``python -m rbd_ros.sim``) in a subprocess, talked to
from a real rclpy client.

In real time: joint_states rate and content, the arm sags with no command, stale
commands fall to zero effort, bad commands are dropped and counted.  In lock-step
(``lock_step``: commands stamped with the joint state they answer): each state is made
by the command for the one before it, exactly (a gravity command computed here holds
the arm), commands are matched by stamp, a missing one times out and is counted, a
pushed link's joint torques are J^T f (every step replayed offline), an unstable
simulation restarts."""
import os
import re
import threading
import time

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="sim driver: pip install '.[sim]'")

from builtin_interfaces.msg import Time  # noqa: E402
from ros_harness import (  # noqa: E402
    ARM_JOINTS,
    ARM_URDF,
    DiagnosticArray,
    Float64MultiArray,
    JointState,
    NodeProcess,
    unique_ns,
    wait_for,
)

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.sim.mujoco_model import JointMap, load_urdf, wrench_at_com  # noqa: E402

Q0 = [0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0]
RATE = 1000.0
TIMEOUT = 0.25
MODEL = rbd.Model.from_urdf(ARM_URDF)


@pytest.fixture(scope="module")
def sim():
    ns = unique_ns("sim")
    args = ["-p", "urdf_file:=rbd_arm7", "-p", f"initial_positions:={Q0}",
            "-p", "diagnostics_period:=0.2", "-p", "publish_description:=true",
            # above the default 0.05 s: this test client (Python, on a loaded 2-core machine)
            # can stall for 50-80 ms, and a stale command would drop the arm mid-hold
            "-p", f"command_timeout:={TIMEOUT}"]
    proc = NodeProcess(ns, extra_args=args, module_args=("-m", "rbd_ros.sim"))
    yield proc, f"/{ns}"
    rc = proc.stop()
    log = proc.log()
    assert rc == 0, f"sim driver exited with {rc}:\n{log}"
    assert "Traceback" not in log, log
    print(log[-600:])


class Responder:
    """Answers each joint_states message with a command computed from it (the closed loop)."""

    def __init__(self, client, ns):
        self.pub = client.publisher(Float64MultiArray, f"{ns}/effort_command")
        self.lock = threading.Lock()
        self.law = None            # f(q, v) -> tau, or None: send nothing
        self.states = []           # (receive time, q, v, effort)
        self.last_sent = None      # wall-clock time of the last command published
        # keep last 1: always answer the newest state (a backlog would delay the loop)
        client.node.create_subscription(JointState, f"{ns}/joint_states", self._on_state, 1)

    def _on_state(self, msg):
        now = time.monotonic()
        q = np.asarray(msg.position)
        v = np.asarray(msg.velocity)
        # the command is published under the lock, so that once set_law(None) returns no
        # command is on its way from this callback (CI once saw one published after it:
        # the callback had read the old law, then the process stalled)
        with self.lock:
            self.states.append((now, q, v, np.asarray(msg.effort), list(msg.name),
                                msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec))
            if self.law is not None:
                self.pub.publish(Float64MultiArray(data=[float(x) for x in self.law(q, v)]))
                self.last_sent = time.time()

    def set_law(self, law):
        """From now on answer with ``law`` (None: send nothing); returns after any command
        of the previous law has been published."""
        with self.lock:
            self.law = law

    def latest(self):
        with self.lock:
            return self.states[-1]

    def since(self, t):
        with self.lock:
            return [s for s in self.states if s[0] >= t]


@pytest.fixture(scope="module")
def loop(sim, client):
    proc, ns = sim
    r = Responder(client, ns)
    assert wait_for(lambda: len(r.states) > 100, timeout=60), proc.log()
    return r


def test_joint_states_rate_and_content(loop, sim, client):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    proc, ns = sim
    # a deep queue of its own: the responder keeps only the newest state
    rec = client.record(JointState, f"{ns}/joint_states",
                        QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE))
    assert wait_for(lambda: rec.count() > 10, timeout=60)
    n0 = rec.count()
    time.sleep(2.0)
    got = rec.snapshot()[0][n0:]
    assert got, "no joint_states"
    assert all(list(m.name) == ARM_JOINTS for m in got)
    assert all(len(m.position) == len(m.velocity) == len(m.effort) == 7 for m in got)
    stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in got])
    assert np.all(np.diff(stamps) >= 0)
    # the period by the driver's own stamps (what arrives here can lag behind under load);
    # the median: a stall of the driver (it resyncs to the clock) makes a few long ones
    span = stamps[-1] - stamps[0]
    period = float(np.median(np.diff(stamps)))
    print(f"joint_states: {len(got)} in {span:.3f} s of stamps; median period {period * 1e3:.3f} ms")
    assert 0.95 / RATE < period < 1.05 / RATE


def test_arm_sags_without_command(loop):
    # nobody has commanded yet: the arm has been falling from Q0 since the driver started
    # (the first states the client gets come after discovery); from rest: the stale test
    first = loop.states[0]
    assert np.all(first[3] == 0.0)
    later = [s for s in loop.states if s[0] >= first[0] + 0.5]
    assert later and np.all(later[0][3] == 0.0)
    assert float(np.max(np.abs(later[0][1] - np.asarray(Q0)))) > 0.3
    assert float(np.max(np.abs(later[0][1] - first[1]))) > 0.1


def _settle_law(q_target, omega=10.0, zeta=1.0):
    """g(q) + H(q)(w^2 (q_t - q) - 2 zeta w v): brings the arm to rest at q_target."""
    q_target = np.asarray(q_target, dtype=float)

    def law(q, v):
        H = rbd.crba(MODEL, q)
        return rbd.gravity(MODEL, q) + H @ (omega ** 2 * (q_target - q) - 2 * zeta * omega * v)
    return law


def _gravity_law(q, v):
    return rbd.gravity(MODEL, q)


def test_stale_command_falls_to_zero_effort(loop):
    loop.set_law(_settle_law(Q0))          # near Q0, where gravity loads the shoulder
    wait_for(lambda: float(np.max(np.abs(loop.latest()[1] - np.asarray(Q0)))) < 0.05, timeout=60)
    loop.set_law(_gravity_law)
    time.sleep(0.3)
    # sentinel: the gravity effort is being applied
    assert wait_for(lambda: float(np.max(np.abs(loop.latest()[3]))) > 30.0, timeout=60)
    loop.set_law(None)
    t = time.monotonic()
    assert wait_for(lambda: any(np.all(s[3] == 0.0) for s in loop.since(t)), timeout=60)
    got = loop.since(t)
    first_zero = next(i for i, s in enumerate(got) if np.all(s[3] == 0.0))
    # the arm, at rest before, falls once the effort is zero (offline, test_oracle_mujoco's
    # model: 0.08 rad after 0.1 s, 0.93 after 0.3 s); eventually: a loaded machine can slow
    # the driver below real time (it resyncs to the clock)
    q_zero = got[first_zero][1]
    assert wait_for(lambda: float(np.max(np.abs(loop.latest()[1] - q_zero))) > 0.3, timeout=60)
    got = loop.since(t)
    assert all(np.all(s[3] == 0.0) for s in got[first_zero:]), "effort came back without commands"
    stamps = np.array([s[5] for s in got])
    stale_after = stamps[first_zero] - loop.last_sent
    print(f"zero effort {stale_after:.3f} s after the last command was sent")
    # not long before the timeout, counted from the last command this client actually
    # sent (set_law(None) can come a client stall after it: measured 70 ms once in CI)
    assert 0.3 * TIMEOUT < stale_after < TIMEOUT + 1.0
    # the arm, at rest before, falls once the effort is zero
    t_zero = stamps[first_zero]
    sag = {dt: float(np.max(np.abs(got[int(np.searchsorted(stamps, t_zero + dt))][1] - got[first_zero][1])))
           for dt in (0.1, 0.3) if stamps[-1] >= t_zero + dt}
    print("sag from rest after zero effort (s: rad):", sag)


def _diag(rec, fqn):
    for arr in reversed(rec.snapshot()[0]):
        for st in arr.status:
            if st.name == fqn:
                return {kv.key: kv.value for kv in st.values}
    return None


def test_bad_commands_dropped_and_counted(loop, sim, client):
    proc, ns = sim
    diag = client.record(DiagnosticArray, "/diagnostics")
    fqn = f"{ns}/sim_driver"
    assert wait_for(lambda: _diag(diag, fqn), timeout=60)
    d0 = _diag(diag, fqn)
    good1 = np.linspace(0.1, 0.7, 7)
    good2 = -good1
    # matched and listening: a good command shows up in the effort field
    loop.set_law(lambda q, v: good1)
    assert wait_for(lambda: np.array_equal(loop.latest()[3], good1),
                    timeout=60)
    loop.set_law(None)
    bad = [[1.0] * 6, [1.0] * 8, [], [1.0, 2.0, float("nan"), 4.0, 5.0, 6.0, 7.0],
           [1.0, 2.0, 3.0, float("inf"), 5.0, 6.0, 7.0]]
    t = time.monotonic()
    for b in bad:
        loop.pub.publish(Float64MultiArray(data=b))
    loop.pub.publish(Float64MultiArray(data=list(good2)))     # the sentinel after them
    assert wait_for(lambda: any(np.array_equal(s[3], good2) for s in loop.since(t)), timeout=60)
    assert all(np.all(np.isfinite(s[3])) and not np.array_equal(s[3][:3], [1.0, 2.0, 3.0])
               for s in loop.since(t))
    want_len = int(d0["dropped_wrong_length"]) + 3
    want_nf = int(d0["dropped_not_finite"]) + 2
    assert wait_for(lambda: int(_diag(diag, fqn)["dropped_wrong_length"]) == want_len
                    and int(_diag(diag, fqn)["dropped_not_finite"]) == want_nf, timeout=60), _diag(diag, fqn)
    d = _diag(diag, fqn)
    print("diagnostics:", d)
    assert int(d["commands_in"]) > int(d0["commands_in"])
    assert proc.alive()
    assert "effort command dropped" in proc.log()


def test_robot_description_published(sim, client):
    from ros_harness import QOS_LATCHED
    from std_msgs.msg import String
    proc, ns = sim
    rec = client.record(String, f"{ns}/robot_description", QOS_LATCHED)
    assert wait_for(lambda: rec.count() > 0, timeout=60)
    assert rec.latest().data.strip() == open(ARM_URDF).read().strip()


def test_joint_subset_order_and_publish_rate(client):
    """joints = a subset in another order: states and commands use it (a command may name
    them in any order); publish_rate thins the states (lock-step: the stamps of the
    published states are exactly 10 steps apart).  The driver runs in this process."""
    import rclpy
    from rclpy.context import Context

    from rbd_ros.sim.simulator import SimDriver
    ns = unique_ns("simsub")
    ctx = Context()
    rclpy.init(context=ctx, args=["x"])
    drv = SimDriver(context=ctx, cli_args=[
        "--ros-args", "-r", f"__ns:=/{ns}", "-p", "urdf_file:=rbd_arm7", "-p", "joints:=['joint7', 'joint2']",
        "-p", "initial_positions:=[0.3, 0.6]", "-p", "publish_rate:=100.0", "-p", "lock_step:=true"])
    th = threading.Thread(target=drv.run, daemon=True)
    try:
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        rec = client.record(JointState, f"/{ns}/joint_states",
                            QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
        pub = client.publisher(JointState, f"/{ns}/effort_command_state")
        th.start()
        assert wait_for(lambda: rec.count() > 5, timeout=60)
        msgs = rec.snapshot()[0]
        assert all(list(m.name) == ["joint7", "joint2"] for m in msgs)
        assert np.all(np.diff([_ns_stamp(m) for m in msgs]) == 10_000_000)     # 100 Hz of 1 kHz
        sent = np.array([-3.5, 0.25])                  # for joint2, joint7: the other order

        def answered():
            m = rec.latest()
            if np.array_equal(m.effort, sent[::-1]):
                return True
            cmd = JointState(name=["joint2", "joint7"], effort=list(sent))
            cmd.header.stamp = m.header.stamp           # answers the latest state
            pub.publish(cmd)
            return False
        assert wait_for(answered, timeout=60, period=0.05)
    finally:
        drv.stop()
        th.join(10)
        drv.destroy()
        rclpy.shutdown(context=ctx)


@pytest.mark.parametrize("args, message", [
    (["-p", "urdf_file:=rbd_arm7", "-p", "integrator:=verlet"], "integrator: expected one of"),
    (["-p", "urdf_file:=/no/such.urdf"], "urdf_file: no such file"),
    (["-p", "urdf_file:=rbd_arm7", "-p", "initial_positions:=[0.1, 0.2]"],
     "initial_positions: expected 7 finite numbers"),
    (["-p", "urdf_file:=rbd_arm7", "-p", "joints:=['joint1', 'elbow']"], "unknown joints ['elbow']"),
    (["-p", "urdf_file:=rbd_arm7", "-p", "lock_step_timeout:=0.0"], "lock_step_timeout: expected a finite number"),
])
def test_bad_parameters_refused_with_reason(args, message):
    """The driver refuses to start, naming the parameter (built in this process: the exit
    code and the log line of a refusal are the next test's)."""
    import rclpy
    from rclpy.context import Context

    from rbd_ros.sim.simulator import SimDriver
    ctx = Context()
    rclpy.init(context=ctx, args=["x"])
    try:
        with pytest.raises(ValueError, match=re.escape(message)):
            SimDriver(context=ctx, node_name=f"bad_{unique_ns('x')}", cli_args=["--ros-args", *args])
    finally:
        rclpy.shutdown(context=ctx)


def test_bad_parameter_exits_2_with_the_reason():
    proc = NodeProcess(unique_ns("simbad"), extra_args=["-p", "urdf_file:=rbd_arm7", "-p", "rate:=0.0"],
                       module_args=("-m", "rbd_ros.sim"))
    try:
        proc.proc.wait(60)
    finally:
        rc = proc.stop()
    assert rc == 2, proc.log()
    assert "rate: expected a positive number" in proc.log() and "Traceback" not in proc.log(), proc.log()


def test_launch_file_static():
    """ROS launch is not on PyPI: check the file against the driver's parameters and topics."""
    import ast
    import re
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = open(os.path.join(root, "launch", "sim.launch.py")).read()
    tree = ast.parse(src)
    assert "generate_launch_description" in [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    node_call, = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Name) and n.func.id == "Node"]
    kw = {k.arg: k.value for k in node_call.keywords}
    assert ast.literal_eval(kw["package"]) == "rbd_ros"
    assert ast.literal_eval(kw["executable"]) == "sim_driver"
    assert ast.literal_eval(kw["name"]) == "sim_driver"
    sim_src = {f: open(os.path.join(root, "rbd_ros", "sim", f)).read()
               for f in ("params.py", "simulator.py", "driver.py")}
    declared = set(re.findall(r'declare\(\s*"(\w+)"', sim_src["params.py"]))
    params, = kw["parameters"].elts
    used = {ast.literal_eval(k) for k in params.keys}
    assert used and used <= declared, used - declared
    remapped = {ast.literal_eval(t.elts[0]) for t in kw["remappings"].elts}
    assert remapped == {"joint_states", "effort_command", "effort_command_state"}
    assert all(f'"{t}"' in sim_src["simulator.py"] for t in remapped)
    setup_src = open(os.path.join(root, "setup.py")).read()
    assert "sim_driver = rbd_ros.sim.driver:main" in setup_src


# ----------------------------------------------------------------------------- lock-step

LS_COMMAND_TIMEOUT = 0.01      # s of simulated time: the lock-step driver's command_timeout


@pytest.fixture(scope="module")
def lsim(sim, loop):
    """The same driver switched to lock-step at run time (the real-time tests come first),
    with command_timeout LS_COMMAND_TIMEOUT."""
    loop.set_law(None)              # (the real-time responder: lock-step ignores effort_command)
    yield sim


def _ns_stamp(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


class LockResponder(Responder):
    """Answers each joint state with a command stamped with its stamp (lock-step), on
    ``effort_command_state`` (sensor_msgs/JointState); ``sent``: stamp (int ns) -> effort."""

    def __init__(self, client, ns):
        self.pub = client.publisher(JointState, f"{ns}/effort_command_state")
        self.lock = threading.Lock()
        self.law = None
        self.states = []
        self.sent = {}
        self.last_sent = None
        client.node.create_subscription(JointState, f"{ns}/joint_states", self._on_state, 10)

    def _on_state(self, msg):
        now = time.monotonic()
        q, v = np.asarray(msg.position), np.asarray(msg.velocity)
        with self.lock:
            self.states.append((now, q, v, np.asarray(msg.effort), list(msg.name), _ns_stamp(msg)))
            if self.law is not None:
                self.send(msg.header.stamp, list(msg.name), self.law(q, v))

    def send(self, stamp, names, effort):
        out = JointState(name=names, effort=[float(x) for x in effort])
        out.header.stamp = stamp
        self.pub.publish(out)
        self.sent[_ns_stamp(out)] = np.array(out.effort)
        self.last_sent = time.time()


@pytest.fixture(scope="module")
def lloop(lsim, client):
    from types import SimpleNamespace

    from ros_harness import set_params
    proc, ns = lsim
    r = LockResponder(client, ns)
    r.set_law(_settle_law(Q0))
    assert wait_for(lambda: r.pub.get_subscription_count() > 0, timeout=60)     # it will be heard
    driver = SimpleNamespace(fqn=f"{ns}/sim_driver")
    assert all(x.successful for x in set_params(client, driver, lock_step=True,
                                                  command_timeout=LS_COMMAND_TIMEOUT))
    assert wait_for(lambda: len(r.sent) > 300, timeout=60), proc.log()
    return r


def _at_rest(loop, vtol=1e-4, timeout=120.0):
    return wait_for(lambda: float(np.max(np.abs(loop.latest()[2]))) < vtol, timeout=timeout)


def test_lock_step_each_state_is_made_by_the_command_for_the_one_before(lloop, lsim, client):
    """Stamps step by exactly one period, and the effort that made state k+1 is, bit for
    bit, the command this client computed from state k: here g(q_k), which holds the arm
    (rbd_ros's g(q) equals MuJoCo's: from rest to 1e-7 rad/s, a drift of ~1e-7 rad)."""
    loop = lloop
    loop.set_law(_settle_law(Q0))
    assert _at_rest(loop, vtol=1e-7), loop.latest()[2]
    loop.set_law(_gravity_law)
    t0 = loop.latest()[5]
    assert wait_for(lambda: loop.latest()[5] > t0 + 1_000_000_000, timeout=60)   # 1 s simulated
    with loop.lock:
        got = [s for s in loop.states if s[5] > t0 + 10_000_000]   # (the law switch is in effect)
        sent = dict(loop.sent)
    stamps = np.array([s[5] for s in got])
    q = np.array([s[1] for s in got])
    print(f"lock-step gravity hold: {len(got)} states, drift {np.max(np.abs(q - q[0])):.2e} rad")
    assert len(got) > 900
    assert np.all(np.diff(stamps) == 1_000_000)                 # every state, 1 ms apart
    for a, b in zip(got[:-1], got[1:]):
        assert np.array_equal(b[3], sent[a[5]]), (b[5], b[3], sent.get(a[5]))
    assert float(np.max(np.abs(q - q[0]))) < 1e-6       # (the arm was at rest to 1e-7 rad/s)
    assert float(np.max(np.abs(got[-1][3][1]))) > 30.0         # the shoulder is loaded


def test_lock_step_matches_commands_by_stamp_and_times_out(lloop, lsim, client):
    """Silent controller: a command stamped for another state and one naming other joints
    are not applied (counted); after lock_step_timeout the driver steps with the last
    command while it is younger than command_timeout of simulated time, then with zero
    effort; a command with the right stamp is applied again (the sentinel)."""
    from types import SimpleNamespace

    from ros_harness import set_params
    proc, ns = lsim
    loop = lloop
    driver = SimpleNamespace(fqn=f"{ns}/sim_driver")
    diag = client.record(DiagnosticArray, "/diagnostics")
    fqn = f"{ns}/sim_driver"
    loop.set_law(_gravity_law)
    assert wait_for(lambda: _diag(diag, fqn), timeout=60)
    d0 = _diag(diag, fqn)
    assert not set_params(client, driver, lock_step_timeout=0.0)[0].successful
    assert set_params(client, driver, lock_step_timeout=0.05)[0].successful
    try:
        loop.set_law(None)
        with loop.lock:
            last = max(loop.sent)                        # the last state answered ...
            held = loop.sent[last]                       # ... and its command
        time.sleep(0.1)
        waiting = loop.latest()                          # a state the driver waits on (or did)
        stamp = Time(sec=waiting[5] // 10**9, nanosec=waiting[5] % 10**9 + 1)
        loop.send(stamp, ARM_JOINTS, [1.0] * 7)          # not its answer (+1 ns)
        loop.send(Time(sec=waiting[5] // 10**9, nanosec=waiting[5] % 10**9), ARM_JOINTS[:6], [2.0] * 6)
        n_zero = int(round(LS_COMMAND_TIMEOUT / 0.001)) + 5
        assert wait_for(lambda: sum(np.all(s[3] == 0.0) for s in loop.since(0.0)[-n_zero:]) >= 5, timeout=60)
        after = [s for s in loop.since(0.0) if s[5] > last]
        kinds = ["held" if np.array_equal(s[3], held) else "zero" if np.all(s[3] == 0.0) else "other"
                 for s in after]
        print("after the silence:", kinds[:20])
        # the state after the last answered one is made by its command; then (timeouts) that
        # command while younger than command_timeout (simulated), then zero; never the others
        n_held = kinds.index("zero")
        assert set(kinds[:n_held]) == {"held"} and set(kinds[n_held:]) == {"zero"}, kinds
        assert n_held == int(round(LS_COMMAND_TIMEOUT / 0.001)), n_held
        assert wait_for(lambda: int(_diag(diag, fqn)["lock_step_timeouts"])
                        >= int(d0["lock_step_timeouts"]) + len(after) - 1, timeout=60), _diag(diag, fqn)
        d = _diag(diag, fqn)
        assert int(d["lock_step_unmatched"]) == int(d0["lock_step_unmatched"]) + 1
        assert int(d["dropped_wrong_joints"]) == int(d0["dropped_wrong_joints"]) + 1
        # listening: the command for the state it waits on now is applied at once
        last = loop.latest()
        sentinel = np.linspace(0.5, 3.5, 7)
        loop.send(Time(sec=last[5] // 10**9, nanosec=last[5] % 10**9), ARM_JOINTS, sentinel)
        assert wait_for(lambda: any(np.array_equal(s[3], sentinel) for s in loop.since(0.0)[-50:]), timeout=60)
        assert proc.alive() and "effort command dropped: joints" in proc.log()
    finally:
        assert set_params(client, driver, lock_step_timeout=1.0)[0].successful
        loop.set_law(_settle_law(Q0))


def test_actuators_clamp_at_the_limits_and_count():
    from rbd_ros.sim.actuators import Actuators
    act = Actuators([10.0, 2.0, np.inf])
    out = np.zeros(3)
    act.apply([5.0, -2.5, 1e9], out)
    assert out.tolist() == [5.0, -2.0, 1e9] and act.clamped.tolist() == [0, 1, 0] and act.clamped_steps == 1
    act.apply([10.0, 1.0, 0.0], out)             # at the limit: saturated, counted
    assert out.tolist() == [10.0, 1.0, 0.0] and act.clamped.tolist() == [1, 1, 0] and act.clamped_steps == 2
    act.apply([1.0, 1.0, 1.0], out)
    assert act.clamped_steps == 2
    assert act.counts(["a", "b", "c"]) == {"clamped_steps": 2, "clamped_steps/a": 1, "clamped_steps/b": 1,
                                           "clamped_steps/c": 0}
    act.clamp = False
    act.apply([50.0, -50.0, 0.0], out)
    assert out.tolist() == [50.0, -50.0, 0.0] and act.clamped_steps == 2
    for bad in ([1.0, 0.0], [np.nan], [-1.0]):
        with pytest.raises(ValueError, match="effort limits"):
            Actuators(bad)


def test_lock_step_efforts_clamped_at_the_urdf_limits(lloop, lsim, client):
    """A command beyond the URDF's limits (87 N m shoulder, 12 N m wrist) is applied clamped,
    and /diagnostics counts the steps per joint; with clamp_effort off (at run time) it is
    applied as sent."""
    from types import SimpleNamespace

    from ros_harness import set_params
    proc, ns = lsim
    loop = lloop
    driver = SimpleNamespace(fqn=f"{ns}/sim_driver")
    diag = client.record(DiagnosticArray, "/diagnostics")
    fqn = f"{ns}/sim_driver"
    loop.set_law(_settle_law(Q0))
    assert _at_rest(loop, vtol=1e-3)      # (settling from far away can saturate the shoulders)
    n = diag.count()                      # a status sent after that
    assert wait_for(lambda: diag.count() > n + 1 and _diag(diag, fqn), timeout=60)
    big = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 30.0, -40.0])  # joint6, joint7 beyond 12 N m

    def law(q, v):
        return _gravity_law(q, v) + big
    d0 = _diag(diag, fqn)
    t = time.monotonic()
    loop.set_law(law)
    assert wait_for(lambda: len(loop.since(t)) > 30, timeout=60)
    with loop.lock:                  # (the responder appends and answers under this lock)
        sent = dict(loop.sent)
        got = [s for s in loop.states if s[0] >= t]
    loop.set_law(_settle_law(Q0))
    # the states made by this law's commands (|joint6| ~31 N m; the settle law's ~0.7)
    made = [(s, sent[a[5]]) for a, s in zip(got[:-1], got[1:]) if a[5] in sent and abs(sent[a[5]][5]) > 12.0]
    assert len(made) > 20
    limits = MODEL.effort_limit
    assert all(np.array_equal(s[3], np.clip(cmd, -limits, limits)) for s, cmd in made)
    n_over = np.sum([np.abs(cmd) >= limits for _, cmd in made], axis=0)
    assert n_over[5] == n_over[6] == len(made) and n_over[:5].sum() == 0
    assert wait_for(lambda: int(_diag(diag, fqn)["clamped_steps/joint7"])
                    >= int(d0["clamped_steps/joint7"]) + n_over[6], timeout=60)
    d = _diag(diag, fqn)
    print("clamped steps:", {k: v for k, v in d.items() if k.startswith("clamped")})
    assert all(int(d[f"clamped_steps/joint{i}"]) == int(d0[f"clamped_steps/joint{i}"]) for i in range(1, 6))
    assert int(d["clamped_steps"]) >= int(d0["clamped_steps"]) + max(n_over)
    # clamping off: applied as sent
    assert set_params(client, driver, clamp_effort=False)[0].successful
    try:
        t = time.monotonic()
        loop.set_law(law)
        assert wait_for(lambda: any(np.abs(s[3][6]) > 12.0 for s in loop.since(t)), timeout=60)
    finally:
        loop.set_law(_settle_law(Q0))
        assert set_params(client, driver, clamp_effort=True)[0].successful
    assert not set_params(client, driver, clamp_effort=1.0)[0].successful


def test_unstable_simulation_restarts_from_the_initial_pose(lloop, lsim, client):
    from types import SimpleNamespace

    from ros_harness import set_params
    proc, ns = lsim
    loop = lloop
    diag = client.record(DiagnosticArray, "/diagnostics")
    fqn = f"{ns}/sim_driver"
    assert wait_for(lambda: _diag(diag, fqn), timeout=60)
    assert int(_diag(diag, fqn)["sim_resets"]) == 0
    driver = SimpleNamespace(fqn=fqn)
    assert set_params(client, driver, clamp_effort=False)[0].successful     # (the limits would hold it)
    t = time.monotonic()
    try:
        loop.set_law(lambda q, v: np.full(7, 1e12))              # finite, accepted, far too large
        assert wait_for(lambda: int(_diag(diag, fqn)["sim_resets"]) > 0, timeout=60), _diag(diag, fqn)
    finally:
        loop.set_law(_gravity_law)
        assert set_params(client, driver, clamp_effort=True)[0].successful
    time.sleep(0.3)
    got = loop.since(t)
    assert all(np.all(np.isfinite(s[1])) and np.all(np.isfinite(s[2])) for s in got)
    assert any(np.all(s[3] == 1e12) for s in got)              # the command was applied ...
    near = [float(np.max(np.abs(s[1] - np.asarray(Q0)))) for s in got]
    assert min(near) < 0.02, near[:20]                        # ... and the arm restarted at Q0
    assert proc.alive() and "became unstable" in proc.log()
    loop.set_law(_settle_law(Q0))


# ----------------------------------------------------------------------------- ~/apply_wrench

def _stamp(s):
    return s.sec + 1e-9 * s.nanosec


def _replay(mjm, jm, a, b, wrench=None, body=-1, qfrc_extra=None):
    """MuJoCo's step from joint state ``a`` with the effort ``b`` reports (the torque of the
    step that produced b), optionally with ``xfrc_applied`` = ``wrench`` on ``body`` or
    ``qfrc_extra`` added to the joint torques; returns (qpos, qvel) in model order."""
    d = mujoco.MjData(mjm)
    d.qpos[jm.model_qpos] = a.position
    d.qvel[jm.model_dof] = a.velocity
    mujoco.mj_forward(mjm, d)
    d.qfrc_applied[jm.model_dof] = np.asarray(b.effort) + (0.0 if qfrc_extra is None else qfrc_extra)
    if wrench is not None:
        d.xfrc_applied[body] = wrench_at_com(d, body, wrench[:3], wrench[3:])
    mujoco.mj_step(mjm, d)
    return d.qpos[jm.model_qpos].copy(), d.qvel[jm.model_dof].copy()


def test_apply_wrench_causes_the_jacobian_transpose_torques(lloop, lsim, client):
    """A 10 N push (plus a torque) on the flange while the arm is held: every step of the
    recorded joint states is replayed in an offline MuJoCo: before the push and after it
    the step without any wrench reproduces the next state exactly; during it, the joint
    torques the push caused equal J^T [f; tau] with J from mj_jacBody at the flange origin
    (not the driver's conversion; J averaged over the step's two ends); ~/applied_wrench's
    stamps bound the steps exactly."""
    from types import SimpleNamespace

    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from ros_harness import QOS_LATCHED, set_params

    proc, ns = lsim
    loop = lloop
    node = SimpleNamespace(fqn=f"{ns}/sim_driver")
    # settable at run time, checked
    assert not set_params(client, node, wrench_duration=-1.0)[0].successful
    assert set_params(client, node, wrench_duration=0.25)[0].successful
    law = _settle_law(Q0)
    loop.set_law(law)
    assert wait_for(lambda: float(np.max(np.abs(loop.latest()[2]))) < 1e-3, timeout=60)
    rec = client.record(JointState, f"{ns}/joint_states",
                        QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE))
    qos_applied = QoSProfile(depth=10, reliability=QOS_LATCHED.reliability, durability=QOS_LATCHED.durability)
    applied = client.record(WrenchStamped, f"{ns}/sim_driver/applied_wrench", qos_applied)
    pub = client.publisher(WrenchStamped, f"{ns}/sim_driver/apply_wrench")
    assert wait_for(lambda: rec.count() > 100 and pub.get_subscription_count() > 0, timeout=60)
    force, torque = np.array([10.0, -4.0, 3.0]), np.array([0.0, 0.5, -0.3])
    msg = WrenchStamped()
    msg.header.frame_id = "flange"
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = force
    msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = torque
    pub.publish(msg)
    assert wait_for(lambda: applied.count() >= 2, timeout=60), proc.log()[-2000:]
    start, end = applied.snapshot()[0][:2]
    # this client takes the states from its queue later
    assert wait_for(lambda: _stamp(rec.latest().header.stamp) > _stamp(end.header.stamp) + 0.15, timeout=60)
    assert start.header.frame_id == end.header.frame_id == "flange"
    assert [start.wrench.force.x, start.wrench.force.y, start.wrench.force.z] == list(force)
    assert [start.wrench.torque.x, start.wrench.torque.y, start.wrench.torque.z] == list(torque)
    assert [end.wrench.force.x, end.wrench.torque.y] == [0.0, 0.0]
    t_start, t_end = _stamp(start.header.stamp), _stamp(end.header.stamp)
    states = rec.snapshot()[0]
    stamps = [_stamp(m.header.stamp) for m in states]
    k0, k1 = stamps.index(t_start), stamps.index(t_end)
    print(f"push on for {k1 - k0} states ({t_end - t_start:.3f} s of simulated time)")
    assert k1 - k0 == 250                          # wrench_duration 0.25 s at 1 kHz

    mjm, model = load_urdf(ARM_URDF, timestep=1.0 / RATE, integrator="rk4")
    jm = JointMap(mjm, model)
    body = mjm.body("flange").id
    jacp, jacr = np.zeros((3, mjm.nv)), np.zeros((3, mjm.nv))
    quiet, exact, rel = [], [], []
    def off(replayed, b):      # max difference in position and velocity from the recorded state
        return max(float(np.max(np.abs(replayed[0] - np.asarray(b.position)))),
                   float(np.max(np.abs(replayed[1] - np.asarray(b.velocity)))))

    for k in range(max(1, k0 - 100), min(len(states), k1 + 100)):
        a, b = states[k - 1], states[k]
        none = _replay(mjm, jm, a, b)
        if not (k0 <= k < k1):
            quiet.append(off(none, b))
            continue
        exact.append(off(_replay(mjm, jm, a, b, np.concatenate([force, torque]), body), b))
        jtf = 0.0
        for state in (a, b):     # J^T f at both ends of the step, averaged (the arm moves)
            d = mujoco.MjData(mjm)
            d.qpos[jm.model_qpos] = state.position
            mujoco.mj_forward(mjm, d)
            mujoco.mj_jacBody(mjm, d, jacp, jacr, body)
            jtf = jtf + 0.5 * (jacp.T @ force + jacr.T @ torque)[jm.model_dof]
        caused = np.asarray(b.velocity) - none[1]          # what the push did in this step
        rel.append(off(_replay(mjm, jm, a, b, qfrc_extra=jtf), b) / float(np.max(np.abs(caused))))
    print(f"replay: no wrench outside the push {max(quiet):.2e} rad/s, with the wrench inside "
          f"{max(exact):.2e} rad/s; J^T f vs the push's effect: max relative {max(rel):.2e}")
    assert len(quiet) > 150 and len(rel) == 250
    assert max(quiet) <= 1e-9
    assert max(exact) <= 1e-9
    # 1e-3, growing with the arm's speed: MuJoCo holds xfrc_applied (force and moment at the
    # COM, world axes) constant through a step's RK4 stages while the body turns, so the
    # moment of the force about the moving flange origin is frozen at its start value
    # (the flange body's MuJoCo COM is 0.107 m from its origin)
    assert max(rel) <= 5e-3
    # a sentinel: inside the push, the step without the wrench does not reproduce the state
    assert min(off(_replay(mjm, jm, states[k - 1], states[k]), states[k]) for k in range(k0, k1)) > 1e-6
    loop.set_law(law)


def test_apply_wrench_bad_messages_dropped(loop, sim, client):
    from geometry_msgs.msg import WrenchStamped
    proc, ns = sim
    diag = client.record(DiagnosticArray, "/diagnostics")
    fqn = f"{ns}/sim_driver"
    assert wait_for(lambda: _diag(diag, fqn), timeout=60)
    n0 = int(_diag(diag, fqn)["wrenches_dropped"])
    pub = client.publisher(WrenchStamped, f"{ns}/sim_driver/apply_wrench")
    assert wait_for(lambda: pub.get_subscription_count() > 0, timeout=60)
    for frame, fx in (("no_such_link", 1.0), ("link0", 1.0), ("", 1.0), ("flange", float("nan"))):
        m = WrenchStamped()
        m.header.frame_id = frame
        m.wrench.force.x = fx
        pub.publish(m)
    assert wait_for(lambda: int(_diag(diag, fqn)["wrenches_dropped"]) == n0 + 4, timeout=60), _diag(diag, fqn)
    assert "apply_wrench dropped: frame_id: 'no_such_link' is not a link" in proc.log() and proc.alive()
    # (the warning is throttled to one a second: the messages of the others, test_wrench_schedule_*)


def test_wrench_schedule_refuses_bad_requests_by_name():
    from rbd_ros.sim.wrench import WrenchSchedule
    mjm, model = load_urdf(ARM_URDF, timestep=1e-3)
    ws = WrenchSchedule(mjm, model, 1000.0)
    for args, message in [(("", (1, 0, 0), (0, 0, 0), 1.0), "frame_id: empty"),
                          (("elbow", (1, 0, 0), (0, 0, 0), 1.0), "frame_id: 'elbow' is not a link"),
                          (("link0", (1, 0, 0), (0, 0, 0), 1.0), "frame_id: link 'link0' is fixed to the world"),
                          (("world", (1, 0, 0), (0, 0, 0), 1.0), "is fixed to the world"),
                          (("flange", (1, float("inf"), 0), (0, 0, 0), 1.0), "wrench: expected finite numbers"),
                          (("flange", (1, 0, 0), (0, 0, 0), 0.0), "wrench_duration: expected a finite number")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            ws.request(*args)


def test_wrench_schedule_steps():
    """Start, duration in steps, replacement, the zero wrench that ends it, and the at-COM form."""
    from rbd_ros.sim.wrench import END, START, WrenchSchedule
    mjm, model = load_urdf(ARM_URDF, timestep=1e-3)
    d = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, d)
    ws = WrenchSchedule(mjm, model, 1000.0)
    fl, l5 = mjm.body("flange").id, mjm.body("link5").id
    assert ws.before_step(d) is None and not d.xfrc_applied.any()
    ws.request("flange", (10, 0, 0), (0, 0, 1), 0.003)
    events = [ws.before_step(d) for _ in range(5)]
    assert events == [START, None, None, END, None]
    assert not d.xfrc_applied.any()
    ws.request("flange", (10, 0, 0), (0, 0, 1), 1.0)
    assert ws.before_step(d) == START
    lever = d.xpos[fl] - d.xipos[fl]
    assert np.allclose(d.xfrc_applied[fl], [10, 0, 0, *(np.array([0, 0, 1.0]) + np.cross(lever, [10, 0, 0]))])
    ws.request("link5", (0, 5, 0), (0, 0, 0), 1.0)            # replaces it
    assert ws.before_step(d) == START
    assert not d.xfrc_applied[fl].any() and d.xfrc_applied[l5][1] == 5.0
    ws.request("link5", (0, 0, 0), (0, 0, 0), 1.0)            # a zero wrench ends it
    assert ws.before_step(d) == END and not d.xfrc_applied.any() and ws.active is None
    assert ws.applied == 3


def test_a_command_is_as_old_as_its_arrival():
    """The driver ages a command from its arrival in the middleware (MessageInfo's
    received_timestamp), so one that waited in the driver's queue is not fresh.  Called
    in process on a driver that is built but not running."""
    import rclpy
    from rclpy.context import Context

    from rbd_ros.sim.simulator import SimDriver
    ctx = Context()
    rclpy.init(context=ctx, args=["x"])
    try:
        drv = SimDriver(context=ctx, node_name=f"age_{unique_ns('x')}",
                        cli_args=["--ros-args", "-p", "urdf_file:=rbd_arm7"])
        try:
            msg = Float64MultiArray(data=[1.0] * 7)
            t = time.monotonic()
            drv._on_command(msg, {"received_timestamp": time.time_ns() - 400_000_000})
            assert drv._cmd is not None and np.all(drv._cmd[0] == 1.0)
            assert t - 0.41 < drv._cmd[1] < t - 0.39   # 0.4 s old, not now
            t = time.monotonic()
            drv._on_command(msg, {"received_timestamp": time.time_ns()})   # just arrived
            assert abs(drv._cmd[1] - t) < 0.01
            # a receive time from the future (a wall-clock step back) counts as now
            drv._on_command(msg, {"received_timestamp": time.time_ns() + 10**12})
            assert abs(drv._cmd[1] - time.monotonic()) < 0.01
        finally:
            drv.destroy()
    finally:
        rclpy.shutdown(context=ctx)
