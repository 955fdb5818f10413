"""Packaging for ROS users: launch argument handling, package.xml keys, bundled URDFs
installed under share/rbd_ros/urdf and resolved through the (real) ament index.

ROS ``launch``/``launch_ros`` are not on PyPI, so the launch file is executed against
minimal stand-ins of the four launch classes it uses; what is checked is the file's
own logic (which parameter sources the node gets), not ROS launch itself."""
import importlib.util
import os
import sys
import types
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = os.path.join(ROOT, "launch", "dynamics.launch.py")


class _Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration:
    def __init__(self, name):
        self.name = name

    def perform(self, context):
        return context[self.name]


@pytest.fixture
def launch_module(monkeypatch):
    """The launch file, imported with stand-in launch modules."""
    mods = {
        "launch": types.ModuleType("launch"),
        "launch.actions": types.ModuleType("launch.actions"),
        "launch.substitutions": types.ModuleType("launch.substitutions"),
        "launch_ros": types.ModuleType("launch_ros"),
        "launch_ros.actions": types.ModuleType("launch_ros.actions"),
        "ament_index_python.packages": types.ModuleType("ament_index_python.packages"),
    }
    mods["launch"].LaunchDescription = _Recorder
    mods["launch.actions"].DeclareLaunchArgument = _Recorder
    mods["launch.actions"].OpaqueFunction = _Recorder
    mods["launch.substitutions"].LaunchConfiguration = _LaunchConfiguration
    mods["launch_ros.actions"].Node = _Recorder
    mods["ament_index_python.packages"].get_package_share_directory = lambda pkg: f"/opt/share/{pkg}"
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    spec = importlib.util.spec_from_file_location("dynamics_launch", LAUNCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _node_for(module, **given):
    desc = module.generate_launch_description()
    actions = desc.args[0]
    defaults = {a.args[0]: a.kwargs["default_value"] for a in actions
                if "default_value" in a.kwargs}
    context = {**defaults, **given}
    opaque, = [a for a in actions if "function" in a.kwargs]
    node, = opaque.kwargs["function"](context)
    return node.kwargs, defaults


def test_launch_urdf_file_overrides_only_when_given(launch_module):
    kw, defaults = _node_for(launch_module)
    assert defaults["params_file"] == "/opt/share/rbd_ros/config/dynamics.yaml"
    # not given: the params file alone decides (a urdf_file set there survives)
    assert kw["parameters"] == ["/opt/share/rbd_ros/config/dynamics.yaml"]
    kw, _ = _node_for(launch_module, urdf_file="rbd_arm7", params_file="/my.yaml")
    assert kw["parameters"] == ["/my.yaml", {"urdf_file": "rbd_arm7"}]
    assert (kw["package"], kw["executable"], kw["name"]) == ("rbd_ros", "dynamics_node", "rbd_dynamics")
    kw, _ = _node_for(launch_module, namespace="arm", gravity_topic="/effort_controller/commands")
    assert kw["namespace"] == "arm"
    assert ("~/gravity_torques", "/effort_controller/commands") in kw["remappings"]


def test_package_xml_declares_what_the_code_imports():
    deps = {e.text for e in ET.parse(os.path.join(ROOT, "package.xml")).getroot()
            if e.tag.endswith("depend")}
    assert {"rcl_interfaces", "ament_index_python", "rclpy"} <= deps


def test_bundled_urdfs_are_installed_and_resolved_through_the_ament_index(tmp_path, monkeypatch):
    from rbd_ros.node import runtime as rtm
    with open(os.path.join(ROOT, "setup.py")) as f:
        assert '(os.path.join("share", package_name, "urdf"), glob("rbd_ros/robots/*.urdf"))' in f.read()
    # without an ament index: the package's own folder
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    assert rtm.resolve_urdf_file("rbd_arm7") == os.path.join(rtm.BUNDLED_ROBOTS_DIR, "rbd_arm7.urdf")
    # an installed prefix (what colcon makes): share/rbd_ros/urdf wins
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages" / "rbd_ros").write_text("")
    (tmp_path / "share" / "rbd_ros" / "urdf").mkdir(parents=True)
    installed = tmp_path / "share" / "rbd_ros" / "urdf" / "rbd_arm7.urdf"
    installed.write_text("<robot name='x'/>")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    assert rtm.resolve_urdf_file("rbd_arm7") == str(installed)
    with pytest.raises(ValueError, match=r"urdf_file: no such file 'nope'.*bundled: rbd_arm7"):
        rtm.resolve_urdf_file("nope")
