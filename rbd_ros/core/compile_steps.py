"""The steps that compile every kernel of rbd_ros.core, from the kernel registry.

``steps()`` -> [(name, function, group)]: each registry entry's public function on
one state, a batch of two and its ``_into`` form, with f_ext in both frames where it
takes one (``warm``), the hand-written public functions, then the steps other
packages register under the entry-point group ``rbd_ros.precompile`` (the node's
own kernels: ``rbd_ros.node.model_build.precompile_steps``).  The kernels do not depend
on the robot (a model is an array of numbers), so one small built-in model covers
every robot.  Run by ``rbd_precompile`` (``rbd_ros/precompile.py``).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import entry_points

import numpy as np

from .calls import public
from .calls.control_loop import compensation_into, dof_indices
from .calls.linalg import ltdl, ltdl_solve
from .calls.registry import ALGORITHMS
from .constraints.api import (
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
from .estimation.contact import CollisionDetector, external_wrench_into
from .estimation.observer import MomentumObserver
from .model.constraint import Constraint
from .model.model import Model
from .planning.capacity import payload_capacity
from .planning.retiming import retime

# a 3-body tree with one of each joint kind the kernels dispatch on (revolute,
# prismatic, continuous) and a mimic joint; the compiled code is the same for any model
_URDF = """<robot name="precompile">
  <link name="base"/>
  <link name="a"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="c"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="0.1 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j3" type="continuous"><parent link="b"/><child link="c"/><origin xyz="0 0.1 0"/><axis xyz="0 1 0"/>
    <mimic joint="j1" multiplier="0.5"/></joint>
</robot>"""


def warm(e, model) -> None:
    """Run registry entry ``e``'s kernels once on ``model`` (compiling them): its public
    function on one state and on a batch of two, its ``_into`` form, with f_ext in both
    frames where it takes one."""
    one = {"q": model.neutral()}
    args = [one.get(name, np.zeros(model.nv)) for name in e.inputs]
    batch = [np.tile(x, (2, 1)) for x in args]
    opts = {o.name: o.example(model) for o in e.options}
    fn = getattr(public, e.name)
    fn(model, *args, **opts)
    fn(model, *batch, **opts)
    getattr(public, e.name + "_into")(model, *args, *opts.values(), np.empty(e.out_shape(model)))
    if e.fext:
        fe = np.zeros((len(model.link_names), 6))
        for frame in ("local", "world"):
            fn(model, *args, f_ext=fe, f_ext_frame=frame)
        fn(model, *batch, f_ext=np.zeros((2,) + fe.shape))


CONTACT_STEP = "observer, wrench, detector"    # MomentumObserver, external_wrench, CollisionDetector
# the registry entries the contact step's classes call (compiled by their own steps)
CONTACT_ENTRIES = ("coriolis_transpose_v", "frame_jacobian")


def warm_contact(model, frame) -> None:
    """Run the momentum observer (every branch of its step), external_wrench_into and a
    CollisionDetector once on ``model`` (compiling their kernels and the registry entries
    they call)."""
    q, z, nv = model.neutral(), np.zeros(model.nv), model.nv
    obs = MomentumObserver(model, 1.0, friction=True, tau_held=True)
    obs.update(0.0, q, z, z)
    obs.update(1e-3, q, z, z)
    external_wrench_into(model, q, z, frame, "local", np.empty(6), np.empty(nv), np.empty((6, nv)))
    CollisionDetector(np.ones(nv)).update(0.0, z)


CONSTRAINT_STEP = "constraints, loops, cones"   # e, J, drift, constrained FD and ID, close_loops


def warm_constraints(model) -> None:
    """Run every constraint kernel once on ``model`` with a point and a 5D closure of its
    last link to the world where it stands (closed at the neutral q): e, J, J̇q̇, J q̇,
    constrained FD and ID (one state and ``_into``, friction-free and with the cone rows of
    a contact), close_loops and loop_velocity."""
    q, z, nv = model.neutral(), np.zeros(model.nv), model.nv
    link = model.link_names[-1]
    # the built-in model's links keep the world's axes at the neutral q: a point
    # constraint's error there (frame a's position seen from the world origin) is where
    # the link stands, so a world frame placed there closes the loop
    X = np.eye(4)
    X[:3, 3] = constraint_error(model, q, (Constraint(link, None),))
    here = Constraint(link, None, origin_b=X, name="precompile")
    cs = (here,)
    constraint_error(model, q, cs)
    constraint_jacobian(model, q, cs)
    constraint_drift(model, q, z, cs)
    constraint_velocity(model, q, z, cs)
    r = constrained_forward_dynamics(model, q, z, z, cs, kp=1.0, kd=1.0)
    constrained_forward_dynamics_into(model, q, z, z, cs, np.empty(nv), np.empty(r.lam.size))
    r2 = constrained_inverse_dynamics(model, q, z, z, cs)
    constrained_inverse_dynamics_into(model, q, z, z, cs, np.empty(nv), np.empty(r2.lam.size))
    constrained_inverse_dynamics(model, q, z, z, cs, friction=0.5)
    close_loops(model, q, cs)
    loop_velocity(model, q, z, cs)


PLANNING_STEP = "retime, payload_capacity"


def warm_planning(model) -> None:
    """Run retime (its reachability kernels) and payload_capacity once on ``model``."""
    wp = np.array([model.neutral(), model.neutral() + 0.1])
    retime(model, wp, acceleration_limits=1.0)
    q = np.tile(model.neutral(), (2, 1))
    payload_capacity(model, model.link_names[-1], q, a=np.full_like(q, 0.1))


def steps():
    """(name, function, group): every registry entry's kernels (``warm``), the
    hand-written public functions', then the steps other packages register under the
    entry point group ``rbd_ros.precompile`` (the node's: ``steps(model)`` functions
    returning more such triples)."""
    model = Model.from_urdf(_URDF)
    q, z = model.neutral(), np.zeros(model.nv)
    dofs = dof_indices(model)
    n = len(dofs)
    H = 2.0 * np.eye(model.nv)  # any SPD matrix
    def compensation() -> None:
        compensation_into(model, q, z, dofs, np.empty(n), np.empty(n), np.empty(n * n))

    steps: list[tuple[str, Callable[[], object], int]] = [("compensation_into", compensation, 0)]
    steps += [(e.name, functools.partial(warm, e, model), e.group) for e in ALGORITHMS]
    steps += [("ltdl, ltdl_solve", lambda: ltdl_solve(model, ltdl(model, H), z), 0)]
    steps += [(CONTACT_STEP, functools.partial(warm_contact, model, model.link_names[-1]), 1)]
    steps += [(PLANNING_STEP, functools.partial(warm_planning, model), 1)]
    steps += [(CONSTRAINT_STEP, functools.partial(warm_constraints, model), 0)]
    for ep in entry_points(group="rbd_ros.precompile"):
        steps += list(ep.load()(model))
    return steps
