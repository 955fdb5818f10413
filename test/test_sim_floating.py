"""A floating-base robot on a MuJoCo ground plane: solo12 from example-robot-data (its URDF
has no floating joint: ``floating_base`` adds one, as the node's parameter does), four
point feet, contacts on.

Offline (no ROS): the MuJoCo model equals the rbd_ros floating-base model body by body;
the base state in ROS conventions against MuJoCo's own body-frame velocity
(``mj_objectVelocity``); the feet's contact forces against MuJoCo's per-body external
forces (``cfrc_ext``).  The driver (in this process, real time): solo12 stands on a
stiff-enough PD of the driver's and falls without one; its nav_msgs/Odometry matches
MuJoCo's qpos/qvel and, in flight, the finite differences of its own poses (the twist
is in the base frame); the contact forces sum to the weight at rest."""
import math
import threading

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="sim driver: pip install '.[sim]'")

from oracle import robot_urdf  # noqa: E402
from ros_harness import unique_ns, wait_for  # noqa: E402

from rbd_ros.sim.floating import BaseState, FootForces, place_on_ground  # noqa: E402
from rbd_ros.sim.mujoco_model import Ground, JointMap, SimModelError, load_urdf, quat_wxyz_to_R  # noqa: E402

SOLO = robot_urdf("solo12")
FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
FOOT_RADIUS = 0.016                  # the solo_foot mesh: a ball of 16 mm radius about the foot frame
JOINTS = [f"{leg}_{j}" for leg in ("FL", "FR", "HL", "HR") for j in ("HAA", "HFE", "KFE")]
# example-robot-data's "standing" (solo.srdf), in JOINTS order
STANDING = {"FL": (0.1, 0.8, -1.6), "FR": (-0.1, 0.8, -1.6), "HL": (0.1, -0.8, 1.6), "HR": (-0.1, -0.8, 1.6)}
Q_STAND = [x for leg in ("FL", "FR", "HL", "HR") for x in STANDING[leg]]
G = 9.81


def _solo(**kw):
    mjm, model = load_urdf(SOLO, floating_base=True, ground=Ground(links=FEET, radius=FOOT_RADIUS),
                           timestep=1e-3, integrator="rk4", **kw)
    return mjm, model, mujoco.MjData(mjm)


def test_solo12_floating_model_equals_rbd_ros_body_by_body():
    mjm, model, _ = _solo()           # load_urdf checks every body (check_inertias) and joint
    assert model.joint_types[0] == "floating" and model.nv == mjm.nv == 18 and mjm.nq == 19
    assert mjm.jnt_type[mjm.joint("root_joint").id] == mujoco.mjtJoint.mjJNT_FREE
    assert JointMap(mjm, model).joints == JOINTS          # the actuated joints: not the base
    # the contact spheres add no mass; only spheres and plane collide
    assert abs(float(np.sum(mjm.body_mass)) - model.mass) < 1e-12
    assert not mjm.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT
    with pytest.raises(SimModelError, match="contact_links: 'toe' is not a link"):
        load_urdf(SOLO, floating_base=True, ground=Ground(links=("toe",)))
    with pytest.raises(SimModelError, match="joints: unknown joints \\['root_joint'\\]"):
        JointMap(mjm, model, ["root_joint"])


def _random_state(mjm, d, rng):
    d.qpos[:3] = rng.normal(size=3)
    quat = rng.normal(size=4)
    d.qpos[3:7] = quat / np.linalg.norm(quat)
    d.qpos[7:] = rng.uniform(-1, 1, size=mjm.nq - 7)
    d.qvel[:] = rng.normal(size=mjm.nv)


def test_base_state_is_the_pose_in_the_world_and_the_twist_in_the_base_frame():
    """pose = MuJoCo's xpos/xquat of the root body; twist = mj_objectVelocity of its frame
    (mjOBJ_XBODY: the body frame, not the inertial one) in local axes, MuJoCo's [angular;
    linear] reordered."""
    mjm, model, d = _solo()
    base = BaseState(mjm)
    body = mjm.body(model.link_names[0]).id
    rng = np.random.default_rng(5)
    res = np.zeros(6)
    for _ in range(20):
        _random_state(mjm, d, rng)
        mujoco.mj_forward(mjm, d)
        pose, twist = base.pose(d), base.twist(d)
        np.testing.assert_allclose(pose[:3], d.xpos[body], atol=1e-12)
        xq = d.xquat[body]                                   # [w x y z]
        np.testing.assert_allclose(pose[3:], np.sign(xq[0] * pose[6]) * np.r_[xq[1:], xq[0]], atol=1e-12)
        mujoco.mj_objectVelocity(mjm, d, mujoco.mjtObj.mjOBJ_XBODY, body, res, 1)
        np.testing.assert_allclose(twist, np.r_[res[3:], res[:3]], atol=1e-12)
    pose = [0.1, -0.2, 0.3, 0.0, 0.0, math.sin(0.3), math.cos(0.3)]
    base.set_pose(d, pose)
    np.testing.assert_allclose(base.pose(d), pose, atol=1e-15)
    with pytest.raises(ValueError, match="initial_base_pose: expected 7 finite numbers"):
        base.set_pose(d, [0, 0, 0, 0, 0, 0, 0])


