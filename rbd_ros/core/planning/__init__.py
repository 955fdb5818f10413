"""Answers for motion planners: the time-optimal retiming of a path under velocity,
acceleration and torque limits (``retime``, TOPP-RA on the batch kernels) and the
payload a link can carry along a trajectory (``payload_capacity``).  Reference:
doc/planners.md."""
from .capacity import PayloadCapacity, payload_capacity
from .retiming import RetimeResult, retime

__all__ = ["retime", "RetimeResult", "payload_capacity", "PayloadCapacity"]
