"""Contact friction cones as linear inequalities on λ (compiled, allocation-free).

A contact's cone is C_k λ_k <= 0 (homogeneous: a cone), built at the current frames
(the FR region that ``kinematics`` filled in the workspace: call right after it, on
the same thread).  Per constraint k the packed ``fi`` holds [kind, first cone row,
number of rows] and ``ff`` [μ', X, Y] (contacts.py packs them):

``POINT`` (mask 1 1 1 0 0 0): the force on body a, f = M λ in the ground frame's axes
(M = R_bᵀ R_a: frame b's z is the ground normal), inside the four-sided pyramid
inscribed in the Coulomb cone (μ' = μ/√2):

    ±f_x − μ' f_z <= 0,   ±f_y − μ' f_z <= 0          (μ = 0: f_x = f_y = 0, −f_z <= 0)

``FLAT`` (mask all six): the wrench (f, τ) on body a at frame a's origin (the sole's
centre), turned into the sole frame c (frame a turned by the smallest rotation taking
its z onto frame b's z: c = a when the foot lies flat), inside the contact wrench cone
of a rectangle of half-sizes X (along c's x) and Y with the same pyramid at its four
corners (Caron, Pham, Nakamura, "Stability of surface contacts for humanoid robots:
closed-form formulae of the contact wrench cone for rectangular support areas", ICRA
2015) -- 16 rows:

    ±f_x − μ' f_z <= 0,  ±f_y − μ' f_z <= 0            (friction)
    ±τ_x − Y f_z <= 0,   ±τ_y − X f_z <= 0             (centre of pressure in the sole)
    −τ_z − μ'(X+Y) f_z + s₁(Y f_x − μ' τ_x) + s₂(X f_y − μ' τ_y) <= 0    (yaw torque, s = ±1)
    +τ_z − μ'(X+Y) f_z + s₁(Y f_x + μ' τ_x) + s₂(X f_y + μ' τ_y) <= 0

(test_contacts_core.py checks that these rows are exactly the cone spanned by the
corner pyramids' edges.)
"""
import numpy as np
from numba import njit

from ..algorithms.spatial import JIT
from .layout import CI_HEAD, CI_M, CI_N, CI_NC, CI_NV, CI_ROW, FR_N, FR_RA, FR_RB, O_F, O_FR, O_J, offsets

BILATERAL, POINT, FLAT = 0, 1, 2
FI_N, FF_N = 3, 3


@njit(**JIT)
def _sole_rotation(cws, fa, fb, M):
    """M (9, row-major) = R_cᵀ R_a: frame a's axes -> sole frame c's (c = Q R_a, Q the
    smallest rotation taking frame a's z onto frame b's z; a half turn about a's x when
    they are opposite)."""
    za0, za1, za2 = cws[fa + 2], cws[fa + 5], cws[fa + 8]
    zb0, zb1, zb2 = cws[fb + 2], cws[fb + 5], cws[fb + 8]
    cth = za0 * zb0 + za1 * zb1 + za2 * zb2
    # Q (world) into M temporarily, then M = R_aᵀ Qᵀ R_a
    if cth > -1.0 + 1e-12:
        k0, k1, k2 = za1 * zb2 - za2 * zb1, za2 * zb0 - za0 * zb2, za0 * zb1 - za1 * zb0
        s = 1.0 / (1.0 + cth)
        # Q = I + [k]x + [k]x² / (1 + cos)
        M[0] = 1.0 - (k1 * k1 + k2 * k2) * s
        M[1] = -k2 + k0 * k1 * s
        M[2] = k1 + k0 * k2 * s
        M[3] = k2 + k0 * k1 * s
        M[4] = 1.0 - (k0 * k0 + k2 * k2) * s
        M[5] = -k0 + k1 * k2 * s
        M[6] = -k1 + k0 * k2 * s
        M[7] = k0 + k1 * k2 * s
        M[8] = 1.0 - (k0 * k0 + k1 * k1) * s
    else:
        x0, x1, x2 = cws[fa], cws[fa + 3], cws[fa + 6]
        M[0], M[1], M[2] = 2 * x0 * x0 - 1.0, 2 * x0 * x1, 2 * x0 * x2
        M[3], M[4], M[5] = 2 * x1 * x0, 2 * x1 * x1 - 1.0, 2 * x1 * x2
        M[6], M[7], M[8] = 2 * x2 * x0, 2 * x2 * x1, 2 * x2 * x2 - 1.0
    # T = Qᵀ R_a into M[9:18]; then M[0:9] = R_aᵀ T
    for i in range(3):
        for j in range(3):
            M[9 + 3 * i + j] = M[i] * cws[fa + j] + M[3 + i] * cws[fa + 3 + j] + M[6 + i] * cws[fa + 6 + j]
    for i in range(3):
        for j in range(3):
            M[3 * i + j] = (cws[fa + i] * M[9 + j] + cws[fa + 3 + i] * M[12 + j]
                            + cws[fa + 6 + i] * M[15 + j])


@njit(**JIT)
def _ground_rotation(cws, fa, fb, M):
    """M (9, row-major) = R_bᵀ R_a: frame a's axes -> frame b's."""
    for i in range(3):
        for j in range(3):
            M[3 * i + j] = (cws[fb + i] * cws[fa + j] + cws[fb + 3 + i] * cws[fa + 3 + j]
                            + cws[fb + 6 + i] * cws[fa + 6 + j])


