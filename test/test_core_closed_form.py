"""Hand-derived dynamics checked against the algorithms."""
import numpy as np
import pytest

import rbd_ros.core as rbd

G = 9.81


def two_link_arm(m1, m2, l1, l2):
    """Planar 2R arm in the x-y plane, joints about z, point masses at the link
    ends (zero rotational inertia), gravity along -y."""
    return f"""<robot name="arm2">
      <link name="base"/>
      <link name="link1"><inertial><origin xyz="{l1} 0 0"/><mass value="{m1}"/>
        <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
      <link name="link2"><inertial><origin xyz="{l2} 0 0"/><mass value="{m2}"/>
        <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
      <joint name="shoulder" type="continuous"><parent link="base"/><child link="link1"/><axis xyz="0 0 1"/></joint>
      <joint name="elbow" type="continuous"><parent link="link1"/><child link="link2"/>
        <origin xyz="{l1} 0 0"/><axis xyz="0 0 1"/></joint>
    </robot>"""


def arm_closed_form(q, qd, qdd, m1, m2, l1, l2):
    """Textbook equations of motion (e.g. Spong, Hutchinson & Vidyasagar §7.3)."""
    c1, c2, c12, s2 = np.cos(q[0]), np.cos(q[1]), np.cos(q[0] + q[1]), np.sin(q[1])
    H = np.array([[m1 * l1**2 + m2 * (l1**2 + l2**2 + 2 * l1 * l2 * c2), m2 * (l2**2 + l1 * l2 * c2)],
                  [m2 * (l2**2 + l1 * l2 * c2), m2 * l2**2]])
    h = -m2 * l1 * l2 * s2
    C = np.array([[h * qd[1], h * (qd[0] + qd[1])], [-h * qd[0], 0.0]])
    g = np.array([(m1 + m2) * G * l1 * c1 + m2 * G * l2 * c12, m2 * G * l2 * c12])
    return H, C, g, H @ qdd + C @ qd + g


@pytest.mark.parametrize("seed", range(5))
def test_two_link_arm_matches_closed_form(seed):
    rng = np.random.default_rng(seed)
    m1, m2, l1, l2 = rng.uniform(0.5, 3.0, 4)
    model = rbd.Model.from_urdf(two_link_arm(m1, m2, l1, l2), gravity=(0, -G, 0))
    assert model.joint_names == ("shoulder", "elbow")
    q, qd, qdd = rng.uniform(-np.pi, np.pi, 2), rng.uniform(-2, 2, 2), rng.uniform(-2, 2, 2)
    H, C, g, tau = arm_closed_form(q, qd, qdd, m1, m2, l1, l2)
    assert np.allclose(rbd.crba(model, q), H, rtol=0, atol=1e-12)
    assert np.allclose(rbd.gravity(model, q), g, rtol=0, atol=1e-12)
    assert np.allclose(rbd.coriolis_matrix(model, q, qd), C, rtol=0, atol=1e-12)
    assert np.allclose(rbd.rnea(model, q, qd, qdd), tau, rtol=0, atol=1e-12)
    assert np.allclose(rbd.forward_dynamics(model, q, qd, tau), qdd, rtol=0, atol=1e-10)
    assert np.allclose(rbd.aba(model, q, qd, tau), qdd, rtol=0, atol=1e-10)


def test_arm_hanging_straight_down_needs_no_torque():
    model = rbd.Model.from_urdf(two_link_arm(1.0, 1.0, 0.5, 0.4), gravity=(0, -G, 0))
    assert np.allclose(rbd.gravity(model, np.array([-np.pi / 2, 0.0])), 0.0, atol=1e-12)
    # horizontal: the shoulder holds both masses' moments
    assert np.allclose(rbd.gravity(model, np.zeros(2)), [2 * G * 0.5 + G * 0.4, G * 0.4], atol=1e-12)


def test_planar_joint_rigid_body():
    """One body on a planar joint (normal z), centre of mass at (l, 0, 0) in
    the body: x_c = x + l cos th, y_c = y + l sin th; gravity along -y."""
    m, l, Izz = 2.0, 0.3, 0.05
    urdf = f"""<robot name="puck"><link name="world"/>
      <link name="puck"><inertial><origin xyz="{l} 0 0"/><mass value="{m}"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="{Izz}"/></inertial></link>
      <joint name="slide" type="planar"><parent link="world"/><child link="puck"/><axis xyz="0 0 1"/></joint>
    </robot>"""
    model = rbd.Model.from_urdf(urdf, gravity=(0, -G, 0))
    assert (model.nq, model.nv, model.joint_names, model.joint_nv) == (3, 3, ("slide",), (3,))
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-2, 2, 3), rng.uniform(-2, 2, 3), rng.uniform(-2, 2, 3)
        s, c = np.sin(q[2]), np.cos(q[2])
        H = np.array([[m, 0, -m * l * s], [0, m, m * l * c], [-m * l * s, m * l * c, Izz + m * l * l]])
        b = np.array([-m * l * c * qd[2] ** 2, -m * l * s * qd[2] ** 2, 0.0]) + np.array([0, m * G, m * G * l * c])
        assert np.allclose(rbd.crba(model, q), H, atol=1e-12)
        assert np.allclose(rbd.bias(model, q, qd), b, atol=1e-12)
        assert np.allclose(rbd.rnea(model, q, qd, qdd), H @ qdd + b, atol=1e-12)


def test_cart_pole_with_prismatic_and_negative_axis():
    """Cart on a prismatic joint with axis -1 0 0 (moves along -x), pole about
    -y carrying a point mass at (0, 0, L): the mass is at x = -q0 - L sin th,
    z = L cos th (gravity -z)."""
    M, m, L = 1.5, 0.4, 0.7
    urdf = f"""<robot name="cartpole"><link name="world"/>
      <link name="cart"><inertial><mass value="{M}"/>
        <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
      <link name="pole"><inertial><origin xyz="0 0 {L}"/><mass value="{m}"/>
        <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
      <joint name="cart_joint" type="prismatic"><parent link="world"/><child link="cart"/>
        <axis xyz="-1 0 0"/><limit lower="-5" upper="5" effort="100" velocity="5"/></joint>
      <joint name="pole_joint" type="continuous"><parent link="cart"/><child link="pole"/><axis xyz="0 -1 0"/></joint>
    </robot>"""
    model = rbd.Model.from_urdf(urdf)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-2, 2, 2), rng.uniform(-2, 2, 2), rng.uniform(-2, 2, 2)
        th = q[1]
        H = np.array([[M + m, m * L * np.cos(th)], [m * L * np.cos(th), m * L * L]])
        b = np.array([-m * L * np.sin(th) * qd[1] ** 2, -m * G * L * np.sin(th)])
        assert np.allclose(rbd.crba(model, q), H, atol=1e-12)
        assert np.allclose(rbd.rnea(model, q, qd, qdd), H @ qdd + b, atol=1e-12)
