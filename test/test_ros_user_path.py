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


NODE_ENTRY = [("-c", "import sys; from rbd_ros.node.main import main; sys.exit(main())"),
              ("-m", "rbd_ros.node")]
# what starting the node or the driver prints (nothing of it may appear)
STARTED = ("[INFO]", "[WARN]", "[ERROR]", "cannot start", "Traceback")


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["--ros-args", "-r", "__ns:=/x", "--", "--help"],
                                  ["--help", "--ros-args", "-p", "urdf_file:=rbd_arm7"]])
@pytest.mark.parametrize("entry", NODE_ENTRY, ids=["console_script", "module"])
def test_dynamics_node_help(entry, argv):
    res = run(entry, *argv)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("usage: ros2 run rbd_ros dynamics_node"), res.stdout
    for topic in ("joint_states", "robot_description", "~/gravity_torques", "~/effort_command",
                  "~/inverse_dynamics", "/diagnostics"):
        assert topic in res.stdout, topic
    assert "ros2 param" in res.stdout and "config/dynamics.yaml" in res.stdout and "doc/" in res.stdout
    for sign in STARTED:
        assert sign not in res.stdout + res.stderr, res.stdout + res.stderr


@pytest.mark.parametrize("entry", SIM_ENTRY, ids=["console_script", "module"])
def test_sim_driver_help_needs_neither_ros_nor_mujoco(without_mujoco, entry):
    res = run(entry, "--help", pythonpath=[without_mujoco])
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("usage: ros2 run rbd_ros sim_driver"), res.stdout
    for word in ("joint_states", "effort_command", "urdf_file", "command_timeout", "pip install mujoco"):
        assert word in res.stdout, word
    for sign in STARTED:
        assert sign not in res.stdout + res.stderr, res.stdout + res.stderr


@pytest.mark.parametrize("module, prog", [("rbd_ros.node.main", "dynamics_node"),
                                          ("rbd_ros.sim.driver", "sim_driver")])
def test_help_imports_neither_rclpy_nor_the_dynamics(module, prog):
    """Nothing heavy is imported for --help: not rclpy, numba, MuJoCo or rbd_ros.core."""
    code = (f"import sys; from {module} import main; rc = main([{prog!r}, '--help']); "
            "print('IMPORTED', sorted(m for m in ('rclpy', 'numba', 'mujoco', 'rbd_ros.core') "
            "if m in sys.modules)); sys.exit(rc)")
    res = run(("-c", code))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"usage: ros2 run rbd_ros {prog}"), res.stdout
    assert "IMPORTED []" in res.stdout, res.stdout
