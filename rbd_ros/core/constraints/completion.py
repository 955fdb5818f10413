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
from numba import types as nbt

from ..algorithms.common import BAD_A, BAD_Q, BAD_RESULT, BAD_SHAPE, BAD_V, OK, all_finite
from ..algorithms.crba import crba_into
from ..algorithms.layout import H_NB, H_NMIM, H_NV, H_NVF, R_MAT, region_offsets
from ..algorithms.rnea import rnea_into
from ..algorithms.spatial import JIT
from ..calls._numba_compat import plain_arguments_only
from ..model.checks import real_number
from .args import check, not_model
from .closure import NOT_CLOSED, _free, _step, close_k, rbd_error_row
from .dynamics import RANK_TOL, _sizes_ok
from .kinematics import jlog6_inv_into, kinematics
from .layout import (
    CI_HEAD,
    CI_KIND,
    CI_M,
    CI_MASK,
    CI_N,
    CI_NC,
    CI_ROW,
    ENTRY,
    O_B,
    O_C,
    O_COD,
    O_E,
    O_END,
    O_G,
    O_J,
    O_K,
    O_K2,
    O_R,
    O_W,
    O_Y,
    POINT,
    offsets,
)
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


NEWTON_STEPS = 8        # state_k: more steps than this is not a sample near the previous one


@njit(**JIT)
def _masked_rows(ci, ci6, cws, cws6, nv, free, mode):
    """From the unmasked set's e and J (cws6): e's masked rows into cws's e and, ``mode``
    1, into cws's J the masked rows of de/dq (Jl⁻¹(−e₆) J₆ for a masked constraint, J's
    rows for a point; the columns of the ``free`` DOFs only), ``mode`` 2 those of the
    velocity Jacobian J₆ (every column), ``mode`` 0 no J.  Returns ‖e‖ (masked rows)."""
    deriv = mode == 1
    m, m6 = ci[CI_M], ci6[CI_M]
    co, co6 = offsets(ci[CI_NC], m, nv), offsets(ci6[CI_NC], m6, nv)
    oe, oj, oe6, oj6 = co[O_E], co[O_J], co6[O_E], co6[O_J]
    B = cws6[co6[O_K]:co6[O_K] + 36]                # (m6 >= 6 where a constraint is masked)
    err = 0.0
    for k in range(ci[CI_NC]):
        o = CI_HEAD + k * CI_N
        r, r6 = ci[o + CI_ROW], ci6[o + CI_ROW]
        if ci[o + CI_KIND] == POINT:
            for d in range(3):
                cws[oe + r + d] = cws6[oe6 + r6 + d]
                if mode:
                    for c in range(nv):
                        cws[oj + (r + d) * nv + c] = cws6[oj6 + (r6 + d) * nv + c]
            continue
        if deriv:
            for d in range(6):
                B[30 + d] = -cws6[oe6 + r6 + d]      # ξ = log6(ᵃMᵦ) = −e₆ (scratch: B's last row)
            jlog6_inv_into(B, 30, B, 0)              # (reads ξ before it writes row 5)
        rr = r
        for d in range(6):
            if not ci[o + CI_MASK + d]:
                continue
            cws[oe + rr] = cws6[oe6 + r6 + d]
            if deriv:
                j0 = 0 if d < 3 else 3                # Jl⁻¹'s lower-left block is 0
                for i in range(free.shape[0]):
                    c = free[i]
                    acc = 0.0
                    for j in range(j0, 6):
                        acc += B[6 * d + j] * cws6[oj6 + (r6 + j) * nv + c]
                    cws[oj + rr * nv + c] = acc
            elif mode:
                for c in range(nv):
                    cws[oj + rr * nv + c] = cws6[oj6 + (r6 + d) * nv + c]
            rr += 1
    for i in range(m):
        err += cws[oe + i] * cws[oe + i]
    return np.sqrt(err)


