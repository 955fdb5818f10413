"""``Constraint``: a kinematic constraint between two frames (a loop closure, later a contact).

A constraint ties a frame on ``link_a`` to a frame on ``link_b`` (None: the world).
Conventions are Pinocchio's ``RigidConstraintModel`` with ``ReferenceFrame.LOCAL``
(joint1 = frame a): the constrained directions, the Jacobian rows and the
constraint forces λ are expressed in frame a's axes, at frame a's origin, in
Pinocchio's order [vx, vy, vz, ωx, ωy, ωz].

``mask`` picks the constrained directions of the relative motion of frame b with
respect to frame a, in frame a's axes:

    (1, 1, 1, 0, 0, 0)   a point (3D, spherical) constraint: the two origins coincide
    (1, 1, 1, 1, 1, 1)   a weld (6D): the two frames coincide (``Constraint.weld``)
    (1, 1, 1, 1, 1, 0)   a revolute closure about frame a's z axis (5D)
    anything else        the masked rows of the weld (doc/constraints.md lists the joints)

The error of a point constraint is the position difference; of every other mask
the masked rows of the weld's error −log6(ᵃMᵦ) (constraints/kinematics.py).
"""
from __future__ import annotations

import difflib

import numpy as np

from .checks import real_array

POINT_MASK = (1, 1, 1, 0, 0, 0)
WELD_MASK = (1, 1, 1, 1, 1, 1)
DIRECTIONS = ("vx", "vy", "vz", "wx", "wy", "wz")


def _origin(x, name, cname):
    """A 4x4 homogeneous transform (rotation part orthonormal to 1e-6, then made exactly
    orthonormal), read-only; identity for None."""
    if x is None:
        T = np.eye(4)
    else:
        T = real_array(x, f"{cname}: {name}", "a 4x4 homogeneous transform")
        if T.shape != (4, 4):
            raise ValueError(f"{cname}: {name}: expected a 4x4 homogeneous transform, got shape {T.shape}")
        if not np.all(np.isfinite(T)) or np.max(np.abs(T[:3, 3])) > 1e6:
            raise ValueError(f"{cname}: {name}: expected finite numbers (|translation| <= 1e6 m)")
        if not np.allclose(T[3], (0.0, 0.0, 0.0, 1.0), rtol=0.0, atol=1e-12):
            raise ValueError(f"{cname}: {name}: the last row must be 0 0 0 1, got {T[3].tolist()}")
        R = T[:3, :3]
        if np.max(np.abs(R.T @ R - np.eye(3))) > 1e-6 or np.linalg.det(R) < 0:
            raise ValueError(f"{cname}: {name}: the upper-left 3x3 block is not a rotation matrix")
        U, _, Vt = np.linalg.svd(R)
        T[:3, :3] = U @ Vt
    T.setflags(write=False)
    return T


def _mask(mask, cname):
    if mask is None:
        return POINT_MASK
    m = real_array(mask, f"{cname}: mask", "six 0/1 values over [vx, vy, vz, wx, wy, wz]")
    if m.shape != (6,) or not np.all((m == 0) | (m == 1)):
        raise ValueError(f"{cname}: mask: expected six 0/1 values over [vx, vy, vz, wx, wy, wz], "
                         f"got {np.asarray(mask).tolist()}")
    if not m.any():
        raise ValueError(f"{cname}: mask: every direction is 0 (the constraint constrains nothing)")
    return tuple(int(x) for x in m)


