"""Forward dynamics through the joint-space inertia matrix (RBDA §6.1; twin:
``reference/forward_dynamics.py``):

    b    = RNEA(q, v, 0, f_ext)      (bias forces, gravity and f_ext included)
    H    = CRBA(q)
    qdd  = H^-1 (tau - b)            (LᵀDL with branch-induced sparsity, RBDA Tables 6.3, 6.4)

Statuses: SINGULAR only for a finite H that the relative pivot test of
``ltdl_factor`` rejects; BAD_RESULT when b, H or qdd overflow (finite but
extreme arguments).
"""
import numpy as np
from numba import njit

from .common import BAD_A, BAD_SHAPE, OK, SINGULAR, all_finite, fext_row, finite_result, no_fext
from .crba import crba_into
from .layout import H_NV, R_MAT, offsets, workspace_size
from .ltdl import ltdl_factor, ltdl_solve_inplace
from .rnea import rnea_into
from .spatial import ENTRY, JIT
from .views import borrow, contiguous


@njit(**ENTRY)
def forward_dynamics_into(md, ws, q, v, tau, fext, fext_world, qdd):
    """qdd = FD(q, v, tau, fext) into ``qdd`` (fext, fext_world: as rnea_into).  Returns
    a status code."""
    md, ws, tau, qdd = borrow(md), borrow(ws), borrow(tau), borrow(qdd)    # no reference counts below
    mi = md.view(np.int64)
    nv = mi[H_NV]
    if tau.shape[0] != nv:      # q, v, qdd, fext and the workspace: rnea_into checks them
        return BAD_SHAPE
    if not all_finite(tau):
        return BAD_A
    # b into qdd, then H (rnea_into and crba_into report a non-finite result: BAD_RESULT)
    st = rnea_into(md, ws, q, v, v, fext, fext_world, bool(1), bool(0), qdd)   # plain booleans: see rnea.py
    if st != OK:
        return st
    H = contiguous(ws, offsets(md)[R_MAT], (nv, nv))
    st = crba_into(md, ws, q, H)
    if st != OK:
        return st
    if not ltdl_factor(mi, H):
        return SINGULAR
    for k in range(nv):
        qdd[k] = tau[k] - qdd[k]
    ltdl_solve_inplace(mi, H, qdd)
    return finite_result(OK, qdd)


# the single-call entry point, with or without f_ext (no wrapper kernel: see aba.aba_k)
forward_dynamics_k = forward_dynamics_into


@njit(**JIT)
def forward_dynamics_batch_k(md, Q, V, T, fext, fext_world, OUT, status, start, stop):
    """Row n of OUT = forward_dynamics(Q[n], V[n], T[n], fext[n]) for start <= n < stop
    (serial, one workspace: ``batch.run_batch`` runs row ranges on threads)."""
    md, Q, V = borrow(md), borrow(Q), borrow(V)
    T, fext, OUT, status = borrow(T), borrow(fext), borrow(OUT), borrow(status)
    ws = np.empty(workspace_size(md))     # owned here (not borrowed): kept alive by its uses
    none = no_fext(ws)
    for n in range(start, stop):
        status[n] = forward_dynamics_into(md, ws, Q[n], V[n], T[n], fext_row(fext, n, none), fext_world, OUT[n])
