"""Closed kinematic loops in MuJoCo: the bundled four-bar and delta (their URDF
``<constraint>`` elements, read by the core into ``model.constraints``) simulated with
MuJoCo equality constraints (``rbd_ros.sim.loops``).

Offline: the MuJoCo model follows rbd_ros's ``constrained_forward_dynamics`` (its own
oracle: Pinocchio's ``constraintDynamics``, test_constraints_oracle.py) step for step
under the same torques, with its loops closed; masks MuJoCo cannot state, or that its
equalities would over-constrain, are refused.  The driver (in this process, lock-step
with a controller here): it closes the loops at start-up around the commanded joints,
publishes only those, and the delta holds still on the torques this test computes from
them alone (close_loops for the passive joints, constrained inverse dynamics)."""
import threading
import time

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="sim driver: pip install '.[sim]'")

from ros_harness import unique_ns, wait_for  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros.robots import bundled_robot_path  # noqa: E402
from rbd_ros.sim.loops import check_realisation, close_at_start  # noqa: E402
from rbd_ros.sim.mujoco_model import JointMap, SimModelError, load_urdf  # noqa: E402

ACTUATED = {"fourbar": ["crank"], "delta": ["shoulder1", "shoulder2", "shoulder3"]}


def _mechanism(name):
    mjm, model = load_urdf(bundled_robot_path(name), timestep=1e-3, integrator="rk4")
    return mjm, model, JointMap(mjm, model), mujoco.MjData(mjm)


@pytest.mark.parametrize("name, neq", [("fourbar", 1), ("delta", 4)])
def test_mujoco_equalities_follow_the_constrained_dynamics(name, neq):
    """0.5 s from a closed start, the actuated joints driven by the hold torques plus a PD
    towards a moving reference (torque held over each 1 ms step, as the driver does): MuJoCo
    and RK4 on rbd.constrained_forward_dynamics (Baumgarte 400/40) stay within 1e-6 rad,
    and MuJoCo keeps the loops closed to 1e-7 (a point constraint's metres)."""
    mjm, model, jm, d = _mechanism(name)
    assert mjm.neq == neq and np.all(mjm.eq_active0 == 1)   # (a revolute closure: two connects)
    act = np.array([model.v_index(j) for j in ACTUATED[name]])
    q0 = close_at_start(model, np.zeros(model.nq), ACTUATED[name])
    check_realisation(model, q0)
    hold = rbd.constrained_inverse_dynamics(model, q0, np.zeros(model.nv), np.zeros(model.nv),
                                            actuated=ACTUATED[name]).tau

    def torque(t, q, v):
        tau = hold.copy()
        tau[act] += 50.0 * (q0[act] + 0.3 * np.sin(np.pi * t) - q[act]) - 5.0 * v[act]
        return tau
    d.qpos[jm.model_qpos] = q0
    mujoco.mj_forward(mjm, d)
    x, dt, dev, loop = np.concatenate([q0, np.zeros(model.nv)]), 1e-3, 0.0, 0.0
    for k in range(500):
        tau = torque(k * dt, x[:model.nq], x[model.nq:])

        def f(x, tau=tau):
            qdd, _ = rbd.constrained_forward_dynamics(model, x[:model.nq], x[model.nq:], tau, kp=400.0, kd=40.0)
            return np.concatenate([x[model.nq:], qdd])
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + f(x + dt * k3))
        d.qfrc_applied[jm.model_dof] = torque(k * dt, d.qpos[jm.model_qpos], d.qvel[jm.model_dof])
        mujoco.mj_step(mjm, d)
        q = d.qpos[jm.model_qpos]
        dev = max(dev, float(np.max(np.abs(q - x[:model.nq]))))
        loop = max(loop, float(np.max(np.abs(rbd.constraint_error(model, q)))))
    moved = float(np.max(np.abs(x[:model.nq] - q0)))
    print(f"\n{name}: |q_MuJoCo - q_rbd| <= {dev:.1e} rad over 0.5 s (moved {moved:.2f} rad), loop error "
          f"<= {loop:.1e}")
    assert moved > 0.05
    assert dev < 1e-6 and loop < 1e-7


