"""The closed-loop demo (``scripts/demo.sh``, ``python -m rbd_ros.demo``): the dynamics
node holding and moving the simulated arm, measured and plotted.  The phases, the
processes and the trajectory are described in ``closed_loop.py`` (the harness this
module drives).

    python -m rbd_ros.demo [--png PATH] [--rate HZ] [--no-plot]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from rbd_ros.demo.closed_loop import (
    JOINTS,
    KD,
    KP,
    NODE_PARAMS,
    Q0,
    ROBOT,
    SIM_PARAMS,
    TRAJ_S,
    ClosedLoop,
    reference,
    reference_batch,
    settle,
)
from rbd_ros.demo.push import GAIN, LINK, THRESHOLD, draw, measure_push


def measure_hold(loop: ClosedLoop, seconds: float):
    """Gravity mode from now on; returns (drift rad = max |q(t) - q(t0)| over the window
    and the joints, t0, t1)."""
    res = loop.set_params(command_mode="gravity")
    assert all(ok for ok, _ in res), res
    t0 = loop.sync() + 0.05    # the switch is in effect (the answer comes after it)
    loop.sleep(seconds)
    loop.wait_recorded(t0 + seconds)
    t, Q, _, _ = loop.window(t0, t0 + seconds)
    if len(t) < 2:
        raise RuntimeError("no joint states during the hold")
    return float(np.max(np.abs(Q - Q[0]))), t0, t0 + seconds


def measure_tracking(loop: ClosedLoop, q0=Q0, duration=TRAJ_S, settle=0.3, ref=None):
    """Computed-torque mode (desired = q0 meanwhile), then the demo trajectory (or
    ``ref(t)`` -> (q, v, a), t from its start) as desired states; returns (rms rad, max
    rad, t_start, t_end), errors q(t) - q_d(t) at the joint states' stamps over the
    trajectory (times: ``loop.now()``, wall-clock or simulated)."""
    if ref is None:
        def ref(t):
            return reference(t, q0, duration)
    loop.desired_fn = lambda t: reference(0.0, q0)
    res = loop.set_params(command_mode="computed_torque")
    assert all(ok for ok, _ in res), res
    loop.sleep(settle)
    # (lock-step runs faster than this process reacts: a wider margin)
    t_start = loop.sync() + (0.2 if loop.lock_step else 0.05)
    loop.desired_fn = lambda t: ref(t - t_start)
    loop.sleep(duration)
    loop.wait_recorded(t_start + duration)
    t, Q, _, _ = loop.window(t_start, t_start + duration)
    if len(t) < 2:
        raise RuntimeError("no joint states during the trajectory")
    Qd = np.array([ref(x)[0] for x in t - t_start])
    e = Q - Qd
    return float(np.sqrt(np.mean(e ** 2))), float(np.max(np.abs(e))), t_start, t_start + duration


def measure_sag(loop: ClosedLoop, seconds=1.0, early=0.1):
    """Stop the node; from the first joint state with zero applied effort on, how far the
    arm falls in `seconds` and in `early` s (max over joints of |q - q(t0)|, rad);
    (sag, early sag, t0)."""
    t_stop = loop.now()
    loop.stop_node()
    ok = loop._wait(lambda: any(s[0] > t_stop and not np.any(s[3]) for s in loop.states[-200:]),
                    10.0, None)
    if not ok:
        raise RuntimeError("the driver never applied zero effort after the node stopped")
    t, Q, _, E = loop.window(t_stop, math.inf)
    i0 = int(np.argmax(~np.any(E != 0.0, axis=1)))
    t0 = t[i0]
    time.sleep(max(0.0, t0 + seconds - loop.now()))
    loop.wait_recorded(t0 + seconds)
    t, Q, _, _ = loop.window(t0, t0 + seconds)
    k = int(np.searchsorted(t, t0 + early))
    early_q = Q[min(k, len(t) - 1)]
    return float(np.max(np.abs(Q[-1] - Q[0]))), float(np.max(np.abs(early_q - Q[0]))), t0


def run_demo(png: str | None, desired_rate=500.0, out=print):
    ns = f"rbd_demo_{os.getpid()}"
    t_wall = time.monotonic()
    loop = ClosedLoop(ns, NODE_PARAMS, sim_params=SIM_PARAMS, desired_rate=desired_rate)
    rc = 1
    try:
        steps = {"node": f"[demo] starting the dynamics node ({ROBOT}, command_mode computed_torque, "
                         f"kp {KP:g} 1/s^2, kd {KD:g} 1/s) ...",
                 "sim": f"[demo] starting the MuJoCo arm at q0 = {list(Q0)}: joint_states -> node, "
                        f"node ~/effort_command -> driver"}
        failed = loop.start(200, progress=lambda step: out(steps[step]))
        if failed:
            out("[demo] " + failed)
            return 1
        out("[demo] phase 1: gravity hold (command_mode gravity) for 3 s ...")
        drift, h0, h1 = measure_hold(loop, 3.0)
        out(f"[demo] phase 2: computed torque tracking a {TRAJ_S:g} s trajectory "
            f"(desired states at {desired_rate:g} Hz) ...")
        before = loop.sim_counters(wait=False)
        rms, emax, c0, c1 = measure_tracking(loop)
        after = loop.sim_counters()
        stalls = {k: after[k] - before[k] for k in after if after[k] != before[k]}
        out(f"[demo] phase 3: push: the arm held at q0, observer on (K {GAIN:g} 1/s), 10 N at the {LINK} "
            "through the driver's ~/apply_wrench ...")
        if not settle(loop):
            out("[demo] the arm did not come back to rest at q0 (machine too loaded?)")
            return 1
        push = measure_push(loop, ROBOT)
        time.sleep(0.3)
        out("[demo] phase 4: node stopped, no command: the arm falls ...")
        sag, sag_early, s0 = measure_sag(loop)
        status = loop.node_status or {}
        out("")
        out("  phase                                   result")
        out("  1 gravity hold, command_mode gravity    drift over 3 s: "
            f"{drift * 1e3:.2g} mrad")
        out(f"  2 computed torque, desired at {desired_rate:3.0f} Hz   tracking error: "
            f"RMS {rms * 1e3:.3f} mrad, max {emax * 1e3:.3f} mrad")
        out(f"  3 push, 10 N at the {LINK} for {push['t_off'] - push['t_on']:.1f} s     ~/external_torques vs "
            f"applied J^T f: {push['error'] * 100:.1f} % (max, after 5/K)")
        out(f"                                          ~/collision ({THRESHOLD:g} N m): rose "
            f"{push['rise'] * 1e3:.0f} ms after the push began, fell {push['fall'] * 1e3:.0f} ms after it ended")
        out("  4 no command (node stopped)             fall (largest joint): "
            f"{sag_early:.3f} rad after 0.1 s, {sag:.2f} rad after 1 s")
        if stalls:
            out(f"  (the machine stalled the driver during phase 2: {stalls}; 'resyncs' = "
                "its real-time loop went > 50 ms without a step)")
        if status:
            for line in node_time_lines(status):
                out(line)
        if png:
            plot(loop, png, (h0, h1), (c0, c1), s0, push)
            out(f"[demo] picture: {png}")
        rc = 0
    finally:
        loop.close()
    out(f"[demo] done in {time.monotonic() - t_wall:.1f} s")
    return rc


def node_time_lines(status: dict) -> list:
    """The node's time per joint state from its /diagnostics (the last 4096 callbacks):
    its CPU time (the control thread's own work) apart from the callbacks' wall time, and
    their difference (the thread ready but not running: another process or thread had
    the core, or the GIL)."""
    g = status.get
    return [f"  node per joint state: CPU time p50/p99 {g('callback_cpu_p50_us', '?')}/"
            f"{g('callback_cpu_p99_us', '?')} us (the control thread's own work: merge, dynamics, command, "
            "observer, publishing)",
            f"                        wall time p50/p99 {g('callback_time_p50_us', '?')}/"
            f"{g('callback_time_p99_us', '?')} us (callback start to end), of which waiting for a CPU or the GIL "
            f"p50/p99 {g('callback_wait_p50_us', '?')}/{g('callback_wait_p99_us', '?')} us (the node, MuJoCo and "
            f"this process share {os.cpu_count()} cores)"]


def plot(loop: ClosedLoop, png: str, hold, track, sag0, push):
    import matplotlib  # the demo extra (optional): only the picture needs it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # (after choosing the Agg backend)
    t, Q, _, E = loop.window(hold[0] - 0.3, sag0 + 1.0)
    T0 = hold[0]
    Qd = np.where(((t >= track[0]) & (t <= track[1]))[:, None],
                  reference_batch(t - track[0])[0], np.nan)
    fig = plt.figure(figsize=(11, 12))
    gs = fig.add_gridspec(5, 1, height_ratios=[3, 1.4, 2, 0.15, 2.4])
    ax = [fig.add_subplot(gs[0])]
    ax += [fig.add_subplot(gs[i], sharex=ax[0]) for i in (1, 2)]
    colors = plt.cm.tab10(np.arange(7))
    for k in range(7):
        ax[0].plot(t - T0, Q[:, k], color=colors[k], lw=1.2, label=JOINTS[k])
        ax[0].plot(t - T0, Qd[:, k], color=colors[k], lw=2.5, ls="--", alpha=0.5)
        ax[2].plot(t - T0, E[:, k], color=colors[k], lw=1.0)
    err = (Q - Qd) * 1e3
    for k in range(7):
        ax[1].plot(t - T0, err[:, k], color=colors[k], lw=1.0)
    for a in ax:
        a.axvspan(0, hold[1] - T0, color="tab:green", alpha=0.07)
        a.axvspan(track[0] - T0, track[1] - T0, color="tab:blue", alpha=0.07)
        a.axvspan(push["t_on"] - T0, push["t_off"] - T0, color="tab:orange", alpha=0.1)
        a.axvspan(sag0 - T0, sag0 + 1.0 - T0, color="tab:red", alpha=0.07)
        a.grid(alpha=0.3)
    top = ax[0].get_ylim()[1]
    for x, text in ((0.05, "1 gravity hold"), (track[0] - T0 + 0.05, "2 computed torque"),
                    (push["t_on"] - T0 + 0.02, "3 push"), (sag0 - T0 + 0.02, "4 no command")):
        ax[0].text(x, top, text, va="top", fontsize=9)
    ax[0].set_ylabel("joint angle (rad)\nsolid: actual, dashed: desired")
    ax[0].legend(ncol=7, fontsize=8, loc="lower center")
    ax[1].set_ylabel("tracking error\n(mrad)")
    ax[2].set_ylabel("applied torque (N m)")
    ax[2].set_xlabel("time (s)")
    draw(fig.add_subplot(gs[4]), push, colors)
    fig.suptitle(f"rbd_ros closed loop: dynamics node + MuJoCo {ROBOT} at 1 kHz")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=90)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description="rbd_ros closed-loop demo (node + MuJoCo arm)")
    ap.add_argument("--png", default=os.path.join("demo_output", "closed_loop.png"),
                    help="where to write the picture (default: %(default)s)")
    ap.add_argument("--no-plot", action="store_true", help="no picture")
    ap.add_argument("--rate", type=float, default=500.0, help="desired-state rate in Hz")
    args = ap.parse_args(argv)
    try:
        import mujoco  # noqa: F401  (the demo extra: checked before anything starts)
    except ImportError:
        print("[demo] needs MuJoCo: pip install -e '.[demo]'", file=sys.stderr)
        return 2
    return run_demo(None if args.no_plot else args.png, args.rate,
                    out=lambda s: print(s, flush=True))


if __name__ == "__main__":
    sys.exit(main())
