"""The compensation term (ROS-free): g(q), b(q, q̇) = C(q, q̇) q̇ + g(q) and H(q) of the
merged joint state, in ``joints`` order, from one core call
(``rbd.compensation_into``)."""
from __future__ import annotations

import numpy as np

import rbd_ros.core as rbd
from rbd_ros.node import names
from rbd_ros.node.term import ARRAY, MATRIX, STATE, Output, Term


class Compensation(Term):
    """``g`` (always computed: the command law reads it), ``b`` and ``h`` while wanted."""
    key = "g"
    outputs = (Output(names.TOPIC_GRAVITY, ARRAY, "g"),
               Output(names.TOPIC_GRAVITY_STATE, STATE, "g"),
               Output(names.TOPIC_BIAS, ARRAY, "b", switch="publish_bias"),
               Output(names.TOPIC_BIAS_STATE, STATE, "b", switch="publish_bias"),
               Output(names.TOPIC_INERTIA, MATRIX, "h", switch="publish_inertia"))
    always = ("g",)

    def size(self, part: str) -> int:
        return self.rt.nout * self.rt.nout if part == "h" else self.rt.nout

    def __init__(self, rt, report):
        super().__init__(rt, report)
        self.g, self.b, self.h = self.array("g"), self.array("b"), self.array("h")

    def compute(self, wanted, stamp: float, now: float) -> bool:
        """g (and b, H while wanted) for the merged state; ValueError (nothing to publish)
        if the state or a result is not finite."""
        rt = self.rt
        rbd.compensation_into(rt.model, rt.q, rt.v, rt.out_v, self.g, self.b if "b" in wanted else None,
                              self.h if "h" in wanted else None)
        return True

    def warm_up(self) -> None:
        rt = self.rt
        z = np.zeros(rt.model.nv)
        rbd.compensation_into(rt.model, np.array(rt.model.neutral(), dtype=np.float64), z, rt.out_v,
                              np.empty(rt.nout), np.empty(rt.nout), np.empty(rt.nout * rt.nout))