def test_masks_mujoco_cannot_state_are_refused():
    _, delta, _, _ = _mechanism("delta")
    c = delta.constraints[0]
    one_rotation = delta.with_constraints([rbd.Constraint(c.link_a, c.link_b, origin_a=c.origin_a,
                                                          origin_b=c.origin_b, mask=(1, 1, 1, 1, 0, 0),
                                                          name="odd")])
    with pytest.raises(SimModelError, match="constraint 'odd': mask \\[1, 1, 1, 1, 0, 0\\].*no MuJoCo equality"):
        check_realisation(one_rotation, np.zeros(delta.nq))
    # a spatial loop stated without its vz row: the two connects would constrain it too
    q = close_at_start(delta, np.zeros(delta.nq), ACTUATED["delta"])
    loose = delta.with_constraints([rbd.Constraint(k.link_a, k.link_b, origin_a=k.origin_a, origin_b=k.origin_b,
                                                   mask=(1, 1, 0, 1, 1, 0), name=k.name)
                                    for k in delta.constraints])
    with pytest.raises(SimModelError, match="would constrain 2 more direction"):
        check_realisation(loose, q)
    # the planar four-bar's 1 1 0 0 0 0 is realised by a connect: vz is the tree's already
    _, fourbar, _, _ = _mechanism("fourbar")
    check_realisation(fourbar, np.zeros(fourbar.nq))


def test_driver_runs_the_delta_on_its_actuated_joints(client):
    """joints = the three shoulders: the driver closes the loops at start-up around their
    start positions and publishes them alone; a controller here that sees only them
    (close_loops completes the passive joints, constrained inverse dynamics gives the
    holding torques, plus a PD) holds the delta still for 1 s of simulated time."""
    import rclpy
    from rclpy.context import Context
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from rbd_ros.sim.simulator import SimDriver
    ns = unique_ns("delta")
    ctx = Context()
    rclpy.init(context=ctx, args=["x"])
    start = [0.1, 0.2, 0.0]
    drv = SimDriver(context=ctx, cli_args=[
        "--ros-args", "-r", f"__ns:=/{ns}", "-p", "urdf_file:=delta", "-p", f"joints:={ACTUATED['delta']}",
        "-p", f"initial_positions:={start}", "-p", "lock_step:=true", "-p", "wait_for_command:=true"])
    model = drv.model
    jm = JointMap(drv.mjm, model)
    q_start = drv.data.qpos[jm.model_qpos].copy()
    assert np.max(np.abs(rbd.constraint_error(model, q_start))) < 1e-12
    act = np.array([model.v_index(j) for j in ACTUATED["delta"]])
    assert np.array_equal(q_start[act], start)
    pub = client.publisher(JointState, f"/{ns}/effort_command_state")
    seen, guess = [], [q_start.copy()]

    def answer(msg):                    # the controller: sees the shoulders only
        q = guess[0].copy()
        q[act] = msg.position
        q = rbd.close_loops(model, q, fixed=ACTUATED["delta"])       # seeded by the last solution
        v = np.zeros(model.nv)
        v[act] = msg.velocity
        v = rbd.loop_velocity(model, q, v, fixed=ACTUATED["delta"])
        guess[0] = q
        tau = rbd.constrained_inverse_dynamics(model, q, v, np.zeros(model.nv), actuated=ACTUATED["delta"]).tau
        out = JointState(name=list(msg.name),
                         effort=(tau[act] + 20.0 * (q_start[act] - q[act]) - 2.0 * v[act]).tolist())
        out.header.stamp = msg.header.stamp
        pub.publish(out)
        seen.append((list(msg.name), np.array(msg.position)))
    client.node.create_subscription(JointState, f"/{ns}/joint_states", answer,
                                    QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    th = threading.Thread(target=drv.run, daemon=True)
    th.start()
    try:
        assert wait_for(lambda: drv.stats["steps"] >= 1000, timeout=60)
    finally:
        drv.stop()
        th.join(10)
    try:
        time.sleep(0.1)
        q_end = drv.data.qpos[jm.model_qpos]
        drift = float(np.max(np.abs(np.array([p for _, p in seen]) - start)))
        print(f"\ndelta held on its shoulders: {len(seen)} states, drift {drift:.1e} rad, loop error "
              f"{np.max(np.abs(rbd.constraint_error(model, q_end))):.1e}, passive joints vs close_loops "
              f"{np.max(np.abs(rbd.close_loops(model, q_end, fixed=ACTUATED['delta']) - q_end)):.1e} rad")
        assert {tuple(n) for n, _ in seen} == {tuple(ACTUATED["delta"])}    # the actuated joints only
        assert len(seen) > 900 and drift < 1e-6
        assert np.max(np.abs(rbd.constraint_error(model, q_end))) < 1e-7
    finally:
        drv.destroy()
        rclpy.shutdown(context=ctx)
