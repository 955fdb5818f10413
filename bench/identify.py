#!/usr/bin/env python3
"""Identification benchmark (not a test).

1. The joint-torque regressor per call, rbd_ros vs Pinocchio's
   computeJointTorqueRegressor, same states, interleaved rounds (A, B, A, B ...);
   rbd_ros side: the compiled ``rbd.regressor`` if it exists, else the numpy
   twin (``rbd_ros/core/reference/regressor.py``), printed.
2. Identification of 60 s at 1 kHz (60 000 samples) of the bundled arm: the
   torques of a perturbed "true" arm (rbd_ros RNEA + friction + σ = 0.05 N m
   noise) along an excitation trajectory; timed: the rosbag2 round trip
   (write, read), ``prepare`` (filter, differentiate, decimate) + ``identify``,
   and ``identify`` on all 60 000 raw samples.

    python bench/identify.py [--rounds 7] [--calls 300]

Say how loaded the machine was (``uptime``).
"""
import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test"))  # oracle.py, ident_sim.py
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import oracle as orc  # noqa: E402
import pinocchio as pin  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.core.algorithms.reference.regressor import regressor as twin  # noqa: E402
from rbd_ros.core.estimation.excitation import excitation_trajectory  # noqa: E402
from rbd_ros.core.estimation.identification import identify  # noqa: E402
from rbd_ros.core.model import inertial as ine  # noqa: E402
from rbd_ros.tools.recording import prepare, read_joint_states, write_joint_states_bag  # noqa: E402


def regressor_ab(robot, rounds, calls):
    urdf = orc.robot_urdf(robot) if robot != "rbd_arm7" else os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf")
    model = rbd.Model.from_urdf(urdf, mimic=False)
    o = orc.Oracle(urdf, False, False, layout=model)
    rng = np.random.default_rng(0)
    states = [o.random_state(rng)[:3] for _ in range(calls)]
    pins = [(o.q_to_pin(q), o.v_to_pin(v), o.v_to_pin(a)) for q, v, a in states]
    ours = getattr(rbd, "regressor", None)
    name = "rbd.regressor (compiled kernel)" if ours else "numpy twin (reference/regressor.py; no kernel yet)"
    f = ours or twin
    ta, tb = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for q, v, a in states:
            f(model, q, v, a)
        ta.append((time.perf_counter() - t0) / calls * 1e6)
        t0 = time.perf_counter()
        for q, v, a in pins:
            pin.computeJointTorqueRegressor(o.model, o.data, q, v, a)
        tb.append((time.perf_counter() - t0) / calls * 1e6)
    a, b = np.median(ta), np.median(tb)
    print(f"| {robot} | {name} | {a:.1f} | {b:.1f} | {a / b:.1f} |")


def identification(seconds=60.0, rate=1000.0):
    arm = rbd.Model.from_urdf(os.path.join(ROOT, "rbd_ros", "robots", "rbd_arm7.urdf"))
    rng = np.random.default_rng(1)
    P = []
    for row in ine.inertial_parameters(arm):
        m, c, Ic = ine.to_com(row)
        P.append(ine.from_com(m * rng.uniform(0.7, 1.3), c + rng.uniform(-0.03, 0.03, 3), Ic * rng.uniform(0.6, 1.4)))
    truth = ine._rebuilt(arm, np.array(P), damping=rng.uniform(0.1, 0.6, 7), friction=rng.uniform(0.2, 0.9, 7))
    truth = truth.with_armature(rng.uniform(0.05, 0.25, 7))
    tr = excitation_trajectory(arm, seconds, maxiter=0, sample_rate=rate)
    tau = rbd.rnea(truth, tr.q, tr.v, tr.a) + rbd.friction(truth, tr.v, 0.01)
    tau += rng.normal(scale=0.05, size=tau.shape)
    print(f"\n{len(tr.t)} samples ({seconds:g} s at {rate:g} Hz), bundled arm, σ = 0.05 N m\n")
    print("| step | s |\n|---|---|")
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        write_joint_states_bag(os.path.join(d, "bag"), 100.0 + tr.t, arm.joint_names, tr.q, tr.v, tau)
        t1 = time.perf_counter()
        rec = read_joint_states(os.path.join(d, "bag"), joints=arm.joint_names)
        t2 = time.perf_counter()
    print(f"| write rosbag2 (MCAP, rosbags) | {t1 - t0:.2f} |\n| read it | {t2 - t1:.2f} |")
    t0 = time.perf_counter()
    s = prepare(rec.t, rec.position, rec.velocity, rec.effort)
    t1 = time.perf_counter()
    model, rep = identify(arm, s.q, s.v, s.a, s.tau)
    t2 = time.perf_counter()
    print(f"| prepare (filter, differentiate, decimate to {len(s.t)}) | {t1 - t0:.2f} |")
    print(f"| identify ({len(s.t)} samples) | {t2 - t1:.2f} |")
    print(f"| **prepare + identify** | **{t2 - t0:.2f}** |")
    t0 = time.perf_counter()
    model_raw, rep_raw = identify(arm, tr.q, tr.v, tr.a, tau)
    t1 = time.perf_counter()
    print(f"| identify on all {len(tr.t)} raw samples (exact qdd) | {t1 - t0:.2f} |")
    Q = np.random.default_rng(2).uniform(*arm.position_limit.T, (100, 7))
    for label, m in (("decimated", model), ("raw", model_raw)):
        err = np.sqrt(np.mean([(rbd.gravity(m, q) - rbd.gravity(truth, q)) ** 2 for q in Q]))
        err0 = np.sqrt(np.mean([(rbd.gravity(arm, q) - rbd.gravity(truth, q)) ** 2 for q in Q]))
        solver = rep.solver if label == "decimated" else rep_raw.solver
        print(f"\n{label}: g(q) RMS error {err:.2g} N m (URDF {err0:.2g}); {solver}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=300)
    args = p.parse_args()
    print("| robot | rbd_ros side | rbd_ros µs/call | Pinocchio µs/call | ratio |\n|---|---|---|---|---|")
    for robot in ("rbd_arm7", "panda", "ur5"):
        regressor_ab(robot, args.rounds, args.calls)
    identification()


if __name__ == "__main__":
    main()
