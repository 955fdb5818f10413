"""Compile every kernel ahead of time into numba's on-disk cache.

    python -m rbd_ros.precompile [--jobs 2] [--quiet] [--step NAME ...] [--install-tree DIR]
                                                           (console script: rbd_precompile)

numba compiles each kernel on its first call and caches the machine code
(``__pycache__`` next to the sources, or ``NUMBA_CACHE_DIR``).  Run this once after
an install (``scripts/venv.sh`` and CI do) so that the first ``ros2 launch``, test
run or script starts warm instead of compiling for a minute or two.  The kernels do
not depend on the robot (a model is an array of numbers), so one small built-in
model covers every robot; the steps follow from the kernel registry
(``rbd_ros/core/compile_steps.py``) plus what other packages register under the
entry-point group ``rbd_ros.precompile`` (the node's own kernels).  With ``--jobs 2``
(default: up to 2, one per core) they are split between two processes by the
entries' ``group`` (the forward dynamics family, FD and ABA, beside the rest).  A full run (no ``--step``)
and ``--install-tree`` also byte-compile the package's modules, as pip does when it
installs: setuptools' install skips that under PYTHONDONTWRITEBYTECODE, and Python then
writes no ``.pyc`` either, so every process (the node, its service worker) compiled the
~160 modules it imports from source at each start (~0.3 s of CPU).
This module imports nothing heavy before its SIGINT handler is in place.

``--install-tree DIR`` is what ``setup.py install`` and ``setup.py develop`` run after
installing (``colcon build`` runs them; ``setup.py`` says when it does not): the package
must be imported from ``DIR/rbd_ros`` (else exit status 2, nothing compiled), so that
numba's cache files land beside the sources the node will run; the numba cache files
under ``DIR/rbd_ros`` are deleted first when its sources differ from those of the last
such run (numba keys an entry by its own source file only, and a kernel keeps the code it
inlined from another file), and the sources' digest is recorded after a run that
compiled every step.

Ctrl-C (SIGINT) ends it at once and quietly (exit status 130).  Started by another
process with ``--parent PID`` (the node's first start, and ``--jobs 2`` for its second
process), it also ends when that process ends, however it ends.
"""
from __future__ import annotations

import argparse
import compileall
import ctypes
import glob
import hashlib
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import warnings

import rbd_ros  # the package's folder (its __init__ imports nothing)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_part(part: int, jobs: int, quiet: bool, only=None) -> None:
    """Group ``part`` of the steps, or the steps named in ``only`` in that order."""
    # imported here, after main() installed its SIGINT handler: importing rbd_ros.core
    # initialises numba (~1 s), and a Ctrl-C then must exit quietly too
    from rbd_ros.core.compile_steps import steps as all_steps
    steps = all_steps()
    if only is not None:
        by_name = {name: (name, fn, group) for name, fn, group in steps}
        steps = [by_name[name] for name in only if name in by_name]
    for name, fn, group in steps:
        if only is None and group % jobs != part:
            continue
        c, t = _cpu(), time.perf_counter()
        fn()
        if not quiet:
            # one write per line: the two processes share stdout, and print() writes the
            # text and its newline separately when stdout is unbuffered (PYTHONUNBUFFERED)
            sys.stdout.write(f"  {name:26s} {time.perf_counter() - t:6.1f} s "
                             f"({_cpu() - c:5.1f} s CPU)\n")
            sys.stdout.flush()


INTERRUPTED = 130  # exit status after SIGINT (128 + 2, as a shell reports it)


def _interrupted(signum, frame):
    """SIGINT (a Ctrl-C, to the whole process group when the node or a terminal gets one):
    leave at once, quietly.  No KeyboardInterrupt: unwinding a half-done numba compile prints
    pages of chained tracebacks; numba writes a cache entry to a temporary file and renames
    it, so stopping mid-compile leaves no broken entry."""
    os._exit(INTERRUPTED)


def _parent_alive_thread(parent: int, period: float) -> None:
    """Leave (exit status 1) as soon as this process's parent is no longer ``parent``."""
    while os.getppid() == parent:
        time.sleep(period)
    os._exit(1)


def die_with_parent(parent: int, period: float = 0.5, use_prctl: bool = True) -> None:
    """Make this process end when process ``parent`` (the one that started it) ends, even
    by SIGKILL: on Linux the kernel sends SIGTERM then (prctl PR_SET_PDEATHSIG; the default
    SIGTERM action ends the process, without Python code); everywhere a daemon thread
    polls ``os.getppid()`` every ``period`` s.  Exits at once (status 1) if the parent is
    gone already (the helper was re-parented before this ran)."""
    if use_prctl and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):  # no libc prctl: the polling thread does it
            pass
    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=_parent_alive_thread, args=(parent, period), daemon=True,
                     name="parent_alive").start()


