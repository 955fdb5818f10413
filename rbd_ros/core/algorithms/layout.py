"""Flat memory layout shared by the Model (constant data) and the kernels.

A model is one read-only vector ``md`` of 8-byte entries: a header, then one
row of ``NCOL`` entries per elementary body (in topological order, parent
before child), then the mimic pairs, the per-DOF ancestor lists and the
armature.  Keeping everything in one array keeps the compiled kernels' call
overhead low (one argument instead of a dozen: numba's dispatcher costs
~50 ns per array argument).

Two kinds of entry share the vector, each read through its own typed view:
the real numbers (gravity, joint axes and tree transforms, inertias, mimic
multipliers and offsets, armature) are float64 and read as ``md[k]``; the
integers (counts, offsets, parent indices, joint types, q/v indices,
subtree ends, mimic pairs, ancestor lists: the ``INT_*`` entries below) are
stored as int64 and read through the int64 view of the same memory,
``mi = md.view(np.int64)`` (``Model.mi`` in Python; each kernel makes it
once).  No float casts: an integer entry seen through ``md`` is meaningless
(-1 reads as NaN), so code never reads one that way.  The kernels take the
writable twin of ``md`` (``Model.md_k``, the same numbers): numba's
dispatcher types a read-only array ~50 ns slower per call.

A workspace is one float64 vector ``ws`` carved into regions (per-body
blocks of named slots, then scratch, matrix and vector regions; see the
workspace section below); every kernel takes one and allocates nothing.

The kernels read both through views set up once per call (``bodies(md)``:
``parent[i]``, ``Xtree[i]``, ``I[i]`` ...; ``rnea_slots(ws, offs, nb)``: ``X[i]``,
``v[i]``, ``a[i]``, ``f[i]`` ...): strided views that copy nothing and are not
reference-counted (``_numba_compat.strided``), so ``X[i]`` costs what the offset
``ws[o + i * W_RNEA + RN_X + k]`` costs.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from .spatial import INLINE
from .views import strided

# header (integers but H_GRAV)
H_NB, H_NV, H_NQ, H_NVF, H_NMIM = 0, 1, 2, 3, 4
H_GRAV = 5           # 3 floats
H_OFF_BODY = 8       # body table, NCOL entries per body
H_OFF_MIMIC = 9      # mimic pairs (dependent body, master body), 2 integers each
H_OFF_ANC = 10       # per-DOF ancestor lists of the LᵀDL elimination tree (see ltdl.py), integers
H_OFF_ARM = 11       # per-DOF armature (rotor inertia reflected to the joint), nv floats
HEADER = 16
INT_HEADER = (H_NB, H_NV, H_NQ, H_NVF, H_NMIM, H_OFF_BODY, H_OFF_MIMIC, H_OFF_ANC, H_OFF_ARM)

# body table columns (INT_COLS are integers, the rest floats)
C_PARENT = 0         # parent body index, -1 for the world
C_JTYPE = 1          # joints.REVOLUTE / PRISMATIC / FREE
C_QI = 2             # index of the joint's coordinate in q (the master's for a mimic joint)
C_VI = 3             # index of the joint's velocity in v (the master's for a mimic joint)
C_MULT = 4           # mimic multiplier (1 for ordinary joints)
C_OFFSET = 5         # mimic offset (0 for ordinary joints)
C_FV = 6             # index in the full velocity vector (mimic joints counted as DOFs)
C_ET = 7             # tree transform X_T from the parent body: E (9) ...
C_RT = 16            # ... and r (3)
C_AXIS = 19          # joint axis u (unit, joint frame)
C_MASS = 22          # body inertia about the body origin: m ...
C_H = 23             # ... h = m c (3) ...
C_IBAR = 26          # ... Ibar (9)
C_MIMIC = 35         # 1 for a dependent (mimic) joint
C_SUBEND = 36        # last body of this body's subtree (bodies are depth-first: the subtree is i..C_SUBEND)
NCOL = 37
INT_COLS = (C_PARENT, C_JTYPE, C_QI, C_VI, C_FV, C_MIMIC, C_SUBEND)   # int64 entries of a body row

# ---- workspace
#
# ``region_offsets`` carves the workspace into regions, in this order; the
# per-body regions hold ``nb`` blocks of W_* numbers (body i's block starts at
# the region's offset + i * W_*: the ``*_slot`` helpers below), and a slot
# constant is an offset inside a body's block.  Each slot has one meaning;
# where several kernels write a slot, they store the same quantity (in the
# frame noted).  Slot widths are in brackets.

# RNEA region: the joint transform and the body's motion and force
W_RNEA = 30
RN_X = 0             # [12] X_i = X_J(q_i) X_T(i), parent -> body i, as (E 9, r 3): every kernel
RN_V = 12            # [6] velocity v_i: rnea/bias body frame; aba, coriolis_matrix world frame
RN_A = 18            # [6] acceleration a_i (a_0 = -a_g): rnea body frame; aba world frame
RN_F = 24            # [6] rnea: force across joint i (subtree sum after the backward sweep), body frame

# world region: body i seen from the world
W_WORLD = 12
WO_X = 0             # [12] X0_i, world -> body i, as (E0 9, r0 3): crba, aba, coriolis_matrix, rnea with world f_ext

# composite-inertia region (crba; world frame)
W_IC = 13
IC_I = 0             # [13] I_i, then (backward sweep) the composite I^c_i, world coordinates about the world
                     # origin: m, h (3), Ibar (9)

# ABA region (aba; world frame, moments about the world origin)
W_ABA = 102
AB_IA = 0            # [36] articulated inertia I^A_i, 6x6 row-major
AB_PA = 36           # [6] articulated bias force p^A_i
AB_C = 42            # [6] velocity product c_i = v_λ x vJ_i
AB_U = 48            # [6] U_i = I^A_i S_i (1-DOF joints)
AB_D = 54            # [36] 1-DOF: D_i = S_i^T U_i + armature at 0; free joint: a copy of I^A_i (6x6)
AB_TAU = 90          # [6] 1-DOF: u_i = tau_i - S_i^T p^A_i at 0; free joint: its tau as a world force X0_i^T tau_i
AB_S = 96            # [6] 1-DOF joints: S_i in world coordinates

# coriolis region (coriolis_matrix; world frame)
W_COR = 144
CO_S = 0             # [36] columns of S_i in world coordinates, 6 per column
CO_SDOT = 36         # [36] columns of Ṡ_i = V_i x S_i, 6 per column
CO_IC = 72           # [36] I_i, then (after the backward sweep) the composite I^c_i, 6x6 row-major
CO_BC = 108          # [36] B_i, then the composite B^c_i, 6x6 row-major

# CRBA region (crba; world frame)
W_CRBA = 72
CR_S = 0             # [36] columns of m_i S_i in world coordinates (m_i: mimic multiplier, 1 if none), 6 per column
CR_F = 36            # [36] F_i = I^c_i (m_i S_i), world coordinates, 6 per column of S_i

TMP = 192            # scratch shared by all kernels (each documents its use at the top of its loop)

# index of each region's start in the tuple ``region_offsets`` returns
R_RNEA, R_WORLD, R_IC, R_ABA, R_COR, R_CRBA, R_TMP = 0, 1, 2, 3, 4, 5, 6
R_MAT = 7            # nvf x nvf: H (forward_dynamics: its LᵀDL factor; compensation_into: H)
R_VEC = 8            # 8 nvf: full-coordinate vectors (aba: tau_full, qdd_full, rhs; compensation_into: g, b)
R_Y = 9              # nvf x nmim: aba's Y = H_full^-1 J^T
R_K = 10             # nmim x nmim + 2 nmim + 8: aba's K = J Y
R_END = 11           # total size

# (slot, width) of every per-body slot, by region: checked by test/test_core_spatial.py
SLOTS = {
    "rnea": (W_RNEA, {"RN_X": (RN_X, 12), "RN_V": (RN_V, 6), "RN_A": (RN_A, 6), "RN_F": (RN_F, 6)}),
    "world": (W_WORLD, {"WO_X": (WO_X, 12)}),
    "ic": (W_IC, {"IC_I": (IC_I, 13)}),
    "aba": (W_ABA, {"AB_IA": (AB_IA, 36), "AB_PA": (AB_PA, 6), "AB_C": (AB_C, 6), "AB_U": (AB_U, 6),
                    "AB_D": (AB_D, 36), "AB_TAU": (AB_TAU, 6), "AB_S": (AB_S, 6)}),
    "cor": (W_COR, {"CO_S": (CO_S, 36), "CO_SDOT": (CO_SDOT, 36), "CO_IC": (CO_IC, 36), "CO_BC": (CO_BC, 36)}),
    "crba": (W_CRBA, {"CR_S": (CR_S, 36), "CR_F": (CR_F, 36)}),
}


@njit(**INLINE)
def region_offsets(nb, nvf, nmim):
    """Start offsets of the workspace regions and the total size (index with R_*)."""
    o_rnea = 0
    o_world = o_rnea + nb * W_RNEA
    o_ic = o_world + nb * W_WORLD
    o_aba = o_ic + nb * W_IC
    o_cor = o_aba + nb * W_ABA
    o_crba = o_cor + nb * W_COR
    o_tmp = o_crba + nb * W_CRBA
    o_mat = o_tmp + TMP
    o_vec = o_mat + nvf * nvf
    o_y = o_vec + 8 * nvf
    o_k = o_y + nvf * nmim
    end = o_k + nmim * nmim + 2 * nmim + 8
    return o_rnea, o_world, o_ic, o_aba, o_cor, o_crba, o_tmp, o_mat, o_vec, o_y, o_k, end


# Body i's block in a per-body region starting at ``o``.  Integers in, integer
# out, inlined at numba level (inline="always"), so that a kernel using them is
# optimised as if the offsets were written out by hand.

@njit(**INLINE)
def rnea_slot(o, i):
    return o + i * W_RNEA


@njit(**INLINE)
def world_slot(o, i):
    return o + i * W_WORLD


@njit(**INLINE)
def ic_slot(o, i):
    return o + i * W_IC


@njit(**INLINE)
def aba_slot(o, i):
    return o + i * W_ABA


@njit(**INLINE)
def cor_slot(o, i):
    return o + i * W_COR


@njit(**INLINE)
def crba_slot(o, i):
    return o + i * W_CRBA


@njit(**INLINE)
def offsets(md):
    """``region_offsets`` of the model vector ``md``'s workspace."""
    mi = md.view(np.int64)
    return region_offsets(mi[H_NB], mi[H_NVF], mi[H_NMIM])


