#!/usr/bin/env bash
# The test command: sets up the venv (scripts/venv.sh) and runs the whole suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(bash "$root/scripts/venv.sh" | tail -n 1)
cd "$root"
exec "$venv/bin/python" -m pytest -q test "$@"
