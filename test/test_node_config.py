"""Node configuration over real DDS: the shipped config file, parameter descriptors,
runtime parameter changes (gravity, joints), in-process services, the node
without rbd_ros_interfaces; static checks of the launch file and package.xml."""
import ast
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import yaml
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import DescribeParameters, GetParameters
from ros_harness import (
    ARM_JOINTS,
    ROOT,
    DiagnosticArray,
    JointState,
    NodeProcess,
    diagnostics_of,
    joint_state,
    publish_until,
    read_arm_urdf,
    set_params,
    unique_ns,
    wait_for,
)

import rbd_ros.core as rbd
from rbd_ros_interfaces.srv import InverseDynamics

CONFIG = os.path.join(ROOT, "config", "dynamics.yaml")
LAUNCH = os.path.join(ROOT, "launch", "dynamics.launch.py")
TOL = 1e-9


def config_params():
    with open(CONFIG) as f:
        data = yaml.safe_load(f)
    (key, body), = data.items()
    assert key == "/**/rbd_dynamics"
    return body["ros__parameters"]


def test_config_file_and_parameter_doc_are_generated_from_the_table():
    """One source (rbd_ros/node/param_table.py): config/dynamics.yaml and doc/parameters.md's
    table are what it generates, the descriptors and the Params snapshot follow it."""
    from rbd_ros.node import param_table, params
    with open(CONFIG) as f:
        assert f.read() == param_table.yaml_text(), "regenerate: python -m rbd_ros.node.param_table --yaml"
    with open(os.path.join(ROOT, "doc", "parameters.md")) as f:
        doc = f.read()
    table = doc.split("<!-- generated: param_table --markdown -->\n", 1)[1].split("<!-- end generated -->")[0]
    assert table == param_table.markdown_table(), "regenerate: python -m rbd_ros.node.param_table --markdown"
    names = [p.name for p in param_table.TABLE]
    assert [n for n, _, _ in params.PARAMETERS] == names == list(params.Params.__dataclass_fields__)
    for p in param_table.TABLE:
        d = params.descriptor(p)
        assert d.read_only == p.read_only and p.text in d.description
        if p.structural:
            assert p.name in params.STRUCTURAL
    yaml_names = set(config_params())
    assert yaml_names == {p.name for p in param_table.TABLE if not (isinstance(p.default, list) and not p.default)}


def test_table_checks_every_type_and_bound():
    from rbd_ros.node.param_table import check
    assert check("max_state_age", 0.5) is None and check("gravity", [0.0, 0.0, -9.81]) is None
    for name, value, text in (("max_state_age", -1.0, "max_state_age: expected a number in [0, 3600] s"),
                              ("max_state_age", "0.1", "max_state_age: expected a number"),
                              ("max_state_age", True, "max_state_age: expected a number"),
                              ("gravity", [0.0, 1.0], "gravity: expected 3 numbers"),
                              ("gravity", [0.0, float("nan"), 1.0], "gravity[1]: expected a number in"),
                              ("command_mode", "torque", "command_mode: expected one of"),
                              ("observer", 1, "observer: expected true or false"),
                              ("kp", [1.0, -2.0], "kp[1]: expected a number in [0, 1e+09]"),
                              ("effort_limits", [float("inf")], None),
                              ("kp", [float("inf")], "kp[0]: expected a number in"),
                              ("joints", ["a", 1], "joints: expected a list of strings")):
        assert check(name, value) == text if text is None else text in (check(name, value) or ""), (name, value)


