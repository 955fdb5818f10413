"""``ros2 run rbd_ros dynamics_node [--ros-args ...]``

Signals: the first SIGINT/SIGTERM stops the node (rclpy shuts its context down, which
ends the spin loop; a KeyboardInterrupt unwinds a start-up still in progress -- not a
running node, where it would surface inside a callback as a logged traceback); any further ones
(``ros2 launch`` forwards a terminal Ctrl-C that the node got already) are ignored
while it shuts down -- also during the interpreter's exit --, so it exits with
code 0 and no traceback."""
import logging
import os
import signal
import sys


class _Once:
    """Python-level SIGINT/SIGTERM handler: KeyboardInterrupt the first time during the
    start-up, nothing after, nor once the node spins (``spinning``: the context's shutdown
    ends the spin loop).  Installed before rclpy.init, whose own handler (shut down the
    context, wake the executors) runs first and then chains to this one."""

    def __init__(self):
        self.fired = False
        self.spinning = False

    def __call__(self, signum, frame):
        if self.fired:
            return
        self.fired = True
        if not self.spinning:
            raise KeyboardInterrupt


def main(args=None):
    once = _Once()
    signal.signal(signal.SIGINT, once)
    signal.signal(signal.SIGTERM, once)
    node = None
    try:
        import rclpy

        from rbd_ros.node.dynamics_node import DEFAULT_NAME, DynamicsNode

        rclpy.init(args=sys.argv if args is None else args)
        node = DynamicsNode(node_name=DEFAULT_NAME)
        once.spinning = True
        node.spin()
    except KeyboardInterrupt:
        pass
    finally:
        once.fired = True  # from here on, signals are ignored: finish the shutdown
        if node is not None:
            node.destroy()
        if "rclpy" in sys.modules:
            sys.modules["rclpy"].try_shutdown()
        # Python's finalisation resets signals with a Python handler to SIG_DFL, so a
        # late SIGINT would kill the exiting process (exit code -2); ignored ones stay so.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if node is not None:
        # Everything is shut down (worker stopped, nodes destroyed, context shut down).
        # Leave without the interpreter's finalisation: its teardown of rclpy/Fast DDS
        # objects can end in std::terminate ("terminate called without an active
        # exception", exit code -6), seen about once in ten Ctrl-Cs under load.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
