#!/usr/bin/env bash
# The main job on a fresh machine: venv (scripts/venv.sh), then the dynamics node on
# the bundled 7-dof arm with a demo joint-state publisher; prints the torques
# streaming and one answered inverse-dynamics call, then exits.
#   scripts/demo.sh [--seconds N] [--robot NAME_OR_URDF]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(bash "$root/scripts/venv.sh" | tail -n 1)
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$((1 + $$ % 100))}
exec "$venv/bin/python" -m rbd_ros.node.demo "$@"