def test_foot_forces_are_the_contact_forces_on_each_foot():
    """Standing, settled on a PD: each foot's force (world axes) equals MuJoCo's external
    force on that foot's body (cfrc_ext, after mj_rnePostConstraint); local = R^T world;
    the sum carries the weight."""
    mjm, model, d = _solo()
    jm = JointMap(mjm, model)
    d.qpos[jm.qpos] = Q_STAND
    BaseState(mjm).set_pose(d, [0, 0, 0, 0, 0, 0, 1])
    shift = place_on_ground(mjm, d, Ground(links=FEET, radius=FOOT_RADIUS))
    assert 0.2 < shift < 0.25                                # example-robot-data stands it at 0.235
    for _ in range(1500):                                    # 1.5 s on a stiff PD: at rest
        d.qfrc_applied[jm.dof] = 20.0 * (np.asarray(Q_STAND) - d.qpos[jm.qpos]) - 0.5 * d.qvel[jm.dof]
        mujoco.mj_step(mjm, d)
    mujoco.mj_forward(mjm, d)
    mujoco.mj_rnePostConstraint(mjm, d)
    feet = FootForces(mjm, FEET)
    f = feet.world(d)
    for k, link in enumerate(FEET):
        np.testing.assert_allclose(f[k], d.cfrc_ext[mjm.body(link).id][3:], atol=1e-9)
    R = d.xmat[[mjm.body(link).id for link in FEET]].reshape(-1, 3, 3)
    np.testing.assert_allclose(np.einsum("kij,kj->ki", R, feet.local(d, f)), f, atol=1e-12)
    print(f"standing: foot forces (world) {np.round(f, 3).tolist()}")
    assert np.all(f[:, 2] > 0.2 * model.mass * G / 4)        # every foot carries its share
    np.testing.assert_allclose(f.sum(axis=0), [0.0, 0.0, model.mass * G], atol=1e-3 * model.mass * G)


# ------------------------------------------------------------------------ the driver


class _Run:
    """The sim driver on solo12 in this process (real time, in a thread), recorded by the
    test client: joint states, base state, contact forces."""

    def __init__(self, client, *extra):
        import rclpy
        from nav_msgs.msg import Odometry
        from rclpy.context import Context
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState

        from rbd_ros.sim.simulator import SimDriver
        from rbd_ros_interfaces.msg import ConstraintForces
        self.ns = unique_ns("solo")
        self.ctx = Context()
        rclpy.init(context=self.ctx, args=["x"])
        self.drv = SimDriver(context=self.ctx, cli_args=[
            "--ros-args", "-r", f"__ns:=/{self.ns}", "-p", f"urdf_file:={SOLO}", "-p", "floating_base:=true",
            "-p", f"joints:={JOINTS}", "-p", f"initial_positions:={Q_STAND}",
            "-p", f"contact_links:={list(FEET)}", "-p", f"contact_radius:={FOOT_RADIUS}", *extra])
        deep = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
        self.js = client.record(JointState, f"/{self.ns}/joint_states", deep)
        self.odom = client.record(Odometry, f"/{self.ns}/base_state", deep)
        self.forces = client.record(ConstraintForces, f"/{self.ns}/sim_driver/contact_forces", deep)
        self.th = threading.Thread(target=self.drv.run, daemon=True)
        self._rclpy = rclpy

    def run(self, seconds):
        """Start (once the recorders are matched) and step ``seconds`` of simulated time."""
        pub = self.drv.outputs.pub_forces
        assert wait_for(lambda: pub.get_subscription_count() > 0, timeout=60)
        self.th.start()
        n = int(seconds * self.drv.rate)
        assert wait_for(lambda: self.drv.stats["steps"] >= n, timeout=30 + 5 * seconds)
        self.drv.stop()
        self.th.join(10)

    def close(self):
        self.drv.stop()
        if self.th.is_alive():
            self.th.join(10)
        self.drv.destroy()
        self._rclpy.shutdown(context=self.ctx)


