"""The test harness's own guarantees: each pytest process (each xdist worker) gets a
ROS domain no other holds (conftest.claim_domain_id), and Recorder.wait_stamp returns
the message carrying a stamp, or None once its timeout has passed."""
import os
import subprocess
import sys
import threading
import time

import conftest
from ros_harness import Recorder, joint_state, next_stamp, stamp_key

HERE = os.path.dirname(os.path.abspath(__file__))

# a process that claims a domain (preferring argv[1]), prints it, holds it until stdin closes
_CLAIM = """
import os, sys
os.environ["RBD_TEST_DOMAIN_ID"] = "1"          # (no claim at import)
import conftest
print(conftest.claim_domain_id(int(sys.argv[1])), flush=True)
sys.stdin.read()
"""


def _claimer(prefer: int, env=None):
    p = subprocess.Popen([sys.executable, "-c", _CLAIM, str(prefer)], cwd=HERE, env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    return p, int(p.stdout.readline())


def test_two_processes_preferring_one_domain_get_two():
    prefer = int(os.environ["RBD_TEST_DOMAIN_ID"]) % 100 + 1      # not this process's own
    a, da = _claimer(prefer)
    b, db = _claimer(prefer)
    try:
        assert da != db and {da, db} <= set(conftest.DOMAIN_IDS), (da, db)
        assert int(os.environ["RBD_TEST_DOMAIN_ID"]) not in (da, db)
    finally:
        for p in (a, b):
            p.stdin.close()
            p.wait(30)


def test_an_xdist_worker_claims_a_domain_of_its_own():
    """A worker inherits the controller's RBD_TEST_DOMAIN_ID (held by this process here)."""
    mine = os.environ["RBD_TEST_DOMAIN_ID"]
    env = dict(os.environ, PYTEST_XDIST_WORKER="gw7", RBD_TEST_DOMAIN_ID=mine)
    res = subprocess.run([sys.executable, "-c", "import os, conftest; print(os.environ['ROS_DOMAIN_ID'])"],
                         cwd=HERE, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() != mine, (res.stdout, mine)
    env.pop("PYTEST_XDIST_WORKER")          # not a worker: the id given is used
    res = subprocess.run([sys.executable, "-c", "import os, conftest; print(os.environ['ROS_DOMAIN_ID'])"],
                         cwd=HERE, env=env, capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == mine, (res.stdout, res.stderr)


def test_wait_stamp_waits_for_its_message_and_gives_up_after_the_timeout():
    rec = Recorder()
    other, wanted = joint_state(["a"], [0.0]), joint_state(["a"], [1.0])
    rec(other)
    t0 = time.monotonic()
    assert rec.wait_stamp(next_stamp(), 0.2) is None                 # never sent
    assert time.monotonic() - t0 >= 0.2
    threading.Timer(0.1, rec, (wanted,)).start()
    got = rec.wait_stamp(wanted.header.stamp, 30.0)
    assert got is not None and got[0] is wanted and stamp_key(got[0].header.stamp) == stamp_key(wanted.header.stamp)
    assert rec.wait_stamp(other.header.stamp, 0.0, start=1) is None   # only from index 1 on
    assert rec.wait_stamp(other.header.stamp, 0.0)[0] is other
