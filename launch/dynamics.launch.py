"""Launch the rbd_ros dynamics node.

    ros2 launch rbd_ros dynamics.launch.py                     # URDF from the robot_description topic
    ros2 launch rbd_ros dynamics.launch.py urdf_file:=rbd_arm7 # bundled 7-dof arm
    ros2 launch rbd_ros dynamics.launch.py urdf_file:=/path/robot.urdf namespace:=arm \
        params_file:=/path/my_dynamics.yaml

Feed-forward to ros2_control (a forward_command_controller with interface effort):
remap the output, e.g. the effort command (command_mode in the params file)
    effort_command_topic:=/effort_controller/commands
or the plain gravity torques
    gravity_topic:=/effort_controller/commands
(doc/ros2_control.md; an example launch file with the controller: doc/examples/).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def node_parameters(params_file: str, urdf_file: str) -> list:
    """The node's parameter sources: the params file, then ``urdf_file`` only when the
    launch argument was given (an empty argument must not override a ``urdf_file``
    set in the user's params file)."""
    params = [params_file]
    if urdf_file:
        params.append({"urdf_file": urdf_file})
    return params


def _dynamics_node(context):
    value = lambda name: LaunchConfiguration(name).perform(context)  # noqa: E731
    return [Node(
        package="rbd_ros",
        executable="dynamics_node",
        name="rbd_dynamics",
        namespace=value("namespace"),
        output="screen",
        parameters=node_parameters(value("params_file"), value("urdf_file")),
        remappings=[("joint_states", value("joint_states_topic")),
                    ("~/gravity_torques", value("gravity_topic")),
                    ("~/effort_command", value("effort_command_topic"))],
    )]


def generate_launch_description():
    default_params = os.path.join(get_package_share_directory("rbd_ros"), "config",
                                  "dynamics.yaml")
    return LaunchDescription([
        DeclareLaunchArgument("urdf_file", default_value="",
                              description="URDF path or bundled robot name (rbd_arm7); empty: "
                                          "robot_description / urdf_file from params_file, else "
                                          "the robot_description topic"),
        DeclareLaunchArgument("namespace", default_value="",
                              description="namespace of the node and its topics"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="parameter file (config/dynamics.yaml)"),
        DeclareLaunchArgument("joint_states_topic", default_value="joint_states",
                              description="joint state input topic"),
        DeclareLaunchArgument("gravity_topic", default_value="~/gravity_torques",
                              description="gravity torque output (e.g. "
                                          "/effort_controller/commands)"),
        DeclareLaunchArgument("effort_command_topic", default_value="~/effort_command",
                              description="effort command output, the law of command_mode "
                                          "(e.g. /effort_controller/commands)"),
        OpaqueFunction(function=_dynamics_node),
    ])
