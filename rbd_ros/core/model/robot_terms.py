"""Real-robot terms beside the rigid-body model: payloads, armature, joint friction.

* Payload: a rigid body (mass, com, inertia about the com) attached to a URDF
  link.  It is added to the spatial inertia of the elementary body the link
  is rigidly attached to (the moving parent for links merged by fixed joints),
  in a copy of the model vector: the URDF is not parsed again.
* Armature: per-DOF rotor inertia (Pinocchio's ``model.armature``), stored in
  the model vector's armature table, read by RNEA, CRBA and ABA.
* Friction (``control_loop.friction``): τ_f = damping · q̇ + friction ·
  tanh(q̇ / velocity_eps), a separate, opt-in term (never inside rnea / bias).
"""
import difflib

import numpy as np

from ..algorithms.spatial import inertia_about_origin
from .checks import bounded, real_array, real_number
from .errors import BOUNDS


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape}"
    return f"{x!r}"[:80]


# ----------------------------------------------------------------------------- payload

def check_payload(model, link, mass, com, inertia):
    """Validated (mass, com (3,), inertia (3, 3)) of a payload on ``link``, read-only.
    ValueError naming the bad field."""
    if not isinstance(link, str) or link not in model._link_pos:
        close = model.close_links(link) if isinstance(link, str) else []
        hint = f"; did you mean {close}?" if close else f" (links: {list(model.link_names)[:20]} ...)" \
            if len(model.link_names) > 20 else f" (links: {list(model.link_names)})"
        raise ValueError(f"link: {link!r} is not a link of the model{hint}")
    m = real_number(mass, "mass", "a number (kg)")
    if not (np.isfinite(m) and 0 <= m <= BOUNDS["mass"]):
        raise ValueError(f"mass: expected a finite number >= 0 and <= {BOUNDS['mass']:g} (kg), got {m}")
    c = real_array(com, "com", "3 numbers (m, link frame)")
    if c.shape != (3,):
        raise ValueError(f"com: expected 3 numbers (m, link frame), got {_describe(com)}")
    bounded(c, BOUNDS["length"], "com", " m")
    I = real_array(inertia, "inertia", "a 3x3 matrix or 6 numbers ixx ixy ixz iyy iyz izz (kg m^2)")
    if I.shape == (6,):
        ixx, ixy, ixz, iyy, iyz, izz = I
        I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    elif I.shape != (3, 3):
        raise ValueError("inertia: expected a 3x3 matrix or 6 numbers ixx ixy ixz iyy iyz izz (kg m^2), "
                         f"got {_describe(inertia)}")
    if not np.all(np.abs(I) <= BOUNDS["inertia"]):
        raise ValueError(f"inertia: expected finite numbers of magnitude <= {BOUNDS['inertia']:g} kg m^2, "
                         f"got {I.tolist()}")
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


def add_payloads(base_tree, payloads):
    """``base_tree`` with the payloads' inertias added to the bodies their links are
    attached to (about the body origin, body frame); ``base_tree`` itself without
    payloads.  ``payloads``: link -> (mass, com, inertia about com, link axes)."""
    if not payloads:
        return base_tree
    mass, h, Ibar = base_tree.mass.copy(), base_tree.mass_com.copy(), base_tree.inertia.copy()
    placements = {lp.name: lp for lp in base_tree.links}
    for link, (m, com, Ic) in payloads.items():
        info = placements[link]
        if info.body < 0:
            continue          # fixed to the world: no joint feels it
        R, p = info.R, info.p
        dm, dh, dI = inertia_about_origin(m, p + R @ com, R @ Ic @ R.T)
        mass[info.body] += dm
        h[info.body] += dh
        Ibar[info.body] += dI
    return base_tree.replace(mass=mass, mass_com=h, inertia=Ibar)


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
                close = difflib.get_close_matches(str(name), model.joint_names, n=5, cutoff=0.5)
                hint = f"; did you mean {close}?" if close else f" (joints: {list(model.joint_names)})"
                raise ValueError(f"armature: {name!r} is not a DOF joint of the model{hint}")
            k = model._joint_pos[name]
            x = real_number(val, f"armature[{name!r}]", "a number (kg m^2 or kg)")
            arm[model.idx_v[k]:model.idx_v[k] + model.joint_nv[k]] = x
        def where(i):
            return f"[{model.joint_names[_dof_joint(model, i)]!r}]"
    else:
        arm = real_array(armature, "armature", f"{nv} numbers in DOF order or a {{joint: value}} dict")
        if arm.shape != (nv,):
            raise ValueError(f"armature: expected {nv} numbers in DOF order or a {{joint: value}} dict, "
                             f"got {_describe(armature)}")
        def where(i):
            return f"[{i}] ({model.joint_names[_dof_joint(model, i)]})"
    bad = np.flatnonzero(~((arm >= 0) & (arm <= BOUNDS["armature"])))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"armature{where(i)}: expected a finite number >= 0 and <= {BOUNDS['armature']:g} "
                         f"(kg m^2 or kg), got {arm[i]}")
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
