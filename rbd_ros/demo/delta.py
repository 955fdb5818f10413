"""Demo: the dynamics node holding and moving the simulated delta robot, a closed-loop
parallel mechanism, from its three actuated shoulders alone.

Two processes, as in the arm's demo (``closed_loop.py``), here in lock-step (the driver
steps once the node's command for its last joint state has arrived; times are
simulated, so the numbers are the control's whatever the machine's load):

* the MuJoCo driver (``python -m rbd_ros.sim``) on the bundled ``delta``: its loop
  closures as MuJoCo equality constraints, publishing only the shoulders
  (``joints``) -- the passive elbows and wrists are the node's to work out;
* the dynamics node with ``actuated_joints`` = the shoulders: it completes every joint
  state (close_loops, loop_velocity) and commands the actuator torques of the
  constrained dynamics.

Phases: 1. gravity hold (``command_mode gravity``: the node's gravity torques alone hold
the mechanism) for 3 s; 2. computed torque along a circle of the platform (the shoulder
trajectory from the platform path by the core's loop closure: ``PlatformPath``);
3. the node stopped, no torque: the platform falls.

    python -m rbd_ros.demo.delta [--png PATH] [--no-plot]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from scipy.interpolate import CubicSpline

import rbd_ros.core as rbd
from rbd_ros.demo import run as arm_demo
from rbd_ros.demo.closed_loop import LOCK_STEP_NODE_PARAMS, SIM_PARAMS, ClosedLoop, settle
from rbd_ros.robots import bundled_robot_path

ROBOT = "delta"
ACTUATED = ["shoulder1", "shoulder2", "shoulder3"]
Q0 = (0.0, 0.0, 0.0)             # shoulders 0.4 rad below horizontal: the platform 0.78 m below the base
TOOL = "tool0"                   # the platform's frame
TRAJ_S = 3.0
RADIUS = 0.08                    # m: the platform's circle
OMEGA, ZETA = 20.0, 1.0          # computed torque: e'' + kd e' + kp e = 0 per shoulder
KP, KD = OMEGA ** 2, 2.0 * ZETA * OMEGA
STATE_PERIOD = 1.0 / 500.0
NODE_PARAMS = {"actuated_joints": ACTUATED, "command_mode": "computed_torque", "kp": [KP], "kd": [KD],
               "service_process": False, "publish_inertia": False, "publish_bias": False,
               **LOCK_STEP_NODE_PARAMS}
DELTA_SIM_PARAMS = dict(SIM_PARAMS, joints=ACTUATED, publish_rate=1.0 / STATE_PERIOD)


def model():
    return rbd.Model.from_urdf(bundled_robot_path(ROBOT))


def platform_position(m, q) -> np.ndarray:
    """The platform frame's origin in the world at a closed q: from the error of a point
    constraint between the base (world axes, 1 m up) and the platform."""
    base = rbd.Constraint("base", TOOL, name="platform")
    return np.array([0.0, 0.0, 1.0]) - rbd.constraint_error(m, q, [base])[-3:]     # (after the loops' rows)


class PlatformPath:
    """The shoulder trajectory (q, q̇, q̈) that moves the platform once around a horizontal
    circle of ``radius`` in ``duration`` s from its position at the shoulders ``q0``,
    starting and ending at rest (angle 2π (s - sin(2π s)/2π), s = t / duration).  Built by
    closing the loops with the platform pinned to the path (a point constraint to the
    world: rbd.close_loops over every joint) every 5 ms, then a clamped cubic spline per
    shoulder."""

    def __init__(self, q0=Q0, duration=TRAJ_S, radius=RADIUS, m=None):
        self.model = m = model() if m is None else m
        self.q0, self.duration, self.radius = np.asarray(q0, dtype=float), float(duration), float(radius)
        self.act = [m.q_index(j) for j in ACTUATED]
        q = np.zeros(m.nq)
        q[self.act] = self.q0
        self.q_start = rbd.close_loops(m, q, fixed=ACTUATED)
        self.p0 = platform_position(m, self.q_start)
        t = np.linspace(0.0, self.duration, int(round(self.duration / 0.005)) + 1)
        rows, q = [], self.q_start.copy()
        for x in t:
            T = np.eye(4)
            T[:3, 3] = self.platform(x)
            pin = rbd.Constraint(TOOL, None, origin_b=T, name="path")
            q = rbd.close_loops(m, q, [pin])        # every joint free: the path picks the shoulders
            rows.append(q[self.act])
        self.spline = CubicSpline(t, np.array(rows), bc_type="clamped")

    def platform(self, t: float) -> np.ndarray:
        """The desired platform position at t s from the start."""
        s = min(max(t / self.duration, 0.0), 1.0)
        th = 2.0 * np.pi * s - np.sin(2.0 * np.pi * s)
        return self.p0 + self.radius * np.array([np.cos(th) - 1.0, np.sin(th), 0.0])

    def __call__(self, t: float):
        """(q, q̇, q̈) of the shoulders at t s from the start (q0 at rest outside)."""
        if t <= 0.0 or t >= self.duration:
            return self.q0.copy(), np.zeros(3), np.zeros(3)
        return self.spline(t), self.spline(t, 1), self.spline(t, 2)


def platform_track(path: PlatformPath, t, Q):
    """The platform's actual positions at the recorded shoulder angles Q (rows), each
    closed from the previous one, and the desired ones at times t (from the start)."""
    m = path.model
    q = path.q_start.copy()
    actual, desired = [], []
    for x, qa in zip(t, Q):
        q[path.act] = qa
        q = rbd.close_loops(m, q, fixed=ACTUATED)
        actual.append(platform_position(m, q))
        desired.append(path.platform(x))
    return np.array(actual), np.array(desired)


def run_demo(png: str | None, out=print) -> int:
    ns = f"rbd_delta_demo_{os.getpid()}"
    t_wall = time.monotonic()
    out("[delta] the shoulder trajectory of a platform circle (loop closure, every 5 ms) ...")
    path = PlatformPath()
    loop = ClosedLoop(ns, NODE_PARAMS, q0=Q0, sim_params=DELTA_SIM_PARAMS, robot=ROBOT, joints=ACTUATED,
                      lock_step=True, record_commands=True)
    rc = 1
    try:
        steps = {"node": f"[delta] starting the dynamics node ({ROBOT}, actuated_joints {ACTUATED}) ...",
                 "sim": "[delta] starting the MuJoCo delta (loops as equality constraints), publishing only the "
                        "shoulders, in lock-step with the node ..."}
        failed = loop.start(100, progress=lambda step: out(steps[step]))
        if failed:
            out("[delta] " + failed)
            return 1
        out("[delta] phase 1: gravity hold (command_mode gravity) for 3 s ...")
        drift, h0, h1 = arm_demo.measure_hold(loop, 3.0)
        out(f"[delta] phase 2: computed torque, the platform once around a {RADIUS * 100:g} cm circle in "
            f"{TRAJ_S:g} s ...")
        rms, emax, c0, c1 = arm_demo.measure_tracking(loop, Q0, TRAJ_S, ref=path)
        t, Q, _, _ = loop.window(c0, c1)
        actual, desired = platform_track(path, t - c0, Q)
        perr = np.linalg.norm(actual - desired, axis=1)
        status = loop.node_status or {}
        shown = loop.window(h0 - 0.2, c1 + 0.3)        # (the states before the switch to real time)
        out("[delta] phase 3: no command (node stopped): the platform falls ...")
        if not settle(loop, Q0):
            out("[delta] the delta did not come back to rest at q0")
            return 1
        loop.set_lock_step(False)
        loop.wait_states(50)
        sag, sag_early, s0 = arm_demo.measure_sag(loop)
        out("")
        out("  phase                                   result")
        out(f"  1 gravity hold, command_mode gravity    drift over 3 s: {drift * 1e3:.2g} mrad")
        out(f"  2 computed torque, platform circle      shoulder tracking error: RMS {rms * 1e3:.3f} mrad, "
            f"max {emax * 1e3:.3f} mrad; platform: RMS {np.sqrt(np.mean(perr ** 2)) * 1e3:.3f} mm, "
            f"max {np.max(perr) * 1e3:.3f} mm")
        out(f"  3 no command (node stopped)             fall (largest shoulder): {sag_early:.3f} rad after 0.1 s, "
            f"{sag:.2f} rad after 1 s")
        if status:
            out(f"  node per joint state (lock-step): dynamics p50/p99 {status.get('compute_time_p50_us', '?')}/"
                f"{status.get('compute_time_p99_us', '?')} us; loop condition estimate {status.get('loop_cond', '?')}")
        if png:
            plot(png, shown, path, (h0, h1), (c0, c1), actual, desired)
            out(f"[delta] picture: {png}")
        rc = 0
    finally:
        loop.close()
    out(f"[delta] done in {time.monotonic() - t_wall:.1f} s")
    return rc


def plot(png, shown, path, hold, track, actual, desired):
    """Phases 1 and 2 (``shown``: the loop's window (t, Q, V, E) over them) and the
    platform's path."""
    import matplotlib  # the demo extra (optional): only the picture needs it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # (after choosing the Agg backend)
    t, Q, _, E = shown
    T0 = hold[0]
    Qd = np.array([path(x - track[0])[0] if track[0] <= x <= track[1] else [np.nan] * 3 for x in t])
    fig = plt.figure(figsize=(12, 8))
    gs = fig.add_gridspec(3, 2, width_ratios=[2.2, 1])
    ax = [fig.add_subplot(gs[0, 0])]
    ax += [fig.add_subplot(gs[i, 0], sharex=ax[0]) for i in (1, 2)]
    colors = plt.cm.tab10(np.arange(3))
    for k in range(3):
        ax[0].plot(t - T0, Q[:, k], color=colors[k], lw=1.2, label=ACTUATED[k])
        ax[0].plot(t - T0, Qd[:, k], color=colors[k], lw=2.5, ls="--", alpha=0.5)
        ax[1].plot(t - T0, (Q[:, k] - Qd[:, k]) * 1e3, color=colors[k], lw=1.0)
        ax[2].plot(t - T0, E[:, k], color=colors[k], lw=1.0)
    for a in ax:
        a.axvspan(0, hold[1] - T0, color="tab:green", alpha=0.07)
        a.axvspan(track[0] - T0, track[1] - T0, color="tab:blue", alpha=0.07)
        a.grid(alpha=0.3)
    ax[0].set_ylabel("shoulder angle (rad)\nsolid: actual, dashed: desired")
    ax[0].legend(fontsize=8, loc="lower left")
    ax[1].set_ylabel("tracking error (mrad)")
    ax[2].set_ylabel("applied torque (N m)")
    ax[2].set_xlabel("time (s): 1 gravity hold (green), 2 computed torque (blue)")
    xy = fig.add_subplot(gs[:, 1])
    xy.plot(desired[:, 0] * 1e3, desired[:, 1] * 1e3, color="0.6", lw=3, label="desired")
    xy.plot(actual[:, 0] * 1e3, actual[:, 1] * 1e3, color="tab:blue", lw=1, label="actual")
    xy.set_aspect("equal")
    xy.set_xlabel("platform x (mm)")
    xy.set_ylabel("platform y (mm)")
    xy.legend(fontsize=8)
    xy.grid(alpha=0.3)
    xy.set_title("platform path (phase 2)", fontsize=10)
    fig.suptitle("rbd_ros: the dynamics node and the MuJoCo delta robot, from its three shoulders alone "
                 "(lock-step, 1 kHz)", fontsize=11)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=90)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description="rbd_ros delta demo (node + MuJoCo delta robot)")
    ap.add_argument("--png", default=os.path.join("demo_output", "delta.png"),
                    help="where to write the picture (default: %(default)s)")
    ap.add_argument("--no-plot", action="store_true", help="no picture")
    args = ap.parse_args(argv)
    try:
        import mujoco  # noqa: F401  (the demo extra: checked before anything starts)
    except ImportError:
        print("[delta] needs MuJoCo: pip install -e '.[demo]'", file=sys.stderr)
        return 2
    return run_demo(None if args.no_plot else args.png, out=lambda s: print(s, flush=True))


if __name__ == "__main__":
    sys.exit(main())
