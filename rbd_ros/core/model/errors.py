"""Exceptions and physical bounds shared by every way into a model (URDF, API, node).

``BOUNDS`` are far beyond any real robot and small enough that no in-bounds
model can overflow inside the algorithms (products such as m |r|^2 |v|^2 stay
below ~1e60 for arguments up to 1e6).  The URDF parser, ``Model.with_payload``,
``Model.with_armature``, ``Model.with_gravity`` and the node apply the same ones.
"""


class ModelError(ValueError):
    """The robot description cannot be turned into a model (names the link or joint)."""


# Magnitude bounds on the model's numbers (SI units)
BOUNDS = {
    "length": 1e6,        # |x|, |y|, |z| of any <origin> xyz, a payload's com (m)
    "angle": 1e6,         # |r|, |p|, |y| of any <origin> rpy (rad)
    "mass": 1e9,          # link or payload mass (kg)
    "inertia": 1e12,      # |ixx| ... |izz| of a link or payload (kg m^2)
    "multiplier": 1e6,    # |mimic multiplier|
    "offset": 1e6,        # |mimic offset| (rad or m)
    "gravity": 1e4,       # |gravity| per component (m/s^2)
    "armature": 1e12,     # rotor inertia reflected to a joint (kg m^2 or kg)
    "damping": 1e9,       # URDF <dynamics damping> (N m s/rad or N s/m)
    "friction": 1e9,      # URDF <dynamics friction> (N m or N)
}
