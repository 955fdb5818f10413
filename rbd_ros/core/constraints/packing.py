"""A model's constraints in the kernels' form (``ConstraintSet``), built once and cached.

``constraint_set(model, constraints)`` is what every public function calls: the
model's own loop closures (``model.constraints``, from the URDF) followed by the
``constraints`` passed in, checked against the model (an unknown link raises
ValueError naming the constraint), packed (layout.py) and cached per model by value,
so a call with the same constraints packs nothing.  Each thread gets its own
workspace.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from ..model.checks import real_array
from ..model.constraint import Constraint, as_tuple, check_links
from .layout import (
    CF_N,
    CF_PA,
    CF_PB,
    CF_RA,
    CF_RB,
    CI_DIM,
    CI_HEAD,
    CI_KIND,
    CI_M,
    CI_MASK,
    CI_N,
    CI_ROW,
    MASKED,
    O_END,
    POINT,
    offsets,
)

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()       # model -> {constraints tuple: ConstraintSet}
_CACHE_LOCK = threading.Lock()
_MAX_SETS = 64                              # per model; the oldest goes first


class ConstraintSet:
    """The constraints of one call, packed for the kernels (read-only ``ci``, ``cf``).

    ``constraints``: the tuple (model's first); ``m``: rows; ``rows``: per constraint
    its slice of rows; ``names``: per row "constraint_name/direction"."""

    def __init__(self, model, constraints):
        self.constraints = constraints
        nc = len(constraints)
        rows, r = [], 0
        ci = np.zeros(CI_HEAD + CI_N * nc, dtype=np.int64)
        cf = np.zeros(CF_N * nc)
        deepest = -1
        for k, c in enumerate(constraints):
            o = CI_HEAD + CI_N * k
            for side, (link, origin) in enumerate(((c.link_a, c.origin_a), (c.link_b, c.origin_b))):
                if link is None:
                    body, R, p = -1, np.eye(3), np.zeros(3)
                else:
                    lp = model.links[model.link_index(link)]
                    body, R, p = lp.body, np.asarray(lp.R), np.asarray(lp.p)
                Rf = R @ origin[:3, :3]
                pf = p + R @ origin[:3, 3]
                ci[o + side] = body
                deepest = max(deepest, body)
                base = CF_N * k + (CF_RA if side == 0 else CF_RB)
                cf[base:base + 9] = Rf.reshape(-1)
                pbase = CF_N * k + (CF_PA if side == 0 else CF_PB)
                cf[pbase:pbase + 3] = pf
            ci[o + 2] = POINT if c.is_point else MASKED
            ci[o + 3] = r
            ci[o + 4] = c.dim
            ci[o + 5:o + 11] = c.mask
            rows.append(slice(r, r + c.dim))
            r += c.dim
        ci[:4] = nc, r, model.nv, deepest + 1
        ci.setflags(write=False)
        cf.setflags(write=False)
        self.ci, self.cf = ci, cf
        # the kernels take writable twins of the same memory (numba types read-only
        # arrays as a different type: one compiled version per kernel, not two)
        self.ci_k = np.array(ci)
        self.cf_k = np.array(cf)
        self.m = r
        self.rows = tuple(rows)
        self.names = tuple(f"{c.name}/{d}" for c in constraints for d in c.directions)
        self.size = int(offsets(nc, r, model.nv)[O_END])
        self._tls = threading.local()
        self._actuation = {}
        self._friction = {}         # friction argument -> contacts.FrictionSpec
        # the same constraints unmasked: each masked one's six weld rows (a point keeps its
        # three), for the exact de/dq of the masked rows (completion.state_k)
        ci6 = np.array(ci)
        r6 = 0
        for k in range(nc):
            o = CI_HEAD + CI_N * k
            ci6[o + CI_ROW] = r6
            if ci6[o + CI_KIND] == MASKED:
                ci6[o + CI_DIM] = 6
                ci6[o + CI_MASK:o + CI_MASK + 6] = 1
            r6 += ci6[o + CI_DIM]
        ci6[CI_M] = r6
        self.ci6_k = ci6
        self.size6 = int(offsets(nc, r6, model.nv)[O_END])

    def workspace(self):
        """This thread's workspace (created on first use)."""
        try:
            return self._tls.cws
        except AttributeError:
            cws = np.zeros(self.size)
            self._tls.cws = cws
            return cws

    def workspace6(self):
        """This thread's workspace of the unmasked set (``ci6_k``; created on first use)."""
        try:
            return self._tls.cws6
        except AttributeError:
            cws = np.zeros(self.size6)
            self._tls.cws6 = cws
            return cws

    def info_buffer(self):
        """This thread's 7-entry scratch for the ``_into`` functions' info."""
        try:
            return self._tls.info
        except AttributeError:
            info = np.zeros(7)
            self._tls.info = info
            return info

    def actuation(self, model, actuated, weights):
        """(passive DOF indices, actuated DOF indices, 1/sqrt(weight) per row) for the
        inverse dynamics, checked and cached by value."""
        key = (None if actuated is None else tuple(actuated),
               None if weights is None else np.asarray(weights, dtype=float).tobytes())
        try:
            return self._actuation[key]
        except (KeyError, TypeError):
            pass
        out = _actuation(model, self, actuated, weights)
        if len(self._actuation) < 64:
            try:
                self._actuation[key] = out
            except TypeError:
                pass
        return out


def _actuation(model, cs, actuated, weights):
    nv = model.nv
    is_act = np.zeros(nv, dtype=bool)
    free = [n for n, t in zip(model.joint_names, model.joint_types) if t == "floating"]
    if actuated is None:
        for _name, t, i, n in zip(model.joint_names, model.joint_types, model.idx_v, model.joint_nv):
            if t != "floating":
                is_act[i:i + n] = True
    else:
        if isinstance(actuated, str):
            raise ValueError(f"actuated: expected a sequence of joint names, got the string {actuated!r}")
        for name in actuated:
            if not isinstance(name, str) or name not in model.joint_names:
                raise ValueError(f"actuated: {name!r} is not a DOF joint of the model "
                                 f"(its joints: {list(model.joint_names)})")
            if name in free:
                raise ValueError(f"actuated: {name!r} is a floating joint, which is never actuated")
            i, n = model.idx_v[model.joint_names.index(name)], model.joint_nv[model.joint_names.index(name)]
            is_act[i:i + n] = True
    if weights is None:
        scale = np.ones(cs.m)
    else:
        w = real_array(weights, "weights", f"{cs.m} positive numbers (one per constraint row)")
        if w.shape != (cs.m,):
            raise ValueError(f"weights: expected {cs.m} positive numbers (one per constraint row: "
                             f"{', '.join(cs.names)}), got shape {w.shape}")
        if not np.all((w > 0) & np.isfinite(w)):
            raise ValueError(f"weights: expected finite numbers > 0, got {w.tolist()}")
        scale = 1.0 / np.sqrt(w)
    passive = np.flatnonzero(~is_act).astype(np.int64)
    active = np.flatnonzero(is_act).astype(np.int64)
    return passive, active, scale


def constraint_set(model, constraints=None) -> ConstraintSet:
    """The packed set of ``model.constraints`` + ``constraints`` (cached by value)."""
    extra = as_tuple(constraints)
    key = model.constraints + extra if extra else model.constraints
    try:
        per_model = _CACHE[model]
    except KeyError:
        with _CACHE_LOCK:
            per_model = _CACHE.setdefault(model, {})
    except TypeError:
        raise TypeError(f"model: expected an rbd_ros.core.Model, got {type(model).__name__}") from None
    try:
        return per_model[key]
    except KeyError:
        pass
    if extra:
        check_links(key, model.links)
    cs = ConstraintSet(model, key)
    with _CACHE_LOCK:
        if len(per_model) >= _MAX_SETS:
            per_model.pop(next(iter(per_model)))
        per_model[key] = cs
    return cs


__all__ = ["Constraint", "ConstraintSet", "constraint_set"]
