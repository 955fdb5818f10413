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
    res = rbd.constrained_inverse_dynamics(model, q, v, a, feet, friction=0.7)  # contacts: res.feasible
    q = rbd.close_loops(model, q, fixed=["crank"])     # assemble: the passive joints closing the loops
    lc = rbd.LoopCompletion(model, ["crank"]); lc.positions(q)   # the same per sample, in place

The algorithms are declared in ``calls/registry.py``; their public functions are
written out from it into ``calls/public.py`` (``python -m rbd_ros.core.calls.generate``).
The package is grouped by job: ``model/`` (the Model and how it is built),
``algorithms/`` (the compiled kernels and their numpy twins, ``algorithms/reference``),
``calls/`` (the public functions, argument checks, batches, the registry) and
``estimation/`` (observer, contact, identification), ``constraints/`` (closed loops,
contacts) and ``planning/`` (retiming, payload capacity).  Conventions: see doc/core.md
(joint order, free-flyer layout, wrench frames, SI units).
"""
from .calls.checked import FEXT_FRAMES
from .calls.control_loop import compensation_into, dof_indices, friction
from .calls.linalg import ltdl, ltdl_solve, ltdl_unpack
from .calls.public import (
    aba,
    aba_into,
    bias,
    bias_into,
    coriolis_matrix,
    coriolis_matrix_into,
    coriolis_transpose_v,
    coriolis_transpose_v_into,
    crba,
    crba_into,
    forward_dynamics,
    forward_dynamics_into,
    frame_acceleration,
    frame_acceleration_into,
    frame_jacobian,
    frame_jacobian_into,
    frame_velocity,
    frame_velocity_into,
    gravity,
    gravity_into,
    regressor,
    regressor_into,
    rnea,
    rnea_into,
)
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
from .constraints.contacts import FrictionCone
from .estimation.contact import CollisionDetector, external_wrench, external_wrench_into
from .estimation.excitation import excitation_trajectory
from .estimation.identification import identify
from .estimation.observer import MomentumObserver
from .estimation.payload_identification import identify_payload
from .model.constraint import Constraint
from .model.model import Model, ModelError
from .planning import PayloadCapacity, RetimeResult, payload_capacity, retime

__all__ = [
    "Model", "ModelError", "FEXT_FRAMES",
    # the registered algorithms (calls/public.py)
    "rnea", "rnea_into", "gravity", "gravity_into", "bias", "bias_into", "crba", "crba_into",
    "forward_dynamics", "forward_dynamics_into", "aba", "aba_into", "coriolis_matrix", "coriolis_matrix_into",
    "coriolis_transpose_v", "coriolis_transpose_v_into", "regressor", "regressor_into",
    "frame_jacobian", "frame_jacobian_into", "frame_velocity", "frame_velocity_into",
    "frame_acceleration", "frame_acceleration_into",
    # hand-written
    "ltdl", "ltdl_solve", "ltdl_unpack", "compensation_into", "dof_indices", "friction",
    "MomentumObserver", "external_wrench", "external_wrench_into", "CollisionDetector",
    "identify", "identify_payload", "excitation_trajectory",
    # closed loops and contacts (constraints/)
    "Constraint", "close_loops", "loop_velocity", "LoopCompletion", "LoopCompensation", "LoopsNotClosed",
    "constraint_error", "constraint_jacobian",
    "constraint_drift", "constraint_velocity",
    "constrained_forward_dynamics", "constrained_forward_dynamics_into", "constrained_inverse_dynamics",
    "constrained_inverse_dynamics_into", "ConstrainedForwardDynamics", "ConstrainedInverseDynamics",
    "FrictionCone",
    # planners (planning/)
    "retime", "RetimeResult", "payload_capacity", "PayloadCapacity",
]
