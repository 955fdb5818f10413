"""``ros2 run rbd_ros dynamics_node [--ros-args ...]``"""
import sys


def main(args=None):
    from rbd_ros.node import quiet_numba_cache_warnings
    quiet_numba_cache_warnings()
    import rclpy

    from rbd_ros.node.dynamics_node import DEFAULT_NAME, DynamicsNode

    rclpy.init(args=sys.argv if args is None else args)
    node = None
    try:
        node = DynamicsNode(node_name=DEFAULT_NAME)
        node.spin()
    except KeyboardInterrupt:
        pass
    finally:
        if node is not None:
            node.destroy()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
