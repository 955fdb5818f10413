"""The momentum observer's terms (ROS-free): ``~/external_torques`` (τ̂_ext, the
``ExternalTorques`` term owning the observer), ``~/external_wrench`` (the wrench at
``contact_frame`` that explains τ̂_ext) and ``~/collision`` (the debounced flag), with
the observer's parameters checked against one Robot (``ObserverSettings``) and the
default contact frame.

The wrench and the flag follow the message's estimate: they are computed only for a
message that has one.  Every restart of the observer (a gap, NaN, a model swap, a
message without the torques it needs, ``~/reset_observer``) restarts the collision
detector too: the flag and its debounce start again with the residual, from zero.
"""
from __future__ import annotations

import math

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.node import effort_law, names, warmup
from rbd_ros.node.term import COLLISION, STATE, WRENCH, Output, Term

SOURCES = ("measured", "commanded")


class ObserverSettings:
    """The observer parameters checked against one Robot (ValueError naming the parameter)."""

    def __init__(self, params, rt):
        if rt.loops is not None:
            raise ValueError("observer: the momentum observer needs a kinematic tree; this model has closed loops "
                             f"(constraints {[c.name for c in rt.model.constraints]}): set observer false")
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


class ExternalTorques(Term):
    """τ̂_ext of the momentum observer (part ``tau_ext``, joints order; ``tau_ext`` also in
    model order for the wrench).  Its settings and observer are swapped in as one pair
    (``active``; None while the parameter observer is off)."""
    key = "tau_ext"
    outputs = (Output(names.TOPIC_EXTERNAL_TORQUES, STATE, "tau_ext", switch="observer"),)

    def __init__(self, rt, report):
        super().__init__(rt, report)
        nv = rt.model.nv
        self.active = None              # (ObserverSettings, rbd.MomentumObserver) or None
        self.tau_ext = np.zeros(nv)     # the estimate, model order
        self.tau_nan = np.full(nv, np.nan)      # fed to the observer for a non-finite sample
        self.estimated = False          # this message has a valid estimate (wrench and collision follow it)
        self.epoch = 0                  # restarts so far (the collision detector restarts with each)
        self.waiting = ""               # why no estimate is published now, or ""
        self.cmd = None                 # the command term (commanded torque source)

    @classmethod
    def needs(cls, params):
        return ("cmd",) if params.observer_torque_source == "commanded" else ()

    def link(self, terms) -> None:
        self.cmd = terms["cmd"]

    def adopt(self, old) -> None:
        """The error and the waiting text (the observer itself starts afresh: a new model)."""
        self.error, self.waiting = old.error, old.waiting

    @classmethod
    def check(cls, params, rt) -> None:
        if params.observer:
            ObserverSettings(params, rt)

    def configure(self, params, keep_on_error=False) -> None:
        if not params.observer:
            self.active = None
            self.cmd.keep_sent = False
            self.error = None
            return
        try:
            o = ObserverSettings(params, self.rt)
        except ValueError as e:
            if not keep_on_error:
                self.active = None
                self.refuse(f"external_torques, external_wrench and collision are off: {e}")
            return
        self.error = None
        if self.active is not None and o.same(self.active[0]):
            return
        warmup.warm_observer(self.rt.model, o.frame, self.report.log)  # compiled or loaded before a message
        self.cmd.keep_sent = o.source == "commanded"
        self.active = (o, rbd.MomentumObserver(self.rt.model, o.gain, friction=o.friction, max_gap=o.max_gap,
                                               tau_held=o.held))

    @property
    def settings(self):
        a = self.active
        return a[0] if a is not None else None

    # ------------------------------------------------------------------ messages
    def compute(self, wanted, stamp: float, now: float) -> bool:
        """τ̂_ext into its buffer; True while the estimate is valid.  Without the torques of
        this sample (``measured``: this message, or the latest one of every DOF, carried
        no finite effort -- decided per message; ``commanded``: no command sent for the
        previous state) the observer is reset and nothing is published: it starts again
        from the next sample that has them.  NaN/inf among the efforts restarts it
        (``not_finite``)."""
        self.estimated = False
        a = self.active
        rt = self.rt
        if a is None or not rt.merged:      # (a message of joints the model does not have: no sample)
            return False
        o, obs = a
        if o.source == "measured":
            if rt.efforts_bad:
                self.not_finite(stamp)
                return False
            if not rt.efforts_fresh():
                self.reset()
                self._wait("joint_states carry no (fresh) efforts for every joint: external_torques needs "
                           "JointState.effort with observer_torque_source measured (or set it to commanded)")
                return False
            tau = rt.tau_meas
        else:
            cmd = self.cmd
            if not cmd.sent_valid:
                self.reset()
                self._wait("no effort_command was sent for the previous joint state (observer_torque_source "
                           "commanded)")
                return False
            tau = cmd.sent
        est = obs.update(stamp, rt.q, rt.v, tau)
        if not obs.valid:
            self.epoch += 1
            self._wait(f"the observer restarted ({obs.status})" if obs.status != "started" else "")
            return False
        self.waiting = ""
        np.copyto(self.tau_ext, est)
        np.take(est, rt.out_v, out=self.array("tau_ext"))
        self.estimated = True
        return True

    def reset(self) -> bool:
        """Restart the observer (and the collision flag) at the next sample; False if off."""
        a = self.active
        if a is None:
            return False
        a[1].reset()
        self.epoch += 1
        return True

    def not_finite(self, stamp: float, what: str = "NaN/inf") -> None:
        """A sample with NaN/inf or out of range (dropped, or its efforts): the observer
        restarts, counted as ``not_finite`` (it is fed the sample's non-finite torque), and
        the collision flag goes down."""
        a = self.active
        if a is not None:
            obs = a[1]
            obs.update(stamp, self.rt.q, self.rt.v, self.tau_nan)
            self.epoch += 1
            self._wait(f"the observer restarted ({obs.status}: {what} in joint_states)")

    def _wait(self, why: str) -> None:
        """Why no estimate now ("": there is one); logged when it changes, a kind of
        reason at most once per the reporter's throttle (a loaded machine restarts it on
        gaps often)."""
        if why and why != self.waiting and self.report.due("observer: " + why.split("(", 1)[0]):
            self.report.log.warning(why)
        self.waiting = why

    def diagnostics(self, now: float):
        a = self.active
        kv = [("observer", "on" if a is not None else "off")]
        if a is not None:
            o, obs = a
            kv += [("observer_gain", f"{o.gain:g}"), ("observer_torque_source", o.source),
                   ("observer_status", obs.status), ("contact_frame", o.frame),
                   ("observer_restarts", ", ".join(f"{k}: {v}" for k, v in obs.restarts.items() if v))]
        if self.waiting:
            kv.append(("observer_waiting", self.waiting))
        if self.error:
            kv.append(("observer_error", self.error))
        return kv


