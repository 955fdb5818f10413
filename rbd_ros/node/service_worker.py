"""The dynamics services in a process of their own.

Why a process: rclpy deserialises a service request in one C call that holds
the GIL, during which a thread of the same process (the control path) cannot
run (bench/RESULTS.md has the numbers).  A child process has its own
interpreter and its own DDS participant, so long queries never stall the
torque stream.

The node (worker_client.WorkerClient) starts it and talks to it with the line
protocol of protocol.py: model commands on stdin, events on stdout.  The worker
creates the services under NODE_FQN (``NODE_FQN/inverse_dynamics`` etc.) -- after
loading the first model when EXPECT_MODEL is 1 --, answers them with
``rbd_ros.node.services`` (and ``planner_services``; the joint state they hold unnamed
joints at comes from the node on request: held_state.py), and exits when its stdin closes (the node is gone or
stopping) or on SIGTERM.  SIGINT is ignored: the node runs it in a session of
its own, and a Ctrl-C (possibly several, under ``ros2 launch``) is the node's to
handle -- the worker then ends with the node, without a traceback.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

_REPORT_LOCK = threading.Lock()   # events come from the model reader and the executor threads


def _report(line: str):
    try:
        with _REPORT_LOCK:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
    except (OSError, ValueError):  # the parent is gone; stdin EOF ends the worker
        pass


def main(argv=None):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # imported only now, SIGINT ignored: a Ctrl-C during the imports is the node's to handle
    import numba
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    from rbd_ros.node import constrained_services, planner_services, protocol
    from rbd_ros.node import model_build as mb
    from rbd_ros.node.heap import freeze_heap
    from rbd_ros.node.held_state import HeldStateRequester
    from rbd_ros.node.services import create_dynamics_services

    args = protocol.parse_argv(sys.argv[1:] if argv is None else argv)

    if args.threads > 0:
        numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)
    ns, _, base = args.node_fqn.rpartition("/")
    node = rclpy.create_node(base + "_services", namespace=ns or "/",
                             use_global_arguments=False, start_parameter_services=False)
    log = node.get_logger()
    state = {"runtime": None}

    def load(line):
        try:
            rt = mb.build_robot(joints=(), services=True, **protocol.parse_model_command(line))
        except Exception as e:  # the parent validated it; report, keep the old model
            log.error(f"service worker could not build the model: {e}")
            _report(protocol.event_model(False, error=str(e)))
            return
        state["runtime"] = rt
        if rt.fd_error:  # found by the services' warm-up, here (the node does not run FD)
            log.warning(f"model {rt.model.name!r}: forward dynamics is not available ({rt.fd_error}); "
                        "the forward dynamics services will refuse requests, everything else works")
        _report(protocol.event_model(True, name=rt.model.name, dof=rt.ndof))

    stop = threading.Event()
    wake = node.create_guard_condition(lambda: None)  # wakes the executor when stop is set

    held = HeldStateRequester(_report, protocol.event_state_request)

    def read_models():
        try:
            for line in sys.stdin:
                reply = protocol.parse_state_reply(line)
                if reply is not None:
                    held.deliver(*reply)
                else:
                    load(line)
        finally:
            # stdin closed (or unreadable): the parent is gone.  Stop spinning; should
            # anything hang on the way out, do not linger as an orphan.
            guard = threading.Timer(5.0, os._exit, args=(0,))
            guard.daemon = True
            guard.start()
            stop.set()
            wake.trigger()

    if args.expect_model:  # the node has a model already: no service before it is loaded here
        line = sys.stdin.readline()
        if not line:
            return 0
        load(line)
    create_dynamics_services(node, args.node_fqn, lambda: state["runtime"], log,
                             extra=planner_services.table(held) + constrained_services.table(held))
    if args.relay:  # the trajectory relay (relay.py says why it runs here)
        from rbd_ros.node.relay import TrajectoryRelay
        TrajectoryRelay(node, *args.relay, lambda: state["runtime"], log,
                        on_count=lambda a, b: _report(protocol.event_relay(a, b)), held=held)
    threading.Thread(target=read_models, daemon=True, name="model_reader").start()
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    freeze_heap()
    _report(protocol.event_ready())
    try:
        while rclpy.ok() and not stop.is_set():
            ex.spin_once(timeout_sec=1.0)  # idle bound only: work and ``wake`` end the wait
    except ExternalShutdownException:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
