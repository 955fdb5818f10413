"""Contacts with friction in the core (issue 25): constrained_inverse_dynamics with
friction cones on solo12 and anymal standing on four point feet and talos in double
support on flat feet (example-robot-data, their SRDF standing poses).  By definition:
M a + b = Sᵀτ + Jᵀλ with τ = 0 on the base (Pinocchio's rnea and constraint Jacobian,
<= 1e-9); λ inside the cones (rows written here from doc/contacts.md, frames from
Pinocchio); λ the least-norm one among those (an independent solve: scipy's NNLS on the
least-distance problem) -- exactly the friction-free solution when no cone is active,
to 1e-6 when one is; infeasible motions: the least residual over the cones (NNLS over
the cones' edges) and the point it reaches.  Helpers: contact_util.py."""
import daqp  # noqa: F401  (the solver under test: a missing one skips this file under colcon)
import numpy as np
import pytest
from contact_util import Robot, cone_rows, cwc_edges, cwc_rows, generators, least_norm, least_residual
from numba.core.runtime import _nrt_python as nrt
from scipy.optimize import linprog, nnls
from scipy.spatial.transform import Rotation

import rbd_ros.core as rbd
from rbd_ros.core.constraints.cones import cone_rows as kernel_cone_rows
from rbd_ros.core.constraints.contacts import friction_spec
from rbd_ros.core.constraints.packing import constraint_set

TOL = 1e-9
QP_TOL = 1e-6


@pytest.fixture(scope="module", params=["solo12", "anymal_c", "talos_full_v2"])
def robot(request):
    return Robot(request.param)


@pytest.fixture(scope="module")
def solo():
    return Robot("solo12")


def transform(rotvec, xyz=(0.0, 0.0, 0.0)):
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    T[:3, 3] = xyz
    return T


def check_solution(robot, q, v, a, cons, frictions, res, w=None):
    """The definitions: equations, τ = 0 on the base, λ in the cones, λ optimal (or of
    least residual when infeasible).  Returns the result's status."""
    B, c, J, f = robot.system(q, v, a, cons)
    scale = max(1.0, np.max(np.abs(c)))
    assert np.all(res.tau[:6] == 0.0)
    C = cone_rows(robot, q, cons, frictions)
    lam = res.lam
    assert np.max(C @ lam, initial=-1.0) <= TOL * scale, "λ leaves a cone"
    w = np.ones(lam.size) if w is None else np.asarray(w)
    if res.feasible:
        # M a + b = Sᵀτ + Jᵀλ, every row
        assert np.max(np.abs(res.tau + J.T @ lam - f)) <= TOL * max(1.0, np.max(np.abs(f)))
        assert res.violation == 0.0 and res.residual <= TOL * scale
        ref = least_norm(B, c, C, w)
        assert ref is not None
        err = np.max(np.abs(lam - ref)) / np.max(np.abs(ref))
        assert err <= (QP_TOL if res.status == "cone active" else 1e-8), (res.status, err)
        if res.status == "no cone active":
            free = rbd.constrained_inverse_dynamics(robot.model, q, v, a, cons, weights=w)
            assert np.array_equal(lam, free.lam) and np.array_equal(res.tau, free.tau)
            assert res.solver_status == "not run"
    else:
        assert res.status == "infeasible"
        # the actuated rows hold exactly; the base rows miss by the violation, the least there is
        assert np.max(np.abs((res.tau + J.T @ lam - f)[6:])) <= TOL * max(1.0, np.max(np.abs(f)))
        assert abs(np.linalg.norm(B @ lam - c) - res.violation) <= TOL * scale
        best, reached = least_residual(B, c, generators(robot, q, cons, frictions))
        assert abs(res.violation - best) <= QP_TOL * scale, (res.violation, best)
        # the residual vector is unique (a projection onto a convex cone): λ reaches NNLS's point
        assert np.linalg.norm(B @ lam - reached) <= QP_TOL * scale
    return res.status


