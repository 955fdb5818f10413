"""The node's side of the service worker process (see service_worker.py and the
line protocol in protocol.py): start it, feed it models, read its events,
restart it when it crashes, stop it with the node.

Restarts: a crash restarts the worker after RESTART_DELAY_S, as long as fewer than
``RestartBudget.max_crashes`` crashes happened in the last ``window_s`` seconds; past
that the services are switched off (the topics keep working) -- a worker that keeps
crashing at start-up should not loop forever, while a node that runs for months
must survive occasional crashes.
"""
from __future__ import annotations

import collections
import queue
import subprocess
import threading
import time

from rbd_ros.node import protocol

RESTART_DELAY_S = 1.0


class RestartBudget:
    """Crashes within a sliding window: ``allow(now)`` records a crash and says whether
    another restart is allowed (fewer than max_crashes crashes in the last window_s s,
    counting this one)."""

    def __init__(self, max_crashes: int = 5, window_s: float = 600.0):
        self.max_crashes = max_crashes
        self.window_s = window_s
        self.crashes = collections.deque()

    def allow(self, now: float) -> bool:
        self.crashes.append(now)
        while self.crashes and now - self.crashes[0] > self.window_s:
            self.crashes.popleft()
        return len(self.crashes) <= self.max_crashes


class WorkerClient:
    """One service worker process at a time, restarted on crashes.

    ``on_ready()`` is called (reader thread) when the worker's services exist;
    ``on_error(text)`` for worker failures; ``log`` is an rclpy logger;
    ``held_state()`` (None: no joint state here) answers the worker's state requests
    with a held_state.snapshot dict (reader thread; it must not block)."""

    def __init__(self, node_fqn: str, threads: int, log, *, on_error,
                 budget: RestartBudget | None = None, argv_python=None, relay=None,
                 held_state=None):
        self.node_fqn = node_fqn
        self.held_state = held_state
        self.relay = relay            # (in, out) topics of the trajectory relay, or None
        self.relay_counts = {"relayed": 0, "refused": 0}  # this worker's totals
        self.threads = threads
        self.log = log
        self.on_error = on_error
        self.budget = budget or RestartBudget()
        self.python = argv_python
        self.proc = None
        self.ready = False
        self.error = None     # set when the services are off for good
        self.closing = False
        self._last_model = None  # the latest model command line (resent after a restart)
        self._lock = threading.Lock()

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def start(self, expect_model: bool) -> None:
        with self._lock:
            if self.closing:
                return
            args = protocol.worker_argv(self.node_fqn, self.threads, expect_model, self.python,
                                        self.relay)
            # own session: a Ctrl-C in the terminal reaches the node only; the node stops
            # the worker by closing its stdin.
            proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    text=True, bufsize=1, start_new_session=True)
            proc.queue = queue.Queue()
            self.proc = proc
            if self._last_model is not None:
                proc.queue.put(self._last_model)
        self.log.info(f"service worker started (pid {proc.pid})")
        threading.Thread(target=self._read, args=(proc,), daemon=True,
                         name="rbd_ros_worker_reader").start()
        threading.Thread(target=self._write, args=(proc,), daemon=True,
                         name="rbd_ros_worker_writer").start()

    def send_model(self, urdf: str, where: str, options: dict) -> None:
        """Queue a model for the worker (a writer thread feeds its stdin: never blocks).
        ``options``: Robot.options (floating_base, mimic, gravity; armature, payloads and
        friction_velocity_eps when payload.build_robot made it)."""
        line = protocol.model_command(urdf, where, options["floating_base"], options["mimic"],
                                      options["gravity"], options.get("armature"),
                                      tuple((options.get("payloads") or {}).values()),
                                      options.get("friction_velocity_eps"), options.get("loops"),
                                      options.get("contacts"))
        with self._lock:
            self._last_model = line
            if self.proc is not None:
                self.proc.queue.put(line)

    def _write(self, proc):
        while True:
            line = proc.queue.get()
            if line is None:
                break
            try:
                proc.stdin.write(line + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as e:
                if not self.closing:
                    self.log.error(f"service worker unreachable: {e}")
                break

    def _read(self, proc):
        for line in proc.stdout:
            ev = protocol.parse_event(line)
            if ev is None:
                continue
            if ev["event"] == protocol.EVENT_READY:
                self.ready = True
                self.log.info("services ready (worker process)")
            elif ev["event"] == protocol.EVENT_STATE_REQUEST:
                self._answer_state(proc, ev.get("id", 0))
            elif ev["event"] == protocol.EVENT_RELAY:
                self.relay_counts = {"relayed": ev["relayed"], "refused": ev["refused"]}
            elif ev["event"] == protocol.EVENT_MODEL and not ev.get("ok"):
                self.on_error(f"service worker: {ev.get('error')}")
        code = proc.wait()
        self.ready = False
        if self.closing:
            return
        text = f"service worker exited with code {code}"
        self.on_error(text)
        if self.budget.allow(time.monotonic()):
            self.log.error(text + "; restarting it")
            time.sleep(RESTART_DELAY_S)
            self.start(expect_model=self._last_model is not None)
        else:
            self.error = (f"{text}: {len(self.budget.crashes)} crashes within "
                          f"{self.budget.window_s:g} s; services are OFF")
            self.log.error(self.error)
            self.on_error(self.error)

    def _answer_state(self, proc, k) -> None:
        """Queue the node's latest joint state for the worker (the writer thread sends it)."""
        try:
            snap = self.held_state() if self.held_state is not None else \
                {"error": "the node keeps no joint state for the services"}
        except Exception as e:  # a reply must go out whatever happens: the worker waits for it
            snap = {"error": f"internal error: {type(e).__name__}: {e}"}
        proc.queue.put(protocol.state_reply(k, snap))

    def stop(self, timeout: float = 3.0) -> None:
        """End the worker: a ready one by closing its stdin (it exits; terminated after
        ``timeout`` s, then killed, if it does not), one still starting (importing,
        compiling its kernels: it reads no stdin until it has loaded its model) at once
        by SIGTERM."""
        with self._lock:
            self.closing = True
            proc = self.proc
            ready = self.ready
        if proc is None:
            return
        proc.queue.put(None)
        if not ready:
            try:
                proc.terminate()
            except OSError:
                pass
        try:
            proc.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
