"""A missing test oracle (test/oracles.py): skipped with the reason under ``colcon test``,
a hard error when ``RBD_REQUIRE_ORACLES=1`` (scripts/test.sh, CI).  Each case runs
pytest in a subprocess where an oracle cannot be imported: a plugin (``-p``,
test/hide_modules.py) puts a finder first on ``sys.meta_path`` that raises
ModuleNotFoundError for the hidden modules, as for a package that is not installed."""
import os
import shutil
import subprocess
import sys

import oracles
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "test")


@pytest.fixture
def hider(tmp_path):
    """A folder with the hide_modules plugin (test/hide_modules.py), for PYTHONPATH."""
    shutil.copy(os.path.join(HERE, "hide_modules.py"), tmp_path / "hide_oracles.py")
    return tmp_path


def pytest_run(hider, args, hide, require, cwd=ROOT):
    env = dict(os.environ, RBD_TEST_HIDE_MODULES=",".join(hide))
    env["PYTHONPATH"] = os.pathsep.join([str(hider), ROOT, env.get("PYTHONPATH", "")])
    env.pop("RBD_REQUIRE_ORACLES", None)
    if require:
        env["RBD_REQUIRE_ORACLES"] = "1"
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "hide_oracles", "-p", "no:cacheprovider",
                          "-q", "-rs", *args], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=600)
    return res.returncode, res.stdout + res.stderr


# suite files that import Pinocchio when collected, one that runs Pinocchio in a
# subprocess (the benchmark), and one that needs no oracle (the sentinel: tests do run)
SUITE = ["test/test_oracle_self.py", "test/test_core_robot_terms.py", "test/test_bench_quick.py",
         "test/test_packaging.py"]


def test_colcon_like_run_skips_what_needs_a_missing_oracle(hider):
    code, out = pytest_run(hider, SUITE, hide=["pinocchio"], require=False)
    assert code == 0, out
    assert "6 passed, 3 skipped" in out, out
    for name in ("test_oracle_self.py", "test_core_robot_terms.py", "test_bench_quick.py"):
        line, = [x for x in out.splitlines() if x.startswith("SKIPPED") and name in x]
        assert "test oracle not installed: Pinocchio (rosdep key pinocchio" in line, line


def test_required_oracles_missing_stop_the_run(hider):
    code, out = pytest_run(hider, SUITE, hide=["pinocchio"], require=True)
    assert code == pytest.ExitCode.USAGE_ERROR, out
    assert "RBD_REQUIRE_ORACLES=1" in out and "missing: Pinocchio" in out, out
    assert "passed" not in out and "skipped" not in out, out


def test_required_oracles_present_run_as_usual(hider):
    missing = oracles.not_installed()
    if missing:     # a ROS install (colcon test): rosdep does not give these; the case needs them all
        pytest.skip("needs every test oracle; not installed: " + "; ".join(oracles.ORACLES[m] for m in missing))
    code, out = pytest_run(hider, ["test/test_packaging.py"], hide=[], require=True)
    assert code == 0 and "6 passed" in out, out


RUNTIME_TESTS = '''
import pytest


def test_sentinel():
    pass


def test_imports_an_oracle_when_it_runs():
    import mujoco  # noqa: F401


@pytest.fixture
def robot_data():
    # what test/oracle.py's robots_dir raises when the URDFs are nowhere
    raise FileNotFoundError("example-robot-data robots folder not found (pip install example-robot-data)")


def test_needs_the_robot_data(robot_data):
    pass


def test_a_missing_module_that_is_no_oracle():
    import rbd_ros_no_such_module  # noqa: F401
'''


@pytest.mark.parametrize("require", [False, True])
def test_oracles_missing_while_tests_run(hider, tmp_path, require):
    """Oracles missing inside a test or a fixture (not at import): skipped, and only
    those; with RBD_REQUIRE_ORACLES=1 the run stops first."""
    folder = tmp_path / "suite"
    folder.mkdir()
    for name in ("conftest.py", "oracles.py"):
        shutil.copy(os.path.join(HERE, name), folder / name)
    (folder / "test_runtime.py").write_text(RUNTIME_TESTS)
    code, out = pytest_run(hider, [str(folder)], hide=["mujoco"], require=require, cwd=str(tmp_path))
    if require:
        assert code == pytest.ExitCode.USAGE_ERROR and "MuJoCo" in out, out
        return
    assert code == pytest.ExitCode.TESTS_FAILED, out
    assert "1 failed, 1 passed, 2 skipped" in out, out
    assert "No module named 'rbd_ros_no_such_module'" in out, out   # still a failure
    assert "test oracle not installed: MuJoCo (pip install mujoco" in out, out
    assert "test oracle not installed: the example-robot-data URDFs" in out, out


# module -> rosdep key, for what the tests import
ROSDEP_KEY = {"numpy": "python3-numpy", "numba": "python3-numba", "yaml": "python3-yaml",
              "pytest": "python3-pytest", "hypothesis": "python3-hypothesis", "pinocchio": "pinocchio",
              "urdf_parser_py": "urdfdom_py", "scipy": "python3-scipy"}


def test_package_xml_declares_every_test_import_that_has_a_rosdep_key():
    """What colcon test needs, rosdep installs: every module a test file imports is the
    standard library, rbd_ros, a test helper, or a package.xml dependency -- except the
    oracles without a rosdep key, which oracles.py skips under colcon."""
    import ast
    import xml.etree.ElementTree as ET

    deps = {e.text for e in ET.parse(os.path.join(ROOT, "package.xml")).getroot()
            if e.tag.endswith("depend")}
    helpers = {f[:-3] for f in os.listdir(HERE) if f.endswith(".py")}
    no_key = {m for m, text in oracles.ORACLES.items() if "no rosdep key" in text}
    seen = set()
    for f in sorted(os.listdir(HERE)):
        if not f.endswith(".py"):
            continue
        with open(os.path.join(HERE, f)) as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip":
                names = [node.args[0].value]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in helpers or top in ("rbd_ros", "__future__"):
                    continue
                seen.add(top)
                if top in no_key:
                    continue
                key = ROSDEP_KEY.get(top, top)
                assert key in deps, f"{f} imports {top}: package.xml declares no {key}"
    assert {"pinocchio", "hypothesis", "yaml", "mujoco", "rclpy"} <= seen   # the scan works
