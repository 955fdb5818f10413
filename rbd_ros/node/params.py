"""The node's parameters in rclpy: declarations and a typed snapshot (``Params``), both
made from the table of ``param_table.py``.

``declare(node)`` declares every parameter; ``read(node)`` returns a ``Params``;
``Params.updated(changes)`` is the snapshot a set-parameters request would give (the
on-set callback checks each changed value with ``param_table.check`` and builds from
the snapshot before accepting).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os

from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, ParameterType, ParameterValue
from rclpy.exceptions import (
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterUninitializedException,
)
from rclpy.parameter import Parameter

from rbd_ros import robots
from rbd_ros.node import param_table

STRUCTURAL = param_table.STRUCTURAL     # a change rebuilds the model (off the control path)
COMMAND = param_table.COMMAND
OBSERVER = param_table.OBSERVER

_PTYPE = {param_table.STRING: ParameterType.PARAMETER_STRING, param_table.BOOL: ParameterType.PARAMETER_BOOL,
          param_table.DOUBLE: ParameterType.PARAMETER_DOUBLE, param_table.INT: ParameterType.PARAMETER_INTEGER,
          param_table.STRINGS: ParameterType.PARAMETER_STRING_ARRAY,
          param_table.DOUBLES: ParameterType.PARAMETER_DOUBLE_ARRAY}
_EMPTY_TYPE = {param_table.STRINGS: Parameter.Type.STRING_ARRAY, param_table.DOUBLES: Parameter.Type.DOUBLE_ARRAY}


def descriptor(p) -> ParameterDescriptor:
    """The rclpy descriptor of table entry ``p`` (description with unit and choices, type,
    read-only, the range of a double)."""
    text = p.text + (f" Unit: {p.unit}." if p.unit else "") + \
        (f" One of: {', '.join(p.choices)}." if p.choices else "")
    kw = {}
    if p.type == param_table.DOUBLE and p.range and all(math.isfinite(x) for x in p.range):
        kw["floating_point_range"] = [FloatingPointRange(from_value=float(p.range[0]), to_value=float(p.range[1]))]
    return ParameterDescriptor(description=text, type=_PTYPE[p.type], read_only=p.read_only, **kw)


# (name, default, descriptor) of every parameter; an empty array's default is its type
PARAMETERS = [(p.name, _EMPTY_TYPE[p.type] if isinstance(p.default, list) and not p.default else p.default,
               descriptor(p)) for p in param_table.TABLE]


class _Derived:
    """Values derived from the parameters (the base of ``Params``)."""

    @property
    def min_publish_period(self) -> float:
        return 1.0 / self.max_publish_rate if self.max_publish_rate > 0 else 0.0

    @property
    def numba_threads(self) -> int:
        """service_threads, with 0 meaning one less than the CPU count (at least 1)."""
        if self.service_threads > 0:
            return self.service_threads
        return max(1, (os.cpu_count() or 2) - 1)

    def gravity_error(self):
        """None, or why the gravity value is refused."""
        return param_table.check("gravity", list(self.gravity))

    def description(self):
        """(URDF text, where it came from) from robot_description or urdf_file, or None.
        Raises ValueError/OSError if urdf_file names no readable file."""
        return robots.read_description(self.urdf_file, self.robot_description)

    @classmethod
    def from_values(cls, values: dict) -> "Params":
        """A snapshot from parameter values (lists become tuples; missing ones take defaults)."""
        v = {}
        for k, x in values.items():
            v[k] = tuple(x or ()) if param_table.BY_NAME[k].type in (param_table.STRINGS, param_table.DOUBLES) else x
        return cls(**v)

    def updated(self, changes) -> "Params":
        """The snapshot after applying rclpy Parameter objects ``changes``."""
        return self.from_values(dict(dataclasses.asdict(self), **{p.name: p.value for p in changes}))


Params = dataclasses.make_dataclass(
    "Params", [(p.name, object, dataclasses.field(default=p.python_default)) for p in param_table.TABLE],
    bases=(_Derived,), frozen=True, namespace={"__doc__": "One consistent snapshot of every parameter (field "
                                                           "names = parameter names; rbd_ros/node/param_table.py)."})
Params.__module__ = __name__


def parameter_value(value):
    """A Python value as an rcl_interfaces ParameterValue, typed as this node's
    parameters are: str, bool, a list of str, numbers (int or float) as doubles,
    and any other sequence (empty included) as a double array.  For clients
    that set the node's parameters (tests, the demo).  A ParameterValue passes as it is."""
    if isinstance(value, ParameterValue):
        return value
    if isinstance(value, str):
        return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    if isinstance(value, bool):
        return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    if isinstance(value, (int, float)):
        return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(value))
    value = list(value)
    if value and all(isinstance(x, str) for x in value):
        return ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=value)
    return ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                          double_array_value=[float(x) for x in value])


def declare(node) -> list:
    """Declare every parameter, each with a value (``ros2 param dump`` and ``get``: rclpy's
    get_parameters service answers nothing at all for a request naming a parameter that has
    no value).  An array parameter whose table default is its type (``Parameter.Type.X``)
    starts as an empty array of that type, unless an override (params file, ``-p``) gives
    it a value.  An override rclpy refuses (out of its range, wrong type) is replaced by
    the default; returns the reasons, one text each (the node logs them)."""
    errors = []
    for name, default, descriptor in PARAMETERS:
        if isinstance(default, Parameter.Type):
            _declare_empty_array(node, name, default, descriptor)
            continue
        try:
            node.declare_parameter(name, default, descriptor)
        except (InvalidParameterValueException, InvalidParameterTypeException) as e:
            errors.append(f"{name}: the value given at start-up is refused ({e}); using {default!r}")
            node.declare_parameter(name, default, descriptor, ignore_override=True)
    return errors


def startup_params(node, log, on_error) -> Params:
    """The snapshot at start-up: a scalar value the table refuses (from a params file or
    ``-p``) is said and replaced by its default; arrays are checked entry by entry by what
    uses them (start-up payloads, armature, gains), which name the entry."""
    for text in declare(node):
        log.error(f"parameter {text}")
        on_error(text)
    p = read(node)
    fixed = {}
    for q in param_table.TABLE:
        value = getattr(p, q.name)
        if isinstance(value, tuple):
            continue
        why = param_table.check(q.name, value)
        if why:
            log.error(f"parameter {why}; using {q.python_default!r}")
            on_error(why)
            fixed[q.name] = q.python_default
    return dataclasses.replace(p, **fixed) if fixed else p


def _declare_empty_array(node, name: str, ptype, descriptor) -> None:
    """rclpy 7.1 (Jazzy) cannot declare a typed empty array directly: it takes a ``[]``
    default for a byte array (then refuses a string or double array from a params file or
    ``ros2 param set``), and a parameter declared with its type alone has no value.  So:
    declare it with its type, writable; if no override set it, set a typed empty array;
    then apply the real descriptor (read-only ones become read-only only now)."""
    writable = copy.copy(descriptor)
    writable.read_only = False
    node.declare_parameter(name, ptype, writable)
    try:
        node.get_parameter(name)
    except ParameterUninitializedException:
        node.set_parameters([Parameter(name, ptype, [])])
    if descriptor.read_only:
        node.set_descriptor(name, descriptor)


def read(node) -> Params:
    values = {}
    for name, _, _ in PARAMETERS:
        try:
            values[name] = node.get_parameter(name).value
        except ParameterUninitializedException:  # joints: declared without a value
            values[name] = None
    return Params.from_values(values)
