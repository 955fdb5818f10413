"""URDF -> Model.

Parses with urdf-parser-py (its stderr chatter about unknown tags goes to the
``rbd_ros.urdf`` logger at DEBUG level), applies the URDF defaults it leaves
out (mimic multiplier 1 / offset 0, axis 1 0 0, identity origins), checks
the description and flattens it into elementary bodies:

* depth-first from the single root link, children in URDF order, so every
  body comes after its parent;
* fixed joints are merged: the child's inertia is added to the moving body it
  hangs from and the transforms are composed (links fixed to the world
  contribute nothing);
* planar joints become prismatic-prismatic-revolute chains (see joints.py);
* with ``mimic=True`` a mimic joint reads its master's coordinate.

Every number is checked at build time: non-finite values and magnitudes
beyond ``BOUNDS`` raise :class:`ModelError` naming the element.  The bounds
are far beyond any real robot and small enough that no in-bounds model can
overflow inside the algorithms (products such as m |r|^2 |v|^2 stay below
~1e60 for arguments up to 1e6).
"""
import logging
import os
import threading

import numpy as np

from .builder import dof_elimination_tree, pack_model_data
from .joints import FREE, NQ_OF, NV_OF, PRISMATIC, REVOLUTE, planar_basis
from .layout import (
    C_AXIS,
    C_ET,
    C_FV,
    C_H,
    C_IBAR,
    C_JTYPE,
    C_MASS,
    C_MIMIC,
    C_MULT,
    C_OFFSET,
    C_PARENT,
    C_QI,
    C_RT,
    C_SUBEND,
    C_VI,
    NCOL,
)
from .model import GRAVITY_BOUND, LinkInfo, Model, ModelError
from .spatial import inertia_about_origin, rpy_to_matrix

log = logging.getLogger("rbd_ros.urdf")
_parser_lock = threading.Lock()

MOVING = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}
KNOWN = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar"}

# Magnitude bounds on the model's numbers (SI units); see the module docstring.
BOUNDS = {
    "length": 1e6,        # |x|, |y|, |z| of any <origin> xyz (m)
    "angle": 1e6,         # |r|, |p|, |y| of any <origin> rpy (rad)
    "mass": 1e9,          # link mass (kg)
    "inertia": 1e12,      # |ixx| ... |izz| (kg m^2)
    "multiplier": 1e6,    # |mimic multiplier|
    "offset": 1e6,        # |mimic offset| (rad or m)
    "gravity": GRAVITY_BOUND,   # |gravity| per component (m/s^2)
}


def _bounded(values, bound, what):
    """Raise ModelError ``what`` unless every value is finite and |value| <= BOUNDS[bound]."""
    vals = np.asarray(values, dtype=float).reshape(-1)
    lim = BOUNDS[bound]
    if not np.all(np.abs(vals) <= lim):       # False for NaN too
        shown = " ".join(f"{x:g}" for x in vals)
        raise ModelError(f"{what}: {shown} is not finite or exceeds the bound {lim:g} "
                         f"(rbd_ros.core.urdf.BOUNDS[{bound!r}])")
    return vals


