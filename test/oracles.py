"""Which test oracles are installed, and what a missing one does to a test run.

The oracles: Pinocchio with the example-robot-data URDFs (test/oracle.py), MuJoCo,
hypothesis and toppra; and two test tools treated the same way: rosbags (rbd_identify's bag
reader, for its tests) and import-linter (the layer check).  ``scripts/test.sh`` (and
so CI) sets ``RBD_REQUIRE_ORACLES=1``: every oracle must be there, and a missing one
stops the run before any test (a usage error naming it).  Without it -- ``colcon
test`` on a ROS install, where rosdep installs the oracles that have a key
(package.xml) and not the others -- a test whose oracle is missing is skipped, its
reason naming the oracle and how to install it.  test/conftest.py wires this into
pytest; test/colcon_like.py runs the suite that way.
"""
from __future__ import annotations

import importlib.util
import os

# import name -> what it is and how to get it
ORACLES = {
    "pinocchio": "Pinocchio (rosdep key pinocchio, or pip install pin)",
    "example_robot_data": "the example-robot-data URDFs (pip install example-robot-data, or set "
                          "EXAMPLE_ROBOT_DATA_DIR; no rosdep key)",
    "mujoco": "MuJoCo (pip install mujoco; no rosdep key)",
    "hypothesis": "hypothesis (rosdep key python3-hypothesis, or pip install hypothesis)",
    "rosbags": "rosbags, rbd_identify's rosbag2 reader (pip install rosbags; no rosdep key)",
    "importlinter": "import-linter, the import layer check (pip install import-linter; no rosdep key)",
    "toppra": "toppra, the reference TOPP-RA for rbd.retime (pip install toppra; no rosdep key "
              "but the pip-only python3-toppra-pip)",
    # not an oracle: the core's friction QP solver, a pip dependency without a rosdep key
    "daqp": "DAQP, the QP solver of contacts with friction (pip install daqp; no rosdep key)",
}

# test files that use an oracle only in a subprocess, so no import of theirs fails here
NEEDED_IN_SUBPROCESS = {
    "test_bench_quick.py": ("pinocchio", "example_robot_data"),
}


def required() -> bool:
    """Every oracle must be installed (``RBD_REQUIRE_ORACLES=1``, scripts/test.sh)."""
    return os.environ.get("RBD_REQUIRE_ORACLES", "") not in ("", "0")


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _robot_data_found() -> bool:
    if not _importable("pinocchio"):
        return False
    try:
        import oracle  # the test helper (it imports pinocchio): only when asked
        oracle.robots_dir()
    except (ImportError, FileNotFoundError):
        return False
    return True


_installed: dict = {}


def installed(name: str) -> bool:
    """Whether oracle ``name`` (a key of ORACLES) is there (the robot data: found)."""
    if name not in _installed:
        _installed[name] = _robot_data_found() if name == "example_robot_data" else _importable(name)
    return _installed[name]


def not_installed(names=ORACLES) -> list:
    return [n for n in names if not installed(n)]


def missing_in(exc: BaseException):
    """The ORACLES text of the oracle whose absence raised ``exc`` (or an exception it was
    raised from or while handling), else None: a ModuleNotFoundError for one of their
    modules, or test/oracle.py's FileNotFoundError for the example-robot-data folder."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in ORACLES:
            return ORACLES[exc.name.split(".")[0]]
        if isinstance(exc, FileNotFoundError) and "example-robot-data" in str(exc):
            return ORACLES["example_robot_data"]
        exc = exc.__cause__ or exc.__context__
    return None
