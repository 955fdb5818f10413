"""Payloads and armature of the node's model (ROS-light: no rclpy, no DDS).

What is here:

* ``Payload``: one rigid payload as the node receives it (link, mass, com,
  6 inertia values about the com), read from a geometry_msgs/InertiaStamped
  (``from_inertia_stamped``) or from the start-up parameters (``from_params``).
* ``apply_payloads(payloads, changes)``: the payload set after a request
  (mass 0 removes the link's payload), all-or-nothing.
* ``build_runtime(...)``: URDF -> Model (+ armature, + payloads) -> Runtime,
  warmed up; ``with_payloads(rt, payloads)``: the same Runtime's model with
  another payload set (cheap: the URDF is not parsed again).
* ``armature_by_name`` / ``armature_vector``: the ``armature`` parameter (a list
  in ``joints`` order) -> {DOF name: value} -> the model's (nv,) vector.

Every check that needs the model (unknown link with close matches, PSD /
triangle inequality of the inertia, ...) is the core's
(``Model.with_payload``); its error text is re-labelled with the field the
user wrote (``payloads[2].inertia.m``, ``payload_masses[0]`` ...).

Payloads follow the model: after a new robot description, a payload whose
link still exists is re-attached, one whose link is gone is dropped (listed in
``rt.options["dropped_payloads"]`` so the node can warn naming it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.core.robot_terms import check_payload
from rbd_ros.node import runtime as rtm

DEFAULT_FRICTION_VELOCITY_EPS = 0.01


class PayloadError(ValueError):
    """A refused payload; the text names the field."""


@dataclass(frozen=True)
class Payload:
    link: str
    mass: float
    com: tuple       # 3 values, m, link frame
    inertia: tuple   # ixx ixy ixz iyy iyz izz, kg m^2, about the com in link axes
    # how the user wrote the fields (for error messages): core key -> field name
    fields: tuple = field(default=(("link", "link"), ("mass", "mass"), ("com", "com"),
                                   ("inertia", "inertia")), compare=False, repr=False)

    def name_of(self, key: str) -> str:
        """The user's name of field ``key`` (link, mass, com, inertia)."""
        return dict(self.fields)[key]

    def as_dict(self) -> dict:
        """JSON-able form (the service worker's model command)."""
        return {"link": self.link, "mass": self.mass, "com": list(self.com),
                "inertia": list(self.inertia)}

    @classmethod
    def from_dict(cls, d: dict) -> "Payload":
        return cls(str(d["link"]), float(d["mass"]), tuple(float(x) for x in d["com"]),
                   tuple(float(x) for x in d["inertia"]))

    def text(self) -> str:
        return f"{self.link}: {self.mass:g} kg"


def _inertia_fields(prefix: str):
    return (("link", prefix + "header.frame_id"), ("mass", prefix + "inertia.m"),
            ("com", prefix + "inertia.com"), ("inertia", prefix + "inertia.ixx..izz"))


def from_inertia_stamped(msg, prefix: str = "") -> Payload:
    """A Payload from a geometry_msgs/InertiaStamped; ``prefix`` names the entry in
    errors (``"payloads[3]."`` for the service, ``""`` for the topic)."""
    i = msg.inertia
    return Payload(link=msg.header.frame_id, mass=float(i.m),
                   com=(float(i.com.x), float(i.com.y), float(i.com.z)),
                   inertia=(float(i.ixx), float(i.ixy), float(i.ixz), float(i.iyy),
                            float(i.iyz), float(i.izz)),
                   fields=_inertia_fields(prefix))


