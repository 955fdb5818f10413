"""Launch the MuJoCo robot driver (rbd_ros.sim): a simulated arm behind ROS 2 topics.

    ros2 launch rbd_ros sim.launch.py                                   # bundled 7-dof arm
    ros2 launch rbd_ros sim.launch.py urdf_file:=/path/robot.urdf namespace:=arm \
        initial_positions:='[0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0]'

Publishes joint_states (position, velocity, applied effort) and, with
publish_description:=true, robot_description; applies efforts from
effort_command (Float64MultiArray in `joints` order). Close the loop with the
dynamics node, e.g. command_topic:=/rbd_dynamics/gravity_torques.
lock_step:=true steps only when the command answering the last state arrived;
floating_base:=true puts a legged robot on a ground plane (and publishes base_state);
clamp_effort:=false applies efforts beyond the URDF's limits. Every other driver
parameter (doc/sim.md): ros2 run rbd_ros sim_driver --ros-args --params-file FILE.
Needs MuJoCo: pip install 'rbd_ros[sim]'.
"""
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from launch import LaunchDescription


def generate_launch_description():
    urdf_file = LaunchConfiguration("urdf_file")
    namespace = LaunchConfiguration("namespace")
    rate = LaunchConfiguration("rate")
    command_timeout = LaunchConfiguration("command_timeout")
    initial_positions = LaunchConfiguration("initial_positions")
    publish_description = LaunchConfiguration("publish_description")
    joint_states = LaunchConfiguration("joint_states_topic")
    command_topic = LaunchConfiguration("command_topic")
    lock_step = LaunchConfiguration("lock_step")
    command_state_topic = LaunchConfiguration("command_state_topic")
    clamp_effort = LaunchConfiguration("clamp_effort")
    floating_base = LaunchConfiguration("floating_base")
    return LaunchDescription([
        DeclareLaunchArgument("urdf_file", default_value="rbd_arm7",
                              description="URDF path or bundled robot name (rbd_arm7)"),
        DeclareLaunchArgument("namespace", default_value="",
                              description="namespace of the node and its topics"),
        DeclareLaunchArgument("rate", default_value="1000.0",
                              description="physics steps per second (real time)"),
        DeclareLaunchArgument("command_timeout", default_value="0.05",
                              description="s; older effort commands are replaced by zero"),
        DeclareLaunchArgument("initial_positions", default_value="[0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0]",
                              description="initial joint positions in joints order ([] = zeros; "
                                          "the default fits the bundled arm)"),
        DeclareLaunchArgument("publish_description", default_value="true",
                              description="publish the URDF on robot_description (transient local)"),
        DeclareLaunchArgument("joint_states_topic", default_value="joint_states",
                              description="joint state output topic"),
        DeclareLaunchArgument("command_topic", default_value="effort_command",
                              description="effort command input (e.g. /rbd_dynamics/gravity_torques)"),
        DeclareLaunchArgument("lock_step", default_value="false",
                              description="step in lock-step with effort_command_state (simulated time)"),
        DeclareLaunchArgument("command_state_topic", default_value="effort_command_state",
                              description="lock-step command input (e.g. /rbd_dynamics/effort_command_state)"),
        DeclareLaunchArgument("clamp_effort", default_value="true",
                              description="clamp applied efforts at the URDF's effort limits (counted)"),
        DeclareLaunchArgument("floating_base", default_value="false",
                              description="a floating-base robot on a ground plane (publishes base_state)"),
        Node(
            package="rbd_ros",
            executable="sim_driver",
            name="sim_driver",
            namespace=namespace,
            output="screen",
            parameters=[{
                "urdf_file": urdf_file,
                "rate": ParameterValue(rate, value_type=float),
                "command_timeout": ParameterValue(command_timeout, value_type=float),
                "initial_positions": ParameterValue(initial_positions, value_type=None),
                "publish_description": ParameterValue(publish_description, value_type=bool),
                "lock_step": ParameterValue(lock_step, value_type=bool),
                "clamp_effort": ParameterValue(clamp_effort, value_type=bool),
                "floating_base": ParameterValue(floating_base, value_type=bool),
            }],
            remappings=[("joint_states", joint_states), ("effort_command", command_topic),
                        ("effort_command_state", command_state_topic)],
        ),
    ])
