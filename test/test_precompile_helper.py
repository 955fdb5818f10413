"""The precompile helper (``python -m rbd_ros.precompile``, which the node starts on a
cold first start): a Ctrl-C ends it at once without a traceback, and it never outlives
the process that started it (``--parent``: PR_SET_PDEATHSIG on Linux, a polling thread
everywhere).  Each helper here compiles into an empty numba cache of its own, so it is
really busy (or waiting for a cache entry) when the signal or its parent's death comes."""
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait(predicate, timeout, period=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(period)
    return predicate()


def _has_loaded(pid: int, library: str) -> bool:
    """``library`` is mapped into process ``pid`` (sentinel: it got that far)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return library in f.read()
    except OSError:
        return False


def test_sigint_during_a_compile_exits_quietly(tmp_path):
    """Ctrl-C to the process group during a cold compile (a terminal's, to ``rbd_precompile``
    or to a helper in the terminal's group): exit status 130, nothing on stdout or stderr
    (it printed ~100 lines of chained KeyboardInterrupt tracebacks)."""
    p = subprocess.Popen([sys.executable, "-m", "rbd_ros.precompile", "--quiet", "--step", "crba",
                          "--step", "aba"], env=_env(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # the first kernel is in the cache (so main() runs), the others are being compiled
        assert _wait(lambda: any(tmp_path.rglob("*.nbi")), 120), p.communicate(timeout=5)
        assert p.poll() is None, "the helper finished before the signal: the test proves nothing"
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130
    assert out == "" and err == "", (out, err)


def _middle(code: str, cache_dir):
    """A process that starts a helper (``code``, run in it) and prints the helper's pid."""
    p = subprocess.Popen([sys.executable, "-c", code], env=_env(cache_dir), stdout=subprocess.PIPE,
                         text=True, start_new_session=True)
    line = p.stdout.readline()
    assert line.strip().isdigit(), line
    return p, int(line)


def test_helper_ends_when_its_parent_is_killed(tmp_path):
    """The node is killed (SIGKILL: no clean-up of its own) while its helper compiles
    (ABA into an empty cache: ~10 s or more): the helper must end with it, not linger
    as an orphan."""
    code = ("import os, subprocess, sys, time\n"
            "h = subprocess.Popen([sys.executable, '-m', 'rbd_ros.precompile', '--quiet',"
            " '--parent', str(os.getpid()), '--step', 'aba'])\n"
            "print(h.pid, flush=True)\n"
            "time.sleep(300)\n")
    middle, helper = _middle(code, tmp_path)
    try:
        assert _wait(lambda: _has_loaded(helper, "llvmlite"), 60)   # it runs its step
        time.sleep(0.5)
        assert _alive(helper)
        middle.kill()
        middle.wait()
        assert _wait(lambda: not _alive(helper), 10), "the helper outlived its parent"
    finally:
        for pid in (helper,):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if middle.poll() is None:
            middle.kill()


def test_parent_check_without_prctl(tmp_path):
    """Where PR_SET_PDEATHSIG is not available, the polling thread alone ends the process
    once its parent is gone."""
    code = ("import os, subprocess, sys, time\n"
            "child = ('import os, time\\n'\n"
            "         'from rbd_ros.precompile import die_with_parent\\n'\n"
            "         'die_with_parent(os.getppid(), period=0.05, use_prctl=False)\\n'\n"
            "         'print(\"watching\", flush=True)\\n'\n"
            "         'time.sleep(300)\\n')\n"
            "h = subprocess.Popen([sys.executable, '-c', child])\n"
            "print(h.pid, flush=True)\n"
            "time.sleep(300)\n")
    middle, child = _middle(code, tmp_path)
    try:
        assert middle.stdout.readline().strip() == "watching"   # its parent check runs
        assert _alive(child)
        middle.kill()
        middle.wait()
        assert _wait(lambda: not _alive(child), 5), "the polling thread did not end the process"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
        if middle.poll() is None:
            middle.kill()
