"""Loop closure at the position and velocity level: ``close_loops`` and ``loop_velocity``.

close_loops: Gauss-Newton on e(q) over the free DOFs F (those not ``fixed``), each
step the minimum-norm least-squares solution of J_F Δ = −e (``solve.lstsq_min_norm``:
well defined when J_F is rank-deficient or wide), halved until ‖e‖ decreases (a
backtracking line search: Gauss-Newton damped toward a gradient step, as
Levenberg-Marquardt is), until ‖e‖ <= tol.  q ⊕ Δ adds Δ to one-axis joints and
moves a free-flyer by its body-frame [v; ω] (position += R v, quaternion ⊗ exp(ω/2)).
Fails (an error naming the constraint with the largest error) when ‖e‖ stops
decreasing or ``max_iter`` steps were not enough: the loops cannot be closed from
there (out of reach, or a singular configuration on the way).

loop_velocity: the free DOFs' velocities from J q̇ = 0 given the fixed ones,
J_F q̇_F = −J_X q̇_X (minimum-norm least squares).
"""
import numpy as np
from numba import njit

from ..algorithms.common import BAD_Q, BAD_RESULT, BAD_SHAPE, BAD_V, OK, all_finite
from ..algorithms.spatial import JIT
from ..model.checks import real_number
from .args import check, describe, not_model, vec
from .dynamics import RANK_TOL, _sizes_ok
from .kinematics import kinematics
from .layout import CI_M, CI_NC, O_B, O_C, O_COD, O_E, O_J, O_Y, offsets
from .packing import constraint_set
from .solve import lstsq_min_norm

NOT_CLOSED = 100


@njit(**JIT)
def _norm_e(cws, oe, m):
    s = 0.0
    for r in range(m):
        s += cws[oe + r] * cws[oe + r]
    return np.sqrt(s)


@njit(**JIT)
def _step(q, q0, dx, free, qmap, free_q, step):
    """q = q0 ⊕ step·dx on the free DOFs (qmap: q index of a one-axis DOF, -1 for a
    free-flyer's; free_q: per free-flyer among the free DOFs, its q index and first DOF)."""
    for k in range(q.shape[0]):
        q[k] = q0[k]
    for i in range(free.shape[0]):
        qi = qmap[free[i]]
        if qi >= 0:
            q[qi] += step * dx[i]
    for f in range(free_q.shape[0]):
        qi = free_q[f, 0]
        c = free_q[f, 1]            # position of the free-flyer's first DOF in ``free``
        x, y, z, w = q0[qi + 3], q0[qi + 4], q0[qi + 5], q0[qi + 6]
        n = np.sqrt(x * x + y * y + z * z + w * w)
        x, y, z, w = x / n, y / n, z / n, w / n
        v0, v1, v2 = step * dx[c], step * dx[c + 1], step * dx[c + 2]
        # R(quat) v
        q[qi] += (1 - 2 * (y * y + z * z)) * v0 + 2 * (x * y - z * w) * v1 + 2 * (x * z + y * w) * v2
        q[qi + 1] += 2 * (x * y + z * w) * v0 + (1 - 2 * (x * x + z * z)) * v1 + 2 * (y * z - x * w) * v2
        q[qi + 2] += 2 * (x * z - y * w) * v0 + 2 * (y * z + x * w) * v1 + (1 - 2 * (x * x + y * y)) * v2
        w0, w1, w2 = step * dx[c + 3], step * dx[c + 4], step * dx[c + 5]
        th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        s = 0.5 if th < 1e-8 else np.sin(0.5 * th) / th
        ex, ey, ez, ew = s * w0, s * w1, s * w2, np.cos(0.5 * th)
        q[qi + 3] = w * ex + x * ew + y * ez - z * ey
        q[qi + 4] = w * ey - x * ez + y * ew + z * ex
        q[qi + 5] = w * ez + x * ey - y * ex + z * ew
        q[qi + 6] = w * ew - x * ex - y * ey - z * ez


