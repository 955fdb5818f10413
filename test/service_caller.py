"""Run one trajectory service call from a separate process (so that building and
(de)serialising a huge request/response does not stall the test process) and
print a JSON summary: success, message, call time, max |error| against rbd_ros.core.

    python test/service_caller.py NODE_FQN NPOINTS SEED
"""
import json
import os
import sys
import time

import numpy as np
import rclpy
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.core as rbd
from rbd_ros_interfaces.srv import InverseDynamicsTrajectory

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ros_harness import ARM_JOINTS, read_arm_urdf  # noqa: E402


def main():
    fqn, npts, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(seed)
    q, v, a = (rng.uniform(-1.5, 1.5, (npts, 7)), rng.uniform(-1, 1, (npts, 7)),
               rng.uniform(-2, 2, (npts, 7)))
    traj = JointTrajectory(joint_names=ARM_JOINTS)
    pts = []
    for i in range(npts):
        p = JointTrajectoryPoint()
        p.positions, p.velocities, p.accelerations = q[i].tolist(), v[i].tolist(), a[i].tolist()
        pts.append(p)
    traj.points = pts
    rclpy.init()
    node = rclpy.create_node("rbd_service_caller")
    cli = node.create_client(InverseDynamicsTrajectory, fqn + "/inverse_dynamics_trajectory")
    if not cli.wait_for_service(timeout_sec=60):
        print(json.dumps({"success": False, "message": "service not available"}))
        return
    print("ready", flush=True)
    sys.stdin.readline()  # the test starts its clock, then tells us to go
    t0 = time.monotonic()
    fut = cli.call_async(InverseDynamicsTrajectory.Request(trajectory=traj))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=120)
    t1 = time.monotonic()
    resp = fut.result()
    out = {"success": bool(resp and resp.success), "message": resp.message if resp else "timeout",
           "call_s": t1 - t0, "t_start": t0, "t_end": t1}
    if resp and resp.success:
        eff = np.array([p.effort for p in resp.trajectory.points])
        tau = rbd.rnea(rbd.Model.from_urdf(read_arm_urdf()), q, v, a)
        out["points"] = len(resp.trajectory.points)
        out["max_err"] = float(np.max(np.abs(eff - tau)))
    print(json.dumps(out), flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
