"""Closed kinematic loops in the core (issue 24): kernels against their numpy twins,
J against finite differences of e, ė = J q̇ at closed states, constrained ID of the
constrained FD's q̈, the 5D revolute closure against two point constraints, redundant
constraints, close_loops / loop_velocity, allocation-free _into forms.  Pinocchio:
test_constraints_oracle.py; simulation and the URDF element: test_constraints_sim.py."""
import numpy as np
import pytest
from constraint_util import ACTUATED, closed_state, mechanism
from numba.core.runtime import _nrt_python as nrt
from scipy.spatial.transform import Rotation

import rbd_ros.core as rbd
from rbd_ros.core.constraints import reference as cref
from rbd_ros.core.constraints.dynamics import cfd_into, cid_into
from rbd_ros.core.constraints.kinematics import jlog6_inv_into

TOL = 1e-9
MECHS = ["fourbar", "delta"]


def rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, np.max(np.abs(b)))


def shifted(T, dz):
    S = np.eye(4)
    S[2, 3] = dz
    return T @ S


def extra_constraints():
    """Point, weld and masked constraints on the delta's tree, offsets and the world included."""
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec([0.3, -0.2, 0.5]).as_matrix()
    T[:3, 3] = [0.01, 0.02, -0.03]
    return [rbd.Constraint("forearm1", "upper_arm3", origin_a=T, name="p"),
            rbd.Constraint.weld("platform", "wrist_cross2", origin_b=T, name="w"),
            rbd.Constraint("tool0", None, origin_b=T, mask=(1, 0, 1, 0, 1, 1), name="m"),
            rbd.Constraint.weld("elbow_cross3", None, origin_a=T, origin_b=T, name="ww")]


@pytest.mark.parametrize("name", MECHS)
def test_kernels_equal_their_twins(name):
    rng = np.random.default_rng(1)
    model = mechanism(name)
    extra = extra_constraints() if name == "delta" else []
    for _ in range(3):
        q = rng.uniform(-0.5, 0.5, model.nq)      # off the loops too
        v, tau, a = (rng.normal(size=model.nv) for _ in range(3))
        e, J, g, jv = cref.kinematics(model, q, v, extra)
        assert rel(rbd.constraint_error(model, q, extra), e) < TOL
        assert rel(rbd.constraint_jacobian(model, q, extra), J) < TOL
        assert rel(rbd.constraint_drift(model, q, v, extra), g) < TOL
        assert rel(rbd.constraint_velocity(model, q, v, extra), jv) < TOL
        for kp, kd, eps in ((0.0, 0.0, 0.0), (100.0, 20.0, 0.0), (0.0, 0.0, 1e-3)):
            qdd, lam = rbd.constrained_forward_dynamics(model, q, v, tau, extra, kp=kp, kd=kd, regularization=eps)
            qdd_t, lam_t = cref.constrained_forward_dynamics(model, q, v, tau, extra, kp=kp, kd=kd,
                                                             regularization=eps)
            # with ε = 1e-3 on the redundant extras, cond(K + ε I) ~ 1e8: agreement to ~1e-8
            tol = TOL if eps == 0.0 else 1e-7
            assert rel(qdd, qdd_t) < tol and rel(lam, lam_t) < 1e-8 if eps == 0.0 else tol, (kp, kd, eps)
        for act in (None, ACTUATED[name]):
            res = rbd.constrained_inverse_dynamics(model, q, v, a, actuated=act)
            tau_t, lam_t, r_t = cref.constrained_inverse_dynamics(model, q, v, a, actuated=act)
            assert rel(res.tau, tau_t) < TOL and rel(res.lam, lam_t) < TOL and abs(res.residual - r_t) < 1e-9


def fd_jacobian(model, q, cons=None, h=1e-6):
    e = rbd.constraint_error
    return np.column_stack([(e(model, q + h * d, cons) - e(model, q - h * d, cons)) / (2 * h)
                            for d in np.eye(model.nv)])


