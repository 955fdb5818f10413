"""ROS-free part of the node: a loaded model with its name maps and the merged joint
state (positions, velocities, measured efforts, their receive times); for a model with
closed loops, the state completed from the actuated joints (loops.py).

One ``Robot`` is built per robot description (off the control path) and swapped in
atomically with its output terms (term.py; they own the buffers and everything
computed from the state); the control path reads the pair once per message.  No
dynamics maths here: everything goes through ``rbd_ros.core``.
"""
from __future__ import annotations

import array
import math

import numpy as np
from numba import njit

import rbd_ros.core as rbd

# reasons a joint-state message is dropped (diagnostics keys)
DROP_SIZE = "size_mismatch"
DROP_NONFINITE = "non_finite"
DROP_DUPLICATE = "duplicate_names"
DROP_RANGE = "out_of_range"
DROP_NOT_CLOSED = "loops_not_closed"

# The largest |velocity| (rad/s or m/s) and |prismatic position| (m) a joint state may carry:
# the core computes finite results for every in-bounds model (core/errors.py BOUNDS) at
# arguments up to 1e6 and refuses (overflow) states far beyond; a joint state beyond it is
# dropped whole, like NaN.  Revolute and continuous positions enter only through sin/cos:
# any finite value.
STATE_LIMIT = 1e6


@njit(cache=True, nogil=True)
def merge_k(pos, vel, has_vel, eff, has_eff, src, dst, dst_q, dst_v, q_limit, v_limit, q, v, stamp, tau,
            effort_stamp, now, required):
    """Copy pos[src] (and vel[src], or zeros) into q / v at dst_q / dst_v and stamp the
    DOFs dst with ``now`` -- only if every copied value is acceptable: |pos[src[k]]| <=
    q_limit[dst[k]] and |vel[src[k]]| <= v_limit (False for NaN, inf and numbers the
    core would overflow on).  With ``has_eff``, eff[src] goes into tau at dst_v where
    finite (effort_stamp = now); a DOF merged without a finite effort gets effort_stamp
    -inf.  Returns (code, oldest stamp of the ``required`` DOFs, efforts fresh): code -1
    merged; k >= 0 position src[k] refused; -(k + 2) velocity src[k] refused (nothing
    written then); efforts fresh: every required DOF's latest position came with its
    effort."""
    m = src.shape[0]
    for k in range(m):
        if not abs(pos[src[k]]) <= q_limit[dst[k]]:
            return k, -np.inf, False
    if has_vel:
        for k in range(m):
            if not abs(vel[src[k]]) <= v_limit:
                return -(k + 2), -np.inf, False
    for k in range(m):
        q[dst_q[k]] = pos[src[k]]
        v[dst_v[k]] = vel[src[k]] if has_vel else 0.0
        stamp[dst[k]] = now
        if has_eff and np.isfinite(eff[src[k]]):
            tau[dst_v[k]] = eff[src[k]]
            effort_stamp[dst[k]] = now
        else:
            effort_stamp[dst[k]] = -np.inf
    oldest = np.inf
    fresh = True
    for i in range(stamp.shape[0]):
        if not required[i]:
            continue
        if stamp[i] < oldest:
            oldest = stamp[i]
        if effort_stamp[i] != stamp[i]:
            fresh = False
    return -1, oldest, fresh


def actuated_missing_text(constraint_names, transmissions=()) -> str:
    """The error for a model with loops and no actuated_joints (``transmissions``: the
    URDF's transmission joints, a hint)."""
    hint = f" (the URDF's transmissions name {list(transmissions)})" if transmissions else ""
    return (f"parameter actuated_joints: the model has closed loops (constraints {list(constraint_names)}): name "
            f"the joints driven by actuators{hint}; the others are passive, completed from them")


def warm_merge(nq: int, nv: int, ndof: int) -> None:
    """Compile (or load) merge_k for the argument types Robot.update gives it (nothing merged)."""
    none = np.zeros(0, dtype=np.int64)
    one = np.zeros(1)
    merge_k(one, one, True, one, True, none, none, none, none, np.zeros(ndof), 0.0, np.zeros(nq), np.zeros(nv),
            np.zeros(ndof), np.zeros(nv), np.zeros(ndof), 0.0, np.ones(ndof, dtype=np.uint8))


def _f64(x) -> np.ndarray:
    """A JointState array field as float64 numpy (a view of rclpy's array.array)."""
    if isinstance(x, array.array) and x.typecode == "d":
        return np.frombuffer(x, dtype=np.float64)
    return np.asarray(x, dtype=np.float64).reshape(-1)


