"""Kinematic constraints: closed loops (and, later, contacts) on a kinematic tree.

``Constraint`` (constraint.py), the URDF ``<constraint>`` element (urdf_element.py),
the packed form the kernels read (packing.py, layout.py), the compiled kernels
(kinematics.py, dynamics.py, closure.py, solve.py), the public functions (api.py) and
their readable numpy twins (reference.py).  doc/constraints.md has the conventions.
"""