@njit(**INLINE)
def workspace_size(md):
    mi = md.view(np.int64)
    return region_offsets(mi[H_NB], mi[H_NVF], mi[H_NMIM])[R_END]


@njit(**INLINE)
def body_row(mi, i):
    """Offset of body i's row in the model vector (``mi``: its int64 view)."""
    return mi[H_OFF_BODY] + i * NCOL


@njit(**INLINE)
def ancestors(mi, k):
    """mi[start:stop] lists DOF k's ancestors in the LᵀDL elimination tree,
    nearest first (precomputed: no pointer chasing in the factorisation)."""
    o = mi[H_OFF_ANC] + k
    return mi[o], mi[o + 1]


@njit(**INLINE)
def mimic_pair(mi, k):
    """(mimic body, master body) of mimic constraint k."""
    o = mi[H_OFF_MIMIC] + 2 * k
    return mi[o], mi[o + 1]


# ---- views (see the module docstring): set up once per kernel call, free to index

@njit(**INLINE)
def rows(a, start, n, width, stride):
    """The (n, width) view of ``a`` whose row r is a[start + r * stride:][:width]."""
    return strided(a, start, (n, width), (stride, 1))


@njit(**INLINE)
def blocks(a, start, n, stride):
    """The (n, 6, 6) view of ``a`` whose block r is the row-major 6x6 matrix at a[start + r * stride:]."""
    return strided(a, start, (n, 6, 6), (stride, 6, 1))


