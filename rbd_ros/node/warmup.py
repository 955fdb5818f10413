"""Start-up compilation of the numba kernels, split by the process that needs them.

numba compiles each kernel on its first call and keeps the machine code in its
cache (``__pycache__`` next to the sources, or ``NUMBA_CACHE_DIR``); a start with
a warm cache loads them in about a second.  On the first start after an install the
cache is empty and compiling everything takes minutes of CPU, so the work is split:

* ``model_build.warm_control_path`` (the node process, before the first torque): only
  what the torque topics use -- ``compensation_into`` (g, b, H in one call), ``rnea_into``
  (computed torque), the joint-state merge kernel and the command law's kernels.  From
  an empty cache a second process (``rbd_precompile --step``, the steps of
  ``model_build.precompile_steps``) compiles CRBA, the command law's kernels and the merge
  kernel into the disk cache meanwhile (the other core), so the node's own compile is
  about RNEA's alone.
* ``warm_services`` (the service worker, a process of its own, so on the other core
  and while the node already publishes): inverse and forward dynamics, single, batch
  and with external wrenches; the planners (``retime``, ``payload_capacity``).  Also
  finds out whether forward dynamics is available for the model (``Robot.fd_error``: a
  singular H at the neutral pose).

Both log a line *before* compiling when the cache is cold, saying why the start is
slow and how long it usually takes (``rbd_precompile`` does the same work ahead of
time, e.g. right after an install).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.core import compile_steps
from rbd_ros.core.calls import registry

# seconds from node start to the control path / the services on a cold first start, quoted
# in the first-start log line so that a user knows what to expect (bench/first_start.py)
CONTROL_PATH_S = 10
SERVICES_S = 15


def log_line(log, text: str) -> None:
    if log is None:
        try:
            from rclpy.logging import get_logger  # the node's logger; plain logging without rclpy
            log = get_logger("rbd_ros")
        except Exception:  # pragma: no cover - rclpy missing: plain Python logging
            import logging
            log = logging.getLogger("rbd_ros")
    log.info(text)


def cold(names, kernels=()) -> bool:
    """True if a kernel behind the core's public functions ``names`` or one of the node's
    own ``kernels`` will be compiled (not in memory, not in numba's disk cache)."""
    return registry.will_compile(names, kernels)


def announce(what: str, names, kernels, seconds: int, log):
    """Log the first-start line if the kernels must be compiled; returns (start time,
    cold)."""
    is_cold = cold(names, kernels)
    if is_cold:
        log_line(log, first_start_line(what, seconds))
    return time.perf_counter(), is_cold


def first_start_line(what: str, seconds: int) -> str:
    """The first-start log line: one short, complete sentence (issue 22: the long one was
    seen cut mid-sentence); the rest is said when the kernels are ready (``ready_line``)."""
    return f"first start: compiling the {what} kernels (numba), ~{seconds} s once"


def ready_line(what: str, seconds: float) -> str:
    """The line that ends a first start's compile."""
    return (f"{what} kernels ready after {seconds:.1f} s; they are cached now (later starts load them in ~1 s; "
            "`rbd_precompile` compiles every kernel ahead of time, e.g. after an install)")


# the core's public functions each process calls
CONTROL_PATH = ("compensation_into", "rnea_into")
SERVICES = ("rnea", "forward_dynamics")

# what the first start's helper process compiles for the control path (precompile step
# names: model_build.precompile_steps), CRBA first: compensation_into waits for it
HELPER_STEPS = ("crba (one state)", "node command law kernels", "node merge kernel")


def compile_in_helper(helper_steps=HELPER_STEPS):
    """From a cold cache, compile the precompile steps ``helper_steps`` (default: CRBA, the
    command law's and the merge kernel) in a second process (the other core) into numba's
    disk cache while this one compiles RNEA: ``compensation_into`` needs both RNEA and
    CRBA, and numba loads a kernel from the disk cache when it is there.  None if it
    cannot start."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        steps = [arg for step in helper_steps for arg in ("--step", step)]
        # --parent: the helper ends with this process (a Ctrl-C or kill of the node must
        # not leave it compiling, or waiting for a cache entry, as an orphan); a session of
        # its own: a terminal's Ctrl-C goes to the node only, as for the service worker
        return subprocess.Popen([sys.executable, "-m", "rbd_ros.precompile", "--quiet",
                                 "--parent", str(os.getpid()), *steps],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    except OSError:
        return None


def wait_for_helper(helper, ready, timeout=300.0) -> None:
    """Until ``ready()`` or the helper process has exited; past ``timeout`` the helper is
    killed (this process then compiles what is missing itself: slower, no harm done)."""
    end = time.monotonic() + timeout
    while not ready() and helper.poll() is None:
        if time.monotonic() > end:
            helper.kill()
            helper.wait()
            return
        time.sleep(0.02)


# the core's public names behind the momentum observer's outputs, and the precompile steps
# that compile them
OBSERVER = ("MomentumObserver", "external_wrench", "CollisionDetector") + compile_steps.CONTACT_ENTRIES
OBSERVER_STEPS = compile_steps.CONTACT_ENTRIES + (compile_steps.CONTACT_STEP,)


def warm_observer(model, frame, log=None) -> None:
    """Compile (in a helper process, if numba's cache lacks them: this process keeps the
    GIL free for the control path) and run once the kernels of the momentum observer, the
    wrench at ``frame`` and the collision detector.  Called before an observer is handed to
    the control path."""
    if registry.will_compile(OBSERVER):
        t0 = time.perf_counter()
        log_line(log, "first use: compiling the momentum observer's kernels (numba) in a helper process")
        helper = compile_in_helper(OBSERVER_STEPS)
        if helper is not None:
            wait_for_helper(helper, lambda: False)
        log_line(log, ready_line("observer", time.perf_counter() - t0))
    compile_steps.warm_contact(model, frame)


def warm_services(rt, log=None) -> None:
    """Compile and run once what the services use; sets ``rt.fd_error`` (None, or why
    forward dynamics is not available for this model)."""
    t0, was_cold = announce("service", SERVICES, (), SERVICES_S, log)
    model = rt.model
    q = np.array(model.neutral(), dtype=np.float64)
    z = np.zeros(model.nv)
    qb, zb = np.tile(q, (2, 1)), np.zeros((2, model.nv))
    fe = np.zeros((len(model.link_names), 6))
    rbd.rnea(model, q, z, z)
    rbd.rnea(model, qb, zb, zb)
    rbd.rnea(model, q, z, z, f_ext=fe, f_ext_frame="world")
    rt.fd_error = None
    for args, kw in (((q, z, z), {}), ((qb, zb, zb), {}),
                     ((q, z, z), {"f_ext": fe, "f_ext_frame": "local"})):
        try:
            rbd.forward_dynamics(model, *args, **kw)
        except ValueError as e:  # singular H at the neutral pose
            rt.fd_error = str(e)
    warm_planners(model)
    if was_cold:
        log_line(log, ready_line("service", time.perf_counter() - t0))


def warm_planners(model) -> None:
    """Run ``rbd.retime`` and ``rbd.payload_capacity`` once (their compiled kernels: the
    reachability pass, batch RNEA and gravity) on a short path inside ``model``'s position
    limits.  The kernels do not depend on the robot; a model the planners refuse (a
    floating base) or that gives them nothing to do is skipped -- its requests are refused
    with the reason anyway."""
    if model.nq != model.nv:
        return
    lim = np.asarray(model.position_limit, dtype=np.float64)
    finite = np.isfinite(lim).all(axis=1)
    mid = np.where(finite, lim.mean(axis=1), 0.0)
    step = np.where(finite, 0.01 * (lim[:, 1] - lim[:, 0]), 0.01)
    try:
        rbd.retime(model, np.array([mid, mid + step]), acceleration_limits=1.0, effort_limits=1e9)
        rbd.payload_capacity(model, model.link_names[-1], np.tile(mid, (2, 1)), a=np.ones((2, model.nv)),
                             effort_limits=1e9)
    except ValueError:  # e.g. a last link fixed to the world: nothing feels a payload there
        pass
