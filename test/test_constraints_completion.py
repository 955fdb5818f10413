"""rbd.LoopCompletion: the passive DOFs of the bundled mechanisms completed in place,
per sample -- equal to close_loops / loop_velocity from the same start (also ``state``,
the quasi-Newton per-sample form, along a motion, with or without the condition
estimate), accelerations with J q̈ + γ = 0 (against J and γ of the public functions and
a numpy least-squares solve), the assembly branch kept from the start q, a clear error
naming the constraint, and no allocation; the LU of a square block.
rbd.LoopCompensation: g, b and λ equal constrained_inverse_dynamics at those states."""
import numpy as np
import pytest
from constraint_util import ACTUATED, closed_state, mechanism
from numba.core.runtime import _nrt_python as nrt

import rbd_ros.core as rbd
from rbd_ros.core.constraints.completion import state_k
from rbd_ros.core.constraints.solve import LU_TOL, lu_factor, lu_solve


@pytest.mark.parametrize("name", ["fourbar", "delta"])
def test_completion_equals_close_loops_and_loop_velocity(name):
    model = mechanism(name)
    act = ACTUATED[name]
    lc = rbd.LoopCompletion(model, act)
    rng = np.random.default_rng(4)
    for _ in range(5):
        q, v = closed_state(model, rng, name)
        seed = q + 0.02 * rng.normal(size=model.nq)            # the passive joints a little off
        seed[[model.q_index(j) for j in act]] = q[[model.q_index(j) for j in act]]
        ref = rbd.close_loops(model, seed, fixed=act)
        got = seed.copy()
        err = lc.positions(got)
        assert err <= 1e-10 and np.max(np.abs(got - ref)) <= 1e-9
        assert np.max(np.abs(rbd.constraint_error(model, got))) <= 1e-10
        v0 = v.copy()
        v0[lc.free] = 0.3                                     # the passive velocities are overwritten
        lc.velocities(got, v0)
        assert np.max(np.abs(v0 - rbd.loop_velocity(model, got, v, fixed=act))) <= 1e-9
        assert np.max(np.abs(rbd.constraint_velocity(model, got, v0))) <= 1e-9
        a = rng.normal(size=model.nv)
        cond = lc.accelerations(got, v0, a)
        J, g = rbd.constraint_jacobian(model, got), rbd.constraint_drift(model, got, v0)
        assert np.max(np.abs(J @ a + g)) <= 1e-8 * max(1.0, np.max(np.abs(g)))
        act_v = [model.v_index(j) for j in act]
        free = lc.free
        rhs = -g - J[:, act_v] @ a[act_v]
        assert np.max(np.abs(a[free] - np.linalg.lstsq(J[:, free], rhs, rcond=None)[0])) <= 1e-8
        assert 1.0 <= cond < 100.0 and cond == lc.cond


@pytest.mark.parametrize("name", ["fourbar", "delta"])
def test_state_without_cond_equals_state_with_it(name):
    """state(q, v, cond=False) (LU on the square passive block) closes the loops and
    completes the velocities as state() (pivoted QR) does, to rounding; no estimate then."""
    model = mechanism(name)
    act = ACTUATED[name]
    ia = [model.v_index(j) for j in act]
    a_lc, b_lc = rbd.LoopCompletion(model, act), rbd.LoopCompletion(model, act)
    q, v = closed_state(model, np.random.default_rng(2), name, spread=0.1)
    qa, va, qb, vb = q.copy(), v.copy(), q.copy(), v.copy()
    for k in range(50):
        t = 1e-3 * k
        for x, y in ((qa, va), (qb, vb)):
            x[ia] = 0.2 * np.sin(2.0 * t + np.arange(len(act)))
            y[ia] = 0.4 * np.cos(2.0 * t + np.arange(len(act)))
        cond = a_lc.state(qa, va)
        assert np.isnan(b_lc.state(qb, vb, cond=False)) and 1.0 <= cond < 100.0
        assert np.max(np.abs(qa - qb)) <= 1e-10 and np.max(np.abs(va - vb)) <= 1e-9
        assert np.max(np.abs(rbd.constraint_velocity(model, qb, vb))) <= 1e-9


