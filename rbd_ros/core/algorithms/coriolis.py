"""Coriolis matrix C(q, v): C v = bias - gravity and Hdot - 2 C skew-symmetric.

The Christoffel-consistent factorisation of Echeandia & Wensing (2021),
everything in world coordinates.  For body k with world velocity V_k and
inertia I_k,

    B_k = ½ (V_k x* I_k - I_k V_k x + (I_k V_k) x̄),   (h x̄) y := y x* h

and with composites I^c_i = Σ_{k in subtree(i)} I_k, B^c_i likewise, for j an
ancestor of i (or j = i):

    C_ji = S_j^T (I^c_i Ṡ_i + B^c_i S_i)
    C_ij = Ṡ_j^T I^c_i S_i + S_j^T B^c_i^T S_i

where S, Ṡ = V x S are the joints' motion subspaces in world coordinates.
Mimic joints fold in as C = G^T C_full G.  The kernel's passes:

    forward pass, i = 1..N:  X_i, X0_i, V_i = V_λ + S_i qd_i, S_i, Ṡ_i, I_i, B_i (world)
    backward pass, i = N..1: I^c_λ += I^c_i,  B^c_λ += B^c_i
    then, for each body i and each ancestor j (or j = i): C_ji, C_ij as above

(twin: ``reference/coriolis.py``).
"""
import numpy as np
from numba import njit

from .common import (
    BAD_QUAT,
    BAD_SHAPE,
    OK,
    S_column,
    check_state,
    dot6,
    fill,
    fill_matrix,
    finite_result,
    jcalc,
    joint_velocity,
    ncols,
    world_transform,
)
from .layout import H_NV, R_END, R_MAT, bodies, cor_slots, offsets, rnea_slots, scratch, vector, world_slots
from .spatial import ENTRY, JIT, I_to_mat6, Xinv_m, XT_M_X_add, crm
from .views import borrow, contiguous


@njit(**JIT)
def _mat6_mul(M, x, transpose, out):
    """out = M x (or M^T x) for a 6x6 M."""
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += (M[k, r] if transpose else M[r, k]) * x[k]
        out[r] = s


@njit(**JIT)
def _body_matrices(B, i, X0i, V, S, Sd, I6, Bk, t):
    """Body i's world velocity V[i] = V_λ + X0_i^-1 S_i qd_i (its S_i qd_i in V[i] on
    entry), S_i, Ṡ_i = V_i x S_i (columns), I_i = X0_i^T I_i^body X0_i and
    B_i = ½ (V_i x* I_i - I_i V_i x + (I_i V_i) x̄) (6 x 6, world).  ``t``: 132 numbers."""
    vJ = vector(t, 0, 6)
    Xinv_m(X0i, V[i], vJ)
    p = B.parent[i]
    for k in range(6):
        V[i, k] = vJ[k] + (V[p, k] if p >= 0 else 0.0)
    col = vector(t, 6, 6)
    for c in range(ncols(B, i)):
        S_column(B, i, c, col)
        Xinv_m(X0i, col, S[c])
        crm(V[i], S[c], Sd[c])
    Ibody = contiguous(t, 12, (6, 6))
    I_to_mat6(B.I[i], Ibody)
    fill_matrix(I6, 0.0)
    XT_M_X_add(X0i, Ibody, vector(t, 48, 36), I6)
    # B = ½ (V x* I - I V x + (I V) x̄);  V x* = -(V x)^T, the columns of V x are V x e_c
    cm = contiguous(t, 84, (6, 6))
    e = vector(t, 120, 6)
    fill(e, 0.0)
    for c in range(6):
        e[c] = 1.0
        crm(V[i], e, cm[:, c])
        e[c] = 0.0
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s -= cm[k, r] * I6[k, c] + I6[r, k] * cm[k, c]
            Bk[r, c] = 0.5 * s
    # (h x̄) with h = I V = [n; f]:  [[-[n]x, -[f]x], [-[f]x, 0]]
    h = vector(t, 126, 6)
    _mat6_mul(I6, V[i], bool(0), h)
    for (r, c, val) in ((0, 1, h[2]), (0, 2, -h[1]), (1, 0, -h[2]), (1, 2, h[0]), (2, 0, h[1]), (2, 1, -h[0])):
        Bk[r, c] += 0.5 * val
    for (r, c, val) in ((0, 1, h[5]), (0, 2, -h[4]), (1, 0, -h[5]), (1, 2, h[3]), (2, 0, h[4]), (2, 1, -h[3])):
        Bk[r, 3 + c] += 0.5 * val
        Bk[3 + r, c] += 0.5 * val


