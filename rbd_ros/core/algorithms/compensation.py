"""Gravity, bias and joint-space inertia for a control loop, in one compiled call.

    g = RNEA(q, 0, 0)           gravity torques
    b = RNEA(q, qd, 0)          bias torques C(q, qd) qd + g(q)
    H = CRBA(q)                 joint-space inertia
then gathered into the caller's order of velocity indices ``dofs``:

    g_out[k] = g[dofs[k]],  b_out[k] = b[dofs[k]],  H_out[k*m + l] = H[dofs[k], dofs[l]]

(H_out flat, row-major, m = len(dofs)), with one finiteness check: one
compiled call instead of three calls and their reordering.  Allocates nothing: g/b and H are computed into
the workspace's vector and matrix regions (which RNEA and CRBA do not use).
"""
import numpy as np
from numba import njit

from .common import BAD_DOFS, BAD_RESULT, BAD_SHAPE, OK, all_finite, no_fext
from .crba import crba_into
from .layout import H_NV, R_MAT, R_VEC, offsets
from .rnea import rnea_into
from .spatial import ENTRY, INLINE
from .views import borrow, contiguous


@njit(**INLINE)
def gather_finite(x, dofs, out):
    """out[k] = x[dofs[k]]; True if every gathered value is finite."""
    for k in range(dofs.shape[0]):
        out[k] = x[dofs[k]]
    return all_finite(out)


@njit(**ENTRY)
def compensation_k(md, ws, q, v, dofs, want_b, want_h, g_out, b_out, h_out):
    """g (and b if want_b, H if want_h) gathered by ``dofs`` into g_out, b_out, h_out.
    Returns a status code."""
    md, ws, dofs, g_out, b_out, h_out = borrow(md), borrow(ws), borrow(dofs), borrow(g_out), borrow(b_out), \
        borrow(h_out)       # no reference counts below
    mi = md.view(np.int64)
    nv = mi[H_NV]
    m = dofs.shape[0]
    if (v.shape[0] != nv or g_out.shape[0] != m or (want_b and b_out.shape[0] != m)
            or (want_h and h_out.shape[0] != m * m)):
        return BAD_SHAPE                  # q and the workspace: rnea_into checks them
    for k in range(m):
        if dofs[k] < 0 or dofs[k] >= nv:
            return BAD_DOFS
    offs = offsets(md)
    tmp = contiguous(ws, offs[R_VEC], (nv,))    # g, then b, in model order
    st = rnea_into(md, ws, q, q, q, no_fext(ws), bool(0), bool(0), bool(0), tmp)  # plain booleans: see rnea.py
    if st != OK:
        return st
    if not gather_finite(tmp, dofs, g_out):
        return BAD_RESULT
    if want_b:
        st = rnea_into(md, ws, q, v, v, no_fext(ws), bool(0), bool(1), bool(0), tmp)
        if st != OK:
            return st
        if not gather_finite(tmp, dofs, b_out):
            return BAD_RESULT
    if want_h:
        H = contiguous(ws, offs[R_MAT], (nv, nv))
        st = crba_into(md, ws, q, H)
        if st != OK:
            return st
        for k in range(m):
            dk = dofs[k]
            for l in range(m):
                h_out[k * m + l] = H[dk, dofs[l]]
        if not all_finite(h_out):
            return BAD_RESULT
    return OK