def test_config_file_loads_into_the_node(client):
    """The shipped config/dynamics.yaml, as the launch file passes it, sets every value."""
    ns = unique_ns("cfg")
    node = NodeProcess(ns, extra_args=["--params-file", CONFIG, "-p", "urdf_file:=rbd_arm7",
                                       "-p", "max_state_age:=0.25"])
    try:
        expected = config_params()
        names = sorted(expected)
        resp = client.call(GetParameters, f"{node.fqn}/get_parameters",
                           GetParameters.Request(names=names), timeout=60)
        got = {}
        for n, v in zip(names, resp.values):
            got[n] = {ParameterType.PARAMETER_BOOL: v.bool_value,
                      ParameterType.PARAMETER_DOUBLE: v.double_value,
                      ParameterType.PARAMETER_STRING: v.string_value,
                      ParameterType.PARAMETER_INTEGER: v.integer_value,
                      ParameterType.PARAMETER_DOUBLE_ARRAY: list(v.double_array_value)}[v.type]
        for n in names:
            if n in ("urdf_file", "max_state_age"):
                continue
            assert got[n] == expected[n], n
        assert got["urdf_file"] == "rbd_arm7" and got["max_state_age"] == 0.25
        # every parameter has a descriptor with a description
        all_names = names + ["joints", "service_threads"]
        desc = client.call(DescribeParameters, f"{node.fqn}/describe_parameters",
                           DescribeParameters.Request(names=all_names))
        assert len(desc.descriptors) == len(all_names)
        assert all(len(d.description) > 20 for d in desc.descriptors)
        by_name = {d.name: d for d in desc.descriptors}
        assert by_name["joint_states_reliable"].read_only
        assert by_name["joints"].type == ParameterType.PARAMETER_STRING_ARRAY
        # and the node runs on it
        rec = client.record(JointState, node.topic("gravity_torques_state"))
        pub = client.publisher(JointState, f"/{ns}/joint_states")
        q = np.full(7, 0.3)
        sent, got_msg = publish_until(pub, lambda: joint_state(ARM_JOINTS, q, np.zeros(7)), rec,
                                      timeout=30)
        assert got_msg is not None
        model = rbd.Model.from_urdf(read_arm_urdf())
        assert np.max(np.abs(np.asarray(got_msg.effort) - rbd.gravity(model, q))) <= TOL
    finally:
        node.stop()


def test_gravity_and_joints_parameters_at_run_time_and_in_process_services(client):
    ns = unique_ns("par")
    tilt = [0.0, float(-9.81 * np.sin(0.3)), float(-9.81 * np.cos(0.3))]
    # also the non-default control executor (SingleThreadedExecutor), end to end
    node = NodeProcess(ns, {"urdf_file": "rbd_arm7", "gravity": tilt, "service_process": False,
                            "publish_inertia": False, "max_state_age": 1.0,
                            "control_executor": "single"})
    try:
        urdf = read_arm_urdf()
        rec = client.record(JointState, node.topic("gravity_torques_state"))
        pub = client.publisher(JointState, f"/{ns}/joint_states")
        q = np.linspace(0.2, -0.6, 7)
        sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q, np.zeros(7)), rec,
                                  timeout=30)
        assert got is not None, node.log()
        m_tilt = rbd.Model.from_urdf(urdf, gravity=tilt)
        assert np.max(np.abs(np.asarray(got.effort) - rbd.gravity(m_tilt, q))) <= TOL

        # in-process services answer with the same model
        resp = client.call(InverseDynamics, f"{node.fqn}/inverse_dynamics",
                           InverseDynamics.Request(name=ARM_JOINTS, position=q.tolist()),
                           timeout=30)
        assert resp.success, resp.message
        assert np.max(np.abs(np.asarray(resp.effort) - rbd.gravity(m_tilt, q))) <= TOL

        # gravity changed at run time -> new model, same joint state
        res = set_params(client, node, gravity=[0.0, 0.0, -9.81])[0]
        assert res.successful, res.reason
        m_up = rbd.Model.from_urdf(urdf)
        g_up = rbd.gravity(m_up, q)
        sent, got = publish_until(
            pub, lambda: joint_state(ARM_JOINTS, q, np.zeros(7)), rec, timeout=60,
            accept=lambda m: np.max(np.abs(np.asarray(m.effort) - g_up)) <= TOL)
        assert got is not None

        # bad values are refused with a reason; the model stays
        res = set_params(client, node, gravity=[0.0, 9.81])[0]
        assert not res.successful and "gravity" in res.reason
        res = set_params(client, node, joints=["joint1", "elbow"])[0]
        assert not res.successful and "unknown joint 'elbow'" in res.reason

        # a subset in a new order
        res = set_params(client, node, joints=["joint4", "joint2"])[0]
        assert res.successful, res.reason
        sent, got = publish_until(
            pub, lambda: joint_state(ARM_JOINTS, q, np.zeros(7)), rec, timeout=60,
            accept=lambda m: list(m.name) == ["joint4", "joint2"])
        assert got is not None
        assert np.max(np.abs(np.asarray(got.effort) - g_up[[3, 1]])) <= TOL
        assert node.alive()
    finally:
        node.stop()


