"""Counters and timing of the control path (written by the control thread only,
read by diagnostics)."""
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
        self.n = 0
        self.last_error = ""
        self.last_error_time = 0.0

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def record(self, callback_us: float, compute_us: float, publish_us: float) -> None:
        k = self.n % self.window
        self.callback_us[k] = callback_us
        self.compute_us[k] = compute_us
        self.publish_us[k] = publish_us
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
