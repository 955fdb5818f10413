"""LᵀDL factorisation of H with branch-induced sparsity, and its solve (public).

Hand-written public functions (their arguments are matrices, not states); the
kernels are ``algorithms/ltdl.py``'s, registered in ``registry.OTHER_KERNELS``.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..algorithms.ltdl import ltdl_k, ltdl_solve_k
from ..model.model import Model
from .checked import Array, convert, describe, not_model, vec


def ltdl(model: Model, H: ArrayLike) -> Array:
    """Factorise H = Lᵀ D L exploiting branch-induced sparsity (only ancestors
    are visited).  Returns one matrix: D on the diagonal, L's off-diagonal
    entries below it, zeros above.  Use with :func:`ltdl_solve`; :func:`ltdl_unpack` gives
    (L, D).  Batches (N, nv, nv) are factorised one by one.  H must be finite
    and positive definite: a pivot d_k <= 1e-10 H_kk counts as singular
    (``algorithms/ltdl.py``)."""
    not_model(model)
    nv = model.nv
    H = convert(H, "H", f"an ({nv}, {nv}) symmetric positive-definite matrix")
    if H.shape[-2:] != (nv, nv) or H.ndim not in (2, 3):
        raise ValueError(f"H: expected shape ({nv}, {nv}) or (N, {nv}, {nv}), got {describe(H)}")
    LD = H.copy()
    for k, M in enumerate(LD.reshape((-1, nv, nv))):
        if not ltdl_k(model.md_k, M) or not np.isfinite(M).all():
            where = "" if LD.ndim == 2 else f" (batch row {k})"
            raise ValueError(f"H{where}: expected a finite symmetric positive-definite matrix "
                             "(non-finite entries, or singular to working precision)")
    return np.tril(LD)


def ltdl_solve(model: Model, LD: ArrayLike, b: ArrayLike) -> Array:
    """Solve H x = b given ``LD = ltdl(model, H)``; b is (nv,) or (m, nv) right-hand sides
    (with a batch of factors, (N, nv)).  Raises ValueError for non-finite LD
    or b, an LD whose diagonal D is not positive, or a non-finite result
    (b too large)."""
    not_model(model)
    nv = model.nv
    LD = convert(LD, "LD", f"the ({nv}, {nv}) result of ltdl()")
    b = vec(b, nv, "b")
    if LD.ndim == 2:
        if LD.shape != (nv, nv):
            raise ValueError(f"LD: expected shape ({nv}, {nv}), got {describe(LD)}")
    elif LD.shape[1:] != (nv, nv) or b.shape != (LD.shape[0], nv):
        raise ValueError(f"LD and b: expected (N, {nv}, {nv}) and (N, {nv}), got {LD.shape} and {b.shape}")
    batch = LD.ndim == 3
    for name, x in (("LD", LD), ("b", b)):
        ok = np.isfinite(x.reshape((x.shape[0], -1)) if batch else x.reshape(1, -1)).all(axis=1)
        if not ok.all():
            where = f" (batch row {int(np.flatnonzero(~ok)[0])})" if batch else ""
            raise ValueError(f"{name}{where}: expected finite numbers, got NaN or inf")
    if not (np.diagonal(LD, axis1=-2, axis2=-1) > 0.0).all():
        raise ValueError("LD: expected the result of ltdl() (a positive diagonal D), got a diagonal entry <= 0")
    if not batch:
        x = np.array(b, copy=True).reshape((-1, nv))
        ltdl_solve_k(model.md_k, LD, x)
        x = x.reshape(b.shape)
    else:
        x = b.copy()
        for n in range(LD.shape[0]):
            ltdl_solve_k(model.md_k, LD[n], x[n:n + 1])
    if not np.isfinite(x).all():
        raise ValueError("b: the result is not finite: the b values are too large for this factor (overflow)")
    return x


def ltdl_unpack(LD: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(L, D) from the packed factor: H = Lᵀ diag(D) L, L unit lower triangular."""
    LD = np.asarray(LD)
    L = np.tril(LD, -1) + np.eye(LD.shape[-1])
    return L, np.diagonal(LD, axis1=-2, axis2=-1).copy()
