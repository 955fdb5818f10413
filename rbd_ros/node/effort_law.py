"""ROS-free command law of ``~/effort_command`` and ``~/feedforward_torques``.

Arrays in, arrays out: a ``CommandLaw`` belongs to one Robot (one model) and owns
preallocated buffers; the control path calls ``set_desired`` for each
``~/desired_state`` message and ``command`` for each joint_states message, neither
of which allocates.  The dynamics come from rbd_ros.core (RNEA and the friction law
of ``rbd.friction``); this module only forms the commanded acceleration, selects the
output joints, adds the opt-in terms and clamps.

Laws (all torques in N·m for revolute DOFs, N for prismatic ones; in ``joints`` order):

* ``gravity``:          τ = g(q)
* ``feedforward``:      τ = τ_ff = RNEA(q_d, q̇_d, q̈_d)
* ``computed_torque``:  τ = RNEA(q, q̇, q̈_d + Kp (q_d − q) + Kd (q̇_d − q̇))
                          = H(q) (q̈_d + Kp e + Kd ė) + b(q, q̇)
* fallback (a mode that needs a desired state has none, or it is older than
  ``max_desired_age``):  τ = g(q) − K_hold q̇   (damped gravity hold, no friction term)
* ``command_friction``: + τ_f = damping·q̇ + friction·tanh(q̇ / eps) (``rbd.friction``),
  at the measured q̇ (gravity, computed_torque) or at q̇_d (feedforward, and the
  ``~/feedforward_torques`` output).
* ``clamp_effort``: each joint clamped to ±limit (``effort_limits`` or the URDF's
  ``<limit effort>``; inf = not clamped).  ``~/feedforward_torques`` is not clamped.

q, q̇ are the measured state merged from joint_states; the armature of the model is
part of RNEA (H(q) includes it).  q_d − q is a plain difference, also for continuous
joints and planar angles: no angle wrapping (send q_d on the same branch as q).

Desired state: one ``JointTrajectoryPoint`` by name.  It must name every DOF of the
output ``joints``; it may name other DOFs of the model (not mimic joints: those are
ignored, as in joint_states).  A DOF it does not name takes the measured position and
velocity and zero acceleration (it only affects the torques of the named joints
through the coupling).  A floating base stays at the origin, upright and at rest, as
on the rest of the topic path: the command is the ``joints`` rows of the torques of a
robot whose base is fixed there.  The point's ``effort`` and ``time_from_start`` are
ignored: the point is the desired state now (its age counts from its local receive
time).  A new model (robot_description, payload, a structural parameter) keeps the
desired state when it names every output joint of the new model (``adopt``).

Closed loops (the Robot's ``loops``, loops.py): RNEA(q, q̇, q̈) is replaced by the actuator
torques of ``rbd.constrained_inverse_dynamics`` at (q, q̇, q̈) whose passive accelerations
follow from J q̈ + γ = 0 (the commanded q̈ covers the actuated joints); for the
feed-forward, the desired state's passive positions and velocities are closed from its
actuated ones first (seeded by the measured ones).  Loops that cannot be closed, or a
state near a singular configuration, give no command (FAILED).

Contacts (the Robot's ``contacts``, contacts.py): the same hooks, with the joint torques
of ``rbd.constrained_inverse_dynamics`` on the current contacts (friction cones) at
(q, q̇, q̈) whose base acceleration follows from J q̈ + γ = 0 (the commanded q̈ covers the
joints); the base's pose and twist are the measured ones (the base state), also in the
feed-forward (computed when the desired state is first used, with the base state of
then).  A motion the cones cannot realise gets the torques of the least-violating forces.
"""
from __future__ import annotations

import array
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

import rbd_ros.core as rbd

MODE_GRAVITY = "gravity"
MODE_FEEDFORWARD = "feedforward"
MODE_COMPUTED_TORQUE = "computed_torque"
MODES = (MODE_GRAVITY, MODE_FEEDFORWARD, MODE_COMPUTED_TORQUE)
NEEDS_DESIRED = (MODE_FEEDFORWARD, MODE_COMPUTED_TORQUE)

