"""Contacts with friction for the constrained inverse dynamics (doc/contacts.md).

``FrictionCone(mu, sole_size=None)`` states one contact's friction; the ``friction``
argument of ``constrained_inverse_dynamics`` gives one per constraint passed (or one
number for all).  ``friction_spec`` checks and packs it for the compiled cone rows
(cones.py) and caches the packing on the constraint set; ``solve`` runs the QP when
the friction-free optimum leaves a cone:

    min ½ λᵀ W λ   s.t.   J_Pᵀ λ = f_P (the unactuated DOFs' equations),   C λ <= 0 (cones)

with DAQP (a dual active-set QP solver, ``pip install daqp``; bench/RESULTS.md has the
measurements behind the pick).  When no λ inside the cones satisfies the equations:
first the least residual inside the cones, min ½ ‖J_Pᵀ λ − f_P‖² s.t. C λ <= 0 (DAQP's
proximal mode for its semi-definite Hessian), then the least ‖λ‖_W among the λ that
reach it (the QP above with f_P replaced by the reached J_Pᵀ λ).
"""
from __future__ import annotations

import math
import threading
from numbers import Real

import numpy as np

from ..model.constraint import POINT_MASK, WELD_MASK
from .cones import BILATERAL, FF_N, FI_N, FLAT, POINT

try:            # optional on a ROS install (no rosdep key): only the friction QP needs it
    import daqp
except ImportError:         # pragma: no cover - exercised where daqp is missing
    daqp = None

SOLVERS = ("daqp",)
FEAS_TOL = 1e-9             # feasible: residual <= FEAS_TOL * max(1, |f_P|)
PRIMAL_TOL = 1e-10          # DAQP's primal tolerance, relative to max(1, |f_P|) (N, N m)
EPS_PROX = 1e-6             # DAQP's proximal weight for the least-residual problem
DAQP_FLAGS = {2: "soft optimal", 1: "optimal", -1: "infeasible", -2: "cycling", -3: "unbounded",
              -4: "iteration limit", -5: "nonconvex", -6: "overdetermined initial active set",
              -7: "time limit", -8: "unsupported"}


class FrictionCone:
    """One contact's friction: Coulomb coefficient ``mu`` (>= 0) and, for a flat (6D)
    contact, ``sole_size`` = (length along frame a's x, width along its y) in metres: the
    rectangle, centred on frame a's origin, in which the centre of pressure stays.

    A constraint with friction is unilateral: the ground (frame b, its z the normal)
    pushes, never pulls, and the force stays inside the four-sided pyramid inscribed in
    the cone of half-angle atan(mu) (an inner approximation: |f_x|, |f_y| <= mu/√2 f_z);
    a flat contact's wrench stays inside the contact wrench cone of its sole (the
    wrenches four such pyramids at the sole's corners can exert)."""

    __slots__ = ("mu", "sole_size")
    mu: float
    sole_size: tuple[float, float] | None

    def __init__(self, mu, sole_size=None):
        if isinstance(mu, bool) or not isinstance(mu, Real) or not (
                math.isfinite(float(mu)) and 0.0 <= float(mu) <= 1e3):
            raise ValueError(f"mu: expected a friction coefficient, a finite number >= 0, got {mu!r}")
        object.__setattr__(self, "mu", float(mu))
        if sole_size is not None:
            try:
                lx, ly = (float(x) for x in sole_size)
            except (TypeError, ValueError):
                raise ValueError(f"sole_size: expected (length, width) in m, got {sole_size!r}") from None
            if not (math.isfinite(lx) and math.isfinite(ly) and 0.0 < lx <= 1e3 and 0.0 < ly <= 1e3):
                raise ValueError(f"sole_size: expected two lengths > 0 (m), got {sole_size!r}")
            sole_size = (lx, ly)
        object.__setattr__(self, "sole_size", sole_size)

    def __setattr__(self, name, value):
        raise AttributeError("FrictionCone is immutable")

    def __eq__(self, other):
        return isinstance(other, FrictionCone) and (self.mu, self.sole_size) == (other.mu, other.sole_size)

    def __hash__(self):
        return hash((self.mu, self.sole_size))

    def __repr__(self):
        sole = "" if self.sole_size is None else f", sole_size={self.sole_size}"
        return f"FrictionCone({self.mu}{sole})"

    def __reduce__(self):
        return (FrictionCone, (self.mu, self.sole_size))


