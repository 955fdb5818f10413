"""Counters and timing of the control path (written by the control thread only,
read by diagnostics).

Per published joint state: the callback's wall time (from its start to its end, including
any wait for a CPU or the GIL), the dynamics' and the publishing's wall time, and the
callback's CPU time (the control thread's own work).  Their difference is the time the
thread was ready but did not run (another process or thread had the core or the GIL), so
that a slow node can be told apart from a busy machine."""
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
        self.n = 0
        self.last_error = ""
        self.last_error_time = 0.0

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def record(self, callback_us: float, compute_us: float, publish_us: float, cpu_us: float = 0.0) -> None:
        k = self.n % self.window
        self.callback_us[k] = callback_us
        self.compute_us[k] = compute_us
        self.publish_us[k] = publish_us
        self.cpu_us[k] = cpu_us
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
        """((CPU p50, p99), (wait p50, p99)) in us over the same window, or None: the
        callbacks' CPU time, and their wall time minus it (the time not running)."""
        m = min(self.n, self.window)
        if m == 0:
            return None
        cpu = self.cpu_us[:m]
        wait = np.maximum(self.callback_us[:m] - cpu, 0.0)
        return np.percentile(cpu, [50, 99]), np.percentile(wait, [50, 99])
