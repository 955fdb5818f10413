"""Command-line tools on rbd_ros.core (no ROS node): ``rbd_identify``."""
