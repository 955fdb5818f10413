"""Plan -> retime with the dynamics node -> execute: the rbd_ros planner services on the
simulated arm (doc/planners.md, "From MoveIt 2").

Start the simulated arm and the dynamics node in computed-torque mode (two terminals):

    python -m rbd_ros.sim --ros-args -p urdf_file:=rbd_arm7 -p wait_for_command:=true \\
        -p initial_positions:="[0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0]" \\
        -r effort_command:=/rbd_dynamics/effort_command
    python -m rbd_ros.node --ros-args -p urdf_file:=rbd_arm7 -p command_mode:=computed_torque \\
        -p kp:="[144.0]" -p kd:="[24.0]"

then ``python doc/examples/retime_and_execute.py`` (``--help`` for the options).  It

1. makes a path from the arm's current joint state to a goal: the positions of a
   JointTrajectory, what MoveIt's planner returns (``MotionPlanResponse.trajectory.
   joint_trajectory``; its time_from_start is not needed);
2. retimes it with ``~/retime_trajectory``: the fastest motion along the path within
   the URDF's velocity and effort limits (x ``--effort-scale``, room for the feedback)
   and ``--acceleration-limit`` -- MoveIt's time parameterisation knows no torques;
3. asks ``~/payload_capacity`` how heavy a load the flange could carry along it;
4. publishes the result on ``~/trajectory_in``: the node relays it on
   ``~/trajectory_out`` with each point's effort filled, which on a robot with
   ros2_control is remapped to ``/joint_trajectory_controller/joint_trajectory``;
5. executes it on the simulated arm, which has no ros2_control: the samples, linearly
   interpolated, go to the node's ``~/desired_state`` at 500 Hz and its computed-torque
   ``~/effort_command`` drives the arm.  It prints the tracking error and the largest
   effort the arm applied against its limits, and a JSON summary on the last line.
"""
import argparse
import json
import sys
import threading
import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from rbd_ros_interfaces.srv import PayloadCapacity, RetimeTrajectory

JOINTS = [f"joint{i}" for i in range(1, 8)]
GOAL = [1.2, -0.5, 0.8, -2.2, 1.2, 2.2, 1.0]
EFFORT_LIMITS = [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0]     # the bundled arm's URDF
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


def call(node, srv_type, name, request, timeout=30.0):
    """The response of service ``name`` (the node spins in another thread)."""
    cli = node.create_client(srv_type, name)
    if not cli.wait_for_service(timeout_sec=timeout):
        raise SystemExit(f"service {name} is not available: is the dynamics node running?")
    future = cli.call_async(request)
    t_end = time.monotonic() + timeout
    while not future.done():
        if time.monotonic() > t_end:
            raise SystemExit(f"no answer from {name}")
        time.sleep(0.005)
    return future.result()


def path(start, goal, n=8):
    """n waypoints from start to goal (the shape of a planner's path: here a blend with the
    base turning out and back); stands in for MoveIt's plan."""
    s = np.linspace(0.0, 1.0, n)[:, None]
    W = start + (goal - start) * (0.5 - 0.5 * np.cos(np.pi * s))
    W[:, 0] += 0.3 * np.sin(np.pi * s[:, 0])
    traj = JointTrajectory(joint_names=JOINTS)
    traj.points = [JointTrajectoryPoint(positions=w.tolist()) for w in W]
    return traj


def arrays(traj):
    """(t, q, v, a, effort) of a JointTrajectory naming JOINTS in that order."""
    t = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in traj.points])
    return (t, *(np.array([list(getattr(p, f)) for p in traj.points])
                 for f in ("positions", "velocities", "accelerations", "effort")))