@njit(**INLINE)
def column(a, start, n, stride):
    """The (n,) view of ``a`` whose entry r is a[start + r * stride]."""
    return strided(a, start, (n,), (stride,))


@njit(**INLINE)
def vector(a, start, n):
    """a[start:start + n] as a view (no bounds check, no reference count)."""
    return strided(a, start, (n,), (1,))


Bodies = namedtuple("Bodies", "n parent jtype qi vi fv mult offset Xtree axis I mimic subend")
Bodies.__doc__ = """The model's body table, body by body (``bodies(md)``): for body i (0..n-1,
parents first) parent[i] = λ(i) (-1: the world), jtype[i] (joints.REVOLUTE /
PRISMATIC / FREE), qi[i], vi[i] (its first q and v index; the master's for a mimic
joint), fv[i] (its index in the full velocity vector), mult[i], offset[i] (mimic
multiplier and offset: 1, 0 for ordinary joints), Xtree[i] (X_T(i), 12 numbers),
axis[i] (the joint axis, 3), I[i] (the inertia about the body origin, m h Ibar: 13),
mimic[i] (1 for a dependent joint), subend[i] (the last body of i's subtree)."""


@njit(**INLINE)
def bodies(md):
    """The body table of the model vector ``md`` as per-body views (``Bodies``)."""
    mi = md.view(np.int64)
    nb = mi[H_NB]
    o = mi[H_OFF_BODY]
    return Bodies(nb, column(mi, o + C_PARENT, nb, NCOL), column(mi, o + C_JTYPE, nb, NCOL),
                  column(mi, o + C_QI, nb, NCOL), column(mi, o + C_VI, nb, NCOL), column(mi, o + C_FV, nb, NCOL),
                  column(md, o + C_MULT, nb, NCOL), column(md, o + C_OFFSET, nb, NCOL),
                  rows(md, o + C_ET, nb, 12, NCOL), rows(md, o + C_AXIS, nb, 3, NCOL),
                  rows(md, o + C_MASS, nb, 13, NCOL),
                  column(mi, o + C_MIMIC, nb, NCOL), column(mi, o + C_SUBEND, nb, NCOL))