# why a desired-state message is dropped (diagnostics/log)
DESIRED_OK = "ok"
DESIRED_BAD = "bad_desired_state"

# fallback reasons (None: no fallback)
FALLBACK_MISSING = "no desired state received"
FALLBACK_STALE = "desired state older than max_desired_age"

FAILED = -1  # command(): the result was not finite (nothing to publish)


def _f64(x) -> np.ndarray:
    if isinstance(x, array.array) and x.typecode == "d":
        return np.frombuffer(x, dtype=np.float64)
    return np.asarray(x, dtype=np.float64).reshape(-1)


# ------------------------------------------------------------------------- kernels

@njit(cache=True, nogil=True)
def _desired_k(pos, vel, acc, has_v, has_a, src, dst, dst_q, dst_v, qd, vd, ad, named):
    """Validate then store one desired point: -1 stored; k >= 0: positions[src[k]] not
    finite; -(k + 2): velocities; -(m + k + 2): accelerations (nothing written then).
    DOFs not in dst are marked unnamed (named = 0) with zero acceleration."""
    m = src.shape[0]
    for k in range(m):
        if not np.isfinite(pos[src[k]]):
            return k
    if has_v:
        for k in range(m):
            if not np.isfinite(vel[src[k]]):
                return -(k + 2)
    if has_a:
        for k in range(m):
            if not np.isfinite(acc[src[k]]):
                return -(m + k + 2)
    named[:] = 0
    ad[:] = 0.0
    vd[:] = 0.0
    for k in range(m):
        qd[dst_q[k]] = pos[src[k]]
        vd[dst_v[k]] = vel[src[k]] if has_v else 0.0
        ad[dst_v[k]] = acc[src[k]] if has_a else 0.0
        named[dst[k]] = 1
    return -1


@njit(cache=True, nogil=True)
def _ff_state_k(q, v, qd, vd, named, dof_q, dof_v, q_ff, v_ff):
    """q_ff, v_ff = the measured state with the named DOFs replaced by the desired ones."""
    # element loops, not ``q_ff[:] = q``: numba's array-to-slice assignment builds its
    # shape-mismatch message with string formatting, ~2 s more to compile on a first start
    for k in range(q.shape[0]):
        q_ff[k] = q[k]
    for k in range(v.shape[0]):
        v_ff[k] = v[k]
    for i in range(named.shape[0]):
        if named[i]:
            q_ff[dof_q[i]] = qd[dof_q[i]]
            v_ff[dof_v[i]] = vd[dof_v[i]]


@njit(cache=True, nogil=True)
def _accel_k(q, v, qd, vd, ad, named, dof_q, dof_v, kp, kd, a_cmd):
    """a_cmd = q̈_d + Kp (q_d − q) + Kd (q̇_d − q̇) on the named DOFs (kp, kd in velocity
    order, 0 outside the output joints); q̈_d (zero) elsewhere.  No angle wrapping."""
    for k in range(ad.shape[0]):    # not a_cmd[:] = ad (see _ff_state_k)
        a_cmd[k] = ad[k]
    for i in range(named.shape[0]):
        if named[i]:
            iq = dof_q[i]
            iv = dof_v[i]
            a_cmd[iv] = ad[iv] + kp[iv] * (qd[iq] - q[iq]) + kd[iv] * (vd[iv] - v[iv])


@njit(cache=True, nogil=True)
def _finish_k(src, sel, v, out_v, use_hold, hold, use_fric, damping, friction, eps,
              clamp, limit, out):
    """out[k] = src[sel[k]] (− hold[k] q̇) (+ τ_f(v) of DOF out_v[k]), then clamped to
    ±limit[k] when clamp.  Returns the number of clamped joints, or -1 if a value is not
    finite (out is then not to be used)."""
    n = out.shape[0]
    nclamped = 0
    for k in range(n):
        j = out_v[k]
        x = src[sel[k]]
        if use_hold:
            x -= hold[k] * v[j]
        if use_fric:
            w = v[j]
            x += damping[j] * w + friction[j] * np.tanh(w / eps)
        if not np.isfinite(x):
            return -1
        if clamp:
            lim = limit[k]
            if x > lim:
                x = lim
                nclamped += 1
            elif x < -lim:
                x = -lim
                nclamped += 1
        out[k] = x
    return nclamped


