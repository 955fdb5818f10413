"""End to end over real DDS: robot_description + joint_states in, torques and H out."""
import time

import numpy as np
import pytest
from core_util import close_abs
from ros_harness import (
    ARM_JOINTS,
    DiagnosticArray,
    Float64MultiArray,
    JointState,
    NodeProcess,
    array_of,
    diagnostics_of,
    joint_state,
    next_stamp,
    publish_answered,
    publish_until,
    read_arm_urdf,
    stamp_key,
    unique_ns,
    wait_for,
)

import rbd_ros.core as rbd


def outputs(client, node):
    return {
        "g": client.record(Float64MultiArray, node.topic("gravity_torques")),
        "gs": client.record(JointState, node.topic("gravity_torques_state")),
        "b": client.record(Float64MultiArray, node.topic("bias_torques")),
        "bs": client.record(JointState, node.topic("bias_torques_state")),
        "h": client.record(Float64MultiArray, node.topic("inertia_matrix")),
    }


def expected(model, names_in, q_in, v_in, out_names):
    """Core results for a state given by name, reordered to out_names."""
    q = np.array(model.neutral(), dtype=float)
    v = np.zeros(model.nv)
    for n, qi, vi in zip(names_in, q_in, v_in):
        q[model.q_index(n)] = qi
        v[model.v_index(n)] = vi
    vi = [model.v_index(n) for n in out_names]
    g = rbd.gravity(model, q)[vi]
    b = rbd.bias(model, q, v)[vi]
    H = rbd.crba(model, q)[np.ix_(vi, vi)]
    return g, b, H


def assert_outputs_match(rec, g, b, H, names, timeout=60.0):
    """Every output topic's latest message equals the core result (<= 1e-9), eventually:
    each topic is its own DDS writer, so one can lag the others on a loaded machine."""
    n = len(names)
    assert wait_for(lambda: rec["g"].latest() is not None and close_abs(array_of(rec["g"].latest()), g),
                    timeout), (rec["g"].latest(), g)
    assert wait_for(lambda: rec["b"].latest() is not None and close_abs(array_of(rec["b"].latest()), b),
                    timeout), (rec["b"].latest(), b)
    assert wait_for(lambda: rec["h"].latest() is not None
                    and close_abs(array_of(rec["h"].latest()).reshape(n, n), H), timeout)
    hmsg = rec["h"].latest()
    dims = hmsg.layout.dim
    assert [d.label for d in dims] == ["rows", "cols"]
    assert [d.size for d in dims] == [n, n]
    assert [d.stride for d in dims] == [n * n, n]
    assert hmsg.layout.data_offset == 0
    assert wait_for(lambda: rec["bs"].latest() is not None and list(rec["bs"].latest().name) == list(names)
                    and close_abs(np.asarray(rec["bs"].latest().effort), b), timeout), (rec["bs"].latest(), b)


def sentinel(pub, make_msg, rec, timeout=20):
    """Publish good messages on pub (the publisher of the messages under test, so the node
    gets them after those) until rec has an answer; returns the stamps sent and the
    answer.  Once it has come, an answer to any earlier message would have come too."""
    stamps = []

    def make():
        m = make_msg()
        stamps.append(stamp_key(m.header.stamp))
        return m

    sent, got = publish_until(pub, make, rec, timeout=timeout)
    return stamps, got


def answered(rec, stamps):
    """The stamps among ``stamps`` that got an output."""
    keys = {stamp_key(s) for s in stamps}
    msgs, _ = rec.snapshot()
    return [stamp_key(m.header.stamp) for m in msgs if stamp_key(m.header.stamp) in keys]