def test_contact_wrench_cone_is_the_span_of_the_corner_pyramids():
    """The 16 rows of a flat contact's cone (Caron et al. 2015) are exactly the wrenches
    that pyramids at the sole's corners exert: every edge satisfies them, each row is a
    facet (5 independent edges on it), and points of each facet and random wrenches
    satisfying the rows are spanned by the edges (NNLS residual 0)."""
    rng = np.random.default_rng(0)
    for mu, X, Y in ((0.7, 0.1, 0.065), (0.3, 0.05, 0.12)):
        H, G = cwc_rows(mu, X, Y), cwc_edges(mu, X, Y)
        assert np.max(H @ G) <= 1e-15
        bound = np.vstack([H, [0, 0, 1, 0, 0, 0]]), np.r_[np.zeros(16), 1.0]
        for row in H:
            assert np.linalg.matrix_rank(G[:, np.abs(row @ G) < 1e-12]) == 5
            for _ in range(5):          # a vertex of the facet (f_z <= 1) in a random direction
                w = linprog(rng.normal(size=6), A_ub=bound[0], b_ub=bound[1], A_eq=row[None], b_eq=[0.0],
                            bounds=[(None, None)] * 6).x
                assert nnls(G, w)[1] <= 1e-12
        inside = 0
        for _ in range(3000):
            wr = rng.normal(size=6) * [1, 1, 1, 0.1, 0.1, 0.1]
            wr[2] = abs(wr[2]) * 2.0
            if np.all(H @ wr <= 0):
                inside += 1
                assert nnls(G, wr)[1] <= 1e-12 * np.linalg.norm(wr)
        assert inside > 50


def test_kernel_cone_rows_equal_the_definition(solo):
    """The compiled rows (frames from the kinematics) equal the ones written from the
    definition with Pinocchio's frames: point contacts with rotated foot and ground
    frames, flat contacts with a tilted sole, μ = 0."""
    talos = Robot("talos_full_v2")
    rng = np.random.default_rng(1)
    cases = [(solo, solo.contacts([transform(rng.normal(size=3)) for _ in range(4)],
                                  [transform(rng.normal(size=3) * 0.3) for _ in range(4)]), [0.6, 0.0, None, 0.3]),
             (talos, talos.contacts([transform([0.2, -0.1, 0.3]), None], [transform([0.0, 0.1, 0.0]), None]),
              [rbd.FrictionCone(0.5, sole_size=(0.2, 0.1)), rbd.FrictionCone(0.0, sole_size=(0.25, 0.12))])]
    for robot, cons, fr in cases:
        q = robot.q.copy()
        q[7:] += rng.normal(size=q.size - 7) * 0.05
        cs = constraint_set(robot.model, cons)
        spec = friction_spec(cs, fr, len(cons))
        rbd.constraint_jacobian(robot.model, q, cons)      # the frames into this thread's workspace
        C, work = np.zeros((spec.rows, cs.m)), np.zeros(18)
        lam = rng.normal(size=cs.m)
        worst = kernel_cone_rows(cs.ci_k, cs.workspace(), spec.fi, spec.ff, C, lam, work)
        ref = cone_rows(robot, q, cons, fr)
        assert np.max(np.abs(C - ref)) <= 1e-12
        assert abs(worst - np.max(C @ lam)) <= 1e-14 * np.max(np.abs(C @ lam))


def test_standing_and_moving_on_the_feet(robot):
    """Standing still and random motions with the feet on the ground (base accelerations
    up to a few m/s², rad/s²), friction from generous (no cone active) to tight (cones
    active, some motions infeasible): every result satisfies the definitions."""
    rng = np.random.default_rng(2)
    cons = robot.contacts()
    n = len(cons)
    seen = set()
    for k in range(12):
        base = np.zeros(6) if k == 0 else np.concatenate([rng.normal(size=3) * 2.5, rng.normal(size=3) * 3.0])
        v0 = None
        if k == 1:          # moving: joint velocities that keep the feet still
            J = rbd.constraint_jacobian(robot.model, robot.q, cons)
            v0 = np.zeros(robot.model.nv)
            v0[:6] = rng.normal(size=6) * 0.3
            v0[6:] = np.linalg.lstsq(J[:, 6:], -J[:, :6] @ v0[:6], rcond=None)[0]
        v, a = robot.motion(cons, base, v0)
        for mu in (1.0, 0.5, 0.3):
            fr = [robot.friction(mu)] * n
            res = rbd.constrained_inverse_dynamics(robot.model, robot.q, v, a, cons, friction=fr)
            seen.add(check_solution(robot, robot.q, v, a, cons, fr, res))
    assert seen == {"no cone active", "cone active", "infeasible"}, seen


def test_bilateral_entries_and_weights(solo):
    """A foot without friction (None: bilateral) and row weights: the same definitions
    with min ½ λᵀWλ."""
    rng = np.random.default_rng(3)
    cons = solo.contacts()
    v, a = solo.motion(cons, [3.0, -1.0, 0.5, 1.0, -2.0, 0.5])
    for fr, w in (([0.4, 0.4, None, 0.4], None), ([0.4] * 4, rng.uniform(0.2, 5.0, 12)),
                  ([None, 0.3, 0.3, None], rng.uniform(0.2, 5.0, 12))):
        res = rbd.constrained_inverse_dynamics(solo.model, solo.q, v, a, cons, friction=fr, weights=w)
        assert check_solution(solo, solo.q, v, a, cons, fr, res, w) == "cone active"


