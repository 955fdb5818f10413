"""Forward dynamics through the joint-space inertia matrix (RBDA §6.1):

    b    = RNEA(q, v, 0, f_ext)      (bias forces, gravity and f_ext included)
    H    = CRBA(q)
    qdd  = H^-1 (tau - b)            (LᵀDL with branch-induced sparsity)

Statuses: SINGULAR only for a finite H that the relative pivot test of
``ltdl_factor`` rejects; BAD_RESULT when b, H or qdd overflow (finite but
extreme arguments).
"""
import numpy as np
from numba import njit

from .common import BAD_A, BAD_RESULT, BAD_SHAPE, OK, SINGULAR, all_finite
from .crba import crba_into
from .layout import H_NB, H_NMIM, H_NV, H_NVF, R_MAT, region_offsets, workspace_size
from .ltdl import ltdl_factor, ltdl_solve_inplace
from .rnea import rnea_into
from .spatial import JIT


@njit(**JIT)
def forward_dynamics_into(md, ws, q, v, tau, fext, fext_world, out):
    mi = md.view(np.int64)      # the model's integer entries (layout.py)
    if tau.shape[0] != mi[H_NV]:    # q, v, out, fext and the workspace: rnea_into checks them
        return BAD_SHAPE
    if not all_finite(tau):
        return BAD_A
    # rnea_into and crba_into report a non-finite result themselves (BAD_RESULT)
    st = rnea_into(md, ws, q, v, v, fext, fext_world, bool(1), bool(0), out)  # plain booleans: see rnea.py
    if st != OK:
        return st
    nv = mi[H_NV]
    o_mat = region_offsets(mi[H_NB], mi[H_NVF], mi[H_NMIM])[R_MAT]
    H = ws[o_mat:o_mat + nv * nv].reshape((nv, nv))
    st = crba_into(md, ws, q, H)
    if st != OK:
        return st
    if not ltdl_factor(mi, H):
        return SINGULAR
    for k in range(nv):
        out[k] = tau[k] - out[k]
    ltdl_solve_inplace(mi, H, out)
    if not all_finite(out):
        return BAD_RESULT
    return OK


# the single-call entry point, with or without f_ext (no wrapper kernel: see aba.aba_k)
forward_dynamics_k = forward_dynamics_into


@njit(**JIT)
def forward_dynamics_batch_k(md, Q, V, T, fext, fext_world, OUT, status, start, stop):
    """Row n of OUT = forward_dynamics(Q[n], V[n], T[n], fext[n]) for start <= n < stop.
    Serial, one workspace: ``batch.run_batch`` gives each thread one range (the
    kernel releases the GIL, so Python threads run the ranges in parallel; a serial
    kernel is cached by numba, a ``prange`` one would be recompiled in every process)."""
    N = Q.shape[0]
    ws = np.empty(workspace_size(md))
    nofext = ws[:0].reshape((0, 6))
    for n in range(start, stop):
        if fext.shape[0] == N:
            status[n] = forward_dynamics_into(md, ws, Q[n], V[n], T[n], fext[n], fext_world, OUT[n])
        else:
            status[n] = forward_dynamics_into(md, ws, Q[n], V[n], T[n], nofext, fext_world, OUT[n])
