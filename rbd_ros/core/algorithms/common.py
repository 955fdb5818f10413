"""Pieces every algorithm shares: joint transforms, motion subspaces, input checks.

Bodies are addressed by the offset ``o`` of their row in the model vector
(``layout.body_row``)."""
import numpy as np
from numba import njit

from .joints import FREE, REVOLUTE, free_transform, prismatic_transform, revolute_transform
from .layout import C_AXIS, C_ET, C_JTYPE, C_MULT, C_OFFSET, C_QI, C_VI
from .spatial import INLINE, JIT

# status codes returned by the kernels (the Python layer turns them into ValueErrors)
OK = 0
BAD_Q = 1
BAD_V = 2
BAD_A = 3          # a, or tau for forward dynamics
BAD_QUAT = 4
SINGULAR = 5
BAD_FEXT = 6
BAD_RESULT = 7     # finite arguments, non-finite result (overflow): the caller names the largest argument
BAD_DOFS = 8       # compensation: a dof index out of range
BAD_SHAPE = 9      # an argument's length does not fit the model (or the workspace is too small):
                   # nothing was read; the public fast paths then take their checked path


@njit(**INLINE)
def all_finite(x):
    ok = True
    for k in range(x.shape[0]):
        ok &= np.abs(x[k]) < np.inf
    return ok


@njit(**INLINE)
def fext_fits(fext, nb):
    """``fext`` is none, (0, 6), or one wrench per body, (nb, 6)."""
    return fext.shape[0] == 0 or (fext.shape[0] == nb and fext.shape[1] == 6)


@njit(**INLINE)
def finite_result(status, out):
    """The public kernels' status: BAD_RESULT if the call succeeded but ``out``
    (1-D or C-contiguous 2-D) is not finite (extreme arguments overflowed)."""
    if status == OK and not all_finite(out.reshape(-1)):
        return BAD_RESULT
    return status


@njit(**JIT)
def joint_transform(md, mi, o, q, X, ox):
    """X[ox:ox+12] = X_J(q) X_T for the body whose row starts at md[o].
    Returns False for a free joint whose quaternion has zero norm.

    The hot kernels (RNEA, CRBA, ABA) spell this dispatch out in their loops
    instead of calling this function (a call boundary per body costs more than
    the transform); test/test_core_spatial.py checks every copy against it."""
    jt = mi[o + C_JTYPE]
    qi = mi[o + C_QI]
    ok = True
    if jt == FREE:
        ok = free_transform(md, o + C_ET, q, qi, X, ox)
    else:
        x = md[o + C_MULT] * q[qi] + md[o + C_OFFSET]
        if jt == REVOLUTE:
            revolute_transform(md, o + C_ET, md, o + C_AXIS, x, X, ox)
        else:
            prismatic_transform(md, o + C_ET, md, o + C_AXIS, x, X, ox)
    return ok


@njit(**INLINE)
def ncols(mi, o):
    """Number of columns of the body's motion subspace S."""
    return 6 if mi[o + C_JTYPE] == FREE else 1


@njit(**INLINE)
def dof(mi, o, c):
    """Index in the user's v of column c of the body's S (the master's for a mimic joint)."""
    return mi[o + C_VI] + c


@njit(**INLINE)
def S_column(md, mi, o, c, out, oo):
    """out[oo:oo+6] = column c of S (internal [w; v] order)."""
    for k in range(6):
        out[oo + k] = 0.0
    jt = mi[o + C_JTYPE]
    if jt == FREE:
        out[oo + (c + 3) % 6] = 1.0
    elif jt == REVOLUTE:
        for k in range(3):
            out[oo + k] = md[o + C_AXIS + k]
    else:
        for k in range(3):
            out[oo + 3 + k] = md[o + C_AXIS + k]


@njit(**INLINE)
def joint_motion(md, mi, o, v, out, oo):
    """out[oo:oo+6] = S qd, the joint's spatial velocity in the body frame for
    the user's v (mimic multiplier applied; free joint v = [v; w])."""
    jt = mi[o + C_JTYPE]
    vi = mi[o + C_VI]
    if jt == FREE:
        for k in range(6):
            out[oo + (k + 3) % 6] = v[vi + k]
    else:
        x = md[o + C_MULT] * v[vi]
        for k in range(6):
            out[oo + k] = 0.0
        s = oo if jt == REVOLUTE else oo + 3
        for k in range(3):
            out[s + k] = md[o + C_AXIS + k] * x
