#!/usr/bin/env python3
"""Makes doc/calibrate_report.png, the picture of doc/calibrate.md: the MuJoCo
"true" arm of the identification tests (test/ident_sim.py) tracks a 60 s
excitation trajectory under a computed-torque controller built on the nominal
URDF; the joint states go into a rosbag2 (MCAP) and ``rbd_identify`` draws
measured vs predicted torques on the held-out last 20 %.

    python bench/calibrate_picture.py [--out doc/calibrate_report.png]
"""
import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test"))  # ident_sim.py
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import ident_sim as sim  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.core.estimation.excitation import excitation_trajectory  # noqa: E402
from rbd_ros.tools import identify as cli  # noqa: E402
from rbd_ros.tools.recording import write_joint_states_bag  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.path.join(ROOT, "doc", "calibrate_report.png"))
    args = p.parse_args()
    nominal = rbd.Model.from_urdf(sim.ARM_URDF)
    mjm, _ = sim.true_robot(seed=0)
    exc = excitation_trajectory(nominal, 60.0, maxiter=0, seed=0)
    t, Q, V, U = sim.simulate(mjm, nominal, exc.q, exc.v, exc.a)
    with tempfile.TemporaryDirectory() as d:
        bag = os.path.join(d, "joint_states")
        write_joint_states_bag(bag, 1000.0 + t, nominal.joint_names, Q, V, U)
        rc = cli.main([bag, "--urdf", sim.ARM_URDF, "--out", os.path.join(d, "robot_identified.urdf"),
                       "--report", args.out])
    print(f"{args.out}: {os.path.getsize(args.out)} bytes")
    return rc


if __name__ == "__main__":
    sys.exit(main())
