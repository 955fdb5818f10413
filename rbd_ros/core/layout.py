"""Flat memory layout shared by the Model (constant data) and the kernels.

A model is one read-only float64 vector ``md``: a header, then one row of
``NCOL`` numbers per elementary body (in topological order, parent before
child), then the mimic pairs, the per-DOF ancestor lists and the armature.  Keeping everything in one array keeps
the compiled kernels' call overhead low (one argument instead of a dozen).

A workspace is one float64 vector ``ws`` carved into per-body regions; every
kernel takes one and allocates nothing.
"""
from numba import njit

from .spatial import INLINE

# header
H_NB, H_NV, H_NQ, H_NVF, H_NMIM = 0, 1, 2, 3, 4
H_GRAV = 5           # 3 numbers
H_OFF_BODY = 8       # body table, NCOL numbers per body
H_OFF_MIMIC = 9      # mimic pairs (dependent body, master body), 2 numbers each
H_OFF_ANC = 10       # per-DOF ancestor lists of the LᵀDL elimination tree (see ltdl.py)
H_OFF_ARM = 11       # per-DOF armature (rotor inertia reflected to the joint), nv numbers
HEADER = 16

# body table columns
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

# workspace regions (per body widths)
W_RNEA = 30          # E 0:9, r 9:12, v 12:18, a 18:24, f 24:30
W_WORLD = 12         # E0 0:9, r0 9:12 : world -> body transform
W_IC = 13            # composite inertia m, h (3), Ibar (9)
W_ABA = 126          # IA 0:36, pA 36:42, c 42:48, U 48:84, D 84:120, u 120:126
W_COR = 144          # S world 0:36, Sdot world (CRBA: I^c S world) 36:72, Ic world 72:108, Bc 108:144
TMP = 192            # scratch


@njit(**INLINE)
def region_offsets(nb, nvf, nmim):
    """Start offsets of the workspace regions and the total size."""
    o_rnea = 0
    o_world = o_rnea + nb * W_RNEA
    o_ic = o_world + nb * W_WORLD
    o_aba = o_ic + nb * W_IC
    o_cor = o_aba + nb * W_ABA
    o_tmp = o_cor + nb * W_COR
    o_mat = o_tmp + TMP
    o_vec = o_mat + nvf * nvf
    o_y = o_vec + 8 * nvf
    o_k = o_y + nvf * nmim
    end = o_k + nmim * nmim + 2 * nmim + 8
    return o_rnea, o_world, o_ic, o_aba, o_cor, o_tmp, o_mat, o_vec, o_y, o_k, end


@njit(**INLINE)
def workspace_size(md):
    return region_offsets(int(md[H_NB]), int(md[H_NVF]), int(md[H_NMIM]))[10]


@njit(**INLINE)
def body_row(md, i):
    """Offset of body i's row in md."""
    return int(md[H_OFF_BODY]) + i * NCOL


@njit(**INLINE)
def ancestors(md, k):
    """md[start:stop] lists DOF k's ancestors in the LᵀDL elimination tree,
    nearest first (precomputed: no pointer chasing in the factorisation)."""
    o = int(md[H_OFF_ANC]) + k
    return int(md[o]), int(md[o + 1])


@njit(**INLINE)
def mimic_pair(md, k):
    """(mimic body, master body) of mimic constraint k."""
    o = int(md[H_OFF_MIMIC]) + 2 * k
    return int(md[o]), int(md[o + 1])


@njit(**INLINE)
def thread_chunks(N, nthreads):
    """Split N batch rows into one contiguous chunk per thread: (chunks, rows per chunk)."""
    nth = min(nthreads, max(N, 1))
    return nth, (N + nth - 1) // nth
