"""Reading numbers from users: real numbers only, named in every error.

Strings ("1.5"), booleans (True), complex numbers and None are refused, not
converted: a number that arrives as anything else is a mistake upstream, and
numpy would otherwise turn "1.5" into 1.5, True into 1.0 and drop an
imaginary part silently.
"""
from __future__ import annotations

import numbers

import numpy as np


def _describe(x) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:100]


def real_number(x, name: str, expected: str) -> float:
    """``x`` as a float: an int or float (numpy's too), not a bool, str or complex."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ValueError(f"{name}: expected {expected}, got {_describe(x)}")
    return float(x)


def real_array(x, name: str, expected: str) -> np.ndarray:
    """``x`` as a new float64 array: a sequence or array of ints and floats only."""
    if isinstance(x, (str, bytes)):
        raise ValueError(f"{name}: expected {expected}, got {_describe(x)}")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {expected}, got {_describe(x)}") from None
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name}: expected {expected} as real numbers, got {_describe(x)}")
    return np.array(arr, dtype=np.float64)


def bounded(values: np.ndarray, bound: float, name: str, unit: str = "") -> np.ndarray:
    """``values`` if all are finite with |value| <= bound, else ValueError
    ``"<name>: expected finite numbers of magnitude <= bound<unit>, got [...]"``."""
    if not np.all(np.abs(values) <= bound):
        raise ValueError(f"{name}: expected finite numbers of magnitude <= {bound:g}{unit}, "
                         f"got {np.asarray(values).tolist()}")
    return values
