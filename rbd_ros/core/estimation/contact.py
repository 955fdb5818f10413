"""From external joint torques to contact: the wrench at a frame, collision detection.

``external_wrench`` solves τ_ext = J_cᵀ F for the wrench F at a frame in the
least-squares sense (J_c: ``frame_jacobian``) and reports what it cannot
explain, r = τ_ext − J_cᵀ F: a contact elsewhere, or not a point contact at
that frame (Haddadin, De Luca, Albu-Schäffer 2017, "Robot Collisions", §V).

``CollisionDetector`` turns the per-joint ratios |τ_ext| / threshold into a
flag with a debounce (the ratio must exceed 1 for ``debounce`` s before the
flag rises) and a hysteresis (it falls once every ratio stays below
``release`` for ``debounce`` s); the most distal joint above its threshold
bounds the link in contact (isolation), the largest ratio is reported.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..algorithms import contact as _k
from ..calls.checked import convert, describe, not_model
from ..calls.public import frame_jacobian_into
from ..model.checks import real_array, real_number

_F8 = np.dtype(np.float64)       # native byte order (x.dtype == _F8 is False for '>f8')


class WrenchEstimate(NamedTuple):
    """``wrench`` (6,) [fx fy fz tx ty tz] at the frame's origin, in the reference's axes
    (``"world"``: moment about the world origin); ``residual`` (nv,) τ_ext − Jᵀ wrench,
    what no wrench at this frame explains; ``rank`` of J (< 6: some wrench components
    do not reach the joints and are returned as 0, the minimum-norm solution)."""
    wrench: np.ndarray
    residual: np.ndarray
    rank: int


def external_wrench(model, q, tau_ext, frame, reference="local_world_aligned") -> WrenchEstimate:
    """The least-squares wrench at URDF link ``frame`` that explains the external
    joint torques ``tau_ext`` (nv,): τ_ext = J(q)ᵀ F, J = ``frame_jacobian(model, q,
    frame, reference)``; see :class:`WrenchEstimate`.  Raises ValueError naming a
    bad argument."""
    not_model(model)
    tau = convert(tau_ext, "tau_ext", f"{model.nv} numbers")
    if tau.shape != (model.nv,):
        raise ValueError(f"tau_ext: expected shape ({model.nv},), got {describe(tau)}")
    if not np.all(np.isfinite(tau)):
        raise ValueError("tau_ext: expected finite numbers, got NaN or inf")
    F, res = np.empty(6), np.empty(model.nv)
    rank = external_wrench_into(model, q, tau, frame, reference, F, res)
    return WrenchEstimate(F, res, rank)


def external_wrench_into(model, q, tau_ext, frame, reference, wrench, residual=None, jacobian=None) -> int:
    """:func:`external_wrench` into preallocated float64 arrays: ``wrench`` (6,),
    ``residual`` (nv,) or None, ``jacobian`` (6, nv) scratch or None (then allocated);
    returns J's rank.  ``tau_ext`` must be finite (nv,) float64 (not checked: a control
    loop's own buffer; :func:`external_wrench` checks).  Raises ValueError naming a bad
    ``q``, ``frame`` or ``reference``; TypeError for a non-Model ``model``."""
    not_model(model)
    nv = model.nv
    J = np.empty((6, nv)) if jacobian is None else jacobian
    frame_jacobian_into(model, q, frame, reference, J)
    res = np.empty(nv) if residual is None else residual
    tau = tau_ext if _plain(tau_ext) else np.array(tau_ext, dtype=np.float64)
    return int(_k.wrench_lstsq_k(J, tau, wrench, res))


def _plain(x) -> bool:
    """A 1-D array of the one type the kernels are compiled for (C-contiguous, aligned,
    writable, native float64): anything else is copied, never compiled for."""
    return type(x) is np.ndarray and x.dtype == _F8 and x.ndim == 1 and x.flags.c_contiguous \
        and x.flags.aligned and x.flags.writeable


class CollisionState(NamedTuple):
    """One :meth:`CollisionDetector.update`'s result."""
    detected: bool          # the (debounced) collision flag
    ratios: np.ndarray      # (n,) |τ_ext| / threshold per joint (the detector's own buffer)
    worst: int              # the joint with the largest ratio
    distal: int             # the last joint (highest index) above its threshold, -1 if none
    onset: float            # stamp of the first sample of the current detection (nan if none)


class CollisionDetector:
    """Debounced, hysteretic collision flag from external joint torques.

    ``thresholds`` (n,) N m or N, > 0; ``debounce`` s (>= 0) a condition must hold
    before the flag changes; ``release`` in (0, 1]: the flag falls once every ratio
    is below it.  ``update(t, tau_ext)`` -> :class:`CollisionState`; non-finite
    ``tau_ext`` counts as no evidence either way (the flag keeps its value)."""

    def __init__(self, thresholds, debounce=0.0, release=0.8):
        th = real_array(thresholds, "thresholds", "one threshold per joint (N m or N)").reshape(-1)
        if th.size == 0 or not np.all(np.isfinite(th) & (th > 0)):
            raise ValueError(f"thresholds: expected finite numbers > 0 (N m or N), got {th.tolist()}")
        self.debounce = real_number(debounce, "debounce", "seconds >= 0")
        if not (math.isfinite(self.debounce) and self.debounce >= 0):
            raise ValueError(f"debounce: expected a finite number of seconds >= 0, got {debounce!r}")
        self.release = real_number(release, "release", "a ratio in (0, 1]")
        if not 0 < self.release <= 1:
            raise ValueError(f"release: expected a ratio in (0, 1], got {release!r}")
        self.thresholds = th
        self._ratios = np.zeros(th.size)
        self.reset()

    def reset(self) -> None:
        """Flag down, no pending change."""
        self.detected = False
        self.onset = math.nan
        self._since: float | None = None    # stamp since which the opposite condition holds

    def update(self, t: float, tau_ext) -> CollisionState:
        r = self._ratios
        tau = tau_ext if _plain(tau_ext) else np.array(tau_ext, dtype=np.float64).reshape(-1)
        if tau.shape[0] != r.shape[0]:
            raise ValueError(f"tau_ext: expected {r.shape[0]} numbers (one per threshold), got {tau.shape[0]}")
        finite, above, below, worst, distal = _k.collision_ratios_k(tau, self.thresholds, self.release, r)
        if finite:
            change = above if not self.detected else below
            if not change:
                self._since = None
            else:
                if self._since is None:
                    self._since = t
                if t - self._since >= self.debounce - 1e-9:     # (stamps are ns: no float quibbles)
                    self.detected = not self.detected
                    self.onset = self._since if self.detected else math.nan
                    self._since = None
        else:
            worst, distal = 0, -1
        return CollisionState(self.detected, r, worst, distal, self.onset)