@njit(**JIT)
def close_k(md, ws, ci, cf, cws, q, q0, free, qmap, free_q, tol, max_iter, info):
    """Close the loops from q (in place; q0: scratch of len(q)).  info: [‖e‖, iterations,
    row of the largest |e|].  NOT_CLOSED when they could not be closed."""
    if not _sizes_ok(md, ws, ci, cws, q, q, False) or q0.shape[0] != q.shape[0] or info.shape[0] < 3:
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    m = ci[CI_M]
    nv = ci[2]
    nf = free.shape[0]
    co = offsets(ci[CI_NC], m, nv)
    oe = co[O_E]
    dx = cws[co[O_Y]:co[O_Y] + nv]
    it = 0
    st = kinematics(md, ws, ci, cf, cws, q, q, False, True)
    if st != OK:
        return st
    err = _norm_e(cws, oe, m)
    while err > 1e-3 * tol and it < max_iter and nf > 0:     # polish past tol while it helps
        it += 1
        A = cws[co[O_B]:co[O_B] + m * nf].reshape((m, nf))
        b = cws[co[O_C]:co[O_C] + m]
        for r in range(m):
            b[r] = -cws[oe + r]
            for i in range(nf):
                A[r, i] = cws[co[O_J] + r * nv + free[i]]
        sol = cws[co[O_COD] + 3 * nf:co[O_COD] + 3 * nf + 4]
        lstsq_min_norm(A, m, nf, b, dx, cws[co[O_COD]:co[O_COD] + 3 * nf], RANK_TOL, sol)
        for k in range(q.shape[0]):
            q0[k] = q[k]
        step = 1.0
        better = False
        for _ in range(40):
            _step(q, q0, dx, free, qmap, free_q, step)
            st = kinematics(md, ws, ci, cf, cws, q, q, False, False)
            if st != OK:
                return st
            e1 = _norm_e(cws, oe, m)
            if e1 < err:
                better = True
                break
            step *= 0.5
        if not better:
            for k in range(q.shape[0]):
                q[k] = q0[k]
            kinematics(md, ws, ci, cf, cws, q, q, False, False)
            break
        st = kinematics(md, ws, ci, cf, cws, q, q, False, True)
        if st != OK:
            return st
        err = _norm_e(cws, oe, m)
    big = 0.0
    row = 0
    for r in range(m):
        if abs(cws[oe + r]) > big:
            big = abs(cws[oe + r])
            row = r
    info[0] = err
    info[1] = it
    info[2] = row
    return OK if err <= tol else NOT_CLOSED


@njit(**JIT)
def velocity_k(md, ws, ci, cf, cws, q, v, free, info):
    """v[free] from J v = 0 (in place).  info[0] = ‖J v‖ after."""
    if not _sizes_ok(md, ws, ci, cws, q, v, True) or info.shape[0] < 1:
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    m = ci[CI_M]
    nv = ci[2]
    nf = free.shape[0]
    co = offsets(ci[CI_NC], m, nv)
    st = kinematics(md, ws, ci, cf, cws, q, v, False, True)
    if st != OK:
        return st
    for i in range(nf):
        v[free[i]] = 0.0
    A = cws[co[O_B]:co[O_B] + m * nf].reshape((m, nf))
    b = cws[co[O_C]:co[O_C] + m]
    for r in range(m):
        acc = 0.0
        for k in range(nv):
            acc += cws[co[O_J] + r * nv + k] * v[k]
        b[r] = -acc
        for i in range(nf):
            A[r, i] = cws[co[O_J] + r * nv + free[i]]
    dx = cws[co[O_Y]:co[O_Y] + nv]
    sol = cws[co[O_COD] + 3 * nf:co[O_COD] + 3 * nf + 4]
    lstsq_min_norm(A, m, nf, b, dx, cws[co[O_COD]:co[O_COD] + 3 * nf], RANK_TOL, sol)
    for i in range(nf):
        v[free[i]] = dx[i]
    info[0] = sol[0]
    return OK if all_finite(v) else BAD_RESULT


