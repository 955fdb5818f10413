"""Pinocchio as a test oracle for rbd_ros.core.

Builds the Pinocchio model of a URDF (mimic joints always *independent*, i.e.
Pinocchio's default ``mimic=False``: its mimic mode is broken in pin 4.1) and
converts states between Pinocchio and an rbd_ros model **by joint name**:

* q: continuous joints are angles in rbd_ros and (cos, sin) in Pinocchio;
  the free-flyer uses the same layout in both ([x y z qx qy qz qw]).
* v / a / tau: by name.  When the rbd_ros model folds mimic joints
  (``mimic=True``) the reference quantities are reduced with the constant map
  G (Pinocchio's full velocity space <- our reduced one):
  q_full = G q + offset, tau = G^T tau_full(q_full, G v, G a),
  H = G^T H_full G, g = G^T g_full, C = G^T C_full G.
* f_ext: rbd_ros takes one wrench per URDF link (link frame or world frame);
  Pinocchio takes one wrench per joint, in the joint frame.  The link wrench is
  moved to its supporting joint with the link frame's placement.

Only numpy, pinocchio and the standard library are used: this module must not
depend on the code under test.
"""

from __future__ import annotations

import glob
import os
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from core_util import rel_err  # noqa: F401  (one definition for every test)

# name -> (path under example-robot-data's robots/, floating_base)
ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", False),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "kinova": ("kinova_description/robots/kinova.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", True),
    "talos_full_v2": ("talos_data/robots/talos_full_v2.urdf", True),
}

_ERD_SUFFIX = os.path.join("cmeel.prefix", "share", "example-robot-data", "robots")


def robots_dir() -> str:
    """The folder of example-robot-data's robots (``$EXAMPLE_ROBOT_DATA_DIR`` wins)."""
    env = os.environ.get("EXAMPLE_ROBOT_DATA_DIR")
    if env and os.path.isdir(env):
        return env
    candidates = []
    try:  # older example-robot-data ships a Python module
        import example_robot_data  # type: ignore

        candidates.append(os.path.dirname(os.path.dirname(example_robot_data.getModelPath(
            "panda_description/urdf/panda.urdf"))))
    except Exception:
        pass
    # cmeel installs the data beside pinocchio, under <site-packages>/cmeel.prefix
    p = os.path.abspath(pin.__file__)
    while os.path.dirname(p) != p:
        p = os.path.dirname(p)
        if os.path.basename(p) == "cmeel.prefix":
            candidates.append(os.path.join(p, "share", "example-robot-data", "robots"))
            break
    for entry in sys.path:
        candidates.append(os.path.join(entry, _ERD_SUFFIX))
    for c in candidates:
        if os.path.isfile(os.path.join(c, ROBOTS["panda"][0])):
            return c
    found = glob.glob(os.path.join(sys.prefix, "**", _ERD_SUFFIX), recursive=True)
    if found:
        return found[0]
    raise FileNotFoundError("example-robot-data robots folder not found "
                            "(pip install example-robot-data, or set EXAMPLE_ROBOT_DATA_DIR)")


def robot_urdf(name: str) -> str:
    """Path of the URDF of one of ROBOTS."""
    return os.path.join(robots_dir(), ROBOTS[name][0])


def robot_text(name: str, link_mass: tuple[str, str] | None = None) -> str:
    """The URDF text of one of ROBOTS; ``link_mass`` = (link, mass): with that link's
    <mass value> replaced by ``mass`` (a string, as it lands in the XML)."""
    with open(robot_urdf(name), encoding="utf-8") as f:
        text = f.read()
    if link_mass is None:
        return text
    link, mass = link_mass
    i = text.index(f'<link name="{link}"')
    j = text.index("</link>", i)
    return text[:i] + re.sub(r'<mass value="[^"]*"', f'<mass value="{mass}"', text[i:j]) + text[j:]


