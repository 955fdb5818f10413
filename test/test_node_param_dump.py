"""``ros2 param dump /rbd_dynamics`` and ``ros2 param get``, through the node's parameter
services with a real rclpy client, as the ros2 CLI does it: list_parameters, then one
get_parameters request naming every parameter.  rclpy answers such a request with
nothing at all if one named parameter has no value, so every parameter must have one
(the array parameters without a default were declared with their type alone:
the dump printed ``ros__parameters: {}``)."""
import pytest
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters
from rclpy.parameter import Parameter, parameter_value_to_python
from ros_harness import NodeProcess, set_params, unique_ns, wait_for

from rbd_ros.node import params

# the array parameters that default to an empty array, and the type each must keep
EMPTY_ARRAYS = {
    "joints": ParameterType.PARAMETER_STRING_ARRAY,
    "payload_links": ParameterType.PARAMETER_STRING_ARRAY,
    "kp": ParameterType.PARAMETER_DOUBLE_ARRAY,
    "kd": ParameterType.PARAMETER_DOUBLE_ARRAY,
    "armature": ParameterType.PARAMETER_DOUBLE_ARRAY,
    "effort_limits": ParameterType.PARAMETER_DOUBLE_ARRAY,
    "payload_masses": ParameterType.PARAMETER_DOUBLE_ARRAY,
    "payload_coms": ParameterType.PARAMETER_DOUBLE_ARRAY,
    "payload_inertias": ParameterType.PARAMETER_DOUBLE_ARRAY,
    "actuated_joints": ParameterType.PARAMETER_STRING_ARRAY,
    "initial_positions": ParameterType.PARAMETER_DOUBLE_ARRAY,
    "contacts": ParameterType.PARAMETER_STRING_ARRAY,
    "contact_type": ParameterType.PARAMETER_STRING_ARRAY,
    "sole_size": ParameterType.PARAMETER_DOUBLE_ARRAY,
}


def dump(client, node):
    """{name: (ParameterValue.type, python value)} the way ``ros2 param dump`` gets it."""
    names = list(client.call(ListParameters, f"{node.fqn}/list_parameters",
                             ListParameters.Request()).result.names)
    values = client.call(GetParameters, f"{node.fqn}/get_parameters",
                         GetParameters.Request(names=names)).values
    assert len(values) == len(names), f"get_parameters answered {len(values)} of {len(names)}"
    return {n: (v.type, parameter_value_to_python(v)) for n, v in zip(names, values)}


def get(client, node, name):
    """``ros2 param get``: one name."""
    values = client.call(GetParameters, f"{node.fqn}/get_parameters",
                         GetParameters.Request(names=[name])).values
    assert len(values) == 1, f"{name}: no value ('Parameter not set')"
    return values[0].type, parameter_value_to_python(values[0])


@pytest.fixture(scope="module")
def node():
    n = NodeProcess(unique_ns("dump"), {"urdf_file": "rbd_arm7"})
    assert wait_for(lambda: "listening on" in n.log(), timeout=90), n.log()
    yield n
    n.stop()


def test_dump_has_every_parameter_with_its_default(client, node):
    got = dump(client, node)
    for name, default, descriptor in params.PARAMETERS:
        assert name in got, name
        ptype, value = got[name]
        if name in EMPTY_ARRAYS:
            assert (ptype, list(value)) == (EMPTY_ARRAYS[name], []), (name, got[name])
        elif name == "urdf_file":
            assert value == "rbd_arm7"
        else:
            assert ptype == descriptor.type, name
            assert value == default, (name, value, default)
    # these are exactly the table's parameters declared by type
    assert {name for name, default, _ in params.PARAMETERS
            if isinstance(default, Parameter.Type)} == set(EMPTY_ARRAYS)
    for name, ptype in EMPTY_ARRAYS.items():
        assert get(client, node, name) == (ptype, []), name


def test_empty_arrays_keep_their_type_and_read_only_flag(client, node):
    """The real descriptors apply: payload_* stay read-only, the others take a value of
    their type at run time."""
    desc = client.call(DescribeParameters, f"{node.fqn}/describe_parameters",
                       DescribeParameters.Request(names=list(EMPTY_ARRAYS))).descriptors
    for d in desc:
        assert d.type == EMPTY_ARRAYS[d.name], d.name
        assert d.read_only == d.name.startswith("payload_"), d.name
        assert d.description, d.name
    res = set_params(client, node, payload_links=["link3"])[0]
    assert not res.successful and "read-only" in res.reason, res.reason
    res = set_params(client, node, joints=["joint4", "joint2"])[0]
    assert res.successful, res.reason
    assert get(client, node, "joints") == (ParameterType.PARAMETER_STRING_ARRAY, ["joint4", "joint2"])
    res = set_params(client, node, joints=["joint1", "joint2", "joint3", "joint4", "joint5", "joint6",
                                           "joint7"])[0]
    assert res.successful, res.reason


def test_overrides_from_a_params_file_are_dumped(client):
    n = NodeProcess(unique_ns("dumpo"), {"urdf_file": "rbd_arm7", "kp": [100.0], "kd": [20.0],
                                          "payload_links": ["link3"], "payload_masses": [1.5],
                                          "payload_coms": [0.0, 0.0, 0.1],
                                          "payload_inertias": [0.01, 0.0, 0.0, 0.01, 0.0, 0.01]})
    try:
        assert wait_for(lambda: "listening on" in n.log(), timeout=90), n.log()
        got = dump(client, n)
        assert got["kp"] == (ParameterType.PARAMETER_DOUBLE_ARRAY, [100.0])
        assert got["payload_links"] == (ParameterType.PARAMETER_STRING_ARRAY, ["link3"])
        assert got["payload_masses"] == (ParameterType.PARAMETER_DOUBLE_ARRAY, [1.5])
        assert got["joints"] == (ParameterType.PARAMETER_STRING_ARRAY, [])
        assert "payloads link3: 1.5 kg" in n.log(), n.log()   # the start-up payload was used
    finally:
        n.stop()
