"""Compiled steps of rbd_ros.core.estimation.contact: the least-squares wrench behind external joint
torques, and the per-joint collision ratios.  Both take and return plain arrays."""
import math

import numpy as np
from numba import njit

from .spatial import ENTRY


@njit(**ENTRY)
def wrench_lstsq_k(J, tau, F, res):
    """F (6,) = the minimum-norm least-squares solution of Jᵀ F = tau (J 6 x nv), singular
    values below eps · max(6, nv) · the largest treated as zero (numpy's lstsq default);
    res (nv,) = tau − Jᵀ F.  Returns the rank of J."""
    nv = tau.shape[0]
    A = np.ascontiguousarray(J.T)
    rcond = 2.220446049250313e-16 * max(6, nv)
    x, _, rank, _ = np.linalg.lstsq(A, tau, rcond)
    for i in range(6):
        F[i] = x[i]
    for j in range(nv):
        s = tau[j]
        for i in range(6):
            s -= J[i, j] * x[i]
        res[j] = s
    return rank


@njit(**ENTRY)
def collision_ratios_k(tau, thresholds, release, r):
    """r = |tau| / thresholds.  Returns (finite, any above 1, every ratio below
    ``release``, worst: the index of the largest ratio, distal: the last index above 1
    or -1)."""
    finite = True
    above = False
    below = True
    worst = 0
    distal = -1
    for i in range(r.shape[0]):
        x = abs(tau[i]) / thresholds[i]
        r[i] = x
        if not math.isfinite(x):
            finite = False
        if x > 1.0:
            above = True
            distal = i
        if not x < release:
            below = False
        if x > r[worst]:
            worst = i
    return finite, above, below, worst, distal

