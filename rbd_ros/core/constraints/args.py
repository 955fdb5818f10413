"""Argument checks and kernel statuses -> errors for the constraint functions.

The same rules and messages as the tree functions' (``core/api.py``), restated here
because this subpackage sits below ``model`` (the URDF parser reads constraints):
importing ``core.api`` (which imports the model) would close an import cycle.
"""
from __future__ import annotations

import numpy as np

from ..algorithms.common import BAD_A, BAD_Q, BAD_QUAT, BAD_RESULT, BAD_SHAPE, BAD_V, OK, SINGULAR

_F8 = np.dtype(np.float64)
_ND = np.ndarray


def describe(x) -> str:
    """A short description of an argument for error messages."""
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def not_model(model) -> None:
    """TypeError unless ``model`` is a Model (what the kernels read: md_k, constraints)."""
    if not (hasattr(model, "md_k") and hasattr(model, "constraints") and hasattr(model, "workspace")):
        raise TypeError(f"model: expected an rbd_ros.core.Model (Model.from_urdf), got {describe(model)}")


def vec(x, n: int, name: str) -> np.ndarray:
    """``x`` as a plain float64 array of shape (n,) (a copy where needed); ValueError naming
    ``name`` for anything but n real numbers."""
    if not (type(x) is _ND and x.dtype is _F8 and x.flags.carray):
        try:
            arr = np.asarray(x)
            if arr.dtype.kind not in "iuf":
                raise TypeError
            x = np.array(arr, dtype=np.float64, order="C", copy=True)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected {n} numbers as real numbers, got {describe(x)}") from None
    if x.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},) (single states only), got {describe(x)}")
    return x


def out_array(x, size: int, name: str) -> np.ndarray:
    """``x`` as a writable, C-contiguous float64 array of ``size`` elements, flat (a view)."""
    if not (type(x) is _ND and x.dtype is _F8 and x.flags.carray and x.flags.writeable and x.size == size):
        raise ValueError(f"{name}: expected a writable C-contiguous float64 numpy array of {size} "
                         f"elements, got {describe(x)}")
    return x.reshape(size)


_WHAT = {BAD_Q: "q", BAD_V: "v"}


def check(status, third="a", args=()) -> None:
    """Raise the ValueError for a kernel status (``args``: (name, array) of the call, to
    name the largest when the result overflows)."""
    if status == OK:
        return
    if status == BAD_SHAPE:
        raise ValueError("an argument's length does not fit the model or the constraints")
    if status == BAD_QUAT:
        raise ValueError("q: a free-flyer quaternion (qx qy qz qw) has zero norm")
    if status == SINGULAR:
        raise ValueError("the joint-space inertia matrix H is singular or ill-conditioned at this q: a joint "
                         "that moves no mass (a massless leaf link) or inertias of very different magnitudes")
    if status == BAD_RESULT:
        name, big = "arguments", 0.0
        for n, x in args:
            x = np.asarray(x, dtype=float)
            mx = float(np.max(np.abs(x))) if x.size else 0.0
            if mx > big:
                name, big = n, mx
        raise ValueError(f"{name}: the result is not finite: the {name} values (up to {big:.3g} in magnitude) "
                         "are too large for this model (overflow), or the configuration is singular")
    name = _WHAT.get(status, third if status == BAD_A else "arguments")
    raise ValueError(f"{name}: expected finite numbers, got NaN or inf")
