"""Real-robot terms beside the rigid-body model: payloads, armature, joint friction.

* Payload: a rigid body (mass, com, inertia about the com) attached to a URDF
  link.  It is added to the spatial inertia of the elementary body the link
  is rigidly attached to (the moving parent for links merged by fixed joints),
  in a copy of the model vector: the URDF is not parsed again.
* Armature: per-DOF rotor inertia (Pinocchio's ``model.armature``), stored in
  the model vector's armature table, read by RNEA, CRBA and ABA.
* Friction: τ_f = damping · q̇ + friction · tanh(q̇ / velocity_eps), a
  separate, opt-in term (never inside rnea / bias).
"""
import numpy as np

from .layout import C_H, C_IBAR, C_MASS, body_row
from .spatial import inertia_about_origin


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape}"
    return f"{x!r}"[:80]


def _floats(x, name, expected):
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {expected}, got {_describe(x)}") from None
    return arr


# ----------------------------------------------------------------------------- payload

def check_payload(model, link, mass, com, inertia):
    """Validated (mass, com (3,), inertia (3, 3)) of a payload on ``link``, read-only.
    ValueError naming the bad field."""
    if not isinstance(link, str) or link not in model._link_pos:
        close = model.close_links(link) if isinstance(link, str) else []
        hint = f"; did you mean {close}?" if close else f" (links: {list(model.link_names)[:20]} ...)" \
            if len(model.link_names) > 20 else f" (links: {list(model.link_names)})"
        raise ValueError(f"link: {link!r} is not a link of the model{hint}")
    try:
        m = float(mass)
    except (TypeError, ValueError):
        raise ValueError(f"mass: expected a number (kg), got {_describe(mass)}") from None
    if not np.isfinite(m) or m < 0:
        raise ValueError(f"mass: expected a finite number >= 0 (kg), got {m}")
    c = _floats(com, "com", "3 numbers (m, link frame)")
    if c.shape != (3,):
        raise ValueError(f"com: expected 3 numbers (m, link frame), got {_describe(com)}")
    if not np.all(np.isfinite(c)):
        raise ValueError(f"com: expected finite numbers, got {list(c)}")
    I = _floats(inertia, "inertia", "a 3x3 matrix or 6 numbers ixx ixy ixz iyy iyz izz (kg m^2)")
    if I.shape == (6,):
        ixx, ixy, ixz, iyy, iyz, izz = I
        I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    elif I.shape != (3, 3):
        raise ValueError("inertia: expected a 3x3 matrix or 6 numbers ixx ixy ixz iyy iyz izz (kg m^2), "
                         f"got {_describe(inertia)}")
    if not np.all(np.isfinite(I)):
        raise ValueError("inertia: expected finite numbers, got NaN or inf")
    scale = max(np.max(np.abs(I)), 1e-300)
    tol = 1e-9 * scale
    if np.max(np.abs(I - I.T)) > tol:
        raise ValueError(f"inertia: not symmetric: {I.tolist()}")
    I = 0.5 * (I + I.T)
    ev = np.linalg.eigvalsh(I)
    if ev[0] < -tol:
        raise ValueError(f"inertia: not positive semi-definite (principal moments {ev[0]:.6g}, {ev[1]:.6g}, "
                         f"{ev[2]:.6g} kg m^2)")
    if ev[2] > ev[0] + ev[1] + tol:
        raise ValueError(f"inertia: principal moments {ev[0]:.6g}, {ev[1]:.6g}, {ev[2]:.6g} kg m^2 violate the "
                         "triangle inequality (no rigid body has them)")
    if m == 0.0 and np.any(I != 0.0):
        raise ValueError("inertia: a payload of mass 0 must have zero inertia")
    c.setflags(write=False)
    I.setflags(write=False)
    return m, c, I


def add_payloads(model, base_md, payloads):
    """Read-only model vector: ``base_md`` with the payloads' inertias added to
    their bodies' rows (about the body origin, body frame)."""
    if not payloads:
        return base_md
    md = base_md.copy()
    for link, (m, com, Ic) in payloads.items():
        info = model.links[model._link_pos[link]]
        if info.body < 0:
            continue          # fixed to the world: no joint feels it
        R, p = info.R, info.p
        mass, h, Ibar = inertia_about_origin(m, p + R @ com, R @ Ic @ R.T)
        o = body_row(model.mi, info.body)
        md[o + C_MASS] += mass
        md[o + C_H:o + C_H + 3] += h
        md[o + C_IBAR:o + C_IBAR + 9] += Ibar.reshape(-1)
    md.setflags(write=False)
    return md