def test_lu_solves_and_refuses_a_singular_matrix():
    rng = np.random.default_rng(5)
    for n in (1, 3, 10):
        A, b = rng.normal(size=(n, n)), rng.normal(size=n)
        for transpose in (False, True):
            LU, piv, x = A.copy(), np.zeros(n), b.copy()
            assert lu_factor(LU, n, piv, LU_TOL)
            lu_solve(LU, n, piv, x, transpose)
            assert np.max(np.abs(x - np.linalg.solve(A.T if transpose else A, b))) <= 1e-10
    S = rng.normal(size=(4, 4))
    S[3] = S[0] + 2.0 * S[1]                      # rank 3
    assert not lu_factor(S, 4, np.zeros(4), LU_TOL)
    assert not lu_factor(np.zeros((2, 2)), 2, np.zeros(2), LU_TOL)


def test_positions_follow_the_branch_of_the_start():
    """The delta has several assemblies for the same shoulder angles; closing from the
    previous solution after a small motion of the shoulders stays on its branch, while
    the same shoulder angles closed from q = 0 give the usual one."""
    model = mechanism("delta")
    act = ACTUATED["delta"]
    ia = [model.q_index(j) for j in act]
    lc = rbd.LoopCompletion(model, act)
    usual = np.zeros(model.nq)
    rng = np.random.default_rng(0)
    for _ in range(100):                    # another assembly at the same (zero) shoulder angles
        start = rng.uniform(-1.5, 1.5, model.nq)
        start[ia] = 0.0
        try:
            other = rbd.close_loops(model, start, fixed=act)
        except ValueError:
            continue
        if np.max(np.abs(np.angle(np.exp(1j * (other - usual))))) > 1.0:
            break
    else:
        pytest.fail("no second assembly found")
    q = other.copy()
    for k in range(20):                     # the shoulders move 0.2 rad in 20 samples
        q[ia] += 0.01
        lc.positions(q)
        assert np.max(np.abs(np.angle(np.exp(1j * (q - other))))) < 0.5, k
    fresh = np.zeros(model.nq)
    fresh[ia] = q[ia]
    lc.positions(fresh)                     # from q = 0: the usual assembly
    assert np.max(np.abs(fresh)) < 0.5 and np.max(np.abs(np.angle(np.exp(1j * (q - fresh))))) > 1.0


def test_out_of_reach_names_the_constraint_and_bad_arrays_are_named():
    model = mechanism("fourbar")
    lc = rbd.LoopCompletion(model, ["crank", "coupler", "rocker"][:1])
    far = rbd.LoopCompletion(model, [j for j in model.joint_names])     # nothing free: cannot close
    q = np.array([0.5, 0.0, 0.0])[:model.nq]
    with pytest.raises(rbd.LoopsNotClosed) as e:
        far.positions(q)
    assert e.value.constraint == model.constraints[0].name and repr(model.constraints[0].name) in str(e.value)
    with pytest.raises(ValueError, match="q: expected a writable float64 numpy array of shape"):
        lc.positions([0.0] * model.nq)
    with pytest.raises(ValueError, match="a: expected"):
        lc.accelerations(np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv + 1))
    with pytest.raises(ValueError, match="v: expected finite"):
        lc.velocities(np.zeros(model.nq), np.full(model.nv, np.nan))
    with pytest.raises(ValueError, match="fixed: \\['x'\\] are not DOF joints"):
        rbd.LoopCompletion(model, ["x"])


def test_state_refuses_odd_arrays_after_its_fast_calls():
    """state() hands plain arrays straight to its kernel; after such calls a read-only,
    short, float32 or list argument still gets the checked path's error naming it, and
    the kernel stays compiled for the plain types only."""
    model = mechanism("delta")
    lc = rbd.LoopCompletion(model, ACTUATED["delta"])
    q, v = closed_state(model, np.random.default_rng(3), "delta")
    lc.state(q, v, False)
    lc.state(q, v)
    ro = q.copy()
    ro.setflags(write=False)
    for args, msg in (((ro, v), "q: expected a writable float64"), ((q[:5].copy(), v), "q: expected a writable"),
                      ((q, list(v)), "v: expected a writable"), ((q.astype(np.float32), v), "q: expected"),
                      ((q, np.full(model.nv, np.nan)), "v: expected finite")):
        with pytest.raises(ValueError, match=msg):
            lc.state(*args, cond=False)
    assert len(state_k.signatures) == 1