def sample(t, T, Q, V, A):
    """The desired state at t s from the start: linear between the samples, at rest outside."""
    if t <= 0.0 or t >= T[-1]:
        q = Q[0] if t <= 0.0 else Q[-1]
        return q, np.zeros_like(q), np.zeros_like(q)
    i = int(np.searchsorted(T, t, side="right")) - 1
    w = (t - T[i]) / (T[i + 1] - T[i])
    return tuple((1.0 - w) * X[i] + w * X[i + 1] for X in (Q, V, A))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--node", default="/rbd_dynamics", help="the dynamics node (fully qualified name)")
    ap.add_argument("--joint-states", default="/joint_states", help="the arm's joint states topic")
    ap.add_argument("--effort-scale", type=float, default=0.9)
    ap.add_argument("--acceleration-limit", type=float, default=50.0, help="rad/s^2, every joint")
    ap.add_argument("--no-execute", action="store_true", help="retime and relay only")
    args = ap.parse_args(argv)

    rclpy.init()
    node = rclpy.create_node("retime_and_execute")
    states = []                                   # (receive time, q, applied effort), JOINTS order
    lock = threading.Lock()

    def on_state(msg):
        idx = [list(msg.name).index(j) for j in JOINTS]
        with lock:
            states.append((time.monotonic(), np.array(msg.position)[idx],
                           np.array(msg.effort)[idx] if len(msg.effort) else np.zeros(7)))
    node.create_subscription(JointState, args.joint_states, on_state, RELIABLE)
    relayed = []
    node.create_subscription(JointTrajectory, f"{args.node}/trajectory_out", relayed.append, RELIABLE)
    pub_in = node.create_publisher(JointTrajectory, f"{args.node}/trajectory_in", RELIABLE)
    pub_desired = node.create_publisher(JointTrajectory, f"{args.node}/desired_state", RELIABLE)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    summary = {"success": False}
    try:
        t_end = time.monotonic() + 30.0
        while not states and time.monotonic() < t_end:
            time.sleep(0.01)
        if not states:
            raise SystemExit(f"no joint states on {args.joint_states}: is the arm (or its driver) running?")
        start = states[-1][1]

        # 1-2. the path, retimed by the node
        req = RetimeTrajectory.Request(trajectory=path(start, np.array(GOAL)),
                                       acceleration_limits=[args.acceleration_limit],
                                       effort_scale=args.effort_scale)
        resp = call(node, RetimeTrajectory, f"{args.node}/retime_trajectory", req)
        if not resp.success:
            raise SystemExit(f"retime_trajectory refused: {resp.message}")
        T, Q, V, A, E = arrays(resp.trajectory)
        print(f"retimed: {resp.duration:.3f} s, {len(T)} points, limited most by {resp.binding_joint}'s "
              f"{resp.binding_limit} limit; feed-forward up to {np.max(np.abs(E) / EFFORT_LIMITS):.2f} x the "
              "effort limits")

        # 3. the heaviest load at the flange (5 cm out, a point mass) along this motion
        cap_req = PayloadCapacity.Request(link="flange", trajectory=resp.trajectory)
        cap_req.com.z = 0.05
        cap = call(node, PayloadCapacity, f"{args.node}/payload_capacity", cap_req)
        print(f"payload capacity at the flange along it: {cap.mass:.2f} kg ({cap.limiting_joint} at point "
              f"{cap.limiting_point})" if cap.success else f"payload_capacity refused: {cap.message}")

        # 4. to joint_trajectory_controller, through the relay
        while pub_in.get_subscription_count() == 0 and time.monotonic() < t_end + 30.0:
            time.sleep(0.01)
        pub_in.publish(resp.trajectory)
        t_end = time.monotonic() + 30.0
        while not relayed and time.monotonic() < t_end:
            time.sleep(0.01)
        summary.update(goal=GOAL, duration=resp.duration, points=len(T), binding_joint=resp.binding_joint,
                       capacity=cap.mass if cap.success else None, relayed=bool(relayed))
        if relayed:
            out = relayed[0]
            same = all(list(a.positions) == list(b.positions) for a, b in zip(out.points, resp.trajectory.points))
            err = float(np.max(np.abs(arrays(out)[4] - E)))
            summary.update(relayed_same_points=same and len(out.points) == len(T), relayed_effort_error=err)
            print(f"relayed on {args.node}/trajectory_out: {len(out.points)} points, efforts within {err:.2g} N m "
                  "of the retimed feed-forward")

        # 5. execute on the simulated arm (the node in computed_torque mode)
        if not args.no_execute:
            desired = JointTrajectory(joint_names=JOINTS)
            t0 = time.monotonic() + 0.1
            with lock:
                n0 = len(states)
            while True:
                now = time.monotonic()
                q, v, a = sample(now - t0, T, Q, V, A)
                desired.points = [JointTrajectoryPoint(positions=q.tolist(), velocities=v.tolist(),
                                                       accelerations=a.tolist())]
                pub_desired.publish(desired)
                if now > t0 + T[-1] + 0.3:
                    break
                time.sleep(0.002)
            with lock:
                run = [s for s in states[n0:] if t0 <= s[0] <= t0 + T[-1]]
            err = np.array([s[1] - sample(s[0] - t0, T, Q, V, A)[0] for s in run])
            peak = max(float(np.max(np.abs(s[2]) / EFFORT_LIMITS)) for s in run)
            rms = float(np.sqrt(np.mean(err ** 2)))
            print(f"executed: {len(run)} joint states, tracking error RMS {rms * 1e3:.2f} mrad, max "
                  f"{np.max(np.abs(err)) * 1e3:.2f} mrad; largest applied effort {peak:.2f} x its limit")
            summary.update(states=len(run), rms=rms, peak_effort=peak)
        summary["success"] = True
    finally:
        print(json.dumps(summary), flush=True)
        stop.set()
        spinner.join(2.0)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:      # Ctrl-C: stop quietly
        sys.exit(0)
