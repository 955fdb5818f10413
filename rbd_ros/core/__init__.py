"""rbd_ros.core: rigid-body dynamics on kinematic trees (Featherstone's algorithms).

ROS-free; depends on numpy, numba and urdf-parser-py only.

    import rbd_ros.core as rbd
    model = rbd.Model.from_urdf("robot.urdf")         # or the URDF XML text
    tau = rbd.rnea(model, q, v, a)                     # inverse dynamics
    g = rbd.gravity(model, q)                          # gravity torques
    H = rbd.crba(model, q)                             # joint-space inertia
    qdd = rbd.forward_dynamics(model, q, v, tau)       # CRBA + LᵀDL
    qdd = rbd.aba(model, q, v, tau)                    # articulated-body algorithm
    rbd.rnea_into(model, q, v, a, out)                 # every algorithm: an allocation-free _into form
    rbd.compensation_into(model, q, v, dofs, g, b, H)  # g, b, H for a control loop, one call
    tau_f = rbd.friction(model, v)                     # URDF joint friction (opt-in term)
    model2 = model.with_payload("tool", 0.5, [0, 0, 0.05], [1e-3, 0, 0, 1e-3, 0, 1e-3])
    model3 = model.with_armature({"joint1": 0.1})      # rotor inertia per DOF
    model.tree                                         # the kinematic tree, named (KinematicTree)
    obs = rbd.MomentumObserver(model, gain=50.0)       # external joint torques from q, v, tau
    est = rbd.external_wrench(model, q, tau_ext, "tool")  # the wrench at a frame that explains them
    model2, report = rbd.identify(model, q, v, a, tau)  # inertial parameters from recorded motion (scipy)
    load = rbd.identify_payload(model, "tool", q, v, a, tau)  # an unknown payload on a link (scipy)
    traj = rbd.excitation_trajectory(model, 20.0)      # what to record for identify (scipy)
    r = rbd.retime(model, waypoints, effort_scale=0.9)  # time-optimal under v, a, tau limits (TOPP-RA)
    cap = rbd.payload_capacity(model, "tool", q)       # the heaviest payload within the effort limits
    qdd, lam = rbd.constrained_forward_dynamics(model, q, v, tau)   # closed loops (model.constraints)
    res = rbd.constrained_inverse_dynamics(model, q, v, a, actuated=["crank"])  # res.tau, res.lam
    q = rbd.close_loops(model, q, fixed=["crank"])     # assemble: the passive joints closing the loops
    lc = rbd.LoopCompletion(model, ["crank"]); lc.positions(q)   # the same per sample, in place

The algorithms are declared in ``registry.py``; their public functions are made
from it (``api.py``).  Conventions: see doc/core.md (joint order, free-flyer
layout, wrench frames, SI units).
"""
from .api import FEXT_FRAMES
from .constraints.api import (
    ConstrainedForwardDynamics,
    ConstrainedInverseDynamics,
    constrained_forward_dynamics,
    constrained_forward_dynamics_into,
    constrained_inverse_dynamics,
    constrained_inverse_dynamics_into,
    constraint_drift,
    constraint_error,
    constraint_jacobian,
    constraint_velocity,
)
from .constraints.closure import close_loops, loop_velocity
from .constraints.completion import LoopCompensation, LoopCompletion, LoopsNotClosed
from .constraints.constraint import Constraint
from .contact import CollisionDetector, external_wrench, external_wrench_into
from .control_loop import compensation_into, dof_indices, friction
from .excitation import excitation_trajectory
from .functions import PUBLIC as _PUBLIC
from .identification import identify
from .linalg import ltdl, ltdl_solve, ltdl_unpack
from .model import Model, ModelError
from .observer import MomentumObserver
from .payload_identification import identify_payload
from .planning import PayloadCapacity, RetimeResult, payload_capacity, retime

globals().update(_PUBLIC)

__all__ = ["Model", "ModelError", "ltdl", "ltdl_solve", "ltdl_unpack", "compensation_into", "dof_indices",
           "FEXT_FRAMES", "friction", "MomentumObserver", "external_wrench", "external_wrench_into",
           "CollisionDetector",
           "identify", "identify_payload", "excitation_trajectory",
           "retime", "RetimeResult", "payload_capacity", "PayloadCapacity",
           "Constraint", "close_loops", "loop_velocity", "LoopCompletion", "LoopCompensation", "LoopsNotClosed",
           "constraint_error", "constraint_jacobian",
           "constraint_drift", "constraint_velocity",
           "constrained_forward_dynamics", "constrained_forward_dynamics_into", "constrained_inverse_dynamics",
           "constrained_inverse_dynamics_into", "ConstrainedForwardDynamics", "ConstrainedInverseDynamics",
           *_PUBLIC]
