"""The public constraint functions (``rbd.constraint_error`` ... ``rbd.constrained_inverse_dynamics``).

Every function takes the model's own constraints (``model.constraints``, the URDF's
loop closures) followed by the ``constraints`` passed in (default none); rows of e, J,
γ and λ follow that order, each constraint's rows in mask order.  Single states
only (q, v, ... 1-D).  Bad arguments raise ValueError naming them; a non-finite
result from finite arguments raises too (never returned).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import types as nbt

from ..algorithms.common import BAD_RESULT
from ..calls._numba_compat import plain_arguments_only
from ..model.checks import real_number
from . import contacts
from .args import check, describe, not_model, out_array, vec
from .cones import actuator_torques, cone_rows, passive_system
from .dynamics import MAX_GAIN, cfd_into, cid_into, kinematics_k
from .packing import constraint_set

_F8 = np.dtype(np.float64)
_ND = np.ndarray
_A8, _I8 = nbt.Array(nbt.float64, 1, "C"), nbt.Array(nbt.int64, 1, "C")
# the fast path's kernel compiles only for its plain types: anything else raises NotPlain
# (a TypeError) instead of compiling a second version, and takes the checked path
plain_arguments_only(cfd_into, (_A8, _A8, _I8, _A8, _A8, _A8, _A8, _A8) + (nbt.float64,) * 3 + (_A8,) * 3)
plain_arguments_only(cid_into, (_A8, _A8, _I8, _A8, _A8, _A8, _A8, _A8, _I8, _I8) + (_A8,) * 4)


@dataclass(frozen=True)
class ConstrainedForwardDynamics:
    """Result of :func:`constrained_forward_dynamics`; unpacks as ``qdd, lam = ...``.

    ``qdd`` (nv) the accelerations; ``lam`` (m) the constraint forces (frame a's axes,
    Pinocchio's LOCAL convention; M q̈ + b = τ + Jᵀλ); ``redundant``: True when
    J M⁻¹ Jᵀ was rank-deficient and ``lam`` is the minimum-norm solution (``rank``
    its rank, m otherwise)."""
    qdd: np.ndarray
    lam: np.ndarray
    redundant: bool
    rank: int

    def __iter__(self):
        return iter((self.qdd, self.lam))


@dataclass(frozen=True)
class ConstrainedInverseDynamics:
    """Result of :func:`constrained_inverse_dynamics`.

    ``tau`` (nv): actuator torques, 0 on the unactuated DOFs; ``lam`` (m): constraint
    forces (frame a's axes); ``residual``: ‖Sᵀτ + Jᵀλ − (M a + b)‖ (0 up to rounding
    unless no admissible λ realises ``a``); ``acceleration_residual``: ‖J a + γ‖, how far
    ``a`` is from an acceleration the constraints allow (τ and λ realise ``a`` in the
    tree's equations whatever it is); ``rank``: the rank of the passive DOFs' constraint
    block J_Pᵀ (W-scaled); ``cond``: an estimate of its condition number (the ratio of
    the pivoted QR's extreme diagonal entries; inf when no row is passive or J_P is 0).
    Actuator torques grow like ``cond`` near a singular configuration.

    ``feasible``: some λ (inside the friction cones, with friction) satisfies the
    unactuated DOFs' equations J_Pᵀ λ = (M a + b)_P, to 1e-9 relative; ``violation``: 0
    then, else the least residual ‖J_Pᵀ λ − (M a + b)_P‖ over the admissible λ, which
    ``lam`` attains (N, N m); ``status``: "no cone active" (the friction-free least-norm
    solution, exact), "cone active" (the friction QP's solution) or "infeasible";
    ``solver_status``: the QP solver's exit ("not run" when it was not needed)."""
    tau: np.ndarray
    lam: np.ndarray
    residual: float
    acceleration_residual: float
    rank: int
    cond: float
    feasible: bool = True
    violation: float = 0.0
    status: str = "no cone active"
    solver_status: str = "not run"


def _q(model, q):
    q = vec(q, model.nq, "q")
    if q.ndim != 1:
        raise ValueError(f"q: single states only, expected shape ({model.nq},), got {describe(q)}")
    return q


def _v(model, x, name):
    x = vec(x, model.nv, name)
    if x.ndim != 1:
        raise ValueError(f"{name}: single states only, expected shape ({model.nv},), got {describe(x)}")
    return x


def _set(model, constraints):
    not_model(model)
    return constraint_set(model, constraints)


def _kin(model, q, v, constraints, want_j):
    cs = _set(model, constraints)
    q = _q(model, q)
    use_v = v is not None
    v = _v(model, v, "v") if use_v else q
    m = cs.m
    e = np.empty(m)
    J = np.empty((m, model.nv)) if want_j else e
    g = np.empty(m) if use_v else e
    jv = np.empty(m) if use_v else e
    st = kinematics_k(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, v, use_v, want_j,
                      e, J, g, jv)
    check(st, "v", args=(("q", q), ("v", v)))
    return e, J, g, jv


def constraint_error(model, q, constraints=None):
    """e (m,): zero where every constraint is satisfied.  A point constraint: the
    position difference R_aᵀ (p_a − p_b) (Pinocchio: −ᵃMᵦ.translation); every other
    mask: the masked rows of −log6(ᵃMᵦ) ([v; ω], frame a's axes)."""
    return _kin(model, q, None, constraints, False)[0]


def constraint_jacobian(model, q, constraints=None):
    """J (m, nv): J q̇ is the constrained part of frame b's motion relative to frame a
    (frame a's axes at its origin; Pinocchio's ``getConstraintJacobian`` for LOCAL point
    and weld constraints).  Where e = 0, ė = J q̇."""
    return _kin(model, q, None, constraints, True)[1]


def constraint_drift(model, q, v, constraints=None):
    """γ = J̇ q̇ (m,), the exact time derivative of J(q) q̇ at q̈ = 0.  Where J q̇ = 0 it
    equals Pinocchio's drift; elsewhere Pinocchio's point-constraint drift adds
    ω_a × (J q̇) (doc/constraints.md)."""
    return _kin(model, q, v, constraints, False)[2]


def constraint_velocity(model, q, v, constraints=None):
    """J q̇ (m,), without forming J."""
    return _kin(model, q, v, constraints, False)[3]


def _gains(kp, kd, regularization):
    kp = real_number(kp, "kp", "a number >= 0 (1/s^2)")
    kd = real_number(kd, "kd", "a number >= 0 (1/s)")
    eps = real_number(regularization, "regularization", "a number >= 0")
    for name, x in (("kp", kp), ("kd", kd), ("regularization", eps)):
        if not (np.isfinite(x) and 0.0 <= x <= MAX_GAIN):
            raise ValueError(f"{name}: expected a finite number in [0, 1e12], got {x}")
    return kp, kd, eps


def _fd_check(st, model, q, v, tau):
    check(st, "tau", args=(("q", q), ("v", v), ("tau", tau)))


def constrained_forward_dynamics(model, q, v, tau, constraints=None, *, kp=0.0, kd=0.0, regularization=0.0):
    """(q̈, λ) with M q̈ + b = τ + Jᵀλ and J q̈ + γ = −kp e − kd J q̇ (Baumgarte; every
    DOF driven by τ).  ``regularization`` ε >= 0 solves (J M⁻¹ Jᵀ + ε I) λ = … instead (a
    compliant constraint: J q̈ + γ + kp e + kd J q̇ = −ε λ).  Redundant constraints (J
    rank-deficient, ε = 0): λ is the minimum-norm solution, q̈ the same as for any
    solution; ``.redundant`` says so.  Returns :class:`ConstrainedForwardDynamics`
    (unpacks as ``qdd, lam``)."""
    cs = _set(model, constraints)
    kp, kd, eps = _gains(kp, kd, regularization)
    q = _q(model, q)
    v = _v(model, v, "v")
    tau = _v(model, tau, "tau")
    qdd, lam, info = np.empty(model.nv), np.empty(cs.m), np.empty(3)
    st = cfd_into(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, v, tau, kp, kd, eps,
                  qdd, lam, info)
    _fd_check(st, model, q, v, tau)
    return ConstrainedForwardDynamics(qdd, lam, bool(info[0]), int(info[1]))


def _plain(x, n):
    return x.__class__ is _ND and x.dtype is _F8 and x.shape == (n,) and x.flags.carray


def _memo(model, constraints, cs):
    """Remember ``cs`` as this thread's constraint set of ``constraints`` on ``model`` for the
    fast paths: (constraints, ci, cf, workspace, info buffer) in ``model._tls.cfd``.  Only
    None and tuples are remembered (immutable: the same object is the same constraints;
    the memo keeps it alive, so its identity is not reused)."""
    if constraints is None or constraints.__class__ is tuple:
        model._tls.cfd = (constraints, cs.ci_k, cs.cf_k, cs.workspace(), cs.info_buffer())


def constrained_forward_dynamics_into(model, q, v, tau, constraints, qdd, lam, *, kp=0.0, kd=0.0,
                                      regularization=0.0, info=None):
    """:func:`constrained_forward_dynamics` into preallocated float64 arrays ``qdd`` (nv)
    and ``lam`` (m); ``info`` (3, optional): [1 if redundant, rank, -].  Allocates
    nothing when q, v, tau are float64 arrays of the right length and the constraint set
    was seen before (it is packed once and cached; pass a tuple to skip even the
    tuple()).

    A fast path serves repeated calls (what a control loop makes): when ``constraints``
    is the very object (None or a tuple) of this thread's previous call on ``model``,
    ``info`` is None, and q, v, tau, qdd, lam are plain float64 arrays and the gains
    floats, they go straight to the compiled kernel, which checks lengths, gains and
    values; anything it refuses takes the checked path, which names the argument."""
    try:
        memo = model._tls.cfd
        if memo[0] is constraints and info is None:
            if not cfd_into(model.md_k, model._tls.ws, memo[1], memo[2], memo[3], q, v, tau, kp, kd,
                            regularization, qdd, lam, memo[4]):
                return
    except (AttributeError, TypeError):     # first call on this thread, not a Model, or not plain
        pass
    cs = _set(model, constraints)
    kp, kd, regularization = _gains(kp, kd, regularization)
    nv = model.nv
    q = q if _plain(q, model.nq) else _q(model, q)
    v = v if _plain(v, nv) else _v(model, v, "v")
    tau = tau if _plain(tau, nv) else _v(model, tau, "tau")
    qdd = out_array(qdd, nv, "qdd")
    lam = out_array(lam, cs.m, "lam")
    if info is None:
        info = cs.info_buffer()
    else:
        info = out_array(info, 3, "info")
    st = cfd_into(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, v, tau, kp, kd,
                  regularization, qdd, lam, info)
    if st:
        _fd_check(st, model, q, v, tau)
    _memo(model, constraints, cs)


def _cid(model, cs, q, v, a, passive, active, scale, tau, lam, info, spec, solver):
    """Constrained ID into tau, lam, info (7: residual, acceleration residual, rank, cond,
    max |f_P|, feasible, violation); returns (status, solver_status)."""
    cws = cs.workspace()
    st = cid_into(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cws, q, v, a, passive, active, scale, tau,
                  lam, info)
    if st:
        check(st, "a", args=(("q", q), ("v", v), ("a", a)))
    tol = contacts.FEAS_TOL * max(1.0, info[4])
    status, solver_status = "no cone active", "not run"
    if spec is not None and spec.any:
        npas = passive.shape[0]
        A, bu, bl, sense, work = spec.qp_buffers(npas)
        if cone_rows(cs.ci_k, cws, spec.fi, spec.ff, A[npas:], lam, work) > 0.0:
            passive_system(cs.ci_k, cws, passive, A[:npas], bu[:npas])
            bl[:npas] = bu[:npas]
            H, f0 = spec.hessian(scale)
            sol, feasible, violation, status, solver_status = contacts.solve(A, bu, bl, sense, npas, H, f0,
                                                                             int(info[2]))
            lam[:] = sol
            actuator_torques(cs.ci_k, cws, active, lam, tau)
            r = A[:npas] @ lam - bu[:npas]
            info[0] = np.sqrt(r @ r)
            info[5], info[6] = float(feasible), violation
            if not (np.all(np.isfinite(tau)) and np.all(np.isfinite(lam))):
                check(BAD_RESULT, "a", args=(("q", q), ("v", v), ("a", a)))
            return status, solver_status
    feasible = info[0] <= tol
    info[5], info[6] = float(feasible), 0.0 if feasible else info[0]
    return ("no cone active" if feasible else "infeasible"), solver_status


def _friction(model, cs, friction, solver):
    """The packed cones of ``friction`` (None without), the solver checked."""
    if friction is None:
        if solver is not None:
            contacts.check_solver(solver)
        return None
    spec = contacts.friction_spec(cs, friction, len(cs.constraints) - len(model.constraints))
    if spec.any or solver is not None:
        contacts.check_solver(solver)
    return spec


def constrained_inverse_dynamics(model, q, v, a, constraints=None, *, actuated=None, weights=None, friction=None,
                                 solver=None):
    """Actuator torques τ and constraint forces λ with M a + b = Sᵀτ + Jᵀλ.

    ``actuated``: the joint names with actuators (default every joint; a floating base
    never); the other DOFs are passive (τ = 0 there).  ``weights``: one > 0 per
    constraint row (default 1).  λ minimises ‖Sᵀτ + Jᵀλ − (M a + b)‖ and, among the
    minimisers, ‖λ‖²_W = Σ wᵢ λᵢ²; τ follows.  Exactly determined (passive DOFs =
    constraint rows, J_P invertible): the unique solution; over-determined: least
    squares, ``.residual`` > 0; under-determined (redundant actuation or constraints):
    the least-‖λ‖_W solution.  ``a`` should satisfy J a + γ = 0 (``.acceleration_residual``
    says by how much it does not; τ and λ realise ``a`` in the tree's equations
    whatever it is).

    ``friction`` (contacts, doc/contacts.md): None (every constraint bilateral), one
    friction coefficient μ >= 0 or :class:`FrictionCone` for every constraint passed,
    or a sequence with one entry per constraint passed (a μ, a FrictionCone, or None:
    bilateral); the model's own loop closures stay bilateral.  A constraint with
    friction is a unilateral contact: point (mask 1 1 1 0 0 0) or flat (all six, with
    ``FrictionCone(mu, sole_size=(length, width))``); its force stays inside the friction
    pyramid (normal: frame b's z), a flat one's wrench inside its sole's contact wrench
    cone.  The same objective then holds over the λ inside the cones: when the
    friction-free solution is inside them it is the answer, exactly; otherwise the QP
    solver ``solver`` (None: "daqp", the only one) finds it.  When no λ inside the
    cones realises the motion, ``.feasible`` is False and λ is the admissible one of
    least residual (``.violation``).  Returns :class:`ConstrainedInverseDynamics`."""
    cs = _set(model, constraints)
    spec = _friction(model, cs, friction, solver)
    passive, active, scale = cs.actuation(model, actuated, weights)
    q = _q(model, q)
    v = _v(model, v, "v")
    a = _v(model, a, "a")
    tau, lam, info = np.empty(model.nv), np.empty(cs.m), np.zeros(7)
    status, solver_status = _cid(model, cs, q, v, a, passive, active, scale, tau, lam, info, spec, solver)
    return ConstrainedInverseDynamics(tau, lam, float(info[0]), float(info[1]), int(info[2]), float(info[3]),
                                      bool(info[5]), float(info[6]), status, solver_status)


def constrained_inverse_dynamics_into(model, q, v, a, constraints, tau, lam, *, actuated=None, weights=None,
                                      info=None, friction=None, solver=None):
    """:func:`constrained_inverse_dynamics` into preallocated float64 arrays ``tau`` (nv)
    and ``lam`` (m); ``info`` (optional, 4 or 7 entries): [residual, acceleration_residual,
    rank, cond] and with 7: [..., max |(M a + b)_P|, 1.0 if feasible else 0.0, violation].
    Returns the residual.  Allocates nothing for plain float64 q, v, a once the
    constraint set, the ``actuated``/``weights`` pair and ``friction`` were seen (all
    cached; pass tuples) -- with friction, as long as no cone is active (the QP
    allocates).  A fast path serves repeated calls without friction whose constraints,
    ``actuated`` and ``weights`` are the very objects (None or tuples) of this thread's
    previous call on ``model`` (as :func:`constrained_forward_dynamics_into`'s)."""
    try:    # the fast path (as constrained_forward_dynamics_into's; without friction)
        memo = model._tls.cid
        if (memo[0] is constraints and memo[1] is actuated and memo[2] is weights and friction is None
                and solver is None):
            buf = memo[9]
            if not cid_into(model.md_k, model._tls.ws, memo[3], memo[4], memo[5], q, v, a, memo[6], memo[7],
                            memo[8], tau, lam, buf):
                if info is not None:
                    info = out_array(info, 7 if getattr(info, "size", 0) == 7 else 4, "info (4 or 7 entries)")
                feasible = buf[0] <= contacts.FEAS_TOL * max(1.0, buf[4])
                buf[5], buf[6] = (1.0, 0.0) if feasible else (0.0, buf[0])
                if info is not None:
                    info[:info.size] = buf[:info.size]
                return buf[0]
    except (AttributeError, TypeError):     # first call on this thread, not a Model, or not plain
        pass
    cs = _set(model, constraints)
    spec = _friction(model, cs, friction, solver) if friction is not None or solver is not None else None
    passive, active, scale = cs.actuation(model, actuated, weights)
    nv = model.nv
    q = q if _plain(q, model.nq) else _q(model, q)
    v = v if _plain(v, nv) else _v(model, v, "v")
    a = a if _plain(a, nv) else _v(model, a, "a")
    tau = out_array(tau, nv, "tau")
    lam = out_array(lam, cs.m, "lam")
    buf = cs.info_buffer()
    if info is not None:
        info = out_array(info, 7 if getattr(info, "size", 0) == 7 else 4, "info (4 or 7 entries)")
    _cid(model, cs, q, v, a, passive, active, scale, tau, lam, buf, spec, solver)
    if info is not None:
        info[:info.size] = buf[:info.size]
    if spec is None and all(x is None or x.__class__ is tuple for x in (constraints, actuated, weights)):
        model._tls.cid = (constraints, actuated, weights, cs.ci_k, cs.cf_k, cs.workspace(), passive, active, scale,
                          buf)
    return buf[0]