def world_placement(model, q, link):
    """A link's 4x4 world placement (through the numpy twin's kinematics)."""
    body, X = cref._frame(model, link, np.eye(4))
    R, p = cref._pose(cref._local(model, cref._tree_motion(model, q, np.zeros(model.nv)), body, X)[0])
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def closed_at(model, q, link_a, link_b, origin_a, mask, name):
    """A constraint whose frames coincide at q (frame b placed where frame a is)."""
    Ta = world_placement(model, q, link_a) @ origin_a
    Tb = world_placement(model, q, link_b)
    return rbd.Constraint(link_a, link_b, origin_a=origin_a, origin_b=np.linalg.solve(Tb, Ta), mask=mask, name=name)


@pytest.mark.parametrize("name", MECHS)
def test_error_derivative_is_jl_inverse_times_j_anywhere(name):
    """de/dq = Jl⁻¹(log6 ᵃMᵦ) J for a weld (SE(3)'s inverse left Jacobian: the exact
    derivative the loop completion's Newton steps use, kinematics.jlog6_inv_into), at
    random states far from closed and at small rotations (its series branch)."""
    rng = np.random.default_rng(12)
    tree = mechanism(name).with_constraints([])
    a, b = ("coupler_link", "rocker_link") if name == "fourbar" else ("forearm1", "wrist_cross3")
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec([0.3, -0.2, 0.5]).as_matrix()
    T[:3, 3] = [0.01, 0.02, -0.03]
    for k in range(4):
        q = rng.uniform(-0.5, 0.5, tree.nq)
        c = closed_at(tree, q, a, b, T, (1, 1, 1, 1, 1, 1), "w")
        D = np.eye(4)
        D[:3, :3] = Rotation.from_rotvec(rng.normal(size=3) * (0.004 if k % 2 else 0.8)).as_matrix()
        D[:3, 3] = rng.normal(size=3) * 0.05
        c = rbd.Constraint.weld(a, b, origin_a=c.origin_a, origin_b=c.origin_b @ D, name="w")
        e, J = rbd.constraint_error(tree, q, [c]), rbd.constraint_jacobian(tree, q, [c])
        B = np.zeros(36)
        jlog6_inv_into(-e, 0, B, 0)
        Jfd = fd_jacobian(tree, q, [c], h=1e-4)     # (log6's rounding near θ = 0 needs a large h)
        assert np.max(np.abs(B.reshape(6, 6) @ J - Jfd)) < 1e-7      # (FD: h² ~ 1e-8)
        assert np.max(np.abs(J - Jfd)) > 1e-4       # (J alone is not de/dq here)


@pytest.mark.parametrize("name", MECHS)
def test_jacobian_is_the_derivative_of_the_error_where_closed(name):
    """J = de/dq where the constraint frames coincide (every loop at q = 0; point, weld and
    5D constraints made closed at random states).  Where a mask leaves a rotation θ free,
    de/dq = B(θ) J with B invertible (doc/constraints.md): ė = 0 exactly when J q̇ = 0."""
    rng = np.random.default_rng(2)
    model = mechanism(name)
    q = np.zeros(model.nq)
    assert np.max(np.abs(rbd.constraint_jacobian(model, q) - fd_jacobian(model, q))) < 1e-8
    tree = model.with_constraints([])
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec([0.3, -0.2, 0.5]).as_matrix()
    T[:3, 3] = [0.01, 0.02, -0.03]
    a, b = ("coupler_link", "rocker_link") if name == "fourbar" else ("forearm1", "wrist_cross3")
    for _ in range(2):
        qr = rng.uniform(-0.5, 0.5, model.nq)
        for mask in ((1, 1, 1, 0, 0, 0), (1, 1, 1, 1, 1, 1), (1, 1, 1, 1, 1, 0), (0, 1, 1, 0, 1, 0)):
            c = closed_at(tree, qr, a, b, T, mask, "c")
            assert np.max(np.abs(rbd.constraint_error(tree, qr, [c]))) < 1e-12
            J = rbd.constraint_jacobian(tree, qr, [c])
            assert np.max(np.abs(J - fd_jacobian(tree, qr, [c]))) < 1e-8, mask
    for _ in range(3):
        q, v_closed = closed_state(model, rng, name)
        J, Jfd = rbd.constraint_jacobian(model, q), fd_jacobian(model, q)
        B = Jfd @ np.linalg.pinv(J)
        assert np.max(np.abs(B @ J - Jfd)) < 1e-8 and np.linalg.cond(B) < 10
        assert np.max(np.abs(J @ v_closed)) < 1e-12
        h = 1e-6
        edot = (rbd.constraint_error(model, q + h * v_closed) - rbd.constraint_error(model, q - h * v_closed)) / (2 * h)
        assert np.max(np.abs(edot)) < 1e-8


