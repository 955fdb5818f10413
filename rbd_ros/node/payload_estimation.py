"""``~/estimate_payload`` (rbd_ros_interfaces/srv/EstimatePayload): an unknown payload on
a link, identified from the joint states the node received in the last ``seconds``,
and optionally applied as the node's payload on that link.

No rclpy here: ``answer`` fills the service response; the node calls it in its
background thread (never the control thread) with the Robot in use.  Steps:

1. the rows of the window of recent joint states (recent.py: messages that carried a
   position, a velocity and an effort for every DOF) received in the last ``seconds``;
2. their header stamps as the time base when they are positive and strictly
   increasing (the robot's clock: right under simulated time too), else the
   receive times;
3. ``rbd_ros.core.estimation.signals.prepare``: zero-phase low-pass at ``payload_cutoff``,
   qdd by central differences, decimation (as ``rbd_identify`` does); gaps up to
   ``GAP_CUTOFFS / payload_cutoff`` s (messages lost in a burst) are bridged by linear
   interpolation (the filter keeps nothing that fast), longer ones split the data;
4. ``rbd_ros.core.estimation.payload_identification.identify_payload`` on the model in use
   *without* the payload it may already carry on ``link`` (the estimate is the whole
   load on the link, and applying it replaces that payload), with the model's
   friction and armature, refused above condition number ``MAX_CONDITION``;
5. ``apply``: ``set_payloads([payload])`` (ModelManager.set_payloads: all or nothing,
   with its checks).

Every refusal says which field (link, seconds, a parameter, JointState.effort ...)
and what was expected; success is false and the model is unchanged.  With ``apply``
true and the estimate refused by the payload checks, success is false too, the
response still carrying the estimate.
"""
from __future__ import annotations

import gc
import math
import sys
from dataclasses import dataclass

import numpy as np

from rbd_ros.core.calls import registry
from rbd_ros.core.estimation.identification import ExcitationError
from rbd_ros.core.estimation.payload_identification import identify_payload
from rbd_ros.core.estimation.signals import RecordingError, prepare
from rbd_ros.node import payload as pl
from rbd_ros.node import warmup
from rbd_ros.node.services import NO_MODEL, friction_eps

MAX_CONDITION = 1000.0      # as rbd_identify's --max-cond default
MIN_SAMPLES = 50            # filtered samples (each gives one row per joint) for 10 parameters
COVER = 0.05                # the rows may start this fraction of ``seconds`` late
GAP_CUTOFFS = 0.5           # longest gap bridged, in periods of the cut-off (50 ms at 10 Hz)
KERNELS = ("rnea", "regressor")     # the core kernels identify_payload runs (rbd_precompile step names)


class EstimateError(ValueError):
    """A refused request; the text names the field."""


@dataclass
class Result:
    """An estimate and how it was made."""
    estimate: object            # core PayloadEstimate
    span: float                 # s of joint states used
    rows: int                   # joint states used (before filtering)
    time_base: str              # "header stamps" or "receive times"
    replaced: tuple | None      # (mass, com, inertia) of the payload the link carried, or None


def _no_rows_text(rt, rec, seconds: float, now: float) -> str:
    """Why no complete joint state arrived in the last ``seconds``."""
    missing, _ = rt.missing_and_stale(now, 0.0)
    if len(missing) == rt.ndof:
        return "no joint states received yet (topic joint_states): nothing to estimate from"
    if missing:
        return f"joints {missing} never received on joint_states: every joint of the model is needed"
    no_effort = [rt.dof_names[i] for i in range(rt.ndof) if rt.effort_stamp[i] == -math.inf]
    if no_effort:
        which = "carry no efforts" if len(no_effort) == rt.ndof else f"carry no efforts for {no_effort}"
        return (f"JointState.effort: the joint_states messages {which}; the estimation needs the torques the "
                "joints apply (measured joint torques, or motor current x torque constant)")
    if rt.warned_no_velocity:
        return "JointState.velocity: the joint_states messages carry no velocities; the estimation needs them"
    if rec.written == 0:
        return ("no joint_states message carried a position, a velocity and a finite effort for every joint of "
                "the model (the estimation needs all of them in one message)")
    ago = now - _newest(rec)
    return (f"seconds: no joint state with positions, velocities and efforts in the last {seconds:g} s (the last "
            f"one arrived {ago:.3g} s ago): move the robot now, or ask for more seconds")


