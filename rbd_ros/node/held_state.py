"""The latest joint state the node received, for the joints a planner request does not
name (they are held there).  ROS-free.

The planner services (``~/retime_trajectory``, ``~/payload_capacity``) and the trajectory
relay accept a *subset* of the model's joints; the others keep the position the node last
received for them on ``joint_states`` (each DOF's latest value, as the control path merged
it: partial messages from several publishers merge, per joint).  The services run in the
service worker process, which has no joint states of its own, so it asks the node for
them over the line protocol (protocol.py):

* node side: ``snapshot(rt, now)`` reads the Robot in use (a copy of its merged
  positions; the control thread keeps writing, each DOF's value is one it received) and
  is sent back by the worker client's reader thread;
* worker side: ``HeldStateRequester()`` sends a request line and waits (the reply arrives
  on the worker's stdin reader thread: ``deliver``);
* in process (``service_process: false``): ``snapshot`` directly.

Either way a request gets ``{"names": [...], "positions": [...], "age_s": s}`` or
``{"error": "..."}`` (no model, or joints never received), and ``fill`` writes the
positions into a model-order q.
"""
from __future__ import annotations

import itertools
import math
import threading

import numpy as np

REPLY_TIMEOUT_S = 10.0   # a worker waits this long for the node's answer (a model build may delay it)


class HeldStateError(ValueError):
    """The held joint state is not available; the text says why."""


def snapshot(rt, now: float) -> dict:
    """The latest position of every DOF of Robot ``rt`` (None: no model) and the age of the
    oldest of them (s, by the monotonic clock ``now``), or ``{"error": ...}``; either with
    ``"contacts"``: the contact set in use (``{"links", "normals", "friction"}`` as
    ``~/contacts`` gives them) when the Robot has contacts."""
    if rt is None:
        return {"error": "the node has no robot model yet"}
    extra = {}
    if rt.contacts is not None:
        links, normals, friction = rt.contacts.current.spec      # (one reference: the set in use)
        extra["contacts"] = {"links": list(links), "normals": [list(n) for n in normals],
                             "friction": list(friction)}
    stamp = rt.stamp.copy()
    q = rt.q[rt.dof_q].copy()
    never = [rt.dof_names[i] for i in range(rt.ndof) if stamp[i] == -math.inf]
    if never:
        return {"error": f"joints {never} were never received on joint_states", **extra}
    return {"names": list(rt.dof_names), "positions": [float(x) for x in q],
            "age_s": float(now - stamp.min()), **extra}


def map_subset(rt, names, field: str):
    """Request joint names, a subset of Robot ``rt``'s DOFs in any order, each at most once
    -> (DOF index per name, None) or (None, error text naming ``field``)."""
    idx, seen = [], {}
    for k, n in enumerate(names):
        i = rt.dof_index.get(n)
        if i is None:
            return None, rt.unknown_joint_text(n, f"{field}[{k}]")
        if i in seen:
            return None, f"{field}: joint {n!r} is listed twice ({field}[{seen[i]}] and {field}[{k}])"
        seen[i] = k
        idx.append(i)
    if not idx:
        return None, f"{field} is empty: name the joints the trajectory moves"
    return np.asarray(idx, dtype=np.int64), None


def fill(rt, idx, q, held, field: str) -> str | None:
    """Write the held positions of the DOFs not in ``idx`` into the model-order ``q``
    (every DOF named: nothing to do, ``held`` is not called).  ``held()`` returns a
    snapshot dict.  Returns a note for the response (how old the held state is) or None;
    raises HeldStateError naming ``field`` when the state is not available."""
    named = set(int(i) for i in idx)
    missing = [i for i in range(rt.ndof) if i not in named]
    if not missing:
        return None
    who = [rt.dof_names[i] for i in missing]
    shown = who if len(who) <= 8 else who[:8] + ["..."]
    if held is None:
        raise HeldStateError(f"{field}: missing joints {shown}, and the latest joint state is not "
                             "available here: name every joint")
    snap = held()
    if "error" in snap:
        raise HeldStateError(f"{field}: the joints {shown} are not named, so they are held at the latest "
                             f"joint state, but {snap['error']}: name every joint, or publish joint_states")
    pos = dict(zip(snap["names"], snap["positions"]))
    absent = [n for n in who if n not in pos]
    if absent:
        raise HeldStateError(f"{field}: the joints {absent} are not named and the node's latest joint state "
                             "has none for them (a model change in progress?): name every joint")
    for i in missing:
        x = float(pos[rt.dof_names[i]])
        if not math.isfinite(x):
            raise HeldStateError(f"the latest joint state of {rt.dof_names[i]!r} is {x}")
        q[rt.dof_q[i]] = x
    return f"{len(missing)} joints held at the latest joint state ({snap['age_s']:.3g} s old)"


class HeldStateRequester:
    """Worker side: ``requester()`` asks the node for its latest joint state (``send(line)``
    writes a protocol line to the node) and waits up to ``timeout`` s for ``deliver(reply)``
    (called by the thread reading the worker's stdin).  Thread-safe; one id per request,
    so a late answer to a request that timed out is dropped."""

    def __init__(self, send, request_line, timeout: float = REPLY_TIMEOUT_S):
        self._send = send
        self._request_line = request_line     # protocol.event_state_request
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending = {}                    # id -> [Event, reply]

    def __call__(self) -> dict:
        slot = [threading.Event(), None]
        with self._lock:
            k = next(self._ids)
            self._pending[k] = slot
        try:
            self._send(self._request_line(k))
            if not slot[0].wait(self.timeout):
                return {"error": f"the node did not send its latest joint state within {self.timeout:g} s"}
            return slot[1]
        finally:
            with self._lock:
                self._pending.pop(k, None)

    def deliver(self, k: int, reply: dict) -> None:
        with self._lock:
            slot = self._pending.get(k)
        if slot is not None:
            slot[1] = reply
            slot[0].set()