class FrictionSpec:
    """The cones of one constraint set and friction argument, packed for ``cones.cone_rows``:
    ``fi`` (int64, FI_N per constraint: kind, first row, rows), ``ff`` (FF_N: μ/√2, X, Y),
    ``rows``.  Per thread and number of passive DOFs n, the QP's buffers (``qp_buffers``):
    A ((n + rows) x m: J_Pᵀ then the cone rows C), its bounds and constraint kinds, and
    18 scratch entries; per weights, the Hessian (``hessian``)."""

    def __init__(self, fi, ff, rows, m):
        self.fi, self.ff, self.rows, self.m = fi, ff, rows, m
        self.any = rows > 0
        self._tls = threading.local()
        self._hessians = {}

    def qp_buffers(self, n):
        """(A, bu, bl, sense, work) for n equality rows (this thread's, made once)."""
        try:
            per = self._tls.bufs
        except AttributeError:
            per = self._tls.bufs = {}
        try:
            return per[n]
        except KeyError:
            pass
        ni = self.rows
        sense = np.zeros(n + ni, dtype=np.int32)
        sense[:n] = 5                                       # DAQP: an equality
        bufs = (np.zeros((n + ni, self.m)), np.zeros(n + ni), np.r_[np.zeros(n), np.full(ni, -1e30)], sense,
                np.zeros(18))
        per[n] = bufs
        return bufs

    def hessian(self, scale):
        """(diag(w), 0) of the weights w = 1/scale² (``scale``: the actuation's cached array)."""
        try:
            kept, H, f = self._hessians[id(scale)]
            if kept is scale:
                return H, f
        except KeyError:
            pass
        H, f = np.diag(1.0 / (scale * scale)), np.zeros(self.m)
        if len(self._hessians) < 16:
            self._hessians[id(scale)] = (scale, H, f)
        return H, f


def _entry(x, k, c):
    """One constraint's friction entry as a FrictionCone or None, checked against it."""
    where = f"friction[{k}] (constraint {c.name!r})"
    if x is None:
        return None
    if not isinstance(x, FrictionCone):
        if isinstance(x, bool) or not isinstance(x, Real):
            raise ValueError(f"{where}: expected a friction coefficient >= 0, an rbd.FrictionCone or None "
                             f"(bilateral), got {x!r}")
        try:
            x = FrictionCone(x)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    if c.mask == POINT_MASK:
        if x.sole_size is not None:
            raise ValueError(f"{where}: a point contact has no sole: sole_size is for flat (6D) contacts")
    elif c.mask == WELD_MASK:
        if x.sole_size is None:
            raise ValueError(f"{where}: a flat (6D) contact needs its sole: give "
                             f"rbd.FrictionCone({x.mu}, sole_size=(length, width))")
    else:
        raise ValueError(f"{where}: friction applies to point contacts (mask 1 1 1 0 0 0) and flat ones "
                         f"(mask 1 1 1 1 1 1), this constraint's mask is {' '.join(map(str, c.mask))}")
    return x


def friction_spec(cs, friction, n_extra):
    """The packed cones (FrictionSpec) of ``friction`` over the constraint set ``cs``, whose
    last ``n_extra`` constraints are the ones passed in the call (the model's own loop
    closures come first and stay bilateral).  ``friction``: None; a number or FrictionCone
    for every passed constraint; or a sequence, one entry (a number, a FrictionCone or
    None) per passed constraint.  Cached on ``cs`` by value."""
    if friction is None:
        return None
    try:
        return cs._friction[friction]
    except (KeyError, TypeError):
        pass
    extra = cs.constraints[len(cs.constraints) - n_extra:]
    if isinstance(friction, (Real, FrictionCone)) and not isinstance(friction, bool):
        entries = [friction] * n_extra
    else:
        if isinstance(friction, (str, bytes)) or not hasattr(friction, "__len__"):
            raise ValueError(f"friction: expected a friction coefficient, an rbd.FrictionCone or a sequence of "
                             f"them (None: bilateral) per constraint, got {friction!r}")
        entries = list(friction)
        if len(entries) != n_extra:
            names = ", ".join(c.name for c in extra) or "none"
            raise ValueError(f"friction: expected {n_extra} entries, one per constraint passed ({names}), "
                             f"got {len(entries)}")
    cones = [None] * (len(cs.constraints) - n_extra) + [_entry(x, k, c) for k, (x, c) in
                                                         enumerate(zip(entries, extra))]
    nc = len(cs.constraints)
    fi = np.zeros(FI_N * nc, dtype=np.int64)
    ff = np.zeros(FF_N * nc)
    rows = 0
    for k, cone in enumerate(cones):
        if cone is None:
            fi[FI_N * k] = BILATERAL
            continue
        flat = cone.sole_size is not None
        n = 16 if flat else (4 if cone.mu > 0.0 else 5)
        fi[FI_N * k:FI_N * k + 3] = FLAT if flat else POINT, rows, n
        ff[FF_N * k] = cone.mu / math.sqrt(2.0)
        if flat:
            ff[FF_N * k + 1:FF_N * k + 3] = cone.sole_size[0] / 2.0, cone.sole_size[1] / 2.0
        rows += n
    spec = FrictionSpec(fi, ff, rows, cs.m)
    try:
        if len(cs._friction) < 64:
            cs._friction[friction] = spec
    except TypeError:       # an unhashable sequence (a list): packed again next time
        pass
    return spec


