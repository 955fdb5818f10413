"""Node parts that need no DDS: the /diagnostics status, the worker restart budget,
the node <-> worker protocol and the typed parameters."""
import pytest
from core_util import ARM_JOINTS
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.parameter import Parameter

from rbd_ros.node import protocol
from rbd_ros.node.diagnostics import build_status
from rbd_ros.node.model_build import build_robot
from rbd_ros.node.params import PARAMETERS, Params, parameter_value
from rbd_ros.node.stats import Stats
from rbd_ros.node.worker_client import RestartBudget
from rbd_ros.robots import bundled_robot_path

ARM = ARM_JOINTS
FQN = "/ns/rbd_dynamics"


@pytest.fixture(scope="module")
def rt():
    with open(bundled_robot_path("rbd_arm7")) as f:
        return build_robot(f.read(), floating_base=False, mimic=True, gravity=[0, 0, -9.81],
                             joints=(), source="test file")


def values(status):
    return {kv.key: kv.value for kv in status.values}


def test_status_without_model():
    st = Stats()
    st.msgs_in = 3
    st.not_ready = 3
    s = build_status(FQN, None, st, 0.0, 0.1, services="starting (in process)")
    v = values(s)
    assert s.name == f"rbd_ros: {FQN}"
    assert s.level == DiagnosticStatus.WARN
    assert s.message.startswith("no robot model")
    assert v["model"] == "" and v["dof"] == "0"
    assert v["messages_in"] == "3" and v["waiting_for_state"] == "3"
    assert v["services"] == "starting (in process)"
    assert "compute_time_p50_us" not in v  # nothing published yet


def test_status_streaming_and_waiting(rt):
    # fresh copy of the state for this test
    rt.stamp[:] = -float("inf")
    st = Stats()
    s = build_status(FQN, rt, st, 10.0, 0.1, services="on (worker pid 7)")
    assert s.level == DiagnosticStatus.WARN
    assert s.message == f"waiting for joint states: never received {ARM}"
    assert s.hardware_id == "rbd_arm7"

    rt.update(ARM[:5], [0.0] * 5, [0.0] * 5, 10.0)
    rt.update(ARM[5:], [0.0] * 2, [0.0] * 2, 9.0)
    s = build_status(FQN, rt, st, 10.05, 0.1, services="on")
    assert s.level == DiagnosticStatus.WARN
    assert s.message == "waiting for joint states: older than max_state_age 0.1 s " \
                        "['joint6', 'joint7']"
    s = build_status(FQN, rt, st, 10.05, 2.0, services="on")
    assert s.level == DiagnosticStatus.OK and s.message == "streaming"
    v = values(s)
    assert v["model"] == "rbd_arm7" and v["dof"] == "7" and v["floating_base"] == "false"
    assert v["model_source"] == "test file"


def test_status_counts_timing_errors_and_services_off(rt):
    rt.update(ARM, [0.0] * 7, [0.0] * 7, 5.0)
    st = Stats(window=4)
    st.msgs_in, st.msgs_out = 10, 6
    st.drop("non_finite")
    st.drop("non_finite")
    st.drop("size_mismatch")
    for k in range(6):  # the window keeps the last 4: 2..5
        st.record(10.0 * k, float(k), 100.0 + k, 2.0 * k)
    st.error("joint_states message dropped (non_finite): x")
    s = build_status(FQN, rt, st, 5.0, 0.1, services="off",
                     services_error="service worker exited with code 1 too often")
    v = values(s)
    assert v["messages_dropped"] == "3"
    assert v["dropped_non_finite"] == "2" and v["dropped_size_mismatch"] == "1"
    assert v["messages_out"] == "6"
    assert float(v["compute_time_p50_us"]) == pytest.approx(3.5)
    assert float(v["callback_time_p99_us"]) == pytest.approx(49.7, abs=0.05)
    assert float(v["publish_time_p50_us"]) == pytest.approx(103.5)
    assert float(v["callback_cpu_p50_us"]) == pytest.approx(7.0)     # the callbacks' CPU time, apart
    assert float(v["callback_wait_p50_us"]) == pytest.approx(28.0)    # wall - CPU: 16, 24, 32, 40 us
    assert v["last_error"] == "joint_states message dropped (non_finite): x"
    assert s.level == DiagnosticStatus.WARN  # streaming, but the services are off
    assert s.message == "streaming; services off (see last_error / the log)"
    assert v["services"] == "off"


