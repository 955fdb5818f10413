"""rbd_ros: rigid-body dynamics for ROS 2.

``rbd_ros.core`` is the ROS-free dynamics engine; the ROS 2 node lives in
``rbd_ros.node`` and is the only part that imports rclpy.
"""
__version__ = "0.1.0"
