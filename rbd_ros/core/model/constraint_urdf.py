"""Loop closures in a URDF: the ``<constraint>`` element (urdfdom#264 style).

    <constraint name="coupler_rocker" type="revolute">
      <parent link="coupler_link"/>                       required: frame a's link
      <parent_origin xyz="0.35 0 0" rpy="0 0 0"/>         optional, default identity
      <parent_axis xyz="0 0 1"/>                          optional, default z
      <child link="rocker_link"/>                         optional: absent = the world
      <child_origin xyz="0.25 0 0" rpy="0 0 -0.85"/>      optional (world coordinates without <child>)
      <child_axis xyz="0 0 1"/>                           optional, default z
      <mask value="1 1 0 0 0 0"/>                         optional
    </constraint>

``type`` names the joint that was cut to open the loop; with it the constrained
directions of the relative motion, in the parent frame's axes, whose z axis is the
joint axis:

    fixed                      1 1 1 1 1 1   (weld)
    revolute, continuous       1 1 1 1 1 0   (free rotation about z)
    prismatic                  1 1 0 1 1 1   (free translation along z)
    cylindrical                1 1 0 1 1 0
    spherical (also: ball)     1 1 1 0 0 0   (point constraint)
    planar                     0 0 1 1 1 0   (free motion in the xy plane)

A ``<parent_axis>`` / ``<child_axis>`` turns its frame (after ``rpy``) by the smallest
rotation that takes z onto the axis.  ``<mask>`` states the directions explicitly:
without ``type`` any non-zero mask; with ``type`` a subset of the type's (a planar
mechanism states the in-plane rows of its revolute closure: 1 1 0 0 0 0).  A universal
joint is no constant mask: cut the loop at one of its two axes instead.  Every error
raises ModelError naming the constraint.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from ..algorithms.spatial import rpy_to_matrix
from .constraint import Constraint
from .errors import BOUNDS, ModelError

TYPE_MASKS = {
    "fixed": (1, 1, 1, 1, 1, 1),
    "revolute": (1, 1, 1, 1, 1, 0),
    "continuous": (1, 1, 1, 1, 1, 0),
    "prismatic": (1, 1, 0, 1, 1, 1),
    "cylindrical": (1, 1, 0, 1, 1, 0),
    "spherical": (1, 1, 1, 0, 0, 0),
    "ball": (1, 1, 1, 0, 0, 0),
    "planar": (0, 0, 1, 1, 1, 0),
}


def _numbers(el, attr, n, what, bound):
    text = el.get(attr)
    if text is None:
        raise ModelError(f"{what}: missing attribute {attr!r}")
    try:
        vals = np.array([float(x) for x in text.split()])
    except ValueError:
        raise ModelError(f"{what}: {attr}={text!r} is not {n} numbers") from None
    if vals.shape != (n,):
        raise ModelError(f"{what}: {attr}={text!r} is not {n} numbers")
    if not np.all(np.abs(vals) <= bound):
        raise ModelError(f"{what}: {attr}={text!r} is not finite or exceeds the bound {bound:g}")
    return vals


def _align_z(axis):
    """The smallest rotation taking z onto the unit vector ``axis``."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(axis @ z)
    w = np.cross(z, axis)
    s = np.linalg.norm(w)
    if s < 1e-12:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    k = w / s
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + s * K + (1.0 - c) * K @ K


def _frame(el, side, what):
    """4x4 transform of the parent or child frame from <side_origin> and <side_axis>."""
    T = np.eye(4)
    origin = el.find(f"{side}_origin")
    if origin is not None:
        if origin.get("xyz") is not None:
            T[:3, 3] = _numbers(origin, "xyz", 3, f"{what} <{side}_origin>", BOUNDS["length"])
        if origin.get("rpy") is not None:
            T[:3, :3] = rpy_to_matrix(_numbers(origin, "rpy", 3, f"{what} <{side}_origin>", BOUNDS["angle"]))
    axis = el.find(f"{side}_axis")
    if axis is not None:
        u = _numbers(axis, "xyz", 3, f"{what} <{side}_axis>", BOUNDS["length"])
        n = np.linalg.norm(u)
        if n < 1e-12:
            raise ModelError(f"{what} <{side}_axis>: xyz={axis.get('xyz')!r} is not a direction")
        T[:3, :3] = T[:3, :3] @ _align_z(u / n)
    return T


def _one(el, k):
    name = el.get("name") or f"constraint{k}"
    what = f"constraint {name!r}"
    ctype = el.get("type")
    if ctype is not None and ctype not in TYPE_MASKS:
        extra = " (a universal joint is no constant mask: cut the loop at one of its axes)" \
            if ctype == "universal" else ""
        raise ModelError(f"{what}: unknown type {ctype!r}, expected one of {', '.join(TYPE_MASKS)}{extra}")
    mask_el = el.find("mask")
    if mask_el is not None:
        vals = _numbers(mask_el, "value", 6, f"{what} <mask>", 1.0)
        if not np.all((vals == 0) | (vals == 1)):
            raise ModelError(f"{what} <mask>: value={mask_el.get('value')!r} is not six 0/1 values")
        mask = tuple(int(x) for x in vals)
        if not any(mask):
            raise ModelError(f"{what} <mask>: every direction is 0 (the constraint constrains nothing)")
        if ctype is not None and any(m > t for m, t in zip(mask, TYPE_MASKS[ctype])):
            raise ModelError(f"{what} <mask>: {mask_el.get('value')!r} constrains a direction a {ctype} joint "
                             f"leaves free (its mask is {' '.join(map(str, TYPE_MASKS[ctype]))})")
    elif ctype is not None:
        mask = TYPE_MASKS[ctype]
    else:
        raise ModelError(f"{what}: give a type attribute or a <mask> element")
    parent = el.find("parent")
    if parent is None or not parent.get("link"):
        raise ModelError(f"{what}: missing <parent link=...>")
    child = el.find("child")
    if child is not None and not child.get("link"):
        raise ModelError(f"{what}: <child> without a link attribute")
    try:
        return Constraint(parent.get("link"), None if child is None else child.get("link"),
                          origin_a=_frame(el, "parent", what), origin_b=_frame(el, "child", what),
                          mask=mask, name=name)
    except ValueError as e:
        raise ModelError(str(e)) from None


def read_constraints(text: str) -> tuple:
    """The ``<constraint>`` elements directly under ``<robot>`` of URDF ``text``, as
    Constraints (document order).  Links are checked by the Model."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelError(f"robot description is not valid XML: {e}") from None
    return tuple(_one(el, k) for k, el in enumerate(root.findall("constraint")))