@njit(**ENTRY)
def state_k(md, ws, ci, cf, cws, ci6, cws6, q, q0, v, free, qmap, free_q, tol, max_iter, want_cond, info):
    """The measured state completed in place: q's free DOFs closed to ‖e‖ <= tol, then
    v's free DOFs from J q̇ = 0 with the J of the closed q.  q0: scratch of len(q).
    ``ci6``/``cws6``: the unmasked set (ConstraintSet.ci6_k) and its workspace.
    info: [‖e‖, iterations, row of the largest |e|, cond of J_F (nan unless
    ``want_cond``)].  NOT_CLOSED when the loops could not be closed (v untouched).
    Without ``want_cond`` a square, regular J_F is solved by LU (the same solution).

    Newton on the exact de/dq_F: where a mask leaves a rotation (or a translation) free,
    de/dq is not the velocity Jacobian J (doc/constraints.md) but the masked rows of
    Jl⁻¹(log6 ᵃMᵦ) J₆ (J₆: the six weld rows; Jl⁻¹: SE(3)'s inverse left Jacobian), so
    each step solves those rows (LU where square and regular, else the minimum-norm
    least squares), halved until ‖e‖ decreases.  Quadratic convergence: from the
    previous sample's solution about two steps per 1 ms sample of a smooth motion.  A
    sample that needs more than ``NEWTON_STEPS`` is not a small step from the previous
    one: NOT_CLOSED with q as given (the caller's Gauss-Newton, ``close_k``, starts
    there: the assembly a far start reaches is close_loops', not a Newton leap's)."""
    m = ci[CI_M]
    nv = ci[2]
    nf = free.shape[0]
    m6 = ci6[CI_M]
    co6 = offsets(ci6[CI_NC], m6, nv)
    if (not _sizes_ok(md, ws, ci, cws, q, v, True) or q0.shape[0] != q.shape[0] or info.shape[0] < 4
            or qmap.shape[0] != v.shape[0] or ci6[CI_NC] != ci[CI_NC] or ci6[2] != nv
            or cws6.shape[0] < co6[O_END]):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    co = offsets(ci[CI_NC], m, nv)
    oe = co[O_E]
    q_in = cws6[co6[O_W]:co6[O_W] + q.shape[0]]     # q as given (m6 >= 3: nv * m6 >= nq)
    for k in range(q.shape[0]):
        q_in[k] = q[k]
    st = kinematics(md, ws, ci6, cf, cws6, q, q, False, True)
    if st != OK:
        return st
    err = _masked_rows(ci, ci6, cws, cws6, nv, free, 0)
    if err > tol and nf > 0:
        _masked_rows(ci, ci6, cws, cws6, nv, free, 1)
    it = 0
    sol = info[1:4]             # (scratch until the end)
    dx = cws[co[O_Y]:co[O_Y] + nv]
    A = cws[co[O_B]:co[O_B] + m * nf].reshape((m, nf))
    rhs = cws[co[O_C]:co[O_C] + m]
    LU = cws[co[O_K2]:co[O_K2] + m * m].reshape((m, m))
    piv = cws[co[O_R]:co[O_R] + m]
    while err > tol and it < min(max_iter, NEWTON_STEPS) and nf > 0:
        it += 1
        if _lu_free(ci, cws, free, LU, piv):        # square and regular: LU
            for r in range(m):
                dx[r] = -cws[oe + r]
            lu_solve(LU, m, piv, dx, False)
        else:
            for r in range(m):
                rhs[r] = -cws[oe + r]
                for i in range(nf):
                    A[r, i] = cws[co[O_J] + r * nv + free[i]]
            lstsq_min_norm(A, m, nf, rhs, dx, cws[co[O_COD]:co[O_COD] + 3 * nf], RANK_TOL,
                           cws[co[O_COD] + 3 * nf:co[O_COD] + 3 * nf + 4])
        for k in range(q.shape[0]):
            q0[k] = q[k]
        step = 1.0
        better = False
        e1 = err
        for _ in range(40):
            _step(q, q0, dx, free, qmap, free_q, step)
            st = kinematics(md, ws, ci6, cf, cws6, q, q, False, True)
            if st != OK:
                return st
            e1 = _masked_rows(ci, ci6, cws, cws6, nv, free, 0)
            if e1 < err:
                better = True
                break
            step *= 0.5
        if not better:
            for k in range(q.shape[0]):
                q[k] = q0[k]
            kinematics(md, ws, ci6, cf, cws6, q, q, False, True)
            _masked_rows(ci, ci6, cws, cws6, nv, free, 0)
            break
        err = e1
        if err > tol:                                # another step: de/dq at the accepted q
            _masked_rows(ci, ci6, cws, cws6, nv, free, 1)
    big = 0.0
    row = 0
    for r in range(m):
        if abs(cws[oe + r]) > big:
            big = abs(cws[oe + r])
            row = r
    if err > tol:
        for k in range(q.shape[0]):
            q[k] = q_in[k]
        info[0] = err
        info[1] = it
        info[2] = row
        return NOT_CLOSED
    _masked_rows(ci, ci6, cws, cws6, nv, free, 2)          # the velocity Jacobian at the closed q
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
        one (what a control loop calls per measured sample): Newton steps on the exact
        de/dq (``state_k``), stopping at ‖e‖ <= tol; when that takes more than
        ``NEWTON_STEPS``, ``positions`` (Gauss-Newton, J at every step) tries from the
        q given.  Returns the free block's condition
        estimate (also ``cond``); with ``cond=False`` none is made (nan returned, unless
        the fallback ran) and a square, regular J_F is solved by LU instead of the pivoted
        QR (the same velocities, cheaper).  LoopsNotClosed as ``positions`` (v untouched
        then)."""
        model, cs, info = self.model, self._cs, self._info
        want = True if cond else False
        try:        # plain arrays straight to the kernel (its guard: anything else is NotPlain)
            st = state_k(model.md_k, model._tls.ws, cs.ci_k, cs.cf_k, cs._tls.cws, cs.ci6_k, cs._tls.cws6, q,
                         self._q0, v, self.free, self._qmap, self._ffs, self.tol, self.max_iter, want, info)
        except (AttributeError, TypeError):     # this thread's first call, or not plain: checked
            st = BAD_SHAPE
        if st == BAD_SHAPE:
            q = self._arr(q, model.nq, "q", True)
            v = self._arr(v, model.nv, "v", True)
            st = state_k(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), cs.ci6_k, cs.workspace6(),
                         q, self._q0, v, self.free, self._qmap, self._ffs, self.tol, self.max_iter, want, info)
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


_A8, _I8 = nbt.Array(nbt.float64, 1, "C"), nbt.Array(nbt.int64, 1, "C")
# LoopCompletion.state hands its arguments straight to state_k: it compiles for these types
# only (anything else raises NotPlain, a TypeError, and state takes its checked path)
plain_arguments_only(state_k, (_A8, _A8, _I8, _A8, _A8, _I8, _A8, _A8, _A8, _A8, _I8, _I8,
                               nbt.Array(nbt.int64, 2, "C"), nbt.float64, nbt.int64, nbt.boolean, _A8))
