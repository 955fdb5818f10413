"""The table of the node's output terms (ROS-free): one row per term the control path
computes, with the topics that carry it and the function that computes it.

A term's buffer (``rt.bufs[key]``: an array.array and a numpy view on it, in
``joints`` order) is what its messages carry; the ROS side (``control_path.py``)
builds one preallocated message per output for each Robot, makes the message share
the buffer where the message type allows it, and publishes it when the term was
computed for a message and someone subscribes.  ``ControlStep`` (control_step.py)
decides which terms a message needs (live outputs, switches, ``needs``) and calls
their ``compute`` functions in table order.

To add an output: a row here (its compute function beside it), its topic name in
``names.py``, a test.  A new kind of message also needs its builder in
``control_path.py``.
"""
from __future__ import annotations

from dataclasses import dataclass

from rbd_ros.node import names
from rbd_ros.node.effort_law import float_buffer

# message kinds (control_path.py builds them)
ARRAY = "array"          # std_msgs/Float64MultiArray, data = the buffer (joints order)
MATRIX = "matrix"        # std_msgs/Float64MultiArray, data = the buffer, rows x cols layout
STATE = "state"          # sensor_msgs/JointState, name = joints, effort = the buffer, the input's stamp
WRENCH = "wrench"        # geometry_msgs/WrenchStamped from the buffer [fx fy fz tx ty tz], frame_id = the frame
COLLISION = "collision"  # rbd_ros_interfaces/Collision from the step's collision state

# which input triggers a term
JOINT_STATES = "joint_states"
DESIRED = "desired"


@dataclass(frozen=True)
class Output:
    topic: str
    kind: str


@dataclass(frozen=True)
class Term:
    """``size(rt)``: buffer length; ``compute(step, rt, wanted, stamp, now)`` -> True if the
    term is to be published (writes ``rt.bufs[key]``; raises ValueError when the state or
    the dynamics are not finite: nothing of the message is published then); terms with
    the same compute function are computed by one call (``wanted``: the keys needed);
    ``switch``: the Params field that enables the outputs; ``needs(params)``: keys that
    must be computed before this one (whether or not their outputs are live)."""
    key: str
    outputs: tuple
    size: object
    compute: object
    on: str = JOINT_STATES
    switch: str = ""
    needs: object = None


def _nout(rt):
    return rt.nout


def _six(rt):
    return 6


# ----------------------------------------------------------------------------- compute

def _compensation(step, rt, wanted, stamp, now) -> bool:
    """g (always), b and H while wanted: one core call, joints order."""
    rt.compute("b" in wanted, "h" in wanted)
    return True


def _command(step, rt, wanted, stamp, now) -> bool:
    """~/effort_command: the law of ``effort_law.py`` (counted, logged by the step)."""
    return step.command(rt, now)


def _feedforward(step, rt, wanted, stamp, now) -> bool:
    """~/feedforward_torques of the latest desired state (published by on_desired)."""
    return step.feedforward(rt)


def _external_torques(step, rt, wanted, stamp, now) -> bool:
    """The momentum observer's τ̂_ext, joints order; published while the estimate is valid."""
    return step.observe(rt, stamp, now)


def _external_wrench(step, rt, wanted, stamp, now) -> bool:
    """The least-squares wrench at ``contact_frame`` that explains τ̂_ext (frame axes)."""
    return step.wrench(rt)


def _collision(step, rt, wanted, stamp, now) -> bool:
    """The debounced collision flag of τ̂_ext against ``collision_thresholds``."""
    return step.collision(rt, stamp)


def _observer_needs(params):
    return ("cmd",) if params.observer_torque_source == "commanded" else ()


TERMS = (
    Term("g", (Output(names.TOPIC_GRAVITY, ARRAY), Output(names.TOPIC_GRAVITY_STATE, STATE)), _nout,
         _compensation),
    Term("b", (Output(names.TOPIC_BIAS, ARRAY), Output(names.TOPIC_BIAS_STATE, STATE)), _nout, _compensation,
         switch="publish_bias"),
    Term("h", (Output(names.TOPIC_INERTIA, MATRIX),), lambda rt: rt.nout * rt.nout, _compensation,
         switch="publish_inertia"),
    Term("tau_ext", (Output(names.TOPIC_EXTERNAL_TORQUES, STATE),), _nout, _external_torques,
         switch="observer", needs=_observer_needs),
    Term("wrench", (Output(names.TOPIC_EXTERNAL_WRENCH, WRENCH),), _six, _external_wrench,
         switch="observer", needs=lambda params: ("tau_ext",)),
    Term("collision", (Output(names.TOPIC_COLLISION, COLLISION),), _nout, _collision,
         switch="observer", needs=lambda params: ("tau_ext",)),
    Term("cmd", (Output(names.TOPIC_EFFORT_COMMAND, ARRAY), Output(names.TOPIC_EFFORT_COMMAND_STATE, STATE)),
         _nout, _command),
    Term("ff", (Output(names.TOPIC_FEEDFORWARD, ARRAY), Output(names.TOPIC_FEEDFORWARD_STATE, STATE)), _nout,
         _feedforward, on=DESIRED),
)
BY_KEY = {t.key: t for t in TERMS}


def buffers(rt, terms=TERMS):
    """{key: (array.array, numpy view)} of fresh zero buffers for Robot ``rt``."""
    return {t.key: float_buffer(t.size(rt)) for t in terms}


