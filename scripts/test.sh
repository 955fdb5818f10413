#!/usr/bin/env bash
# The test command: sets up the venv (scripts/venv.sh: it also fills numba's cache, so
# no worker compiles) and runs the whole suite in RBD_TEST_WORKERS pytest-xdist worker
# processes (default 2; 0: in this process), a test file per worker at a time
# (--dist loadfile: a module's node process is started once; the slowest files first,
# test/conftest.py's SLOW_FILES).  Arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(bash "$root/scripts/venv.sh" | tail -n 1)
cd "$root"
# every test oracle (Pinocchio + example-robot-data, MuJoCo, hypothesis) must be installed
# here: a missing one is an error, never a skip (test/oracles.py; under colcon test they skip)
export RBD_REQUIRE_ORACLES=1
workers=${RBD_TEST_WORKERS:-2}
xdist=()
if [ "$workers" != 0 ]; then
  xdist=(-n "$workers" --dist loadfile --no-loadscope-reorder)
fi
exec "$venv/bin/python" -m pytest -q "${xdist[@]}" test "$@"
