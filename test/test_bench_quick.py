"""The benchmark script runs and agrees with Pinocchio (quick mode).

Not a speed test: nothing here looks at the timings."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_quick_runs_and_agrees():
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "bench.py"), "--quick"],
                       capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert p.returncode == 0, f"bench --quick exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    out = p.stdout
    for fn in ("rnea", "gravity", "bias", "crba", "forward_dynamics", "aba",
               "rneaInParallel", "abaInParallel", "memory:", "model build"):
        assert fn in out, f"{fn!r} missing from the benchmark output:\n{out}"
    assert "FAIL" not in out