def _urdf_text(urdf: str) -> str:
    if urdf.lstrip().startswith("<"):
        return urdf
    with open(urdf, encoding="utf-8") as f:
        return f.read()


@dataclass(frozen=True)
class UrdfInfo:
    """What the oracle needs from the URDF, read with the standard library."""

    link_names: tuple  # XML order
    joint_type: dict  # joint name -> type
    mimic: dict  # dependent joint -> (master, multiplier, offset), movable joints only
    mass: float  # sum of <inertial><mass>

    @classmethod
    def parse(cls, urdf: str) -> "UrdfInfo":
        root = ET.fromstring(_urdf_text(urdf))
        links = tuple(link.get("name") for link in root.findall("link"))
        jtype, mimic = {}, {}
        for j in root.findall("joint"):
            jtype[j.get("name")] = j.get("type")
            m = j.find("mimic")
            if m is not None and j.get("type") != "fixed":
                mimic[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1.0)),
                                        float(m.get("offset", 0.0)))
        mass = 0.0
        for link in root.findall("link"):
            m = link.find("inertial/mass")
            if m is not None:
                mass += float(m.get("value"))
        return cls(links, jtype, mimic, mass)


@dataclass(frozen=True)
class Layout:
    """Where each DOF-owning joint lives in rbd_ros's q / v (any object with
    these attributes, e.g. an ``rbd_ros.core.Model``, can be turned into one)."""

    joint_names: tuple
    joint_nq: tuple
    joint_nv: tuple
    idx_q: tuple
    idx_v: tuple
    nq: int
    nv: int
    link_names: tuple

    @classmethod
    def of(cls, model) -> "Layout":
        return cls(tuple(model.joint_names), tuple(model.joint_nq), tuple(model.joint_nv),
                   tuple(model.idx_q), tuple(model.idx_v), int(model.nq), int(model.nv),
                   tuple(model.link_names))


def _is_continuous(jm) -> bool:
    return jm.nq == 2 and jm.nv == 1


