"""The robots bundled with rbd_ros and where a robot description
comes from: the node's and the sim driver's ``urdf_file`` / ``robot_description``
parameters.  No dynamics here (data and file lookup only; imports nothing of rbd_ros).

Bundled robots (``<name>.urdf`` in this folder):

* ``rbd_arm7``: a 7-dof torque-controlled arm (a tree; the default robot);
* ``fourbar``: a planar crank-rocker four-bar linkage, one actuated joint (``crank``),
  one loop closure;
* ``delta``: a three-arm delta robot, three actuated joints (``shoulder1..3``), two
  loop closures.

The two mechanisms state their loop closures with ``<constraint>`` elements
(doc/constraints.md) and their actuated joints with ``<transmission>`` elements;
``scripts/make_mechanisms.py`` writes them and says where their numbers come from."""
from __future__ import annotations

import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def bundled_robots_dir() -> str:
    """Where the bundled robots are: ``share/rbd_ros/urdf`` of the installed package when
    the ament index knows rbd_ros (a colcon/ROS install), else this package's folder
    (pip/venv users)."""
    try:
        # optional: ament_index_python exists only in a ROS environment
        from ament_index_python.packages import get_package_share_directory
        share = os.path.join(get_package_share_directory("rbd_ros"), "urdf")
        if os.path.isdir(share):
            return share
    except (ImportError, LookupError, OSError, ValueError):
        pass  # no ament index (AMENT_PREFIX_PATH unset) or rbd_ros not in it
    return PACKAGE_DIR


def bundled_robot_path(name: str) -> str:
    """Path of a robot shipped with rbd_ros (``rbd_arm7``, ``fourbar``, ``delta``)."""
    return os.path.join(bundled_robots_dir(), name + ".urdf")


def bundled_robots() -> list:
    """Names of the bundled robots."""
    return sorted(f[:-5] for f in os.listdir(bundled_robots_dir()) if f.endswith(".urdf"))


def resolve_urdf_file(value: str) -> str:
    """``urdf_file`` parameter -> a file path: an existing path, or the name of a bundled
    robot.  ValueError naming the bundled robots otherwise."""
    if os.path.isfile(value):
        return value
    bundled = bundled_robot_path(value)
    if os.sep not in value and os.path.isfile(bundled):
        return bundled
    raise ValueError(f"urdf_file: no such file {value!r} (and no bundled robot of that name; bundled: "
                     f"{', '.join(bundled_robots())})")


def read_description(urdf_file: str, robot_description: str):
    """(URDF text, where it came from) from the ``robot_description`` parameter (XML, wins)
    or the ``urdf_file`` one (a path or a bundled robot's name), or None if both are empty.
    Raises ValueError/OSError if urdf_file names no readable file."""
    if robot_description.strip():
        return robot_description, "parameter robot_description"
    if urdf_file.strip():
        path = resolve_urdf_file(urdf_file.strip())
        with open(path) as f:
            return f.read(), f"file {path}"
    return None
