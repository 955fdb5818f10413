"""Joint-torque regressor: tau = Y(q, qd, qdd) pi (Atkeson, An, Hollerbach 1986).

Inverse dynamics is linear in the inertial parameters.  Body i's spatial
inertia about its frame origin, in its frame, is

    I_i = [[Ibar, [h]x], [[h]x^T, m 1]],   pi_i = [m, hx, hy, hz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]

(h = m c, Ibar the rotational inertia about the body origin: Pinocchio's
``Inertia.toDynamicParameters`` order), so I_i = sum_k pi_ik U_k with U_k the
spatial inertia of the k-th unit vector, and body i's net force of the RNEA
forward sweep is

    f_i = I_i a_i + v_i x* I_i v_i = A_i pi_i,    A_i[:, k] = U_k a_i + v_i x* U_k v_i

(a_i includes gravity: a_0 = -a_grav, as in ``rnea.py``).  The backward sweep
carries f_i to every ancestor j (f -> X_j^T f per step) and joint j feels
tau_j += S_j^T f, so the column block of body i is

    Y[dofs_j, block_i] = S_j^T (X_{j<-i})^T A_i     for every j on the path i -> root.

Mimic joints are folded as in the rest of the reference (``jcalc`` gives a
mimic joint S = mult * axis on its master's DOF, so ``tau[dofs] +=`` sums
Gᵀ tau_full).  Optional per-DOF columns after the 10 nb inertial ones, in this
order: armature (qdd_k), viscous friction (qd_k, the URDF ``damping``) and
Coulomb friction (tanh(qd_k / eps), the URDF ``friction``; the law of
``rbd_ros.core.friction``), so that

    Y [pi; model.armature; model.damping; model.friction] = rnea + friction(model, qd, eps).

Every function works on a batch of N states at once (leading axis N; 6x6
matrices become (N, 6, 6) stacks): the maths is the textbook one, numpy does
the loop over samples.  Slow next to a compiled kernel, fast enough for
identification on tens of thousands of samples.
"""
import numpy as np

from .jcalc import S_FREE
from .spatial import inertia, quat_to_matrix
from .tree import a_grav, bodies

N_PARAMS = 10


def spatial_inertia(p):
    """6x6 spatial inertia of one 10-vector p (any real numbers: linear in p)."""
    m, h = p[0], p[1:4]
    Ibar = np.array([[p[4], p[5], p[7]], [p[5], p[6], p[8]], [p[7], p[8], p[9]]])
    return inertia(m, h, Ibar)


UNIT_INERTIAS = np.array([spatial_inertia(e) for e in np.eye(N_PARAMS)])     # (10, 6, 6): U_k


# ------------------------------------------------------------------ batched spatial algebra

def _skew(x):
    """(N, 3) -> (N, 3, 3): [x]x for each row."""
    S = np.zeros(x.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2], S[..., 1, 2] = -x[..., 2], x[..., 1], -x[..., 0]
    S[..., 1, 0], S[..., 2, 0], S[..., 2, 1] = x[..., 2], -x[..., 1], x[..., 0]
    return S


def _plux(E, r):
    """(N, 3, 3), (N, 3) -> (N, 6, 6): X = rot(E) xlt(r) = [[E, 0], [-E [r]x, E]]."""
    X = np.zeros(E.shape[:-2] + (6, 6))
    X[..., :3, :3] = X[..., 3:, 3:] = E
    X[..., 3:, :3] = -E @ _skew(r)
    return X


def _rodrigues(u, angle):
    """(N,) angles about the unit axis u -> (N, 3, 3) rotation matrices R(u, angle)."""
    K = _skew(np.asarray(u, dtype=float))
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def joint_transforms(body, Q):
    """(X_J, S) of ``body`` at the N configurations Q (N, nq): X_J (N, 6, 6) as
    ``jcalc`` (revolute rot(R(u, θ)ᵀ), prismatic xlt(u d), free rot(R(quat)ᵀ)
    xlt(p)), S (6, nv_j), folded by the mimic multiplier."""
    N = Q.shape[0]
    if body.jtype == "free":
        x = Q[:, body.qi:body.qi + 7]
        R = np.array([quat_to_matrix(*row[3:7]) for row in x]).reshape(N, 3, 3)
        return _plux(np.swapaxes(R, 1, 2), x[:, :3]), S_FREE.copy()
    qj = body.mult * Q[:, body.qi] + body.offset
    u = body.axis
    if body.jtype == "revolute":
        E = np.swapaxes(_rodrigues(u, qj), 1, 2)
        return _plux(E, np.zeros((N, 3))), body.mult * np.concatenate([u, np.zeros(3)])[:, None]
    return _plux(np.broadcast_to(np.eye(3), (N, 3, 3)), qj[:, None] * u), \
        body.mult * np.concatenate([np.zeros(3), u])[:, None]


