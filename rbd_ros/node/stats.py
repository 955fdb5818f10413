"""Counters and timing of the control path (written by the control thread only,
read by diagnostics).

Per published joint state: the callback's wall time (from its start to its end, including
any wait for a CPU or the GIL), the dynamics' and the publishing's wall time, the
callback's CPU time (the control thread's own work), and whether the thread was switched
out during it -- preempted (a busy machine: every core taken) or blocked (waiting, e.g.
for the GIL held by another thread of the node) -- so that a slow callback can be told
apart from a busy machine."""
from __future__ import annotations

import time

import numpy as np


class Stats:
    def __init__(self, window: int = 4096):
        self.msgs_in = 0
        self.msgs_out = 0
        self.dropped = {}
        self.not_ready = 0
        self.rate_limited = 0
        self.window = window
        self.callback_us = np.zeros(window)
        self.compute_us = np.zeros(window)
        self.publish_us = np.zeros(window)
        self.cpu_us = np.zeros(window)
        self.preempted = np.zeros(window, dtype=bool)
        self.blocked = np.zeros(window, dtype=bool)
        self.n = 0
        self.last_error = ""
        self.last_error_time = 0.0

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def record(self, callback_us: float, compute_us: float, publish_us: float, cpu_us: float = 0.0,
               preempted: bool = False, blocked: bool = False) -> None:
        k = self.n % self.window
        self.callback_us[k] = callback_us
        self.compute_us[k] = compute_us
        self.publish_us[k] = publish_us
        self.cpu_us[k] = cpu_us
        self.preempted[k] = preempted
        self.blocked[k] = blocked
        self.n += 1

    def error(self, text: str) -> None:
        self.last_error = text
        self.last_error_time = time.time()

    def percentiles(self):
        """((callback p50, p99), (compute p50, p99), (publish p50, p99)) in us over the
        last ``window`` published messages, or None before the first."""
        m = min(self.n, self.window)
        if m == 0:
            return None
        cb = np.percentile(self.callback_us[:m], [50, 99])
        co = np.percentile(self.compute_us[:m], [50, 99])
        pu = np.percentile(self.publish_us[:m], [50, 99])
        return cb, co, pu

    def cpu_percentiles(self):
        """(p50, p99) in us of the callbacks' CPU time over the same window, or None."""
        m = min(self.n, self.window)
        if m == 0:
            return None
        return np.percentile(self.cpu_us[:m], [50, 99])

    def switched(self):
        """(% preempted, % blocked, wall p99 in us of the callbacks that were neither) over
        the same window, or None (the p99 is nan when every callback was switched out)."""
        m = min(self.n, self.window)
        if m == 0:
            return None
        pre, blk = self.preempted[:m], self.blocked[:m]
        calm = self.callback_us[:m][~(pre | blk)]
        p99 = float(np.percentile(calm, 99)) if calm.size else float("nan")
        return 100.0 * pre.mean(), 100.0 * blk.mean(), p99