def check_solver(solver):
    """The solver name (None: the default, DAQP); ValueError for another, ImportError
    naming the package when it is not installed."""
    if solver is None:
        solver = "daqp"
    if solver not in SOLVERS:
        raise ValueError(f"solver: expected None or one of {', '.join(map(repr, SOLVERS))}, got {solver!r}")
    if daqp is None:
        raise ImportError("constrained_inverse_dynamics with friction needs the QP solver DAQP: pip install daqp")
    return solver


def _flag(flag):
    return f"daqp: {DAQP_FLAGS.get(int(flag), 'exit flag')} ({int(flag)})"


def _equalities(B, c, rank):
    """B λ = c with its dependent rows removed (rank < rows: U_rᵀ B λ = U_rᵀ c from B's SVD)."""
    if rank >= B.shape[0]:
        return B, c
    U, s, Vt = np.linalg.svd(B, full_matrices=False)
    r = max(1, min(rank, int(np.sum(s > 1e-12 * s[0])) if s[0] > 0 else 0))
    return U[:, :r].T @ B, U[:, :r].T @ c


def _qp(H, f, B, c, C, tol):
    """min ½ λᵀ H λ s.t. B λ = c, C λ <= 0 (DAQP).  (λ, exit flag)."""
    ne, ni = B.shape[0], C.shape[0]
    sense = np.zeros(ne + ni, dtype=np.int32)
    sense[:ne] = 5                                   # equality
    x, _, flag, _ = daqp.solve(H, f, np.concatenate((B, C)), np.concatenate((c, np.zeros(ni))),
                               np.concatenate((c, np.full(ni, -1e30))), sense, primal_tol=tol)
    return np.asarray(x, dtype=float), flag


def _least_residual(B, c, C, tol):
    """min ½ ‖B λ − c‖² s.t. C λ <= 0 (DAQP, proximal: the Hessian BᵀB is singular)."""
    ni = C.shape[0]
    x, _, flag, _ = daqp.solve(B.T @ B, -(B.T @ c), C, np.zeros(ni), np.full(ni, -1e30), primal_tol=tol,
                               eps_prox=EPS_PROX)
    return np.asarray(x, dtype=float), flag


def _norm(x):
    return math.sqrt(float(x @ x))


def solve(A, bu, bl, sense, ne, H, f, rank):
    """λ of the friction QP (module docstring).  ``A`` = [B; C] with B = J_Pᵀ (``ne`` rows,
    rank ``rank``) and C the cone rows; ``bu``, ``bl``, ``sense`` DAQP's bounds and kinds
    for them (bu[:ne] = bl[:ne] = c = f_P, the cones' bu 0); ``H`` = diag(w), ``f`` = 0.
    Returns (λ, feasible, violation = ‖B λ − c‖ when infeasible else 0, status,
    solver_status); raises ValueError when DAQP fails on the least-residual problem."""
    B, c, C = A[:ne], bu[:ne], A[ne:]
    scale = max(1.0, float(np.max(np.abs(c)))) if ne else 1.0
    tol = PRIMAL_TOL * scale
    if rank >= ne:
        lam, _, flag, _ = daqp.solve(H, f, A, bu, bl, sense, primal_tol=tol)
        lam = np.asarray(lam, dtype=float)
    else:
        Be, ce = _equalities(B, c, rank)
        lam, flag = _qp(H, f, Be, ce, C, tol)
    if flag == 1 and _norm(B @ lam - c) <= FEAS_TOL * scale:
        return lam, True, 0.0, "cone active", _flag(flag)
    # no λ inside the cones satisfies the equations (or DAQP did not say optimal):
    # the least residual, then the least ‖λ‖_W reaching it
    lam1, flag1 = _least_residual(B, c, C, tol)
    if flag1 != 1 or not np.all(np.isfinite(lam1)):
        raise ValueError(f"constrained_inverse_dynamics: the friction QP failed ({_flag(flag)}; least "
                         f"residual: {_flag(flag1)})")
    reached = B @ lam1
    violation = _norm(reached - c)
    Be, ce = _equalities(B, reached, rank)
    lam2, flag2 = _qp(H, f, Be, ce, C, tol)
    status = _flag(flag2)
    if flag2 == 1 and _norm(B @ lam2 - reached) <= FEAS_TOL * scale:
        lam1 = lam2
    else:
        status = f"{_flag(flag1)}; least norm: {status} (the least-residual λ is returned)"
    feasible = violation <= FEAS_TOL * scale
    return lam1, feasible, 0.0 if feasible else violation, "cone active" if feasible else "infeasible", status


__all__ = ["FrictionCone", "FrictionSpec", "friction_spec", "check_solver", "solve"]
