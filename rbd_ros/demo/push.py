"""The demo's third phase, "push": the arm held at q0 by computed torque, the node's
momentum observer on (the efforts the driver reports), a known push at the flange through
the driver's ``~/apply_wrench``; what the node estimates (``~/external_torques``,
``~/collision``) against what was applied.

The applied joint torques are the driver's own report, ``~/applied_wrench`` (the wrench at
the link's origin in world axes, from the first joint state it acted on to the first one
without it), mapped through ``rbd.frame_jacobian(model, q, link, "local_world_aligned")``
at each joint state: Jᵀ[f; τ].  (test/test_closed_loop_contact.py checks the same against
MuJoCo's own Jacobian.)
"""
from __future__ import annotations

import time

import numpy as np
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState

import rbd_ros.core as rbd
from rbd_ros.demo.closed_loop import JOINTS, ClosedLoop, reference
from rbd_ros.robots import bundled_robot_path
from rbd_ros_interfaces.msg import Collision

FORCE = (10.0, 0.0, 0.0)          # N, world axes, at the flange origin
LINK = "flange"
GAIN = 50.0                       # observer K, 1/s
THRESHOLD = 0.5                   # N m, every joint
OBSERVER_PARAMS = {"observer": True, "observer_gain": GAIN, "observer_torque_source": "measured",
                   "collision_thresholds": [THRESHOLD]}


def _wrench(m):
    f, t = m.wrench.force, m.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z])


def measure_push(loop: ClosedLoop, robot: str, force=FORCE, link=LINK, before=0.3, after=0.4) -> dict:
    """Hold q0 (computed torque), observer on, one push for the driver's wrench_duration.
    Returns a dict: ``t`` (stamps of the joint states from ``before`` s ahead of the push
    to ``after`` s past it), ``est`` (τ̂_ext per state, NaN where the node published none),
    ``applied`` (Jᵀw per state), ``detected`` (the collision flag, NaN where none),
    ``t_on``, ``t_off``, ``rise`` / ``fall`` (s from the push's start / end to the flag's
    change, NaN if it did not), ``error`` (max over the states 5/K after the onset until
    the end of max |est − applied| / max |applied|)."""
    res = loop.set_params(command_mode="computed_torque", **OBSERVER_PARAMS)
    assert all(ok for ok, _ in res), res
    loop.desired_fn = lambda t: reference(0.0, loop.q0)
    est = loop.record("~/external_torques", JointState, lambda m: np.array(m.effort))
    flag = loop.record("~/collision", Collision, lambda m: float(m.detected))
    applied = loop.record("sim/applied_wrench", WrenchStamped, _wrench, latched=True)
    time.sleep(0.5)                                   # discovery; the observer runs at rest
    t_req = loop.now()
    loop.push(force, link)
    def first(pred):
        with loop.lock:
            return next((x for x in applied if pred(x)), None)
    if not loop._wait(lambda: first(lambda x: x[0] >= t_req - 0.01 and np.any(x[1])), 10.0, None):
        raise RuntimeError("the driver never reported the push on ~/applied_wrench")
    t_on, w_on = first(lambda x: x[0] >= t_req - 0.01 and np.any(x[1]))
    if not loop._wait(lambda: first(lambda x: x[0] > t_on and not np.any(x[1])), 15.0, None):
        raise RuntimeError("the driver never reported the end of the push")
    t_off = first(lambda x: x[0] > t_on and not np.any(x[1]))[0]
    time.sleep(after)
    loop.wait_recorded(t_off + after)
    for r in (est, flag, applied):
        loop.stop_recording(r)

    model = rbd.Model.from_urdf(bundled_robot_path(robot))
    t, Q, _, _ = loop.window(t_on - before, t_off + after)
    with loop.lock:
        by_est, by_flag = dict(est), dict(flag)
    n = len(JOINTS)
    E = np.array([by_est.get(s, np.full(n, np.nan)) for s in t]).reshape(-1, n)
    F = np.array([by_flag.get(s, np.nan) for s in t])
    A = np.zeros((len(t), n))
    on = (t >= t_on) & (t < t_off)
    for k in np.flatnonzero(on):
        A[k] = rbd.frame_jacobian(model, Q[k], link, "local_world_aligned").T @ w_on
    settled = on & (t >= t_on + 5.0 / GAIN) & ~np.isnan(E[:, 0])
    err = np.max(np.abs(E[settled] - A[settled]), axis=1) / np.max(np.abs(A[settled]), axis=1)
    up = np.flatnonzero((F == 1.0) & (t >= t_on))
    rise = t[up[0]] - t_on if up.size else np.nan
    down = np.flatnonzero((F == 0.0) & (t >= t_off))
    fall = t[down[0]] - t_off if down.size and up.size else np.nan
    return {"t": t, "est": E, "applied": A, "detected": F, "t_on": t_on, "t_off": t_off, "rise": rise,
            "fall": fall, "error": float(err.max()) if err.size else np.nan, "force": w_on[:3]}


def draw(ax, push: dict, colors) -> None:
    """The push panel: estimated (solid) vs applied (dashed) τ_ext per joint, the
    collision flag shaded, times from the push's start."""
    t = push["t"] - push["t_on"]
    have = ~np.isnan(push["est"][:, 0])        # the states the node published an estimate for
    for k in range(push["est"].shape[1]):
        ax.plot(t, push["applied"][:, k], color=colors[k], lw=2.5, ls="--", alpha=0.5)
        ax.plot(t[have], push["est"][have, k], color=colors[k], lw=1.1)
    F = push["detected"]                 # held between the states the node published none for
    last = np.maximum.accumulate(np.where(np.isnan(F), 0, np.arange(F.size)))
    flag = np.nan_to_num(F[last]) > 0.5
    lo, hi = ax.get_ylim()
    ax.fill_between(t, lo, hi, where=flag, color="tab:red", alpha=0.12, step="post", lw=0,
                    label=f"~/collision detected (|tau_ext| > {THRESHOLD:g} N m)")
    ax.set_ylim(lo, hi)
    ax.axvline(0.0, color="k", lw=0.6)
    ax.axvline(push["t_off"] - push["t_on"], color="k", lw=0.6)
    f = ", ".join(f"{x:g}" for x in push["force"])
    ax.set_title(f"3 push: force ({f}) N, world axes, at the {LINK} for "
                 f"{push['t_off'] - push['t_on']:.2f} s; observer K = {GAIN:g} 1/s on the measured efforts", fontsize=9)
    ax.set_ylabel("external torque (N m)\nsolid: ~/external_torques\ndashed: applied J^T w")
    ax.set_xlabel("time from the push's start (s)")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
