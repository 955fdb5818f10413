#!/usr/bin/env python3
"""Planner benchmark (issue 26; not a test): rbd.retime and rbd.payload_capacity against
their peers, in one process, interleaved rounds (A, B, A, B ...), median of the per-round
ratios.

1. ``rbd.retime`` of a 7-DOF path (the bundled arm with a 2 kg payload, armature and
   Coulomb friction; velocity, acceleration and 0.5 x effort limits: all three bind) through 1000
   waypoints, one gridpoint per waypoint, against toppra 0.6 with Pinocchio's
   inverse dynamics on the same path (SplineInterpolator on the same knots), limits
   and grid (seidel solver, interpolation discretisation), from waypoints to path
   speeds.  Targets: <= 100 ms and <= toppra's time.  The durations are compared
   (<= 1 %) so that both sides are seen solving the same problem.
2. ``rbd.payload_capacity`` of 1000 samples (q, v, a) on the same arm against a
   Pinocchio loop (rnea without and with 1 kg on the flange per sample, then the same
   ratios in numpy).  Target: <= 5 ms.

    python bench/planning.py [--rounds 15] [--waypoints 1000] [--samples 1000]

Needs the test extras (Pinocchio, toppra).  Say how loaded the machine was (``uptime``).
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numba  # noqa: E402
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402
import toppra  # noqa: E402
import toppra.algorithm as talgo  # noqa: E402
import toppra.constraint as tcon  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402

URDF = open(os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf")).read()
FRICTION = 0.6
URDF = URDF.replace('velocity="2.175"/>', f'velocity="2.175"/>\n    <dynamics damping="0" friction="{FRICTION}"/>')
PAYLOAD = ("flange", 2.0, np.array([0.0, 0.01, 0.05]), np.diag([4e-3, 4e-3, 2e-3]))
ARMATURE = np.linspace(0.05, 0.2, 7)
AMAX = np.full(7, 15.0)
EFFORT_SCALE = 0.5
INTERP = tcon.DiscretizationType.Interpolation


def models():
    model = rbd.Model.from_urdf(URDF).with_armature(ARMATURE).with_payload(*PAYLOAD)
    pm = pin.buildModelFromXML(URDF)
    pm.armature = ARMATURE
    fr = pm.frames[pm.getFrameId("flange")]
    _, m, com, inertia = PAYLOAD
    pm.inertias[fr.parentJoint] = pm.inertias[fr.parentJoint] + fr.placement.act(pin.Inertia(m, com, inertia))
    return model, pm


def waypoints(model, k):
    lim = model.position_limit
    mid, half = 0.5 * (lim[:, 0] + lim[:, 1]), 0.5 * (lim[:, 1] - lim[:, 0])
    phase = np.random.default_rng(3).uniform(0, 6, 7)
    f = np.linspace(0, 2.5, k)[:, None] * (1 + np.arange(7))[None, :] * 0.6 + phase
    return mid + 0.6 * half * np.sin(f)


def rounds(a, b, n):
    """Interleaved: (median ms of a, median ms of b, median of per-round ratios a / b)."""
    a(), b()                                          # warm (compile, caches)
    ta, tb = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        a()
        ta.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b()
        tb.append(time.perf_counter() - t0)
    ta, tb = np.array(ta) * 1e3, np.array(tb) * 1e3
    return np.median(ta), np.median(tb), np.median(ta / tb)


def retime_bench(model, pm, k, n):
    pd = pm.createData()
    wp = waypoints(model, k)
    vmax, tmax = model.velocity_limit, EFFORT_SCALE * model.effort_limit

    def ours():
        return rbd.retime(model, wp, acceleration_limits=AMAX, effort_scale=EFFORT_SCALE)

    def theirs():
        s = np.concatenate(([0], np.cumsum(np.linalg.norm(np.diff(wp, axis=0), axis=1))))
        path = toppra.SplineInterpolator(s, wp)
        cons = [tcon.JointVelocityConstraint(np.column_stack((-vmax, vmax))),
                tcon.JointAccelerationConstraint(np.column_stack((-AMAX, AMAX)), discretization_scheme=INTERP),
                tcon.JointTorqueConstraint(lambda q, v, a: pin.rnea(pm, pd, q, v, a),
                                           np.column_stack((-tmax, tmax)), model.friction,
                                           discretization_scheme=INTERP)]
        _, sd, _ = talgo.TOPPRA(cons, path, gridpoints=s, solver_wrapper="seidel").compute_parameterization(0, 0)
        return s, sd

    r = ours()
    s, sd = theirs()
    ref = float(np.sum(2 * np.diff(s) / (sd[:-1] + sd[1:])))
    print(f"retime: {k} waypoints -> {r.t.shape[0]} samples, duration {r.duration:.6f} s, toppra {ref:.6f} s "
          f"(ratio {r.duration / ref:.9f}); binding: " +
          ", ".join(f"{kind or 'none'} {int((r.binding == kind).sum())}" for kind in ("velocity", "acceleration",
                                                                                    "effort", "")))
    ok = abs(r.duration / ref - 1) <= 0.01
    a, b, ratio = rounds(ours, theirs, n)
    print(f"| retime, 7 DOF, {k} waypoints | {a:.2f} ms | toppra + Pinocchio {b:.2f} ms | {ratio:.3f} | "
          f"target <= 100 ms and <= 1: {'met' if a <= 100 and ratio <= 1 else 'NOT met'} |")
    return ok


def capacity_bench(model, pm, n_samples, n):
    rng = np.random.default_rng(0)
    lim = model.position_limit
    q = rng.uniform(lim[:, 0], lim[:, 1], (n_samples, 7))
    v, a = rng.uniform(-1, 1, (n_samples, 7)), rng.uniform(-2, 2, (n_samples, 7))
    base = model.without_payload("flange")
    tmax = model.effort_limit
    pb = pin.buildModelFromXML(URDF)
    pb.armature = ARMATURE
    pu = pin.buildModelFromXML(URDF)
    pu.armature = ARMATURE
    fr = pu.frames[pu.getFrameId("flange")]
    pu.inertias[fr.parentJoint] = pu.inertias[fr.parentJoint] + fr.placement.act(pin.Inertia(1.0, np.zeros(3),
                                                                                             np.zeros((3, 3))))
    db, du = pb.createData(), pu.createData()

    def ours():
        return rbd.payload_capacity(base, "flange", q, v, a)

    def theirs():
        t0 = np.array([pin.rnea(pb, db, *x) for x in zip(q, v, a)])
        t1 = np.array([pin.rnea(pu, du, *x) for x in zip(q, v, a)]) - t0
        t0 = t0 + base.friction * np.sign(v)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where(t1 != 0, (np.sign(t1) * tmax - t0) / t1, np.inf)
        return bound.min()

    cap = ours()
    ok = abs(cap.mass - theirs()) <= 1e-9 * cap.mass
    print(f"payload_capacity: {n_samples} samples, {cap.mass:.6f} kg (peer agrees: {ok})")
    a_ms, b_ms, ratio = rounds(ours, theirs, n)
    print(f"| payload_capacity, {n_samples} samples | {a_ms:.2f} ms | Pinocchio loop {b_ms:.2f} ms | {ratio:.3f} | "
          f"target <= 5 ms: {'met' if a_ms <= 5 else 'NOT met'} |")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--waypoints", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=1000)
    args = ap.parse_args()
    print(f"numba threads {numba.get_num_threads()}, load average {os.getloadavg()[0]:.2f}\n")
    model, pm = models()
    print("| what | rbd_ros | peer | ratio (median per round) | target |\n|---|---|---|---|---|")
    ok = retime_bench(model, pm, args.waypoints, args.rounds)
    ok &= capacity_bench(model, pm, args.samples, args.rounds)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
