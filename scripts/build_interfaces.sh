#!/usr/bin/env bash
# Build rbd_ros_interfaces (ament_cmake + rosidl) with plain cmake and install it
# into a venv that holds the ROS 2 Jazzy build wheels (pip extra rbd_ros[ros-build]).
# The venv is the ament prefix: nothing needs sourcing afterwards.
# Skips (fast) when the installed copy was built from identical sources.
# A cache of built installs (RBD_INTERFACES_CACHE, default ~/.cache/rbd_ros/interfaces;
# empty: none) keyed by the sources and by every distribution in the venv (the ROS
# build wheels, cmake, Python): a fresh venv with the same key (CI's fresh clone, a new
# worktree) gets the installed files copied instead of a build of a few minutes; any
# trouble with the cache falls back to the build.
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

verify() {
  "$venv/bin/python" -c 'from rbd_ros_interfaces.srv import InverseDynamics, ForwardDynamics, InverseDynamicsTrajectory, ForwardDynamicsTrajectory, SetPayload; from rbd_ros_interfaces.msg import EffortLimitViolation'
}

cache=${RBD_INTERFACES_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/rbd_ros/interfaces}
tarball=
if [ -n "$cache" ]; then
  tools=$("$venv/bin/python" -c 'import sys, importlib.metadata as m
names = sorted({f"{d.metadata['"'"'Name'"'"']}=={d.version}" for d in m.distributions()
                if d.metadata["Name"] and not d.metadata["Name"].lower().replace("_", "-").startswith("rbd-ros")})
print(sys.version, *names)' | sha256sum | cut -c1-16)
  tarball="$cache/$hash-$tools.tar.gz"
  if [ -f "$tarball" ]; then
    # the files as installed, with the prefix they were built for (.rbd_prefix) replaced by this venv's
    if tar -xzf "$tarball" -C "$venv" \
       && old=$(cat "$venv/.rbd_prefix") && rm -f "$venv/.rbd_prefix" \
       && { [ "$old" = "$venv" ] || tar -tzf "$tarball" | grep -v '/$' | (cd "$venv" && xargs grep -IlF "$old" 2>/dev/null || true) \
            | (cd "$venv" && xargs -r sed -i "s#$old#$venv#g"); } \
       && verify 2>/dev/null; then
      echo "$hash" > "$stamp"
      echo "rbd_ros_interfaces: installed into $venv from the build cache ($tarball)" >&2
      exit 0
    fi
    echo "rbd_ros_interfaces: the build cache $tarball did not work: building" >&2
  fi
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
verify || { echo "rbd_ros_interfaces: installed but not importable from $venv" >&2; exit 1; }
echo "$hash" > "$stamp"
echo "rbd_ros_interfaces: installed into $venv" >&2
if [ -n "$tarball" ] && mkdir -p "$cache" 2>/dev/null; then
  # the installed files (cmake's manifest), relative to the venv, and the prefix; the
  # newest 4 builds are kept
  tmp=$(mktemp -d)
  echo "$venv" > "$tmp/.rbd_prefix"
  if sed "s#^$venv/##" "$build/install_manifest.txt" > "$tmp/files" \
     && tar -czf "$tmp/c.tar.gz" -C "$venv" -T "$tmp/files" -C "$tmp" .rbd_prefix \
     && mv -f "$tmp/c.tar.gz" "$tarball"; then
    ls -t "$cache"/*.tar.gz 2>/dev/null | tail -n +5 | xargs -r rm -f
  fi
  rm -rf "$tmp"
fi