def cross_motion(v, m):
    """v x m for stacks of motion vectors [w; v] (..., 6)."""
    w, vl = v[..., :3], v[..., 3:]
    return np.concatenate([np.cross(w, m[..., :3]), np.cross(w, m[..., 3:]) + np.cross(vl, m[..., :3])], axis=-1)


def cross_force(v, f):
    """v x* f for a stack of motion vectors v and force vectors f = [n; f] (..., 6)."""
    w, vl = v[..., :3], v[..., 3:]
    return np.concatenate([np.cross(w, f[..., :3]) + np.cross(vl, f[..., 3:]), np.cross(w, f[..., 3:])], axis=-1)


def _mv(X, x):
    """(N, 6, 6) @ (N, 6) row by row."""
    return np.einsum("nij,nj->ni", X, x)


# ------------------------------------------------------------------ the regressor

def body_force_regressor(v, a):
    """A (N, 6, 10) with f = I a + v x* I v = A pi for every 10-vector pi."""
    Ua = np.einsum("kij,nj->nki", UNIT_INERTIAS, a)                   # (N, 10, 6): U_k a
    Uv = np.einsum("kij,nj->nki", UNIT_INERTIAS, v)                   # (N, 10, 6): U_k v
    return np.swapaxes(Ua + cross_force(v[:, None, :], Uv), 1, 2)


def regressor_batch(model, Q, V, A, armature=False, damping=False, friction=False, velocity_eps=1e-3):
    """Y (N, nv, p) with tau_n = Y[n] pi for the N states (Q (N, nq), V, A (N, nv)).

    p = 10 nb (+ nv per optional block): pi = [pi_0 .. pi_{nb-1}] of
    ``model.nbodies`` bodies in model order (each [m, m c, Ixx Ixy Iyy Ixz Iyz
    Izz] about the body origin, body frame), then with ``armature`` the per-DOF
    rotor inertia, with ``damping`` the viscous and with ``friction`` the
    Coulomb coefficient of each DOF (tanh(qd / velocity_eps))."""
    Q, V, A = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (Q, V, A))
    tree = bodies(model)
    N, nb, nv = Q.shape[0], len(tree), model.nv
    Y = np.zeros((N, nv, N_PARAMS * nb))
    Xup, S, v, a = [None] * nb, [None] * nb, [None] * nb, [None] * nb
    a0 = np.broadcast_to(-a_grav(model), (N, 6))
    for i, b in enumerate(tree):
        XJ, S[i] = joint_transforms(b, Q)
        Xup[i] = XJ @ b.Xtree
        vJ = V[:, b.dofs] @ S[i].T
        vp, ap = (np.zeros((N, 6)), a0) if b.parent < 0 else (v[b.parent], a[b.parent])
        v[i] = _mv(Xup[i], vp) + vJ
        a[i] = _mv(Xup[i], ap) + A[:, b.dofs] @ S[i].T + cross_motion(v[i], vJ)
    for i in range(nb):
        F = body_force_regressor(v[i], a[i])                         # (N, 6, 10) in body i's frame
        j = i
        while j >= 0:
            Y[:, tree[j].dofs, N_PARAMS * i:N_PARAMS * (i + 1)] += np.einsum("dj,ndk->njk", S[j], F)
            F = np.swapaxes(Xup[j], 1, 2) @ F                        # to the parent's frame: X_j^T F
            j = tree[j].parent
    extra = []
    for on, x in ((armature, A), (damping, V), (friction, np.tanh(V / velocity_eps) if friction else None)):
        if on:
            D = np.zeros((N, nv, nv))
            D[:, np.arange(nv), np.arange(nv)] = x
            extra.append(D)
    return np.concatenate([Y] + extra, axis=2) if extra else Y


def regressor(model, q, v, a, armature=False, damping=False, friction=False, velocity_eps=1e-3):
    """Y (nv, p) with tau = Y pi at one state (see ``regressor_batch``)."""
    return regressor_batch(model, q, v, a, armature, damping, friction, velocity_eps)[0]


def parameter_vector(model, params=None, armature=False, damping=False, friction=False):
    """The vector pi the regressor multiplies: the bodies' 10-vectors (``params``
    (nb, 10), default the model's own, payloads included) then the chosen
    per-DOF blocks from the model."""
    if params is None:
        params = np.array([body_parameters(b.I) for b in bodies(model)]).reshape(-1, N_PARAMS)
    parts = [np.asarray(params, dtype=float).reshape(-1)]
    for on, x in ((armature, model.armature), (damping, model.damping), (friction, model.friction)):
        if on:
            parts.append(np.asarray(x, dtype=float))
    return np.concatenate(parts)


def body_parameters(I):
    """The 10-vector of a 6x6 spatial inertia about the body origin (inverse of ``spatial_inertia``)."""
    Ibar, H, m = I[:3, :3], I[:3, 3:], I[5, 5]
    h = np.array([H[2, 1], H[0, 2], H[1, 0]])
    return np.array([m, *h, Ibar[0, 0], Ibar[0, 1], Ibar[1, 1], Ibar[0, 2], Ibar[1, 2], Ibar[2, 2]])