def _newest(rec) -> float:
    row = (rec.written - 1) % rec.capacity
    return float(rec.data[row, -1])


def _check_request(rt, rec, link, seconds):
    if rt is None:
        raise EstimateError(NO_MODEL)
    if rt.loops is not None:
        raise EstimateError("the model has closed loops: the payload estimation needs a kinematic tree (every joint "
                            "measured, with its torque)")
    if rt.floating:
        raise EstimateError("the model has a floating base: the node keeps it at rest at the origin and receives no "
                            "base motion, so a payload cannot be estimated from joint states alone")
    model = rt.model
    if not isinstance(link, str) or not link:
        raise EstimateError(f"link: expected the name of the URDF link carrying the payload, got {link!r}")
    if link not in model.link_names:
        close = model.close_links(link)
        raise EstimateError(f"link: {link!r} is not a link of the model"
                            + (f"; did you mean {close}?" if close else ""))
    if model.links[model.link_index(link)].body < 0:
        raise EstimateError(f"link: {link!r} is fixed to the world: a payload there moves no joint")
    if not (math.isfinite(seconds) and seconds > 0):
        raise EstimateError(f"seconds: expected a number > 0 (s of recent joint states), got {seconds!r}")
    if rec is None:
        raise EstimateError("parameter payload_window is 0: the node keeps no joint states to estimate from "
                            "(set it to the seconds to keep)")
    if seconds > rec.window:
        raise EstimateError(f"seconds: {seconds:g} s is more than the node keeps (parameter payload_window = "
                            f"{rec.window:g} s)")
    return rec


def compile_kernels(log=None) -> None:
    """Compile the identification's kernels in a helper process (``rbd_precompile --step``)
    into numba's disk cache when they are not there, and wait for it: compiling them in
    this process would hold the GIL for seconds and stall the torque stream.  Loading
    them from the cache afterwards takes milliseconds.  A failing helper is no error
    (the first call then compiles here)."""
    if not registry.will_compile(KERNELS):
        return
    if log is not None:
        log.warning("estimate_payload: compiling the regressor kernels (numba) in a helper process, once: the "
                    "cache is empty (a fresh install; `rbd_precompile` compiles everything ahead of time)")
    helper = warmup.compile_in_helper(KERNELS)
    if helper is not None:
        warmup.wait_for_helper(helper, lambda: False, timeout=600.0)


def estimate(rt, rec, link: str, seconds: float, cutoff: float, now: float, log=None) -> Result:
    """The payload on ``link`` from Robot ``rt``'s joint states received in the last
    ``seconds`` before ``now`` (monotonic s), held by ``rec`` (recent.RecentStates, None
    while payload_window is 0), filtered at ``cutoff`` Hz.  EstimateError
    naming the field; ImportError without scipy.  ``log``: says when kernels compile."""
    seconds = float(seconds)
    rec = _check_request(rt, rec, link, seconds)
    w = rec.rows_since(now - seconds)
    if w is None:
        raise EstimateError(_no_rows_text(rt, rec, seconds, now))
    held = now - rec.oldest_receive_time()
    if held < (1.0 - COVER) * seconds:
        raise EstimateError(f"seconds: {seconds:g} s asked, but the node holds joint states with positions, velocities "
                            f"and efforts from the last {max(held, 0.0):.3g} s only (since the node started, the "
                            "model's joints changed or payload_window was set): wait, or ask for fewer seconds")
    stamps = w.stamp
    if stamps.size > 1 and stamps[0] > 0 and np.all(np.diff(stamps) > 0):
        t, base = stamps, "header stamps"
    else:
        t, base = w.recv, "receive times"
    try:
        s = prepare(t, w.q, w.v, w.tau, cutoff_hz=cutoff, max_gap=GAP_CUTOFFS / cutoff)
    except RecordingError as e:
        text = str(e)
        if text.startswith("cutoff_hz:"):
            raise EstimateError("parameter payload_cutoff:" + text[len("cutoff_hz:"):]) from None
        raise EstimateError(f"seconds: the joint states of the last {seconds:g} s cannot be filtered ({text})") \
            from None
    if len(s.t) < MIN_SAMPLES:
        raise EstimateError(f"seconds: too few samples: {len(s.t)} after filtering ({w.q.shape[0]} joint states; "
                            f"need {MIN_SAMPLES}); the filter drops {4.0 / cutoff:.3g} s at each end: ask for more "
                            "seconds")
    model = rt.model
    replaced = model.payloads.get(link)
    if replaced is not None:
        model = model.without_payload(link)
    compile_kernels(log)
    try:
        est = identify_payload(model, link, s.q, s.v, s.a, s.tau, velocity_eps=friction_eps(rt),
                               max_condition=MAX_CONDITION)
    except ExcitationError as e:
        text = str(e)
        raise EstimateError(text if text.startswith("too little excitation") else
                            f"too little excitation: {text}") from None
    except ValueError as e:     # the core refuses the model or the samples (its text names the argument)
        raise EstimateError(f"the payload cannot be estimated on this model: {e}") from None
    values = np.concatenate([[est.mass], est.com, est.inertia6, [est.mass_std], est.com_std, est.inertia_std])
    if not np.all(np.isfinite(values)):
        raise EstimateError("the estimate is not finite (the joint states do not determine the payload): move the "
                            f"joints between the robot base and {link!r} more")
    return Result(est, float(t[-1] - t[0]), int(w.q.shape[0]), base, replaced)


