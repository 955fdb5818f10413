"""Logging at a severity chosen at run time, safely, and throttled reports (ROS-free).

rclpy ties one severity to each call site (function, file, line, bytecode offset):
``getattr(logger, level)(text)`` logs from one site, and a second call at another
level raises ``ValueError: Logger severity cannot be changed between calls.`` --
out of whatever callback was logging.  ``log_at`` calls each severity from a line of
its own, and never raises: a log line that cannot be written (a logger whose context
is gone, a failing handler) is lost, not turned into an error of the caller.
"""
from __future__ import annotations

import math
import time

LEVELS = ("debug", "info", "warning", "error")


def log_at(log, level: str, text: str) -> None:
    """``text`` through ``log`` (any object with debug/info/warning/error: an rclpy
    logger, a ``logging.Logger``) at ``level``, one of ``LEVELS`` (anything else is
    logged as an error).  Never raises."""
    try:
        if level == "error":
            log.error(text)
        elif level == "warning":
            log.warning(text)
        elif level == "info":
            log.info(text)
        elif level == "debug":
            log.debug(text)
        else:
            log.error(f"(unknown log level {level!r}) {text}")
    except Exception:   # logging must never take its caller down
        pass


class Reporter:
    """What the control path says (ROS-free; shared by the control step and its terms):
    ``report`` logs a text at most once per ``throttle_s`` for the same kind of message
    (the text before its first colon) and hands every one to ``on_error`` (the
    diagnostics' last error); ``log`` is any object with debug/info/warning/error.
    Never raises."""

    def __init__(self, log, on_error=None, throttle_s: float = 2.0):
        self.log = log
        self.on_error = on_error
        self.throttle_s = throttle_s
        self._last = {}

    def report(self, text: str, level: str, throttle: bool = True) -> None:
        """Log ``text`` at ``level`` (throttled by its kind unless ``throttle`` is False)
        and hand it to ``on_error``."""
        if self.on_error is not None:
            self.on_error(text)
        if self.due(text.split(":", 1)[0], force=not throttle):
            log_at(self.log, level, text)

    def due(self, key: str, force: bool = False) -> bool:
        """True (and the time of ``key`` noted) unless ``key`` was due less than
        ``throttle_s`` ago; ``force``: True (noted) whenever."""
        now = time.monotonic()
        if not force and now - self._last.get(key, -math.inf) < self.throttle_s:
            return False
        self._last[key] = now
        return True