def from_params(links, masses, coms, inertias) -> list:
    """Payloads from the start-up parameters payload_links / payload_masses (one per
    link) / payload_coms (3 per link) / payload_inertias (6 per link: ixx ixy ixz iyy
    iyz izz).  PayloadError naming the parameter when the lengths do not match."""
    links = list(links or ())
    masses, coms, inertias = list(masses or ()), list(coms or ()), list(inertias or ())
    n = len(links)
    for name, values, per in (("payload_masses", masses, 1), ("payload_coms", coms, 3),
                              ("payload_inertias", inertias, 6)):
        if len(values) != per * n:
            raise PayloadError(f"{name}: {len(values)} values for {n} payload_links, expected "
                               f"{per * n} ({per} per link)")
    if len(set(links)) != n:
        dup = sorted({x for x in links if links.count(x) > 1})
        raise PayloadError(f"payload_links: {dup} listed more than once (one payload per link)")
    out = []
    for k, link in enumerate(links):
        out.append(Payload(
            link=str(link), mass=float(masses[k]),
            com=tuple(float(x) for x in coms[3 * k:3 * k + 3]),
            inertia=tuple(float(x) for x in inertias[6 * k:6 * k + 6]),
            fields=(("link", f"payload_links[{k}]"), ("mass", f"payload_masses[{k}]"),
                    ("com", f"payload_coms[{3 * k}:{3 * k + 3}]"),
                    ("inertia", f"payload_inertias[{6 * k}:{6 * k + 6}]"))))
    return out


def _relabel(p: Payload, e: Exception) -> PayloadError:
    """Core error 'mass: expected ...' -> 'payloads[0].inertia.m: expected ...'."""
    text = str(e)
    key, sep, rest = text.partition(":")
    if sep and key in dict(p.fields):
        return PayloadError(f"{p.name_of(key)}:{rest}")
    return PayloadError(f"{p.name_of('link')} {p.link!r}: {text}")


def _check_removal(model, p: Payload) -> None:
    """mass 0 removes: the link must exist, com and inertia must still be numbers."""
    if p.link not in model.link_names:
        close = model.close_links(p.link)
        hint = f"; did you mean {close}?" if close else ""
        raise PayloadError(f"{p.name_of('link')}: {p.link!r} is not a link of the model{hint}")
    for key, values in (("com", p.com), ("inertia", p.inertia)):
        if not all(math.isfinite(x) for x in values):
            raise PayloadError(f"{p.name_of(key)}: expected finite numbers, got {list(values)}")


def attach(model, payloads) -> "rbd.Model":
    """``model`` (its own payloads removed) with ``payloads`` (iterable of Payload;
    mass 0 = none on that link).  PayloadError naming the field of the first bad one."""
    for link in list(model.payloads):
        model = model.without_payload(link)
    for p in payloads:
        if p.mass == 0.0:
            _check_removal(model, p)
            continue
        try:
            model = model.with_payload(p.link, p.mass, p.com, p.inertia)
        except ValueError as e:
            raise _relabel(p, e) from None
    return model


def apply_payloads(model, current: dict, changes) -> dict:
    """The payload set (link -> Payload) after the request ``changes`` (list of
    Payload, in order; a later entry on the same link wins; mass 0 removes), checked
    against ``model``.  All or nothing: PayloadError for the first bad entry."""
    new = dict(current)
    for p in changes:
        if p.mass == 0.0:
            _check_removal(model, p)
            new.pop(p.link, None)
            continue
        try:
            check_payload(model, p.link, p.mass, p.com, p.inertia)
        except ValueError as e:
            raise _relabel(p, e) from None
        new[p.link] = p
    return new


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

def _finish(model, joints, source, options, warm: bool = True, services: bool = False) -> "rtm.Runtime":
    """The Runtime; ``warm``: run every kernel this process needs once
    (Runtime.warm_up). A payload change skips it: the kernels are compiled already,
    warm_up's per-model work costs ~20 ms for a humanoid, and whether forward dynamics
    works for the new model is found (and logged) by the service worker's own warm-up."""
    rt = rtm.Runtime(model, joints, source)
    rt.options = options
    if warm:
        rt.warm_up(services)
    return rt


def build_runtime(urdf_text: str, *, floating_base: bool, mimic: bool, gravity, joints,
                  source: str, armature=None, payloads: dict | None = None,
                  friction_velocity_eps: float = DEFAULT_FRICTION_VELOCITY_EPS,
                  services: bool = False):
    """``runtime.build_runtime`` plus armature and payloads (``services``: warm up the
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
        probe = rtm.Runtime(model, joints, source)   # names only: cheap
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
    """A new Runtime: rt's model (same URDF, armature, joints) with exactly ``payloads``
    (link -> Payload).  PayloadError naming the field of a bad one."""
    model = attach(rt.model, payloads.values())
    options = dict(rt.options, payloads=dict(payloads), dropped_payloads=[])
    return _finish(model, rt.out_names, rt.source, options, warm=False)