@pytest.mark.parametrize("name", MECHS)
def test_inverse_dynamics_of_forward_dynamics_gives_back_tau_and_lambda(name):
    """Exactly determined (actuated joints = mobility, passive block invertible): unique."""
    rng = np.random.default_rng(3)
    model = mechanism(name)
    act = [model.v_index(j) for j in ACTUATED[name]]
    for _ in range(4):
        q, v = closed_state(model, rng, name)
        tau = np.zeros(model.nv)
        tau[act] = rng.normal(scale=5.0, size=len(act))
        qdd, lam = rbd.constrained_forward_dynamics(model, q, v, tau)
        res = rbd.constrained_inverse_dynamics(model, q, v, qdd, actuated=ACTUATED[name])
        assert rel(res.tau, tau) < TOL and rel(res.lam, lam) < TOL
        assert res.residual < 1e-9 and res.acceleration_residual < 1e-9
        assert res.rank == len(lam) and 1.0 <= res.cond < 1e3


def test_revolute_closure_equals_two_points_on_the_hinge_axis():
    """The delta's 5D closures against two point constraints 0.05 m either side of the
    hinge on its axis (6 rows of rank 5 each: redundant, λ the minimum-norm one)."""
    rng = np.random.default_rng(4)
    model = mechanism("delta")
    points = []
    for c in model.constraints:
        for dz in (-0.05, 0.05):
            points.append(rbd.Constraint(c.link_a, c.link_b, origin_a=shifted(c.origin_a, dz),
                                         origin_b=shifted(c.origin_b, dz), name=f"{c.name}{dz:+}"))
    tree = model.with_constraints(points)
    for _ in range(3):
        q, v = closed_state(model, rng, "delta")
        assert np.max(np.abs(rbd.constraint_error(tree, q))) < 1e-12       # closed for both
        tau = rng.normal(size=model.nv)
        r5 = rbd.constrained_forward_dynamics(model, q, v, tau, kp=0.0)
        r3 = rbd.constrained_forward_dynamics(tree, q, v, tau)
        assert r3.redundant and r3.rank == 10 and not r5.redundant
        assert rel(r5.qdd, r3.qdd) < TOL
        J5, J3 = rbd.constraint_jacobian(model, q), rbd.constraint_jacobian(tree, q)
        assert rel(J5.T @ r5.lam, J3.T @ r3.lam) < TOL
        # the minimum-norm λ is the SVD one
        assert rel(r3.lam, cref.constrained_forward_dynamics(tree, q, v, tau)[1]) < 1e-8
    # closing from an open state: both reach the same closed configuration
    q0 = np.zeros(model.nq)
    q0[[model.q_index(j) for j in ACTUATED["delta"]]] = [0.2, -0.1, 0.3]
    q5 = rbd.close_loops(model, q0, fixed=ACTUATED["delta"])
    q3 = rbd.close_loops(tree, q0, fixed=ACTUATED["delta"])
    assert np.max(np.abs(q5 - q3)) < 1e-9


