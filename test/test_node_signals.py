"""Ctrl-C at every phase of the node's start-up, over real DDS: before the model, during a
cold compile (an empty numba cache of the test's own, so it really compiles; the signal to
the node alone and, as a terminal sends it, to its whole process group), the instant
"listening on" is logged, before the services are ready, during the first messages, and
at moments spread over the whole start-up.  Every time: exit code 0, nothing on
stdout/stderr that a user would take for a crash or a broken shutdown (also no "Failed to
publish log message to rosout": nothing may log through a node whose context is gone), and
no child process (the precompile helper, the service worker) left behind."""
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
from ros_harness import (
    ARM_JOINTS,
    ROOT,
    JointState,
    JointStateStream,
    _alive,
    joint_state,
    process_children,
    publish_until,
    unique_ns,
    wait_for,
)

from rbd_ros.node import warmup

# what a user would read as a crash or a broken shutdown
CRASH_SIGNS = ("Traceback", "Exception ignored", "KeyboardInterrupt", "RCLError", "terminate called",
               "Segmentation fault", "Failed to publish log message to rosout", "logger_sublogger_namepair")


class Node:
    """``python -m rbd_ros.node`` on the bundled arm, in a session of its own (so that a
    signal can go to its whole process group, as a terminal's Ctrl-C does)."""

    def __init__(self, ns, env=None, python_args=("-m", "rbd_ros.node")):
        self.ns = ns
        self.out = tempfile.NamedTemporaryFile("w+", prefix=f"rbd_sig_{ns}_", suffix=".log", delete=False)
        e = dict(os.environ)
        e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
        e["PYTHONUNBUFFERED"] = "1"
        e["RCUTILS_COLORIZED_OUTPUT"] = "0"
        e.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, *python_args, "--ros-args", "-r", f"__ns:=/{ns}",
             "-p", "urdf_file:=rbd_arm7"],
            stdout=self.out, stderr=subprocess.STDOUT, env=e, start_new_session=True)
        self.seen_children = set()

    def log(self) -> str:
        with open(self.out.name) as f:
            return f.read()

    def children(self):
        kids = process_children(self.proc.pid)
        self.seen_children.update(kids)
        return kids

    def wait_log(self, text, timeout=90.0):
        """Until ``text`` is in the output (polled every ms: the signal must follow it
        closely); also records the children seen meanwhile."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.log():
                self.children()
                return True
            if self.proc.poll() is not None:
                return False
            self.children()
            time.sleep(0.001)
        return False

    def interrupt(self, group=False):
        self.children()
        if group:
            os.killpg(self.proc.pid, signal.SIGINT)
        else:
            self.proc.send_signal(signal.SIGINT)

    def finish(self, timeout=30.0):
        """(exit code, output, children still alive 10 s after the exit)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            code = "timeout"
        wait_for(lambda: not any(_alive(k) for k in self.seen_children), timeout=60)
        left = [k for k in self.seen_children if _alive(k)]
        return code, self.log(), left

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for k in self.seen_children:
            if _alive(k):
                os.kill(k, signal.SIGKILL)
        self.out.close()
        os.unlink(self.out.name)


def assert_clean_exit(node):
    code, log, left = node.finish()
    assert code == 0, log
    for sign in CRASH_SIGNS:
        assert sign not in log, log
    assert not left, f"children left behind: {left}\n{log}"
    return log


