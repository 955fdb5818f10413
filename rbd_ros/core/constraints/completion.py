"""Completing a measured state of a closed-loop mechanism, one sample at a time:
``LoopCompletion``.

A driver measures the actuated joints (and maybe some passive ones); the passive
joints' positions, velocities and accelerations follow from the loop closures:

    e(q) = 0 (close_loops),    J q̇ = 0 (loop_velocity),    J q̈ + γ = 0

each solved over the DOFs not ``fixed`` (the free ones), given the fixed ones.
``LoopCompletion`` prepares the constraint set, the free DOFs and the scratch once and
then works in place on the caller's arrays, allocating nothing (a control loop calls
it per sample); the positions follow ``close_loops`` (Gauss-Newton from the q it is
given, which picks the assembly branch: pass the previous solution), the velocities
``loop_velocity``, the accelerations the same minimum-norm least squares on
J_F q̈_F = −γ − J_X q̈_X.  Each call also keeps the condition estimate of the free
DOFs' block J_F (``cond``: the ratio of the pivoted QR's extreme diagonal entries;
the actuator torques of a motion grow like it near a singular configuration).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..algorithms.common import BAD_A, BAD_Q, BAD_RESULT, BAD_SHAPE, BAD_V, OK, all_finite
from ..algorithms.crba import crba_into
from ..algorithms.layout import H_NB, H_NMIM, H_NV, H_NVF, R_MAT, region_offsets
from ..algorithms.rnea import rnea_into
from ..algorithms.spatial import JIT
from ..model.checks import real_number
from .args import check, not_model
from .closure import NOT_CLOSED, _free, _step, close_k, rbd_error_row
from .dynamics import RANK_TOL, _sizes_ok
from .kinematics import kinematics
from .layout import CI_M, CI_NC, ENTRY, O_B, O_C, O_COD, O_E, O_G, O_J, O_K, O_K2, O_R, O_Y, offsets
from .packing import constraint_set
from .solve import LU_TOL, lstsq_min_norm, lu_factor, lu_solve

_F8 = np.dtype(np.float64)
_ND = np.ndarray


@njit(**JIT)
def _solve_free(ci, cws, x, free, rhs_g, info):
    """x[free] = the minimum-norm least-squares solution of J_F x_F = −(γ if rhs_g) − J_X x_X
    (J, γ in the workspace; x in place).  info: [residual, rank, cond of J_F]."""
    m = ci[CI_M]
    nv = ci[2]
    nf = free.shape[0]
    co = offsets(ci[CI_NC], m, nv)
    for i in range(nf):
        x[free[i]] = 0.0
    A = cws[co[O_B]:co[O_B] + m * nf].reshape((m, nf))
    b = cws[co[O_C]:co[O_C] + m]
    for r in range(m):
        acc = cws[co[O_G] + r] if rhs_g else 0.0
        for k in range(nv):
            acc += cws[co[O_J] + r * nv + k] * x[k]
        b[r] = -acc
        for i in range(nf):
            A[r, i] = cws[co[O_J] + r * nv + free[i]]
    dx = cws[co[O_Y]:co[O_Y] + nv]
    sol = cws[co[O_COD] + 3 * nf:co[O_COD] + 3 * nf + 4]
    lstsq_min_norm(A, m, nf, b, dx, cws[co[O_COD]:co[O_COD] + 3 * nf], RANK_TOL, sol)
    for i in range(nf):
        x[free[i]] = dx[i]
    info[0] = sol[0]
    info[1] = sol[1]
    info[2] = sol[2]


@njit(**JIT)
def _lu_free(ci, cws, free, LU, piv):
    """J_F's LU (J in the workspace) into LU (m x m) and piv (m) when J_F is square and
    not nearly singular (solve.lu_factor); False otherwise (the caller takes the least
    squares)."""
    m = ci[CI_M]
    nv = ci[2]
    nf = free.shape[0]
    if nf != m or m == 0:
        return False
    oj = offsets(ci[CI_NC], m, nv)[O_J]
    for r in range(m):
        for i in range(nf):
            LU[r, i] = cws[oj + r * nv + free[i]]
    return lu_factor(LU, m, piv, LU_TOL)


@njit(**JIT)
def _solve_free_lu(ci, cws, x, free, rhs_g, LU, piv, info):
    """``_solve_free`` with J_F's LU (``_lu_free``: square and regular, the unique
    solution).  info: [‖J x + (γ if rhs_g)‖ after, rank (m), nan (no condition estimate)]."""
    m = ci[CI_M]
    nv = ci[2]
    nf = free.shape[0]
    co = offsets(ci[CI_NC], m, nv)
    oj, og = co[O_J], co[O_G]
    for i in range(nf):
        x[free[i]] = 0.0
    b = cws[co[O_C]:co[O_C] + m]
    for r in range(m):
        acc = cws[og + r] if rhs_g else 0.0
        for k in range(nv):
            acc += cws[oj + r * nv + k] * x[k]
        b[r] = -acc
    lu_solve(LU, m, piv, b, False)
    for i in range(nf):
        x[free[i]] = b[i]
    res = 0.0
    for r in range(m):
        acc = cws[og + r] if rhs_g else 0.0
        for k in range(nv):
            acc += cws[oj + r * nv + k] * x[k]
        res += acc * acc
    info[0] = np.sqrt(res)
    info[1] = m
    info[2] = np.nan


@njit(**ENTRY)
def complete_k(md, ws, ci, cf, cws, q, v, x, free, accel, info):
    """The free DOFs of x (in place): ``accel``: x = q̈ with J q̈ + γ = 0 at (q, v); else
    x = q̇ with J q̇ = 0 at q (v unused).  info: [residual, rank, cond of J_F]."""
    if (not _sizes_ok(md, ws, ci, cws, q, x, True) or (accel and v.shape[0] != x.shape[0])
            or info.shape[0] < 3):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if accel and not all_finite(v):
        return BAD_V
    if not all_finite(x):
        return BAD_A if accel else BAD_V
    st = kinematics(md, ws, ci, cf, cws, q, v if accel else q, accel, True)
    if st != OK:
        return st
    _solve_free(ci, cws, x, free, accel, info)
    return OK if all_finite(x) else BAD_RESULT


@njit(**JIT)
def _norm_e(cws, oe, m):
    s = 0.0
    for r in range(m):
        s += cws[oe + r] * cws[oe + r]
    return np.sqrt(s)


@njit(**ENTRY)
def state_k(md, ws, ci, cf, cws, q, q0, v, free, qmap, free_q, tol, max_iter, Jf, keep, want_cond, info):
    """The measured state completed in place: q's free DOFs closed to ‖e‖ <= tol, then
    v's free DOFs from J q̇ = 0 with the J of the closed q.  q0: scratch of len(q).
    info: [‖e‖, iterations, row of the largest |e|, cond of J_F (nan unless
    ``want_cond``)].  NOT_CLOSED when the loops could not be closed (v untouched).
    Without ``want_cond`` a square, regular J_F is solved by LU (the same solution).

    Quasi-Newton on ``Jf`` (m x nf), the secant estimate of de/dq_F: each step is its
    minimum-norm least squares (an LU solve where Jf is square and regular), halved
    until ‖e‖ decreases, then Broyden's rule updates it from the step taken.  Where a
    mask leaves a rotation free, de/dq is B(θ) J rather than the velocity Jacobian J
    (doc/constraints.md), so Gauss-Newton on J converges only linearly away from θ = 0;
    the secant estimate, kept from one sample to the next
    (``keep[0]`` = 1: Jf holds the last one), converges superlinearly and needs no J per
    step.  Jf starts from J_F (keep[0] = 0), and again after a sample that took more than
    4 steps."""
    m = ci[CI_M]
    nv = ci[2]
    nf = free.shape[0]
    if (not _sizes_ok(md, ws, ci, cws, q, v, True) or q0.shape[0] != q.shape[0] or info.shape[0] < 4
            or qmap.shape[0] != v.shape[0] or Jf.shape[0] != m or Jf.shape[1] != nf or keep.shape[0] < 1):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    co = offsets(ci[CI_NC], m, nv)
    oe = co[O_E]
    fresh = keep[0] == 0
    st = kinematics(md, ws, ci, cf, cws, q, q, False, fresh)
    if st != OK:
        return st
    err = _norm_e(cws, oe, m)
    e0 = cws[co[O_K]:co[O_K] + m]                            # e before a step
    if fresh:
        for r in range(m):
            for i in range(nf):
                Jf[r, i] = cws[co[O_J] + r * nv + free[i]]
    it = 0
    sol = info[1:4]             # (scratch until the end)
    dx = cws[co[O_Y]:co[O_Y] + nv]
    A = cws[co[O_B]:co[O_B] + m * nf].reshape((m, nf))
    rhs = cws[co[O_C]:co[O_C] + m]
    LU = cws[co[O_K2]:co[O_K2] + m * m].reshape((m, m))
    piv = cws[co[O_R]:co[O_R] + m]
    while err > tol and it < max_iter and nf > 0:
        it += 1
        for r in range(m):
            e0[r] = cws[oe + r]
        square = False
        if nf == m:                                  # square: LU, unless nearly singular
            for r in range(m):
                for i in range(nf):
                    LU[r, i] = Jf[r, i]
            square = lu_factor(LU, m, piv, LU_TOL)
        if square:
            for r in range(m):
                dx[r] = -e0[r]
            lu_solve(LU, m, piv, dx, False)
        else:
            for r in range(m):
                rhs[r] = -e0[r]
                for i in range(nf):
                    A[r, i] = Jf[r, i]
            lstsq_min_norm(A, m, nf, rhs, dx, cws[co[O_COD]:co[O_COD] + 3 * nf], RANK_TOL,
                           cws[co[O_COD] + 3 * nf:co[O_COD] + 3 * nf + 4])
        for k in range(q.shape[0]):
            q0[k] = q[k]
        step = 1.0
        better = False
        e1 = err
        for _ in range(40):
            _step(q, q0, dx, free, qmap, free_q, step)
            st = kinematics(md, ws, ci, cf, cws, q, q, False, False)
            if st != OK:
                return st
            e1 = _norm_e(cws, oe, m)
            if e1 < err:
                better = True
                break
            step *= 0.5
        if not better:
            for k in range(q.shape[0]):
                q[k] = q0[k]
            kinematics(md, ws, ci, cf, cws, q, q, False, False)
            break
        ss = 0.0                                     # Broyden: Jf += (y - Jf s) sᵀ / sᵀs
        for i in range(nf):
            ss += (step * dx[i]) ** 2
        if ss > 0.0:
            for r in range(m):
                acc = cws[oe + r] - e0[r]
                for i in range(nf):
                    acc -= Jf[r, i] * step * dx[i]
                acc /= ss
                for i in range(nf):
                    Jf[r, i] += acc * step * dx[i]
        err = e1
    big = 0.0
    row = 0
    for r in range(m):
        if abs(cws[oe + r]) > big:
            big = abs(cws[oe + r])
            row = r
    if err > tol:
        keep[0] = 0
        info[0] = err
        info[1] = it
        info[2] = row
        return NOT_CLOSED
    keep[0] = 1 if it <= 4 else 0
    if it > 0 or not fresh:                          # J at the closed q, for the velocities
        st = kinematics(md, ws, ci, cf, cws, q, q, False, True)
        if st != OK:
            return st
    if want_cond or not _lu_free(ci, cws, free, LU, piv):
        _solve_free(ci, cws, v, free, False, sol)
    else:
        _solve_free_lu(ci, cws, v, free, False, LU, piv, sol)
    cond = sol[2]
    info[0] = err
    info[1] = it
    info[2] = row
    info[3] = cond
    return OK if all_finite(v) else BAD_RESULT


class LoopsNotClosed(ValueError):
    """The loops cannot be closed from the given q (out of reach, or singular on the way);
    ``constraint``: the name of the constraint with the largest error."""

    def __init__(self, text, constraint):
        super().__init__(text)
        self.constraint = constraint


class LoopCompletion:
    """The passive DOFs of ``model`` (those of the joints not in ``fixed``: joint names,
    the measured ones) completed from the fixed ones, in place and allocation-free, for
    ``model.constraints`` followed by ``constraints`` (as every constraint function).

    ``positions(q)``: the loops closed (‖e‖ <= ``tol``) from q, which picks the assembly
    branch (pass the previous solution); ``velocities(q, v)``: J q̇ = 0;
    ``accelerations(q, v, a)``: J q̈ + γ = 0.  Each overwrites the free DOFs of its last
    argument and keeps ``cond`` (the free block's condition estimate), ``error`` (‖e‖
    after ``positions``) and ``iterations``.  The arrays must be plain float64 numpy
    arrays of the model's lengths (a ValueError names the argument otherwise).  One
    object per thread (it owns scratch)."""

    def __init__(self, model, fixed, constraints=None, *, tol=1e-10, max_iter=20):
        not_model(model)
        self.model = model
        self._cs = constraint_set(model, constraints)
        self.constraints = self._cs.constraints
        self.m = self._cs.m
        tol = real_number(tol, "tol", "a number > 0")
        if not (tol > 0 and np.isfinite(tol)):
            raise ValueError(f"tol: expected a finite number > 0, got {tol}")
        if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
            raise ValueError(f"max_iter: expected an integer >= 1, got {max_iter!r}")
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.free, self._qmap, self._ffs = _free(model, fixed)
        self._q0 = np.empty(model.nq)
        self._info = np.zeros(4)
        self._jf = np.zeros((self.m, len(self.free)))   # state's secant estimate of de/dq_F (state_k)
        self._keep = np.zeros(1, dtype=np.int64)
        self.cond = np.nan
        self.error = np.nan
        self.iterations = 0

    def _arr(self, x, n, name, writable=False):
        if not (x.__class__ is _ND and x.dtype is _F8 and x.shape == (n,) and x.flags.carray
                and (x.flags.writeable or not writable)):
            raise ValueError(f"{name}: expected a {'writable ' if writable else ''}float64 numpy array of shape "
                             f"({n},), got {type(x).__name__} {getattr(x, 'shape', '')}")
        return x

    def positions(self, q) -> float:
        """Close the loops from ``q`` (in place); returns ‖e‖.  LoopsNotClosed (a
        ValueError naming the constraint with the largest error) when they cannot be
        closed from there: q is then the best point reached."""
        model, cs, info = self.model, self._cs, self._info
        q = self._arr(q, model.nq, "q", True)
        st = close_k(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, self._q0, self.free,
                     self._qmap, self._ffs, self.tol, self.max_iter, info)
        self.error, self.iterations = info[0], int(info[1])
        if st == NOT_CLOSED:
            raise self._not_closed(info)
        if st != OK:
            check(st, "v", args=(("q", q),))
        return info[0]

    def state(self, q, v, cond=True) -> float:
        """``positions`` then ``velocities`` in one call, for a sample near the previous
        one (what a control loop calls per measured sample): quasi-Newton steps on a
        secant estimate of de/dq kept from the previous call (``state_k``), stopping at
        ‖e‖ <= tol; when that does not close the loops, ``positions`` (Gauss-Newton, J at
        every step) tries from where it stopped.  Returns the free block's condition
        estimate (also ``cond``); with ``cond=False`` none is made (nan returned, unless
        the fallback ran) and a square, regular J_F is solved by LU instead of the pivoted
        QR (the same velocities, cheaper).  LoopsNotClosed as ``positions`` (v untouched
        then)."""
        model, cs, info = self.model, self._cs, self._info
        q = self._arr(q, model.nq, "q", True)
        v = self._arr(v, model.nv, "v", True)
        st = state_k(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, self._q0, v, self.free,
                     self._qmap, self._ffs, self.tol, self.max_iter, self._jf, self._keep, bool(cond), info)
        self.error, self.iterations = info[0], int(info[1])
        if st == NOT_CLOSED:            # far from the previous sample: Gauss-Newton from here
            self.positions(q)
            return self.velocities(q, v)
        if st != OK:
            check(st, "v", args=(("q", q), ("v", v)))
        self.cond = info[3]
        return info[3]

    def _not_closed(self, info):
        cs = self._cs
        row = int(info[2])
        k = next(i for i, s in enumerate(cs.rows) if s.start <= row < s.stop)
        name = cs.constraints[k].name
        return LoopsNotClosed(f"the loops cannot be closed (out of reach, or singular on the way): constraint "
                              f"{name!r} keeps an error of {abs(rbd_error_row(cs, row)):.3g} in "
                              f"{cs.names[row].split('/')[-1]} (‖e‖ = {info[0]:.3g} after "
                              f"{int(info[1])} Gauss-Newton steps)", name)

    def velocities(self, q, v) -> float:
        """The free DOFs of ``v`` (in place) from J q̇ = 0 at ``q`` (closed); returns the
        condition estimate of the free block (also in ``cond``)."""
        model, cs, info = self.model, self._cs, self._info
        q = self._arr(q, model.nq, "q")
        v = self._arr(v, model.nv, "v", True)
        st = complete_k(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, v, v, self.free,
                        False, info)
        if st != OK:
            check(st, "v", args=(("q", q), ("v", v)))
        self.cond = info[2]
        return info[2]

    def accelerations(self, q, v, a) -> float:
        """The free DOFs of ``a`` (in place) from J q̈ + γ = 0 at (``q``, ``v``) (closed);
        returns the condition estimate of the free block (also in ``cond``)."""
        model, cs, info = self.model, self._cs, self._info
        q = self._arr(q, model.nq, "q")
        v = self._arr(v, model.nv, "v")
        a = self._arr(a, model.nv, "a", True)
        st = complete_k(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, v, a, self.free,
                        True, info)
        if st != OK:
            check(st, "a", args=(("q", q), ("v", v), ("a", a)))
        self.cond = info[2]
        return info[2]


@njit(**JIT)
def _forces(ci, cws, f, passive, active, lam, tau):
    """λ = the minimum-norm least-squares solution of J_Pᵀ λ = f_P, τ = f − Jᵀλ on the
    active DOFs, 0 on the passive ones (J in the workspace).  Returns the solve's
    (residual, rank, cond) in the COD region's scratch (also returned)."""
    m = ci[CI_M]
    nv = ci[2]
    npas = passive.shape[0]
    co = offsets(ci[CI_NC], m, nv)
    oj = co[O_J]
    B = cws[co[O_B]:co[O_B] + npas * m].reshape((npas, m))
    c = cws[co[O_C]:co[O_C] + max(npas, m)]
    for i in range(npas):
        p = passive[i]
        c[i] = f[p]
        for r in range(m):
            B[i, r] = cws[oj + r * nv + p]
    sol = cws[co[O_COD] + 3 * m:co[O_COD] + 3 * m + 4]
    lstsq_min_norm(B, npas, m, c, lam, cws[co[O_COD]:co[O_COD] + 3 * m], RANK_TOL, sol)
    for k in range(nv):
        tau[k] = 0.0
    for i in range(active.shape[0]):
        p = active[i]
        acc = f[p]
        for r in range(m):
            acc -= cws[oj + r * nv + p] * lam[r]
        tau[p] = acc
    return sol


