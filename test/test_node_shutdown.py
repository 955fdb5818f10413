"""Ctrl-C under ``ros2 launch``: SIGINT arrives from the terminal and again from
launch.  The node must exit with code 0, print no traceback and leave no worker."""
import os
import signal
import time

import pytest

from ros_harness import NodeProcess, _alive, unique_ns, wait_for


def interrupt_twice(node, gap=0.02, worker_too=True):
    kids = node.children()
    node.proc.send_signal(signal.SIGINT)
    if worker_too:  # a terminal's Ctrl-C goes to every process of the foreground group
        for k in kids:
            os.kill(k, signal.SIGINT)
    time.sleep(gap)
    node.proc.send_signal(signal.SIGINT)
    try:
        code = node.proc.wait(20)
    except Exception:
        node.proc.kill()
        raise
    return code, kids


@pytest.mark.parametrize("gap", [0.0, 0.02, 0.3])
def test_double_sigint_when_running_exits_cleanly(client, gap):
    node = NodeProcess(unique_ns("sig"), {"urdf_file": "rbd_arm7"})
    try:
        assert wait_for(lambda: "services ready" in node.log(), timeout=90), node.log()
        assert len(node.children()) == 1  # the service worker
        code, kids = interrupt_twice(node, gap)
        log = node.log()
        assert code == 0, log
        assert "Traceback" not in log and "KeyboardInterrupt" not in log, log
        assert wait_for(lambda: not any(_alive(k) for k in kids), timeout=10), log
    finally:
        node.stop()


def test_double_sigint_during_start_up_exits_cleanly(client):
    """Interrupted while loading (before the node spins)."""
    node = NodeProcess(unique_ns("sig"), {"urdf_file": "rbd_arm7"})
    try:
        assert wait_for(lambda: "loaded from" in node.log() or "service worker started"
                        in node.log(), timeout=90, period=0.002), node.log()
        code, kids = interrupt_twice(node, 0.01)
        log = node.log()
        assert code == 0, log
        assert "Traceback" not in log, log
        assert wait_for(lambda: not any(_alive(k) for k in kids), timeout=10), log
    finally:
        node.stop()