def _read(urdf):
    if isinstance(urdf, bytes):
        urdf = urdf.decode("utf-8", errors="replace")
    if isinstance(urdf, os.PathLike):
        urdf = os.fspath(urdf)
    if not isinstance(urdf, str):
        raise ModelError(f"robot description: expected URDF XML text or a file path, got {type(urdf).__name__}")
    if urdf.lstrip().startswith("<"):
        return urdf
    if "\n" not in urdf and os.path.isfile(urdf):
        try:
            with open(urdf, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ModelError(f"robot description file {urdf!r} cannot be read as UTF-8 text: {e}") from None
    shown = urdf.strip()[:60]
    raise ModelError(f"robot description: not XML and not a readable file: {shown!r}")


def _parse(text):
    from urdf_parser_py import urdf as up
    from urdf_parser_py.xml_reflection import core as xml_core
    messages = []
    with _parser_lock:
        saved = xml_core.on_error
        xml_core.on_error = messages.append
        try:
            robot = up.URDF.from_xml_string(text)
        except Exception as e:   # lxml syntax errors, missing attributes, bad numbers ...
            raise ModelError(f"robot description is not a valid URDF: {e}") from None
        finally:
            xml_core.on_error = saved
    for m in messages:
        log.debug("urdf parser: %s", m)
    return robot


def _origin(o, what):
    if o is None:
        return np.eye(3), np.zeros(3)
    xyz = np.zeros(3) if o.xyz is None else _bounded(o.xyz, "length", f"{what} origin xyz")
    rpy = np.zeros(3) if o.rpy is None else _bounded(o.rpy, "angle", f"{what} origin rpy")
    return rpy_to_matrix(rpy), xyz


def _link_inertia(link):
    """(m, com, Ic, R) of a link's inertial in the link frame, or None."""
    inertial = link.inertial
    if inertial is None:
        return None
    m = 0.0 if inertial.mass is None else float(inertial.mass)
    I = inertial.inertia
    vals = [0.0] * 6 if I is None else [float(getattr(I, k) or 0.0) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")]
    _bounded(m, "mass", f"link {link.name!r}: inertial mass")
    _bounded(vals, "inertia", f"link {link.name!r}: inertial inertia (ixx ixy ixz iyy iyz izz)")
    if m < 0:
        raise ModelError(f"link {link.name!r}: negative mass {m}")
    ixx, ixy, ixz, iyy, iyz, izz = vals
    Ic = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    eig = np.linalg.eigvalsh(Ic)
    if eig[0] < -1e-12 * max(1.0, abs(eig[-1])):
        raise ModelError(f"link {link.name!r}: inertia matrix is not positive (semi-)definite "
                         f"(eigenvalues {eig[0]:.3g}, {eig[1]:.3g}, {eig[2]:.3g})")
    R, com = _origin(inertial.origin, f"link {link.name!r}: inertial")
    return m, com, Ic, R


def _axis(joint):
    u = np.array([1.0, 0.0, 0.0]) if joint.axis is None else np.asarray(joint.axis, dtype=float)
    n = np.linalg.norm(u)
    if not np.isfinite(n) or n < 1e-12:
        raise ModelError(f"joint {joint.name!r}: axis {list(u)} is not a direction")
    return u / n


def _tree(robot):
    """Root link name and each link's child joints in URDF order; checks names and structure."""
    links = {}
    for link in robot.links:
        if link.name in links:
            raise ModelError(f"link {link.name!r} is defined twice")
        links[link.name] = link
    if not links:
        raise ModelError("robot description has no links")
    joints = {}
    children = {name: [] for name in links}
    parent_joint = {}
    for j in robot.joints:
        if j.name in joints:
            raise ModelError(f"joint {j.name!r} is defined twice")
        joints[j.name] = j
        if j.type not in KNOWN:
            raise ModelError(f"joint {j.name!r}: unknown joint type {j.type!r} "
                             f"(expected one of {', '.join(sorted(KNOWN))})")
        for end, lname in (("parent", j.parent), ("child", j.child)):
            if lname not in links:
                raise ModelError(f"joint {j.name!r}: {end} link {lname!r} does not exist")
        if j.child in parent_joint:
            raise ModelError(f"link {j.child!r} is the child of joints {parent_joint[j.child]!r} and {j.name!r} "
                             "(kinematic loop: URDF describes trees)")
        parent_joint[j.child] = j.name
        children[j.parent].append(j)
    roots = [n for n in links if n not in parent_joint]
    if not roots:
        raise ModelError("no root link: the joints form a cycle")
    if len(roots) > 1:
        raise ModelError(f"several root links {roots}: the description must be one tree")
    root = roots[0]
    seen = {root}
    stack = [root]
    while stack:
        for j in children[stack.pop()]:
            seen.add(j.child)
            stack.append(j.child)
    if len(seen) != len(links):
        lost = sorted(set(links) - seen)
        raise ModelError(f"links {lost} are not connected to root {root!r}: their joints form a cycle")
    return root, links, joints, children


def _resolve_mimic(joints, use_mimic):
    """dependent joint -> (master, multiplier, offset), chains resolved."""
    direct = {}
    for j in joints.values():
        if j.mimic is None:
            continue
        master = j.mimic.joint
        if master not in joints:
            raise ModelError(f"joint {j.name!r} mimics unknown joint {master!r}")
        if j.type in ("fixed",):
            continue
        if j.type not in MOVING:
            raise ModelError(f"joint {j.name!r}: a {j.type} joint cannot mimic another joint")
        if joints[master].type not in MOVING:
            raise ModelError(f"joint {j.name!r} mimics {master!r}, a {joints[master].type} joint "
                             "(only revolute, continuous and prismatic joints can be mimicked)")
        mult = 1.0 if j.mimic.multiplier is None else float(j.mimic.multiplier)
        off = 0.0 if j.mimic.offset is None else float(j.mimic.offset)
        _bounded(mult, "multiplier", f"joint {j.name!r}: mimic multiplier")
        _bounded(off, "offset", f"joint {j.name!r}: mimic offset")
        direct[j.name] = (master, mult, off)
    if not use_mimic:
        return {}
    resolved = {}
    for name in direct:
        master, mult, off = direct[name]
        seen = {name}
        while master in direct:
            if master in seen:
                raise ModelError(f"joint {name!r}: mimic joints form a cycle through {master!r}")
            seen.add(master)
            m2, mult2, off2 = direct[master]
            master, mult, off = m2, mult * mult2, mult * off2 + off
        _bounded(mult, "multiplier", f"joint {name!r}: mimic multiplier (through the mimic chain)")
        _bounded(off, "offset", f"joint {name!r}: mimic offset (through the mimic chain)")
        resolved[name] = (master, mult, off)
    return resolved


def _gravity(g):
    try:
        g = np.asarray(g, dtype=float).reshape(3)
    except (TypeError, ValueError):
        raise ModelError(f"gravity: expected 3 numbers, got {g!r}") from None
    return _bounded(g, "gravity", "gravity")


def _row(parent, jtype, R_T, p_T, axis):
    row = np.zeros(NCOL)
    row[C_PARENT] = parent
    row[C_JTYPE] = jtype
    row[C_MULT] = 1.0
    row[C_ET:C_ET + 9] = R_T.T.reshape(-1)        # E = R^T (parent coords -> joint frame)
    row[C_RT:C_RT + 3] = p_T
    row[C_AXIS:C_AXIS + 3] = axis
    return row


def build_model(urdf, floating_base=False, mimic=True, gravity=(0.0, 0.0, -9.81)):
    robot = _parse(_read(urdf))
    root, links, joints, children = _tree(robot)
    mimics = _resolve_mimic(joints, mimic)
    if floating_base and "root_joint" in joints:
        raise ModelError("joint 'root_joint': floating_base=True adds a free-flyer of that name; "
                         "rename the URDF joint or build without floating_base")
    gravity = _gravity(gravity)

    rows = []                 # body table rows
    body_joint = []           # URDF joint name of each body
    link_at = {}              # link -> (body, R, p)
    dof_joints = []           # (name, urdf type, first body)
    I3, z3 = np.eye(3), np.zeros(3)

    if floating_base:
        rows.append(_row(-1, FREE, I3, z3, z3))
        body_joint.append("root_joint")
        dof_joints.append(("root_joint", "floating", 0))
        link_at[root] = (0, I3, z3)
    else:
        link_at[root] = (-1, I3, z3)

    stack = list(reversed(children[root]))
    while stack:
        j = stack.pop()
        b, R_bP, p_bP = link_at[j.parent]
        R_o, p_o = _origin(j.origin, f"joint {j.name!r}:")
        R_bJ, p_bJ = R_bP @ R_o, p_bP + R_bP @ p_o
        if j.type == "fixed":
            link_at[j.child] = (b, R_bJ, p_bJ)
        elif j.type in MOVING:
            rows.append(_row(b, MOVING[j.type], R_bJ, p_bJ, _axis(j)))
            body_joint.append(j.name)
            if j.name not in mimics:
                dof_joints.append((j.name, j.type, len(rows) - 1))
            link_at[j.child] = (len(rows) - 1, I3, z3)
        elif j.type == "floating":
            rows.append(_row(b, FREE, R_bJ, p_bJ, z3))
            body_joint.append(j.name)
            dof_joints.append((j.name, "floating", len(rows) - 1))
            link_at[j.child] = (len(rows) - 1, I3, z3)
        else:   # planar: P(e1) -> P(e2) -> R(n), intermediate bodies massless
            n = _axis(j)
            e1, e2 = planar_basis(n)
            first = len(rows)
            rows.append(_row(b, PRISMATIC, R_bJ, p_bJ, e1))
            rows.append(_row(first, PRISMATIC, I3, z3, e2))
            rows.append(_row(first + 1, REVOLUTE, I3, z3, n))
            body_joint += [j.name] * 3
            dof_joints.append((j.name, "planar", first))
            link_at[j.child] = (first + 2, I3, z3)
        stack.extend(reversed(children[j.child]))

    # q / v indices of DOF-owning joints, then of mimic joints (their master's)
    nq = nv = 0
    idx_q, idx_v, jnq, jnv, jtypes, names = [], [], [], [], [], []
    first_body = {}
    for name, utype, first in dof_joints:
        names.append(name)
        jtypes.append(utype)
        idx_q.append(nq)
        idx_v.append(nv)
        first_body[name] = first
        if utype == "planar":
            for k in range(3):
                rows[first + k][C_QI] = nq + k
                rows[first + k][C_VI] = nv + k
            jnq.append(3)
            jnv.append(3)
        else:
            jt = int(rows[first][C_JTYPE])
            rows[first][C_QI] = nq
            rows[first][C_VI] = nv
            jnq.append(NQ_OF[jt])
            jnv.append(NV_OF[jt])
        nq += jnq[-1]
        nv += jnv[-1]
    mimic_pairs = []
    for b, name in enumerate(body_joint):
        if name in mimics:
            master, mult, off = mimics[name]
            mb = first_body[master]
            rows[b][C_QI] = rows[mb][C_QI]
            rows[b][C_VI] = rows[mb][C_VI]
            rows[b][C_MULT] = mult
            rows[b][C_OFFSET] = off
            rows[b][C_MIMIC] = 1.0
            mimic_pairs.append((b, mb))
    for b in range(len(rows) - 1, -1, -1):
        rows[b][C_SUBEND] = max(rows[b][C_SUBEND], b)
        p = int(rows[b][C_PARENT])
        if p >= 0:
            rows[p][C_SUBEND] = max(rows[p][C_SUBEND], rows[b][C_SUBEND])
    nvf = 0
    for row in rows:
        row[C_FV] = nvf
        nvf += NV_OF[int(row[C_JTYPE])]

    # inertias, expressed about each body's origin in the body frame
    total_mass = 0.0
    for lname, link in links.items():
        inert = _link_inertia(link)
        if inert is None:
            continue
        m, com, Ic, R_LI = inert
        total_mass += m
        b, R_bL, p_bL = link_at[lname]
        if b < 0:
            continue
        c = p_bL + R_bL @ com
        R_bI = R_bL @ R_LI
        mass, h, Ibar = inertia_about_origin(m, c, R_bI @ Ic @ R_bI.T)
        rows[b][C_MASS] += mass
        rows[b][C_H:C_H + 3] += h
        rows[b][C_IBAR:C_IBAR + 9] += Ibar.reshape(-1)

    md = pack_model_data(rows, dof_elimination_tree(rows, nv), mimic_pairs, nq, nv, nvf, gravity)
    link_names = tuple(links)
    infos = tuple(LinkInfo(link_at[n][0], link_at[n][1], link_at[n][2]) for n in link_names)
    terms = _joint_terms(joints, names, jtypes, idx_v, nv)
    return Model(name=robot.name or "robot", md=md, joint_names=tuple(names), joint_types=tuple(jtypes),
                 joint_nq=tuple(jnq), joint_nv=tuple(jnv), idx_q=tuple(idx_q), idx_v=tuple(idx_v),
                 link_names=link_names, links=infos, mimic_joints=dict(mimics),
                 mass=total_mass, **terms)


def _attr(obj, name, joint, what):
    """A URDF number attribute as a float (None if absent); ModelError if not finite or negative."""
    x = None if obj is None else getattr(obj, name, None)
    if x is None:
        return None
    x = float(x)
    if not np.isfinite(x) or (what != "position" and x < 0):
        raise ModelError(f"joint {joint!r}: <{'limit' if what != 'dynamics' else 'dynamics'} {name}> "
                         f"must be a finite number{'' if what == 'position' else ' >= 0'}, got {x}")
    return x


def _joint_terms(joints, names, jtypes, idx_v, nv):
    """Per-DOF damping, friction and limits from the URDF's <dynamics> and <limit>
    (one-axis joints only; planar and floating DOFs: 0 and inf)."""
    damping, friction = np.zeros(nv), np.zeros(nv)
    effort, velocity = np.full(nv, np.inf), np.full(nv, np.inf)
    position = np.empty((nv, 2))
    position[:, 0], position[:, 1] = -np.inf, np.inf
    for name, utype, i in zip(names, jtypes, idx_v):
        if utype not in MOVING:
            continue
        j = joints[name]
        damping[i] = _attr(j.dynamics, "damping", name, "dynamics") or 0.0
        friction[i] = _attr(j.dynamics, "friction", name, "dynamics") or 0.0
        effort[i] = _attr(j.limit, "effort", name, "limit") or np.inf
        velocity[i] = _attr(j.limit, "velocity", name, "limit") or np.inf
        lo, hi = _attr(j.limit, "lower", name, "position"), _attr(j.limit, "upper", name, "position")
        if utype != "continuous" and lo is not None and hi is not None and lo < hi:
            position[i] = lo, hi
        elif utype != "continuous" and lo is not None and hi is not None and lo > hi:
            raise ModelError(f"joint {name!r}: <limit lower={lo} upper={hi}>: lower is above upper")
    return {"damping": damping, "friction": friction, "effort_limit": effort, "velocity_limit": velocity,
            "position_limit": position}
