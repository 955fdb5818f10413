"""rbd_ros.core: rigid-body dynamics on kinematic trees (Featherstone's algorithms).

ROS-free; depends on numpy, numba and urdf-parser-py only.

    import rbd_ros.core as rbd
    model = rbd.Model.from_urdf("robot.urdf")         # or the URDF XML text
    tau = rbd.rnea(model, q, v, a)                     # inverse dynamics
    g = rbd.gravity(model, q)                          # gravity torques
    H = rbd.crba(model, q)                             # joint-space inertia
    qdd = rbd.forward_dynamics(model, q, v, tau)       # CRBA + LᵀDL
    qdd = rbd.aba(model, q, v, tau)                    # articulated-body algorithm
    rbd.compensation_into(model, q, v, dofs, g, b, H)  # g, b, H for a control loop, one call
    tau_f = rbd.friction(model, v)                     # URDF joint friction (opt-in term)
    model2 = model.with_payload("tool", 0.5, [0, 0, 0.05], [1e-3, 0, 0, 1e-3, 0, 1e-3])
    model3 = model.with_armature({"joint1": 0.1})      # rotor inertia per DOF

Conventions: see the README (joint order, free-flyer layout, wrench frames, SI units).
"""
from .dynamics import (
                       FEXT_FRAMES,
                       aba,
                       bias,
                       compensation_into,
                       coriolis_matrix,
                       crba,
                       dof_indices,
                       forward_dynamics,
                       gravity,
                       ltdl,
                       ltdl_solve,
                       ltdl_unpack,
                       rnea,
)
from .model import Model, ModelError
from .robot_terms import friction

__all__ = ["Model", "ModelError", "rnea", "gravity", "bias", "coriolis_matrix", "crba", "forward_dynamics", "aba",
           "ltdl", "ltdl_solve", "ltdl_unpack", "compensation_into", "dof_indices", "FEXT_FRAMES", "friction"]
