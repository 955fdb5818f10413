"""Coriolis matrix C(q, v) of the Christoffel-consistent factorisation
(Echeandia & Wensing 2021): C v = bias - gravity and Ḣ - 2C skew-symmetric.

For every body k, with J_k its world-frame Jacobian (columns S_j, in world
coordinates, of the joints j on the path root..k, folded as in ``jcalc``),
V_k = J_k v its world velocity and I_k its world-frame inertia,

    J̇_k columns: Ṡ_j = V_j × S_j          (S_j moves with body j)
    B_k = ½ (V_k ×* I_k - I_k V_k × + (I_k V_k) x̄),   (h x̄) y := y ×* h
    C   = Σ_k J_kᵀ (I_k J̇_k + B_k J_k)

The kernel regroups this sum over composite inertias I^c, B^c (the same
numbers); a mimic joint's folded S makes it C = Gᵀ C_full G.
"""
import numpy as np

from .jcalc import jcalc
from .spatial import crf, crm, icrf
from .tree import bodies


def coriolis_matrix(model, q, v):
    """C(q, v) (same arguments as ``rbd_ros.core.coriolis_matrix``, single states)."""
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    tree = bodies(model)
    nv = model.nv
    X0, J, Jd, V = [], [], [], []
    C = np.zeros((nv, nv))
    for b in tree:
        XJ, S = jcalc(b, q)
        Xi = XJ @ b.Xtree if b.parent < 0 else XJ @ b.Xtree @ X0[b.parent]
        X0.append(Xi)
        Sw = np.linalg.inv(Xi) @ S                       # S in world coordinates
        Ji = np.zeros((6, nv)) if b.parent < 0 else J[b.parent].copy()
        Ji[:, b.dofs] += Sw
        Vi = Ji @ v
        Jdi = np.zeros((6, nv)) if b.parent < 0 else Jd[b.parent].copy()
        Jdi[:, b.dofs] += crm(Vi) @ Sw
        J.append(Ji), Jd.append(Jdi), V.append(Vi)
        I = Xi.T @ b.I @ Xi                              # world-frame inertia
        B = 0.5 * (crf(Vi) @ I - I @ crm(Vi) + icrf(I @ Vi))
        C += Ji.T @ (I @ Jdi + B @ Ji)
    return C


def coriolis_transpose_v(model, q, v):
    """C(q, v)ᵀ v (same arguments as ``rbd_ros.core.coriolis_transpose_v``)."""
    return coriolis_matrix(model, q, v).T @ np.asarray(v, dtype=float)