def _free(model, fixed):
    """(free DOF indices, q index per DOF (-1 for free-flyer DOFs), free-flyers' (q index,
    position of their first DOF in free))."""
    fixed = () if fixed is None else fixed
    if isinstance(fixed, str):
        raise ValueError(f"fixed: expected a sequence of joint names, got the string {fixed!r}")
    fixed = set(fixed)
    unknown = sorted(str(f) for f in fixed if f not in model.joint_names)
    if unknown:
        raise ValueError(f"fixed: {unknown} are not DOF joints of the model (its joints: "
                         f"{list(model.joint_names)})")
    free: list = []
    ffs: list = []
    qmap = np.full(model.nv, -1, dtype=np.int64)
    for name, t, iq, iv, n in zip(model.joint_names, model.joint_types, model.idx_q, model.idx_v, model.joint_nv):
        if t != "floating":
            qmap[iv:iv + n] = np.arange(iq, iq + n)
        if name in fixed:
            continue
        if t == "floating":
            ffs.append((iq, len(free)))
        free.extend(range(iv, iv + n))
    return np.array(free, dtype=np.int64), qmap, np.array(ffs, dtype=np.int64).reshape(-1, 2)


def close_loops(model, q, constraints=None, *, fixed=None, tol=1e-12, max_iter=50):
    """q with every constraint closed (‖e‖ <= ``tol``), moving only the DOFs of the joints
    not in ``fixed`` (joint names: the measured ones) from ``q`` (which also picks the
    assembly branch).  Raises ValueError naming the constraint with the largest error
    when the loops cannot be closed from ``q`` (module docstring)."""
    not_model(model)
    cs = constraint_set(model, constraints)
    q = np.array(vec(q, model.nq, "q"), dtype=float)
    if q.ndim != 1:
        raise ValueError(f"q: single states only, expected shape ({model.nq},), got {describe(q)}")
    tol = real_number(tol, "tol", "a number > 0")
    if not (tol > 0 and np.isfinite(tol)):
        raise ValueError(f"tol: expected a finite number > 0, got {tol}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter: expected an integer >= 1, got {max_iter!r}")
    free, qmap, ffs = _free(model, fixed)
    info = np.zeros(3)
    st = close_k(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, np.empty_like(q), free, qmap,
                 ffs, float(tol), int(max_iter), info)
    if st == NOT_CLOSED:
        row = int(info[2])
        k = next(i for i, s in enumerate(cs.rows) if s.start <= row < s.stop)
        raise ValueError(f"close_loops: the loops cannot be closed from this q (out of reach, or singular "
                         f"on the way): constraint {cs.constraints[k].name!r} keeps an error of "
                         f"{abs(rbd_error_row(cs, row)):.3g} in {cs.names[row].split('/')[-1]} "
                         f"(‖e‖ = {info[0]:.3g} after {int(info[1])} Gauss-Newton steps; "
                         f"free DOFs: {len(free)})")
    check(st, "v", args=(("q", q),))
    return q


def rbd_error_row(cs, row):
    """The last computed error's row ``row`` (this thread's workspace)."""
    co = offsets(cs.ci[CI_NC], cs.m, cs.ci[2])
    return cs.workspace()[co[O_E] + row]


def loop_velocity(model, q, v, constraints=None, *, fixed=None):
    """v with the velocities of the joints not in ``fixed`` replaced by those that keep the
    loops closed: J q̇ = 0 given the fixed joints' velocities (minimum-norm least squares:
    unique where the passive block is square and regular).  ``q`` should have the loops
    closed (:func:`close_loops`)."""
    not_model(model)
    cs = constraint_set(model, constraints)
    q = vec(q, model.nq, "q")
    v = np.array(vec(v, model.nv, "v"), dtype=float)
    if q.ndim != 1 or v.ndim != 1:
        raise ValueError("loop_velocity: single states only (q and v 1-D)")
    free, _, _ = _free(model, fixed)
    info = np.zeros(1)
    st = velocity_k(model.md_k, model.workspace(), cs.ci_k, cs.cf_k, cs.workspace(), q, v, free, info)
    check(st, "v", args=(("q", q), ("v", v)))
    return v