def test_foot_frames_not_aligned_with_the_ground(solo):
    """The cone belongs to the ground (frame b): turning the feet's frames (origin_a)
    changes λ's axes only -- the world forces R_a λ are the same; tilting the ground
    (origin_b, a 15° slope) turns the cones."""
    rng = np.random.default_rng(4)
    aligned = solo.contacts()
    turned = solo.contacts([transform(rng.normal(size=3)) for _ in range(4)])
    v, a = solo.motion(aligned, [2.5, 1.0, 0.0, 0.0, 0.0, 1.0])
    world = []
    for cons in (aligned, turned):
        res = rbd.constrained_inverse_dynamics(solo.model, solo.q, v, a, cons, friction=0.4)
        assert check_solution(solo, solo.q, v, a, cons, [0.4] * 4, res) == "cone active"
        world.append(np.concatenate([solo.rotation(solo.q, c.link_a) @ c.origin_a[:3, :3] @ res.lam[3 * k:3 * k + 3]
                                     for k, c in enumerate(cons)]))
    assert np.max(np.abs(world[0] - world[1])) <= QP_TOL * np.max(np.abs(world[0]))
    slope = solo.contacts(origins_b=[transform([np.radians(15.0), 0.0, 0.0])] * 4)
    n = transform([np.radians(15.0), 0.0, 0.0])[:3, 2]
    v, a = solo.motion(slope, np.zeros(6))
    # standing still on a 15° slope: the forces hold the weight, inside cones about the
    # slope's normal when tan 15° = 0.27 <= μ/√2 (μ = 0.45); it slides for μ = 0.3
    res = rbd.constrained_inverse_dynamics(solo.model, solo.q, v, a, slope, friction=0.45)
    assert check_solution(solo, solo.q, v, a, slope, [0.45] * 4, res) == "no cone active"
    for k, c in enumerate(slope):
        fw = solo.rotation(solo.q, c.link_a) @ res.lam[3 * k:3 * k + 3]
        assert fw @ n > 0.0 and np.linalg.norm(fw - (fw @ n) * n) <= 0.45 * (fw @ n)
    res = rbd.constrained_inverse_dynamics(solo.model, solo.q, v, a, slope, friction=0.3)
    assert check_solution(solo, solo.q, v, a, slope, [0.3] * 4, res) == "infeasible"
    v, a = solo.motion(slope, [0.0, 0.0, 0.0, 0.0, 0.0, 3.0])        # turning on the slope, μ = 0.4
    res = rbd.constrained_inverse_dynamics(solo.model, solo.q, v, a, slope, friction=0.4)
    assert check_solution(solo, solo.q, v, a, slope, [0.4] * 4, res) == "cone active"


def test_pulling_on_the_ground_is_infeasible(solo):
    """A base falling faster than gravity needs the ground to pull: feasible is False, the
    least-violating forces and the violation equal the independent least
    residual; a lateral acceleration beyond the friction too."""
    cons = solo.contacts()
    for base, mu in (([0.0, 0.0, -15.0, 0.0, 0.0, 0.0], 0.8), ([6.0, 0.0, 0.0, 0.0, 0.0, 0.0], 0.3)):
        v, a = solo.motion(cons, base)
        res = rbd.constrained_inverse_dynamics(solo.model, solo.q, v, a, cons, friction=mu)
        assert not res.feasible and res.violation > 1.0 and res.status == "infeasible"
        check_solution(solo, solo.q, v, a, cons, [mu] * 4, res)
    # without friction: one foot cannot hold the base still (over-determined) -> infeasible too
    one = cons[:1]
    res = rbd.constrained_inverse_dynamics(solo.model, solo.q, np.zeros(solo.model.nv), np.zeros(solo.model.nv),
                                           one)
    assert not res.feasible and res.violation == res.residual > 1.0 and res.status == "infeasible"


