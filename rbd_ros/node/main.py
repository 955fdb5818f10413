"""``ros2 run rbd_ros dynamics_node [--ros-args ...]`` (``-h``/``--help``: the usage, nothing
else is started or imported)

Signals: SIGINT and SIGTERM are handled here, not by rclpy (``rclpy.init`` with
``SignalHandlerOptions.NO``): rclpy's own handler shuts the context down at once, from a
thread of its own, while the start-up or the executors still use it (an executor created
after that raises ``RCLError: failed to create guard_condition``).  Here the first signal

* during the start-up (model, compile, node construction) raises KeyboardInterrupt, which
  unwinds it;
* once the node spins, makes a thread stop it (``DynamicsNode.request_stop``: both
  executors are shut down, their loops end): CPython writes the signal number to a wakeup
  fd (``signal.set_wakeup_fd``) that this thread reads, so it acts at once, also while the
  main thread waits inside an executor (where the Python-level handler cannot run).

Then, in this order: the service worker is stopped and both nodes destroyed (their rosout
publishers with them), the rclpy context is shut down, child processes still running are
ended, and the process exits with code 0.  So nothing is logged through a node whose
context is gone ("Failed to publish log message to rosout: publisher's context is
invalid").  A KeyboardInterrupt lands between any two Python instructions of the start-up,
also inside library code: what it breaks on its way out (an exception raised while it
unwinds, a half-built object whose finaliser fails, e.g. rclpy's ``RcutilsLogger.__del__``)
is part of the interruption and not reported once the signal came.  Further signals (``ros2
launch`` forwards a terminal Ctrl-C that the node got already) are ignored while it shuts
down, also during the exit."""
import logging
import os
import signal
import sys
import threading
import time

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

USAGE = """\
usage: ros2 run rbd_ros dynamics_node [-h] [--ros-args ...]
       ros2 launch rbd_ros dynamics.launch.py [urdf_file:=...] [params_file:=...]

The rbd_ros dynamics node (default name rbd_dynamics): rigid-body dynamics of the robot
in robot_description, for the joint states it receives.

  in   robot_description (std_msgs/String, latched)   the URDF; or the robot_description
                                                       / urdf_file parameter
       joint_states (sensor_msgs/JointState)
       ~/desired_state (trajectory_msgs/JointTrajectory, one point)   for command_mode
       ~/payload (geometry_msgs/InertiaStamped)
  out  ~/gravity_torques, ~/bias_torques, ~/inertia_matrix (std_msgs/Float64MultiArray)
       ~/effort_command (Float64MultiArray: for a forward_command_controller, effort)
       ~/*_state twins (sensor_msgs/JointState, stamped with the input), /diagnostics
       ~/external_torques, ~/external_wrench, ~/collision (parameter observer: true)
  srv  ~/inverse_dynamics, ~/forward_dynamics (+ _trajectory), ~/set_payload,
       ~/estimate_payload (rbd_ros_interfaces); ~/reset_observer (std_srvs/Trigger)

Parameters: ros2 param list / describe / dump /rbd_dynamics; the defaults with comments
are in config/dynamics.yaml (share/rbd_ros/config).  Example:
  ros2 run rbd_ros dynamics_node --ros-args -p urdf_file:=rbd_arm7 \\
      -r ~/effort_command:=/effort_controller/commands
Documentation: doc/node.md and doc/parameters.md of the rbd_ros sources.
"""


def wants_help(argv) -> bool:
    """True if ``-h`` or ``--help`` is among the arguments (``argv[1:]``; no ROS argument
    is spelled so, nor is it one token of one)."""
    return any(arg in ("-h", "--help") for arg in argv[1:])


class _Stop:
    """The Python-level SIGINT/SIGTERM handler (runs in the main thread, between two Python
    instructions, possibly inside an executor callback): the first signal raises
    KeyboardInterrupt during the start-up; once ``spinning``, the thread of
    ``_stop_on_signal`` stops the node instead.  Later signals do nothing."""

    def __init__(self):
        self.fired = False
        self.spinning = False

    def __call__(self, signum, frame):
        if self.fired:
            return
        self.fired = True
        sys.unraisablehook = _after_stop
        if not self.spinning:
            raise KeyboardInterrupt


def _after_stop(unraisable):
    """sys.unraisablehook once a stop signal came: finalisers of objects that the signal
    left half-built fail (e.g. rclpy's RcutilsLogger.__del__, interrupted inside
    __init__); that is the interruption, not an error to report."""


def _stop_on_signal(stop: _Stop, node) -> None:
    """From now on a SIGINT/SIGTERM stops ``node`` (``request_stop``) from a thread of its
    own, woken through CPython's signal wakeup fd; marks ``stop`` as spinning."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def watch():
        while True:
            data = os.read(r, 64)
            if not data:
                return
            if any(s in data for s in STOP_SIGNALS):
                node.request_stop()

    threading.Thread(target=watch, daemon=True, name="rbd_ros_signals").start()
    stop.spinning = True


def _children() -> list:
    """pids of this process's child processes (Linux /proc; [] elsewhere)."""
    kids = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def _end_children(timeout: float = 3.0) -> None:
    """SIGTERM the child processes still running (the service worker of a node whose
    construction was interrupted, before it had a handle to stop it), reap them, SIGKILL
    what is left after ``timeout`` s."""
    kids = _children()
    for pid in kids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    end = time.monotonic() + timeout
    while kids and time.monotonic() < end:
        for pid in list(kids):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:   # reaped by its Popen object already
                done = pid
            if done:
                kids.remove(pid)
        time.sleep(0.02)
    for pid in kids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _shut_down(node) -> None:
    """Stop the worker and destroy the nodes, then shut the context down: in that order, so
    that nothing is logged through a node whose context is gone."""
    if node is not None:
        node.destroy()
    rclpy = sys.modules.get("rclpy")
    if rclpy is not None:
        try:
            rclpy.try_shutdown()
        except Exception:  # rclpy's import was interrupted: nothing to shut down
            pass
    _end_children()


def main(args=None):
    argv = sys.argv if args is None else args
    if wants_help(argv):
        print(USAGE, end="")
        return 0
    stop = _Stop()
    for s in STOP_SIGNALS:
        signal.signal(s, stop)
    node = None
    try:
        try:
            # imported only now, with the signal handlers in place: a Ctrl-C during these
            # (seconds of) imports exits quietly too
            import rclpy
            from rclpy.signals import SignalHandlerOptions

            from rbd_ros.node.dynamics_node import DEFAULT_NAME, DynamicsNode

            rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
            node = DynamicsNode(node_name=DEFAULT_NAME)
            _stop_on_signal(stop, node)
            if not stop.fired:
                node.spin()
        except KeyboardInterrupt:
            pass
        except Exception:
            if not stop.fired:
                raise
            # raised while the signal's KeyboardInterrupt unwound the start-up (library
            # code that handles one exception by raising another): part of the interruption
        finally:
            stop.fired = True  # from here on, signals are ignored: finish the shutdown
            _shut_down(node)
    finally:
        # Python's finalisation resets signals with a Python handler to SIG_DFL, so a
        # late SIGINT would kill the exiting process (exit code -2); ignored ones stay so.
        for s in STOP_SIGNALS:
            signal.signal(s, signal.SIG_IGN)
    # Everything is shut down (worker stopped, nodes destroyed, context shut down).  Leave
    # without the interpreter's finalisation: its teardown of rclpy/Fast DDS objects (of a
    # node whose construction was interrupted, too) can end in std::terminate ("terminate
    # called without an active exception", exit code -6).
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
