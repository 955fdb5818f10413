#!/usr/bin/env bash
# The main job on a fresh machine: venv (scripts/venv.sh), then the closed loop on the
# bundled 7-dof arm: the MuJoCo robot driver (rbd_ros.sim) and the dynamics node wired
# like a robot with forward_command_controller; four phases (gravity hold; computed-torque
# tracking; a push felt by the momentum observer; no command: the arm falls), a table and
# a picture
# (demo_output/closed_loop.png in the repository unless --png is given).
#   scripts/demo.sh [--png PATH] [--rate DESIRED_HZ] [--no-plot]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(bash "$root/scripts/venv.sh" | tail -n 1)
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$((1 + $$ % 100))}
case " $* " in
  *" --png"*|*" --no-plot "*) exec "$venv/bin/python" -m rbd_ros.demo "$@" ;;
  *) exec "$venv/bin/python" -m rbd_ros.demo --png "$root/demo_output/closed_loop.png" "$@" ;;
esac
