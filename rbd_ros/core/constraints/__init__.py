"""Kinematic constraints: closed loops (and, later, contacts) on a kinematic tree.

``Constraint`` and the URDF ``<constraint>`` element live in ``model/`` (they describe the model);
the packed form the kernels read (packing.py, layout.py), the compiled kernels
(kinematics.py, dynamics.py, closure.py, solve.py), the public functions (api.py) and
their readable numpy twins (reference.py).  doc/constraints.md has the conventions.
"""
