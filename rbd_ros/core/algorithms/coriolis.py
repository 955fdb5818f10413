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
Mimic joints fold in as C = G^T C_full G.
"""
from numba import njit

from ..layout import C_MASS, C_MULT, C_PARENT, H_NB, H_NMIM, H_NVF, W_COR, W_RNEA, W_WORLD, body_row, region_offsets
from ..spatial import JIT, cross_motion, inertia_to_mat6, mat6_xT_X_add, x_motion_inv
from .common import BAD_Q, BAD_QUAT, BAD_V, OK, S_column, all_finite, dof, joint_motion, joint_transform, ncols
from .rnea import world_placement

SW_, SD_, IC_, BC_ = 0, 36, 72, 108     # slots in the Coriolis region
V_ = 12                                 # world velocity kept in the RNEA region's v slot


@njit(**JIT)
def _dot6(a, oa, b, ob):
    s = 0.0
    for k in range(6):
        s += a[oa + k] * b[ob + k]
    return s


@njit(**JIT)
def _mat6_mul_vec(M, om, x, ox, transpose, out, oo):
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += (M[om + 6 * k + r] if transpose else M[om + 6 * r + k]) * x[ox + k]
        out[oo + r] = s


@njit(**JIT)
def coriolis_into(md, ws, q, v, C):
    nb = int(md[H_NB])
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    offs = region_offsets(nb, int(md[H_NVF]), int(md[H_NMIM]))
    oR = offs[0]
    oW = offs[1]
    oC = offs[4]
    t = offs[5]
    # scratch: vJ t..t+6, columns t+6.., 6x6 matrices at t+12 (I), t+48 (crm V), t+84 (tmp), mat6 scratch t+120
    for i in range(nb):
        o = body_row(md, i)
        x = oR + i * W_RNEA
        c = oC + i * W_COR
        if not joint_transform(md, o, q, ws, x):
            return BAD_QUAT
        world_placement(md, ws, i, oR, oW)
        w = oW + i * W_WORLD
        p = int(md[o + C_PARENT])
        # world velocity V_i = V_p + X0^-1 S qd
        joint_motion(md, o, v, ws, t)
        x_motion_inv(ws, w, ws, t, ws, x + V_)
        if p >= 0:
            for k in range(6):
                ws[x + V_ + k] += ws[oR + p * W_RNEA + V_ + k]
        for col in range(ncols(md, o)):
            S_column(md, o, col, ws, t)
            x_motion_inv(ws, w, ws, t, ws, c + SW_ + 6 * col)
            cross_motion(ws, x + V_, ws, c + SW_ + 6 * col, ws, c + SD_ + 6 * col)
        # world inertia I = X0^T I_body X0
        inertia_to_mat6(md, o + C_MASS, ws, t + 84)
        for k in range(36):
            ws[c + IC_ + k] = 0.0
        mat6_xT_X_add(ws, w, ws, t + 84, ws, t + 120, ws, c + IC_)
        # B = ½ (V x* I - I V x + (I V) x̄);  V x* = -(V x)^T
        cm = t + 48
        for k in range(36):
            ws[cm + k] = 0.0
        for k in range(6):
            ws[t + 6 + k] = 0.0
        for col in range(6):                       # columns of crm(V): V x e_col
            ws[t + 6 + col] = 1.0
            cross_motion(ws, x + V_, ws, t + 6, ws, t)
            ws[t + 6 + col] = 0.0
            for r in range(6):
                ws[cm + 6 * r + col] = ws[t + r]
        I6 = c + IC_
        for r in range(6):
            for col in range(6):
                s = 0.0
                for k in range(6):
                    # (V x*) I = -crm^T I ;  - I crm
                    s -= ws[cm + 6 * k + r] * ws[I6 + 6 * k + col] + ws[I6 + 6 * r + k] * ws[cm + 6 * k + col]
                ws[c + BC_ + 6 * r + col] = 0.5 * s
        # (h x̄) with h = I V = [n; f]:  [[-[n]x, -[f]x], [-[f]x, 0]]
        _mat6_mul_vec(ws, I6, ws, x + V_, bool(0), ws, t)
        n0, n1, n2 = ws[t], ws[t + 1], ws[t + 2]
        f0, f1, f2 = ws[t + 3], ws[t + 4], ws[t + 5]
        Bc = c + BC_
        for (r, col, val) in ((0, 1, n2), (0, 2, -n1), (1, 0, -n2), (1, 2, n0), (2, 0, n1), (2, 1, -n0)):
            ws[Bc + 6 * r + col] += 0.5 * val
        for (r, col, val) in ((0, 1, f2), (0, 2, -f1), (1, 0, -f2), (1, 2, f0), (2, 0, f1), (2, 1, -f0)):
            ws[Bc + 6 * r + 3 + col] += 0.5 * val
            ws[Bc + 6 * (3 + r) + col] += 0.5 * val
    # composites
    for i in range(nb - 1, -1, -1):
        p = int(md[body_row(md, i) + C_PARENT])
        if p >= 0:
            for k in range(72):
                ws[oC + p * W_COR + IC_ + k] += ws[oC + i * W_COR + IC_ + k]
    for a in range(C.shape[0]):
        for b in range(C.shape[1]):
            C[a, b] = 0.0
    f1 = t
    f2 = t + 6
    f3 = t + 12
    tmp = t + 18
    for i in range(nb):
        o = body_row(md, i)
        c = oC + i * W_COR
        mi = md[o + C_MULT]
        for col in range(ncols(md, o)):
            S = c + SW_ + 6 * col
            Sd = c + SD_ + 6 * col
            _mat6_mul_vec(ws, c + IC_, ws, Sd, bool(0), ws, f1)
            _mat6_mul_vec(ws, c + BC_, ws, S, bool(0), ws, tmp)
            for k in range(6):
                ws[f1 + k] += ws[tmp + k]
            _mat6_mul_vec(ws, c + IC_, ws, S, bool(0), ws, f2)
            _mat6_mul_vec(ws, c + BC_, ws, S, bool(1), ws, f3)
            di = dof(md, o, col)
            for c2 in range(ncols(md, o)):
                C[dof(md, o, c2), di] += mi * mi * _dot6(ws, c + SW_ + 6 * c2, ws, f1)
            j = int(md[o + C_PARENT])
            while j >= 0:
                oj = body_row(md, j)
                cj = oC + j * W_COR
                mm = mi * md[oj + C_MULT]
                for c2 in range(ncols(md, oj)):
                    dj = dof(md, oj, c2)
                    C[dj, di] += mm * _dot6(ws, cj + SW_ + 6 * c2, ws, f1)
                    C[di, dj] += mm * (_dot6(ws, cj + SD_ + 6 * c2, ws, f2) + _dot6(ws, cj + SW_ + 6 * c2, ws, f3))
                j = int(md[oj + C_PARENT])
    return OK


coriolis_k = coriolis_into   # the entry point (no wrapper kernel: see aba.aba_k)
