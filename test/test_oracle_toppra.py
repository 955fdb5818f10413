"""rbd.retime against toppra (the reference TOPP-RA) with Pinocchio's inverse dynamics on
the same path, limits and grid (issue 26): the durations agree within 1 %, and every
velocity, acceleration and torque limit holds on rbd.retime's samples by Pinocchio's
inverse dynamics.  The path is the documented one (a not-a-knot cubic spline in the
chord-length parameter, toppra's SplineInterpolator on the same knots); both use
TOPP-RA's interpolation discretisation for the acceleration and torque constraints."""
import xml.etree.ElementTree as ET

import numpy as np
import oracle as orc
import pinocchio as pin
import pytest
import toppra
import toppra.algorithm as talgo
import toppra.constraint as tcon

import rbd_ros.core as rbd
from rbd_ros.robots import bundled_robot_path

INTERP = tcon.DiscretizationType.Interpolation
REL = 1e-9


def chord(wp):
    return np.concatenate(([0], np.cumsum(np.linalg.norm(np.diff(wp, axis=0), axis=1))))


def _waypoints(model, k, seed, reach):
    lim = np.clip(model.position_limit, -np.pi, np.pi)
    mid, half = 0.5 * (lim[:, 0] + lim[:, 1]), 0.5 * (lim[:, 1] - lim[:, 0])
    phase = np.random.default_rng(seed).uniform(0, 6, model.nv)
    f = np.linspace(0, 2.5, k)[:, None] * (1 + np.arange(model.nv))[None, :] * 0.6 + phase
    return mid + reach * half * np.sin(f)


class Problem:
    """A robot with a payload, armature and Coulomb friction, in rbd_ros and in Pinocchio."""

    def __init__(self, urdf, link, friction, k=12, seed=3, reach=0.6):
        text = orc._urdf_text(urdf)
        base = rbd.Model.from_urdf(text)
        self.arm = np.linspace(0.05, 0.2, base.nv)
        self.payload = (link, 2.0, np.array([0.0, 0.01, 0.05]), np.diag([4e-3, 4e-3, 2e-3]))
        self.friction = friction
        self.model = base.with_armature(self.arm).with_payload(*self.payload)
        pm = pin.buildModelFromXML(text)
        assert list(pm.names)[1:] == list(base.joint_names)           # same DOF order
        pm.armature = self.arm
        fr = pm.frames[pm.getFrameId(link)]
        _, m, com, inertia = self.payload
        pm.inertias[fr.parentJoint] = pm.inertias[fr.parentJoint] + fr.placement.act(pin.Inertia(m, com, inertia))
        self.pm, self.pd = pm, pm.createData()
        self.wp = _waypoints(base, k, seed, reach)

    def inv_dyn(self, q, v, a):
        return pin.rnea(self.pm, self.pd, q, v, a)

    def toppra_sd(self, s, vmax, amax, tmax=None):
        path = toppra.SplineInterpolator(chord(self.wp), self.wp)
        cons = [tcon.JointVelocityConstraint(np.column_stack((-vmax, vmax))),
                tcon.JointAccelerationConstraint(np.column_stack((-amax, amax)), discretization_scheme=INTERP)]
        if tmax is not None:
            cons.append(tcon.JointTorqueConstraint(self.inv_dyn, np.column_stack((-tmax, tmax)),
                                                   self.friction, discretization_scheme=INTERP))
        sdd, sd, _ = talgo.TOPPRA(cons, path, gridpoints=s, solver_wrapper="seidel").compute_parameterization(0, 0)
        assert sd is not None, "toppra found no parameterisation"
        return sd


def duration(s, sd):
    return float(np.sum(2 * np.diff(s) / (sd[:-1] + sd[1:])))


def _friction_model(urdf, friction):
    """The URDF with <dynamics friction> per joint (rbd_ros reads friction from the URDF)."""
    root = ET.fromstring(orc._urdf_text(urdf))
    k = 0
    for j in root.findall("joint"):
        if j.get("type") in ("revolute", "continuous", "prismatic"):
            for d in j.findall("dynamics"):
                j.remove(d)
            ET.SubElement(j, "dynamics", damping="0", friction=repr(float(friction[k])))
            k += 1
    return ET.tostring(root, encoding="unicode")


CASES = {
    "rbd_arm7": (lambda: open(bundled_robot_path("rbd_arm7")).read(), "flange", 0.6, 15.0),
    "ur5": (lambda: orc.robot_urdf("ur5"), "tool0", 0.4, 10.0),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def problem(request):
    get, link, scale, amax = CASES[request.param]
    nv = rbd.Model.from_urdf(orc._urdf_text(get())).nv
    friction = np.linspace(0.8, 0.3, nv)
    p = Problem(_friction_model(get(), friction), link, friction)
    p.effort_scale, p.amax = scale, np.full(nv, amax)
    return p


def test_retime_matches_toppra_with_pinocchio(problem):
    m = problem.model
    vmax, amax, tmax = m.velocity_limit, problem.amax, problem.effort_scale * m.effort_limit
    r = rbd.retime(m, problem.wp, acceleration_limits=amax, effort_scale=problem.effort_scale)
    assert "effort" in set(r.binding), "the sentinel: the torque limit must bind on this path"
    sd = problem.toppra_sd(r.s, vmax, amax, tmax)
    ratio = r.duration / duration(r.s, sd)
    print(f"duration {r.duration:.6f} s, toppra {duration(r.s, sd):.6f} s, ratio {ratio:.9f}")
    assert abs(ratio - 1) <= 0.01
    # every constraint, by Pinocchio's inverse dynamics on our samples
    direction = np.sign(toppra.SplineInterpolator(chord(problem.wp), problem.wp)(r.s, 1))
    tau = np.array([problem.inv_dyn(q, v, a) for q, v, a in zip(r.q, r.v, r.a)]) + problem.friction * direction
    assert np.max(np.abs(r.tau - tau)) <= REL * np.max(np.abs(tau))
    assert np.max(np.abs(tau) / tmax) <= 1 + REL
    assert np.max(np.abs(r.a) / amax) <= 1 + REL
    assert np.max(np.abs(r.v) / vmax) <= 1 + REL


def test_velocity_acceleration_only_against_toppra(problem):
    """Without torque limits the durations agree too, and the torque-limited retiming is
    nowhere faster than toppra's velocity/acceleration-only one (toppra's forward pass
    keeps a 1e-4 margin inside each controllable set: the tolerance)."""
    m = problem.model
    vmax, amax = m.velocity_limit, problem.amax
    free = rbd.retime(m, problem.wp, acceleration_limits=amax, effort_limits=np.inf)
    sd = problem.toppra_sd(free.s, vmax, amax)
    assert abs(free.duration / duration(free.s, sd) - 1) <= 0.01
    limited = rbd.retime(m, problem.wp, acceleration_limits=amax, effort_scale=problem.effort_scale)
    assert np.all(limited.sd <= sd * (1 + 1e-3) + 1e-9)
    effort = (limited.binding == "effort") & (limited.sd > 0)
    assert np.all(limited.sd[effort] < sd[effort])
