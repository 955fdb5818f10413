"""The recent joint states, for ``~/estimate_payload`` (ROS-free): a ring buffer of
(q, qd, measured efforts, header stamp, receive time), model order, of the last
``payload_window`` seconds, at most ``payload_max_rate`` rows a second.

Written by the control thread (the ``PayloadWindow`` term of terms.py: ``add`` after each
merged message), read by the background thread (``rows_since``); no lock.  ``add`` keeps a
message only when it carried a position, a velocity and a finite effort for every DOF
of the model (so each row is one consistent sample); it allocates nothing (one numba
call writes the row).  Messages faster than ``payload_max_rate`` are thinned (a token
bucket of one period: the kept rate never exceeds it for longer than one message).

Memory: ceil(window x max_rate) + 2 rows of nq + 2 nv + 2 float64 (the bundled 7-DOF
arm at the defaults, 30 s at 500 Hz: 2.8 MB).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

COPY_ROWS = 4096        # rows copied per numpy call by ``rows_since`` (bounds each GIL hold)


@njit(cache=True)
def record_k(data, row, q, v, tau, effort_stamp, oldest, stamp, now):
    """Write (q, v, tau, stamp, now) into data[row] if the sample is complete: every
    DOF's position (``oldest``, the oldest position receive time) and effort
    (``effort_stamp``) was received at ``now``.  Returns whether it wrote."""
    if oldest != now:
        return False
    for i in range(effort_stamp.shape[0]):
        if effort_stamp[i] != now:
            return False
    d = data[row]
    nq, nv = q.shape[0], v.shape[0]
    for i in range(nq):
        d[i] = q[i]
    for i in range(nv):
        d[nq + i] = v[i]
        d[nq + nv + i] = tau[i]
    d[nq + 2 * nv] = stamp
    d[nq + 2 * nv + 1] = now
    return True


KERNELS = (record_k,)


@dataclass
class Window:
    """Rows of a RecentStates, oldest first (copies): header stamps and receive times
    (s), q (N, nq), v and tau (N, nv)."""
    stamp: np.ndarray
    recv: np.ndarray
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray


class RecentStates:
    """The ring buffer (module docstring) for a model with ``nq`` positions and ``nv``
    velocities; ``dof_names`` identify the layout (a new Robot with the same keeps it)."""

    def __init__(self, nq: int, nv: int, dof_names, window: float, max_rate: float):
        window, max_rate = float(window), float(max_rate)
        if not (math.isfinite(window) and window > 0):
            raise ValueError(f"payload_window: expected a number > 0 (s), got {window!r}")
        if not (math.isfinite(max_rate) and max_rate > 0):
            raise ValueError(f"payload_max_rate: expected a number > 0 (Hz), got {max_rate!r}")
        self.nq, self.nv, self.dof_names = int(nq), int(nv), tuple(dof_names)
        self.window, self.max_rate = window, max_rate
        self.period = 1.0 / max_rate
        self.capacity = int(math.ceil(window * max_rate)) + 2
        self.data = np.zeros((self.capacity, self.nq + 2 * self.nv + 2))
        self.written = 0            # rows ever written; row k lives in data[k % capacity]
        self._row = 0               # written % capacity
        self._next = -math.inf      # the earliest receive time the next row may have
        # compile (or load from numba's cache) now, not on the first message
        z = np.zeros(self.nv)
        record_k(self.data, 0, np.zeros(self.nq), z, z, z, 0.0, 0.0, 1.0)

    def fits(self, rt, window: float, max_rate: float) -> bool:
        """True if this buffer serves Robot ``rt`` with these settings as it is."""
        return (self.nq, self.nv, self.dof_names, self.window, self.max_rate) == \
            (rt.model.nq, rt.model.nv, tuple(rt.dof_names), float(window), float(max_rate))

    # ------------------------------------------------------------ control thread
    def add(self, rt, stamp: float, now: float) -> None:
        """Keep Robot ``rt``'s state just merged at ``now`` (monotonic s; header stamp
        ``stamp``) if the message was complete (``record_k``) and the rate allows."""
        if now < self._next:
            return
        if record_k(self.data, self._row, rt.q, rt.v, rt.tau_meas, rt.effort_stamp, rt.oldest, stamp, now):
            row = self._row + 1
            self._row = 0 if row == self.capacity else row
            self.written += 1
            nxt = self._next + self.period
            self._next = nxt if nxt > now else now

    # ------------------------------------------------------------ any thread
    def rows_since(self, since: float) -> Window | None:
        """Copies of the rows received at or after ``since`` (monotonic s), oldest first;
        None if there is none.  Safe against the concurrent ``add``: rows overwritten
        while copying are left out."""
        cap, n0 = self.capacity, self.written
        first = max(0, n0 - cap)
        if n0 == first:
            return None
        recv = self._column(first, n0, -1)
        k = int(np.searchsorted(recv, since, side="left"))
        rows = self._rows(first + k, n0)
        valid = max(0, self.written + 1 - cap)         # rows below this may have been overwritten meanwhile
        rows = rows[max(0, valid - (first + k)):]
        rows = rows[rows[:, -1] >= since]
        if rows.shape[0] == 0:
            return None
        nq, nv = self.nq, self.nv
        return Window(stamp=rows[:, -2].copy(), recv=rows[:, -1].copy(), q=rows[:, :nq].copy(),
                      v=rows[:, nq:nq + nv].copy(), tau=rows[:, nq + nv:nq + 2 * nv].copy())

    def oldest_receive_time(self) -> float:
        """The receive time of the oldest row held (inf when empty)."""
        cap, n = self.capacity, self.written
        if n == 0:
            return math.inf
        return float(self.data[max(0, n - cap + 1) % cap, -1])

    def _segments(self, lo: int, hi: int):
        """Row ranges of data holding rows lo..hi-1 (at most two: the ring wraps)."""
        cap = self.capacity
        a, b = lo % cap, (hi - 1) % cap + 1
        return [(a, b)] if hi > lo and a < b else ([(a, cap), (0, b)] if hi > lo else [])

    def _column(self, lo: int, hi: int, col: int) -> np.ndarray:
        return np.concatenate([self.data[a:b, col] for a, b in self._segments(lo, hi)])

    def _rows(self, lo: int, hi: int) -> np.ndarray:
        out = np.empty((max(0, hi - lo), self.data.shape[1]))
        k = 0
        for a, b in self._segments(lo, hi):
            for s in range(a, b, COPY_ROWS):
                e = min(b, s + COPY_ROWS)
                out[k:k + e - s] = self.data[s:e]
                k += e - s
        return out


def for_robot(rt, params, old):
    """The RecentStates Robot ``rt`` records into under ``params`` (payload_window,
    payload_max_rate): ``old`` when it fits (same DOFs and settings: the window
    survives a payload change), a new one otherwise, None when payload_window is 0."""
    window, rate = float(params.payload_window), float(params.payload_max_rate)
    if not window > 0:
        return None
    if old is not None and old.fits(rt, window, rate):
        return old
    return RecentStates(rt.model.nq, rt.model.nv, rt.dof_names, window, rate)