def test_description_topic_before_and_after_start_hot_swap(client):
    """Description latched before the node starts; valid and invalid replacements after."""
    ns = unique_ns()
    urdf = read_arm_urdf()
    model1 = rbd.Model.from_urdf(urdf)
    desc_pub = client.latched_description(f"/{ns}/robot_description", urdf)
    node = NodeProcess(ns, {"max_state_age": 2.0})
    try:
        rec = outputs(client, node)
        js_pub = client.publisher(JointState, f"/{ns}/joint_states")
        rng = np.random.default_rng(1)
        q = rng.uniform(-1.5, 1.5, 7)
        v = rng.uniform(-1.0, 1.0, 7)
        sent, got = publish_until(js_pub, lambda: joint_state(ARM_JOINTS, q, v), rec["gs"],
                                  timeout=60)
        assert got is not None, node.log()
        g, b, H = expected(model1, ARM_JOINTS, q, v, ARM_JOINTS)
        assert list(got.name) == ARM_JOINTS
        assert stamp_key(got.header.stamp) == stamp_key(sent.header.stamp)
        assert close_abs(np.asarray(got.effort), g)
        assert_outputs_match(rec, g, b, H, ARM_JOINTS)
        assert np.max(np.abs(g)) > 1.0  # a real arm, not zeros

        # valid hot swap: 3 kg payload on link7, renamed robot
        urdf2 = urdf.replace('<robot name="rbd_arm7">', '<robot name="rbd_arm7_payload">').replace(
            '<mass value="0.735522"/>', '<mass value="3.735522"/>')
        assert urdf2.count("3.735522") == 1
        model2 = rbd.Model.from_urdf(urdf2)
        g2, b2, H2 = expected(model2, ARM_JOINTS, q, v, ARM_JOINTS)
        assert np.max(np.abs(g2 - g)) > 0.1
        desc_pub.publish(type(desc_pub.msg_type())(data=urdf2))
        ok = wait_for(lambda: (js_pub.publish(joint_state(ARM_JOINTS, q, v)) or True)
                      and close_abs(array_of(rec["g"].latest()), g2), timeout=60, period=0.02)
        assert ok, node.log()
        assert_outputs_match(rec, g2, b2, H2, ARM_JOINTS)

        # invalid descriptions are rejected, the old model stays
        for bad in ('<robot name="broken"><link name="a"/><joint name="j" type="revolute">'
                    '<parent link="a"/><child link="nowhere"/></joint></robot>',
                    "this is not xml"):
            desc_pub.publish(type(desc_pub.msg_type())(data=bad))
            assert wait_for(lambda: node.log().count("rejected") >= 1, timeout=60), node.log()
        assert wait_for(lambda: node.log().count("rejected") >= 2, timeout=60), node.log()
        assert "keeping model 'rbd_arm7_payload'" in node.log()
        for _ in range(5):
            sent, got = publish_until(js_pub, lambda: joint_state(ARM_JOINTS, q, v), rec["gs"],
                                      timeout=60)
            assert got is not None and close_abs(np.asarray(got.effort), g2)
        assert node.alive()
    finally:
        node.stop()


@pytest.fixture(scope="module")
def arm_node(client):
    """Bundled arm from the urdf_file parameter, outputs in a custom order, short max age."""
    ns = unique_ns()
    out_order = ["joint7", "joint1", "joint6", "joint2", "joint5", "joint3", "joint4"]
    node = NodeProcess(ns, {"urdf_file": "rbd_arm7", "joints": out_order, "max_state_age": 0.3})
    diag = client.record(DiagnosticArray, "/diagnostics")
    rec = outputs(client, node)
    node.out_order = out_order
    node.rec = rec
    node.diag = diag
    yield node
    assert node.alive()
    node.stop()


