"""URDF -> the parts of a Model (its kinematic tree, names and joint terms).

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
* with ``mimic=True`` a mimic joint reads its master's coordinate;
* loop closures (``<constraint>`` elements, model/constraint_urdf.py) become
  the model's ``constraints``.

Every number is checked at build time: non-finite values and magnitudes
beyond ``errors.BOUNDS`` raise :class:`ModelError` naming the element.
"""
import logging
import os
import threading

import numpy as np
from urdf_parser_py import urdf as up
from urdf_parser_py.xml_reflection import core as xml_core

from ..algorithms.joints import planar_basis
from ..algorithms.spatial import inertia_about_origin, rpy_to_matrix
from .constraint_urdf import read_constraints
from .errors import BOUNDS, ModelError
from .tree import NQ_OF_TYPE, NV_OF_TYPE, KinematicTree, LinkPlacement

log = logging.getLogger("rbd_ros.urdf")
_parser_lock = threading.Lock()

MOVING = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic"}   # URDF type -> body joint type
KNOWN = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar"}

def _bounded(values, bound, what):
    """Raise ModelError ``what`` unless every value is finite and |value| <= BOUNDS[bound]."""
    vals = np.asarray(values, dtype=float).reshape(-1)
    lim = BOUNDS[bound]
    if not np.all(np.abs(vals) <= lim):       # False for NaN too
        shown = " ".join(f"{x:g}" for x in vals)
        raise ModelError(f"{what}: {shown} is not finite or exceeds the bound {lim:g} "
                         f"(rbd_ros.core.model.errors.BOUNDS[{bound!r}])")
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


def parse_xml(text):
    messages: list[str] = []
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


def link_inertia(link):
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
    children: dict[str, list] = {name: [] for name in links}
    parent_joint: dict[str, object] = {}
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


class _Body:
    """One elementary body while the tree is built (``KinematicTree`` holds them as arrays)."""
    __slots__ = ("parent", "jtype", "joint", "link", "R", "p", "axis", "qi", "vi", "mult", "offset", "mimic",
                 "mass", "h", "Ibar")

    def __init__(self, parent, jtype, joint, R, p, axis, link=""):
        self.parent, self.jtype, self.joint, self.link = parent, jtype, joint, link
        self.R, self.p, self.axis = R, p, axis
        self.qi = self.vi = 0
        self.mult, self.offset, self.mimic = 1.0, 0.0, False
        self.mass, self.h, self.Ibar = 0.0, np.zeros(3), np.zeros((3, 3))


def parse(urdf, floating_base=False, mimic=True, gravity=(0.0, 0.0, -9.81)) -> dict:
    """URDF text or path -> the keyword arguments of ``Model`` (its tree, names and
    joint terms).  Raises ModelError naming the element."""
    text = _read(urdf)
    robot = parse_xml(text)
    root, links, joints, children = _tree(robot)
    mimics = _resolve_mimic(joints, mimic)
    if floating_base and "root_joint" in joints:
        raise ModelError("joint 'root_joint': floating_base=True adds a free-flyer of that name; "
                         "rename the URDF joint or build without floating_base")
    gravity = _gravity(gravity)

    bodies = []               # elementary bodies, parents first
    link_at = {}              # link -> (body, R, p)
    dof_joints = []           # (name, urdf type, first body)
    I3, z3 = np.eye(3), np.zeros(3)

    if floating_base:
        bodies.append(_Body(-1, "free", "root_joint", I3, z3, z3, root))
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
            bodies.append(_Body(b, MOVING[j.type], j.name, R_bJ, p_bJ, _axis(j), j.child))
            if j.name not in mimics:
                dof_joints.append((j.name, j.type, len(bodies) - 1))
            link_at[j.child] = (len(bodies) - 1, I3, z3)
        elif j.type == "floating":
            bodies.append(_Body(b, "free", j.name, R_bJ, p_bJ, z3, j.child))
            dof_joints.append((j.name, "floating", len(bodies) - 1))
            link_at[j.child] = (len(bodies) - 1, I3, z3)
        else:   # planar: P(e1) -> P(e2) -> R(n), intermediate bodies massless
            n = _axis(j)
            e1, e2 = planar_basis(n)
            first = len(bodies)
            bodies.append(_Body(b, "prismatic", j.name, R_bJ, p_bJ, e1))
            bodies.append(_Body(first, "prismatic", j.name, I3, z3, e2))
            bodies.append(_Body(first + 1, "revolute", j.name, I3, z3, n, j.child))
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
                bodies[first + k].qi, bodies[first + k].vi = nq + k, nv + k
            jnq.append(3)
            jnv.append(3)
        else:
            bodies[first].qi, bodies[first].vi = nq, nv
            jnq.append(NQ_OF_TYPE[bodies[first].jtype])
            jnv.append(NV_OF_TYPE[bodies[first].jtype])
        nq += jnq[-1]
        nv += jnv[-1]
    for body in bodies:
        if body.joint in mimics:
            master, mult, off = mimics[body.joint]
            mb = bodies[first_body[master]]
            body.qi, body.vi, body.mult, body.offset, body.mimic = mb.qi, mb.vi, mult, off, True

    # inertias, expressed about each body's origin in the body frame
    total_mass = 0.0
    for lname, link in links.items():
        inert = link_inertia(link)
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
        bodies[b].mass += mass
        bodies[b].h = bodies[b].h + h
        bodies[b].Ibar = bodies[b].Ibar + Ibar

    link_names = tuple(links)
    tree = KinematicTree(
        parent=np.array([b.parent for b in bodies], dtype=np.int64), joint=tuple(b.joint for b in bodies),
        joint_type=tuple(b.jtype for b in bodies), link=tuple(b.link for b in bodies),
        axis=np.reshape([b.axis for b in bodies], (-1, 3)), placement_R=np.reshape([b.R for b in bodies], (-1, 3, 3)),
        placement_p=np.reshape([b.p for b in bodies], (-1, 3)), mass=np.array([b.mass for b in bodies], dtype=float),
        mass_com=np.reshape([b.h for b in bodies], (-1, 3)), inertia=np.reshape([b.Ibar for b in bodies], (-1, 3, 3)),
        q_index=np.array([b.qi for b in bodies], dtype=np.int64),
        v_index=np.array([b.vi for b in bodies], dtype=np.int64), mimic=np.array([b.mimic for b in bodies], dtype=bool),
        multiplier=np.array([b.mult for b in bodies], dtype=float),
        offset=np.array([b.offset for b in bodies], dtype=float),
        links=tuple(LinkPlacement(n, *link_at[n]) for n in link_names), gravity=gravity, armature=np.zeros(nv),
        nq=nq, nv=nv)
    terms = _joint_terms(joints, names, jtypes, idx_v, nv, mimics)
    return dict(name=robot.name or "robot", tree=tree, joint_names=tuple(names), joint_types=tuple(jtypes),
                joint_nq=tuple(jnq), joint_nv=tuple(jnv), idx_q=tuple(idx_q), idx_v=tuple(idx_v),
                link_names=link_names, mimic_joints=dict(mimics), mass=total_mass,
                constraints=read_constraints(text), **terms)


