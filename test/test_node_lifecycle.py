"""Process lifecycle over real DDS.  Ctrl-C under ``ros2 launch``: SIGINT arrives from
the terminal and again from launch; the node must exit with code 0, print no
traceback and leave no worker.  A crashed service worker is restarted."""
import os
import signal
import time

import numpy as np
import pytest
from ros_harness import (
    ARM_JOINTS,
    JointState,
    JointStateStream,
    NodeProcess,
    _alive,
    joint_state,
    publish_until,
    read_arm_urdf,
    unique_ns,
    wait_for,
)

from rbd_ros.node import dynamics_node as dn
from rbd_ros_interfaces.srv import InverseDynamics


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
    """Interrupted while joint states stream in at 500 Hz (the signal may land inside a
    control callback: no traceback from there either)."""
    node = NodeProcess(unique_ns("sig"), {"urdf_file": "rbd_arm7"})
    try:
        assert wait_for(lambda: "services ready" in node.log(), timeout=90), node.log()
        assert len(node.children()) == 1  # the service worker
        rec = client.record(JointState, node.topic("gravity_torques_state"))
        pub = client.publisher(JointState, f"/{node.ns}/joint_states")
        q0 = np.linspace(-0.4, 0.4, 7)
        _, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q0, np.zeros(7)), rec, timeout=60)
        assert got is not None, node.log()   # the node computes: callbacks are running
        with JointStateStream(pub, q0):
            time.sleep(0.2)
            code, kids = interrupt_twice(node, gap)
        log = node.log()
        assert code == 0, log
        assert "Traceback" not in log and "KeyboardInterrupt" not in log and "FATAL" not in log, log
        assert wait_for(lambda: not any(_alive(k) for k in kids), timeout=60), log
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
        assert wait_for(lambda: not any(_alive(k) for k in kids), timeout=60), log
    finally:
        node.stop()


def test_crashed_worker_is_restarted(client):
    node = NodeProcess(unique_ns("crash"), {"urdf_file": "rbd_arm7"})
    try:
        assert wait_for(lambda: "services ready" in node.log(), timeout=90), node.log()
        req = InverseDynamics.Request(name=ARM_JOINTS, position=[0.1] * 7)
        for k in range(2):  # two crashes: both restarted (the budget is 5 per 10 min)
            (pid,) = node.children()
            os.kill(pid, signal.SIGKILL)
            assert wait_for(lambda k=k: node.log().count("services ready") == k + 2, timeout=90), \
                node.log()
            assert "service worker exited with code -9; restarting it" in node.log()
            kids = wait_for(lambda: (lambda c: c if len(c) == 1 else None)(node.children()), timeout=30)
            assert kids and kids[0] != pid, (kids, pid)
            # the killed worker's service may linger in the DDS graph until its lease ends,
            # so a request can go out before the new server is matched: it is sent again
            # every 0.5 s (an ID request answered twice is one answer) until one is answered
            resp = client.call(InverseDynamics, node.topic("inverse_dynamics"), req, timeout=90,
                               resend_after=0.5)
            assert resp.success and len(resp.effort) == 7, resp.message
        assert node.alive()
    finally:
        node.stop()


class _Log:
    """An rclpy-logger stand-in that keeps the lines (WorkerClient logs info/error)."""

    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(text)

    error = warning = info


def _arm_worker(log, cache=None, monkeypatch=None):
    from rbd_ros.node.worker_client import WorkerClient
    if cache is not None:
        monkeypatch.setenv("NUMBA_CACHE_DIR", cache)      # the worker inherits it: a cold compile
    w = WorkerClient(f"/{unique_ns('wstop')}/rbd_dynamics", 1, log, on_error=log.info)
    w.send_model(read_arm_urdf(), "test", {"floating_base": False, "mimic": True, "gravity": [0.0, 0.0, -9.81]})
    w.start(expect_model=True)
    return w


def test_stopping_a_worker_that_still_compiles_ends_it_at_once(tmp_path, monkeypatch):
    """Ctrl-C during a cold start: the service worker, compiling its kernels from an empty
    numba cache, reads no stdin; closing it made the node wait 3 s (``timeout``) before
    terminating it.  stop() now terminates a worker that is not ready yet at once
    (SIGTERM: exit status -15; with a timeout of 60 s it returns well before); a ready one
    still ends by its stdin closing (status 0)."""
    log = _Log()
    w = _arm_worker(log, str(tmp_path), monkeypatch)
    proc = w.proc
    assert wait_for(lambda: os.path.exists(f"/proc/{proc.pid}") and not w.ready, timeout=60)
    t0 = time.monotonic()
    w.stop(timeout=60.0)
    took = time.monotonic() - t0
    assert not w.ready and proc.returncode == -signal.SIGTERM, (proc.returncode, log.lines)
    assert took < 30.0, took
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    log2 = _Log()
    w2 = _arm_worker(log2)
    assert wait_for(lambda: w2.ready, timeout=120), log2.lines        # the sentinel: a worker that answers
    w2.stop(timeout=60.0)
    assert w2.proc.returncode == 0, (w2.proc.returncode, log2.lines)


def test_the_worker_waits_for_the_first_output_or_a_bound():
    """The service worker's start (~1 s of CPU) waits for the control path's first output
    (dynamics_node.worker_start_reason): not while joint states are published and no output
    is out yet, at once when one is, and never longer than WORKER_WAIT_S; after
    WORKER_GRACE_S without a joint_states publisher (no output is coming) it starts too.
    That the worker then starts and serves is what every node test here shows."""
    asked = []

    def publishers(n):
        return lambda: asked.append(n) or n

    grace, bound = dn.WORKER_GRACE_S, dn.WORKER_WAIT_S
    assert 0 < grace < bound
    assert dn.worker_start_reason(0, 0.0, publishers(1)) is None
    assert dn.worker_start_reason(0, 0.0, publishers(0)) is None and asked == []   # too early to ask
    assert dn.worker_start_reason(0, grace, publishers(1)) is None
    assert dn.worker_start_reason(0, (grace + bound) / 2, publishers(3)) is None
    assert dn.worker_start_reason(1, 0.0, publishers(1)) == "the first output is out"
    assert dn.worker_start_reason(0, grace, publishers(0)).startswith("nothing publishes joint states")
    assert dn.worker_start_reason(0, bound, publishers(1)).startswith("no output after")
