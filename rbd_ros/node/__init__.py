"""The ROS 2 node of rbd_ros (rclpy).  Entry point: ``rbd_ros.node.main:main``
(console script ``dynamics_node``; ``python -m rbd_ros.node`` works too)."""