BLOCK_INTERFACES = """
import runpy, sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name == "rbd_ros_interfaces" or name.startswith("rbd_ros_interfaces."):
            raise ImportError("No module named 'rbd_ros_interfaces' (hidden by the test)")
        return None
sys.meta_path.insert(0, _Block())
runpy.run_module("rbd_ros.node", run_name="__main__")
"""


def test_node_runs_without_interfaces(client):
    """Without rbd_ros_interfaces: one clear error, topics still work, diagnostics say so."""
    ns = unique_ns("noif")
    node = NodeProcess(ns, {"urdf_file": "rbd_arm7"}, module_args=("-c", BLOCK_INTERFACES))
    try:
        diag = client.record(DiagnosticArray, "/diagnostics")
        rec = client.record(JointState, node.topic("gravity_torques_state"))
        pub = client.publisher(JointState, f"/{ns}/joint_states")
        q = np.linspace(-1, 1, 7)
        sent, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q, np.zeros(7)), rec,
                                  timeout=30)
        assert got is not None, node.log()
        model = rbd.Model.from_urdf(read_arm_urdf())
        assert np.max(np.abs(np.asarray(got.effort) - rbd.gravity(model, q))) <= TOL
        log = node.log()
        errors = [ln for ln in log.splitlines() if "[ERROR]" in ln]
        assert len(errors) == 1, log
        assert "rbd_ros_interfaces is not available" in errors[0]
        assert "services are OFF" in errors[0] and "colcon build" in errors[0]
        d = wait_for(lambda: diagnostics_of(diag, node.fqn), timeout=60)
        assert d["services"] == "off" and "services off" in d["_message"], d
        def names_now():
            names = [n for n, _ in client.node.get_service_names_and_types()
                     if n.startswith(node.fqn)]
            return names if f"{node.fqn}/set_parameters" in names else None

        names = wait_for(names_now, timeout=60)
        assert names  # the graph is visible ...
        assert not any(n.endswith(("inverse_dynamics", "forward_dynamics", "_trajectory"))
                       for n in names), names  # ... and has no dynamics service
    finally:
        node.stop()


def test_launch_file_static():
    """ROS launch is not on PyPI: check the file's content without running it."""
    with open(LAUNCH) as f:
        src = f.read()
    tree = ast.parse(src)
    funcs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert "generate_launch_description" in funcs
    calls = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            calls.setdefault(n.func.id, []).append(n)
    node_call, = calls["Node"]
    kw = {k.arg: k.value for k in node_call.keywords}
    assert ast.literal_eval(kw["package"]) == "rbd_ros"
    assert ast.literal_eval(kw["executable"]) == "dynamics_node"
    assert ast.literal_eval(kw["name"]) == "rbd_dynamics"
    assert "parameters" in kw and "namespace" in kw and "remappings" in kw
    args = [ast.literal_eval(c.args[0]) for c in calls["DeclareLaunchArgument"]]
    assert {"urdf_file", "namespace", "params_file"} <= set(args)
    assert re.search(r'"config",\s*"dynamics\.yaml"', src)
    assert os.path.isfile(CONFIG)
    # the console script and data files the launch file relies on
    with open(os.path.join(ROOT, "setup.py")) as f:
        setup_src = f.read()
    assert "dynamics_node = rbd_ros.node.main:main" in setup_src
    assert 'data_dir("launch", "*.launch.py")' in setup_src
    assert 'data_dir("config", "*.yaml")' in setup_src


def test_package_xml_rosdep_keys():
    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    deps = {e.text for e in root if e.tag.endswith("depend")}
    for key in ("rclpy", "sensor_msgs", "std_msgs", "trajectory_msgs", "geometry_msgs",
                "diagnostic_msgs", "launch_ros", "python3-numpy", "urdfdom_py",
                "rbd_ros_interfaces"):
        assert key in deps, key
    iroot = ET.parse(os.path.join(ROOT, "rbd_ros_interfaces", "package.xml")).getroot()
    assert iroot.get("format") == "3"
    assert iroot.find("member_of_group").text == "rosidl_interface_packages"
    assert iroot.find("export/build_type").text == "ament_cmake"
