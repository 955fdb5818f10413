"""The command-line path a ROS user takes: ``ros2 run rbd_ros sim_driver`` (and
``sim.launch.py``, which runs it) on a machine without MuJoCo."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# run the way `ros2 run` / the console scripts do (the entry point function), and as a module
SIM_ENTRY = [("-c", "import sys; from rbd_ros.sim.driver import main; sys.exit(main())"),
             ("-m", "rbd_ros.sim")]


def run(python_args, *argv, pythonpath=(), timeout=60):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), ROOT, env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, *python_args, *argv], env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def without_mujoco(tmp_path):
    """A PYTHONPATH entry whose ``mujoco`` package fails to import as a missing one does
    (ModuleNotFoundError), with a text of its own to prove it was this one."""
    pkg = tmp_path / "mujoco"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'mujoco' (hidden by the test)\", name='mujoco')\n")
    return tmp_path


@pytest.mark.parametrize("entry", SIM_ENTRY, ids=["console_script", "module"])
def test_sim_driver_without_mujoco_says_what_to_install(without_mujoco, entry):
    res = run(entry, "--ros-args", "-p", "urdf_file:=rbd_arm7", pythonpath=[without_mujoco])
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "hidden by the test" in out, out        # the import really failed
    assert "Traceback" not in out, out
    assert "pip install mujoco" in out and "'.[sim]'" in out, out
    assert len(out.strip().splitlines()) == 1, out