def _text(res: Result) -> str:
    e = res.estimate
    c, sc = e.com, e.com_std
    before = float(np.sqrt(np.mean(e.rms_before ** 2)))
    after = float(np.sqrt(np.mean(e.rms_after ** 2)))
    return (f"payload on {e.link!r}: {e.mass:.4g} ± {e.mass_std:.2g} kg, com ({c[0]:.4g}, {c[1]:.4g}, {c[2]:.4g}) "
            f"± ({sc[0]:.2g}, {sc[1]:.2g}, {sc[2]:.2g}) m"
            + (" (inertia projected onto physically consistent payloads)" if e.projected else "")
            + f"; torque residual RMS {after:.3g} (model alone {before:.3g}), condition number "
            f"{e.condition_number:.3g}, {e.n_samples} samples from {res.rows} joint states over {res.span:.3g} s "
            f"({res.time_base})"
            + (f"; replaces the {res.replaced[0]:g} kg payload on that link" if res.replaced is not None else ""))


_frozen = False


def _freeze_imports() -> None:
    """Once scipy is imported (the first estimate), move its ~30 000 objects out of the
    cyclic collector's reach, as heap.freeze_heap did at start-up for the rest: a full
    collection over them takes ~10 ms, a stall of the control path.  gc.freeze alone
    (no collection first) is O(1)."""
    global _frozen
    if not _frozen and "scipy" in sys.modules:
        gc.freeze()
        _frozen = True


def answer(rt, rec, request, response, cutoff: float, now: float, set_payloads, log=None):
    """Fill an EstimatePayload response for ``request`` (link, seconds, apply) from Robot
    ``rt`` and its window of recent joint states ``rec`` (module docstring);
    ``set_payloads(list of payload.Payload) -> text`` applies (ModelManager.set_payloads).
    Returns the response."""
    response.applied = False
    try:
        res = estimate(rt, rec, request.link, request.seconds, cutoff, now, log)
    except EstimateError as e:
        _freeze_imports()
        response.success, response.message = False, str(e)
        return response
    except ImportError as e:
        response.success = False
        response.message = (f"the payload estimation needs scipy ({e}): install the identification extra "
                            "(pip install 'rbd_ros[ident]', or python3-scipy)")
        return response
    _freeze_imports()
    e = res.estimate
    p = response.payload
    p.m = float(e.mass)
    p.com.x, p.com.y, p.com.z = (float(x) for x in e.com)
    p.ixx, p.ixy, p.ixz, p.iyy, p.iyz, p.izz = (float(x) for x in e.inertia6)
    response.stddev = [float(e.mass_std)] + [float(x) for x in e.com_std] + [float(x) for x in e.inertia_std]
    response.residual_rms = float(np.sqrt(np.mean(e.rms_after ** 2)))
    response.samples = int(e.n_samples)
    text = _text(res)
    response.success = True
    if request.apply:
        payload = pl.Payload(link=e.link, mass=float(e.mass), com=tuple(float(x) for x in e.com),
                             inertia=tuple(float(x) for x in e.inertia6),
                             fields=(("link", "link"), ("mass", "payload.m"), ("com", "payload.com"),
                                     ("inertia", "payload.ixx..izz")))
        try:
            text += f"; applied: {set_payloads([payload])}"
            response.applied = True
        except ValueError as err:   # PayloadError (the model in use stays)
            response.success = False
            text += f"; NOT applied: {err}"
    else:
        text += "; not applied (apply false)"
    response.message = text
    return response
