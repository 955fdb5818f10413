"""Logging at a severity chosen at run time, safely (ROS-free).

rclpy ties one severity to each call site (function, file, line, bytecode offset):
``getattr(logger, level)(text)`` logs from one site, and a second call at another
level raises ``ValueError: Logger severity cannot be changed between calls.`` --
out of whatever callback was logging.  ``log_at`` calls each severity from a line of
its own, and never raises: a log line that cannot be written (a logger whose context
is gone, a failing handler) is lost, not turned into an error of the caller.
"""
from __future__ import annotations

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