@njit(**JIT)
def _same(x, y):
    if x.shape[0] != y.shape[0]:
        return False
    for i in range(x.shape[0]):
        if x[i] != y[i]:
            return False
    return True


@njit(**JIT)
def _forces_lu(ci, cws, f, passive, active, lam, tau, LU, piv):
    """``_forces`` with the LU of J_P (square, regular: ``_lu_free`` of the passive DOFs):
    λ from J_Pᵀ λ = f_P, τ as there.  Returns the residual ‖J_Pᵀ λ − f_P‖."""
    m = ci[CI_M]
    nv = ci[2]
    oj = offsets(ci[CI_NC], m, nv)[O_J]
    for i in range(m):
        lam[i] = f[passive[i]]
    lu_solve(LU, m, piv, lam, True)
    res = 0.0
    for i in range(m):
        p = passive[i]
        acc = -f[p]
        for r in range(m):
            acc += cws[oj + r * nv + p] * lam[r]
        res += acc * acc
    for k in range(nv):
        tau[k] = 0.0
    for i in range(active.shape[0]):
        p = active[i]
        acc = f[p]
        for r in range(m):
            acc -= cws[oj + r * nv + p] * lam[r]
        tau[p] = acc
    return np.sqrt(res)


@njit(**ENTRY)
def compensation_k(md, ws, ci, cf, cws, q, v, free, passive, active, out_v, want_b, want_h, g, b, h, lam, tau, a,
                   f, info):
    """The actuator torques of a closed-loop mechanism at the closed state (q, v), in
    ``out_v`` order: ``g`` holding it still (q̇ = q̈ = 0), and with ``want_b`` ``b`` moving
    it with q̇ at zero actuated acceleration (the free DOFs' q̈ from J q̈ + γ = 0) and
    ``lam`` the constraint forces of the latter (λ of g when not ``want_b``); with
    ``want_h`` ``h`` the tree's H (CRBA; the loops cut open) of the ``out_v`` DOFs, flat,
    row-major.  One kinematics pass (J, γ) serves all.  tau, a, f: scratch of nv.  info:
    [cond of J_P, the residual of g's, of b's solve, ‖J a + γ‖]."""
    mi = md.view(np.int64)
    nv = mi[H_NV]
    m = ci[CI_M]
    if (not _sizes_ok(md, ws, ci, cws, q, v, True) or tau.shape[0] != nv or a.shape[0] != nv or f.shape[0] != nv
            or lam.shape[0] != m or passive.shape[0] + active.shape[0] != nv or info.shape[0] < 4
            or g.shape[0] != out_v.shape[0] or (want_b and b.shape[0] != out_v.shape[0])
            or (want_h and h.shape[0] != out_v.shape[0] * out_v.shape[0])):
        return BAD_SHAPE
    for k in range(out_v.shape[0]):
        if out_v[k] < 0 or out_v[k] >= nv:
            return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    st = kinematics(md, ws, ci, cf, cws, q, v, True, True)
    if st != OK:
        return st
    fe = ws[:0].reshape((0, 6))
    st = rnea_into(md, ws, q, v, v, fe, False, bool(0), bool(0), f)     # g(q): v and a not read
    if st != OK:
        return st
    sol = _forces(ci, cws, f, passive, active, lam, tau)
    info[0] = sol[2]
    info[1] = sol[0]
    for k in range(out_v.shape[0]):
        g[k] = tau[out_v[k]]
    if want_b:
        for k in range(nv):
            a[k] = 0.0
        co = offsets(ci[CI_NC], m, nv)
        o3 = co[O_COD] + 3 * (nv + m) + 4        # (past the scratch of both solves)
        s3 = cws[o3:o3 + 4]
        # a square, regular J_F: one LU for the accelerations and (J_P = J_F) b's forces
        LU = cws[co[O_K]:co[O_K] + m * m].reshape((m, m))
        piv = cws[co[O_K2]:co[O_K2] + m]
        square = _lu_free(ci, cws, free, LU, piv)
        if square:
            _solve_free_lu(ci, cws, a, free, True, LU, piv, s3)
        else:
            _solve_free(ci, cws, a, free, True, s3)
        info[3] = s3[0]
        st = rnea_into(md, ws, q, v, a, fe, False, bool(1), bool(1), f)
        if st != OK:
            return st
        if square and _same(free, passive):
            info[2] = _forces_lu(ci, cws, f, passive, active, lam, tau, LU, piv)
        else:
            sol = _forces(ci, cws, f, passive, active, lam, tau)
            info[2] = sol[0]
        for k in range(out_v.shape[0]):
            b[k] = tau[out_v[k]]
    if want_h:
        offs = region_offsets(mi[H_NB], mi[H_NVF], mi[H_NMIM])
        H = ws[offs[R_MAT]:offs[R_MAT] + nv * nv].reshape((nv, nv))
        st = crba_into(md, ws, q, H)
        if st != OK:
            return st
        n = out_v.shape[0]
        for k in range(n):
            for j in range(n):
                h[k * n + j] = H[out_v[k], out_v[j]]
    if not (all_finite(g) and all_finite(lam) and (not want_b or all_finite(b)) and (not want_h or all_finite(h))):
        return BAD_RESULT
    return OK