@njit(**JIT)
def _row(C, r, col, M, a0, a1, a2, b0, b1, b2, flat):
    """C[r, col:col+3] = aᵀ M (and C[r, col+3:col+6] = bᵀ M for a wrench)."""
    for j in range(3):
        C[r, col + j] = a0 * M[j] + a1 * M[3 + j] + a2 * M[6 + j]
        if flat:
            C[r, col + 3 + j] = b0 * M[j] + b1 * M[3 + j] + b2 * M[6 + j]


@njit(**JIT)
def cone_rows(ci, cws, fi, ff, C, lam, work):
    """C (rows x m): every contact's cone rows at the frames in ``cws`` (module
    docstring; bilateral constraints have none), zero elsewhere.  Returns max(C λ)
    (-inf without rows): <= 0 iff λ is inside every cone.  ``work``: 18 entries."""
    nc = ci[CI_NC]
    m = ci[CI_M]
    co = offsets(nc, m, ci[CI_NV])
    for r in range(C.shape[0]):
        for j in range(m):
            C[r, j] = 0.0
    worst = -np.inf
    for k in range(nc):
        kind = fi[FI_N * k]
        if kind == BILATERAL:
            continue
        r0 = fi[FI_N * k + 1]
        col = ci[CI_HEAD + k * CI_N + CI_ROW]
        mu = ff[FF_N * k]
        f = co[O_FR] + k * FR_N
        if kind == POINT:
            _ground_rotation(cws, f + FR_RA, f + FR_RB, work)
            _row(C, r0, col, work, 1.0, 0.0, -mu, 0.0, 0.0, 0.0, False)
            _row(C, r0 + 1, col, work, -1.0, 0.0, -mu, 0.0, 0.0, 0.0, False)
            _row(C, r0 + 2, col, work, 0.0, 1.0, -mu, 0.0, 0.0, 0.0, False)
            _row(C, r0 + 3, col, work, 0.0, -1.0, -mu, 0.0, 0.0, 0.0, False)
            if fi[FI_N * k + 2] == 5:
                _row(C, r0 + 4, col, work, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, False)
        else:
            X = ff[FF_N * k + 1]
            Y = ff[FF_N * k + 2]
            _sole_rotation(cws, f + FR_RA, f + FR_RB, work)
            _row(C, r0, col, work, 1.0, 0.0, -mu, 0.0, 0.0, 0.0, True)
            _row(C, r0 + 1, col, work, -1.0, 0.0, -mu, 0.0, 0.0, 0.0, True)
            _row(C, r0 + 2, col, work, 0.0, 1.0, -mu, 0.0, 0.0, 0.0, True)
            _row(C, r0 + 3, col, work, 0.0, -1.0, -mu, 0.0, 0.0, 0.0, True)
            _row(C, r0 + 4, col, work, 0.0, 0.0, -Y, 1.0, 0.0, 0.0, True)
            _row(C, r0 + 5, col, work, 0.0, 0.0, -Y, -1.0, 0.0, 0.0, True)
            _row(C, r0 + 6, col, work, 0.0, 0.0, -X, 0.0, 1.0, 0.0, True)
            _row(C, r0 + 7, col, work, 0.0, 0.0, -X, 0.0, -1.0, 0.0, True)
            r = r0 + 8
            for s1 in (1.0, -1.0):
                for s2 in (1.0, -1.0):
                    _row(C, r, col, work, s1 * Y, s2 * X, -mu * (X + Y), -s1 * mu, -s2 * mu, -1.0, True)
                    _row(C, r + 1, col, work, s1 * Y, s2 * X, -mu * (X + Y), s1 * mu, s2 * mu, 1.0, True)
                    r += 2
        dim = 6 if kind == FLAT else 3
        for r in range(r0, r0 + fi[FI_N * k + 2]):
            acc = 0.0
            for j in range(col, col + dim):
                acc += C[r, j] * lam[j]
            if acc > worst:
                worst = acc
    return worst


@njit(**JIT)
def passive_system(ci, cws, passive, B, c):
    """B (|P| x m) = J_Pᵀ and c (|P|) = (M a + b)_P from the workspace of the inverse
    dynamics just run (``cid_into``, same thread): the equations J_Pᵀ λ = c that the
    unactuated DOFs impose."""
    m = ci[CI_M]
    nv = ci[CI_NV]
    co = offsets(ci[CI_NC], m, nv)
    for i in range(passive.shape[0]):
        p = passive[i]
        c[i] = cws[co[O_F] + p]
        for r in range(m):
            B[i, r] = cws[co[O_J] + r * nv + p]


@njit(**JIT)
def actuator_torques(ci, cws, active, lam, tau):
    """τ (nv): f_A − J_Aᵀ λ on the actuated DOFs, 0 elsewhere (workspace of ``cid_into``)."""
    m = ci[CI_M]
    nv = ci[CI_NV]
    co = offsets(ci[CI_NC], m, nv)
    for k in range(nv):
        tau[k] = 0.0
    for i in range(active.shape[0]):
        p = active[i]
        acc = cws[co[O_F] + p]
        for r in range(m):
            acc -= cws[co[O_J] + r * nv + p] * lam[r]
        tau[p] = acc