def test_redundant_revolute_closure_on_the_planar_fourbar():
    """The four-bar closed by its full 5D revolute closure (5 rows, rank 2 in the plane)
    moves as with its 2-row mask; a weld there makes it rigid."""
    rng = np.random.default_rng(5)
    model = mechanism("fourbar")
    c = model.constraints[0]
    five = model.with_constraints([rbd.Constraint(c.link_a, c.link_b, origin_a=c.origin_a, origin_b=c.origin_b,
                                                  mask=(1, 1, 1, 1, 1, 0), name="revolute")])
    weld = model.with_constraints([rbd.Constraint.weld(c.link_a, c.link_b, origin_a=c.origin_a,
                                                       origin_b=c.origin_b, name="weld")])
    for _ in range(3):
        q, v = closed_state(model, rng, "fourbar")
        tau = rng.normal(size=model.nv)
        r2 = rbd.constrained_forward_dynamics(model, q, v, tau)
        r5 = rbd.constrained_forward_dynamics(five, q, v, tau)
        assert r5.redundant and r5.rank == 2
        assert rel(r2.qdd, r5.qdd) < TOL
        assert rel(r5.lam, cref.constrained_forward_dynamics(five, q, v, tau)[1]) < 1e-8
        rw = rbd.constrained_forward_dynamics(weld, q, np.zeros(3), tau)
        assert rw.redundant and rw.rank == 3 and np.max(np.abs(rw.qdd)) < 1e-9
        # inverse dynamics of the crank-driven motion: λ under-determined (6 rows, 2 passive
        # DOFs), Jᵀλ and the crank torque unique
        tau1 = tau * [1.0, 0.0, 0.0]
        r1 = rbd.constrained_forward_dynamics(model, q, v, tau1)
        res = rbd.constrained_inverse_dynamics(five, q, v, r1.qdd, actuated=["crank"])
        assert rel(res.tau, tau1) < TOL and res.residual < 1e-9 and res.rank == 2
        assert rel(rbd.constraint_jacobian(five, q).T @ res.lam, rbd.constraint_jacobian(model, q).T @ r1.lam) < TOL
        assert rel(res.lam, cref.constrained_inverse_dynamics(five, q, v, r1.qdd, actuated=["crank"])[1]) < TOL


def test_inverse_dynamics_over_and_under_determined():
    rng = np.random.default_rng(6)
    model = mechanism("delta")
    q, v = closed_state(model, rng, "delta")
    a = rbd.constrained_forward_dynamics(model, q, v, np.zeros(model.nv)).qdd
    # under-determined: every joint actuated -> λ = 0 is the least-norm solution
    res = rbd.constrained_inverse_dynamics(model, q, v, a)
    assert np.max(np.abs(res.lam)) == 0.0 and rel(res.tau, rbd.rnea(model, q, v, a)) < TOL
    # weights: the least ‖λ‖_W solution among the exact ones (passive joints = a subset)
    act = ACTUATED["delta"] + ["elbow1_a", "elbow2_a"]
    w = rng.uniform(0.5, 2.0, 10)
    res = rbd.constrained_inverse_dynamics(model, q, v, a, actuated=act, weights=w)
    tau_t, lam_t, _ = cref.constrained_inverse_dynamics(model, q, v, a, actuated=act, weights=w)
    assert res.residual < 1e-9 and rel(res.lam, lam_t) < TOL and rel(res.tau, tau_t) < TOL
    # over-determined: one actuator -> least squares, the residual reported
    res = rbd.constrained_inverse_dynamics(model, q, v, a + 1.0, actuated=["shoulder1"])
    tau_t, lam_t, r_t = cref.constrained_inverse_dynamics(model, q, v, a + 1.0, actuated=["shoulder1"])
    assert res.residual > 1e-3 and abs(res.residual - r_t) < 1e-9 and rel(res.lam, lam_t) < TOL
    assert res.acceleration_residual > 1e-3          # a + 1 is no acceleration of the mechanism


@pytest.mark.parametrize("name", MECHS)
def test_close_loops_and_loop_velocity(name):
    rng = np.random.default_rng(7)
    model = mechanism(name)
    fixed = ACTUATED[name]
    for _ in range(3):
        q0 = rng.uniform(-0.3, 0.3, model.nq)
        q = rbd.close_loops(model, q0, fixed=fixed)
        assert np.linalg.norm(rbd.constraint_error(model, q)) <= 1e-12
        idx = [model.q_index(j) for j in fixed]
        assert np.array_equal(q[idx], q0[idx])              # the fixed joints did not move
        assert rel(q, cref.close_loops(model, q0, fixed=fixed)) < 1e-9
        v0 = rng.normal(size=model.nv)
        v = rbd.loop_velocity(model, q, v0, fixed=fixed)
        assert np.array_equal(v[idx], v0[idx]) and np.max(np.abs(rbd.constraint_jacobian(model, q) @ v)) < 1e-12
        assert rel(v, cref.loop_velocity(model, q, v0, fixed=fixed)) < TOL


