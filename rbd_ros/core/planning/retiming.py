"""``rbd.retime``: the time-optimal parameterisation of a joint-space path under
velocity, acceleration and torque limits (TOPP-RA, ``reachability.py``).

The path: a cubic spline (scipy's CubicSpline, "not-a-knot" ends, as TOPP-RA's
``SplineInterpolator``) through the waypoints, in the path parameter s = the
cumulative joint-space distance between waypoints (chord length: s in rad, or m for
prismatic joints, so unevenly spaced waypoints do not make the spline swing).  Two
waypoints give a straight line.  The retimed motion starts and ends at rest.

The constraints, at every gridpoint s_k, for x = ṡ² and u = s̈ with q' = dq/ds,
q'' = d²q/ds²:

* velocity  |q'_j| √x <= v_max_j;
* acceleration  |q'_j u + q''_j x| <= a_max_j;
* torque  |a_j u + b_j x + c_j + d_j q'_j √x| <= τ_max_j with a = M(q) q',
  b = M(q) q'' + C(q, q') q', c = g(q) + f_c sign(q') (the model's armature in M,
  its payloads in M, C and g; Coulomb friction f_c as toppra's ``fs_coef``), all
  from batch kernels (``rnea`` on a gravity-free twin, ``gravity``).  Viscous
  friction d q̇ = d q' √x is not linear in x: it is bounded above by its tangent at
  a point x0 (√x <= (x0 + x) / (2 √x0), so the constraint stays linear and
  conservative), on the side it pushes towards; x0 is first the speed found without
  damping (never a weaker bound than damping · v_max), then the speed found with that
  bound, so the bound is nearly exact at the result's speed.

Constraints hold at both ends of every grid interval (TOPP-RA's interpolation
discretisation); the result is time-optimal for this discretisation (the greedy
forward pass over the controllable sets).
"""
from dataclasses import dataclass

import numpy as np

from ..calls.checked import describe, not_model
from ..calls.public import gravity, rnea
from ..model.checks import real_array
from ..model.errors import BOUNDS
from .limits import dof_names, limit_vector, scale_factor
from .reachability import OK, controllable_sets, forward_pass

MIN_GRIDPOINTS = 100     # grid=None: the waypoints, intervals split evenly up to this many gridpoints
MIN_GRID = 10            # the fewest gridpoints grid=<int> may ask for
MAX_GRID = 1_000_000
DUPLICATE_TOL = 1e-9     # a waypoint this close (rad or m, joint-space norm) to the previous one is dropped
POSITION_BOUND = BOUNDS["length"]   # |waypoint| (rad or m), as the core bounds every length
POSITION_TOL = 1e-9      # the spline may leave a position limit by this much (rounding)
BIND_TOL = 1e-3          # a constraint "binds" at a sample within 0.1 % of its limit
KINDS = ("", "velocity", "acceleration", "effort")


@dataclass(frozen=True, eq=False)
class RetimeResult:
    """The retimed path, sampled at the gridpoints (N samples, nv joints, DOF order).

    ``t`` (N,) time from start (s); ``s``, ``sd``, ``sdd`` (N,) path parameter, ṡ, s̈;
    ``q``, ``v``, ``a``, ``tau`` (N, nv) position, velocity, acceleration and the torque
    the model needs (rigid-body inverse dynamics with armature and payloads, plus
    damping · v + friction · sign(q'), the direction of motion); ``duration`` (s).
    s̈ at a sample is the one on the interval that starts there (the last sample:
    on the interval that ends there).  ``binding`` (N,) which constraint is within
    ``BIND_TOL`` (0.1 %) of its limit on the sample's interval ("velocity",
    "acceleration", "effort"; "" none), ``binding_joint`` (N,) its DOF (-1: none),
    ``utilisation`` (N, 3) the largest |value| / limit over the joints per kind
    (velocity, acceleration, effort) on the sample's interval, ``joint_names``
    the DOFs' joints; ``limiting_joint`` and ``limiting_kind``: the joint that binds
    at the most samples and its most frequent kind of limit."""
    t: np.ndarray
    s: np.ndarray
    sd: np.ndarray
    sdd: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    tau: np.ndarray
    duration: float
    binding: np.ndarray
    binding_joint: np.ndarray
    utilisation: np.ndarray
    joint_names: tuple

    def _limiting_dof(self):
        j = self.binding_joint[self.binding_joint >= 0]
        return int(np.bincount(j).argmax()) if j.size else -1

    @property
    def limiting_joint(self):
        """The joint whose limits bind at the most samples (None if none binds)."""
        j = self._limiting_dof()
        return None if j < 0 else self.joint_names[j]

    @property
    def limiting_kind(self):
        """The kind of limit ("velocity", "acceleration", "effort") that binds most often
        for ``limiting_joint`` (None if none binds)."""
        j = self._limiting_dof()
        if j < 0:
            return None
        kinds, counts = np.unique(self.binding[self.binding_joint == j], return_counts=True)
        return str(kinds[counts.argmax()])