def test_into_form_equals_and_allocates_nothing_without_an_active_cone(solo):
    cons = solo.contacts()
    nv = solo.model.nv
    tau, lam, info = np.empty(nv), np.empty(12), np.empty(7)
    for base, mu in ((np.zeros(6), 0.8), ([3.0, 0.0, 0.0, 0.0, 0.0, 0.0], 0.4), ([6.0, 0, 0, 0, 0, 0], 0.3)):
        v, a = solo.motion(cons, base)
        r = rbd.constrained_inverse_dynamics(solo.model, solo.q, v, a, cons, friction=mu)
        out = rbd.constrained_inverse_dynamics_into(solo.model, solo.q, v, a, cons, tau, lam, friction=mu,
                                                    info=info)
        assert np.array_equal(tau, r.tau) and np.array_equal(lam, r.lam) and out == r.residual
        assert info[5] == float(r.feasible) and info[6] == r.violation
    v, a = solo.motion(cons, np.zeros(6))
    # numba's allocation counter (private API, test-only): one meminfo per array argument
    # and call -- the ID kernel takes 14 arrays, the cone rows 7; anything else would add
    nrt.memsys_enable_stats()
    try:
        before = nrt.memsys_get_stats_alloc()
        for _ in range(20):
            rbd.constrained_inverse_dynamics_into(solo.model, solo.q, v, a, cons, tau, lam, friction=0.8)
        assert nrt.memsys_get_stats_alloc() - before == 20 * (14 + 7)
    finally:
        nrt.memsys_disable_stats()


def test_bad_friction_arguments_are_named(solo):
    cons = solo.contacts()
    q, z = solo.q, np.zeros(solo.model.nv)
    cid = rbd.constrained_inverse_dynamics
    with pytest.raises(ValueError, match=r"friction: expected 4 entries, one per constraint passed \(FL_FOOT"):
        cid(solo.model, q, z, z, cons, friction=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"friction\[1\] \(constraint 'FR_FOOT'\): mu: expected a friction "
                                         "coefficient"):
        cid(solo.model, q, z, z, cons, friction=[0.5, -1.0, 0.5, 0.5])
    with pytest.raises(ValueError, match=r"friction\[0\] .*a point contact has no sole"):
        cid(solo.model, q, z, z, cons, friction=rbd.FrictionCone(0.5, sole_size=(0.1, 0.1)))
    with pytest.raises(ValueError, match=r"friction\[2\] \(constraint 'HL_FOOT'\): expected a friction coefficient"):
        cid(solo.model, q, z, z, cons, friction=[0.5, 0.5, "0.5", 0.5])
    weld = (rbd.Constraint.weld("FL_FOOT", None, name="flat"),)
    with pytest.raises(ValueError, match=r"'flat'\): a flat \(6D\) contact needs its sole: give "
                                         r"rbd.FrictionCone\(0.5, sole_size=\(length, width\)\)"):
        cid(solo.model, q, z, z, weld, friction=0.5)
    odd = (rbd.Constraint("FL_FOOT", None, mask=(1, 1, 1, 0, 0, 1), name="odd"),)
    with pytest.raises(ValueError, match=r"friction applies to point contacts .* mask is 1 1 1 0 0 1"):
        cid(solo.model, q, z, z, odd, friction=0.5)
    with pytest.raises(ValueError, match=r"solver: expected None or one of 'daqp', got 'osqp'"):
        cid(solo.model, q, z, z, cons, friction=0.5, solver="osqp")
    with pytest.raises(ValueError, match=r"sole_size: expected two lengths > 0"):
        rbd.FrictionCone(0.5, sole_size=(0.1, 0.0))
    with pytest.raises(ValueError, match=r"mu: expected a friction coefficient, a finite number >= 0, got nan"):
        rbd.FrictionCone(float("nan"))
    # sentinel: the same call with good arguments answers
    assert cid(solo.model, q, z, z, cons, friction=[0.5, 0.5, 0.5, 0.5]).feasible


def test_fewer_feet_rank_deficient_and_exactly_determined(solo):
    """Two diagonal point feet (a trot stance: J_baseᵀ has rank 5, the roll about the
    diagonal is free) and talos on one flat foot (exactly determined: the wrench is the
    base's, its centre of pressure in the sole or not): the definitions hold either way."""
    statuses = set()
    trot = solo.contacts()[0::3]                        # FL_FOOT, HR_FOOT
    for base in ([0.0] * 6, [1.0, 0.5, 0.0, 0.0, 0.0, 0.0]):
        v, a = solo.motion(trot, base)
        B = rbd.constraint_jacobian(solo.model, solo.q, trot)[:, :6].T
        assert np.linalg.matrix_rank(B) == 5
        for mu in (0.8, None):
            res = rbd.constrained_inverse_dynamics(solo.model, solo.q, v, a, trot, friction=mu)
            statuses.add(check_solution(solo, solo.q, v, a, trot, [mu] * 2, res))
    talos = Robot("talos_full_v2")
    left = talos.contacts()[:1]
    for base in ([0.0] * 6, [0.0, -3.0, 0.0, 0.0, 0.0, 0.0]):
        v, a = talos.motion(left, base)
        res = rbd.constrained_inverse_dynamics(talos.model, talos.q, v, a, left, friction=talos.friction(0.6))
        statuses.add(check_solution(talos, talos.q, v, a, left, [talos.friction(0.6)], res))
    assert "infeasible" in statuses