@pytest.mark.parametrize("name", ["fourbar", "delta"])
def test_state_follows_a_motion_and_compensation_equals_the_inverse_dynamics(name):
    """state() along a smooth motion of the actuated joints (1 ms samples) equals
    close_loops and loop_velocity from the previous solution; LoopCompensation's g, b, λ
    equal constrained_inverse_dynamics at (q, 0, 0) and at (q, q̇, q̈) with zero actuated
    and completed passive accelerations."""
    model = mechanism(name)
    act = ACTUATED[name]
    ia = [model.v_index(j) for j in act]
    lc = rbd.LoopCompletion(model, act)
    comp = rbd.LoopCompensation(model, act)
    q, v = closed_state(model, np.random.default_rng(1), name, spread=0.1)
    out_v = np.array(ia, dtype=np.int64)
    g, b, lam = np.zeros(len(act)), np.zeros(len(act)), np.zeros(comp.m)
    zero = np.zeros(model.nv)
    steps = []
    for k in range(200):
        t = 1e-3 * k
        q[ia] = 0.2 * np.sin(2.0 * t + np.arange(len(act)))
        v[ia] = 0.4 * np.cos(2.0 * t + np.arange(len(act)))
        prev = q.copy()
        lc.state(q, v)
        steps.append(lc.iterations)
        if k % 40 == 0:
            assert np.max(np.abs(q - rbd.close_loops(model, prev, fixed=act))) <= 1e-9
            vv = np.zeros(model.nv)
            vv[ia] = v[ia]
            assert np.max(np.abs(v - rbd.loop_velocity(model, q, vv, fixed=act))) <= 1e-8
            cond = comp.compute(q, v, out_v, g, b, lam)
            ref_g = rbd.constrained_inverse_dynamics(model, q, zero, zero, actuated=act)
            a = np.zeros(model.nv)
            lc.accelerations(q, v, a)
            ref_b = rbd.constrained_inverse_dynamics(model, q, v, a, actuated=act)
            scale = max(1.0, np.max(np.abs(ref_b.tau)))
            assert np.max(np.abs(g - ref_g.tau[ia])) <= 1e-9 * scale
            assert np.max(np.abs(b - ref_b.tau[ia])) <= 1e-9 * scale
            assert np.max(np.abs(lam - ref_b.lam)) <= 1e-9 * max(1.0, np.max(np.abs(ref_b.lam)))
            assert cond == pytest.approx(ref_b.cond) and comp.compute(q, v, out_v, g) == cond
    print(f"\n{name}: state() steps per 1 ms sample: mean {np.mean(steps):.2f}, max {max(steps)}")
    assert np.mean(steps[10:]) <= 4          # the secant estimate carried from sample to sample


def test_completion_allocates_nothing():
    model = mechanism("delta")
    act = ACTUATED["delta"]
    lc = rbd.LoopCompletion(model, act)
    q, v = closed_state(model, np.random.default_rng(2), "delta")
    a = np.zeros(model.nv)
    comp = rbd.LoopCompensation(model, act)
    out_v = np.array([model.v_index(j) for j in act], dtype=np.int64)
    g, b, lam = np.zeros(3), np.zeros(3), np.zeros(comp.m)

    def once():
        lc.positions(q)
        lc.velocities(q, v)
        lc.accelerations(q, v, a)
        lc.state(q, v)
        comp.compute(q, v, out_v, g, b, lam)
    once()
    # numba's allocation counter (private API, test-only): the dispatcher wraps each array
    # argument in a meminfo of its own (close_k takes 13 arrays, complete_k 9, state_k 14,
    # compensation_k 19); anything else allocated by the kernels or the Python layer would
    # add to that
    nrt.memsys_enable_stats()
    try:
        before = nrt.memsys_get_stats_alloc()
        for _ in range(20):
            once()
        assert nrt.memsys_get_stats_alloc() - before == 20 * (13 + 9 + 9 + 14 + 19)
    finally:
        nrt.memsys_disable_stats()
