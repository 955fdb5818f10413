"""Example: rbd_ros's ~/effort_command driving a ros2_control forward_command_controller.

Copy it (with effort_controller.yaml and dynamics_effort.yaml, edited for your robot)
into your bringup package, or run it from here.  Your own launch must already start the
robot's ros2_control (controller_manager's ros2_control_node) and robot_state_publisher
(the node takes the URDF from /robot_description):

    ros2 launch <this folder>/effort_controller.launch.py
    ros2 launch <this folder>/effort_controller.launch.py controller:=my_effort_controller \
        controllers_file:=/path/controllers.yaml dynamics_params:=/path/dynamics.yaml

It starts
* controller_manager's spawner: loads ``controller`` (a ForwardCommandController, its
  joints and ``interface_name: effort`` from controllers_file) and activates it;
* rbd_ros's dynamics.launch.py with ``effort_command_topic:=/<controller>/commands`` and
  the node's parameters from dynamics_params: ``joints`` = the controller's joints in the
  same order (the command is a plain array in that order), ``command_mode`` (gravity,
  feedforward or computed_torque).
Needs ros-jazzy-controller-manager and ros-jazzy-forward-command-controller (not
dependencies of rbd_ros).  doc/ros2_control.md says more.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription

HERE = os.path.dirname(os.path.abspath(__file__))


def _actions(context):
    value = lambda name: LaunchConfiguration(name).perform(context)  # noqa: E731
    controller = value("controller")
    dynamics = os.path.join(get_package_share_directory("rbd_ros"), "launch", "dynamics.launch.py")
    return [
        Node(package="controller_manager", executable="spawner", output="screen",
             arguments=[controller,
                        "--controller-type", "forward_command_controller/ForwardCommandController",
                        "--param-file", value("controllers_file")]),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(dynamics),
            launch_arguments={"params_file": value("dynamics_params"),
                              "effort_command_topic": f"/{controller}/commands"}.items()),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("controller", default_value="effort_controller",
                              description="name of the ForwardCommandController to spawn"),
        DeclareLaunchArgument("controllers_file",
                              default_value=os.path.join(HERE, "effort_controller.yaml"),
                              description="the controller's parameters (joints, interface_name)"),
        DeclareLaunchArgument("dynamics_params",
                              default_value=os.path.join(HERE, "dynamics_effort.yaml"),
                              description="rbd_ros node parameters (joints, command_mode, ...)"),
        OpaqueFunction(function=_actions),
    ])
