"""Constrained dynamics against Pinocchio 4.1, interleaved in one process (issue 24).

    python bench/constraints.py [--rounds 20] [--calls 2000]

Per round, A then B on the same states: rbd_ros's constrained_forward_dynamics_into
and Pinocchio's constraintDynamics (exact solve: ProximalSettings(1e-12, 0, 1)) on
the four-bar (its 2-row loop as Pinocchio's 3D point: one redundant row there) and
on solo12 standing on four point feet; then constrained_inverse_dynamics_into
(delta, 3 actuators; solo12, base unactuated) and close_loops (delta, from a pose
1e-3 rad off) alone.  Prints the median µs per call and the ratio rbd_ros /
Pinocchio of each round's pair (target <= 1.5).  Every pair is checked equal first.
Run it on a calm machine: the numbers of a loaded one mean little.
"""
import argparse
import os
import sys
import time

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test"))
import oracle as orc  # noqa: E402
from constraint_util import ACTUATED, closed_state, mechanism, pin_constraint  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.robots import bundled_robot_path  # noqa: E402


def time_calls(f, n):
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n * 1e6


def fourbar_case(rng):
    model = mechanism("fourbar")
    o = orc.Oracle(bundled_robot_path("fourbar"), layout=model)
    c = model.constraints[0]
    point = rbd.Constraint(c.link_a, c.link_b, origin_a=c.origin_a, origin_b=c.origin_b, name="p")
    q, v = closed_state(model, rng, "fourbar")
    return "fourbar", model, o, [pin_constraint(pin, o.model, point)], (), q, v


def solo_case(rng):
    path = orc.robot_urdf("solo12")
    tree = rbd.Model.from_urdf(path, floating_base=True)
    o = orc.Oracle(path, floating_base=True, layout=tree)
    q = tree.neutral()
    q[2] = 0.3
    feet = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
    cons = tuple(rbd.Constraint(f, None, origin_b=np.eye(4), name=f) for f in feet)
    # the feet where they are at q: each foot's world placement as its world-side frame
    e = rbd.constraint_error(tree, q, cons)
    placed = []
    for k, f in enumerate(feet):
        T = np.eye(4)
        T[:3, 3] = -e[3 * k:3 * k + 3]      # R_foot = I at the neutral pose
        placed.append(rbd.Constraint(f, None, origin_b=T, name=f))
    model = tree.with_constraints(placed)
    v = np.zeros(model.nv)
    return "solo12 4 feet", model, o, [pin_constraint(pin, o.model, c) for c in placed], (), q, v


def bench_fd(case, rng, args):
    """One constrained-FD case, interleaved with Pinocchio; prints its line."""
    name, model, o, cms, cons, q, v = case(rng)
    tau = rng.normal(size=model.nv)
    qdd, lam = np.empty(model.nv), np.empty(sum(c.dim for c in model.constraints))
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for cm in cms:
        models.append(cm)
        datas.append(cm.createData())
    d = o.model.createData()
    pin.initConstraintDynamics(o.model, d, models, datas)
    prox = pin.ProximalSettings(1e-12, 0.0, 1) if name != "fourbar" else pin.ProximalSettings(1e-12, 1e-8, 50)
    qf, vf, tf = o.q_to_pin(q), o.v_to_pin(v), o.v_to_pin(tau)
    rbd.constrained_forward_dynamics_into(model, q, v, tau, cons, qdd, lam)
    ref = o.v_from_pin(pin.constraintDynamics(o.model, d, qf, vf, tf, models, datas, prox))
    err = np.max(np.abs(qdd - ref)) / max(1.0, np.max(np.abs(ref)))
    A = lambda: rbd.constrained_forward_dynamics_into(model, q, v, tau, cons, qdd, lam)  # noqa: E731
    B = lambda: pin.constraintDynamics(o.model, d, qf, vf, tf, models, datas, prox)  # noqa: E731
    ta, tb = [], []
    for _ in range(args.rounds):
        ta.append(time_calls(A, args.calls))
        tb.append(time_calls(B, args.calls))
    ratios = np.array(ta) / np.array(tb)
    print(f"constrained FD  {name:14s} rbd_ros {np.median(ta):7.2f}  pinocchio {np.median(tb):7.2f}  "
          f"ratio {np.median(ratios):.2f} (min {ratios.min():.2f}, max {ratios.max():.2f})  "
          f"qdd agree to {err:.1e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"rbd_ros vs Pinocchio {pin.__version__}: median us per call over {args.rounds} interleaved rounds")
    for case in (fourbar_case, solo_case):
        bench_fd(case, rng, args)
    # constrained inverse dynamics and close_loops (no Pinocchio counterpart of the same problem)
    delta = mechanism("delta")
    q, v = closed_state(delta, rng, "delta")
    a = rbd.constrained_forward_dynamics(delta, q, v, np.zeros(delta.nv)).qdd
    tau, lam = np.empty(delta.nv), np.empty(10)
    act = ACTUATED["delta"]
    t_id = [time_calls(lambda: rbd.constrained_inverse_dynamics_into(delta, q, v, a, (), tau, lam, actuated=act),
                       args.calls) for _ in range(args.rounds)]
    print(f"constrained ID  delta (3 act.)  rbd_ros {np.median(t_id):7.2f}")
    name, model, o, cms, cons, qs, vs = solo_case(rng)
    tau, lam = np.empty(model.nv), np.empty(12)
    a = np.zeros(model.nv)
    t_id = [time_calls(lambda: rbd.constrained_inverse_dynamics_into(model, qs, vs, a, (), tau, lam),
                       args.calls) for _ in range(args.rounds)]
    print(f"constrained ID  solo12 4 feet   rbd_ros {np.median(t_id):7.2f}")
    passive = [i for i, j in enumerate(delta.joint_names) if j not in act]
    q0 = q.copy()
    q0[passive] += 1e-3
    t_cl = [time_calls(lambda: rbd.close_loops(delta, q0, fixed=act), max(1, args.calls // 10))
            for _ in range(args.rounds)]
    print(f"close_loops     delta (1e-3 off) rbd_ros {np.median(t_cl):7.2f}")


if __name__ == "__main__":
    main()