# where --install-tree records the digest of the sources its cache was compiled from
STAMP = os.path.join("__pycache__", "rbd_precompile.sources")
CACHE_SUFFIXES = (".nbi", ".nbc")      # numba's cache index and data files


def sources_digest(package_dir: str) -> str:
    """sha256 (hex) of every ``*.py`` file under ``package_dir``: their paths relative to it
    and their contents, in sorted order."""
    h = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(package_dir, "**", "*.py"), recursive=True)):
        h.update(os.path.relpath(path, package_dir).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read() + b"\0")
    return h.hexdigest()


def drop_stale_cache(package_dir: str) -> int:
    """Delete numba's cache files (``__pycache__/*.nbi``, ``*.nbc``) under ``package_dir`` if
    its sources' digest is not the one ``STAMP`` recorded (or none is); returns how many
    were deleted."""
    try:
        with open(os.path.join(package_dir, STAMP)) as f:
            if f.read().strip() == sources_digest(package_dir):
                return 0
    except OSError:  # no stamp: a first build, or one that did not finish
        pass
    n = 0
    for folder, _, files in os.walk(package_dir):
        if os.path.basename(folder) == "__pycache__":
            for name in files:
                if name.endswith(CACHE_SUFFIXES):
                    os.unlink(os.path.join(folder, name))
                    n += 1
    return n


def record_sources(package_dir: str) -> None:
    """Write the sources' digest to ``package_dir/STAMP``."""
    path = os.path.join(package_dir, STAMP)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(sources_digest(package_dir) + "\n")


def byte_compile(package_dir: str) -> None:
    """Write ``__pycache__/*.pyc`` for every module under ``package_dir`` that lacks an
    up-to-date one (compileall; what cannot be written, e.g. a read-only install, is
    skipped)."""
    compileall.compile_dir(package_dir, quiet=2)


def _imported_from(tree: str):
    """None if this process's rbd_ros package is ``tree/rbd_ros`` (symlinks resolved), else
    where it is."""
    here = os.path.realpath(os.path.dirname(os.path.abspath(rbd_ros.__file__)))
    return None if here == os.path.realpath(os.path.join(tree, "rbd_ros")) else here


def main(argv=None) -> int:
    signal.signal(signal.SIGINT, _interrupted)
    ap = argparse.ArgumentParser(prog="rbd_precompile", description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="processes to compile in, 1 or 2 (default: min(2, cores))")
    ap.add_argument("--quiet", action="store_true", help="print only the total")
    ap.add_argument("--step", action="append", default=None,
                    help="compile only this step (repeatable; the names it prints), in this process")
    ap.add_argument("--part", type=int, default=None, help=argparse.SUPPRESS)  # a child's share
    ap.add_argument("--parent", type=int, default=None,
                    help="pid of the process that started this one: end when it ends")
    ap.add_argument("--install-tree", metavar="DIR", default=None,
                    help="the installed tree rbd_ros must be imported from (setup.py install/develop "
                         "run this after installing): its stale numba cache files are deleted first")
    a = ap.parse_args(argv)
    if a.parent is not None:
        die_with_parent(a.parent)
    warnings.filterwarnings("ignore", message="Cannot cache compiled function")
    jobs = max(1, min(2, a.jobs))  # two groups of kernels (_steps)
    package_dir = None
    if a.install_tree is not None:
        elsewhere = _imported_from(a.install_tree)
        if elsewhere is not None:
            print(f"rbd_precompile: --install-tree {a.install_tree}: rbd_ros was imported from "
                  f"{elsewhere}, not from there; nothing compiled", file=sys.stderr)
            return 2
        package_dir = os.path.join(a.install_tree, "rbd_ros")
        dropped = drop_stale_cache(package_dir)
        if dropped and not a.quiet:
            print(f"rbd_precompile: the sources changed: {dropped} numba cache files deleted")
    if a.part is None and (package_dir is not None or not a.step):
        byte_compile(package_dir or os.path.dirname(os.path.abspath(rbd_ros.__file__)))
    if a.step:
        run_part(0, 1, a.quiet, only=list(a.step))
        return 0
    if a.part is not None:
        run_part(a.part, jobs, a.quiet)
        return 0
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "rbd_ros.precompile", "--jobs", str(jobs),
           "--parent", str(os.getpid())] + (["--quiet"] if a.quiet else [])
    children = [subprocess.Popen(cmd + ["--part", str(p)]) for p in range(1, jobs)]
    run_part(0, jobs, a.quiet)
    bad = [p.wait() for p in children]
    cpu = _cpu()
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu += ch.ru_utime + ch.ru_stime
    print(f"rbd_precompile: kernels compiled into numba's cache in {time.perf_counter() - t:.1f} s "
          f"({cpu:.1f} s CPU, {jobs} process{'es' if jobs > 1 else ''})")
    if any(bad):
        return 1
    if package_dir is not None:
        record_sources(package_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
