"""The ROS 2 node of rbd_ros (rclpy).  Entry point: ``rbd_ros.node.main:main``
(console script ``dynamics_node``; ``python -m rbd_ros.node`` works too)."""


def quiet_numba_cache_warnings():
    """numba warns on every start that it cannot cache the parallel batch kernels
    ("Cannot cache compiled function ... dynamic globals"); harmless for the node."""
    import warnings
    warnings.filterwarnings("ignore", message="Cannot cache compiled function")