# ----------------------------------------------------------------------------- armature

def armature_vector(model, armature):
    """(nv,) armature from an array in DOF order or a {joint: value} dict; ValueError naming the field."""
    nv = model.nv
    if isinstance(armature, dict):
        arm = np.zeros(nv)
        for name, val in armature.items():
            if name in model.mimic_joints:
                raise ValueError(f"armature[{name!r}]: {name!r} is a mimic joint, not a DOF; "
                                 f"give the armature of its master {model.mimic_joints[name][0]!r}")
            if name not in model._joint_pos:
                import difflib
                close = difflib.get_close_matches(str(name), model.joint_names, n=5, cutoff=0.5)
                hint = f"; did you mean {close}?" if close else f" (joints: {list(model.joint_names)})"
                raise ValueError(f"armature: {name!r} is not a DOF joint of the model{hint}")
            k = model._joint_pos[name]
            try:
                x = float(val)
            except (TypeError, ValueError):
                raise ValueError(f"armature[{name!r}]: expected a number, got {_describe(val)}") from None
            arm[model.idx_v[k]:model.idx_v[k] + model.joint_nv[k]] = x
        def where(i):
            return f"[{model.joint_names[_dof_joint(model, i)]!r}]"
    else:
        arm = _floats(armature, "armature", f"{nv} numbers in DOF order or a {{joint: value}} dict")
        if arm.shape != (nv,):
            raise ValueError(f"armature: expected {nv} numbers in DOF order or a {{joint: value}} dict, "
                             f"got {_describe(armature)}")
        def where(i):
            return f"[{i}] ({model.joint_names[_dof_joint(model, i)]})"
    bad = np.flatnonzero(~(np.isfinite(arm) & (arm >= 0)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"armature{where(i)}: expected a finite number >= 0 (kg m^2 or kg), got {arm[i]}")
    for k, t in enumerate(model.joint_types):
        if t == "floating" and np.any(arm[model.idx_v[k]:model.idx_v[k] + 6] != 0):
            raise ValueError(f"armature[{model.joint_names[k]!r}]: a floating joint takes no armature "
                             "(rotor inertia belongs to actuated joints)")
    return arm


def _dof_joint(model, i):
    for k in range(len(model.joint_names) - 1, -1, -1):
        if model.idx_v[k] <= i:
            return k
    return 0


# ----------------------------------------------------------------------------- friction

def friction(model, v, velocity_eps=1e-3):
    """Joint friction torques τ_f = damping · q̇ + friction · tanh(q̇ / velocity_eps).

    ``damping`` (viscous, N·m·s/rad or N·s/m) and ``friction`` (Coulomb, N·m
    or N) are the URDF's ``<dynamics>`` values (``model.damping``,
    ``model.friction``).  The Coulomb term is smoothed: tanh(q̇ / eps) instead
    of sign(q̇), so it is continuous through q̇ = 0 and reaches 76 % of its
    magnitude at |q̇| = eps (rad/s or m/s), 99.9 % at 4 eps.  ``v``: (nv,) or
    an (N, nv) batch.  The torque *opposes* motion as seen by the motor: add it
    to the inverse-dynamics torque to compensate friction.  Not part of
    :func:`rnea` or :func:`bias`."""
    nv = model.nv
    try:
        eps = float(velocity_eps)
    except (TypeError, ValueError):
        raise ValueError(f"velocity_eps: expected a number > 0 (rad/s), got {_describe(velocity_eps)}") from None
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"velocity_eps: expected a finite number > 0 (rad/s), got {eps}")
    x = v
    if not (type(x) is np.ndarray and x.dtype == np.float64):
        try:
            x = np.asarray(v)
            if x.dtype.kind not in "iuf":
                raise TypeError
            x = x.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"v: expected {nv} real numbers (or an (N, {nv}) batch), got {_describe(v)}") from None
    if x.shape[-1:] != (nv,) or x.ndim > 2:
        raise ValueError(f"v: expected shape ({nv},) or (N, {nv}), got {_describe(x)}")
    if not np.all(np.isfinite(x)):
        raise ValueError("v: expected finite numbers, got NaN or inf")
    return model.damping * x + model.friction * np.tanh(x / eps)