class Oracle:
    """Pinocchio reference for one URDF and one set of rbd_ros options.

    ``layout`` is the rbd_ros model (or a Layout); without it the oracle uses the
    layout rbd_ros is expected to have (Pinocchio's joint order, mimic joints
    removed when ``mimic``, continuous joints as angles).
    """

    def __init__(self, urdf: str, floating_base: bool = False, mimic: bool = True,
                 layout=None, gravity=(0.0, 0.0, -9.81)):
        text = _urdf_text(urdf)
        self.urdf = text
        self.floating_base = floating_base
        self.mimic = mimic
        self.info = UrdfInfo.parse(text)
        if floating_base:
            self.model = pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
        else:
            self.model = pin.buildModelFromXML(text)
        self.model.gravity = pin.Motion(np.array(gravity, float), np.zeros(3))
        self.data = self.model.createData()
        m = self.model
        self.nq_full, self.nv_full = m.nq, m.nv
        self.pin_joint = {m.names[i]: i for i in range(1, m.njoints)}
        self.mimic_map = dict(self.info.mimic) if mimic else {}
        unknown = [d for d in self.mimic_map if d not in self.pin_joint]
        if unknown:
            raise ValueError(f"mimic joints unknown to Pinocchio: {unknown}")
        self.layout = Layout.of(layout) if layout is not None else self.expected_layout()
        self._check_layout()
        self.G, self.q_offset_full = self._build_G()
        self.nq, self.nv = self.layout.nq, self.layout.nv

    # ------------------------------------------------------------------ layout
    def expected_layout(self) -> Layout:
        m = self.model
        names, nqs, nvs, iq, iv = [], [], [], [], []
        q = v = 0
        for i in range(1, m.njoints):
            n = m.names[i]
            if n in self.mimic_map:
                continue
            jm = m.joints[i]
            nq = 1 if _is_continuous(jm) else jm.nq
            names.append(n), nqs.append(nq), nvs.append(jm.nv), iq.append(q), iv.append(v)
            q += nq
            v += jm.nv
        return Layout(tuple(names), tuple(nqs), tuple(nvs), tuple(iq), tuple(iv), q, v,
                      self.info.link_names)

    def _check_layout(self):
        L, m = self.layout, self.model
        expected = self.expected_layout()
        if set(L.joint_names) != set(expected.joint_names):
            raise AssertionError(
                "joint sets differ: only rbd_ros "
                f"{sorted(set(L.joint_names) - set(expected.joint_names))}, only Pinocchio "
                f"{sorted(set(expected.joint_names) - set(L.joint_names))}")
        for n, nq, nv in zip(L.joint_names, L.joint_nq, L.joint_nv):
            jm = m.joints[self.pin_joint[n]]
            want_nq = 1 if _is_continuous(jm) else jm.nq
            if (nq, nv) != (want_nq, jm.nv):
                raise AssertionError(f"joint {n}: rbd_ros nq/nv {nq}/{nv}, expected {want_nq}/{jm.nv}")
        if (L.nq, L.nv) != (expected.nq, expected.nv):
            raise AssertionError(f"nq/nv {L.nq}/{L.nv}, expected {expected.nq}/{expected.nv}")

    def _master_chain(self, name):
        """(master joint in our layout, multiplier, offset) of a dependent joint."""
        mult, off = 1.0, 0.0
        seen = set()
        while name in self.mimic_map:
            if name in seen:
                raise ValueError(f"mimic cycle through {name}")
            seen.add(name)
            master, k, o = self.mimic_map[name]
            mult, off = k * mult, k * off + o
            name = master
        return name, mult, off

    def _build_G(self):
        m, L = self.model, self.layout
        our_v = dict(zip(L.joint_names, L.idx_v))
        G = np.zeros((m.nv, L.nv))
        off = {}
        for i in range(1, m.njoints):
            n, jm = m.names[i], m.joints[i]
            master, k, o = self._master_chain(n)
            if master != n:
                mjm = m.joints[self.pin_joint[master]]
                if jm.nv != 1 or mjm.nv != 1:
                    raise NotImplementedError(f"mimic joint {n}: only 1-dof joints supported")
                off[n] = o
            for d in range(jm.nv):
                G[jm.idx_v + d, our_v[master] + d] = k
        return G, off

    # ------------------------------------------------------------- conversions
    def q_to_pin(self, q):
        """rbd_ros q (nq,) -> Pinocchio full q (nq_full,)."""
        q = np.asarray(q, float)
        m, L = self.model, self.layout
        our_q = dict(zip(L.joint_names, L.idx_q))
        out = np.empty(m.nq)
        for i in range(1, m.njoints):
            n, jm = m.names[i], m.joints[i]
            master, k, o = self._master_chain(n)
            s = our_q[master]
            if master != n:
                val = np.array([k * q[s] + o])
            else:
                val = q[s:s + (1 if _is_continuous(jm) else jm.nq)]
            if _is_continuous(jm):
                val = np.array([np.cos(val[0]), np.sin(val[0])])
            out[jm.idx_q:jm.idx_q + jm.nq] = val
        return out

    def q_from_pin(self, q_full):
        """Pinocchio full q -> rbd_ros q (dependent joints dropped)."""
        m, L = self.model, self.layout
        out = np.empty(L.nq)
        for n, s in zip(L.joint_names, L.idx_q):
            jm = m.joints[self.pin_joint[n]]
            seg = q_full[jm.idx_q:jm.idx_q + jm.nq]
            if _is_continuous(jm):
                out[s] = np.arctan2(seg[1], seg[0])
            else:
                out[s:s + jm.nq] = seg
        return out

    def v_to_pin(self, v):
        return self.G @ np.asarray(v, float)

    def v_from_pin(self, v_full):
        """Pinocchio full v -> rbd_ros v (independent joints only)."""
        m, L = self.model, self.layout
        out = np.empty(L.nv)
        for n, s in zip(L.joint_names, L.idx_v):
            jm = m.joints[self.pin_joint[n]]
            out[s:s + jm.nv] = v_full[jm.idx_v:jm.idx_v + jm.nv]
        return out

    def reduce(self, tau_full):
        """Generalized force, full -> ours (G^T)."""
        return self.G.T @ tau_full

    def reduce_matrix(self, M_full):
        return self.G.T @ M_full @ self.G

    # --------------------------------------------------------- random states
    def random_q(self, rng):
        m, L = self.model, self.layout
        q = np.empty(L.nq)
        for n, s in zip(L.joint_names, L.idx_q):
            jm = m.joints[self.pin_joint[n]]
            if jm.shortname() == "JointModelFreeFlyer":
                q[s:s + 3] = rng.uniform(-1.0, 1.0, 3)
                quat = rng.normal(size=4)
                q[s + 3:s + 7] = quat / np.linalg.norm(quat)
            elif _is_continuous(jm):
                q[s] = rng.uniform(-np.pi, np.pi)
            elif jm.nq == 1:
                lo, hi = m.lowerPositionLimit[jm.idx_q], m.upperPositionLimit[jm.idx_q]
                if np.isfinite(lo) and np.isfinite(hi) and hi > lo and hi - lo < 1e3:
                    q[s] = rng.uniform(lo, hi)
                else:
                    q[s] = rng.uniform(-np.pi, np.pi)
            else:
                raise NotImplementedError(f"random q for {jm.shortname()} ({n})")
        return q

    def random_state(self, rng, scale=1.0):
        """q, v, a, tau in rbd_ros's layout."""
        q = self.random_q(rng)
        v = rng.uniform(-scale, scale, self.nv)
        a = rng.uniform(-scale, scale, self.nv)
        tau = rng.uniform(-10 * scale, 10 * scale, self.nv)
        return q, v, a, tau

    def random_fext(self, rng, scale=10.0):
        """One random wrench per URDF link, rows in rbd_ros's link order."""
        return rng.uniform(-scale, scale, (len(self.layout.link_names), 6))

    def deepest_link(self):
        """A URDF link carried by the joint with the most ancestors."""
        m = self.model
        depth = {n: len(m.supports[m.frames[m.getFrameId(n, pin.FrameType.BODY)].parentJoint])
                 for n in self.layout.link_names}
        return max(self.layout.link_names, key=lambda n: depth[n])

    # ---------------------------------------------------------- external forces
    def fext_to_pin(self, q_full, f_ext, frame="local"):
        """Per-link wrenches -> Pinocchio's per-joint wrenches (joint frames).

        f_ext: (n_links, 6) array in layout.link_names order, or {link: 6-vector};
        frame 'local': link frame, moment about the link origin;
        'world': world axes, moment about the world origin.
        """
        m, d = self.model, self.data
        if isinstance(f_ext, dict):
            items = list(f_ext.items())
        else:
            f_ext = np.asarray(f_ext, float)
            items = list(zip(self.layout.link_names, f_ext))
        out = pin.StdVec_Force()
        for _ in range(m.njoints):
            out.append(pin.Force.Zero())
        if frame == "world":
            pin.forwardKinematics(m, d, q_full)
        elif frame != "local":
            raise ValueError(frame)
        for link, w in items:
            w = np.asarray(w, float)
            if not np.any(w):
                continue
            if not m.existFrame(link, pin.FrameType.BODY):
                raise KeyError(f"link {link} is not a Pinocchio body frame")
            fr = m.frames[m.getFrameId(link, pin.FrameType.BODY)]
            j = fr.parentJoint
            f = pin.Force(w[:3].copy(), w[3:].copy())
            if frame == "local":
                fj = fr.placement.act(f)
            else:
                fj = d.oMi[j].actInv(f)
            out[j] = out[j] + fj
        return out

    # ----------------------------------------------------------- references
    def _full(self, q, v=None, a=None):
        qf = self.q_to_pin(q)
        vf = None if v is None else self.v_to_pin(v)
        af = None if a is None else self.v_to_pin(a)
        return qf, vf, af

    def rnea(self, q, v, a, f_ext=None, frame="local"):
        qf, vf, af = self._full(q, v, a)
        if f_ext is None:
            tf = pin.rnea(self.model, self.data, qf, vf, af)
        else:
            fx = self.fext_to_pin(qf, f_ext, frame)
            tf = pin.rnea(self.model, self.data, qf, vf, af, fx)
        return self.reduce(tf)

    def gravity(self, q):
        qf, _, _ = self._full(q)
        return self.reduce(pin.computeGeneralizedGravity(self.model, self.data, qf))

    def bias(self, q, v):
        qf, vf, _ = self._full(q, v)
        return self.reduce(pin.nonLinearEffects(self.model, self.data, qf, vf))

    def crba(self, q):
        qf, _, _ = self._full(q)
        data = self.model.createData()  # fresh Data: pin's crba is touchy about reuse
        H = pin.crba(self.model, data, qf).copy()
        H = np.triu(H) + np.triu(H, 1).T
        H = self.reduce_matrix(H)
        return 0.5 * (H + H.T)

    def coriolis_matrix(self, q, v):
        qf, vf, _ = self._full(q, v)
        C = pin.computeCoriolisMatrix(self.model, self.data, qf, vf).copy()
        return self.reduce_matrix(C)

    def hdot(self, q, v):
        """dH/dt along v (reduced).  Pinocchio's C satisfies Hdot = C + C^T."""
        C = self.coriolis_matrix(q, v)
        return C + C.T

    def forward_dynamics(self, q, v, tau, f_ext=None, frame="local"):
        """Reference qdd: H qdd = tau - (b - J^T f) in the reduced space."""
        H = self.crba(q)
        b = self.rnea(q, v, np.zeros(self.nv), f_ext, frame)
        return np.linalg.solve(H, np.asarray(tau, float) - b)

    def aba(self, q, v, tau, f_ext=None, frame="local"):
        """Pinocchio's own ABA when there is no reduction (mimic off or no mimic
        joint); the reduced CRBA solve otherwise (pin's aba refuses mimic)."""
        if self.G.shape[0] != self.G.shape[1]:
            return self.forward_dynamics(q, v, tau, f_ext, frame)
        qf, vf, tf = self.q_to_pin(q), self.v_to_pin(v), self.v_to_pin(tau)
        # G is a permutation here: tau_full = G tau
        if f_ext is None:
            af = pin.aba(self.model, self.data, qf, vf, tf)
        else:
            af = pin.aba(self.model, self.data, qf, vf, tf, self.fext_to_pin(qf, f_ext, frame))
        return self.G.T @ af

    def fd_residual(self, q, v, qdd, tau, f_ext=None, frame="local"):
        """(H qdd + b - J^T f - tau, scale): the residual and the size it is
        measured against (max of |tau|, |b| and |H qdd|)."""
        r = self.rnea(q, v, qdd, f_ext, frame)
        b = self.rnea(q, v, np.zeros(self.nv), f_ext, frame)
        Hq = r - b
        scale = max(np.max(np.abs(tau)), np.max(np.abs(b)), np.max(np.abs(Hq)))
        return r - np.asarray(tau, float), scale


def with_mimic(urdf: str, dependent: str, master: str, multiplier=None, offset=None) -> str:
    """URDF text where joint ``dependent`` mimics ``master`` (for offset tests)."""
    root = ET.fromstring(_urdf_text(urdf))
    for j in root.findall("joint"):
        if j.get("name") == dependent:
            for old in j.findall("mimic"):
                j.remove(old)
            m = ET.SubElement(j, "mimic", {"joint": master})
            if multiplier is not None:
                m.set("multiplier", repr(float(multiplier)))
            if offset is not None:
                m.set("offset", repr(float(offset)))
            return ET.tostring(root, encoding="unicode")
    raise KeyError(dependent)
