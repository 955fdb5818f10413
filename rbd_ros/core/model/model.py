"""The immutable kinematic-tree Model.

A Model is constant data (Pinocchio's Model/Data split): its kinematic tree
(``model.tree``, :mod:`rbd_ros.core.model.tree`), names, joint terms, and the flat
read-only vector the compiled kernels read (``md``, packed from the tree by
:mod:`rbd_ros.core.model.builder`).  Per-thread workspaces (the "Data") are created
lazily and reused, so calls from several threads never share scratch memory
and a call allocates nothing but its result.
"""
from __future__ import annotations

import difflib
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..algorithms.layout import H_NB, H_NQ, H_NV, workspace_size
from . import builder, inertial, urdf
from .checks import bounded, real_array
from .constraint import Constraint, as_tuple, check_links
from .errors import BOUNDS, ModelError
from .robot_terms import add_payloads, armature_vector, check_payload
from .tree import KinematicTree, LinkPlacement

__all__ = ["Model", "ModelError"]

if TYPE_CHECKING:
    class _Packed:
        """What Model.__post_init__ sets besides the dataclass fields (for type checkers)."""
        md: NDArray[np.float64]
        md_k: NDArray[np.float64]
        _nv: int
        _nq: int
        _sq: tuple[int]
        _sv: tuple[int]
        _shape_H: tuple[int, int]
        _joint_pos: dict[str, int]
        _link_pos: dict[str, int]
        _fext_maps: dict[str, NDArray[np.float64]]
else:
    _Packed = object


