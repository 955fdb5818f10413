"""Demo: the dynamics node on the bundled 7-dof arm, a demo joint-state
publisher (slow sine motion at 200 Hz), the torques streaming, one inverse
dynamics service call answered; exits by itself.

    python -m rbd_ros.node.demo [--seconds 4] [--robot rbd_arm7]
    python -m rbd_ros.node.demo --publisher-only      # just the joint-state publisher
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import threading
import time


def _fmt(values):
    return "[" + " ".join(f"{x:7.2f}" for x in values) + "]"


class DemoPublisher:
    """Publishes sensor_msgs/JointState for the given joints: q_i = A sin(w t + phase_i)."""

    def __init__(self, node, joints, topic="joint_states", rate=200.0):
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        self.node, self.joints, self.rate = node, list(joints), rate
        self.pub = node.create_publisher(JointState, topic, qos_profile_sensor_data)
        self.msg = JointState()
        self.msg.name = self.joints
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def state(self, t):
        q = [0.6 * math.sin(0.8 * t + 0.7 * i) for i in range(len(self.joints))]
        v = [0.48 * math.cos(0.8 * t + 0.7 * i) for i in range(len(self.joints))]
        return q, v

    def _run(self):
        period = 1.0 / self.rate
        t_next = time.monotonic()
        while not self._stop.is_set():
            q, v = self.state(time.monotonic() - self.t0)
            self.msg.header.stamp = self.node.get_clock().now().to_msg()
            self.msg.position, self.msg.velocity = q, v
            self.pub.publish(self.msg)
            t_next += period
            time.sleep(max(0.0, t_next - time.monotonic()))

    def start(self):
        self.thread.start()

    def stop(self):
        self._stop.set()
        self.thread.join()


def main(argv=None):
    ap = argparse.ArgumentParser(description="rbd_ros demo")
    ap.add_argument("--seconds", type=float, default=4.0, help="streaming time before exit")
    ap.add_argument("--robot", default="rbd_arm7", help="bundled robot name or URDF path")
    ap.add_argument("--publisher-only", action="store_true",
                    help="only publish demo joint states (for a node started elsewhere)")
    args, ros_args = ap.parse_known_args(argv)

    from rbd_ros.node import quiet_numba_cache_warnings
    quiet_numba_cache_warnings()
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    import rbd_ros.core as rbd
    from rbd_ros.node.runtime import resolve_urdf_file

    urdf_path = resolve_urdf_file(args.robot)
    model = rbd.Model.from_urdf(urdf_path)
    joints = [n for n in model.joint_names]
    rclpy.init(args=ros_args)
    node = rclpy.create_node("rbd_demo")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    demo = DemoPublisher(node, joints)
    if args.publisher_only:
        demo.start()
        try:
            ex.spin()
        except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
            pass
        return 0

    print(f"[demo] starting the dynamics node on {urdf_path} ({model.name}, {model.nv} DOF)",
          flush=True)
    dyn = subprocess.Popen([sys.executable, "-m", "rbd_ros.node", "--ros-args",
                            "-p", f"urdf_file:={urdf_path}"], env=dict(os.environ))
    latest = {}
    node.create_subscription(JointState, "/rbd_dynamics/gravity_torques_state",
                             lambda m: latest.__setitem__("g", m), 10)
    node.create_subscription(JointState, "/rbd_dynamics/bias_torques_state",
                             lambda m: latest.__setitem__("b", m), 10)
    counts = {"g": 0}
    node.create_subscription(JointState, "/rbd_dynamics/gravity_torques_state",
                             lambda m: counts.__setitem__("g", counts["g"] + 1), 10)
    stop = threading.Event()
    spin = threading.Thread(target=lambda: [ex.spin_once(timeout_sec=0.05)
                                            for _ in iter(lambda: stop.is_set(), True)],
                            daemon=True)
    spin.start()
    demo.start()
    rc = 1
    try:
        t_end = time.monotonic() + 90
        while "g" not in latest:
            if time.monotonic() > t_end or dyn.poll() is not None:
                print("[demo] the node did not answer", flush=True)
                return 1
            time.sleep(0.05)
        print("[demo] torques streaming (joint states at 200 Hz; gravity g(q) and bias "
              "C(q,qd)qd+g(q) in N m):", flush=True)
        n0, t0 = counts["g"], time.monotonic()
        t_stop = t0 + args.seconds
        while time.monotonic() < t_stop:
            g, b = latest["g"], latest["b"]
            print(f"  t={time.monotonic() - t0:4.2f}s  g={_fmt(g.effort)}  bias={_fmt(b.effort)}",
                  flush=True)
            time.sleep(0.5)
        rate = (counts["g"] - n0) / (time.monotonic() - t0)
        print(f"[demo] {rate:.0f} torque messages/s received", flush=True)

        from rbd_ros_interfaces.srv import InverseDynamics
        cli = node.create_client(InverseDynamics, "/rbd_dynamics/inverse_dynamics")
        if not cli.wait_for_service(timeout_sec=60):
            print("[demo] inverse_dynamics service not available", flush=True)
            return 1
        q, v = demo.state(1.0)
        req = InverseDynamics.Request(name=joints, position=q, velocity=v,
                                      acceleration=[0.5] * len(joints))
        print(f"[demo] calling /rbd_dynamics/inverse_dynamics: q={_fmt(q)} qd={_fmt(v)} "
              f"qdd=[0.5 ...]", flush=True)
        fut = cli.call_async(req)
        t_end = time.monotonic() + 30
        while not fut.done() and time.monotonic() < t_end:
            time.sleep(0.01)
        resp = fut.result() if fut.done() else None
        if resp is None or not resp.success:
            print(f"[demo] service call failed: {resp.message if resp else 'timeout'}",
                  flush=True)
            return 1
        print(f"[demo] answer: success={resp.success} effort={_fmt(resp.effort)} N m", flush=True)
        rc = 0
    finally:
        demo.stop()
        stop.set()
        spin.join()
        dyn.send_signal(signal.SIGINT)
        try:
            dyn.wait(10)
        except subprocess.TimeoutExpired:
            dyn.kill()
        node.destroy_node()
        rclpy.try_shutdown()
    print("[demo] done", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
