"""Helpers of the constraint tests: the bundled mechanisms, random closed states, Pinocchio's
RigidConstraintModel of an rbd_ros Constraint, and an RK4 integrator on q (angles only)."""
from __future__ import annotations

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.robots import bundled_robot_path

ACTUATED = {"fourbar": ["crank"], "delta": ["shoulder1", "shoulder2", "shoulder3"]}


def mechanism(name):
    """The bundled mechanism ``name`` (fourbar, delta) as an rbd_ros Model."""
    return rbd.Model.from_urdf(bundled_robot_path(name))


def closed_state(model, rng, name, spread=0.5, speed=1.0):
    """(q, v) with the loops closed: the actuated joints moved from q = 0 by up to
    ``spread`` rad, the passive ones closed by close_loops, v from loop_velocity."""
    q = np.zeros(model.nq)
    act = [model.q_index(j) for j in ACTUATED[name]]
    q[act] = rng.uniform(-spread, spread, len(act))
    q = rbd.close_loops(model, q, fixed=ACTUATED[name])
    v = np.zeros(model.nv)
    v[[model.v_index(j) for j in ACTUATED[name]]] = rng.uniform(-speed, speed, len(act))
    v = rbd.loop_velocity(model, q, v, fixed=ACTUATED[name])
    return q, v


def pin_constraint(pin, pmodel, c):
    """Pinocchio's RigidConstraintModel (LOCAL) of rbd_ros Constraint ``c`` (point or weld)."""
    def side(link, origin):
        if link is None:
            return 0, pin.SE3(np.array(origin[:3, :3]), np.array(origin[:3, 3]))
        f = pmodel.frames[pmodel.getFrameId(link, pin.FrameType.BODY)]
        return f.parentJoint, f.placement * pin.SE3(np.array(origin[:3, :3]), np.array(origin[:3, 3]))
    ja, Ma = side(c.link_a, c.origin_a)
    jb, Mb = side(c.link_b, c.origin_b)
    kind = pin.ContactType.CONTACT_3D if c.is_point else pin.ContactType.CONTACT_6D
    return pin.RigidConstraintModel(kind, pmodel, ja, Ma, jb, Mb, pin.ReferenceFrame.LOCAL)


def rk4(f, x, dt):
    k1 = f(x)
    k2 = f(x + 0.5 * dt * k1)
    k3 = f(x + 0.5 * dt * k2)
    k4 = f(x + dt * k3)
    return x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
