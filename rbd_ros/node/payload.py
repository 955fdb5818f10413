"""Payloads as the node receives them (ROS-light: no rclpy, no DDS).

* ``Payload``: one rigid payload (link, mass, com, 6 inertia values about the
  com), read from a geometry_msgs/InertiaStamped (``from_inertia_stamped``) or
  from the start-up parameters (``from_params``).
* ``apply_payloads(model, current, changes)``: the payload set after a request
  (mass 0 removes the link's payload), all or nothing, checked against the model.

Every check that needs the model (unknown link with close matches, bounds, PSD /
triangle inequality of the inertia, ...) is the core's
(``Model.with_payload``); its error text is re-labelled with the field the user
wrote (``payloads[2].inertia.m``, ``payload_masses[0]`` ...).  Building a model
with payloads is ``model_build.py``'s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from rbd_ros.core.model.robot_terms import check_payload

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


def relabel(p: Payload, e: Exception) -> PayloadError:
    """Core error 'mass: expected ...' -> 'payloads[0].inertia.m: expected ...'."""
    text = str(e)
    key, sep, rest = text.partition(":")
    if sep and key in dict(p.fields):
        return PayloadError(f"{p.name_of(key)}:{rest}")
    return PayloadError(f"{p.name_of('link')} {p.link!r}: {text}")


def check_removal(model, p: Payload) -> None:
    """mass 0 removes: the link must exist, com and inertia must still be numbers."""
    if p.link not in model.link_names:
        close = model.close_links(p.link)
        hint = f"; did you mean {close}?" if close else ""
        raise PayloadError(f"{p.name_of('link')}: {p.link!r} is not a link of the model{hint}")
    for key, values in (("com", p.com), ("inertia", p.inertia)):
        if not all(math.isfinite(x) for x in values):
            raise PayloadError(f"{p.name_of(key)}: expected finite numbers, got {list(values)}")


def apply_payloads(model, current: dict, changes) -> dict:
    """The payload set (link -> Payload) after the request ``changes`` (list of
    Payload, in order; a later entry on the same link wins; mass 0 removes), checked
    against ``model``.  All or nothing: PayloadError for the first bad entry."""
    new = dict(current)
    for p in changes:
        if p.mass == 0.0:
            check_removal(model, p)
            new.pop(p.link, None)
            continue
        try:
            check_payload(model, p.link, p.mass, p.com, p.inertia)
        except ValueError as e:
            raise relabel(p, e) from None
        new[p.link] = p
    return new
