"""A known external wrench on a link for a number of physics steps (no ROS here).

:class:`WrenchSchedule` turns a request "this wrench on this URDF link for this
long" into MuJoCo's ``xfrc_applied`` step by step.  The wrench is given at the
link's origin in world axes (force N, torque N·m about the link origin: what
Pinocchio calls LOCAL_WORLD_ALIGNED; a "push" at a point of the robot whose
direction does not turn with it); MuJoCo applies ``xfrc_applied`` at the body's
centre of mass, so each step converts it with
:func:`rbd_ros.sim.mujoco_model.wrench_at_com` at the current configuration.
Its joint-space effect is Jᵀ[f; τ] with J the link origin's Jacobian.

:meth:`WrenchSchedule.request` may be called from another thread (one tuple
assignment); :meth:`WrenchSchedule.before_step` runs in the physics loop.
"""
from __future__ import annotations

import math

import numpy as np

from .mujoco_model import wrench_at_com

START, END = "start", "end"


class WrenchSchedule:
    """Which wrench each physics step gets.  ``mjm``/``model``: the simulated MuJoCo
    model and its rbd_ros twin (``load_urdf``); ``rate``: physics steps per second."""

    def __init__(self, mjm, model, rate):
        self.mjm, self.model, self.rate = mjm, model, float(rate)
        self._request = None         # (link, body, force (3,), torque (3,), steps), replaced whole
        self._seen = None
        self.active = None           # the request being applied
        self._left = 0
        self._clear = -1             # body whose xfrc_applied row must be zeroed at the next step
        self._row = np.zeros(6)
        self.applied = 0             # pushes started

    def request(self, link, force, torque, duration):
        """Apply ``force``, ``torque`` (3 numbers each, world axes, at the origin of URDF link
        ``link``) for ``duration`` s (rounded to whole steps, at least one), replacing any
        wrench being applied; a zero wrench ends the current one.  Raises ValueError naming
        the field: unknown link, a link fixed to the world (nothing would move),
        non-finite numbers, duration not > 0."""
        model = self.model
        if not link:
            raise ValueError("frame_id: empty; expected the URDF link to push "
                             f"(one of {list(self._movable())})")
        if link not in model.link_names:
            raise ValueError(f"frame_id: {link!r} is not a link of the robot (links: {list(model.link_names)})")
        if model.links[model.link_names.index(link)].body < 0:
            raise ValueError(f"frame_id: link {link!r} is fixed to the world: a wrench on it moves nothing "
                             f"(movable links: {list(self._movable())})")
        f = np.array(force, dtype=float).reshape(3)
        m = np.array(torque, dtype=float).reshape(3)
        if not (np.all(np.isfinite(f)) and np.all(np.isfinite(m))):
            raise ValueError(f"wrench: expected finite numbers, got force {f.tolist()} torque {m.tolist()}")
        duration = float(duration)
        if not (math.isfinite(duration) and duration > 0):
            raise ValueError(f"wrench_duration: expected a finite number of s > 0, got {duration}")
        try:
            body = self.mjm.body(link).id
        except KeyError:
            raise ValueError(f"frame_id: link {link!r} has no MuJoCo body") from None
        steps = max(1, int(round(duration * self.rate)))
        self._request = (link, body, f, m, steps)

    def _movable(self):
        return (n for n, info in zip(self.model.link_names, self.model.links) if info.body >= 0)

    def before_step(self, data):
        """Write this step's ``xfrc_applied`` into ``data`` (positions current).  Returns
        START if a wrench starts with this step, END if the first step without it (after
        its duration or a zero request), else None; the wrench then in force is
        :attr:`active` ((link, body, force, torque, steps) or None)."""
        event = None
        req = self._request
        if req is not self._seen:          # a new request (from the message thread)
            self._seen = req
            if self.active is not None:
                self._clear = self.active[1]
            zero = not (np.any(req[2]) or np.any(req[3]))
            if zero:
                event = END if self.active is not None else None
                self.active = None
            else:
                self.active = req
                self._left = req[4]
                self.applied += 1
                event = START
        if self._clear >= 0:
            data.xfrc_applied[self._clear] = 0.0
            self._clear = -1
        act = self.active
        if act is None:
            return event
        if self._left == 0:                # its duration is over: this step goes without it
            data.xfrc_applied[act[1]] = 0.0
            self.active = None
            return END
        data.xfrc_applied[act[1]] = wrench_at_com(data, act[1], act[2], act[3], out=self._row)
        self._left -= 1
        return event

    def reset(self, data):
        """Drop any wrench (the simulation restarted); returns END if one was in force."""
        self._seen = self._request
        had = self.active is not None
        self.active = None
        data.xfrc_applied[:] = 0.0
        return END if had else None
