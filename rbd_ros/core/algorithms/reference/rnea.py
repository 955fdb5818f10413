"""Inverse dynamics by the recursive Newton-Euler algorithm (RBDA Table 5.1, spatial_v2 ``ID.m``;
the compiled kernel is ``algorithms/rnea.py``, pass for pass).

    v_0 = 0,  a_0 = -a_grav = [0; -g]
    forward pass, i = 1..N:
        X_J, S_i = jcalc(q_i);  X_i = X_J X_T(i)
        v_i = X_i v_λ(i) + S_i qd_i
        a_i = X_i a_λ(i) + S_i qdd_i + v_i × S_i qd_i
        f_i = I_i a_i + v_i ×* I_i v_i - f_i^ext            (f^ext in body i's frame)
    backward pass, i = N..1:
        tau_i = S_iᵀ f_i
        f_λ(i) += X_iᵀ f_i

With ``jcalc``'s folded S of a mimic joint (mult times its axis, reading the
master's DOF) ``tau[dofs_i] += S_iᵀ f_i`` is tau = Gᵀ tau_full.
"""
import numpy as np

from .jcalc import jcalc
from .spatial import crf, crm, force_transform, skew
from .tree import a_grav, bodies, full_size


def world_transforms(tree, Xup):
    """X0_i: world -> body i (motion), X0_i = X_i X0_λ(i)."""
    X0 = []
    for i, b in enumerate(tree):
        X0.append(Xup[i] if b.parent < 0 else Xup[i] @ X0[b.parent])
    return X0


def body_forces(model, tree, X0, f_ext, frame="local"):
    """Per-link wrenches (rows [f; tau], ``model.link_names`` order, or a dict
    {link: wrench}) -> per-body spatial forces [n; f] in the body frame.

    ``local``: link frame, moment about the link origin; the link sits at
    (R, p) in its body, so the body-frame force is [R tau + p × R f; R f].
    ``world``: world axes, moment about the world origin: [tau; f] is a
    world-frame spatial force, moved into body i by X0_i* = X0_i^-T.
    Links fixed to the world get nothing (their wrench acts on the ground)."""
    if frame not in ("local", "world"):
        raise ValueError(f"f_ext_frame: expected 'local' or 'world', got {frame!r}")
    if isinstance(f_ext, dict):
        rows = np.zeros((len(model.link_names), 6))
        for name, w in f_ext.items():
            rows[model.link_index(name)] = w
        f_ext = rows
    f_ext = np.asarray(f_ext, dtype=float).reshape(len(model.link_names), 6)
    fb = np.zeros((len(tree), 6))
    for info, (f, tau) in zip(model.tree.links, zip(f_ext[:, :3], f_ext[:, 3:], strict=True), strict=True):
        b = info.body
        if b < 0:
            continue
        if frame == "local":
            Rf = info.R @ f
            fb[b] += np.concatenate([info.R @ tau + skew(info.p) @ Rf, Rf])
        else:
            fb[b] += force_transform(X0[b]) @ np.concatenate([tau, f])
    return fb


def id_sweeps(model, q, qd, qdd, f_body=None, gravity=True, full=False):
    """The two RNEA sweeps; returns (tau, per-body dict of X, S, v, a, f).
    ``full``: qd, qdd, tau in full coordinates (every mimic joint its own DOF)."""
    tree = bodies(model)
    N = len(tree)
    Xup, S, v, a, f = [None] * N, [None] * N, [None] * N, [None] * N, [None] * N
    a0 = -a_grav(model) if gravity else np.zeros(6)
    # ---- forward pass: X_i, v_i, a_i, f_i
    for i, b in enumerate(tree):
        XJ, S[i] = jcalc(b, q, fold=not full)
        Xup[i] = XJ @ b.Xtree
        dofs = b.full_dofs if full else b.dofs
        vJ = S[i] @ qd[dofs]
        vp, ap = (np.zeros(6), a0) if b.parent < 0 else (v[b.parent], a[b.parent])
        v[i] = Xup[i] @ vp + vJ
        a[i] = Xup[i] @ ap + S[i] @ qdd[dofs] + crm(v[i]) @ vJ
        f[i] = b.I @ a[i] + crf(v[i]) @ b.I @ v[i]
        if f_body is not None:
            f[i] = f[i] - f_body[i]
    # ---- backward pass: tau_i = S_iᵀ f_i,  f_λ(i) += X_iᵀ f_i
    tau = np.zeros(full_size(model) if full else model.nv)
    for i in range(N - 1, -1, -1):
        b = tree[i]
        tau[b.full_dofs if full else b.dofs] += S[i].T @ f[i]
        if b.parent >= 0:
            f[b.parent] = f[b.parent] + Xup[i].T @ f[i]
    return tau, dict(X=Xup, S=S, v=v, a=a, f=f)


def _f_body(model, q, f_ext, frame):
    """Per-link f_ext -> per-body forces (None stays None)."""
    if f_ext is None:
        return None
    tree = bodies(model)
    Xup = [jcalc(b, q)[0] @ b.Xtree for b in tree]
    return body_forces(model, tree, world_transforms(tree, Xup), f_ext, frame)


def rnea(model, q, v, a, f_ext=None, f_ext_frame="local"):
    """tau = ID(q, v, a, f_ext) (same arguments as ``rbd_ros.core.rnea``, single states)."""
    q, v, a = (np.asarray(x, dtype=float) for x in (q, v, a))
    return id_sweeps(model, q, v, a, _f_body(model, q, f_ext, f_ext_frame))[0]


def rnea_body_forces(model, q, v, a, fext, fext_world=False):
    """tau with per-*body* forces as the kernels take them (``rnea_into``):
    fext (nb, 6) rows [n; f], in the body frame, or with ``fext_world`` in
    world axes about the world origin (moved into body i by X0_i*)."""
    q, v, a = (np.asarray(x, dtype=float) for x in (q, v, a))
    fext = np.asarray(fext, dtype=float)
    if fext_world:
        tree = bodies(model)
        X0 = world_transforms(tree, [jcalc(b, q)[0] @ b.Xtree for b in tree])
        fext = np.array([force_transform(X0[i]) @ fext[i] for i in range(len(tree))])
    return id_sweeps(model, q, v, a, fext)[0]


def gravity(model, q):
    """g(q) = ID(q, 0, 0)."""
    z = np.zeros(model.nv)
    return rnea(model, q, z, z)


def bias(model, q, v):
    """C(q, v) v + g(q) = ID(q, v, 0)."""
    return rnea(model, q, v, np.zeros(model.nv))