def _maps(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return f.read()
    except OSError:
        return ""


def test_sigint_before_the_model():
    node = Node(unique_ns("sig_pre"))
    try:
        # rclpy's extension is loaded (main() is past its signal set-up), no model yet
        assert wait_for(lambda: "_rclpy_pybind11" in _maps(node.proc.pid), timeout=60, period=0.002)
        assert "loaded from" not in node.log()
        node.interrupt()
        assert_clean_exit(node)
        assert "loaded from" not in node.log()
    finally:
        node.cleanup()


def _helper_of(node):
    """pids of the node's precompile helper processes."""
    helpers = []
    for k in node.children():
        try:
            with open(f"/proc/{k}/cmdline") as f:
                if "rbd_ros.precompile" in f.read():
                    helpers.append(k)
        except OSError:
            pass
    return helpers


@pytest.mark.parametrize("group", [False, True], ids=["node_only", "process_group"])
def test_sigint_during_a_cold_compile(group):
    """An empty numba cache: the node logs that it compiles and starts the precompile
    helper; the signal comes while both compile.  To the node alone (kill -INT), the
    helper must still end with it (it waited up to 120 s as an orphan); to the process
    group (a terminal's Ctrl-C), the helper must end quietly (it printed ~100 lines of
    tracebacks)."""
    with tempfile.TemporaryDirectory(prefix="rbd_numba_cache_") as cache:
        node = Node(unique_ns("sig_cc"), env={"NUMBA_CACHE_DIR": cache})
        try:
            assert node.wait_log("compiling the control-path kernels", timeout=60), node.log()
            # the first line says it in one short, complete sentence (issue 22: it was seen cut)
            line = next(x for x in node.log().splitlines() if "compiling the control-path kernels" in x)
            text = line.split("]: ", 1)[1].rstrip()
            assert text == warmup.first_start_line("control-path", warmup.CONTROL_PATH_S) and len(text) <= 80
            assert wait_for(lambda: _helper_of(node), timeout=60), node.log()
            time.sleep(1.0)   # both processes are compiling now
            assert _helper_of(node) and "kernels ready" not in node.log(), node.log()
            node.interrupt(group=group)
            assert_clean_exit(node)
        finally:
            node.cleanup()


@pytest.mark.parametrize("delay", [0.0, 0.0, 0.0, 0.03, 0.1])
def test_sigint_at_listening_on(delay):
    """The instant the node says it listens, it is about to spin (gc.freeze takes 50-135
    ms there): a SIGINT then shut the context down under the executors being built
    (RCLError, exit code 1, in 5 of 7 tries)."""
    node = Node(unique_ns("sig_lo"))
    try:
        assert node.wait_log("listening on", timeout=90), node.log()
        time.sleep(delay)
        node.interrupt()
        assert_clean_exit(node)
    finally:
        node.cleanup()


def test_sigint_during_the_first_messages(client):
    """joint_states stream in at 500 Hz; the signal comes right after the first torque."""
    node = Node(unique_ns("sig_fm"))
    try:
        assert node.wait_log("listening on", timeout=90), node.log()
        rec = client.record(JointState, f"/{node.ns}/rbd_dynamics/gravity_torques_state")
        pub = client.publisher(JointState, f"/{node.ns}/joint_states")
        q0 = np.linspace(-0.4, 0.4, 7)
        with JointStateStream(pub, q0):
            _, got = publish_until(pub, lambda: joint_state(ARM_JOINTS, q0, np.zeros(7)), rec, timeout=30)
            assert got is not None, node.log()   # the node computes: callbacks are running
            node.interrupt()
            assert_clean_exit(node)
    finally:
        node.cleanup()


def test_sigint_before_the_services_are_ready():
    """The node spins, its service worker still starts: every such Ctrl-C logged "Failed to
    publish log message to rosout: publisher's context is invalid" (the worker's "services
    ready" arrived after rclpy's signal handler had shut the context down)."""
    node = Node(unique_ns("sig_sr"))
    try:
        assert node.wait_log("listening on", timeout=90), node.log()
        # the executors spin (the worker starts from a timer of theirs: WORKER_GRACE_S here,
        # with nothing publishing joint states)
        assert wait_for(lambda: node.children(), timeout=30, period=0.005), node.log()
        assert "services ready" not in node.log(), node.log()
        node.interrupt()
        assert_clean_exit(node)
    finally:
        node.cleanup()


@pytest.mark.parametrize("after", [0.0, 0.3, 0.6, 0.9, 1.2])
def test_sigint_at_moments_spread_over_the_start_up(after):
    """``after`` s after main() set its signal handling up (sentinel: rclpy's extension is
    mapped; before that the interpreter itself starts, where a SIGINT is Python's default
    KeyboardInterrupt as for any program): the rest of the imports, model build, warm-up,
    worker start, spin -- the start-up with a warm cache takes ~1-2 s here."""
    node = Node(unique_ns("sig_t"))
    try:
        assert wait_for(lambda: "_rclpy_pybind11" in _maps(node.proc.pid), timeout=60, period=0.002)
        time.sleep(after)
        node.interrupt()
        assert_clean_exit(node)
    finally:
        node.cleanup()


# rclpy's RcutilsLogger.__init__ sets ``name``, then ``logger_sublogger_namepair``; a
# SIGINT between the two leaves an object whose __del__ fails ("Exception ignored in
# RcutilsLogger.__del__ ... no attribute 'logger_sublogger_namepair'", seen once in a
# fuzz of Ctrl-C times).  This start-up makes the signal land exactly there.
_INTERRUPTED_LOGGER = """
import signal, sys
import rclpy.impl.rcutils_logger as rl
done = []
def __init__(self, name=''):
    self.name = name
    if 'rbd_dynamics' in name and not done:
        done.append(1)
        try:
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):   # the handler runs at the next check between instructions
                pass
        except KeyboardInterrupt:
            print('sentinel: the signal interrupted RcutilsLogger.__init__', file=sys.stderr,
                  flush=True)
            raise
    self.logger_sublogger_namepair = None
    self.contexts = {}
rl.RcutilsLogger.__init__ = __init__
from rbd_ros.node.main import main
main(sys.argv)
"""


def test_sigint_inside_an_rclpy_logger_constructor():
    node = Node(unique_ns("sig_lg"), python_args=("-c", _INTERRUPTED_LOGGER))
    try:
        log = assert_clean_exit(node)
        assert "sentinel: the signal interrupted RcutilsLogger.__init__" in log, log
        assert "listening on" not in log, log
    finally:
        node.cleanup()
