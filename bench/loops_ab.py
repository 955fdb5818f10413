#!/usr/bin/env python3
"""Closed loops' per-call costs (issue 24's speed bars): this tree's core against another
git revision's, interleaved in one process.

    python bench/loops_ab.py [--rev main] [--rounds 21] [--calls 2000]

The other revision's ``rbd_ros/core`` is exported as ``bench/ab.py`` does (the package
``rbd_ros_ab``, its own numba cache: the first run compiles it).  Timed in interleaved
rounds (old, new, old, new ...), median µs per call and the median over rounds of
new / old (< 1: new is faster):

* ``cfd_into fourbar``: ``constrained_forward_dynamics_into`` on the four-bar (3 DOFs,
  the call issue 24 compares with Pinocchio's ``constraintDynamics``);
* ``cid_into delta``: ``constrained_inverse_dynamics_into`` on the delta (3 actuators);
* ``state delta`` / ``state delta (node)``: ``LoopCompletion.state`` along a smooth
  motion of the three shoulders (0.1 rad at 1 Hz, 1 ms samples, cycling through 1000),
  with the condition estimate and without it (``cond=False``, as the node calls it; the
  old tree: with it, it has no other form);
* ``compensation delta``: ``LoopCompensation.compute`` of g, b, λ and H at a closed state.

Results of the two trees are compared first (1e-8 relative: the completion's Newton and
the old secant steps stop at different points below the 1e-10 tolerance).  A benchmark,
not a test; run it on a calm machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test"))
from ab import export, per_call_ns  # noqa: E402
from constraint_util import ACTUATED  # noqa: E402

import rbd_ros.core as new  # noqa: E402
from rbd_ros.robots import bundled_robot_path  # noqa: E402


def closed(lib, model, name, rng):
    q = np.zeros(model.nq)
    act = [model.q_index(j) for j in ACTUATED[name]]
    q[act] = rng.uniform(-0.3, 0.3, len(act))
    q = lib.close_loops(model, q, fixed=ACTUATED[name])
    v = np.zeros(model.nv)
    v[[model.v_index(j) for j in ACTUATED[name]]] = rng.uniform(-1.0, 1.0, len(act))
    return q, lib.loop_velocity(model, q, v, fixed=ACTUATED[name])


def cases(lib, is_new):
    """{name: (call, result)} on ``lib``'s models (the same states on both sides)."""
    rng = np.random.default_rng(0)
    out = {}
    four = lib.Model.from_urdf(bundled_robot_path("fourbar"))
    q, v = closed(lib, four, "fourbar", rng)
    tau = rng.normal(size=four.nv)
    qdd, lam = np.empty(four.nv), np.empty(2)
    out["cfd_into fourbar"] = (lambda: lib.constrained_forward_dynamics_into(four, q, v, tau, (), qdd, lam),
                               lambda: np.concatenate([qdd, lam]))
    delta = lib.Model.from_urdf(bundled_robot_path("delta"))
    act = tuple(ACTUATED["delta"])
    qd, vd = closed(lib, delta, "delta", rng)
    a = lib.constrained_forward_dynamics(delta, qd, vd, np.zeros(delta.nv)).qdd
    t2, l2 = np.empty(delta.nv), np.empty(10)
    out["cid_into delta"] = (lambda: lib.constrained_inverse_dynamics_into(delta, qd, vd, a, (), t2, l2, actuated=act),
                             lambda: np.concatenate([t2, l2]))
    ia = [delta.v_index(j) for j in act]
    t = 1e-3 * np.arange(1000)
    Q = 0.1 * np.sin(2 * np.pi * t[:, None] + np.arange(3))
    V = 0.2 * np.pi * np.cos(2 * np.pi * t[:, None] + np.arange(3))
    for label, cond in (("state delta", True), ("state delta (node)", False)):
        lc = lib.LoopCompletion(delta, act)
        qs, vs, k = qd.copy(), vd.copy(), [0]

        def step(lc=lc, qs=qs, vs=vs, k=k, cond=cond):
            i = k[0] % 1000
            k[0] += 1
            qs[ia] = Q[i]
            vs[ia] = V[i]
            if is_new:
                lc.state(qs, vs, cond)
            else:
                lc.state(qs, vs)

        out[label] = (step, lambda qs=qs, vs=vs: np.concatenate([qs, vs]))
    comp = lib.LoopCompensation(delta, act)
    out_v = np.array(ia, dtype=np.int64)
    g, b, lm, h = np.empty(3), np.empty(3), np.empty(10), np.empty(9)
    out["compensation delta"] = (lambda: comp.compute(qd, vd, out_v, g, b, lm, h),
                                 lambda: np.concatenate([g, b, lm, h]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", default="main", help="the other revision (default main)")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "rbd_ros_ab"))
    args = ap.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    old, sha = export(args.rev, args.cache)
    co, cn = cases(old, False), cases(new, True)
    print(f"new: this tree; old: {args.rev} ({sha}); median over {args.rounds} interleaved rounds of "
          f"{args.calls} calls; ratio = new / old (< 1: new is faster)")
    print(f"{'call':22s} {'old us':>8s} {'new us':>8s} {'ratio':>7s}")
    for name, (fn, res) in cn.items():
        fo, ro = co[name]
        for _ in range(200):
            fo()
            fn()
        x, y = ro(), res()
        err = np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(x)))
        assert err <= 1e-8, (name, err)
        to, tn = [], []
        for _ in range(args.rounds):
            to.append(per_call_ns(fo, args.calls))
            tn.append(per_call_ns(fn, args.calls))
        ratio = statistics.median(n / o for n, o in zip(tn, to))
        print(f"{name:22s} {statistics.median(to) / 1e3:8.2f} {statistics.median(tn) / 1e3:8.2f} {ratio:7.3f}",
              flush=True)


if __name__ == "__main__":
    main()