class Robot:
    """A model plus everything the node needs to use it by joint name.

    DOF names: a 1-DOF joint is its joint name; a planar joint contributes
    ``<joint>/x``, ``<joint>/y``, ``<joint>/theta``; the free-flyer
    (``floating_base``, or a URDF ``floating`` joint that is the model's first
    joint) is not a named DOF (services carry it in base_* fields, the topic path
    keeps the base at the neutral pose, at rest).  Any other floating joint is
    refused (ModelError): the node has one base.

    Closed loops (``model.constraints``): ``loops`` (loops.Loops, required then; its
    ``actuated`` joints) completes the passive joints per message (a passive joint
    received only seeds the solve), ``joints`` defaults to the actuated ones and the joint
    state needs only them (``required``); the loops are closed here from ``initial`` (one
    position per DOF, ``dof_names`` order; empty: zero) -- a ModelError names the
    constraint when that is not possible.

    Contacts (a floating-base robot on its feet): ``contacts`` (contacts.Contacts) holds
    the contact set and the base state, which replaces the neutral base of the topic
    path (the compensation term copies it in per message).
    """

    def __init__(self, model, joints=(), source: str = "", loops=None, initial=(), contacts=None):
        self.model = model
        self.source = source
        self.floating = False
        self.base_joint = None  # name of the free-flyer joint when floating
        self.options = {}       # build options (build_robot), resent to the service worker
        self.fd_error = None    # why forward dynamics is unavailable (warm_up), or None
        dof_names, dof_q, dof_v, linear = [], [], [], []
        for jn, jt, nq, nv, iq, iv in zip(model.joint_names, model.joint_types, model.joint_nq, model.joint_nv,
                                          model.idx_q, model.idx_v):
            if nq == 7 and nv == 6:  # free-flyer: floating_base's root_joint or a URDF floating
                if iq != 0 or iv != 0:
                    raise rbd.ModelError(
                        f"joint {jn!r}: a floating joint that is not the model's first joint is "
                        "not supported by the node: its topics and services carry one floating "
                        "base, the first joint, which moves the whole robot (floating_base: true, "
                        "or a URDF floating joint from the root link that is the root's only "
                        "moving child -- not both)")
                self.floating = True
                self.base_joint = jn
                continue
            if nq == 1 and nv == 1:
                dof_names.append(jn)
                dof_q.append(iq)
                dof_v.append(iv)
                linear.append(jt == "prismatic")
            elif nq == 3 and nv == 3:
                for k, suffix in enumerate(("x", "y", "theta")):
                    dof_names.append(f"{jn}/{suffix}")
                    dof_q.append(iq + k)
                    dof_v.append(iv + k)
                    linear.append(k < 2)
            else:
                raise rbd.ModelError(f"joint {jn!r}: nq={nq}, nv={nv} is not supported by the node")
        if not dof_names:
            raise rbd.ModelError("the model has no joint DOF (only fixed joints)")
        self.dof_names = tuple(dof_names)
        self.dof_index = {n: i for i, n in enumerate(dof_names)}
        self.dof_q = np.asarray(dof_q, dtype=np.int64)
        self.dof_v = np.asarray(dof_v, dtype=np.int64)
        self.ndof = len(dof_names)
        # the largest |position| a joint state may carry per DOF (STATE_LIMIT)
        self.q_limit = np.where(linear, STATE_LIMIT, np.inf)
        self.mimic = dict(getattr(model, "mimic_joints", {}) or {})
        self.link_index = {n: i for i, n in enumerate(model.link_names)}

        self.loops = None
        if model.constraints and loops is None:
            raise rbd.ModelError(actuated_missing_text([c.name for c in model.constraints]))
        joints = tuple(joints or ()) or (loops.actuated if model.constraints else ())
        if joints:
            seen = set()
            for n in joints:
                if n in seen:
                    raise rbd.ModelError(f"parameter joints: {n!r} is listed twice")
                seen.add(n)
                if n not in self.dof_index:
                    raise rbd.ModelError(self.unknown_joint_text(n, "parameter joints"))
            self.out_names = joints
        else:
            self.out_names = self.dof_names
        self.nout = len(self.out_names)
        self.out_v = np.asarray([self.dof_v[self.dof_index[n]] for n in self.out_names], dtype=np.int64)
        nv = model.nv

        # merged joint state (model order); the base stays neutral and at rest
        self.q = np.array(model.neutral(), dtype=np.float64)
        self.v = np.zeros(nv)
        self.stamp = np.full(self.ndof, -math.inf)  # monotonic receive time per DOF
        self.oldest = -math.inf                      # min(stamp) of the required DOFs after the last update()
        # the DOFs a joint state must carry (all; with loops the actuated ones)
        self.required = np.ones(self.ndof, dtype=np.uint8)
        self._name_cache: dict = {}
        self.warned_no_velocity: set = set()
        self.warned_unknown: set = set()

        # measured joint efforts (JointState.effort, model v order) and their receive times
        # (-inf: the DOF's latest position came without a finite effort)
        self.tau_meas = np.zeros(nv)
        self.effort_stamp = np.full(self.ndof, -math.inf)
        self.efforts_ok = False     # every DOF's latest position came with its effort (update())
        self.efforts_bad = False    # the last message carried efforts, some NaN/inf (update())
        self.merged = False         # the last update() merged some joint of the model
        if model.constraints:
            self._init_loops(loops, initial)
        self.contacts = None
        if contacts is not None:
            if not self.floating:
                raise rbd.ModelError("parameter contacts: contacts with the ground need a floating base "
                                     "(floating_base: true, or a URDF floating joint from the root link)")
            if model.constraints:
                raise rbd.ModelError("parameter contacts: a model with closed loops and contacts is not supported by "
                                     f"the node (loop constraints {[c.name for c in model.constraints]})")
            contacts.bind_outputs(self.out_v)
            self.contacts = contacts

    # ---------------------------------------------------------------- loops
    def _init_loops(self, loops, initial) -> None:
        """The loops, the required DOFs, and q closed from ``initial`` (ModelError naming
        the constraint when it cannot be)."""
        act = set(loops.actuated)
        self.required[:] = [1 if n in act else 0 for n in self.dof_names]
        loops.out_v = self.out_v
        self.loops = loops
        initial = list(initial or ())
        where = "the zero configuration"
        if initial:
            if len(initial) != self.ndof:
                raise rbd.ModelError(f"parameter initial_positions: {len(initial)} values, expected {self.ndof} (one "
                                     f"per joint DOF in model order: {list(self.dof_names)}) or none")
            bad = [k for k, x in enumerate(initial) if not (math.isfinite(float(x)) and abs(float(x)) <= STATE_LIMIT)]
            if bad:
                raise rbd.ModelError(f"parameter initial_positions[{bad[0]}] ({self.dof_names[bad[0]]}): expected a "
                                     f"finite number, got {initial[bad[0]]}")
            self.q[self.dof_q] = np.asarray(initial, dtype=np.float64)
            where = "initial_positions"
        try:
            self.loops.complete(self.q, self.v)
        except ValueError as e:
            raise rbd.ModelError(f"{e} -- from {where} (the loops must close there: set initial_positions "
                                 "near an assembly of the mechanism)") from None
        self.loops.q_initial = self.q.copy()

    # ---------------------------------------------------------------- names
    def unknown_joint_text(self, name: str, field: str) -> str:
        if name in self.mimic:
            master = self.mimic[name][0]
            return (f"{field}: {name!r} is a mimic joint of {master!r}, not a DOF of the model "
                    f"(leave it out, or set mimic:=false)")
        shown = ", ".join(self.dof_names[:40]) + (" ..." if self.ndof > 40 else "")
        return f"{field}: unknown joint {name!r}; the model's joints are [{shown}]"

    def map_names(self, names, field: str = "name"):
        """Request joint names -> (dof index per name, None) or (None, error text).

        Every DOF must be named exactly once (any order)."""
        idx = []
        seen = {}
        for k, n in enumerate(names):
            i = self.dof_index.get(n)
            if i is None:
                return None, self.unknown_joint_text(n, f"{field}[{k}]")
            if i in seen:
                return None, f"{field}: joint {n!r} is listed twice ({field}[{seen[i]}] and {field}[{k}])"
            seen[i] = k
            idx.append(i)
        if len(idx) != self.ndof:
            missing = [self.dof_names[i] for i in range(self.ndof) if i not in seen]
            return None, (f"{field}: missing joints {missing} (every one of the model's {self.ndof} "
                          f"joints needs a value)")
        return np.asarray(idx, dtype=np.int64), None

    # ------------------------------------------------------ joint states
    def _lookup(self, names):
        key = tuple(names)
        entry = self._name_cache.get(key)
        if entry is None:
            src, dst, unknown = [], [], []
            dup = len(set(key)) != len(key)
            for k, n in enumerate(key):
                i = self.dof_index.get(n)
                if i is None:
                    if n not in self.mimic:
                        unknown.append(n)
                    continue
                src.append(k)
                dst.append(i)
            dst = np.asarray(dst, dtype=np.int64)
            entry = (np.asarray(src, dtype=np.int64), dst, self.dof_q[dst], self.dof_v[dst],
                     tuple(unknown), dup)
            if len(self._name_cache) > 256:
                self._name_cache.clear()
            self._name_cache[key] = entry
        return entry

    def update(self, names, position, velocity, now: float, effort=()):
        """Merge one JointState into the state.

        Returns (status, detail): status "ok", "no_velocity" (merged, velocities
        taken as zero), or a DROP_* reason with a detail text (state untouched): NaN/inf
        (DROP_NONFINITE), a velocity or a prismatic position beyond STATE_LIMIT
        (DROP_RANGE).  ``effort`` (one per name, or empty) is merged into ``tau_meas``
        where finite; ``efforts_ok`` then says whether every DOF's latest position came
        with its effort (``efforts_fresh``).  Efforts never drop a message.
        """
        n = len(names)
        if len(position) != n:
            return DROP_SIZE, f"position has {len(position)} entries for {n} names"
        nvel = len(velocity)
        if nvel not in (0, n):
            return DROP_SIZE, f"velocity has {nvel} entries for {n} names (expected {n} or 0)"
        neff = len(effort) == n and n > 0
        # NaN/inf among the efforts (sum: no allocation; a NaN anywhere makes it NaN)
        self.efforts_bad = neff and not math.isfinite(sum(effort))
        src, dst, dst_q, dst_v, unknown, dup = self._lookup(names)
        if dup:
            return DROP_DUPLICATE, "a joint name appears twice in one message"
        if len(src) == 0:                 # no joint of the model: nothing merged, no sample of its state
            self.oldest = self._oldest()
            self.merged = False
            return "ok", unknown
        self.merged = True
        p = _f64(position)
        vv = _f64(velocity) if nvel else p
        e = _f64(effort) if neff else p
        code, self.oldest, self.efforts_ok = merge_k(p, vv, nvel > 0, e, neff, src, dst, dst_q, dst_v, self.q_limit,
                                                     STATE_LIMIT, self.q, self.v, self.stamp, self.tau_meas,
                                                     self.effort_stamp, now, self.required)
        if code != -1:
            if code >= 0:
                field, x, lim = "position", p, self.q_limit[dst]
            else:
                field, x, lim = "velocity", vv, np.full(len(dst), STATE_LIMIT)
            vals = x[src]
            if not np.all(np.isfinite(vals)):
                bad = [names[int(k)] for k in src if not math.isfinite(x[k])]
                return DROP_NONFINITE, f"non-finite {field} for {bad}"
            bad = [f"{names[int(k)]}: {x[k]:.3g}" for k, m in zip(src, lim) if not abs(x[k]) <= m]
            return DROP_RANGE, (f"{field} beyond {STATE_LIMIT:g} in magnitude ({', '.join(bad)}): not a state "
                                "of a real robot (the dynamics would overflow)")
        if self.loops is not None:
            try:
                self.loops.complete(self.q, self.v)
            except ValueError as err:      # rbd.LoopsNotClosed: the last closed state is kept
                return DROP_NOT_CLOSED, str(err)
        return ("ok" if nvel else "no_velocity"), unknown

    def efforts_fresh(self) -> bool:
        """Every DOF's latest position came with a finite effort (decided per message by
        update(), never by a timer)."""
        return self.efforts_ok

    def ready_after_update(self, now: float, max_age: float) -> bool:
        """ready() from the oldest stamp the last successful update() saw (control path)."""
        return self._fresh(self.oldest, now, max_age)

    def ready(self, now: float, max_age: float) -> bool:
        """Every required DOF has a position, none older than max_age (<= 0: any age)."""
        return self._fresh(self._oldest(), now, max_age)

    def _oldest(self) -> float:
        s = self.stamp[self.required.astype(bool)]
        return float(s.min()) if s.size else math.inf

    @staticmethod
    def _fresh(oldest: float, now: float, max_age: float) -> bool:
        if max_age > 0:
            return now - oldest <= max_age
        return oldest > -math.inf

    def missing_and_stale(self, now: float, max_age: float):
        """(DOFs never received, DOFs older than max_age)."""
        req = self.required
        missing = [self.dof_names[i] for i in range(self.ndof) if req[i] and self.stamp[i] == -math.inf]
        stale = [self.dof_names[i] for i in range(self.ndof)
                 if req[i] and self.stamp[i] > -math.inf and max_age > 0 and now - self.stamp[i] > max_age]
        return missing, stale

    def adopt_state(self, old: "Robot") -> None:
        """Carry the latest joint values over from the previous model (same names).  With
        loops, only the required (measured) ones: the passive joints start again from the
        initial assembly (the branch resets on a model swap)."""
        for i, n in enumerate(self.dof_names):
            j = old.dof_index.get(n)
            if j is not None and self.required[i]:
                self.q[self.dof_q[i]] = old.q[old.dof_q[j]]
                self.v[self.dof_v[i]] = old.v[old.dof_v[j]]
                self.stamp[i] = old.stamp[j]
        self.oldest = self._oldest()
        if self.contacts is not None and old.contacts is not None:
            self.contacts.adopt(old.contacts)
