"""The bundled default robot: parses, 7 revolute DOF, physically consistent inertials."""
import os

import numpy as np
from urdf_parser_py.urdf import URDF

import rbd_ros

URDF_PATH = os.path.join(os.path.dirname(rbd_ros.__file__), "robots", "rbd_arm7.urdf")


def test_bundled_arm_is_consistent():
    robot = URDF.from_xml_file(URDF_PATH)
    assert robot.name == "rbd_arm7"
    movable = [j for j in robot.joints if j.type != "fixed"]
    assert [j.name for j in movable] == [f"joint{i}" for i in range(1, 8)]
    assert all(j.type == "revolute" and j.limit.effort > 0 for j in movable)
    total = 0.0
    for link in robot.links:
        if link.inertial is None:
            continue
        m = link.inertial.mass
        i = link.inertial.inertia
        inertia = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]])
        ev = np.sort(np.linalg.eigvalsh(inertia))
        assert m > 0, link.name
        assert ev[0] > 0, link.name
        # triangle inequality of principal moments (a real mass distribution)
        assert ev[0] + ev[1] >= ev[2] * (1 - 1e-12), link.name
        total += m
    # every moving link has real mass (a 7-dof arm of ~17 kg)
    assert all(robot.link_map[f"link{i}"].inertial.mass > 0.5 for i in range(1, 8))
    assert 15.0 < total < 20.0


def test_bundled_mechanisms_are_consistent_and_closed_at_zero():
    """fourbar and delta: physically consistent inertias, actuated joints (transmissions)
    = mobility (DOFs - loop rows), loops closed at q = 0 with a regular passive block."""
    import rbd_ros.core as rbd
    from rbd_ros.robots import bundled_robot_path, bundled_robots
    assert {"fourbar", "delta", "rbd_arm7"} <= set(bundled_robots())
    for name, actuated in (("fourbar", ["crank"]), ("delta", ["shoulder1", "shoulder2", "shoulder3"])):
        robot = URDF.from_xml_file(bundled_robot_path(name))
        assert sorted(t.joints[0].name for t in robot.transmissions) == actuated
        for link in robot.links:
            if link.inertial is not None:
                i = link.inertial.inertia
                ev = np.sort(np.linalg.eigvalsh(np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz],
                                                          [i.ixz, i.iyz, i.izz]])))
                assert link.inertial.mass > 0 and ev[0] > 0 and ev[0] + ev[1] >= ev[2] * (1 - 1e-12), link.name
        model = rbd.Model.from_urdf(bundled_robot_path(name))
        m = sum(c.dim for c in model.constraints)
        assert model.nv - m == len(actuated)
        q = np.zeros(model.nq)
        assert np.max(np.abs(rbd.constraint_error(model, q))) < 1e-12
        J = rbd.constraint_jacobian(model, q)
        passive = [model.v_index(j) for j in model.joint_names if j not in actuated]
        assert np.linalg.cond(J[:, passive]) < 100
