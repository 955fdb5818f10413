#!/usr/bin/env bash
# Build rbd_ros_interfaces (ament_cmake + rosidl) with plain cmake and install it
# into a venv that holds the ROS 2 Jazzy build wheels (pip extra rbd_ros[ros-build]).
# The venv is the ament prefix: nothing needs sourcing afterwards.
# Skips (fast) when the installed copy was built from identical sources.
# Usage: scripts/build_interfaces.sh VENV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(cd "${1:?usage: build_interfaces.sh VENV}" && pwd)
src="$root/rbd_ros_interfaces"
build="${RBD_INTERFACES_BUILD_DIR:-$root/build/rbd_ros_interfaces}"
stamp="$venv/share/rbd_ros_interfaces/.rbd_ros_source_hash"

hash=$(cd "$src" && find . -type f \( -name '*.srv' -o -name '*.msg' -o -name 'CMakeLists.txt' -o -name 'package.xml' \) \
        | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ] \
   && "$venv/bin/python" -c 'import rbd_ros_interfaces.srv' 2>/dev/null; then
  echo "rbd_ros_interfaces: up to date in $venv" >&2
  exit 0
fi

cmake_bin=cmake
if [ -x "$venv/bin/cmake" ]; then cmake_bin="$venv/bin/cmake"; fi
export PATH="$venv/bin:$PATH"
export CMAKE_PREFIX_PATH="$venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
rm -rf "$build"; mkdir -p "$(dirname "$build")"
echo "rbd_ros_interfaces: building into $venv" >&2
{
  "$cmake_bin" -S "$src" -B "$build" -DCMAKE_INSTALL_PREFIX="$venv" \
      -DPython3_EXECUTABLE="$venv/bin/python3" -DBUILD_TESTING=OFF \
      -DCMAKE_BUILD_TYPE=Release
  "$cmake_bin" --build "$build" -j"$(nproc 2>/dev/null || echo 2)"
  "$cmake_bin" --install "$build"
} > "$build.log" 2>&1 || { tail -n 60 "$build.log" >&2; echo "rbd_ros_interfaces: build failed (full log: $build.log)" >&2; exit 1; }
"$venv/bin/python" -c 'from rbd_ros_interfaces.srv import InverseDynamics, ForwardDynamics, InverseDynamicsTrajectory, ForwardDynamicsTrajectory, SetPayload; from rbd_ros_interfaces.msg import EffortLimitViolation' \
  || { echo "rbd_ros_interfaces: installed but not importable from $venv" >&2; exit 1; }
echo "$hash" > "$stamp"
echo "rbd_ros_interfaces: installed into $venv" >&2