KERNELS = (_desired_k, _ff_state_k, _accel_k, _finish_k)     # the law's numba kernels (warm-up)


# ------------------------------------------------------------------------ settings

@dataclass(frozen=True)
class Settings:
    """The command parameters checked against one Robot (arrays: not to be written;
    writable numpy arrays, the type the kernels were compiled for in warm_up)."""
    mode: str
    friction: bool
    eps: float
    kp: np.ndarray        # (nv,) velocity order, 0 outside the output joints
    kd: np.ndarray        # (nv,)
    hold: np.ndarray      # (nout,) joints order
    max_age: float
    clamp: bool
    limit: np.ndarray     # (nout,) joints order, inf = no limit
    limit_source: str     # "URDF" or "parameter effort_limits"

    @property
    def needs_desired(self) -> bool:
        return self.mode in NEEDS_DESIRED


def per_joint(values, name, out_names, *, allow_inf=False, positive=False):
    """One value or one per output joint -> (nout,) array; ValueError naming the field."""
    n = len(out_names)
    vals = [float(x) for x in values]
    if len(vals) == 1:
        vals = vals * n
    elif len(vals) != n:
        raise ValueError(f"{name}: expected one value or {n} (one per joint in `joints` order "
                         f"{list(out_names)}), got {len(vals)}")
    for k, x in enumerate(vals):
        bad = math.isnan(x) or (math.isinf(x) and not (allow_inf and x > 0)) or x < 0 \
            or (positive and x == 0)
        if bad:
            what = "a number > 0 (inf: no limit)" if positive else "a finite number >= 0"
            raise ValueError(f"{name}[{k}] ({out_names[k]}): expected {what}, got {x}")
    return np.asarray(vals, dtype=np.float64)


def make_settings(p, rt) -> Settings:
    """Settings from a params.Params snapshot for Robot rt; ValueError with the reason
    (naming the parameter) when they do not fit."""
    mode = p.command_mode
    if mode not in MODES:
        raise ValueError(f"command_mode: expected one of {list(MODES)}, got {mode!r}")
    eps = float(p.friction_velocity_eps)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"friction_velocity_eps: expected a finite number > 0 (rad/s), got {eps}")
    age = float(p.max_desired_age)
    if not (math.isfinite(age) and age >= 0):
        raise ValueError(f"max_desired_age: expected a finite number >= 0 (s), got {age}")
    names, nv = rt.out_names, rt.model.nv
    gains = []
    for field in ("kp", "kd"):
        values = getattr(p, field)
        full = np.zeros(nv)
        if values:
            full[rt.out_v] = per_joint(values, field, names)
        elif mode == MODE_COMPUTED_TORQUE:
            raise ValueError(f"{field}: command_mode computed_torque needs gains: one value or "
                             f"one per joint in `joints` order {list(names)}")
        gains.append(full)
    if not p.hold_damping:
        raise ValueError("hold_damping: expected one value or one per joint (N·m·s/rad), got []")
    hold = per_joint(p.hold_damping, "hold_damping", names)
    if p.effort_limits:
        limit = per_joint(p.effort_limits, "effort_limits", names, allow_inf=True, positive=True)
        source = "parameter effort_limits"
    else:
        limit = np.array(rt.model.effort_limit[rt.out_v], dtype=np.float64)
        source = "URDF"
    return Settings(mode=mode, friction=bool(p.command_friction), eps=eps, kp=gains[0],
                    kd=gains[1], hold=hold, max_age=age, clamp=bool(p.clamp_effort), limit=limit,
                    limit_source=source)


