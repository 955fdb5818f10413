"""A floating-base robot in MuJoCo, read the way ROS states it (no ROS here).

:class:`BaseState` converts MuJoCo's free joint (qpos ``[x y z qw qx qy qz]``, qvel
``[linear velocity of the body origin in world axes; angular velocity in body axes]``)
to what nav_msgs/Odometry carries (REP 105, the message's own comments): the pose of
the base frame in the world frame (``header.frame_id``), position and quaternion
``[x y z w]``, and the twist *in the base frame* (``child_frame_id``): the linear
velocity of the base origin and the angular velocity, both in base axes.  That twist
is Pinocchio's free-flyer velocity ``v[:6]`` and the pose its ``q[:7]``
(``[x y z qx qy qz qw]``), so a node with ``floating_base`` takes them as they are.

:class:`FootForces` sums MuJoCo's contact forces (``mj_contactForce``) per contact link:
the force the ground exerts on that link's contact sphere, in world axes or in the
link's own axes.
"""
from __future__ import annotations

import numpy as np

from .mujoco_model import ROOT_JOINT, contact_geom, quat_wxyz_to_R


class BaseState:
    """The free joint :data:`~rbd_ros.sim.mujoco_model.ROOT_JOINT` of ``mjm``."""

    def __init__(self, mjm):
        jid = mjm.joint(ROOT_JOINT).id
        self.qadr = int(mjm.jnt_qposadr[jid])
        self.vadr = int(mjm.jnt_dofadr[jid])

    def pose(self, data) -> np.ndarray:
        """``[x y z qx qy qz qw]``: the base frame in the world (Pinocchio's q[:7])."""
        q = data.qpos[self.qadr:self.qadr + 7]
        return np.array([q[0], q[1], q[2], q[4], q[5], q[6], q[3]])

    def twist(self, data) -> np.ndarray:
        """``[vx vy vz wx wy wz]`` in base axes: the base origin's linear velocity and the
        angular velocity (Pinocchio's v[:6]; nav_msgs/Odometry's twist)."""
        q = data.qpos[self.qadr + 3:self.qadr + 7]
        v = data.qvel[self.vadr:self.vadr + 6]
        return np.concatenate([quat_wxyz_to_R(q).T @ v[:3], v[3:]])

    def set_pose(self, data, pose) -> None:
        """Place the base at ``pose`` = ``[x y z qx qy qz qw]`` (the quaternion normalised);
        ValueError naming ``initial_base_pose`` for a non-finite one or a zero quaternion."""
        p = np.asarray(pose, dtype=np.float64)
        if p.shape != (7,) or not np.all(np.isfinite(p)) or np.linalg.norm(p[3:]) < 1e-9:
            raise ValueError(f"initial_base_pose: expected 7 finite numbers [x y z qx qy qz qw] with a "
                             f"non-zero quaternion, got {p.tolist()}")
        quat = p[3:] / np.linalg.norm(p[3:])
        data.qpos[self.qadr:self.qadr + 7] = [p[0], p[1], p[2], quat[3], quat[0], quat[1], quat[2]]


class FootForces:
    """Per link of ``links`` (each with a contact sphere, :class:`~rbd_ros.sim.mujoco_model.Ground`):
    the sum of MuJoCo's contact forces on its sphere."""

    def __init__(self, mjm, links):
        import mujoco  # the sim extra (optional): imported where a MuJoCo model is read

        self._mujoco = mujoco
        self.mjm = mjm
        self.links = list(links)
        self.geoms = np.array([mjm.geom(contact_geom(link)).id for link in self.links], dtype=np.intp)
        self.bodies = np.array([mjm.body(link).id for link in self.links], dtype=np.intp)
        self._f6 = np.zeros(6)

    def world(self, data, out=None) -> np.ndarray:
        """(n, 3): the force on each link's sphere, world axes (N), from ``data``'s contacts
        (those of the last ``mj_forward`` / ``mj_step``).  MuJoCo's contact force acts on
        the contact's second geom along the frame's normal; the first geom gets its opposite."""
        out = np.zeros((len(self.links), 3)) if out is None else out
        out[:] = 0.0
        for i in range(data.ncon):
            c = data.contact[i]
            g1, g2 = int(c.geom[0]), int(c.geom[1])
            hit = np.flatnonzero((self.geoms == g1) | (self.geoms == g2))
            if hit.size == 0:
                continue
            self._mujoco.mj_contactForce(self.mjm, data, i, self._f6)
            f = c.frame.reshape(3, 3).T @ self._f6[:3]
            k = int(hit[0])
            out[k] += f if self.geoms[k] == g2 else -f
        return out

    def local(self, data, world) -> np.ndarray:
        """(n, 3): ``world`` forces in each link's own axes."""
        R = data.xmat[self.bodies].reshape(-1, 3, 3)
        return np.einsum("kji,kj->ki", R, world)


def place_on_ground(mjm, data, ground) -> float:
    """Move the floating base vertically so that the lowest contact sphere of ``ground``
    (:class:`~rbd_ros.sim.mujoco_model.Ground`) touches its plane; returns the shift (m)."""
    import mujoco  # the sim extra (optional): imported where a MuJoCo model is read

    mujoco.mj_kinematics(mjm, data)
    low = min(data.geom_xpos[mjm.geom(contact_geom(link)).id][2] for link in ground.links) - ground.radius
    shift = float(ground.height - low)
    data.qpos[BaseState(mjm).qadr + 2] += shift
    return shift