def test_partial_multi_publisher_reordered_missing_stale(client, arm_node):
    node, rec = arm_node, arm_node.rec
    model = rbd.Model.from_urdf(read_arm_urdf())
    ns = node.ns
    pub_arm = client.publisher(JointState, f"/{ns}/joint_states")
    pub_wrist = client.publisher(JointState, f"/{ns}/joint_states")
    arm_names = ["joint3", "joint1", "joint2", "joint5", "joint4"]
    wrist_names = ["joint7", "joint6"]
    rng = np.random.default_rng(2)
    q_arm, v_arm = rng.uniform(-1, 1, 5), rng.uniform(-1, 1, 5)
    q_wrist = rng.uniform(-1, 1, 2)

    # only the arm publishes: joint6/7 are missing -> nothing is computed
    wait_for(lambda: diagnostics_of(node.diag, node.fqn) is not None, timeout=30)
    stamps = []
    for _ in range(30):
        m = joint_state(arm_names, q_arm, v_arm)
        stamps.append(m.header.stamp)
        pub_arm.publish(m)
        time.sleep(0.01)
    d = wait_for(lambda: (lambda d: d if d and int(d["waiting_for_state"]) >= 30 else None)(
        diagnostics_of(node.diag, node.fqn)), timeout=30)
    assert d, diagnostics_of(node.diag, node.fqn)
    assert d["_message"].startswith("waiting for joint states: never received ['joint6', "
                                    "'joint7']"), d

    # the wrist publisher (no velocities) completes the state; an arm message then triggers
    # (and so may a wrist message that arrives after an arm one: two writers' messages have
    # no order between them).  These are the sentinel: none of the earlier ones got an output.
    wrist_sent = set()

    def wrist(q):
        m = joint_state(wrist_names, q)
        wrist_sent.add(stamp_key(m.header.stamp))
        return m

    pub_wrist.publish(wrist(q_wrist))
    time.sleep(0.05)

    def both():
        pub_wrist.publish(wrist(q_wrist))
        return joint_state(arm_names, q_arm, v_arm)

    good, got = sentinel(pub_arm, both, rec["gs"])
    assert got is not None, node.log()
    assert answered(rec["gs"], stamps) == []
    msgs, _ = rec["gs"].snapshot()
    assert msgs and all(stamp_key(m.header.stamp) in set(good) | wrist_sent for m in msgs)
    names = arm_names + wrist_names
    g, b, H = expected(model, names, np.r_[q_arm, q_wrist], np.r_[v_arm, 0, 0], node.out_order)
    assert list(got.name) == node.out_order
    assert close_abs(np.asarray(got.effort), g)
    assert_outputs_match(rec, g, b, H, node.out_order)
    assert node.log().count("without velocities") == 1

    # a later wrist message updates only the wrist joints (latest value per joint wins);
    # an arm message goes just before each (the arm is fresh, whatever the wait since), and
    # the wrist message answered is the last one sent: no wrist message is in flight after
    q_wrist2 = q_wrist + 0.3

    def wrist2():
        pub_arm.publish(joint_state(arm_names, q_arm, v_arm))
        return joint_state(wrist_names, q_wrist2)

    sent, got = publish_answered(pub_wrist, wrist2, rec["gs"], timeout=60)
    g2, b2, H2 = expected(model, names, np.r_[q_arm, q_wrist2], np.r_[v_arm, 0, 0],
                          node.out_order)
    assert got is not None and close_abs(np.asarray(got.effort), g2)

    # stale: the wrist stops for longer than max_state_age (0.3 s) -> no output.  The node
    # took the last wrist message before it answered it: every arm message from here on
    # reaches it more than 0.6 s after that, however busy the machine
    time.sleep(0.6)
    stamps = []
    for _ in range(20):
        m = joint_state(arm_names, q_arm, v_arm)
        stamps.append(m.header.stamp)
        pub_arm.publish(m)
        time.sleep(0.01)
    # ... and it resumes when the wrist does (the sentinel): the stale ones got nothing
    good, got = sentinel(pub_arm, both, rec["gs"], timeout=60)
    assert got is not None and close_abs(np.asarray(got.effort), g)
    assert answered(rec["gs"], stamps) == []

    # joints the model does not know (a gripper) are ignored, with one warning
    full = joint_state(ARM_JOINTS + ["finger_left"], np.r_[rng.uniform(-1, 1, 7), 0.01],
                       np.zeros(8))
    sent, got = publish_until(pub_arm, lambda: joint_state(full.name, full.position, full.velocity),
                              rec["gs"], timeout=60)
    assert got is not None
    g3, _, _ = expected(model, ARM_JOINTS, full.position[:7], np.zeros(7), node.out_order)
    assert close_abs(np.asarray(got.effort), g3)
    assert "finger_left" in node.log()