def _ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def _pose(m):
    p, o = m.pose.pose.position, m.pose.pose.orientation
    return np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w])


def _twist(m):
    t = m.twist.twist
    return np.array([t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z])


def test_solo12_stands_on_the_drivers_pd_odometry_and_contact_forces(client):
    run = _Run(client, "-p", "pd_kp:=[20]", "-p", "pd_kd:=[0.5]")     # integers are taken as doubles
    try:
        z0 = float(run.drv.data.qpos[2])
        run.run(1.0)
        d = run.drv.data
        steps = run.drv.stats["steps"]              # one state (and base state) per step
        assert wait_for(lambda: run.odom.count() == run.js.count() == steps, timeout=60), \
            (steps, run.odom.count(), run.js.count())
        js, odom, forces = run.js.snapshot()[0], run.odom.snapshot()[0], run.forces.snapshot()[0]
        assert {tuple(m.name) for m in js} == {tuple(JOINTS)}             # the actuated joints only
        assert [_ns(m.header.stamp) for m in odom] == [_ns(m.header.stamp) for m in js]
        assert {(m.header.frame_id, m.child_frame_id) for m in odom} == {("world", "base_link")}
        # odometry = MuJoCo's state when the driver stopped (its last message)
        last = odom[-1]
        body = run.drv.mjm.body("base_link").id
        mujoco.mj_forward(run.drv.mjm, d)
        res = np.zeros(6)
        mujoco.mj_objectVelocity(run.drv.mjm, d, mujoco.mjtObj.mjOBJ_XBODY, body, res, 1)
        np.testing.assert_allclose(_pose(last), np.r_[d.qpos[:3], d.qpos[4:7], d.qpos[3]], atol=1e-12)
        np.testing.assert_allclose(_twist(last), np.r_[res[3:], res[:3]], atol=1e-12)
        # it stands: the base within a few mm of its start, upright, at rest
        z = np.array([_pose(m)[2] for m in odom])
        tilt = max(2 * math.degrees(math.asin(min(1.0, np.linalg.norm(_pose(m)[3:6])))) for m in odom)
        print(f"\nPD 20 N m/rad: base z {z0:.4f} -> {z[-1]:.4f} m (min {z.min():.4f}), tilt <= {tilt:.3f} deg, "
              f"|v| {np.abs(_twist(last)).max():.1e}")
        assert abs(z[-1] - z0) < 0.01 and tilt < 1.0 and np.abs(_twist(last)).max() < 0.01
        # contact forces (world axes, ~/contact_forces) carry the weight at rest
        assert forces and {tuple(c.name for c in m.constraints) for m in forces} == {FEET}
        assert forces[-1].header.frame_id == "world" and _ns(forces[-1].header.stamp) == _ns(last.header.stamp)
        f = np.array([[c.wrench.force.x, c.wrench.force.y, c.wrench.force.z] for c in forces[-1].constraints])
        weight = run.drv.model.mass * G
        print(f"contact forces at rest: sum {np.round(f.sum(axis=0), 4).tolist()} N, weight {weight:.4f} N")
        np.testing.assert_allclose(f.sum(axis=0), [0.0, 0.0, weight], atol=0.005 * weight)
    finally:
        run.close()


def test_solo12_falls_without_a_pd(client):
    """No PD, no command: the legs fold and the base falls (only the feet touch the ground);
    the contact forces come in each foot's own axes with contact_forces_frame local."""
    run = _Run(client, "-p", "contact_forces_frame:=local")
    try:
        z0 = float(run.drv.data.qpos[2])
        run.run(0.5)
        assert wait_for(lambda: run.odom.count() == run.drv.stats["steps"], timeout=60)
        z = [_pose(m)[2] for m in run.odom.snapshot()[0]]
        print(f"\nno PD: base z {z0:.4f} -> {z[-1]:.4f} m after 0.5 s")
        assert z[-1] < z0 - 0.1
        forces = run.forces.snapshot()[0]
        assert forces and forces[-1].header.frame_id == ""     # each in its link's axes
    finally:
        run.close()


