#!/usr/bin/env bash
# Create (or reuse) the project venv at $RBD_VENV (default: .venv) with the core,
# the test oracle (Pinocchio + example-robot-data), the ROS 2 Jazzy wheels from
# PyPI and the build tools for rbd_ros_interfaces; then build the interfaces into it
# and precompile the numba kernels (rbd_precompile).
# Idempotent: a second run only re-checks.  Prints the venv path last.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${RBD_VENV:-$root/.venv}
py=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
fi
stamp="$venv/.rbd_ros_installed"
if [ ! -f "$stamp" ] || [ "$root/setup.py" -nt "$stamp" ]; then
  # under a lock on the source tree: the numba lower-bound job (.ci/run starts it
  # beside this) installs the same tree into its venv, and both write rbd_ros.egg-info
  flock "$root" "$venv/bin/pip" install -q -e "$root[test,ros-build]"
  touch "$stamp"
fi
# build the interfaces and compile the numba kernels at once: the kernels need no
# interfaces, and the cmake build leaves a core idle in its serial steps
build=
if [ -d "$root/rbd_ros_interfaces" ]; then
  bash "$root/scripts/build_interfaces.sh" "$venv" &
  build=$!
fi
# compile the numba kernels into their cache now, so that the first test run or
# node start does not (a minute or two of CPU from an empty cache; ~1 s when warm)
if ! "$venv/bin/python" -m rbd_ros.precompile --quiet >&2; then
  [ -z "$build" ] || wait "$build" || true
  echo "venv.sh: rbd_precompile failed" >&2
  exit 1
fi
[ -z "$build" ] || wait "$build"
echo "$venv"
