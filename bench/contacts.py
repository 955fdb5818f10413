"""Contact inverse dynamics of a 12-DOF quadruped on 4 point feet, interleaved (issue 25).

    python bench/contacts.py [--robot solo12|anymal_c] [--rounds 20] [--calls 2000]

The robot stands in its SRDF pose on four point contacts (example-robot-data).  Per
round, one after the other on the same states, each case timed over ``--calls`` calls:

* ``free``      constrained_inverse_dynamics_into without friction (target <= 20 µs);
* ``inside``    with friction μ = 0.8, standing: the friction-free optimum is inside
                the cones, returned as is (the compiled cone check added);
* ``active``    with friction μ = 0.4 and a 3 m/s² sideways base acceleration: cones
                active, the QP solved (DAQP; target <= 100 µs);
* ``infeasible`` μ = 0.3 and 6 m/s²: the least-residual problem and the least norm;
* ``pinocchio`` Pinocchio's contactInverseDynamics on the ``active`` state (its own,
                compliant formulation: forces from the contacts' velocity target
                J (v + dt a) and a proximal Coulomb-cone solver; dt = 1 ms, μ = 0.4).

Prints the median µs per call and, per case, the median of each round's ratio to
``free`` (and ``free`` / ``pinocchio``); then the forces' difference from Pinocchio's
and the base wrench its torques leave unbalanced (reported, not a target).  Every rbd_ros
case is checked first (status, equations).  Run it on a calm machine.
"""
import argparse
import os
import sys
import time

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test"))
from contact_util import Robot  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402


def time_calls(f, n):
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n * 1e6


def pinocchio_case(robot, cons, v, a, mu):
    """(call, forces in the feet's frames, joint torques) of Pinocchio's contactInverseDynamics."""
    o = robot.o
    models, datas = pin.StdVec_PointContactConstraintModel(), pin.StdVec_PointContactConstraintData()
    for c in cons:
        f = o.model.frames[o.model.getFrameId(c.link_a, pin.FrameType.BODY)]
        cm = pin.PointContactConstraintModel(o.model, f.parentJoint, f.placement)
        cm.setFriction(mu)
        models.append(cm)
        datas.append(cm.createData())
    d = o.model.createData()
    qf, vf, af = o.q_to_pin(robot.q), o.v_to_pin(v), o.v_to_pin(a)
    corr = np.zeros(3 * len(cons))
    prox = pin.ProximalSettings(1e-10, 1e-6, 200)

    def call():
        return pin.contactInverseDynamics(o.model, d, qf, vf, af, 1e-3, models, datas, corr, prox)
    _, tau, lam = call()
    return call, np.array(lam), o.v_from_pin(np.array(tau))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robot", default="solo12", choices=["solo12", "anymal_c"])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    robot = Robot(args.robot)
    model, q = robot.model, robot.q
    cons = robot.contacts()
    nv, m = model.nv, 3 * len(cons)
    tau, lam = np.empty(nv), np.empty(m)
    stand = robot.motion(cons, np.zeros(6))
    side = robot.motion(cons, [3.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    slip = robot.motion(cons, [6.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    cases = {
        "free": (stand, None, "no cone active"),
        "inside": (stand, 0.8, "no cone active"),
        "active": (side, 0.4, "cone active"),
        "infeasible": (slip, 0.3, "infeasible"),
    }
    calls = {}
    for name, ((v, a), mu, status) in cases.items():
        res = rbd.constrained_inverse_dynamics(model, q, v, a, cons, friction=mu)
        B, c, J, f = robot.system(q, v, a, cons)
        assert res.status == status, (name, res.status)
        assert np.max(np.abs((res.tau + J.T @ res.lam - f)[6:])) <= 1e-9 * np.max(np.abs(f)), name

        def call(v=v, a=a, mu=mu):
            rbd.constrained_inverse_dynamics_into(model, q, v, a, cons, tau, lam, friction=mu)
        calls[name] = call
    pcall, plam, ptau = pinocchio_case(robot, cons, *side, 0.4)
    calls["pinocchio"] = pcall
    times = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, f in calls.items():
            times[name].append(time_calls(f, args.calls if name != "infeasible" else max(1, args.calls // 4)))
    t = {name: np.array(x) for name, x in times.items()}
    print(f"{args.robot}, 4 point feet: median us per call over {args.rounds} interleaved rounds "
          f"(Pinocchio {pin.__version__})")
    for name in calls:
        ratio = t[name] / t["free"]
        print(f"  {name:10s} {np.median(t[name]):8.2f} us   / free {np.median(ratio):6.2f} "
              f"(min {ratio.min():.2f}, max {ratio.max():.2f})")
    r = t["free"] / t["pinocchio"]
    print(f"  free / pinocchio {np.median(r):.2f} (min {r.min():.2f}, max {r.max():.2f})")
    ours = rbd.constrained_inverse_dynamics(model, q, *side, cons, friction=0.4)
    diff = np.max(np.abs(plam - ours.lam))
    print(f"  forces on the 'active' state: max |lambda_pin - lambda_rbd_ros| = {diff:.3g} N "
          f"(max |lambda_rbd_ros| {np.max(np.abs(ours.lam)):.3g} N); Pinocchio's torques leave a base wrench of "
          f"{np.linalg.norm(ptau[:6]):.3g} (N, N m) unbalanced, ours {np.linalg.norm(ours.tau[:6]):.3g}")


if __name__ == "__main__":
    main()
