"""Packaging for ROS users: launch argument handling, package.xml keys, bundled URDFs
installed under share/rbd_ros/urdf and resolved through the (real) ament index.

ROS ``launch``/``launch_ros`` are not on PyPI, so the launch files are executed against
minimal stand-ins of the launch classes they use; what is checked is the files' own
logic (which parameter sources and remappings the node gets, what the ros2_control
example passes to dynamics.launch.py), not ROS launch itself."""
import importlib.util
import os
import sys
import types
import xml.etree.ElementTree as ET

import pytest
import yaml
from core_util import ARM_JOINTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = os.path.join(ROOT, "launch", "dynamics.launch.py")
EXAMPLE_LAUNCH = os.path.join(ROOT, "doc", "examples", "effort_controller.launch.py")


class _Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration:
    def __init__(self, name):
        self.name = name

    def perform(self, context):
        return context[self.name]


def _load_launch(monkeypatch, path, name):
    """A launch file, imported with stand-in launch modules."""
    mods = {
        "launch": types.ModuleType("launch"),
        "launch.actions": types.ModuleType("launch.actions"),
        "launch.substitutions": types.ModuleType("launch.substitutions"),
        "launch.launch_description_sources": types.ModuleType("launch.launch_description_sources"),
        "launch_ros": types.ModuleType("launch_ros"),
        "launch_ros.actions": types.ModuleType("launch_ros.actions"),
        "ament_index_python.packages": types.ModuleType("ament_index_python.packages"),
    }
    mods["launch"].LaunchDescription = _Recorder
    mods["launch.actions"].DeclareLaunchArgument = _Recorder
    mods["launch.actions"].OpaqueFunction = _Recorder
    mods["launch.actions"].IncludeLaunchDescription = _Recorder
    mods["launch.launch_description_sources"].PythonLaunchDescriptionSource = _Recorder
    mods["launch.substitutions"].LaunchConfiguration = _LaunchConfiguration
    mods["launch_ros.actions"].Node = _Recorder
    mods["ament_index_python.packages"].get_package_share_directory = lambda pkg: f"/opt/share/{pkg}"
    for mod_name, mod in mods.items():
        monkeypatch.setitem(sys.modules, mod_name, mod)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def launch_module(monkeypatch):
    """launch/dynamics.launch.py, imported with stand-in launch modules."""
    return _load_launch(monkeypatch, LAUNCH, "dynamics_launch")


def _opaque_actions(module, **given):
    """(what the file's OpaqueFunction returns for these launch arguments, the declared
    arguments' defaults)."""
    desc = module.generate_launch_description()
    actions = desc.args[0]
    defaults = {a.args[0]: a.kwargs["default_value"] for a in actions
                if "default_value" in a.kwargs}
    unknown = set(given) - set(defaults)
    assert not unknown, f"launch arguments not declared by the file: {unknown}"
    context = {**defaults, **given}
    opaque, = [a for a in actions if "function" in a.kwargs]
    return opaque.kwargs["function"](context), defaults


def _node_for(module, **given):
    (node,), defaults = _opaque_actions(module, **given)
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
    from rbd_ros import robots as rtm
    with open(os.path.join(ROOT, "setup.py")) as f:
        assert '(os.path.join("share", package_name, "urdf"), glob("rbd_ros/robots/*.urdf"))' in f.read()
    # without an ament index: the package's own folder
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    assert rtm.resolve_urdf_file("rbd_arm7") == os.path.join(rtm.PACKAGE_DIR, "rbd_arm7.urdf")
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


def test_launch_remaps_the_effort_command(launch_module):
    """effort_command_topic: ~/effort_command to a ros2_control controller's commands (it
    could not be remapped from the launch file)."""
    kw, defaults = _node_for(launch_module)
    # by default every output keeps its name (a remapping to itself)
    assert ("~/effort_command", "~/effort_command") in kw["remappings"]
    assert defaults["effort_command_topic"] == "~/effort_command"
    kw, _ = _node_for(launch_module, effort_command_topic="/effort_controller/commands")
    assert ("~/effort_command", "/effort_controller/commands") in kw["remappings"]
    assert ("~/gravity_torques", "~/gravity_torques") in kw["remappings"]


def test_ros2_control_example_wires_the_controller_to_the_effort_command(monkeypatch, launch_module):
    """doc/examples/effort_controller.launch.py: the spawner loads a ForwardCommandController
    with the given parameter file; the included dynamics.launch.py gets only arguments it
    declares, and its node then publishes ~/effort_command on that controller's commands
    topic with the example's parameters."""
    example = _load_launch(monkeypatch, EXAMPLE_LAUNCH, "effort_controller_launch")
    for given, controller in (({}, "effort_controller"),
                              ({"controller": "arm_effort", "controllers_file": "/c.yaml",
                                "dynamics_params": "/d.yaml"}, "arm_effort")):
        (spawner, include), defaults = _opaque_actions(example, **given)
        args = spawner.kwargs["arguments"]
        assert (spawner.kwargs["package"], spawner.kwargs["executable"]) == ("controller_manager", "spawner")
        assert args[0] == controller
        assert args[args.index("--controller-type") + 1] == \
            "forward_command_controller/ForwardCommandController"
        controllers_file = given.get("controllers_file", defaults["controllers_file"])
        assert args[args.index("--param-file") + 1] == controllers_file
        source, = include.args
        assert source.args == ("/opt/share/rbd_ros/launch/dynamics.launch.py",)
        launch_args = dict(include.kwargs["launch_arguments"])
        assert launch_args["effort_command_topic"] == f"/{controller}/commands"
        # what the included file makes of them (an undeclared argument fails _node_for)
        kw, _ = _node_for(launch_module, **launch_args)
        assert ("~/effort_command", f"/{controller}/commands") in kw["remappings"]
        assert kw["parameters"] == [given.get("dynamics_params", defaults["dynamics_params"])]


def test_ros2_control_example_files_agree():
    """The example's controller and node parameter files name the same joints in the same
    order (the command is a plain array in the node's `joints` order), the bundled arm's."""
    folder = os.path.dirname(EXAMPLE_LAUNCH)
    with open(os.path.join(folder, "effort_controller.yaml")) as f:
        controller = yaml.safe_load(f)["effort_controller"]["ros__parameters"]
    with open(os.path.join(folder, "dynamics_effort.yaml")) as f:
        node = yaml.safe_load(f)["/**/rbd_dynamics"]["ros__parameters"]
    assert controller["interface_name"] == "effort"
    assert controller["joints"] == node["joints"] == list(ARM_JOINTS)
    assert node["command_mode"] in ("gravity", "feedforward", "computed_torque")