def test_restart_budget_decays():
    b = RestartBudget(max_crashes=3, window_s=10.0)
    assert b.allow(0.0) and b.allow(1.0) and b.allow(2.0)
    assert not b.allow(3.0)            # 4 crashes within 10 s: off
    b = RestartBudget(max_crashes=3, window_s=10.0)
    # a crash every 4 s forever: never more than 3 in a window of 10 s
    assert all(b.allow(4.0 * k) for k in range(1000))
    assert len(b.crashes) <= 3
    # a burst after a long quiet time is judged on its own
    assert b.allow(10_000.0) and b.allow(10_000.1)


def test_protocol_round_trip():
    argv = protocol.worker_argv("/a/b", 3, True, python="py")
    assert argv[:3] == ["py", "-m", protocol.WORKER_MODULE]
    a = protocol.parse_argv(argv[3:])
    assert (a.node_fqn, a.threads, a.expect_model) == ("/a/b", 3, True)
    assert not protocol.parse_argv(protocol.worker_argv("/a/b", 0, False)[3:]).expect_model
    line = protocol.model_command("<robot/>", "file x", True, False, (0, 0, -1))
    assert "\n" not in line
    assert protocol.parse_model_command(line) == {
        "urdf_text": "<robot/>", "source": "file x", "floating_base": True, "mimic": False,
        "gravity": [0.0, 0.0, -1.0], "armature": {}, "payloads": {},
        "friction_velocity_eps": 0.01}
    assert protocol.parse_event(protocol.event_ready()) == {"event": "ready"}
    assert protocol.parse_event(protocol.event_model(True, name="r", dof=2)) == {
        "event": "model", "ok": True, "name": "r", "dof": 2}
    assert protocol.parse_event(protocol.event_model(False, error="bad")) == {
        "event": "model", "ok": False, "error": "bad"}
    assert protocol.parse_event("some stray print\n") is None
    assert protocol.parse_event("[1, 2]") is None


def test_params_table_and_snapshot():
    # the dataclass and the declaration table describe the same parameters
    assert [f for f in Params.__dataclass_fields__] == [name for name, _, _ in PARAMETERS]
    p = Params()
    assert p.min_publish_period == 0.0
    q = p.updated([Parameter("max_publish_rate", value=200.0),
                   Parameter("joints", value=["b", "a"]),
                   Parameter("gravity", value=[0.0, 1.0, 2.0])])
    assert q.min_publish_period == pytest.approx(0.005)
    assert q.joints == ("b", "a") and q.gravity == (0.0, 1.0, 2.0)
    assert p.max_publish_rate == 0.0  # snapshots are immutable
    assert q.gravity_error() is None
    assert "gravity[1]: expected a number in [-10000, 10000]" in p.updated(
        [Parameter("gravity", value=[0.0, float("nan"), 1.0])]).gravity_error()
    assert "gravity" in p.updated([Parameter("gravity", value=[0.0, 1.0])]).gravity_error()
    assert Params(service_threads=3).numba_threads == 3
    assert Params().numba_threads >= 1
    assert Params().description() is None
    text, where = Params(urdf_file="rbd_arm7").description()
    assert where.startswith("file ") and "<robot" in text
    assert Params(robot_description="<robot/>", urdf_file="rbd_arm7").description() == (
        "<robot/>", "parameter robot_description")
    with pytest.raises(ValueError, match="urdf_file"):
        Params(urdf_file="no_such_robot").description()


def test_parameter_value_types_values_as_the_node_declares_them():
    from rcl_interfaces.msg import ParameterType as T
    cases = [("gravity", T.PARAMETER_STRING, "string_value", "gravity"),
             (True, T.PARAMETER_BOOL, "bool_value", True),
             (3, T.PARAMETER_DOUBLE, "double_value", 3.0),
             ((1, 2.5), T.PARAMETER_DOUBLE_ARRAY, "double_array_value", [1.0, 2.5]),
             ([], T.PARAMETER_DOUBLE_ARRAY, "double_array_value", []),
             (["a", "b"], T.PARAMETER_STRING_ARRAY, "string_array_value", ["a", "b"])]
    for value, ptype, field, expected in cases:
        pv = parameter_value(value)
        got = getattr(pv, field)
        assert pv.type == ptype, value
        assert (list(got) if isinstance(expected, list) else got) == expected, value