@dataclass(frozen=True, eq=False)
class Model(_Packed):
    """Kinematic tree with the data the dynamics kernels need.

    Build one with :meth:`Model.from_urdf`.  Attributes:

    ``name``            robot name
    ``tree``            the kinematic tree by body: parents, joints, placements,
                        inertias, indices (:class:`~rbd_ros.core.model.tree.KinematicTree`)
    ``nq``, ``nv``      sizes of q and v
    ``joint_names``     DOF-owning joints in model order (depth first from the
                        root, children in URDF order); the free-flyer added by
                        ``floating_base=True`` is ``"root_joint"`` and comes first
    ``joint_types``     URDF type of each of those joints (``"floating"`` for the free-flyer)
    ``joint_nq``, ``joint_nv``, ``idx_q``, ``idx_v``
                        per joint: sizes and start indices in q and v
    ``link_names``      every URDF link, the row order of ``f_ext``
    ``mimic_joints``    dependent joint -> (master, multiplier, offset)
    ``gravity``         gravity vector in the world frame (m/s²)
    ``mass``            total mass (kg), payloads included
    ``armature``        (nv,) rotor inertia reflected to each DOF (kg·m² for a
                        revolute DOF, kg for a prismatic one); see :meth:`with_armature`
    ``damping``, ``friction``
                        (nv,) URDF ``<dynamics damping friction>`` per DOF
                        (N·m·s/rad and N·m, or N·s/m and N); see :func:`rbd_ros.core.friction`
    ``effort_limit``, ``velocity_limit``
                        (nv,) URDF ``<limit effort velocity>`` per DOF (N·m or N,
                        rad/s or m/s); inf where the URDF gives none or 0
    ``position_limit``  (nv, 2) URDF ``<limit lower upper>`` per DOF (rad or m);
                        ±inf for continuous, floating and planar joints and where
                        the URDF gives none (or lower = upper)
    ``payloads``        link -> (mass, com, inertia) of the attached payloads
                        (see :meth:`with_payload`)
    ``constraints``     tuple of :class:`~rbd_ros.core.Constraint`: the loop closures
                        of the URDF's ``<constraint>`` elements (doc/constraints.md),
                        or those given to :meth:`with_constraints`; empty for a tree.
                        The kinematic-tree functions ignore them; the constraint
                        functions (``rbd.constrained_forward_dynamics`` ...) use them.
    ``md``, ``mi``      the model vector (layout.py), read-only, and its int64 view
    ``md_k``            the same memory as ``md`` as the kernels take it: typed
                        writable, because numba's dispatcher types a read-only
                        array ~50 ns slower per call; no kernel writes it
                        (test_core_registry checks)

    Joint terms of a planar or floating joint (and of the free-flyer) are 0
    (damping, friction) or inf (limits): URDF gives them for one-axis joints
    only.  The arrays are read-only.
    """
    name: str
    tree: KinematicTree = field(repr=False)
    joint_names: tuple[str, ...]
    joint_types: tuple[str, ...]
    joint_nq: tuple[int, ...]
    joint_nv: tuple[int, ...]
    idx_q: tuple[int, ...]
    idx_v: tuple[int, ...]
    link_names: tuple[str, ...]
    mimic_joints: dict[str, tuple[str, float, float]] = field(repr=False)
    mass: float = 0.0
    # None: filled in by __post_init__ (zeros, or no limit), never None afterwards
    damping: NDArray[np.float64] = field(default=None, repr=False)  # type: ignore[arg-type]
    friction: NDArray[np.float64] = field(default=None, repr=False)  # type: ignore[arg-type]
    effort_limit: NDArray[np.float64] = field(default=None, repr=False)  # type: ignore[arg-type]
    velocity_limit: NDArray[np.float64] = field(default=None, repr=False)  # type: ignore[arg-type]
    position_limit: NDArray[np.float64] = field(default=None, repr=False)  # type: ignore[arg-type]
    payloads: Mapping[str, tuple[Any, ...]] = field(default=None, repr=False)  # type: ignore[arg-type]
    constraints: tuple[Constraint, ...] = ()
    base_tree: KinematicTree = field(default=None, repr=False)  # type: ignore[assignment]  # without payloads
    base_mass: float = field(default=None, repr=False)  # type: ignore[assignment]  # mass without payloads
    _topology: builder.Topology | None = field(default=None, repr=False)   # (structure only)
    _tls: threading.local = field(default_factory=threading.local, repr=False, compare=False)

    # ---------------------------------------------------------------- build
    @classmethod
    def from_urdf(cls, urdf_text_or_path: str, floating_base: bool = False, mimic: bool = True,
                  gravity: ArrayLike = (0.0, 0.0, -9.81),
                  armature: ArrayLike | Mapping[str, float] | None = None) -> Model:
        """Build a model from URDF XML text or a path to a URDF file.

        ``floating_base``: add a free-flyer root joint (Pinocchio's layout:
        q = [x y z qx qy qz qw, ...], v = [linear; angular] in the base frame).
        ``mimic``: True makes mimic joints dependent (not DOFs; torque folded
        into the master); False treats them as independent DOFs.
        ``gravity``: gravity vector in the world (root link) frame.
        ``armature``: per-DOF rotor inertia, see :meth:`with_armature` (None: zero).
        Raises :class:`ModelError` naming the offending link or joint, also
        for a non-finite number or one beyond ``rbd_ros.core.model.errors.BOUNDS``
        (|xyz| <= 1e6 m, |rpy| <= 1e6 rad, mass <= 1e9 kg, |inertia| <= 1e12
        kg m², |mimic multiplier|, |offset| <= 1e6, |gravity| <= 1e4 m/s² per
        component, damping and friction <= 1e9), and for ``floating_base=True``
        with a URDF joint named ``root_joint`` (the free-flyer's name)."""
        parts = urdf.parse(urdf_text_or_path, floating_base=bool(floating_base), mimic=bool(mimic),
                           gravity=gravity)
        model = cls(**parts)
        return model if armature is None else model.with_armature(armature)

    # ---------------------------------------------------------------- sizes
    @property
    def nq(self) -> int:
        return self._nq

    @property
    def nv(self) -> int:
        return self._nv

    @property
    def nbodies(self) -> int:
        """Number of elementary moving bodies (planar joints count three)."""
        return int(self.mi[H_NB])

    @property
    def mi(self) -> NDArray[np.int64]:
        """The int64 view of ``md``: its integer entries (read-only; see layout.py)."""
        return self.md.view(np.int64)

    @property
    def gravity(self) -> NDArray[np.float64]:
        return self.tree.gravity.copy()

    @property
    def links(self) -> tuple[LinkPlacement, ...]:
        """Per link (``link_names`` order): its body and placement (``tree.links``)."""
        return self.tree.links

    # ---------------------------------------------------------------- lookup
    def _joint(self, name: str) -> int:
        try:
            return self._joint_pos[name]
        except KeyError:
            raise ValueError(f"unknown joint {name!r}: the model's DOF joints are {list(self.joint_names)}") \
                from None

    def q_index(self, name: str) -> int:
        """Start index of joint ``name`` in q."""
        return self.idx_q[self._joint(name)]

    def v_index(self, name: str) -> int:
        """Start index of joint ``name`` in v."""
        return self.idx_v[self._joint(name)]

    def link_index(self, name: str) -> int:
        """Row of link ``name`` in ``f_ext``."""
        try:
            return self._link_pos[name]
        except KeyError:
            raise ValueError(f"unknown link {name!r}") from None

    def close_links(self, name: object) -> list[str]:
        """Link names close to ``name`` (for error messages)."""
        return difflib.get_close_matches(str(name), self.link_names, n=5, cutoff=0.5)

    def neutral(self) -> NDArray[np.float64]:
        """Neutral configuration: zeros, identity quaternion for free joints."""
        q = np.zeros(self.nq)
        for t, i in zip(self.joint_types, self.idx_q):
            if t == "floating":
                q[i + 6] = 1.0
        return q

    # ---------------------------------------------------------------- derived models
    def with_gravity(self, gravity: ArrayLike) -> Model:
        """A copy of this model with another gravity vector (cheap)."""
        return self._derive(self.base_tree.replace(gravity=_vector3(gravity, "gravity")), self.payloads)

    @property
    def armature(self) -> NDArray[np.float64]:
        """(nv,) rotor inertia reflected to each DOF (read-only)."""
        return self.tree.armature

    def with_armature(self, armature: ArrayLike | Mapping[str, float]) -> Model:
        """A copy of this model with another per-DOF armature (cheap).

        ``armature``: an (nv,) array in DOF order, or a dict {joint name: value}
        (joints not named get 0; a planar joint's value applies to its three
        DOFs).  Values are the motor rotor inertia reflected to the joint,
        I_rotor · gear_ratio² (kg·m² for revolute DOFs, kg for prismatic ones),
        finite, ≥ 0 and ≤ ``BOUNDS["armature"]``.  Same meaning as Pinocchio's
        ``model.armature``: it adds ``diag(armature)`` to H, so ``armature · qdd``
        to the RNEA torque and to forward dynamics / ABA; gravity and bias torques
        are unaffected.  A mimic joint is no DOF: its master's value is the one
        that counts.  The free-flyer and floating joints take no armature
        (ValueError)."""
        return self._derive(self.base_tree.replace(armature=armature_vector(self, armature)), self.payloads)

    def with_constraints(self, constraints: Iterable[Constraint]) -> Model:
        """A copy of this model whose ``constraints`` are ``constraints`` (a sequence of
        :class:`~rbd_ros.core.Constraint`, replacing the URDF's; cheap).  Raises
        ModelError naming a constraint with an unknown link, both frames fixed to the
        world, or a name used twice."""
        return replace(self, constraints=as_tuple(constraints), _tls=threading.local())

    def with_payload(self, link: str, mass: float, com: ArrayLike, inertia: ArrayLike) -> Model:
        """A copy of this model with a rigid payload attached to URDF link ``link``.

        ``mass`` in kg (≥ 0), ``com`` the payload's centre of mass in the link
        frame (m), ``inertia`` its rotational inertia about ``com`` in the link
        axes (kg·m²): a 3×3 matrix or the 6 values ixx ixy ixz iyy iyz izz;
        within ``BOUNDS`` (mass, length, inertia) like a URDF link's.
        Payloads on different links add up; a second payload on the same link
        *replaces* the first.  A link merged by a fixed joint works (the payload
        lands on the moving body it hangs from, with the fixed transform).  A
        payload on a link fixed to the world changes no torque but counts in
        ``mass``.  Cheap: the URDF is not parsed again.  Raises ValueError
        naming the bad field (unknown links: with the closest link names)."""
        entry = check_payload(self, link, mass, com, inertia)
        payloads = dict(self.payloads)
        payloads[link] = entry
        return self._derive(self.base_tree, payloads)

    def without_payload(self, link: str) -> Model:
        """A copy of this model without the payload on ``link``: its numbers are
        exactly those of the model before the payload was attached.  ValueError
        if ``link`` carries none."""
        if link not in self.payloads:
            raise ValueError(f"link: {link!r} carries no payload (payloads are on {sorted(self.payloads)})")
        payloads = dict(self.payloads)
        del payloads[link]
        return self._derive(self.base_tree, payloads)

    def _derive(self, base_tree: KinematicTree, payloads: Mapping[str, tuple[Any, ...]]) -> Model:
        """A model sharing everything with this one but the payload-free tree
        ``base_tree`` (same structure) and ``payloads``."""
        mass = self.base_mass + sum(p[0] for p in payloads.values())
        return replace(self, tree=add_payloads(base_tree, payloads), base_tree=base_tree, payloads=payloads,
                       mass=mass, _tls=threading.local())

    # ---------------------------------------------------------------- inertial parameters
    def inertial_parameters(self) -> NDArray[np.float64]:
        """(nbodies, 10) per body [m, m cx, m cy, m cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]: inertia
        about the body frame's origin, body frame (Pinocchio's ``dynamicParameters``
        order), payloads included; ``inertial.body_link_names(model)`` names the rows."""
        return inertial.inertial_parameters(self)

    def with_inertial_parameters(self, pi: ArrayLike) -> Model:
        """A copy of this model whose bodies have exactly ``pi`` ((nbodies, 10), as
        :meth:`inertial_parameters` returns them): checked physically consistent
        (finite; m > 0 or an all-zero row; pseudo-inertia positive semi-definite),
        else ValueError naming the body by its URDF link.  The result carries no
        payloads: theirs are part of ``pi``."""
        return inertial.with_inertial_parameters(self, pi)

    def fext_map(self, frame: str) -> NDArray[np.float64]:
        """Matrix taking per-link wrenches (rows [f; tau], ``link_names`` order,
        flattened) to per-body spatial forces [n; f] for the kernels.  ``local``:
        link frame, moment about the link origin, mapped into the body frame;
        ``world``: only summed per body (the kernel transforms them).  Links
        fixed to the world get no column entries: their wrenches act on the
        ground."""
        try:
            return self._fext_maps[frame]
        except KeyError:
            pass
        nb, nl = self.nbodies, len(self.link_names)
        M = np.zeros((nb * 6, nl * 6))
        for k, info in enumerate(self.links):
            b = info.body
            if b < 0:
                continue
            rows, cols = slice(6 * b, 6 * b + 6), slice(6 * k, 6 * k + 6)
            if frame == "world":
                block = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])
            else:
                R, p = info.R, info.p
                px = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
                block = np.block([[px @ R, R], [R, np.zeros((3, 3))]])
            M[rows, cols] += block
        M.setflags(write=False)
        self._fext_maps[frame] = M
        return M

    # ---------------------------------------------------------------- internals
    def __post_init__(self) -> None:
        object.__setattr__(self, "_joint_pos", {n: k for k, n in enumerate(self.joint_names)})
        object.__setattr__(self, "_link_pos", {n: k for k, n in enumerate(self.link_names)})
        object.__setattr__(self, "_fext_maps", {})
        topology = builder.topology(self.tree) if self._topology is None else self._topology
        object.__setattr__(self, "_topology", topology)
        # md_k: the packed vector the kernels take; md: a read-only view of it
        md_k = np.array(builder.pack(self.tree, topology), dtype=np.float64)
        md = md_k.view()
        md.setflags(write=False)
        object.__setattr__(self, "md", md)
        object.__setattr__(self, "md_k", md_k)
        # plain ints and shapes for the hot paths and the argument checks
        mi = self.mi
        object.__setattr__(self, "_nv", int(mi[H_NV]))
        object.__setattr__(self, "_nq", int(mi[H_NQ]))
        object.__setattr__(self, "_sq", (self._nq,))
        object.__setattr__(self, "_sv", (self._nv,))
        object.__setattr__(self, "_shape_H", (self._nv, self._nv))
        nv = self._nv
        for name, fill, shape in (("damping", 0.0, (nv,)), ("friction", 0.0, (nv,)),
                                  ("effort_limit", np.inf, (nv,)), ("velocity_limit", np.inf, (nv,)),
                                  ("position_limit", np.inf, (nv, 2))):
            x = getattr(self, name)
            if x is None:
                x = np.full(shape, fill)
                if name == "position_limit":
                    x[:, 0] = -np.inf
            elif not (isinstance(x, np.ndarray) and not x.flags.writeable):
                x = np.array(x, dtype=float).reshape(shape)
            if x.flags.writeable:
                x.setflags(write=False)
            object.__setattr__(self, name, x)
        object.__setattr__(self, "payloads", MappingProxyType(dict(self.payloads or {})))   # read-only view
        object.__setattr__(self, "constraints", tuple(self.constraints))
        check_links(self.constraints, self.links, ModelError)
        if self.base_tree is None:
            object.__setattr__(self, "base_tree", self.tree)
        if self.base_mass is None:
            object.__setattr__(self, "base_mass", float(self.mass))

    def workspace(self) -> NDArray[np.float64]:
        """This thread's scratch vector for the kernels (created on first use)."""
        try:
            return self._tls.ws
        except AttributeError:
            ws = np.zeros(workspace_size(self.md))
            self._tls.ws = ws
            return ws

    def __getstate__(self) -> Any:
        raise TypeError("Model is built from URDF; pickle the URDF text instead")


def _vector3(x: ArrayLike, name: str) -> NDArray[np.float64]:
    g = real_array(x, name, "3 numbers")
    if g.shape != (3,):
        raise ValueError(f"{name}: expected 3 numbers, got {x!r}")
    return bounded(g, BOUNDS["gravity"], name, " m/s^2")
