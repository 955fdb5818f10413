"""``rbd_dynamics``: load a URDF (default: the bundled 7-dof arm) and print
gravity torques, bias torques, inverse dynamics and the inertia matrix for a
state.  A quick check of a robot description without ROS.

    rbd_dynamics                               # bundled rbd_arm7, a fixed test pose
    rbd_dynamics robot.urdf --q 0 0.3 0 -1.2 0 1.5 0.7 --v 0.1 ...
"""
import argparse
import sys
from pathlib import Path

import numpy as np

import rbd_ros.core as rbd

DEFAULT_ROBOT = Path(__file__).resolve().parent / "robots" / "rbd_arm7.urdf"


def main(argv=None):
    p = argparse.ArgumentParser(prog="rbd_dynamics", description=__doc__.split("\n\n")[0])
    p.add_argument("urdf", nargs="?", default=str(DEFAULT_ROBOT), help="URDF file (default: bundled rbd_arm7)")
    p.add_argument("--floating-base", action="store_true", help="add a free-flyer root joint")
    p.add_argument("--no-mimic", action="store_true", help="treat mimic joints as independent DOFs")
    p.add_argument("--q", nargs="+", type=float, help="joint positions (model order); default: a fixed test pose")
    p.add_argument("--v", nargs="+", type=float, help="joint velocities (default 0)")
    p.add_argument("--a", nargs="+", type=float, help="joint accelerations (default 0)")
    args = p.parse_args(argv)
    try:
        model = rbd.Model.from_urdf(args.urdf, floating_base=args.floating_base, mimic=not args.no_mimic)
        q = np.array(args.q) if args.q else _test_pose(model)
        v = np.array(args.v) if args.v else np.zeros(model.nv)
        a = np.array(args.a) if args.a else np.zeros(model.nv)
        tau = rbd.rnea(model, q, v, a)
        g = rbd.gravity(model, q)
        b = rbd.bias(model, q, v)
        H = rbd.crba(model, q)
    except ValueError as e:          # ModelError is a ValueError
        print(f"rbd_dynamics: {e}", file=sys.stderr)
        return 2
    np.set_printoptions(precision=4, suppress=True, linewidth=120)
    print(f"robot {model.name!r}: nq={model.nq} nv={model.nv} mass={model.mass:.3f} kg, "
          f"gravity={model.gravity.tolist()}")
    print(f"joints: {', '.join(model.joint_names)}")
    if model.mimic_joints:
        print("mimic: " + ", ".join(f"{k} = {m:g} * {j} + {o:g}" for k, (j, m, o) in model.mimic_joints.items()))
    print(f"q        = {q}")
    print(f"v        = {v}")
    print(f"a        = {a}")
    print(f"gravity  g(q)        = {g}")
    print(f"bias     C(q,v)v + g = {b}")
    print(f"rnea     tau         = {tau}")
    print("inertia  H(q) =")
    print(H)
    return 0


def _test_pose(model):
    """A reproducible, non-singular pose: neutral plus 0.3 rad on each 1-DOF joint, alternating sign."""
    q = model.neutral()
    for k, (i, n) in enumerate(zip(model.idx_q, model.joint_nq)):
        if n == 1:
            q[i] = 0.3 if k % 2 == 0 else -0.3
    return q


if __name__ == "__main__":
    sys.exit(main())