def test_close_loops_out_of_reach_names_the_constraint():
    model = mechanism("fourbar")
    q = np.zeros(model.nq)
    # the crank fixed and the coupler/rocker frozen too: nothing can move
    with pytest.raises(ValueError, match="constraint 'coupler_rocker' keeps an error"):
        rbd.close_loops(model, q + [0.0, 0.5, 0.0], fixed=["crank", "coupler", "rocker"])
    # a point the mechanism cannot reach
    far = rbd.Constraint("coupler_link", None, origin_b=np.array([[1, 0, 0, 5.0], [0, 1, 0, 0], [0, 0, 1, 0],
                                                                  [0, 0, 0, 1.0]]), name="far")
    with pytest.raises(ValueError, match="cannot be closed.*'far'"):
        rbd.close_loops(model, q, [far])


def test_into_forms_equal_and_allocate_nothing():
    rng = np.random.default_rng(8)
    model = mechanism("delta")
    q, v = closed_state(model, rng, "delta")
    tau = rng.normal(size=model.nv)
    qdd, lam, t2, l2 = np.empty(model.nv), np.empty(10), np.empty(model.nv), np.empty(10)
    cons = ()
    act = ACTUATED["delta"]
    rbd.constrained_forward_dynamics_into(model, q, v, tau, cons, qdd, lam, kp=100.0, kd=20.0)
    rbd.constrained_inverse_dynamics_into(model, q, v, qdd, cons, t2, l2, actuated=act)
    r = rbd.constrained_forward_dynamics(model, q, v, tau, kp=100.0, kd=20.0)
    assert np.array_equal(qdd, r.qdd) and np.array_equal(lam, r.lam)
    ri = rbd.constrained_inverse_dynamics(model, q, v, qdd, actuated=act)
    assert np.array_equal(t2, ri.tau) and np.array_equal(l2, ri.lam)
    # numba's allocation counter (private API, test-only: NRT stats are off unless enabled).
    # numba's dispatcher wraps each array argument in a meminfo of its own (one count per
    # argument and call, no data): the FD kernel takes 11 arrays, the ID kernel 14; any
    # array the kernels or the Python layer allocated would add to that.
    nrt.memsys_enable_stats()
    try:
        before = nrt.memsys_get_stats_alloc()
        for _ in range(50):
            rbd.constrained_forward_dynamics_into(model, q, v, tau, cons, qdd, lam, kp=100.0, kd=20.0)
            rbd.constrained_inverse_dynamics_into(model, q, v, qdd, cons, t2, l2, actuated=act)
        assert nrt.memsys_get_stats_alloc() - before == 50 * (11 + 14)
    finally:
        nrt.memsys_disable_stats()


def test_forward_dynamics_into_fast_path_refuses_like_the_checked_path():
    """After a first call (the fast path's memo set), odd arguments -- other dtypes, lists,
    read-only or strided arrays, wrong lengths, bad gains -- give the checked path's
    results and errors, and the kernel stays compiled for its plain types only."""
    model = mechanism("fourbar")
    rng = np.random.default_rng(11)
    q, v = closed_state(model, rng, "fourbar")
    tau = rng.normal(size=model.nv)
    qdd, lam = np.empty(model.nv), np.empty(2)
    ref = rbd.constrained_forward_dynamics(model, q, v, tau, kp=4.0)
    cons = ()
    rbd.constrained_forward_dynamics_into(model, q, v, tau, cons, qdd, lam, kp=4.0)
    assert np.array_equal(qdd, ref.qdd) and np.array_equal(lam, ref.lam)
    ro = v.copy()
    ro.setflags(write=False)
    for args, kw in (((q, v.astype(np.float32), tau), {"kp": 4.0}), ((q, v, list(tau)), {"kp": 4}),
                     ((q, ro, np.repeat(tau, 2)[::2]), {"kp": np.float64(4.0)})):
        qdd[:] = np.nan
        rbd.constrained_forward_dynamics_into(model, *args, cons, qdd, lam, **kw)
        assert np.max(np.abs(qdd - ref.qdd)) <= 1e-6 * np.max(np.abs(ref.qdd))    # (float32 v)
    for args, kw, msg in (((q[:2], v, tau), {}, "q: expected shape"),
                          ((q, v, np.array([0.0, np.nan, 1.0])), {}, "tau: expected finite"),
                          ((q, v, tau), {"kp": -1.0}, r"kp: expected a finite number in \[0, 1e12\]"),
                          ((q, v, tau), {"kd": np.nan}, "kd: expected a finite"),
                          ((q, v, tau), {"regularization": 2e12}, "regularization: expected a finite")):
        with pytest.raises(ValueError, match=msg):
            rbd.constrained_forward_dynamics_into(model, *args, cons, qdd, lam, **kw)
    for out, msg in (((np.empty(2), lam), "qdd: expected a writable"), ((qdd, np.empty(3)), "lam: expected"),
                     ((qdd, np.empty(4)[::2]), "lam: expected")):
        with pytest.raises(ValueError, match=msg):
            rbd.constrained_forward_dynamics_into(model, q, v, tau, cons, *out)
    assert len(cfd_into.signatures) == 1


