#!/usr/bin/env bash
# The whole suite (scripts/test.sh) run again and again under `stress --cpu 2` (Debian
# package stress), as before a release (doc/testing.md): no test may depend on the
# machine's speed.  RBD_STRESS_RUNS runs (default 5), none started after
# RBD_STRESS_UNTIL (anything `date -d` reads; default: no limit).  Each run's log goes to
# RBD_STRESS_LOGS (default: a new directory under /tmp); one line per run: its number,
# exit status, wall time and the load average as it ended.  Extra arguments go to
# scripts/test.sh.  Exit status: 0 if every run passed, else 1.  The stress processes
# (their own process group) end with this script, however it ends.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${RBD_STRESS_RUNS:-5}
until_s=
if [ -n "${RBD_STRESS_UNTIL:-}" ]; then until_s=$(date -d "$RBD_STRESS_UNTIL" +%s); fi
logs=${RBD_STRESS_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/rbd_stress_XXXXXX")}
mkdir -p "$logs"
command -v stress > /dev/null || { echo "stress_suite.sh: needs stress (apt-get install stress)" >&2; exit 2; }

setsid stress --cpu 2 > /dev/null 2>&1 < /dev/null &
hog=$!
trap 'kill -- -"$hog" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM

echo "stress --cpu 2 running; logs in $logs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
failed=0
done_runs=0
for ((k = 1; k <= runs; k++)); do
  if [ -n "$until_s" ] && [ "$(date +%s)" -ge "$until_s" ]; then
    echo "RBD_STRESS_UNTIL reached: no run $k"
    break
  fi
  t0=$SECONDS
  rc=0
  bash "$root/scripts/test.sh" "$@" > "$logs/run$k.log" 2>&1 || rc=$?
  done_runs=$k
  [ "$rc" = 0 ] || failed=$((failed + 1))
  echo "run $k: exit $rc, $((SECONDS - t0)) s, load average $(cut -d' ' -f1-3 /proc/loadavg), $(tail -n 1 "$logs/run$k.log")"
done
echo "$done_runs runs under stress --cpu 2, $failed failed"
[ "$failed" = 0 ]