def test_odometry_twist_is_in_the_base_frame(client):
    """In flight (1 m up, rolled by 0.4 rad, no contact yet), the driver's PD swings every leg
    forward (hip 1 rad), which pitches the base back.  The odometry's twist equals the
    finite differences of its own poses with the linear part rotated into the base frame
    (REP 105: the twist is in child_frame_id) and the angular one from the relative
    rotations in the base's axes; the same differences in world axes do not match (the
    sentinel: the check tells the two apart)."""
    roll = 0.4
    swing = [0.0, 1.0, 0.0] * 4
    run = _Run(client, "-p", "place_on_ground:=false", "-p", f"initial_positions:={[0.0] * 12}",
               "-p", "pd_kp:=[2.0]", "-p", "pd_kd:=[0.05]", "-p", f"pd_target:={swing}",
               "-p", f"initial_base_pose:=[0.0, 0.0, 1.0, {math.sin(roll / 2)}, 0.0, 0.0, {math.cos(roll / 2)}]")
    try:
        run.run(0.25)                  # 0.3 m of fall: the feet stay clear of the ground
        assert wait_for(lambda: run.odom.count() == run.drv.stats["steps"], timeout=60)
        odom = run.odom.snapshot()[0]
        assert not any(abs(c.wrench.force.z) > 0 for m in run.forces.snapshot()[0] for c in m.constraints)
        t = np.array([_ns(m.header.stamp) for m in odom]) * 1e-9
        P = np.array([_pose(m) for m in odom])
        V = np.array([_twist(m) for m in odom])
        lin, ang, world = [], [], []
        for k in range(1, len(odom) - 1):
            if not (abs(t[k + 1] - t[k] - 1e-3) < 1e-7 and abs(t[k] - t[k - 1] - 1e-3) < 1e-7):
                continue      # (pairs 1 ms apart: a stall of this process's driver thread re-anchors stamps)
            R = quat_wxyz_to_R(np.r_[P[k, 6], P[k, 3:6]])
            dp = (P[k + 1, :3] - P[k - 1, :3]) / (t[k + 1] - t[k - 1])
            # the rotations to the next and from the previous pose, in the axes of this one
            ahead, back = _qmul(_qconj(P[k, 3:]), P[k + 1, 3:]), _qmul(_qconj(P[k, 3:]), P[k - 1, 3:])
            w = (ahead[:3] - back[:3]) / (t[k + 1] - t[k])
            lin.append(np.abs(R.T @ dp - V[k, :3]).max())
            ang.append(np.abs(w - V[k, 3:]).max())
            world.append(np.abs(dp - V[k, :3]).max())
        vmax, wmax = np.abs(V[:, :3]).max(), np.abs(V[:, 3:]).max()
        print(f"\ntwist vs finite differences of the poses: linear {max(lin):.1e} (|v| up to {vmax:.2f} m/s), "
              f"angular {max(ang):.1e} (|w| up to {wmax:.2f} rad/s); in world axes {np.median(world):.1e}")
        assert len(lin) > 50 and vmax > 1.0 and wmax > 0.2
        assert max(lin) < 1e-3 * vmax and max(ang) < 1e-3 * wmax
        assert np.median(world) > 0.1 * vmax
    finally:
        run.close()


def _qconj(q):            # [x y z w]
    return np.array([-q[0], -q[1], -q[2], q[3]])


def _qmul(a, b):          # [x y z w] * [x y z w]
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


@pytest.mark.parametrize("args, message", [
    (["-p", "contact_forces_frame:=base"], "contact_forces_frame: expected 'world' or 'local'"),
    (["-p", "contact_solref:=[0.001, 1.0]"], "contact_solref: the time constant 0.001 s is below 2 steps"),
    (["-p", "pd_kp:=[5.0]"], "pd_kp, pd_kd: set both or neither"),
    (["-p", "pd_kp:=[5.0, 1.0]", "-p", "pd_kd:=[0.1]"], "pd_kp: expected one number >= 0 or 12 (one per joint)"),
    (["-p", "initial_base_pose:=[0.0, 0.0, 0.3]"], "initial_base_pose: expected 7 finite numbers"),
    (["-p", "contact_radius:=0.0"], "contact_radius: expected a finite number of m > 0"),
    (["-p", "contact_links:=[1.0]"], "contact_links: expected a list of strings"),
])
def test_floating_parameters_refused_with_reason(args, message):
    import re

    import rclpy
    from rclpy.context import Context

    from rbd_ros.sim.simulator import SimDriver
    ctx = Context()
    rclpy.init(context=ctx, args=["x"])
    try:
        with pytest.raises(ValueError, match=re.escape(message)):
            SimDriver(context=ctx, node_name=f"bad_{unique_ns('x')}", cli_args=[
                "--ros-args", "-p", f"urdf_file:={SOLO}", "-p", "floating_base:=true",
                "-p", f"contact_links:={list(FEET)}", *args])
    finally:
        rclpy.shutdown(context=ctx)
