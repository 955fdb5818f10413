"""The joint-torque regressor as identification uses it: the one switch point
to the compiled kernel, the base parameters, per-joint normal equations and
the condition number; and what ``identify`` and ``identify_payload`` share: the
checks of the recorded samples, the rows a Coulomb friction model leaves out, the
data term in residual form, ``ExcitationError``.

Parameter vector (``p`` entries): the bodies' 10-vectors (``inertial.py``),
then per DOF the armature, the viscous (``damping``) and the Coulomb
(``friction``) coefficient: tau = Y pi + noise with

    Y = [Y_rigid(q, qd, qdd) | diag(qdd) | diag(qd) | diag(tanh(qd / eps))].
"""
import functools
from dataclasses import dataclass

import numpy as np

from ..calls.public import regressor
from ..model.inertial import PARAM_NAMES

CHUNK = 2000            # samples per regressor call (bounds the memory: CHUNK * nv * p floats)


def single_threaded_blas(f):
    """Decorator: run ``f`` with BLAS on one thread (threadpoolctl, when
    installed).  The matrices of the identification are small (thousands x
    ~100), where OpenBLAS's threads cost more than they give on a busy machine."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            from threadpoolctl import threadpool_limits  # optional dependency (the identification extra)
        except ImportError:
            return f(*args, **kwargs)
        with threadpool_limits(1, user_api="blas"):
            return f(*args, **kwargs)
    return wrapper


def n_parameters(model):
    """Length of the full parameter vector: 10 nb + 3 nv."""
    return 10 * model.nbodies + 3 * model.nv


def regressor_rows(model, Q, V, A, velocity_eps):
    """Y (N, nv, 10 nb + 3 nv) at the N states, every optional column included
    (``rbd.regressor``, the compiled kernel; its numpy twin is reference/regressor.py).
    Every use of the regressor in the identification code goes through this function."""
    return regressor(model, np.atleast_2d(Q), np.atleast_2d(V), np.atleast_2d(A), armature=True, damping=True,
                     friction=True, velocity_eps=velocity_eps)


def parameter_names(model, body_names):
    """Readable name of every entry of the full parameter vector."""
    out = [f"{b}.{p}" for b in body_names for p in PARAM_NAMES]
    dofs = dof_names(model)
    for kind in ("armature", "damping", "friction"):
        out += [f"{d}.{kind}" for d in dofs]
    return out


def dof_names(model):
    """One name per DOF (planar joints: ``<joint>/x``, ``/y``, ``/theta``; free-flyer: 6 names)."""
    out = []
    for name, t, nv in zip(model.joint_names, model.joint_types, model.joint_nv):
        if nv == 1:
            out.append(name)
        elif t == "planar":
            out += [f"{name}/x", f"{name}/y", f"{name}/theta"]
        else:
            out += [f"{name}/{a}" for a in ("vx", "vy", "vz", "wx", "wy", "wz")]
    return out


# ------------------------------------------------------------------ normal equations

@dataclass
class NormalEquations:
    """Per-joint sums over the used samples: G[j] = Y_jᵀ Y_j (p, p), b[j] = Y_jᵀ tau_j,
    c[j] = tau_jᵀ tau_j, n[j] rows (Y_j: joint j's rows of the stacked regressor).
    The squared error of any pi on joint j is c_j − 2 b_jᵀ pi + piᵀ G_j pi."""
    G: np.ndarray
    b: np.ndarray
    c: np.ndarray
    n: np.ndarray

    def sse(self, pi):
        """(nv,) sum of squared errors per joint of the parameter vector pi."""
        return np.maximum(self.c - 2.0 * self.b @ pi + np.einsum("k,jkl,l->j", pi, self.G, pi), 0.0)

    def rms(self, pi):
        """(nv,) RMS error per joint of pi over the used rows."""
        return np.sqrt(self.sse(pi) / np.maximum(self.n, 1))


def joint_sigma(joint_noise, nv):
    """``joint_noise`` as the (nv,) noise σ per joint (ValueError naming it unless nv
    finite numbers > 0)."""
    sigma = np.array(joint_noise, dtype=float).reshape(-1)
    if sigma.shape != (nv,) or not np.all(np.isfinite(sigma) & (sigma > 0)):
        raise ValueError(f"joint_noise: expected {nv} finite numbers > 0 (N m or N), got {joint_noise!r}")
    return sigma


def sigma_floor(sigma, rms_tau):
    """σ per joint, at least 1e-6 of the joint's torque RMS and 1e-12 (an exact fit must
    not weigh a joint infinitely)."""
    return np.maximum(sigma, np.maximum(1e-6 * rms_tau, 1e-12))


def normal_equations(model, Q, V, A, tau, velocity_eps, mask=None, progress=None):
    """NormalEquations of the stacked regressor over N samples (chunks of CHUNK).
    ``mask`` (N, nv) bool: the rows to use (None: all); ``progress(k)``: called
    with the number of samples done after each chunk."""
    N, nv = tau.shape
    p = n_parameters(model)
    G, b, c, n = np.zeros((nv, p, p)), np.zeros((nv, p)), np.zeros(nv), np.zeros(nv)
    for k in range(0, N, CHUNK):
        sl = slice(k, min(k + CHUNK, N))
        Y = regressor_rows(model, Q[sl], V[sl], A[sl], velocity_eps)
        t = tau[sl]
        w = np.ones_like(t) if mask is None else mask[sl].astype(float)
        for j in range(nv):
            Yj = Y[:, j, :]
            cols = np.flatnonzero(np.any(Yj != 0.0, axis=0))       # the bodies and DOFs joint j feels
            Ys = np.ascontiguousarray(Yj[:, cols] * w[:, j:j + 1])
            G[j][np.ix_(cols, cols)] += Ys.T @ Ys
            b[j, cols] += Ys.T @ (t[:, j] * w[:, j])
            c[j] += np.sum((t[:, j] * w[:, j]) ** 2)
            n[j] += np.sum(w[:, j])
        if progress is not None:
            progress(sl.stop)
    return NormalEquations(G, b, c, n)


# ------------------------------------------------------------------ base parameters

@dataclass(frozen=True)
class BaseParameters:
    """The identifiable combinations of a set of ``free`` parameters (Gautier &
    Khalil 1990): Y[:, free] pi_free = Y[:, independent] pi_b with

        pi_b = pi[independent] + K pi[dependent]        (r = rank entries)

    for every state.  ``independent`` and ``dependent`` are indices into the
    full parameter vector (together: ``free``).  Columns that never affect the
    torque are dependent with a zero column in K."""
    independent: np.ndarray
    dependent: np.ndarray
    K: np.ndarray
    size: int

    @property
    def rank(self):
        return len(self.independent)

    @property
    def matrix(self):
        """B (r, size) with pi_b = B pi (columns of parameters that are not free: 0)."""
        B = np.zeros((self.rank, self.size))
        B[np.arange(self.rank), self.independent] = 1.0
        B[:, self.dependent] = self.K
        return B

    def to_base(self, pi):
        """pi_b (r,) of the full parameter vector pi."""
        pi = np.asarray(pi, dtype=float)
        return pi[self.independent] + self.K @ pi[self.dependent]

    def to_full(self, pi_b, reference):
        """A full parameter vector with base parameters pi_b: the dependent
        entries keep their value in ``reference`` (e.g. the URDF's), the
        independent ones absorb the rest."""
        pi = np.array(reference, dtype=float)
        pi[self.independent] = np.asarray(pi_b, dtype=float) - self.K @ pi[self.dependent]
        return pi

    def describe(self, names, tol=1e-9):
        """One readable line per base parameter, e.g. ``link7.Izz + 1 joint7.armature``."""
        lines = []
        for r, i in enumerate(self.independent):
            terms = [names[i]] + [f"{self.K[r, k]:+.4g} {names[d]}" for k, d in enumerate(self.dependent)
                                  if abs(self.K[r, k]) > tol]
            lines.append(" ".join(terms))
        return lines


def random_states(model, n, rng):
    """n random (q, qd, qdd): angles within the position limits (±π where
    none), unit quaternions for floating joints, qd, qdd ~ N(0, 1)."""
    lo, hi = model.position_limit[:, 0], model.position_limit[:, 1]
    lo, hi = np.where(np.isfinite(lo), lo, -np.pi), np.where(np.isfinite(hi), hi, np.pi)
    Q = np.zeros((n, model.nq))
    for t, iq, iv, nq in zip(model.joint_types, model.idx_q, model.idx_v, model.joint_nq):
        if t == "floating":
            Q[:, iq:iq + 3] = rng.uniform(-1, 1, (n, 3))
            u = rng.normal(size=(n, 4))
            Q[:, iq + 3:iq + 7] = u / np.linalg.norm(u, axis=1, keepdims=True)
        else:
            Q[:, iq:iq + nq] = rng.uniform(lo[iv:iv + nq], hi[iv:iv + nq], (n, nq))
    return Q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


def base_parameters(model, free=None, n_samples=None, seed=0, rtol=1e-8, velocity_eps=1e-2, still=None,
                    q_still=None):
    """BaseParameters of the ``free`` entries (indices into the full parameter
    vector; default all) from the regressor stacked over random states (QR with
    column pivoting of the column-normalised matrix; rank: |R_kk| > rtol |R_00|).
    Columns whose norm is below 1e-10 of the largest are structurally zero.

    ``still`` (nv,) bool: DOFs that do not move in the data (``identification``):
    in every random state they keep the position ``q_still`` (nq,) (the
    coordinates of joints all of whose DOFs are still), their velocity and
    acceleration are 0 and their torque rows are left out, so the base
    parameters are those such data can identify."""
    from scipy.linalg import qr  # heavy optional dependency (the identification extra)
    p = n_parameters(model)
    free = np.arange(p) if free is None else np.asarray(free, dtype=int)
    n = n_samples or max(50, 3 * len(free) // max(model.nv, 1) + 20)
    Q, V, A = random_states(model, n, np.random.default_rng(seed))
    rows = np.ones(model.nv, dtype=bool)
    if still is not None and np.any(still):
        still = np.asarray(still, dtype=bool)
        held = held_coordinates(model, still)
        Q[:, held] = np.asarray(q_still, dtype=float)[held]
        V[:, still] = A[:, still] = 0.0
        rows = ~still
    W = regressor_rows(model, Q, V, A, velocity_eps)[:, rows, :].reshape(-1, p)[:, free]
    norms = np.linalg.norm(W, axis=0)
    live = norms > 1e-10 * max(norms.max(), 1e-300)
    cols = np.flatnonzero(live)
    _, R, piv = qr(W[:, cols] / norms[cols], mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > rtol * d[0])) if d.size else 0
    Kn = np.linalg.solve(R[:r, :r], R[:r, r:])
    ind, dep = cols[piv[:r]], cols[piv[r:]]
    K = Kn / norms[ind][:, None] * norms[dep][None, :]         # back to the parameters' units
    K[np.abs(K) < 1e-12 * max(np.abs(K).max(initial=0.0), 1.0)] = 0.0
    dead = np.flatnonzero(~live)
    order = np.argsort(ind)
    K = np.concatenate([K[order], np.zeros((r, dead.size))], axis=1)
    return BaseParameters(independent=free[ind[order]], dependent=free[np.concatenate([dep, dead])], K=K, size=p)


def held_coordinates(model, still):
    """(nq,) bool: the q coordinates of the joints all of whose DOFs are in ``still`` (nv,) bool."""
    held = np.zeros(model.nq, dtype=bool)
    for iq, nq, iv, nv in zip(model.idx_q, model.joint_nq, model.idx_v, model.joint_nv):
        if np.all(still[iv:iv + nv]):
            held[iq:iq + nq] = True
    return held


def condition_number(G):
    """Condition number of a stacked regressor W from its Gram matrix G = WᵀW,
    after scaling every column to unit norm (van der Sluis 1969: within sqrt(p)
    of the best column scaling, so the number does not depend on units).  inf
    when a column is zero or the columns are dependent."""
    d = np.sqrt(np.diag(G))
    if G.size == 0:
        return 1.0
    if np.any(d <= 1e-300):
        return float("inf")
    ev = np.linalg.eigvalsh(G / np.outer(d, d))
    return float(np.sqrt(ev[-1] / ev[0])) if ev[0] > ev[-1] * 1e-30 else float("inf")


# ------------------------------------------------------------------ shared by identify and identify_payload

DEFAULT_VELOCITY_EPS = 0.01         # rad/s: the node's default friction_velocity_eps
DEFAULT_COULOMB_MIN_VELOCITY = 0.05  # rad/s (m/s): rows of slower joints are left out when friction is modelled


class ExcitationError(ValueError):
    """The recording does not excite the parameters enough (condition number too large)."""


def samples(model, q, v, a, tau):
    """Validated float arrays (N, nq), (N, nv) x 3; ValueError naming the argument."""
    out = []
    N = None
    for name, x, n in (("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv), ("tau", tau, model.nv)):
        try:
            arr = np.array(x, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected an (N, {n}) array of numbers, got {type(x).__name__}") from None
        if arr.ndim == 1 and n == arr.size:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != n:
            raise ValueError(f"{name}: expected shape (N, {n}), got {arr.shape}")
        if N is not None and arr.shape[0] != N:
            raise ValueError(f"{name}: {arr.shape[0]} samples, but q has {N}")
        N = arr.shape[0]
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            raise ValueError(f"{name}[{bad[0][0]}, {bad[0][1]}] is {arr[tuple(bad[0])]}: expected finite numbers")
        out.append(arr)
    if N == 0:
        raise ValueError("q: no samples")
    return out


def coulomb_mask(model, V, friction_used, min_velocity):
    """(N, nv) bool: the rows to fit; with Coulomb friction in the model, rows
    of joints moving slower than ``min_velocity`` are left out."""
    if not friction_used:
        return np.ones(V.shape, dtype=bool)
    return np.abs(V) >= min_velocity


def data_residual(Gw, bw, n_rows):
    """(M, z) with ||M x − z||² = (xᵀ Gw x − 2 bwᵀ x)/n + const: the weighted
    data term in residual form (eigen-decomposition; directions the data do
    not see are dropped)."""
    S, Vec = np.linalg.eigh(Gw / n_rows)
    keep = S > 1e-14 * max(S[-1], 1e-300)
    S, Vec = S[keep], Vec[:, keep]
    return np.sqrt(S)[:, None] * Vec.T, (Vec.T @ (bw / n_rows)) / np.sqrt(S)