# ----------------------------------------------------------------------------- arguments

def _check_model(model):
    not_model(model)
    if model.nq != model.nv or "floating" in model.joint_types:
        raise ValueError("model: retime needs joints whose velocity is the derivative of their position "
                         "(revolute, continuous, prismatic, planar); this model has a floating joint")


def _waypoints(model, waypoints):
    """((K', nq) checked waypoints, consecutive near-duplicates dropped; (K',) the index of
    each in ``waypoints``, so errors name the caller's waypoints)."""
    nq = model.nq
    wp = real_array(waypoints, "waypoints", f"a (K, {nq}) array of joint positions, K >= 2")
    if wp.ndim != 2 or wp.shape[1] != nq or wp.shape[0] < 2:
        raise ValueError(f"waypoints: expected a (K, {nq}) array of joint positions with K >= 2, "
                         f"got {describe(waypoints)}")
    bad = np.argwhere(~(np.abs(wp) <= POSITION_BOUND))
    if bad.size:
        k, j = bad[0]
        raise ValueError(f"waypoints[{k}, {j}]: expected finite joint positions of magnitude <= "
                         f"{POSITION_BOUND:g} (rad or m), got {wp[k, j]}")
    lim = model.position_limit
    out = np.argwhere((wp < lim[:, 0]) | (wp > lim[:, 1]))
    if out.size:
        k, j = out[0]
        raise ValueError(f"waypoints[{k}]: joint {dof_names(model)[j]!r} at {wp[k, j]:.6g} is outside its "
                         f"position limits [{lim[j, 0]:.6g}, {lim[j, 1]:.6g}]")
    keep = np.concatenate(([True], np.linalg.norm(np.diff(wp, axis=0), axis=1) > DUPLICATE_TOL))
    kept = wp[keep]
    kept[-1] = wp[-1]          # the path ends exactly at the last waypoint
    index = np.flatnonzero(keep)
    index[-1] = wp.shape[0] - 1
    return kept, index


