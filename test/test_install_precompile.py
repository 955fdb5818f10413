"""The numba kernels compiled at install time (issue 22, item 7): ``setup.py install`` -- what
``colcon build`` runs, with colcon's arguments -- ends with ``rbd_precompile --install-tree``
against the installed tree, so the node's first start after a build loads its kernels
instead of compiling them.

Here the install compiles one cheap step (``RBD_ROS_PRECOMPILE`` names it; the default, every
step, is minutes of CPU: ``bench/first_start.py --colcon`` measures that path), and a
process that imports the *installed* package finds that kernel in numba's cache beside the
installed sources.  A staged install (``--root``) and ``RBD_ROS_PRECOMPILE=0`` compile
nothing; sources changed since the last full run drop the installed cache first.  The
installed modules are byte-compiled too, also under PYTHONDONTWRITEBYTECODE."""
import glob
import os
import subprocess
import sys

from rbd_ros import precompile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP = "node merge kernel"     # the cheapest step: ~0.5 s of CPU


def _install(tmp_path, choice, *extra):
    """``setup.py install`` as ``colcon build`` runs it (build and egg-info in ``tmp_path``,
    nothing written into the sources), prefix ``tmp_path/prefix``; RBD_ROS_PRECOMPILE=``choice``.
    Returns (the completed process, the installed site-packages folder)."""
    build = tmp_path / "build"
    build.mkdir()
    # PYTHONDONTWRITEBYTECODE: as on this project's machines (setuptools then skips byte-compiling)
    env = dict(os.environ, RBD_ROS_PRECOMPILE=choice, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("NUMBA_CACHE_DIR", None)   # numba's own cache: beside the installed sources
    prefix = tmp_path / "prefix"
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "setup.py", "egg_info", "--egg-base", os.path.relpath(build, ROOT),
         "build", "--build-base", str(build / "build"), "install", "--prefix", str(prefix),
         "--record", str(build / "install.log"), "--single-version-externally-managed", *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    site = glob.glob(str(tmp_path / "**" / "site-packages"), recursive=True)
    return done, (site[0] if site else None)


def _cache_files(tree):
    return [p for p in glob.glob(os.path.join(str(tree), "**", "__pycache__", "*"), recursive=True)
            if p.endswith(precompile.CACHE_SUFFIXES)]


def test_install_compiles_into_the_installed_tree_and_the_installed_package_loads_it(tmp_path):
    done, site = _install(tmp_path, STEP)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compiling the numba kernels into" in done.stdout, done.stdout
    assert "WARNING" not in done.stderr, done.stderr
    entries = _cache_files(os.path.join(site, "rbd_ros"))
    assert any("merge_k" in os.path.basename(p) for p in entries), entries
    # and the modules are byte-compiled: the node does not compile them from source at each start
    assert glob.glob(os.path.join(site, "rbd_ros", "node", "__pycache__", "dynamics_node.*.pyc"))
    # a process that imports the installed package (what `ros2 run` starts) loads the merge
    # kernel from there: numba would not compile it
    probe = ("import rbd_ros, rbd_ros.core.calls.registry as r; from rbd_ros.node.robot import merge_k; "
             "print(rbd_ros.__file__); print(r.will_compile((), (merge_k,)))")
    env = dict(os.environ, PYTHONPATH=site + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", probe], cwd=str(tmp_path), env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    where, will_compile = out.stdout.split()
    assert where.startswith(site), where       # the installed copy, not the sources
    assert will_compile == "False"


def test_a_staged_install_or_precompile_0_compiles_nothing(tmp_path):
    staged = tmp_path / "staged"
    staged.mkdir()
    done, site = _install(staged, STEP, "--root", str(staged / "root"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert site is not None and os.path.isdir(os.path.join(site, "rbd_ros"))
    assert "compiling the numba kernels" not in done.stdout
    assert _cache_files(os.path.join(site, "rbd_ros")) == []
    off = tmp_path / "off"
    off.mkdir()
    done, site = _install(off, "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RBD_ROS_PRECOMPILE=0: numba kernels not compiled" in done.stdout
    assert os.path.isdir(os.path.join(site, "rbd_ros")) and _cache_files(os.path.join(site, "rbd_ros")) == []


def test_install_tree_must_be_where_the_package_is_imported_from(tmp_path):
    """rbd_ros imported from elsewhere (here: the sources, cwd) -> exit 2 and nothing compiled:
    the cache would land beside sources the installed node never runs."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-m", "rbd_ros.precompile", "--install-tree", str(tmp_path),
                           "--step", STEP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "rbd_ros was imported from" in done.stderr and "nothing compiled" in done.stderr
    assert not (tmp_path / "cache").exists()


def test_changed_sources_drop_the_installed_cache(tmp_path):
    pkg = tmp_path / "rbd_ros"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")

    def fill():
        for name in ("b.k-3.py311.nbi", "b.k-3.py311.0.nbc"):
            (pkg / "sub" / "__pycache__" / name).write_text("")
    fill()
    (pkg / "sub" / "__pycache__" / "b.cpython-311.pyc").write_text("")
    assert precompile.drop_stale_cache(str(pkg)) == 2          # no record: stale
    assert [p.name for p in (pkg / "sub" / "__pycache__").iterdir()] == ["b.cpython-311.pyc"]
    fill()
    precompile.record_sources(str(pkg))
    assert precompile.drop_stale_cache(str(pkg)) == 0          # the sources it was compiled from
    (pkg / "a.py").write_text("x = 3\n")                        # another file than the kernels'
    assert precompile.drop_stale_cache(str(pkg)) == 2
    fill()
    precompile.record_sources(str(pkg))
    (pkg / "c.py").write_text("")                               # a new file counts too
    assert precompile.drop_stale_cache(str(pkg)) == 2
