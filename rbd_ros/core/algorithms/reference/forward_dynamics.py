"""Forward dynamics through the joint-space inertia matrix (RBDA §6.1, spatial_v2's
``FDcrb.m``):

    [H, C] = HandC(q, qd, f_ext)
    qdd    = H^-1 (tau - C)          (LᵀDL with branch-induced sparsity)
"""
import numpy as np

from .crba import crba
from .ltdl import dof_parents, ltdl, ltdl_solve
from .rnea import _f_body, id_sweeps


def hand_c(model, q, v, f_ext=None, f_ext_frame="local"):
    """(H, C) as spatial_v2's HandC: H(q) and the bias C = ID(q, v, 0, f_ext)."""
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    C = id_sweeps(model, q, v, np.zeros(model.nv), _f_body(model, q, f_ext, f_ext_frame))[0]
    return crba(model, q), C


def forward_dynamics(model, q, v, tau, f_ext=None, f_ext_frame="local"):
    """qdd (same arguments as ``rbd_ros.core.forward_dynamics``, single states)."""
    H, C = hand_c(model, q, v, f_ext, f_ext_frame)
    lam = dof_parents(model)
    return ltdl_solve(model, ltdl(model, H, lam), np.asarray(tau, dtype=float) - C, lam)
