"""The kinematic tree of a Model, by name and as plain arrays (public).

``model.tree`` is what the model *is*: the URDF parser builds it, payloads,
armature and gravity change it, and the flat vector the compiled kernels read
(``model.md``) is packed from it (``builder.pack``).  The readable reference
twins (``reference/``) read the model through this view only, so a packing
bug shows up as a disagreement between kernel and twin.  Pinocchio's Model
holds the same things (``parents``, ``joints``, ``jointPlacements``,
``inertias``, ``idx_qs``, ``idx_vs``, ``frames``).

Bodies are the *elementary* moving bodies, in topological order (parent
before child, depth first): a URDF link merged into its moving parent by a
fixed joint is no body of its own (see ``links``), a planar joint makes three
bodies (two massless), a link fixed to the world none.  Body ``i``'s frame is
its joint's frame (the URDF child link's frame).  Units: SI; inertias about
the body frame's origin unless named ``_com``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

JOINT_TYPES = ("revolute", "prismatic", "free")
NV_OF_TYPE = {"revolute": 1, "prismatic": 1, "free": 6}
NQ_OF_TYPE = {"revolute": 1, "prismatic": 1, "free": 7}


@dataclass(frozen=True)
class LinkPlacement:
    """Where URDF link ``name`` sits: on ``body`` (-1: fixed to the world), with
    orientation ``R`` (link axes -> body axes) and origin ``p`` (body coordinates)
    in that body's frame."""
    name: str
    body: int
    R: np.ndarray
    p: np.ndarray


def _readonly(x, dtype=np.float64):
    a = np.array(x, dtype=dtype)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class KinematicTree:
    """The model's tree (``Model.tree``).  Arrays are read-only; ``nb`` = number of bodies.

    ``parent``       (nb,) parent body, -1 = the world (or the root link)
    ``joint``        (nb,) URDF joint moving body i (``"root_joint"`` for the
                     free-flyer; a planar joint's three bodies share its name)
    ``joint_type``   (nb,) ``"revolute"``, ``"prismatic"`` or ``"free"``
    ``link``         (nb,) the URDF link whose frame is body i's frame (its joint's child
                     link; ``""`` for the two massless bodies a planar joint adds)
    ``axis``         (nb, 3) unit joint axis in the body frame (zero for free joints)
    ``placement_R``, ``placement_p``
                     (nb, 3, 3), (nb, 3): the joint frame's orientation (joint axes
                     -> parent axes) and origin in the parent body's frame: X_T,
                     Pinocchio's ``jointPlacements``
    ``mass``         (nb,) kg, payloads included
    ``mass_com``     (nb, 3) first moment m c, body frame (kg m)
    ``inertia``      (nb, 3, 3) rotational inertia about the body origin (Ī, kg m²)
    ``q_index``, ``v_index``
                     (nb,) first index of the joint's coordinates in q and v (a
                     mimic joint: its master's)
    ``mimic``        (nb,) True for a mimic (dependent) joint: coordinate
                     ``multiplier * q[q_index] + offset``, no DOF of its own
    ``multiplier``, ``offset``
                     (nb,) 1 and 0 for ordinary joints
    ``links``        a :class:`LinkPlacement` per URDF link, in ``Model.link_names`` order
    ``gravity``      (3,) m/s², world frame
    ``armature``     (nv,) rotor inertia reflected to each DOF
    ``nq``, ``nv``   sizes of q and v
    """
    parent: np.ndarray
    joint: tuple
    joint_type: tuple
    link: tuple
    axis: np.ndarray
    placement_R: np.ndarray
    placement_p: np.ndarray
    mass: np.ndarray
    mass_com: np.ndarray
    inertia: np.ndarray
    q_index: np.ndarray
    v_index: np.ndarray
    mimic: np.ndarray
    multiplier: np.ndarray
    offset: np.ndarray
    links: tuple
    gravity: np.ndarray
    armature: np.ndarray
    nq: int
    nv: int

    def __post_init__(self):
        for name, dtype in (("parent", np.int64), ("q_index", np.int64), ("v_index", np.int64),
                            ("mimic", bool), ("axis", None), ("placement_R", None), ("placement_p", None),
                            ("mass", None), ("mass_com", None), ("inertia", None), ("multiplier", None),
                            ("offset", None), ("gravity", None), ("armature", None)):
            object.__setattr__(self, name, _readonly(getattr(self, name), dtype or np.float64))
        object.__setattr__(self, "joint", tuple(self.joint))
        object.__setattr__(self, "joint_type", tuple(self.joint_type))
        object.__setattr__(self, "link", tuple(self.link))
        object.__setattr__(self, "links", tuple(self.links))
        bad = set(self.joint_type) - set(JOINT_TYPES)
        if bad:
            raise ValueError(f"joint_type: unknown {sorted(bad)} (expected one of {JOINT_TYPES})")

    # ---------------------------------------------------------------- derived, read-only
    @property
    def nbodies(self) -> int:
        return len(self.joint_type)

    @property
    def com(self) -> np.ndarray:
        """(nb, 3) centre of mass in the body frame (0 for a massless body)."""
        m = self.mass[:, None]
        return np.divide(self.mass_com, m, out=np.zeros_like(self.mass_com), where=m > 0)

    @property
    def inertia_com(self) -> np.ndarray:
        """(nb, 3, 3) rotational inertia about the centre of mass, body axes."""
        c = self.com
        shift = self.mass[:, None, None] * (np.einsum("bi,bi->b", c, c)[:, None, None] * np.eye(3)
                                            - np.einsum("bi,bj->bij", c, c))
        return self.inertia - shift

    def nv_of(self, i: int) -> int:
        """Velocity coordinates of body i's joint."""
        return NV_OF_TYPE[self.joint_type[i]]

    def children(self, i: int) -> list:
        """Bodies whose parent is body i (-1: the root bodies)."""
        return [int(k) for k in np.flatnonzero(self.parent == i)]

    def link_placement(self, name: str) -> LinkPlacement:
        for lp in self.links:
            if lp.name == name:
                return lp
        raise ValueError(f"unknown link {name!r}")

    def replace(self, **changes) -> "KinematicTree":
        """A copy with some fields replaced (e.g. ``mass=..``); the others are shared."""
        values = {f: getattr(self, f) for f in self.__dataclass_fields__}
        values.update(changes)
        return KinematicTree(**values)