def _attr(obj, name, joint, what):
    """A URDF number attribute as a float (None if absent); ModelError if not finite,
    negative (but positions) or, for <dynamics>, beyond ``BOUNDS``."""
    x = None if obj is None else getattr(obj, name, None)
    if x is None:
        return None
    x = float(x)
    tag = "dynamics" if what == "dynamics" else "limit"
    if not np.isfinite(x) or (what != "position" and x < 0):
        raise ModelError(f"joint {joint!r}: <{tag} {name}> "
                         f"must be a finite number{'' if what == 'position' else ' >= 0'}, got {x}")
    if what == "dynamics" and x > BOUNDS[name]:
        raise ModelError(f"joint {joint!r}: <dynamics {name}> {x:g} exceeds the bound {BOUNDS[name]:g} "
                         f"(rbd_ros.core.model.errors.BOUNDS[{name!r}])")
    return x


def _joint_terms(joints, names, jtypes, idx_v, nv, mimics):
    """Per-DOF damping, friction and limits from the URDF's <dynamics> and <limit>
    (one-axis joints only; planar and floating DOFs: 0 and inf).  A mimic joint's
    own <dynamics> folds into its master's as its torque does (tau_master +=
    multiplier * tau_mimic, with qd_mimic = multiplier * qd_master): damping
    multiplier² * d, Coulomb friction |multiplier| * f (exact where |qd| >> eps)."""
    damping, friction = np.zeros(nv), np.zeros(nv)
    effort, velocity = np.full(nv, np.inf), np.full(nv, np.inf)
    position = np.empty((nv, 2))
    position[:, 0], position[:, 1] = -np.inf, np.inf
    index = dict(zip(names, idx_v))
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
    for name, (master, mult, _) in mimics.items():
        j, i = joints[name], index[master]
        damping[i] += mult * mult * (_attr(j.dynamics, "damping", name, "dynamics") or 0.0)
        friction[i] += abs(mult) * (_attr(j.dynamics, "friction", name, "dynamics") or 0.0)
    for what, x in (("damping", damping), ("friction", friction)):
        big = np.flatnonzero(x > BOUNDS[what])
        if big.size:
            raise ModelError(f"joint {names[list(idx_v).index(int(big[0]))]!r}: <dynamics {what}> with its "
                             f"mimic joints folded in is {x[big[0]]:g}, beyond the bound {BOUNDS[what]:g}")
    return {"damping": damping, "friction": friction, "effort_limit": effort, "velocity_limit": velocity,
            "position_limit": position}