class ExternalWrench(Term):
    """The wrench at ``contact_frame`` (its own axes) that explains τ̂_ext, by least squares
    (part ``wrench``: [fx fy fz tx ty tz])."""
    key = "wrench"
    outputs = (Output(names.TOPIC_EXTERNAL_WRENCH, WRENCH, "wrench", switch="observer"),)

    def __init__(self, rt, report):
        super().__init__(rt, report)
        nv = rt.model.nv
        self.jacobian = np.zeros((6, nv))
        self.residual = np.zeros(nv)
        self.observer = None

    def size(self, part: str) -> int:
        return 6

    @classmethod
    def needs(cls, params):
        return ("tau_ext",)

    def link(self, terms) -> None:
        self.observer = terms["tau_ext"]

    @property
    def frame(self) -> str:
        """The frame of the wrench (frame_id): contact_frame (may change at run time)."""
        o = self.observer.settings
        return o.frame if o is not None else ""

    def compute(self, wanted, stamp: float, now: float) -> bool:
        """This message's estimate only."""
        obs = self.observer
        o = obs.settings
        if not obs.estimated or o is None:
            return False
        rt = self.rt
        F = self.array("wrench")
        rbd.external_wrench_into(rt.model, rt.q, obs.tau_ext, o.frame, "local", F, self.residual, self.jacobian)
        return bool(np.isfinite(F).all())


class Collision(Term):
    """The collision flag of τ̂_ext (joints order) against ``collision_thresholds``:
    part ``collision`` holds |τ̂_ext| / threshold per joint; ``state`` the detector's last
    state (rbd.CollisionState: flag, worst and most distal joint, onset).  Owns the
    detector, made from the observer's settings."""
    key = "collision"
    outputs = (Output(names.TOPIC_COLLISION, COLLISION, "collision", switch="observer"),)

    def __init__(self, rt, report):
        super().__init__(rt, report)
        self.observer = None
        self.detector = None            # (ObserverSettings it was made for, rbd.CollisionDetector)
        self.state = None
        self.collisions = 0             # rising edges of the flag
        self._epoch = 0

    @classmethod
    def needs(cls, params):
        return ("tau_ext",)

    def link(self, terms) -> None:
        self.observer = terms["tau_ext"]

    def adopt(self, old) -> None:
        self.collisions = old.collisions

    def configure(self, params, keep_on_error=False) -> None:
        o = self.observer.settings
        if o is None:
            self.detector = None
        elif self.detector is None or self.detector[0] is not o:
            self.detector = (o, rbd.CollisionDetector(o.thresholds, o.debounce, o.release))

    def compute(self, wanted, stamp: float, now: float) -> bool:
        """This message's estimate only."""
        obs = self.observer
        d = self.detector
        if not obs.estimated or d is None:
            return False
        det = d[1]
        if obs.epoch != self._epoch:        # the observer restarted since the last estimate
            det.reset()
            self._epoch = obs.epoch
        was = det.detected
        st = det.update(stamp, obs.array("tau_ext"))
        self.array("collision")[:] = st.ratios
        self.state = st
        if st.detected and not was:
            self.collisions += 1
            names_ = self.rt.out_names
            self.report.log.warning(
                f"collision detected: {names_[st.worst]} at {st.ratios[st.worst]:.2f} x its threshold"
                + (f", most distal joint above: {names_[st.distal]}" if st.distal >= 0 else ""))
        return True

    def diagnostics(self, now: float):
        if self.observer.settings is None:
            return []
        st = self.state
        return [("collision", "true" if st is not None and st.detected else "false"),
                ("collisions", str(self.collisions))]
