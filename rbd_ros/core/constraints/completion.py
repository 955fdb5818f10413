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
from ..checks import real_number
from ..spatial import JIT
from .args import check, not_model
from .closure import NOT_CLOSED, _free, close_k, rbd_error_row
from .dynamics import RANK_TOL, _sizes_ok
from .kinematics import kinematics
from .layout import CI_M, CI_NC, O_B, O_C, O_COD, O_G, O_J, O_Y, offsets
from .packing import constraint_set
from .solve import lstsq_min_norm

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
        self._info = np.zeros(3)
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
            row = int(info[2])
            k = next(i for i, s in enumerate(cs.rows) if s.start <= row < s.stop)
            name = cs.constraints[k].name
            raise LoopsNotClosed(f"the loops cannot be closed (out of reach, or singular on the way): constraint "
                                 f"{name!r} keeps an error of {abs(rbd_error_row(cs, row)):.3g} in "
                                 f"{cs.names[row].split('/')[-1]} (‖e‖ = {info[0]:.3g} after "
                                 f"{int(info[1])} Gauss-Newton steps)", name)
        if st != OK:
            check(st, "v", args=(("q", q),))
        return info[0]

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