def _gridpoints(grid, s_wp):
    if grid is None:
        per = max(1, -(-(MIN_GRIDPOINTS - 1) // (s_wp.shape[0] - 1)))
        if per == 1:
            return s_wp.copy()
        f = np.arange(per) / per
        inner = (s_wp[:-1, None] + np.diff(s_wp)[:, None] * f).ravel()
        return np.append(inner, s_wp[-1])
    if isinstance(grid, (bool, np.bool_)) or not isinstance(grid, (int, np.integer)) \
            or not MIN_GRID <= grid <= MAX_GRID:
        raise ValueError(f"grid: expected None (the waypoints, at least {MIN_GRIDPOINTS} gridpoints) or an "
                         f"integer number of gridpoints in [{MIN_GRID}, {MAX_GRID}], got {describe(grid)}")
    return np.linspace(0.0, s_wp[-1], int(grid))


# ----------------------------------------------------------------------------- constraints

class _Path:
    """The spline and what the constraints need of it at the gridpoints.  ``index``: the
    caller's index of each of the (merged) waypoints ``wp``, for error messages."""

    def __init__(self, model, wp, grid, index):
        s_wp = np.concatenate(([0.0], np.cumsum(np.linalg.norm(np.diff(wp, axis=0), axis=1))))
        self.s_wp = s_wp
        self.index = index
        # imported here, not with the module: scipy.interpolate is ~0.13 s of CPU (and
        # scipy.optimize, scipy.spatial with it) that every process importing rbd_ros.core,
        # the node's start before its first torque among them, would pay for a planner call
        from scipy.interpolate import CubicSpline
        spline = CubicSpline(s_wp, wp, bc_type="not-a-knot", axis=0)
        self.s = _gridpoints(grid, s_wp)
        self.q = spline(self.s)
        self.dq = spline(self.s, 1)
        self.ddq = spline(self.s, 2)
        lim = model.position_limit
        with np.errstate(invalid="ignore"):
            out = np.argwhere((self.q < lim[:, 0] - POSITION_TOL) | (self.q > lim[:, 1] + POSITION_TOL))
        if out.size:
            i, j = out[0]
            a, b = self.waypoint(i)
            raise ValueError(f"waypoints: the cubic spline through them leaves joint {dof_names(model)[j]!r}'s "
                             f"position limits [{lim[j, 0]:.6g}, {lim[j, 1]:.6g}] between waypoints {a} and "
                             f"{b} (q = {self.q[i, j]:.6g}); add waypoints there")
        np.clip(self.q, lim[:, 0], lim[:, 1], out=self.q)

    def waypoint(self, i):
        """The caller's indices (first, last) of the two waypoints around gridpoint i."""
        k = min(int(np.searchsorted(self.s_wp, self.s[i], side="right")) - 1, self.s_wp.shape[0] - 2)
        return int(self.index[k]), int(self.index[k + 1])


def _torque_terms(model, path):
    """a = M q', b = M q'' + C(q, q') q', g(q), each (N+1, nv), from the batch kernels."""
    still = model.with_gravity((0.0, 0.0, 0.0))
    zero = np.zeros_like(path.dq)
    a = rnea(still, path.q, zero, path.dq)
    b = rnea(still, path.q, path.dq, path.ddq)
    return a, b, gravity(model, path.q)


def _rows(path, vmax, amax, tmax, torque, fc, damping, x0):
    """(Au, Bx, G, xub): the one-sided rows at every gridpoint and the velocity bound on x."""
    dq, ddq = path.dq, path.ddq
    n, nv = dq.shape
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        xub = np.min(np.where(dq != 0.0, (vmax / np.abs(dq)) ** 2, np.inf), axis=1)
    blocks = []
    if np.any(np.isfinite(amax)):
        blocks += [(dq, ddq, np.broadcast_to(amax, (n, nv))), (-dq, -ddq, np.broadcast_to(amax, (n, nv)))]
    if torque is not None:
        A, B, g = torque
        sgn = np.sign(dq)
        c = g + fc * sgn
        w = damping * np.abs(dq)                      # viscous: sign(q') w √x
        if np.any(w > 0):
            r = np.sqrt(x0)[:, None]
            slope, offset = w / (2.0 * r), 0.5 * w * r
        else:
            slope = offset = np.zeros_like(dq)
        up, down = sgn > 0, sgn < 0
        blocks += [(A, B + up * slope, tmax - c - up * offset),
                   (-A, -B + down * slope, tmax + c - down * offset)]
    if not blocks:
        z = np.zeros((n, 0))
        return z, z, z, xub
    Au = np.ascontiguousarray(np.concatenate([blk[0] for blk in blocks], axis=1))
    Bx = np.ascontiguousarray(np.concatenate([blk[1] for blk in blocks], axis=1))
    G = np.ascontiguousarray(np.concatenate([blk[2] for blk in blocks], axis=1))
    G[~np.isfinite(G)] = np.inf                        # an infinite limit: the row is off
    return Au, Bx, G, xub


# ----------------------------------------------------------------------------- solving

def _infeasible(model, path, i, torque, tmax, fc):
    """The ValueError for a path that cannot be followed near gridpoint i."""
    a, b = path.waypoint(i)
    where = f"near waypoints {a}-{b} (s = {path.s[i]:.6g})"
    if torque is None:
        return ValueError(f"velocity_limits: the path cannot be followed within the limits {where}")
    c = np.abs(torque[2][i] + fc * np.sign(path.dq[i]))
    over = np.flatnonzero(c > tmax)
    detail = ""
    if over.size:
        j = int(over[np.argmax(c[over] / tmax[over])])
        detail = (f": holding still there needs |tau| = {c[j]:.6g} at joint {dof_names(model)[j]!r}, "
                  f"above its limit {tmax[j]:.6g}")
    return ValueError(f"effort_limits: the path cannot be followed within the effort limits {where}; no path "
                      f"acceleration keeps every joint's torque within its limit there{detail}")


def _solve(model, path, rows, limits):
    """(x, u): squared path speeds (N+1,) and path accelerations (N,) of the time-optimal
    parameterisation for ``rows``; ValueError naming the limit when there is none."""
    Au, Bx, G, xub = rows
    n = path.s.shape[0]
    stall = np.flatnonzero(xub[1:-1] <= 0.0)
    if stall.size:                                  # v_max / |q'| underflows: no motion at all
        a, b = path.waypoint(int(stall[0]) + 1)
        raise ValueError(f"velocity_limits: too small to move along the path near waypoints {a}-{b}")
    K = np.empty((n, 2))
    x, u = np.empty(n), np.empty(n - 1)
    st = controllable_sets(Au, Bx, G, xub, path.s, K)
    if st != OK:
        raise _infeasible(model, path, st, *limits)
    st = forward_pass(Au, Bx, G, path.s, K, x, u)
    if st == n:                                     # x = 0 is not controllable at the start
        raise _infeasible(model, path, 0, *limits)
    if st != OK:
        if not K[st + 1, 1] < np.inf:
            raise ValueError(f"velocity_limits: nothing bounds the speed near waypoint {path.waypoint(st)[0]}: "
                             "give finite velocity_limits, acceleration_limits or effort_limits")
        raise RuntimeError(f"retime: the forward pass found no path acceleration at gridpoint {st} of a "
                           "controllable path (numerical failure; a finer or coarser grid may help)")
    return x, u


def _samples(path, x, u, torque, fc, damping):
    """Per sample: ṡ, s̈, v, a, tau, and a, tau at the end of the sample's interval."""
    sd = np.sqrt(x)
    sdd = np.append(u, u[-1])
    dq, ddq = path.dq, path.ddq
    v = dq * sd[:, None]
    a = dq * sdd[:, None] + ddq * x[:, None]
    # the end of interval i (gridpoint i+1 at x[i+1] with u[i]); the last sample is its own end
    a_end = np.vstack((dq[1:] * u[:, None] + ddq[1:] * x[1:, None], a[-1:]))
    if torque is None:
        return sd, sdd, v, a, None, a_end, None
    A, B, g = torque
    c = g + fc * np.sign(dq)
    tau = A * sdd[:, None] + B * x[:, None] + c + damping * v
    tau_end = np.vstack((A[1:] * u[:, None] + B[1:] * x[1:, None] + c[1:] + damping * v[1:], tau[-1:]))
    return sd, sdd, v, a, tau, a_end, tau_end


def _binding(v, a, a_end, tau, tau_end, vmax, amax, tmax):
    """(binding kind index (N,), DOF (N,), utilisation (N, 3))."""
    n, nv = v.shape
    ratios = np.zeros((3, n, nv))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios[0] = np.abs(v) / vmax
        ratios[1] = np.maximum(np.abs(a), np.abs(a_end)) / amax
        ratios[2] = np.maximum(np.abs(tau), np.abs(tau_end)) / tmax
    np.nan_to_num(ratios, copy=False, nan=0.0)
    util = ratios.max(axis=2).T
    kind = util.argmax(axis=1)
    joint = ratios[kind, np.arange(n)].argmax(axis=1)
    bound = util[np.arange(n), kind] >= 1.0 - BIND_TOL
    return np.where(bound, kind + 1, 0), np.where(bound, joint, -1), util


def retime(model, waypoints, *, velocity_limits=None, acceleration_limits=None, effort_limits=None,
           velocity_scale=1.0, acceleration_scale=1.0, effort_scale=1.0, grid=None):
    """The time-optimal motion along the path through ``waypoints`` within the joint limits.

    ``waypoints``: (K, nq) joint positions, K >= 2, within the model's position
    limits (the spline between them too); consecutive ones closer than 1e-9 (rad or
    m) are merged.  The path is a not-a-knot cubic spline in the chord-length path
    parameter (see the module docstring).  Limits, per DOF (nv numbers or one for all,
    each > 0; inf: none): ``velocity_limits`` (rad/s or m/s; None: the URDF's),
    ``acceleration_limits`` (rad/s² or m/s²; None: none, URDF has no field),
    ``effort_limits`` (N·m or N; None: the URDF's), each multiplied by its
    ``*_scale`` in (0, 1].  ``grid``: None (the waypoints' path parameters, each
    interval split evenly until there are at least 100 gridpoints) or a number of
    gridpoints evenly spaced in s (10 to 1e6).  The model's payloads, armature and
    URDF friction count (see the module docstring for how friction enters).

    Returns a :class:`RetimeResult` sampled at the gridpoints, starting and ending at
    rest: at every sample |v| <= velocity limit, |a| <= acceleration limit and |tau| <=
    effort limit (to rounding: <= 1e-9 relative), and so at both ends of every
    interval of constant s̈.  Between samples the continuous motion may exceed a
    limit by O(grid step).  Time-optimal for the grid.

    Raises ValueError naming the argument: a bad ``waypoints`` (shape, non-finite,
    outside the position limits), a zero, negative or NaN limit, a scale outside
    (0, 1], a bad ``grid``, no finite limit at all, or limits that cannot be kept
    (``effort_limits``: e.g. the arm cannot hold itself somewhere on the path);
    ``model`` with a floating joint."""
    _check_model(model)
    wp, index = _waypoints(model, waypoints)
    vmax = limit_vector(model, velocity_limits, "velocity_limits", "rad/s or m/s", model.velocity_limit) \
        * scale_factor(velocity_scale, "velocity_scale")
    amax = limit_vector(model, acceleration_limits, "acceleration_limits", "rad/s^2 or m/s^2") \
        * scale_factor(acceleration_scale, "acceleration_scale")
    tmax = limit_vector(model, effort_limits, "effort_limits", "N m or N", model.effort_limit) \
        * scale_factor(effort_scale, "effort_scale")
    if wp.shape[0] < 2:
        if grid is not None:
            _gridpoints(grid, np.array([0.0, 1.0]))        # still refuse a bad grid
        return _at_rest(model, wp[0], vmax, amax, tmax)
    path = _Path(model, wp, grid, index)
    fc = model.friction
    damping = model.damping
    torque = _torque_terms(model, path) if np.any(np.isfinite(tmax)) else None
    limits = (torque, tmax, fc)
    if torque is not None and np.any(damping > 0):
        # viscous friction: tangent at the speed found without it (an upper bound of the
        # result's), then at the speed found with that bound
        x0 = _solve(model, path, _rows(path, vmax, amax, tmax, torque, fc, 0.0 * damping, None), limits)[0]
        for _ in range(2):
            x0 = np.maximum(x0, 1e-12 * max(x0.max(), 1e-300))
            x, u = _solve(model, path, _rows(path, vmax, amax, tmax, torque, fc, damping, x0), limits)
            x0 = x
    else:
        x, u = _solve(model, path, _rows(path, vmax, amax, tmax, torque, fc, damping, None), limits)
    sd, sdd, v, a, tau, a_end, tau_end = _samples(path, x, u, torque, fc, damping)
    if tau is None:           # no effort limit: the torques are only reported
        tau = tau_end = rnea(model, path.q, v, a) + damping * v + fc * np.sign(path.dq)
    step = sd[:-1] + sd[1:]
    if np.any(step <= 0.0):
        i = int(np.flatnonzero(step <= 0.0)[0])
        raise _infeasible(model, path, i, *limits)
    t = np.concatenate(([0.0], np.cumsum(2.0 * np.diff(path.s) / step)))
    kind, joint, util = _binding(v, a, a_end, tau, tau_end, vmax, amax, tmax)
    return RetimeResult(t=t, s=path.s, sd=sd, sdd=sdd, q=path.q, v=v, a=a, tau=tau, duration=float(t[-1]),
                        binding=np.array(KINDS)[kind], binding_joint=joint,
                        utilisation=util, joint_names=tuple(dof_names(model)))


def _at_rest(model, q, vmax, amax, tmax):
    """The result for a path of zero length: one sample, at rest."""
    z = np.zeros((1, model.nv))
    tau = gravity(model, q)[None, :]
    kind, joint, util = _binding(z, z, z, tau, tau, vmax, amax, tmax)
    return RetimeResult(t=np.zeros(1), s=np.zeros(1), sd=np.zeros(1), sdd=np.zeros(1), q=q[None, :].copy(),
                        v=z, a=z.copy(), tau=tau, duration=0.0,
                        binding=np.array(KINDS)[kind], binding_joint=joint,
                        utilisation=util, joint_names=tuple(dof_names(model)))