def test_inverse_dynamics_into_fast_path_refuses_like_the_checked_path():
    """The same for constrained_inverse_dynamics_into (no friction): after a first call,
    odd arguments give the checked path's results and errors."""
    model = mechanism("delta")
    rng = np.random.default_rng(13)
    q, v = closed_state(model, rng, "delta")
    act = tuple(ACTUATED["delta"])
    a = rbd.constrained_forward_dynamics(model, q, v, np.zeros(model.nv)).qdd
    ref = rbd.constrained_inverse_dynamics(model, q, v, a, actuated=act)
    tau, lam, info = np.empty(model.nv), np.empty(10), np.empty(7)
    cons = ()
    for _ in range(2):
        assert rbd.constrained_inverse_dynamics_into(model, q, v, a, cons, tau, lam, actuated=act, info=info) == \
            ref.residual
        assert np.array_equal(tau, ref.tau) and np.array_equal(lam, ref.lam)
        assert info[3] == ref.cond and info[5] == 1.0
    rbd.constrained_inverse_dynamics_into(model, q, v, list(a), cons, tau, lam, actuated=act)
    assert np.array_equal(tau, ref.tau)
    for args, msg in (((q, v, a[:5]), "a: expected shape"), ((q, v, np.full(model.nv, np.nan)), "a: expected finite")):
        with pytest.raises(ValueError, match=msg):
            rbd.constrained_inverse_dynamics_into(model, *args, cons, tau, lam, actuated=act)
    for out, kw, msg in (((tau, np.empty(9)), {}, "lam: expected"), ((tau[:5], lam), {}, "tau: expected"),
                         ((tau, lam), {"info": np.empty(5)}, "info \\(4 or 7 entries\\)")):
        with pytest.raises(ValueError, match=msg):
            rbd.constrained_inverse_dynamics_into(model, q, v, a, cons, *out, actuated=act, **kw)
    assert len(cid_into.signatures) == 1


def test_bad_arguments_are_named():
    model = mechanism("fourbar")
    q, v = np.zeros(3), np.zeros(3)
    with pytest.raises(ValueError, match="constraint 'x': link_b 'nope' is not a link"):
        rbd.constraint_error(model, q, [rbd.Constraint("crank_link", "nope", name="x")])
    with pytest.raises(ValueError, match="mask: every direction is 0"):
        rbd.Constraint("crank_link", mask=(0, 0, 0, 0, 0, 0))
    with pytest.raises(ValueError, match="q: expected shape"):
        rbd.constraint_jacobian(model, np.zeros(4))
    with pytest.raises(ValueError, match="tau: expected finite"):
        rbd.constrained_forward_dynamics(model, q, v, [np.nan, 0, 0])
    with pytest.raises(ValueError, match="kp: expected a finite number"):
        rbd.constrained_forward_dynamics(model, q, v, v, kp=-1.0)
    with pytest.raises(ValueError, match="actuated: 'elbow' is not a DOF joint"):
        rbd.constrained_inverse_dynamics(model, q, v, v, actuated=["elbow"])
    with pytest.raises(ValueError, match="weights: expected 2 positive numbers"):
        rbd.constrained_inverse_dynamics(model, q, v, v, weights=[1.0])
    with pytest.raises(ValueError, match="fixed: \\['x'\\] are not DOF joints"):
        rbd.close_loops(model, q, fixed=["x"])
    with pytest.raises(ValueError, match="both frames are fixed to the world"):
        rbd.constraint_error(model, q, [rbd.Constraint("ground", None)])
