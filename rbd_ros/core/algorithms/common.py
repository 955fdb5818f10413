"""Pieces every algorithm shares: status codes, argument checks, and the joint
dispatch (revolute / prismatic / free), once.

Body i is read through ``B = layout.bodies(md)`` (``B.jtype[i]``, ``B.axis[i]`` ...)
and its workspace slots through views (``X[i]``, ``v[i]``); every helper here is
inlined into its kernel (numba IR level), so the dispatch costs what it cost
when each kernel spelled it out."""
import numpy as np
from numba import njit

from .joints import FREE, PRISMATIC, REVOLUTE, free_transform, prismatic_transform, revolute_transform
from .layout import H_NQ, H_NV, H_OFF_BODY, NCOL, R_END, bodies, offsets, rnea_slots, vector, world_slots
from .spatial import INLINE, X_compose, Xinv_m, crm
from .views import contiguous

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
    (C-contiguous, any shape) is not finite (extreme arguments overflowed)."""
    if status == OK and not all_finite(vector(out, 0, out.size)):
        return BAD_RESULT
    return status


@njit(**INLINE)
def check_state(md, ws, q, v, a, use_v, use_a, fits):
    """A kernel's argument check: BAD_SHAPE (nothing read) unless q has nq numbers,
    v and a (where used) nv, the workspace is large enough and ``fits`` (the kernel's
    own test of its other arguments); then BAD_Q, BAD_V or BAD_A for the first of q, v,
    a that is not finite; else OK."""
    mi = md.view(np.int64)
    nv = mi[H_NV]
    if (not fits or q.shape[0] != mi[H_NQ] or (use_v and v.shape[0] != nv) or (use_a and a.shape[0] != nv)
            or ws.shape[0] < offsets(md)[R_END]):
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if use_v and not all_finite(v):
        return BAD_V
    if use_a and not all_finite(a):
        return BAD_A
    return OK


@njit(**INLINE)
def fill(x, value):
    """x[:] = value (1-D x)."""
    for k in range(x.shape[0]):
        x[k] = value


@njit(**INLINE)
def fill_matrix(M, value):
    """M[:, :] = value (2-D M)."""
    for r in range(M.shape[0]):
        for c in range(M.shape[1]):
            M[r, c] = value


@njit(**INLINE)
def add(x, y):
    """x += y (1-D, y as long as x)."""
    for k in range(x.shape[0]):
        x[k] += y[k]


@njit(**INLINE)
def dot6(s, f):
    """s . f for two 6-vectors (arrays or tuples)."""
    return s[0] * f[0] + s[1] * f[1] + s[2] * f[2] + s[3] * f[3] + s[4] * f[4] + s[5] * f[5]


@njit(**INLINE)
def tuple6(x):
    """x's 6 numbers as a tuple: values in registers, not reloaded after stores elsewhere."""
    return (x[0], x[1], x[2], x[3], x[4], x[5])


@njit(**INLINE)
def sub(x, y):
    """x -= y (1-D, y as long as x)."""
    for k in range(x.shape[0]):
        x[k] -= y[k]


@njit(**INLINE)
def fext_row(fext, n, none):
    """Row n's per-body wrenches of a batch's ``fext``: fext[n] of an (N, nb, 6) array,
    ``none`` (a (0, 6) array) for a (0, nb, 6) one (no f_ext)."""
    return none if fext.shape[0] == 0 else fext[n]


@njit(**INLINE)
def no_fext(ws):
    """A (0, 6) array (no f_ext), typed as a kernel's fext argument (C-contiguous)."""
    return contiguous(ws, 0, (0, 6))


# ---- the joint dispatch: X_J, S_i, S_i qd_i, S_i^T f (body i's frame, [w; v] order)

@njit(**INLINE)
def jcalc(B, i, q, X):
    """X = X_J(q_i) X_T(i), body i's joint transform composed with its tree
    transform (12 numbers; the twin's ``jcalc(b, q)[0] @ b.Xtree``).  Returns False
    for a free joint whose quaternion has zero norm."""
    jt = B.jtype[i]
    qi = B.qi[i]
    if jt == REVOLUTE:
        revolute_transform(B.Xtree[i], B.axis[i], B.mult[i] * q[qi] + B.offset[i], X)
    elif jt == PRISMATIC:
        prismatic_transform(B.Xtree[i], B.axis[i], B.mult[i] * q[qi] + B.offset[i], X)
    else:
        return free_transform(B.Xtree[i], vector(q, qi, 7), X)
    return True


@njit(**INLINE)
def ncols(B, i):
    """Number of columns of body i's motion subspace S_i."""
    return 6 if B.jtype[i] == FREE else 1


@njit(**INLINE)
def S_column(B, i, c, out):
    """out = column c of S_i (the joint's own, without the mimic multiplier)."""
    jt = B.jtype[i]
    fill(out, 0.0)
    if jt == FREE:
        out[(c + 3) % 6] = 1.0          # the user's free-joint v is [v; w]
    elif jt == REVOLUTE:
        for k in range(3):
            out[k] = B.axis[i, k]
    else:
        for k in range(3):
            out[3 + k] = B.axis[i, k]


@njit(**INLINE)
def joint_velocity(B, i, qd, out):
    """out = S_i qd_i, the joint's spatial velocity for the user's qd (mimic
    multiplier applied; a free joint's qd is [v; w])."""
    jt = B.jtype[i]
    vi = B.vi[i]
    if jt == FREE:
        for k in range(6):
            out[(k + 3) % 6] = qd[vi + k]
    else:
        x = B.mult[i] * qd[vi]
        fill(out, 0.0)
        s = 0 if jt == REVOLUTE else 3
        for k in range(3):
            out[s + k] = B.axis[i, k] * x


