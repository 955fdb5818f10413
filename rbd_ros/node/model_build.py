"""Building the node's model (ROS-light: no rclpy, no DDS): URDF -> Model (+ armature,
+ payloads) -> Robot, warmed up (``build_robot``); the same Robot's model with another
payload set (``with_payloads``, cheap: the URDF is not parsed again); the ``armature``
parameter -> the model's vector.

Payloads follow the model: after a new robot description, a payload whose link still
exists is re-attached, one whose link is gone is dropped (listed in
``rt.options["dropped_payloads"]`` so the node can warn naming it).
"""
from __future__ import annotations

import math

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.node.payload import DEFAULT_FRICTION_VELOCITY_EPS, PayloadError, check_removal, relabel
from rbd_ros.node.robot import Robot
from rbd_ros.node.warmup import warm_up


def attach(model, payloads) -> "rbd.Model":
    """``model`` (its own payloads removed) with ``payloads`` (iterable of Payload;
    mass 0 = none on that link).  PayloadError naming the field of the first bad one."""
    for link in list(model.payloads):
        model = model.without_payload(link)
    for p in payloads:
        if p.mass == 0.0:
            check_removal(model, p)
            continue
        try:
            model = model.with_payload(p.link, p.mass, p.com, p.inertia)
        except ValueError as e:
            raise relabel(p, e) from None
    return model


def split_known(model, payloads: dict):
    """(payloads whose link is in the model, sorted names of the links that are not)."""
    links = set(model.link_names)
    kept = {k: p for k, p in payloads.items() if k in links}
    return kept, sorted(k for k in payloads if k not in links)


# ----------------------------------------------------------------------------- armature

def armature_by_name(rt, values, field: str = "armature") -> dict:
    """The ``armature`` parameter (one value per output joint of ``rt``, in ``joints``
    order; empty = zero) -> {DOF name: value} of the non-zero values.  PayloadError
    naming the entry and the joint for a wrong length or a negative/non-finite value."""
    values = list(values or ())
    if not values:
        return {}
    if len(values) != rt.nout:
        raise PayloadError(f"{field}: {len(values)} values, expected {rt.nout} (one per joint of "
                           f"`joints`: {list(rt.out_names)}) or none")
    out = {}
    for k, (name, x) in enumerate(zip(rt.out_names, values)):
        x = float(x)
        if not (math.isfinite(x) and x >= 0.0):
            raise PayloadError(f"{field}[{k}] ({name}): expected a finite number >= 0 (rotor "
                               f"inertia reflected to the joint, kg m^2 or kg), got {x}")
        if x:
            out[name] = x
    return out


def armature_vector(rt, by_name: dict) -> np.ndarray:
    """{DOF name: value} -> the model's (nv,) armature (0 elsewhere).  PayloadError for a
    name that is not a DOF of rt (the service worker gets names from the node)."""
    arm = np.zeros(rt.model.nv)
    for name, x in by_name.items():
        i = rt.dof_index.get(name)
        if i is None:
            raise PayloadError(rt.unknown_joint_text(name, "armature"))
        arm[rt.dof_v[i]] = float(x)
    return arm


def armature_text(rt) -> str:
    """Non-zero armature per DOF name ('none' if all zero), for diagnostics."""
    arm = rt.model.armature
    parts = [f"{n}: {arm[rt.dof_v[i]]:g}" for i, n in enumerate(rt.dof_names) if arm[rt.dof_v[i]]]
    return ", ".join(parts) if parts else "none"


def payloads_text(model) -> str:
    """Active payloads 'link: mass kg, ...' ('none'), for diagnostics."""
    pl = model.payloads
    return ", ".join(f"{k}: {pl[k][0]:g} kg" for k in sorted(pl)) if pl else "none"


# ----------------------------------------------------------------------------- building

def _finish(model, joints, source, options, warm: bool = True, services: bool = False) -> Robot:
    """The Robot; ``warm``: run every kernel this process needs once
    (warmup.warm_up). A payload change skips it: the kernels are compiled already, and
    whether forward dynamics works for the new model is found (and logged) by the
    service worker's own warm-up."""
    rt = Robot(model, joints, source)
    rt.options = options
    if warm:
        warm_up(rt, services)
    return rt


def build_robot(urdf_text: str, *, floating_base: bool, mimic: bool, gravity, joints,
                  source: str, armature=None, payloads: dict | None = None,
                  friction_velocity_eps: float = DEFAULT_FRICTION_VELOCITY_EPS,
                  services: bool = False):
    """``runtime.build_robot`` plus armature and payloads (``services``: warm up the
    service kernels, in the worker process, instead of the control path's).

    ``armature``: {DOF name: value}, or the ``armature`` parameter (a list in ``joints``
    order, see ``armature_by_name``); ``payloads``: link -> Payload.  A payload never
    makes the model fail: one on a link the model lacks, or one the model refuses (a
    bad start-up parameter), is left out and listed in ``rt.options["dropped_payloads"]``
    as (link, reason).  Raises rbd.ModelError / ValueError for a bad model, PayloadError
    for a bad armature.

    ``rt.options`` carries what the service worker needs to build the same model
    (``protocol.model_command``): floating_base, mimic, gravity, armature ({DOF name:
    value}), payloads (the attached ones), friction_velocity_eps."""
    if "<" not in urdf_text:
        raise rbd.ModelError(f"the robot description is not URDF XML (starts with "
                             f"{urdf_text[:40]!r})")
    g = [float(x) for x in gravity]
    if len(g) != 3 or not all(math.isfinite(x) for x in g):
        raise rbd.ModelError(f"parameter gravity: expected 3 finite numbers, got {list(gravity)}")
    model = rbd.Model.from_urdf(urdf_text, floating_base=floating_base, mimic=mimic,
                                gravity=tuple(g))
    by_name = {}
    if armature is not None and len(armature):
        probe = Robot(model, joints, source)   # names only: cheap
        by_name = dict(armature) if isinstance(armature, dict) else armature_by_name(probe, armature)
        model = model.with_armature(armature_vector(probe, by_name))
    known, missing = split_known(model, dict(payloads or {}))
    dropped = [(link, f"the model has no link {link!r}") for link in missing]
    kept = {}
    for link, p in known.items():
        try:
            model = attach(model, list(kept.values()) + [p])
            kept[link] = p
        except PayloadError as e:
            dropped.append((link, str(e)))
    options = {"floating_base": bool(floating_base), "mimic": bool(mimic), "gravity": g,
               "armature": by_name, "payloads": kept,
               "friction_velocity_eps": float(friction_velocity_eps),
               "dropped_payloads": dropped}
    return _finish(model, joints, source, options, services=services)


def with_payloads(rt, payloads: dict):
    """A new Robot: rt's model (same URDF, armature, joints) with exactly ``payloads``
    (link -> Payload).  PayloadError naming the field of a bad one."""
    model = attach(rt.model, payloads.values())
    options = dict(rt.options, payloads=dict(payloads), dropped_payloads=[])
    return _finish(model, rt.out_names, rt.source, options, warm=False)
