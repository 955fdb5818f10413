"""The table of the node's output terms (ROS-free), in compute order: what the control
path computes for a joint state (and a desired state), each term one class owning its
buffers, its state and its compute (term.py says what a term is).

To add an output: its ``Term`` subclass (in the module of its job), its row here, its
topic name in ``names.py``, a test.  A new kind of message also needs its builder in
``control_path.py``.
"""
from __future__ import annotations

from rbd_ros.node import recent
from rbd_ros.node.command import EffortCommand
from rbd_ros.node.compensation import Compensation
from rbd_ros.node.observer import Collision, ExternalTorques, ExternalWrench
from rbd_ros.node.term import MERGED, Term


class PayloadWindow(Term):
    """The window of recent joint states ``~/estimate_payload`` reads (``window``: a
    recent.RecentStates, None while payload_window is 0): no output, run for every
    merged message (``MERGED``), before the gate.  Kept over a model swap when it fits
    (a payload change: same DOFs and settings)."""
    key = "recent"
    on = MERGED

    def __init__(self, rt, report):
        super().__init__(rt, report)
        self.window = None

    def adopt(self, old) -> None:
        self.window = old.window          # configure keeps it when it fits

    def configure(self, params, keep_on_error=False) -> None:
        self.window = recent.for_robot(self.rt, params, self.window)

    def compute(self, wanted, stamp: float, now: float) -> bool:
        w = self.window
        if w is not None:
            w.add(self.rt, stamp, now)
        return False


TERMS = (Compensation, ExternalTorques, ExternalWrench, Collision, EffortCommand, PayloadWindow)
