"""The control-loop API (public, hand-written): g, b and H in one compiled call
into preallocated outputs in the caller's DOF order (the kernel is
``algorithms/compensation.py``'s, registered in ``registry.OTHER_KERNELS``), and
the URDF joint friction law."""
from __future__ import annotations

from typing import TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..algorithms.common import BAD_DOFS
from ..algorithms.compensation import compensation_k
from ..model.checks import real_number
from ..model.model import Model
from .checked import Array, check, convert, describe, not_model, out_array, vec

_F8 = np.dtype(np.float64)
_ND = np.ndarray


def _plain(x: object, shape: tuple[int, ...]) -> TypeGuard[Array]:
    """True for a float64 ndarray of exactly this shape, where the kernel itself
    checks the values (NaN/inf) and reports a status.  (Byte order: the dispatcher
    refuses a byte-swapped array, see _numba_compat; it is then converted by vec.)"""
    return x.__class__ is _ND and x.dtype is _F8 and x.shape == shape


def dof_indices(model: Model, dofs: ArrayLike | None = None) -> NDArray[np.int64]:
    """``dofs`` (velocity indices, None: all in model order) checked, as an int64 array."""
    not_model(model)
    if dofs is None:
        return np.arange(model.nv, dtype=np.int64)
    arr = np.asarray(dofs)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"dofs: expected a 1-D sequence of velocity indices, got {describe(dofs)}")
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= model.nv))
    if bad.size:
        raise ValueError(f"dofs[{int(bad[0])}] = {int(arr[bad[0]])} is not a velocity index "
                         f"(0..{model.nv - 1})")
    return arr


def compensation_into(model: Model, q: ArrayLike, v: ArrayLike, dofs: NDArray[np.int64], g: Array,
                      b: Array | None = None, H: Array | None = None) -> None:
    """g(q), and optionally the bias b(q, v) = C(q, v) v + g(q) and H(q), restricted
    to and ordered by the velocity indices ``dofs`` (an int64 array from
    :func:`dof_indices`; an index out of range raises ValueError), written
    into preallocated float64 arrays: ``g`` and ``b`` of len(dofs) elements,
    ``H`` of len(dofs)**2 (flat or square, row-major).  One compiled call for
    a control loop; single states only.  ``b`` / ``H`` None: not computed.
    Raises ValueError for non-finite q or v, or a non-finite result (the
    outputs are then not to be used)."""
    try:
        q = q if _plain(q, model._sq) else vec(q, model.nq, "q")
    except AttributeError:
        not_model(model)
        raise
    v = v if _plain(v, model._sv) else vec(v, model.nv, "v")
    if q.ndim != 1 or v.ndim != 1:
        raise ValueError("compensation_into: single states only (q and v 1-D)")
    if not (dofs.__class__ is _ND and dofs.dtype == np.int64 and dofs.ndim == 1):
        raise ValueError(f"dofs: expected an int64 array (see dof_indices), got {describe(dofs)}")
    m = dofs.shape[0]
    g = out_array(g, m, "g")
    bb = g if b is None else out_array(b, m, "b")
    hh = g if H is None else out_array(H, m * m, "H")
    st = compensation_k(model.md_k, model.workspace(), q, v, dofs, b is not None, H is not None,
                        g, bb, hh)
    if st:
        if st == BAD_DOFS:
            dof_indices(model, dofs)        # raises, naming the first bad index
        check(st, "v", args=(("q", q), ("v", v)))


def friction(model: Model, v: ArrayLike, velocity_eps: float = 1e-3) -> Array:
    """Joint friction torques τ_f = damping · q̇ + friction · tanh(q̇ / velocity_eps).

    ``damping`` (viscous, N·m·s/rad or N·s/m) and ``friction`` (Coulomb, N·m
    or N) are the URDF's ``<dynamics>`` values (``model.damping``,
    ``model.friction``).  The Coulomb term is smoothed: tanh(q̇ / eps) instead
    of sign(q̇), so it is continuous through q̇ = 0 and reaches 76 % of its
    magnitude at |q̇| = eps (rad/s or m/s), 99.9 % at 4 eps.  ``v``: (nv,) or
    an (N, nv) batch.  The torque *opposes* motion as seen by the motor: add it
    to the inverse-dynamics torque to compensate friction.  Not part of
    :func:`rnea` or :func:`bias`.  Raises ValueError naming a bad argument, or
    "v: the result is not finite" when v is so large that τ_f overflows."""
    not_model(model)
    nv = model.nv
    eps = real_number(velocity_eps, "velocity_eps", "a number > 0 (rad/s)")
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"velocity_eps: expected a finite number > 0 (rad/s), got {eps}")
    x = convert(v, "v", f"{nv} numbers (or an (N, {nv}) batch)")
    if x.shape[-1:] != (nv,) or x.ndim > 2:
        raise ValueError(f"v: expected shape ({nv},) or (N, {nv}), got {describe(x)}")
    if not np.all(np.isfinite(x)):
        raise ValueError("v: expected finite numbers, got NaN or inf")
    with np.errstate(over="ignore", invalid="ignore"):
        tau = model.damping * x + model.friction * np.tanh(x / eps)
    if not np.all(np.isfinite(tau)):
        big = float(np.max(np.abs(x)))
        raise ValueError(f"v: the result is not finite: the v values (up to {big:.3g} in magnitude) are too "
                         "large for this model's damping (overflow)")
    return tau