@njit(**INLINE)
def gravity(md):
    """The gravity vector g (3: a_g = [0; g])."""
    return vector(md, H_GRAV, 3)


@njit(**INLINE)
def armature(md):
    """The armature of each DOF (nv)."""
    mi = md.view(np.int64)
    return vector(md, mi[H_OFF_ARM], mi[H_NV])


@njit(**INLINE)
def rnea_slots(ws, offs, nb):
    """(X, v, a, f): X[i] (12) the joint transform X_i, v[i], a[i], f[i] (6) body i's
    velocity, acceleration and force (region RNEA; the slots' frames: above)."""
    o = offs[R_RNEA]
    return (rows(ws, o + RN_X, nb, 12, W_RNEA), rows(ws, o + RN_V, nb, 6, W_RNEA),
            rows(ws, o + RN_A, nb, 6, W_RNEA), rows(ws, o + RN_F, nb, 6, W_RNEA))


@njit(**INLINE)
def world_slots(ws, offs, nb):
    """X0: X0[i] (12) the world -> body i transform."""
    return rows(ws, offs[R_WORLD] + WO_X, nb, 12, W_WORLD)


@njit(**INLINE)
def ic_slots(ws, offs, nb):
    """Ic: Ic[i] (13) body i's (composite) inertia, world coordinates (crba)."""
    return rows(ws, offs[R_IC] + IC_I, nb, 13, W_IC)


@njit(**INLINE)
def crba_slots(ws, offs, nb):
    """(S, F): S[i, c], F[i, c] (6) column c of m_i S_i and of I^c_i m_i S_i, world coordinates."""
    o = offs[R_CRBA]
    return blocks(ws, o + CR_S, nb, W_CRBA), blocks(ws, o + CR_F, nb, W_CRBA)


@njit(**INLINE)
def aba_slots(ws, offs, nb):
    """(IA, pA, c, U, D, u, S) of the ABA region: IA[i], D[i] (6 x 6), pA[i], c[i], U[i],
    u[i], S[i] (6); the slots' meanings: above."""
    o = offs[R_ABA]
    return (blocks(ws, o + AB_IA, nb, W_ABA), rows(ws, o + AB_PA, nb, 6, W_ABA), rows(ws, o + AB_C, nb, 6, W_ABA),
            rows(ws, o + AB_U, nb, 6, W_ABA), blocks(ws, o + AB_D, nb, W_ABA), rows(ws, o + AB_TAU, nb, 6, W_ABA),
            rows(ws, o + AB_S, nb, 6, W_ABA))


@njit(**INLINE)
def cor_slots(ws, offs, nb):
    """(S, Sdot, Ic, Bc) of the coriolis region: S[i, c], Sdot[i, c] (6) column c of S_i, Ṡ_i;
    Ic[i], Bc[i] (6 x 6): all world coordinates."""
    o = offs[R_COR]
    return (blocks(ws, o + CO_S, nb, W_COR), blocks(ws, o + CO_SDOT, nb, W_COR), blocks(ws, o + CO_IC, nb, W_COR),
            blocks(ws, o + CO_BC, nb, W_COR))


@njit(**INLINE)
def scratch(ws, offs):
    """The TMP numbers of scratch every kernel shares."""
    return vector(ws, offs[R_TMP], TMP)
