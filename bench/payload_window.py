#!/usr/bin/env python3
"""What keeping the recent joint states for ``~/estimate_payload`` costs the control step.

    python bench/payload_window.py [--rounds 41] [--messages 2000] [--max-rate 2000]

Two ControlSteps on the bundled arm, in one process, fed the same joint_states messages
(positions, velocities and efforts of every joint, a new receive time 1 ms apart):
A with ``payload_window`` 0 (no buffer: the hook is one attribute test), B with the
default window and ``payload_max_rate`` ``--max-rate`` (default 2000 Hz, above the
message rate: every message is written, the worst case; 500, the parameter's default:
every other one).  Rounds interleave A, B, A, B ...; each round times
``--messages`` calls of ``ControlStep.joint_state``.  Printed: the median µs per message
of each, and the median over rounds of B / A and of B - A, for the cheapest step (only
g(q) live) and the usual one (g, b and H live).  A benchmark, not a test: nothing here
asserts on speed.
"""
from __future__ import annotations

import argparse
import array
import logging
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from rbd_ros import robots  # noqa: E402
from rbd_ros.node import model_build as mb  # noqa: E402
from rbd_ros.node.control_step import ControlStep  # noqa: E402
from rbd_ros.node.params import Params  # noqa: E402
from rbd_ros.node.stats import Stats  # noqa: E402
from rbd_ros.node.terms import TERMS  # noqa: E402


def make_step(window: float, live, max_rate: float):
    text, where = robots.read_description("rbd_arm7", "")
    rt = mb.build_robot(text, floating_base=False, mimic=True, gravity=(0.0, 0.0, -9.81), joints=(), source=where)
    step = ControlStep(TERMS, Params(max_state_age=0.0, payload_window=window, payload_max_rate=max_rate),
                       logging.getLogger("bench"))
    b = step.make(rt)
    step.bind(b)
    step.set_live(live, set())
    return step, b, Stats()


def run(step, b, stats, msgs, t0: float) -> float:
    """µs per message over ``msgs`` (names, pos, vel, eff) calls, receive times from t0, 1 ms apart."""
    js = step.joint_state
    start = time.perf_counter()
    for k, (names, p, v, e) in enumerate(msgs):
        js(b, stats, names, p, v, e, t0 + 1e-3 * k, t0 + 1e-3 * k)
    return (time.perf_counter() - start) / len(msgs) * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--max-rate", type=float, default=2000.0, help="payload_max_rate of B (Hz); messages come at 1 kHz")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    names = [f"joint{i}" for i in range(1, 8)]
    msgs = [(names, array.array("d", rng.uniform(-1, 1, 7)), array.array("d", rng.uniform(-1, 1, 7)),
             array.array("d", rng.uniform(-5, 5, 7))) for _ in range(args.messages)]
    print(f"ControlStep.joint_state on rbd_arm7, {args.messages} messages at 1 kHz x {args.rounds} rounds, "
          f"interleaved; B: payload_max_rate {args.max_rate:g} Hz")
    print("| live terms | A: no window (µs/msg) | B: window (µs/msg) | B / A | B - A (µs) | B kept |")
    print("|---|---|---|---|---|---|")
    for live in ({"g"}, {"g", "b", "h"}):
        a, b = make_step(0.0, live, args.max_rate), make_step(30.0, live, args.max_rate)
        assert a[1].by_key["recent"].window is None and b[1].by_key["recent"].window is not None
        ta, tb, ratio, diff = [], [], [], []
        t0 = 1000.0
        for r in range(args.rounds + 1):
            x = run(*a, msgs, t0)
            y = run(*b, msgs, t0)
            t0 += 1e-3 * args.messages
            if r == 0:
                continue                      # warm-up round
            ta.append(x)
            tb.append(y)
            ratio.append(y / x)
            diff.append(y - x)
        kept = b[1].by_key["recent"].window.written / ((args.rounds + 1) * args.messages)
        assert kept >= min(1.0, args.max_rate / 1000.0) - 0.01, kept      # B really wrote what its rate allows
        print(f"| {', '.join(sorted(live))} | {statistics.median(ta):.2f} | {statistics.median(tb):.2f} | "
              f"{statistics.median(ratio):.3f} | {statistics.median(diff):.2f} | {kept:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