def test_garbage_joint_states_are_dropped(client, arm_node):
    node, rec = arm_node, arm_node.rec
    model = rbd.Model.from_urdf(read_arm_urdf())
    pub = client.publisher(JointState, f"/{node.ns}/joint_states")
    q = np.linspace(-0.5, 0.5, 7)
    v = np.linspace(0.2, -0.2, 7)
    sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q, v), rec["gs"], timeout=60)
    assert got is not None
    n_before = rec["gs"].count()

    bad = []
    q_nan = q.copy()
    q_nan[3] = np.nan
    v_inf = v.copy()
    v_inf[0] = np.inf
    bad.append(joint_state(ARM_JOINTS, q_nan, v))                 # NaN position
    bad.append(joint_state(ARM_JOINTS, q, v_inf))                 # inf velocity
    bad.append(joint_state(ARM_JOINTS, q, np.r_[v[:6], 1e300]))   # finite, the core would overflow (issue 22)
    m = joint_state(ARM_JOINTS, q, v)
    m.position = list(q[:6])                                       # position too short
    bad.append(m)
    m = joint_state(ARM_JOINTS, q, v)
    m.velocity = list(v[:3])                                       # velocity wrong size
    bad.append(m)
    m = joint_state(ARM_JOINTS + ["joint1"], np.r_[q, 0.0], np.r_[v, 0.0])  # duplicate name
    bad.append(m)
    # the node keeps its previous (good) state; fresh good messages are still needed in
    # between so that the node would have computed if it had accepted the bad ones
    bad_stamps = []
    for m in bad:
        for _ in range(3):
            m.header.stamp = next_stamp()
            bad_stamps.append(m.header.stamp)
            pub.publish(m)
            time.sleep(0.02)
    # a good message afterwards (the sentinel, same publisher) works and equals the core
    good, got = sentinel(pub, lambda: joint_state(ARM_JOINTS, q, v), rec["gs"], timeout=60)
    g_ok, _, _ = expected(model, ARM_JOINTS, q, v, node.out_order)
    assert got is not None and close_abs(np.asarray(got.effort), g_ok)
    # no output at all came from the garbage: every output since is a sentinel's
    assert answered(rec["gs"], bad_stamps) == []
    msgs, _ = rec["gs"].snapshot()
    assert all(stamp_key(m.header.stamp) in good for m in msgs[n_before:])
    assert all(np.all(np.isfinite(m.effort)) for m in msgs)
    gmsgs, _ = rec["g"].snapshot()
    assert all(np.all(np.isfinite(array_of(x))) for x in gmsgs)
    assert node.alive()
    d = wait_for(lambda: (lambda d: d if d and int(d.get("dropped_size_mismatch", 0)) >= 6
                          else None)(diagnostics_of(node.diag, node.fqn)), timeout=60)
    assert d, diagnostics_of(node.diag, node.fqn)
    assert int(d["dropped_non_finite"]) >= 6
    assert int(d["dropped_out_of_range"]) >= 3
    assert int(d["dropped_duplicate_names"]) >= 3
    assert int(d["messages_dropped"]) >= 18
    assert d["model"] == "rbd_arm7" and d["dof"] == "7"
    assert "compute_time_p99_us" in d and float(d["compute_time_p50_us"]) > 0
    assert 0 < float(d["callback_cpu_p50_us"]) < 1e5     # the control thread's own CPU time per message
    assert "dropped" in d["last_error"]
    assert node.log().count("non-finite position") >= 1
