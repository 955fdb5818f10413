#!/usr/bin/env python3
"""Closed-loop benchmark (not a test): tracking error and hold drift of the dynamics
node commanding the MuJoCo arm, against the loop's end-to-end latency, with the
simulation's own in-process computed torque as the floor.

* floor (no ROS): MuJoCo steps the bundled arm at 1 kHz in this process; the
  command is computed with rbd_ros.core from the state `d` steps earlier
  (d = 0, 1, 2, 5, 10, 20: 0-20 ms of loop delay): gravity hold drift over 3 s
  from rest, computed-torque tracking of the demo trajectory (same gains);
* end to end: rbd_ros.demo.closed_loop.ClosedLoop (sim driver + node, subprocesses):
  the same two measurements, and the loop latency = from a joint_states stamp to
  the stamp of the first joint state whose applied effort is the command computed
  from it (``~/effort_command_state`` carries the input stamp);
  also the reference lag that fits the tracking error best (the desired-state
  stream's own delay shows up as error proportional to the velocity).

    python bench/closed_loop.py [--runs 1] [--skip-ros]

Prints Markdown tables; say how loaded the machine was (``uptime``).
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))

import numpy as np  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.demo import closed_loop as demo  # noqa: E402
from rbd_ros.demo import run as demo_run  # noqa: E402


def floor(delay_steps, seconds=demo.TRAJ_S, rate=1000.0):
    """In-process MuJoCo + rbd_ros computed torque with the command computed from the
    state delay_steps steps earlier; (hold drift rad over 3 s, tracking rms, max rad)."""
    import mujoco

    from rbd_ros.robots import resolve_urdf_file
    from rbd_ros.sim.mujoco_model import JointMap, load_urdf
    dt = 1.0 / rate
    mjm, model = load_urdf(resolve_urdf_file(demo.ROBOT), timestep=dt, integrator="rk4")
    jm = JointMap(mjm, model, demo.JOINTS)
    q0 = np.asarray(demo.Q0)

    def run(n_steps, law):
        d = mujoco.MjData(mjm)
        d.qpos[jm.qpos] = q0
        mujoco.mj_forward(mjm, d)
        hist = []
        Q = np.empty((n_steps, 7))
        for k in range(n_steps):
            q, v = d.qpos[jm.qpos].copy(), d.qvel[jm.dof].copy()
            hist.append((q, v))
            qs, vs = hist[max(0, len(hist) - 1 - delay_steps)]
            d.qfrc_applied[jm.dof] = law(k * dt, qs, vs)
            mujoco.mj_step(mjm, d)
            Q[k] = d.qpos[jm.qpos]
        return Q

    Qh = run(int(3.0 * rate), lambda t, q, v: rbd.gravity(model, q))
    drift = float(np.max(np.abs(Qh - q0)))

    def ct(t, q, v):
        qd, vd, ad = demo.reference(t, duration=seconds)
        a = ad + demo.KP * (qd - q) + demo.KD * (vd - v)
        return rbd.rnea(model, q, v, a)
    n = int(seconds * rate)
    Qt = run(n, ct)
    t = (np.arange(n) + 1) * dt           # state after step k is at time (k + 1) dt
    e = Qt - demo.reference_batch(t, duration=seconds)[0]
    return drift, float(np.sqrt(np.mean(e ** 2))), float(np.max(np.abs(e)))


def end_to_end(ns):
    loop = demo.ClosedLoop(ns, demo.NODE_PARAMS, sim_params=demo.SIM_PARAMS,
                           record_commands=True)
    try:
        failed = loop.start(100)
        assert failed is None, failed
        drift, _, _ = demo_run.measure_hold(loop, 3.0)
        rms, emax, t0, t1 = demo_run.measure_tracking(loop)
        status = dict(loop.node_status or {})
        with loop.lock:
            states = list(loop.states)
            cmds = list(loop.commands)
    finally:
        loop.close()
    # loop latency: command computed from the state stamped s -> first state applying it
    applied = {}
    for stamp, _, _, eff in states:
        applied.setdefault(eff.tobytes(), stamp)
    lat = np.array([applied[c.tobytes()] - s for s, c in cmds
                    if c.tobytes() in applied and applied[c.tobytes()] >= s and np.any(c)])
    # reference lag that explains the tracking error best
    t = np.array([s[0] for s in states if t0 <= s[0] <= t1])
    Q = np.array([s[1] for s in states if t0 <= s[0] <= t1])
    lags = np.arange(0.0, 0.1001, 0.001)
    fits = [float(np.sqrt(np.mean((Q - demo.reference_batch(t - t0 - g)[0]) ** 2))) for g in lags]
    best = int(np.argmin(fits))
    return {"drift": drift, "rms": rms, "max": emax, "lat": lat, "lag": lags[best],
            "rms_at_lag": fits[best], "status": status, "n_states": len(t)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1, help="end-to-end runs")
    ap.add_argument("--skip-ros", action="store_true", help="only the in-process floor")
    args = ap.parse_args()
    print(f"machine: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(f"gains: kp {demo.KP:g} 1/s^2, kd {demo.KD:g} 1/s (omega {demo.OMEGA:g} rad/s, "
          f"zeta {demo.ZETA:g}); trajectory {demo.TRAJ_S:g} s; MuJoCo rk4 at 1 kHz\n")
    print("| floor: in-process, command delay | hold drift 3 s (mrad) | tracking RMS (mrad) "
          "| tracking max (mrad) |")
    print("|---|---|---|---|")
    for d in (0, 1, 2, 5, 10, 20):
        drift, rms, emax = floor(d)
        print(f"| {d} ms | {drift * 1e3:.3g} | {rms * 1e3:.3g} | {emax * 1e3:.3g} |", flush=True)
    if args.skip_ros:
        return 0
    print("\n| end to end (node + sim driver) | loop latency p50 / p99 / max (ms) | hold drift "
          "3 s (mrad) | tracking RMS / max (mrad) | best-fit reference lag (ms) -> RMS (mrad) "
          "| node callback p50 / p99 (us) |")
    print("|---|---|---|---|---|---|")
    for r in range(args.runs):
        res = end_to_end(f"bench_cl_{os.getpid()}_{r}")
        lat = res["lat"] * 1e3
        st = res["status"]
        lat_text = (f"{np.median(lat):.2f} / {np.percentile(lat, 99):.2f} / {lat.max():.1f}"
                    if lat.size else "n/a")
        print(f"| run {r + 1} ({res['n_states']} states) | {lat_text} | {res['drift'] * 1e3:.3g} | "
              f"{res['rms'] * 1e3:.3g} / {res['max'] * 1e3:.3g} | {res['lag'] * 1e3:.1f} -> "
              f"{res['rms_at_lag'] * 1e3:.3g} | {st.get('callback_time_p50_us', '?')} / "
              f"{st.get('callback_time_p99_us', '?')} |", flush=True)
        time.sleep(1.0)
    after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\nmachine after: {after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
