"""Flat layout of a packed constraint set and of its workspace (the kernels' view).

A constraint set is two read-only arrays built once per (model, constraints)
(:mod:`.packing`):

``ci`` (int64): a header [nc, m, nv, nbk] (constraints, rows, DOFs, bodies the
kinematics must visit: 1 + the deepest constraint body), then per constraint
``CI_N`` entries: body a, body b (-1: the world), kind (``POINT`` or ``MASKED``: the
rows of the 6D weld picked by the mask), first row, number of rows, mask (6).

``cf`` (float64): per constraint ``CF_N`` entries: frame a's placement in body a
(R row-major, frame axes -> body axes, 9; origin, 3), then frame b's (12).  For the
world (body -1) the placement is in world coordinates.

The workspace ``cws`` (float64) holds the kernels' matrices and vectors in regions
whose offsets :func:`offsets` gives (index with the ``O_*`` constants).
"""
from numba import njit

from ..algorithms.spatial import INLINE, JIT

# the options of a kernel Python calls once per state: numba's wrapper of a nogil kernel
# releases and retakes the GIL on every call (bench/RESULTS.md, issue 24's speed bars)
ENTRY = dict(JIT, nogil=False)

# ci header
CI_NC, CI_M, CI_NV, CI_NBK = 0, 1, 2, 3
CI_HEAD = 4
# ci per constraint
CI_A, CI_B, CI_KIND, CI_ROW, CI_DIM, CI_MASK = 0, 1, 2, 3, 4, 5
CI_N = 11
POINT, MASKED = 0, 1
# cf per constraint
CF_RA, CF_PA, CF_RB, CF_PB = 0, 9, 12, 21
CF_N = 24
# per-constraint frame data in the workspace (FR region), world coordinates
FR_RA, FR_PA, FR_RB, FR_PB = 0, 9, 12, 21          # frame rotations (row-major) and origins
FR_VA, FR_VB, FR_AA, FR_AB = 24, 30, 36, 42        # bodies' velocities and bias accelerations [ω; v_O]
FR_N = 48

# workspace regions
O_J, O_E, O_G, O_JV, O_FR, O_W, O_K, O_K2, O_R, O_X, O_Y, O_F, O_B, O_C, O_COD, O_END = range(16)


@njit(**INLINE)
def offsets(nc, m, nv):
    """Start offsets of the workspace regions (index with O_*) and the total size:
    J (m x nv), e, γ, J q̇ (m each), frames (nc x FR_N), W = L⁻ᵀ Jᵀ stored as m rows of
    nv, K and its copy (m x m), rhs/λ (m), three nv vectors, the inverse dynamics'
    matrix (nv x m) and right-hand side (nv + m), the least-squares solver's scratch."""
    o_j = 0
    o_e = o_j + m * nv
    o_g = o_e + m
    o_jv = o_g + m
    o_fr = o_jv + m
    o_w = o_fr + nc * FR_N
    o_k = o_w + nv * m
    o_k2 = o_k + m * m
    o_r = o_k2 + m * m
    o_x = o_r + m
    o_y = o_x + nv
    o_f = o_y + nv
    o_b = o_f + nv
    o_c = o_b + nv * m
    o_cod = o_c + nv + m
    end = o_cod + 4 * (nv + m) + 8
    return o_j, o_e, o_g, o_jv, o_fr, o_w, o_k, o_k2, o_r, o_x, o_y, o_f, o_b, o_c, o_cod, end