@njit(**INLINE)
def add_joint_motion(B, i, qd, qdd, use_v, use_a, v, a):
    """v += S_i qd_i (if use_v);  a += S_i qdd_i (if use_a) + v x S_i qd_i (if use_v),
    with v already holding X_i v_λ(i): (X_i v_λ + S qd) x S qd = (X_i v_λ) x S qd."""
    jt = B.jtype[i]
    vi = B.vi[i]
    if jt == FREE:
        if use_a:
            for k in range(6):
                a[(k + 3) % 6] += qdd[vi + k]
        if use_v:
            s0 = qd[vi + 3]
            s1 = qd[vi + 4]
            s2 = qd[vi + 5]
            s3 = qd[vi]
            s4 = qd[vi + 1]
            s5 = qd[vi + 2]
            w0 = v[0]
            w1 = v[1]
            w2 = v[2]
            l0 = v[3]
            l1 = v[4]
            l2 = v[5]
            a[0] += w1 * s2 - w2 * s1
            a[1] += w2 * s0 - w0 * s2
            a[2] += w0 * s1 - w1 * s0
            a[3] += w1 * s5 - w2 * s4 + l1 * s2 - l2 * s1
            a[4] += w2 * s3 - w0 * s5 + l2 * s0 - l0 * s2
            a[5] += w0 * s4 - w1 * s3 + l0 * s1 - l1 * s0
            v[0] += s0
            v[1] += s1
            v[2] += s2
            v[3] += s3
            v[4] += s4
            v[5] += s5
        return
    m = B.mult[i]
    u0 = B.axis[i, 0]
    u1 = B.axis[i, 1]
    u2 = B.axis[i, 2]
    s = 0 if jt == REVOLUTE else 3       # revolute: S = [u; 0], prismatic: S = [0; u]
    if use_a:
        qdd_i = m * qdd[vi]
        a[s] += u0 * qdd_i
        a[s + 1] += u1 * qdd_i
        a[s + 2] += u2 * qdd_i
    if use_v:
        qd_i = m * qd[vi]
        s0 = u0 * qd_i
        s1 = u1 * qd_i
        s2 = u2 * qd_i
        v[s] += s0
        v[s + 1] += s1
        v[s + 2] += s2
        c0 = v[1] * s2 - v[2] * s1
        c1 = v[2] * s0 - v[0] * s2
        c2 = v[0] * s1 - v[1] * s0
        if jt == REVOLUTE:               # v x [s; 0] = [w x s; l x s]
            a[0] += c0
            a[1] += c1
            a[2] += c2
            a[3] += v[4] * s2 - v[5] * s1
            a[4] += v[5] * s0 - v[3] * s2
            a[5] += v[3] * s1 - v[4] * s0
        else:                            # v x [0; s] = [0; w x s]
            a[3] += c0
            a[4] += c1
            a[5] += c2


@njit(**INLINE)
def add_joint_force(B, i, f, tau):
    """tau[dofs of i] += S_i^T f (times the mimic multiplier: the master's DOF gets it)."""
    jt = B.jtype[i]
    vi = B.vi[i]
    if jt == FREE:
        for k in range(6):
            tau[vi + k] += f[(k + 3) % 6]
    else:
        s = 0 if jt == REVOLUTE else 3
        tau[vi] += B.mult[i] * (B.axis[i, 0] * f[s] + B.axis[i, 1] * f[s + 1] + B.axis[i, 2] * f[s + 2])


# ---- the world placement of body i (X0_i), for every kernel that needs it

@njit(**INLINE)
def world_transform(B, i, X, X0):
    """X0[i] = X_i X0_λ(i), the world -> body i transform (X0_i = X_i at the root)."""
    p = B.parent[i]
    if p < 0:
        for k in range(12):
            X0[i, k] = X[i, k]
    else:
        X_compose(X[i], X0[p], X0[i])


# ---- the same on flat arrays: a body is addressed by the offset ``o`` of its row in the
# model vector (layout.body_row); results at out[oo:]

@njit(**INLINE)
def _body(mi, o):
    return (o - mi[H_OFF_BODY]) // NCOL


@njit(**INLINE)
def joint_transform(md, mi, o, q, X, ox):
    """X[ox:ox+12] = X_J(q) X_T for the body whose row starts at md[o] (``jcalc``)."""
    return jcalc(bodies(md), _body(mi, o), q, vector(X, ox, 12))


@njit(**INLINE)
def joint_motion(md, mi, o, v, out, oo):
    """out[oo:oo+6] = S qd (``joint_velocity``)."""
    joint_velocity(bodies(md), _body(mi, o), v, vector(out, oo, 6))


@njit(**INLINE)
def world_placement(mi, ws, i, oR, oW):
    """World -> body i transform into the world region (needs the parent's), for
    flat-array code (offsets ``oR``, ``oW`` of the RNEA and world regions): ``world_transform``."""
    md = mi.view(np.float64)
    B = bodies(md)
    offs = offsets(md)
    X = rnea_slots(ws, offs, B.n)[0]
    world_transform(B, i, X, world_slots(ws, offs, B.n))


@njit(**INLINE)
def x_motion_inv(X, ox, m, om, out, oo):
    """out[oo:oo+6] = X^-1 m for the transform at X[ox:] and m at m[om:] (``spatial.Xinv_m``)."""
    Xinv_m(vector(X, ox, 12), vector(m, om, 6), vector(out, oo, 6))


@njit(**INLINE)
def cross_motion(v, ov, m, om, out, oo):
    """out[oo:oo+6] = v x m for v at v[ov:] and m at m[om:] (``spatial.crm``)."""
    crm(vector(v, ov, 6), vector(m, om, 6), vector(out, oo, 6))