class Constraint:
    """A constraint between a frame on ``link_a`` and a frame on ``link_b`` (None: the world).

    ``origin_a`` / ``origin_b``: 4x4 homogeneous transforms of the constraint frames in
    their link frames (default identity; for the world, in world coordinates).
    ``mask``: six 0/1 over [vx, vy, vz, ωx, ωy, ωz] of the relative motion, in frame a's
    axes; default (1, 1, 1, 0, 0, 0), a point constraint.  ``name``: for messages (default
    ``"link_a-link_b"``).  Immutable and hashable (equal constraints share the packed form
    :mod:`.packing` caches).  Links are checked when the constraint meets a model
    (an unknown link raises ValueError naming the constraint)."""

    __slots__ = ("link_a", "link_b", "origin_a", "origin_b", "mask", "name", "_key", "_hash")
    link_a: str
    link_b: str | None
    origin_a: np.ndarray
    origin_b: np.ndarray
    mask: tuple[int, ...]
    name: str
    _key: tuple
    _hash: int

    def __init__(self, link_a, link_b=None, *, origin_a=None, origin_b=None, mask=None, name=None):
        if not isinstance(link_a, str) or not link_a:
            raise ValueError(f"link_a: expected a link name, got {link_a!r}")
        if link_b is not None and (not isinstance(link_b, str) or not link_b):
            raise ValueError(f"link_b: expected a link name or None (the world), got {link_b!r}")
        if name is None:
            name = f"{link_a}-{link_b or 'world'}"
        if not isinstance(name, str) or not name:
            raise ValueError(f"name: expected a non-empty string, got {name!r}")
        cname = f"constraint {name!r}"
        if link_a == link_b:
            raise ValueError(f"{cname}: link_a and link_b are the same link {link_a!r}")
        set_ = object.__setattr__
        set_(self, "link_a", link_a)
        set_(self, "link_b", link_b)
        set_(self, "origin_a", _origin(origin_a, "origin_a", cname))
        set_(self, "origin_b", _origin(origin_b, "origin_b", cname))
        set_(self, "mask", _mask(mask, cname))
        set_(self, "name", name)
        key = (link_a, link_b, self.origin_a.tobytes(), self.origin_b.tobytes(), self.mask, name)
        set_(self, "_key", key)
        set_(self, "_hash", hash(key))

    @classmethod
    def weld(cls, link_a, link_b=None, *, origin_a=None, origin_b=None, name=None):
        """A 6D constraint: the two frames coincide (mask all ones)."""
        return cls(link_a, link_b, origin_a=origin_a, origin_b=origin_b, mask=WELD_MASK, name=name)

    @property
    def dim(self) -> int:
        """Number of constrained directions (rows of the Jacobian)."""
        return sum(self.mask)

    @property
    def is_point(self) -> bool:
        """True for a point constraint (mask 1 1 1 0 0 0; its error is the position difference)."""
        return self.mask == POINT_MASK

    @property
    def directions(self) -> tuple:
        """Names of the constrained directions, in row order (e.g. ``("vx", "vy", "vz")``)."""
        return tuple(d for d, m in zip(DIRECTIONS, self.mask) if m)

    def __setattr__(self, name, value):
        raise AttributeError("Constraint is immutable")

    def __eq__(self, other):
        return self is other or (isinstance(other, Constraint) and self._key == other._key)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        b = "None" if self.link_b is None else repr(self.link_b)
        return f"Constraint({self.link_a!r}, {b}, mask={self.mask}, name={self.name!r})"

    def __reduce__(self):
        return (_rebuild, (self.link_a, self.link_b, np.array(self.origin_a), np.array(self.origin_b),
                           self.mask, self.name))


def _rebuild(link_a, link_b, origin_a, origin_b, mask, name):
    return Constraint(link_a, link_b, origin_a=origin_a, origin_b=origin_b, mask=mask, name=name)


def check_links(constraints, links, error=ValueError):
    """Raise ``error`` naming the constraint whose link is not among ``links`` (a model's
    ``LinkPlacement`` tuple; with the closest names), whose two frames are both fixed to
    the world, or whose name another constraint has."""
    body = {lp.name: lp.body for lp in links}
    names = set()
    for c in constraints:
        if not isinstance(c, Constraint):
            raise TypeError(f"constraints: expected rbd_ros.core.Constraint objects, got {type(c).__name__}")
        if c.name in names:
            raise error(f"constraint {c.name!r}: two constraints have this name")
        names.add(c.name)
        for end, link in (("link_a", c.link_a), ("link_b", c.link_b)):
            if link is not None and link not in body:
                close = difflib.get_close_matches(link, list(body), n=3, cutoff=0.5)
                hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
                raise error(f"constraint {c.name!r}: {end} {link!r} is not a link of the model{hint}")
        if body[c.link_a] < 0 and (c.link_b is None or body[c.link_b] < 0):
            raise error(f"constraint {c.name!r}: both frames are fixed to the world (no joint moves "
                        f"{c.link_a!r}{'' if c.link_b is None else ' or ' + repr(c.link_b)})")


def as_tuple(constraints, name="constraints"):
    """``constraints`` (None, one Constraint or a sequence of them) as a tuple."""
    if constraints is None:
        return ()
    if isinstance(constraints, Constraint):
        return (constraints,)
    if isinstance(constraints, tuple) and all(type(c) is Constraint for c in constraints):
        return constraints
    try:
        out = tuple(constraints)
    except TypeError:
        raise TypeError(f"{name}: expected a sequence of rbd_ros.core.Constraint, got "
                        f"{type(constraints).__name__}") from None
    for c in out:
        if not isinstance(c, Constraint):
            raise TypeError(f"{name}: expected rbd_ros.core.Constraint objects, got {type(c).__name__}")
    return out


__all__ = ["Constraint", "POINT_MASK", "WELD_MASK", "check_links", "as_tuple"]
