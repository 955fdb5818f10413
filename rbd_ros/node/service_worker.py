"""The dynamics services in a process of their own.

Why a process: rclpy deserialises a service request in one C call that holds
the GIL; for a 10 000-point trajectory (~2 MB) that is ~100 ms here, during
which a thread of the same process (the control path) cannot run.  A child
process has its own interpreter and its own DDS participant, so long queries
never stall the torque stream.

The parent (DynamicsNode) starts ``python -m rbd_ros.node.service_worker
NODE_FQN THREADS EXPECT_MODEL`` and writes one JSON line per model change to its stdin:
``{"urdf": ..., "where": ..., "floating_base": ..., "mimic": ..., "gravity": [...]}``.
The worker creates the services under NODE_FQN (``NODE_FQN/inverse_dynamics``
etc.) -- after loading the first model when EXPECT_MODEL is 1 --, answers them with ``rbd_ros.node.services`` and reports on stdout with
JSON lines (``{"event": "ready"}``, ``{"event": "model", ...}``).  It exits
when its stdin closes (the parent is gone) or on SIGINT/SIGTERM.
"""
from __future__ import annotations

import json
import os
import sys
import threading


def _report(**kw):
    try:
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):  # the parent is gone; stdin EOF ends the worker
        pass


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    node_fqn, threads = argv[0], int(argv[1])
    expect_model = len(argv) > 2 and argv[2] == "1"
    from rbd_ros.node import quiet_numba_cache_warnings
    quiet_numba_cache_warnings()
    import numba
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    from rbd_ros.node import runtime as rtm
    from rbd_ros.node.dynamics_node import create_dynamics_services, freeze_heap

    if threads > 0:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    rclpy.init(args=[])
    ns, _, base = node_fqn.rpartition("/")
    node = rclpy.create_node(base + "_services", namespace=ns or "/",
                             use_global_arguments=False, start_parameter_services=False)
    log = node.get_logger()
    state = {"runtime": None}

    def load(line):
        try:
            cmd = json.loads(line)
            rt = rtm.build_runtime(cmd["urdf"], floating_base=cmd["floating_base"],
                                   mimic=cmd["mimic"], gravity=cmd["gravity"], joints=(),
                                   source=cmd["where"])
        except Exception as e:  # the parent validated it; report, keep the old model
            log.error(f"service worker could not build the model: {e}")
            _report(event="model", ok=False, error=str(e))
            return
        state["runtime"] = rt
        _report(event="model", ok=True, name=rt.model.name, dof=rt.ndof)

    stop = threading.Event()
    wake = node.create_guard_condition(lambda: None)  # wakes the executor when stop is set

    def read_models():
        try:
            for line in sys.stdin:
                load(line)
        finally:
            # stdin closed (or unreadable): the parent is gone.  Stop spinning; should
            # anything hang on the way out, do not linger as an orphan.
            guard = threading.Timer(5.0, os._exit, args=(0,))
            guard.daemon = True
            guard.start()
            stop.set()
            wake.trigger()

    if expect_model:  # the node has a model already: no service before it is loaded here
        line = sys.stdin.readline()
        if not line:
            return 0
        load(line)
    create_dynamics_services(node, node_fqn, lambda: state["runtime"], log)
    threading.Thread(target=read_models, daemon=True, name="model_reader").start()
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    freeze_heap()
    _report(event="ready")
    try:
        while rclpy.ok() and not stop.is_set():
            ex.spin_once(timeout_sec=1.0)  # idle bound only: work and ``wake`` end the wait
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
