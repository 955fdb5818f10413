"""The test suite as ``colcon test --packages-select rbd_ros`` runs it on a ROS install,
reproduced in the venv (issue 22, item 8; no ROS install here):

* pytest runs from the package's source folder (colcon's cwd) with colcon's options
  (``--tb=short``, a JUnit XML file, the cache in the build folder: ``PYTEST_ADDOPTS``);
* ``RBD_REQUIRE_ORACLES`` is unset: a missing oracle or test tool skips (oracles.py);
* the installed share tree: ``setup.py install_data`` into a temporary prefix (what
  ``colcon build`` installs: the ament index entry, ``share/rbd_ros/{urdf,launch,config}``)
  first on ``AMENT_PREFIX_PATH``, so ``rbd_ros.robots`` resolves the bundled URDFs there;
* every optional package that rosdep does not install cannot be imported
  (``hidden_modules()``: the pip extras of setup.py whose rosdep key package.xml does
  not declare, or that have none; hide_modules.py).

Not reproduced: the example-robot-data URDFs stay findable (pip's ``pin`` and
``example-robot-data`` share the cmeel prefix test/oracle.py looks in), so the panda tests
run instead of skipping (test_oracle_skips.py checks that skip); rclpy and the messages are
the PyPI wheels, not a ROS install's.

    python test/colcon_like.py [pytest arguments]      # default: the whole suite (test/)

prints pytest's output and exits with its code; ``run()`` does the same for a test.
"""
from __future__ import annotations

import ast
import contextlib
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "test")

# the pip distributions of setup.py's extras -> (import name, rosdep key or None)
DISTRIBUTIONS = {
    "pytest": ("pytest", "python3-pytest"),
    "pin": ("pinocchio", "pinocchio"),
    "example-robot-data": ("example_robot_data", None),
    "mujoco": ("mujoco", None),
    "hypothesis": ("hypothesis", "python3-hypothesis"),
    "matplotlib": ("matplotlib", "python3-matplotlib"),
    "ruff": ("ruff", None),
    "import-linter": ("importlinter", None),
    "scipy": ("scipy", "python3-scipy"),
    "rosbags": ("rosbags", None),
    "tqdm": ("tqdm", "python3-tqdm"),
    "threadpoolctl": ("threadpoolctl", None),
    "toppra": ("toppra", None),          # its rosdep key python3-toppra-pip is pip-only
    "mypy": ("mypy", None),              # the static type check (.ci/run); no rosdep key
    "pytest-xdist": ("xdist", None),     # scripts/test.sh's two workers; colcon test runs plain pytest
}
# the extras a ROS install could have through rosdep (not "ros", "ros-build": the ROS wheels
# stand in for the ROS install itself)
EXTRAS = ("test", "ident", "sim", "demo")


def _requirement_name(req: str) -> str:
    for sep in ("[", "=", ">", "<", "!", "~", ";", " "):
        req = req.split(sep)[0]
    return req.strip()


def extras_distributions() -> set:
    """Names of the distributions in setup.py's EXTRAS (read with ast: setup.py is not imported)."""
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            names[node.targets[0].id] = node.value

    def strings(node):
        if isinstance(node, ast.List):
            return [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if isinstance(node, ast.Name):
            return strings(names[node.id])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return strings(node.left) + strings(node.right)
        raise ValueError(f"setup.py: cannot read {ast.dump(node)}")

    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    extras = next(k.value for k in call.keywords if k.arg == "extras_require")
    out = set()
    for key, value in zip(extras.keys, extras.values):
        if key.value in EXTRAS:
            out |= {_requirement_name(r) for r in strings(value)}
    return out


def declared_keys() -> set:
    """Every dependency key of package.xml."""
    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    return {e.text for e in root if e.tag.endswith("depend")}


def hidden_modules() -> list:
    """Import names of the extras' distributions that rosdep does not install (no key, or a
    key package.xml does not declare).  KeyError for a distribution DISTRIBUTIONS lacks."""
    keys = declared_keys()
    out = []
    for dist in sorted(extras_distributions()):
        module, key = DISTRIBUTIONS[dist]
        if key is None or key not in keys:
            out.append(module)
    return out


def install_share(prefix: str) -> None:
    """setup.py's data_files installed under ``prefix`` (what colcon build puts in
    install/rbd_ros/share)."""
    subprocess.run([sys.executable, "-W", "ignore", "setup.py", "-q", "install_data", "-d", prefix], cwd=ROOT,
                   check=True, capture_output=True, timeout=300)


def environment(prefix: str, work: str, hidden=None) -> dict:
    """The environment of a colcon-like pytest run (module docstring)."""
    env = dict(os.environ)
    env.pop("RBD_REQUIRE_ORACLES", None)
    env.pop("RBD_TEST_DOMAIN_ID", None)         # a domain of its own (conftest.py)
    for k in [k for k in env if k.startswith("PYTEST_XDIST_")]:
        env.pop(k)                              # run from an xdist worker: colcon runs no worker
    env["AMENT_PREFIX_PATH"] = os.pathsep.join([prefix, sys.prefix] + list(
        filter(None, env.get("AMENT_PREFIX_PATH", "").split(os.pathsep))))
    hidden = hidden_modules() if hidden is None else hidden
    env["RBD_TEST_HIDE_MODULES"] = ",".join(hidden)
    env["PYTHONPATH"] = os.pathsep.join([HERE] + list(filter(None, env.get("PYTHONPATH", "").split(os.pathsep))))
    env["PYTEST_ADDOPTS"] = (f"--tb=short --junit-xml={work}/pytest.xml --junit-prefix=rbd_ros "
                             f"-o cache_dir={work}/.pytest_cache -p hide_modules -rs"
                             # a hidden plugin is not installed: pytest must not load its entry points
                             + (" -p no:xdist -p no:xdist.looponfail" if "xdist" in hidden else ""))
    return env


@contextlib.contextmanager
def session(hidden=None):
    """(prefix, environment) of a colcon-like run: the share tree installed into a temporary
    prefix (removed afterwards) and the environment (module docstring)."""
    with tempfile.TemporaryDirectory(prefix="rbd_colcon_like_") as work:
        prefix = os.path.join(work, "install")
        install_share(prefix)
        yield prefix, environment(prefix, work, hidden)


def run(args, hidden=None, capture=True, timeout=None):
    """(return code, output or None) of ``python -m pytest args`` run as colcon test would."""
    with session(hidden) as (_, env):
        res = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env, capture_output=capture,
                             text=True, timeout=timeout)
    return res.returncode, (res.stdout + res.stderr) if capture else None


if __name__ == "__main__":
    print(f"colcon-like run: hidden {', '.join(hidden_modules())}; RBD_REQUIRE_ORACLES unset", file=sys.stderr)
    sys.exit(run(sys.argv[1:] or ["test"], capture=False)[0])