class LoopCompensation:
    """The closed-loop analogue of ``rbd.compensation_into`` for one Robot: at a closed
    state, the actuator torques that hold the mechanism still (g) and that move it with
    its velocity at zero actuated acceleration (b: the passive accelerations from
    J q̈ + γ = 0), and the constraint forces λ of the latter -- the same as
    ``rbd.constrained_inverse_dynamics`` at those states, in one call that allocates
    nothing.  ``actuated``: joint names (as the inverse dynamics); ``passive``: the DOFs
    whose accelerations follow from the loops (default: those of the joints not
    actuated; a floating base kept at rest is not passive there).  ``compute`` also
    keeps ``cond``, the condition estimate of J_P (actuator torques grow like it near a
    singular configuration).  One object per thread (it owns scratch)."""

    def __init__(self, model, actuated, constraints=None, *, free=None):
        not_model(model)
        self.model = model
        self._cs = constraint_set(model, constraints)
        self.m = self._cs.m
        self._passive, self._active, _ = self._cs.actuation(model, actuated, None)
        self.free = self._passive if free is None else np.asarray(free, dtype=np.int64)
        nv = model.nv
        self._tau, self._a, self._f = np.zeros(nv), np.zeros(nv), np.zeros(nv)
        self._info = np.zeros(4)
        self._lam = np.zeros(self.m)
        self.cond = np.nan

    def compute(self, q, v, out_v, g, b=None, lam=None, h=None) -> float:
        """g (and b, when given) in ``out_v`` order (int64 velocity indices), λ (m) into
        ``lam`` when given, the tree's H of the ``out_v`` DOFs (flat, row-major) into ``h``
        when given; returns ``cond``.  Plain float64 numpy arrays."""
        model, cs, info = self.model, self._cs, self._info
        want_b, want_h = b is not None, h is not None
        if lam is None:
            lam = self._lam
        st = compensation_k(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, v, self.free,
                            self._passive, self._active, out_v, want_b, want_h, g, b if want_b else g,
                            h if want_h else g, lam, self._tau, self._a, self._f, info)
        if st != OK:
            check(st, "v", args=(("q", q), ("v", v)))
        self.cond = info[0]
        return info[0]
