#!/usr/bin/env bash
# The test command: sets up the venv (scripts/venv.sh) and runs the whole suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(bash "$root/scripts/venv.sh" | tail -n 1)
cd "$root"
# every test oracle (Pinocchio + example-robot-data, MuJoCo, hypothesis) must be installed
# here: a missing one is an error, never a skip (test/oracles.py; under colcon test they skip)
export RBD_REQUIRE_ORACLES=1
exec "$venv/bin/python" -m pytest -q test "$@"
