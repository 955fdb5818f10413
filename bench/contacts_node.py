#!/usr/bin/env python3
"""The node's per-message compute time on a legged robot on its contacts against the tree
arm's (issue 25; a benchmark, not a test): ``ControlStep`` (merge, gate, every live term)
in this process, no ROS, no DDS, interleaved.

    python bench/contacts_node.py [--rounds 21] [--messages 1000]

Three control steps, built as the node builds them: A = the bundled arm (rbd_arm7, 7
DOF, a tree), B = solo12 (example-robot-data; 12 joints, a floating base) on its four
point feet with friction_coefficient 0.7 on flat ground (the friction-free forces are
inside the cones: no QP), C = the same with friction_coefficient 0.3 in a V-shaped valley
(~/contacts normals: the left feet on a 20° slope, the right ones on the opposite one):
the friction-free forces leave the cones and every solve goes to the cone QP (DAQP),
feasible.  Each round times ``--messages`` joint states of each,
A, B, C in turn (solo12's preceded by its base state, as the base_state callback hands
it over: counted in its time); printed per case: the median µs per message of each and
the medians over rounds of B / A and C / A.  Cases: ``g`` (only ~/gravity_torques live)
and ``usual`` (g, b, H, the effort command in gravity mode and, for solo12, the contact
forces).  The motion: 0.1 rad at 1 Hz on every joint around the standing pose (the arm:
its start pose), sampled every 1 ms, the base at rest.
"""
from __future__ import annotations

import argparse
import array
import logging
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
from legged_util import FEET, Q_STAND, SOLO  # noqa: E402

import rbd_ros.core as rbd  # noqa: E402
from rbd_ros import robots  # noqa: E402
from rbd_ros.node import model_build as mb  # noqa: E402
from rbd_ros.node.contacts import contact_options  # noqa: E402
from rbd_ros.node.control_step import ControlStep  # noqa: E402
from rbd_ros.node.params import Params  # noqa: E402
from rbd_ros.node.stats import Stats  # noqa: E402
from rbd_ros.node.terms import TERMS  # noqa: E402

CASES = {"g": ({"g"}, set()), "usual": ({"g", "b", "h", "cmd"}, {"contact"})}
BASE = ([0.0, 0.0, 0.232, 0.0, 0.0, 0.0, 1.0], [0.0] * 6)
_S, _C = math.sin(math.radians(20.0)), math.cos(math.radians(20.0))
VALLEY = [(0.0, -_S, _C), (0.0, _S, _C), (0.0, -_S, _C), (0.0, _S, _C)]     # FL, FR, HL, HR: slopes facing in


class Step:
    """One robot's control step with the parts ``live`` and its pre-made messages."""

    def __init__(self, robot: str, live, messages: int, mu: float | None = None, normals=()):
        legged = mu is not None
        p = Params(max_state_age=0.0, contacts=FEET if legged else (), friction_coefficient=mu or 0.0)
        if legged:
            with open(SOLO) as f:
                text = f.read()
            co = contact_options(p.contacts, p.contact_type, p.friction_coefficient, p.sole_size)
            self.rt = mb.build_robot(text, floating_base=True, mimic=True, gravity=(0.0, 0.0, -9.81), joints=(),
                                     source="bench", contacts=co)
            q0 = Q_STAND
        else:
            text, where = robots.read_description(robot, "")
            self.rt = mb.build_robot(text, floating_base=False, mimic=True, gravity=(0.0, 0.0, -9.81), joints=(),
                                     source=where)
            q0 = np.array([0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0])
        self.step = ControlStep(TERMS, p, logging.getLogger("bench"))
        self.bound = self.step.make(self.rt)
        self.step.bind(self.bound)
        self.step.set_live(set(live), ())
        if normals:
            assert self.step.contacts(self.bound, FEET, normals, ())
        self.legged = legged
        self.stats = Stats()
        names = list(self.rt.out_names)
        n = len(names)
        rng = np.random.default_rng(0)
        ph = rng.uniform(0, 2 * np.pi, n)
        tt = 1e-3 * np.arange(messages)
        self.msgs = [(names, array.array("d", q0 + 0.1 * np.sin(2 * np.pi * x + ph)),
                      array.array("d", 0.2 * np.pi * np.cos(2 * np.pi * x + ph)), array.array("d", np.zeros(n)))
                     for x in tt]
        self.t = 1000.0

    def run(self) -> float:
        """µs per message over the pre-made messages."""
        js, bs, b, st = self.step.joint_state, self.step.base_state, self.bound, self.stats
        legged = self.legged
        pose, twist = BASE
        out0 = st.msgs_out
        t = self.t
        start = time.perf_counter()
        for nm, p, v, e in self.msgs:
            t += 1e-3
            if legged:
                bs(b, "base_link", pose, twist, t)
            if js(b, st, nm, p, v, e, t, t) is not None:
                st.msgs_out += 1
        us = (time.perf_counter() - start) / len(self.msgs) * 1e6
        self.t = t
        if st.msgs_out - out0 != len(self.msgs):
            raise RuntimeError(f"only {st.msgs_out - out0} of {len(self.msgs)} messages computed: {st.dropped}")
        return us


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of " + ", ".join(CASES))
    args = ap.parse_args(argv)
    print(f"ControlStep.joint_state: A = rbd_arm7 (tree), B = solo12 on 4 point feet (mu 0.7: no cone active), "
          f"C = solo12 in a V-shaped valley (mu 0.3: the cone QP every solve); {args.messages} messages x "
          f"{args.rounds} rounds, interleaved A, B, C ...")
    print("| live parts | A (µs/msg) | B (µs/msg) | C (µs/msg) | B / A | C / A |")
    print("|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        live, legged_only = CASES[case]
        a = Step("rbd_arm7", live, args.messages)
        b = Step("solo12", live | legged_only, args.messages, mu=0.7)
        c = Step("solo12", live | legged_only, args.messages, mu=0.3, normals=VALLEY)
        assert c.rt.contacts is not None and b.rt.contacts is not None
        ta, tb, tc, rb, rc = [], [], [], [], []
        for r in range(args.rounds + 1):
            x, y, z = a.run(), b.run(), c.run()
            if r:           # round 0 warms caches up
                ta.append(x)
                tb.append(y)
                tc.append(z)
                rb.append(y / x)
                rc.append(z / x)
        cs_b, cs_c = b.bound.by_key["g"].contact_set, c.bound.by_key["g"].contact_set
        assert cs_b.feasible and cs_c.feasible
        for s, status in ((b, "no cone active"), (c, "cone active")):       # what each case stands for
            rt = s.rt
            z = np.zeros(rt.model.nv)
            cur = rt.contacts.current
            got = rbd.constrained_inverse_dynamics(rt.model, rt.q, z, z, cur.constraints, friction=cur.friction).status
            assert got == status, (got, status)
        print(f"| {case} | {statistics.median(ta):.1f} | {statistics.median(tb):.1f} | {statistics.median(tc):.1f} | "
              f"{statistics.median(rb):.2f} | {statistics.median(rc):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
