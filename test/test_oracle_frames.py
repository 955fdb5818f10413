"""Frame kinematics against Pinocchio (computeFrameJacobian, getFrameVelocity,
getFrameClassicalAcceleration) on the example-robot-data robots and random
trees: every URDF link (links merged by fixed joints included), the three
reference frames, fixed and floating base; mimic joints through the map G
(rbd_ros's J = J_full G, Pinocchio's mimic mode is not used: test/oracle.py).
The twin agreement, batches and argument errors come from test_core_registry."""
import numpy as np
import oracle as orc
import pinocchio as pin
import pytest
from core_util import random_tree_urdf

import rbd_ros.core as rbd

TOL = 1e-9
RF = {"world": pin.ReferenceFrame.WORLD, "local": pin.ReferenceFrame.LOCAL,
      "local_world_aligned": pin.ReferenceFrame.LOCAL_WORLD_ALIGNED}
CASES = [("panda", True), ("ur5", False), ("solo12", False), ("talos_full_v2", True), ("kinova", False)]


def rel(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


def check(model, o, links, rng, nstates=3):
    d = o.model.createData()
    for _ in range(nstates):
        q, v, a, _ = o.random_state(rng)
        qf, vf, af = o.q_to_pin(q), o.v_to_pin(v), o.v_to_pin(a)
        pin.forwardKinematics(o.model, d, qf, vf, af)
        pin.updateFramePlacements(o.model, d)
        for link in links:
            fid = o.model.getFrameId(link, pin.FrameType.BODY)
            for name, rf in RF.items():
                J = pin.computeFrameJacobian(o.model, o.model.createData(), qf, fid, rf) @ o.G
                assert rel(rbd.frame_jacobian(model, q, link, name), J) < TOL, (link, name)
                V = pin.getFrameVelocity(o.model, d, fid, rf).vector
                assert rel(rbd.frame_velocity(model, q, v, link, name), V) < TOL, (link, name)
                A = pin.getFrameClassicalAcceleration(o.model, d, fid, rf).vector
                assert rel(rbd.frame_acceleration(model, q, v, a, link, name), A) < TOL, (link, name)


@pytest.mark.parametrize("robot,mimic", CASES, ids=[c[0] for c in CASES])
def test_frames_equal_pinocchio_on_real_robots(robot, mimic):
    urdf = orc.robot_urdf(robot)
    fb = orc.ROBOTS[robot][1]
    model = rbd.Model.from_urdf(urdf, floating_base=fb, mimic=mimic)
    o = orc.Oracle(urdf, floating_base=fb, mimic=mimic, layout=model)
    links = [n for n in model.link_names if o.model.existFrame(n, pin.FrameType.BODY)]
    rng = np.random.default_rng(3)
    if len(links) > 12:     # talos: every 4th link, the deepest included
        links = sorted(set(links[::4]) | {o.deepest_link()})
    check(model, o, links, rng, nstates=2)


@pytest.mark.parametrize("seed,fb,nmim", [(29, False, 2), (21, True, 2), (32, True, 0)])
def test_frames_equal_pinocchio_on_random_trees(seed, fb, nmim, tmp_path):
    """Random trees with fixed joints (merged links with an offset), negative and
    oblique axes, mimic joints; planar joints are left out (Pinocchio's planar
    joint is another parametrisation)."""
    types = ("revolute", "continuous", "prismatic", "fixed")
    urdf = random_tree_urdf(seed, 10, types=types, mimic=nmim)
    path = tmp_path / "tree.urdf"
    path.write_text(urdf)
    model = rbd.Model.from_urdf(str(path), floating_base=fb)
    assert len(model.mimic_joints) == nmim or nmim == 0
    o = orc.Oracle(str(path), floating_base=fb, mimic=True, layout=model)
    check(model, o, list(model.link_names), np.random.default_rng(seed))


def test_a_link_fixed_to_the_world_does_not_move():
    model = rbd.Model.from_urdf(orc.robot_urdf("panda"))
    base = next(lp.name for lp in model.tree.links if lp.body < 0)
    q = np.full(model.nq, 0.4)
    assert np.all(rbd.frame_jacobian(model, q, base) == 0)
    assert np.all(rbd.frame_velocity(model, q, q, base) == 0)
    with pytest.raises(ValueError, match=r"^frame: expected the name of a link of the model, got 'panda_hnd'.*"
                                         r"did you mean \['panda_hand'"):
        rbd.frame_jacobian(model, q, "panda_hnd")
    with pytest.raises(ValueError, match=r"^reference: expected one of"):
        rbd.frame_jacobian(model, q, "panda_hand", "body")