@njit(**JIT)
def _add_entries(B, i, S, Sd, Ic, Bc, C, t):
    """C_ji, C_ij of body i's DOFs with its own and each ancestor j's (module docstring)."""
    f1 = vector(t, 0, 6)
    f2 = vector(t, 6, 6)
    f3 = vector(t, 12, 6)
    tmp = vector(t, 18, 6)
    mu = B.mult[i]
    for col in range(ncols(B, i)):
        _mat6_mul(Ic[i], Sd[i, col], bool(0), f1)       # f1 = I^c Ṡ + B^c S
        _mat6_mul(Bc[i], S[i, col], bool(0), tmp)
        for k in range(6):
            f1[k] += tmp[k]
        _mat6_mul(Ic[i], S[i, col], bool(0), f2)        # f2 = I^c S
        _mat6_mul(Bc[i], S[i, col], bool(1), f3)        # f3 = B^cT S
        di = B.vi[i] + col
        for c2 in range(ncols(B, i)):
            C[B.vi[i] + c2, di] += mu * mu * dot6(S[i, c2], f1)
        j = B.parent[i]
        while j >= 0:
            mm = mu * B.mult[j]
            for c2 in range(ncols(B, j)):
                dj = B.vi[j] + c2
                C[dj, di] += mm * dot6(S[j, c2], f1)
                C[di, dj] += mm * (dot6(Sd[j, c2], f2) + dot6(S[j, c2], f3))
            j = B.parent[j]


@njit(**ENTRY)
def coriolis_into(md, ws, q, qd, C):
    """C(q, qd) into ``C`` (nv x nv).  Returns a status code (BAD_SHAPE: see rnea_into)."""
    md, ws, q, qd, C = borrow(md), borrow(ws), borrow(q), borrow(qd), borrow(C)   # no reference counts below
    B = bodies(md)
    nv = md.view(np.int64)[H_NV]
    st = check_state(md, ws, q, qd, qd, bool(1), bool(0), C.shape[0] == nv and C.shape[1] == nv)
    if st != OK:
        return st
    offs = offsets(md)
    X, V, _, _ = rnea_slots(ws, offs, B.n)       # X_i; V_i (world)
    X0 = world_slots(ws, offs, B.n)
    S, Sd, Ic, Bc = cor_slots(ws, offs, B.n)     # world: S_i, Ṡ_i columns; I_i, B_i, then composites
    t = scratch(ws, offs)

    # ---- forward pass: X_i, X0_i, V_i, S_i, Ṡ_i, I_i, B_i
    for i in range(B.n):
        if not jcalc(B, i, q, X[i]):
            return BAD_QUAT
        world_transform(B, i, X, X0)
        joint_velocity(B, i, qd, V[i])
        _body_matrices(B, i, X0[i], V, S[i], Sd[i], Ic[i], Bc[i], t)

    # ---- backward pass: the composites
    for i in range(B.n - 1, -1, -1):
        p = B.parent[i]
        if p >= 0:
            for r in range(6):
                for c in range(6):
                    Ic[p, r, c] += Ic[i, r, c]
                    Bc[p, r, c] += Bc[i, r, c]
    fill_matrix(C, 0.0)
    for i in range(B.n):
        _add_entries(B, i, S, Sd, Ic, Bc, C, t)
    return finite_result(OK, C)     # BAD_RESULT if finite arguments overflowed


coriolis_k = coriolis_into   # the entry point (no wrapper kernel: see aba.aba_k)


@njit(**ENTRY)
def coriolis_transpose_v_k(md, ws, q, v, out):
    """out = C(q, v)ᵀ v, exactly (the momentum observer's term: along any motion
    d/dt (H v) = tau + tau_ext + Cᵀ v - g, because Ḣ = C + Cᵀ).  C is built in the
    workspace's matrix region (which coriolis_into does not use), then multiplied."""
    md, ws, v, out = borrow(md), borrow(ws), borrow(v), borrow(out)
    nv = md.view(np.int64)[H_NV]
    if out.shape[0] != nv or v.shape[0] != nv or ws.shape[0] < offsets(md)[R_END]:
        return BAD_SHAPE        # q: coriolis_into checks it
    C = contiguous(ws, offsets(md)[R_MAT], (nv, nv))
    st = coriolis_into(md, ws, q, v, C)
    if st != OK:
        return st
    for j in range(nv):
        s = 0.0
        for i in range(nv):
            s += C[i, j] * v[i]
        out[j] = s
    return finite_result(OK, out)