# --------------------------------------------------------------------------- law

class CommandLaw:
    """The desired state of one Robot (``rt``: dof_names, dof_index, dof_q, dof_v, out_v,
    mimic, model, q, v) and the law writing into ``cmd`` and ``ff`` (numpy arrays of
    ``rt.nout``: the command term's buffers).  Used by the control thread only, except
    ``settings``, which the background thread replaces as one object."""

    def __init__(self, rt, cmd: np.ndarray, ff: np.ndarray):
        self.rt = rt
        model = rt.model
        nv, n = model.nv, rt.nout
        self.settings: Settings | None = None
        self.sel_out = np.arange(n, dtype=np.int64)  # identity: sources already in joints order
        self.out_v = rt.out_v
        self.damping = np.array(model.damping, dtype=np.float64)   # writable copies: one
        self.friction = np.array(model.friction, dtype=np.float64)  # numba specialisation
        # desired state, model order (set_desired)
        self.qd = np.array(model.neutral(), dtype=np.float64)
        self.vd = np.zeros(nv)
        self.ad = np.zeros(nv)
        self.named = np.zeros(rt.ndof, dtype=np.uint8)
        self.desired_time = -math.inf   # monotonic receive time of the latest good one
        self._ff_for = None             # the Settings ff was computed with for this desired state
        # scratch
        self.q_ff = np.array(model.neutral(), dtype=np.float64)
        self.v_ff = np.zeros(nv)
        self.a_cmd = np.zeros(nv)
        self.tau = np.zeros(nv)         # RNEA result of the command (computed_torque)
        self.tau_ff = np.zeros(nv)      # RNEA result of the feed-forward
        # outputs: numpy views of what the messages hold
        self.cmd = cmd
        self.ff = ff
        # closed loops (loops.Loops) or contacts (contacts.Contacts): their torques instead of RNEA's
        self.loops = rt.contacts if rt.contacts is not None else rt.loops
        self._cache: dict = {}
        self._required = frozenset(rt.dof_index[nm] for nm in rt.out_names)

    # ---------------------------------------------------------------- desired
    def _lookup(self, names):
        key = tuple(names)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._map(key)
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = entry
        return entry

    def _map(self, key):
        rt = self.rt
        src, dst, seen = [], [], {}
        for k, nm in enumerate(key):
            i = rt.dof_index.get(nm)
            if i is None:
                if nm in rt.mimic:
                    continue  # follows its master, as in joint_states
                return rt.unknown_joint_text(nm, f"joint_names[{k}]")
            if i in seen:
                return f"joint_names: {nm!r} is listed twice (joint_names[{seen[i]}] and [{k}])"
            seen[i] = k
            src.append(k)
            dst.append(i)
        missing = [rt.dof_names[i] for i in sorted(self._required - set(dst))]
        if missing:
            return (f"joint_names: missing joints {missing} (a desired state names every joint "
                    f"of `joints` {list(rt.out_names)})")
        dst = np.asarray(dst, dtype=np.int64)
        return (np.asarray(src, dtype=np.int64), dst, rt.dof_q[dst], rt.dof_v[dst])

    def set_desired(self, names, positions, velocities, accelerations, now: float):
        """Store one desired point (JointTrajectoryPoint fields, by name).  Returns
        (DESIRED_OK, "") or (DESIRED_BAD, why); a bad point changes nothing."""
        n = len(names)
        for field, x, may_be_empty in (("positions", positions, False),
                                       ("velocities", velocities, True),
                                       ("accelerations", accelerations, True)):
            if len(x) != n and not (may_be_empty and len(x) == 0):
                expected = f"{n} or 0" if may_be_empty else f"{n}"
                return DESIRED_BAD, (f"points[0].{field} has {len(x)} entries for {n} "
                                     f"joint_names (expected {expected})")
        entry = self._lookup(names)
        if isinstance(entry, str):
            return DESIRED_BAD, entry
        src, dst, dst_q, dst_v = entry
        p = _f64(positions)
        vv = _f64(velocities) if len(velocities) else p
        aa = _f64(accelerations) if len(accelerations) else p
        code = _desired_k(p, vv, aa, len(velocities) > 0, len(accelerations) > 0, src, dst,
                          dst_q, dst_v, self.qd, self.vd, self.ad, self.named)
        if code != -1:
            m = len(src)
            if code >= 0:
                field, x = "positions", p
            elif code >= -(m + 1):
                field, x = "velocities", vv
            else:
                field, x = "accelerations", aa
            bad = [names[int(k)] for k in src if not math.isfinite(x[k])]
            return DESIRED_BAD, f"points[0].{field}: not finite for {bad}"
        self.desired_time = now
        self._ff_for = None
        return DESIRED_OK, ""

    def adopt(self, old: "CommandLaw") -> None:
        """Carry the desired state over from the law of the previous model (by DOF name),
        if it names every output joint of this one: a payload or parameter change does not
        interrupt a computed-torque stream.  Called before this law is in use."""
        if old.desired_time == -math.inf:
            return
        ort, rt = old.rt, self.rt
        named = np.zeros_like(self.named)
        for i, n in enumerate(rt.dof_names):
            j = ort.dof_index.get(n)
            if j is not None and old.named[j]:
                named[i] = 1
        if any(not named[i] for i in self._required):
            return
        for i in np.flatnonzero(named):
            j = ort.dof_index[rt.dof_names[i]]
            self.qd[rt.dof_q[i]] = old.qd[ort.dof_q[j]]
            self.vd[rt.dof_v[i]] = old.vd[ort.dof_v[j]]
            self.ad[rt.dof_v[i]] = old.ad[ort.dof_v[j]]
        self.named[:] = named
        self.desired_time = old.desired_time
        self._ff_for = None

    def clear_desired(self) -> None:
        self.desired_time = -math.inf
        self._ff_for = None

    def fallback_reason(self, now: float, s: Settings):
        """None when the mode has what it needs, else why it falls back."""
        if not s.needs_desired:
            return None
        if self.desired_time == -math.inf:
            return FALLBACK_MISSING
        if s.max_age > 0 and now - self.desired_time > s.max_age:
            return FALLBACK_STALE
        return None

    # ------------------------------------------------------------- compute
    def feedforward(self, s: Settings) -> bool:
        """τ_ff = RNEA(q_d, q̇_d, q̈_d) (+ τ_f(q̇_d)) into ``ff`` (joints order, not clamped),
        for the latest desired state (DOFs it does not name: the measured state).
        False if there is no desired state or the result is not finite."""
        if self.desired_time == -math.inf:
            return False
        if self._ff_for is s:
            return True
        rt = self.rt
        _ff_state_k(rt.q, rt.v, self.qd, self.vd, self.named, rt.dof_q, rt.dof_v,
                    self.q_ff, self.v_ff)
        model = rt.model
        lp = self.loops
        tau = self.tau_ff
        try:
            if lp is None:
                rbd.rnea_into(model, self.q_ff, self.v_ff, self.ad, tau)
            else:       # the passive joints of the desired state from the loops (seeded by the measured ones)
                lp.close(self.q_ff, self.v_ff)
                lp.torques(self.q_ff, self.v_ff, lp.bias_state(self.q_ff, self.v_ff, self.ad))
                tau = lp.tau
        except ValueError:      # not finite; loops that cannot be closed or near a singular configuration
            return False
        r = _finish_k(tau, self.out_v, self.v_ff, self.out_v, False, s.hold,
                      s.friction, self.damping, self.friction, s.eps, False, s.limit, self.ff)
        if r < 0:
            return False
        self._ff_for = s
        return True

    def command(self, now: float, s: Settings, g: np.ndarray):
        """The command for the measured state (rt.q, rt.v) into ``cmd``; ``g``: g(q) in
        ``joints`` order (the gravity and hold laws use it).  Returns (number of clamped
        joints or FAILED, fallback reason or None)."""
        rt = self.rt
        reason = self.fallback_reason(now, s)
        if reason is not None:
            r = _finish_k(g, self.sel_out, rt.v, self.out_v, True, s.hold, False,
                          self.damping, self.friction, s.eps, s.clamp, s.limit, self.cmd)
            return r, reason
        mode = s.mode
        if mode == MODE_GRAVITY:
            r = _finish_k(g, self.sel_out, rt.v, self.out_v, False, s.hold, s.friction,
                          self.damping, self.friction, s.eps, s.clamp, s.limit, self.cmd)
        elif mode == MODE_FEEDFORWARD:
            if not self.feedforward(s):
                return FAILED, None
            r = _finish_k(self.ff, self.sel_out, rt.v, self.out_v, False, s.hold, False,
                          self.damping, self.friction, s.eps, s.clamp, s.limit, self.cmd)
        else:
            model = rt.model
            _accel_k(rt.q, rt.v, self.qd, self.vd, self.ad, self.named, rt.dof_q, rt.dof_v,
                     s.kp, s.kd, self.a_cmd)
            lp = self.loops
            tau = self.tau
            try:
                if lp is None:
                    rbd.rnea_into(model, rt.q, rt.v, self.a_cmd, tau)
                else:   # the passive accelerations from J q̈ + γ = 0
                    lp.torques(rt.q, rt.v, lp.bias_state(rt.q, rt.v, self.a_cmd))
                    tau = lp.tau
            except ValueError:  # not finite (or near a singular configuration)
                return FAILED, None
            r = _finish_k(tau, self.out_v, rt.v, self.out_v, False, s.hold, s.friction,
                          self.damping, self.friction, s.eps, s.clamp, s.limit, self.cmd)
        return r, None

    def warm_kernels(self) -> None:
        """Compile the law's own kernels, not the core's RNEA (``rbd.rnea_into``, called from
        Python here): what the first start's helper process compiles into numba's disk
        cache while the node compiles RNEA (``model_build.warm_control_path``).  Same argument
        types as the real calls; leaves no desired state."""
        rt = self.rt
        names = list(rt.out_names)
        zeros = [0.0] * len(names)
        self.set_desired(names, array.array("d", zeros), array.array("d", zeros),
                         array.array("d", zeros), 0.0)
        self.set_desired(names, zeros, [], [], 0.0)
        kp = np.zeros(rt.model.nv)
        _ff_state_k(rt.q, rt.v, self.qd, self.vd, self.named, rt.dof_q, rt.dof_v, self.q_ff, self.v_ff)
        _accel_k(rt.q, rt.v, self.qd, self.vd, self.ad, self.named, rt.dof_q, rt.dof_v, kp, kp, self.a_cmd)
        _finish_k(self.tau, self.out_v, rt.v, self.out_v, False, np.zeros(rt.nout), True, self.damping,
                  self.friction, 0.01, True, np.full(rt.nout, np.inf), self.cmd)
        self.clear_desired()
        self.cmd[:] = 0.0

    def warm_up(self) -> None:
        """Compile every kernel (numba) off the control path: the law's own
        (``warm_kernels``), then feed-forward and computed torque once through RNEA;
        leaves no desired state."""
        self.warm_kernels()
        rt = self.rt
        s = Settings(mode=MODE_COMPUTED_TORQUE, friction=True, eps=0.01, kp=np.zeros(rt.model.nv),
                     kd=np.zeros(rt.model.nv), hold=np.zeros(rt.nout), max_age=0.0, clamp=True,
                     limit=np.full(rt.nout, np.inf), limit_source="URDF")
        self.set_desired(list(rt.out_names), [0.0] * rt.nout, [], [], 0.0)
        self.feedforward(s)
        self.command(0.0, s, self.cmd)
        self.clear_desired()
        self.cmd[:] = 0.0
        self.ff[:] = 0.0
