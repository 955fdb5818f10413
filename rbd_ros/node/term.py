"""What an output term of the control path is (ROS-free): the ``Term`` base class, the
rows of its outputs, the message kinds and the buffers the messages share.

A term is one object per Robot (made when the Robot is bound, in the background
thread) that owns its buffers, its state and its compute: the compensation torques,
the momentum observer, the wrench, the collision flag, the command law, the window of
recent joint states.  ``terms.TERMS`` lists the term classes in compute order; the
control step (control_step.py) makes one of each for every Robot, configures them
from the parameters, decides per message which ones run (live outputs, switches,
``needs``) and calls their ``compute``; the ROS side (control_path.py) publishes their
outputs from their buffers.

To add an output: a ``Term`` subclass (its buffers, state and compute), its row in
``terms.TERMS``, its topic name in ``names.py``, a test.
"""
from __future__ import annotations

import array
from dataclasses import dataclass

import numpy as np

# message kinds (control_path.py builds them)
ARRAY = "array"          # std_msgs/Float64MultiArray, data = the buffer (joints order)
MATRIX = "matrix"        # std_msgs/Float64MultiArray, data = the buffer, rows x cols layout
STATE = "state"          # sensor_msgs/JointState, name = joints, effort = the buffer, the input's stamp
WRENCH = "wrench"        # geometry_msgs/WrenchStamped from the buffer [fx fy fz tx ty tz], frame_id = the frame
COLLISION = "collision"  # rbd_ros_interfaces/Collision from the term's collision state
CONSTRAINT_FORCES = "constraint_forces"  # rbd_ros_interfaces/ConstraintForces from the buffer (λ) and the term's forces
CONTACT_FORCES = "contact_forces"  # rbd_ros_interfaces/ConstraintForces of the term's contact set (entries per set)

# which input triggers a term
JOINT_STATES = "joint_states"    # a joint_states message that passed the gate (fresh, rate)
DESIRED = "desired"              # a ~/desired_state point
MERGED = "merged"                # every joint_states message merged into the state, before the gate


@dataclass(frozen=True)
class Output:
    """One topic of a term: ``part`` names the buffer it carries (``Term.parts``),
    ``switch`` the boolean parameter that turns it on ("" = always on), ``on`` the input
    it is published for (JOINT_STATES or DESIRED)."""
    topic: str
    kind: str
    part: str
    switch: str = ""
    on: str = JOINT_STATES


def float_buffer(n: int) -> tuple[array.array, np.ndarray]:
    """A float64 array.array of n zeros (what rclpy messages hold without copying) and a
    numpy view on it."""
    buf = array.array("d", bytes(8 * n))
    return buf, np.frombuffer(buf, dtype=np.float64)


class Term:
    """One term of the control path for one Robot ``rt``.

    Class attributes: ``key`` (its name), ``outputs`` (Output rows), ``on`` (JOINT_STATES:
    computed for a message that passed the gate when one of its parts is wanted; MERGED:
    for every merged message, whether or not anything is published), ``parts`` of the
    outputs; per instance ``bufs``: {part:
    (array.array, numpy view)} made by ``__init__`` (joints order), what the messages
    carry.  ``report`` (logs.Reporter) says what goes wrong.

    The control step calls, in the background thread: ``link`` (the other terms, by
    key, once all exist), ``warm_up``, ``adopt`` (the same term of the previous Robot:
    counters and state to carry over), ``configure`` (the parameters; a term whose
    parameters do not fit this Robot is off, ``refuse``); in the control thread:
    ``compute(wanted, stamp, now)`` (wanted: the set of this term's parts needed for the
    message) -> True if its wanted parts are to be published, False if none, or the parts
    to publish (ValueError when the state or a result is not finite, or not to be used:
    nothing of the message is published then; its ``reason`` attribute, if any, is the
    drop reason counted).  Run-time
    changes replace whole objects with one assignment, so the control thread sees the
    old settings or the new ones, never a mix."""
    key = ""
    outputs: tuple = ()
    on = JOINT_STATES
    always: tuple = ()       # parts computed for every message, wanted or not

    def __init__(self, rt, report):
        self.rt = rt
        self.report = report
        self.error = None        # why the term's outputs are off (parameters that do not fit), or None
        self.bufs = {part: float_buffer(self.size(part)) for part in self.parts()}

    # --------------------------------------------------------------- structure
    @classmethod
    def parts(cls) -> tuple:
        """The buffer names of its outputs, in order."""
        return tuple(dict.fromkeys(o.part for o in cls.outputs))

    def size(self, part: str) -> int:
        """The length of buffer ``part`` (default: one per output joint)."""
        return self.rt.nout

    def array(self, part: str) -> np.ndarray:
        return self.bufs[part][1]

    def buffer(self, part: str) -> array.array:
        """The array.array of ``part`` (what its messages carry)."""
        return self.bufs[part][0]

    @classmethod
    def needs(cls, params) -> tuple:
        """Parts of other terms computed (earlier in table order, or on the previous
        message) whenever this one is: default none."""
        return ()

    @classmethod
    def check(cls, params, rt) -> None:
        """ValueError (naming the parameter) if ``params`` do not fit Robot ``rt``: the
        check before a parameter change is accepted.  Default: nothing to check."""

    # ------------------------------------------------------ background thread
    def link(self, terms: dict) -> None:
        """The Robot's other terms by key, once all exist."""

    def adopt(self, old) -> None:
        """Carry counters and state over from ``old``, this term of the previous Robot."""

    def configure(self, params, keep_on_error: bool = False) -> None:
        """Take the parameters.  ``keep_on_error``: parameters that do not fit this Robot
        (accepted for a new one) keep the current settings, silently."""

    def refuse(self, text: str) -> None:
        """The term is off because of ``text``: logged when it is new, kept in ``error``
        and handed to the reporter's ``on_error`` (the diagnostics' last error)."""
        if text != self.error:
            self.report.log.error(text)
        self.error = text
        if self.report.on_error is not None:
            self.report.on_error(text)

    def warm_up(self) -> None:
        """Compile (numba) and run once what ``compute`` runs."""

    def diagnostics(self, now: float) -> list:
        """(key, value) pairs for /diagnostics (any thread)."""
        return []

    # --------------------------------------------------------- control thread
    def compute(self, wanted, stamp: float, now: float) -> bool:
        raise NotImplementedError

    def not_finite(self, stamp: float, what: str) -> None:
        """A joint state was dropped for NaN/inf or values out of range (``what``)."""
