"""The momentum observer's node parameters checked against one Robot (ROS-free), and the
default contact frame."""
from __future__ import annotations

import math

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.node import effort_law

SOURCES = ("measured", "commanded")


class ObserverSettings:
    """The observer parameters checked against one Robot (ValueError naming the parameter)."""

    def __init__(self, params, rt):
        self.gain = float(params.observer_gain)
        if not (math.isfinite(self.gain) and self.gain > 0):
            raise ValueError(f"observer_gain: expected a finite number > 0 (1/s), got {params.observer_gain!r}")
        self.source = params.observer_torque_source
        if self.source not in SOURCES:
            raise ValueError(f"observer_torque_source: expected one of {list(SOURCES)}, got {self.source!r}")
        if self.source == "commanded" and set(rt.out_names) != set(rt.dof_names):
            raise ValueError("observer_torque_source commanded: the effort command must cover every DOF of the "
                             f"model (parameter joints {list(rt.out_names)} leaves out "
                             f"{sorted(set(rt.dof_names) - set(rt.out_names))})")
        self.held = bool(params.observer_torque_held)
        self.friction = bool(params.observer_friction)
        self.max_gap = float(params.observer_max_gap)
        if not (math.isfinite(self.max_gap) and self.max_gap > 0):
            raise ValueError(f"observer_max_gap: expected a finite number > 0 (s), got {params.observer_max_gap!r}")
        self.frame = params.contact_frame or default_contact_frame(rt.model)
        if self.frame not in rt.link_index:
            close = rt.model.close_links(self.frame)
            raise ValueError(f"contact_frame: {self.frame!r} is not a link of the model"
                             + (f"; did you mean {close}?" if close else ""))
        self.thresholds = effort_law.per_joint(params.collision_thresholds, "collision_thresholds", rt.out_names,
                                               positive=True)
        self.debounce = float(params.collision_debounce)
        self.release = float(params.collision_release)
        rbd.CollisionDetector(self.thresholds, self.debounce, self.release)    # checks them

    def same(self, other) -> bool:
        """True if ``other`` (ObserverSettings or None) holds the same values."""
        return other is not None and vars(self).keys() == vars(other).keys() and all(
            np.array_equal(v, vars(other)[k]) for k, v in vars(self).items())


def default_contact_frame(model) -> str:
    """The tip of the longest chain: the URDF link on the body with the most ancestors
    (the last such link in the URDF: a flange or tool frame fixed to the last body)."""
    t = model.tree
    depth = [0] * model.nbodies
    for i, p in enumerate(t.parent):
        depth[i] = 0 if p < 0 else depth[p] + 1
    best = max(range(model.nbodies), key=lambda i: (depth[i], i)) if model.nbodies else -1
    links = [lp.name for lp in t.links if lp.body == best]
    return links[-1] if links else model.link_names[-1]
