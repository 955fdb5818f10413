import atexit
import fcntl
import os
import shutil
import tempfile

DOMAIN_IDS = range(1, 101)      # ROS_DOMAIN_ID 1..100: below the Linux ephemeral ports (<= 101)


def claim_domain_id(prefer: int) -> int:
    """A ROS_DOMAIN_ID in DOMAIN_IDS that no other pytest process on this machine holds,
    trying ``prefer`` first: an exclusive flock on ``<tmp>/rbd_ros_test_domain_<id>.lock``,
    held until this process exits (the kernel releases it, even after a crash; the file
    descriptor is not inherited by the node subprocesses).  All taken: ``prefer``."""
    ids = list(DOMAIN_IDS)
    k0 = ids.index(prefer) if prefer in ids else 0
    for d in ids[k0:] + ids[:k0]:
        f = open(os.path.join(tempfile.gettempdir(), f"rbd_ros_test_domain_{d}.lock"), "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        _DOMAIN_LOCKS.append(f)
        return d
    return prefer


_DOMAIN_LOCKS: list = []

# Real DDS, isolated per test process: localhost discovery and a domain id of our own,
# set before rclpy is imported anywhere (subprocess nodes inherit them).  A pytest-xdist
# worker (scripts/test.sh runs two) inherits the controller's environment, so it claims a
# domain of its own; otherwise RBD_TEST_DOMAIN_ID, if set, is used as given.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
if "PYTEST_XDIST_WORKER" in os.environ or "RBD_TEST_DOMAIN_ID" not in os.environ:
    os.environ["RBD_TEST_DOMAIN_ID"] = str(claim_domain_id(1 + os.getpid() % 100))
os.environ["ROS_DOMAIN_ID"] = os.environ["RBD_TEST_DOMAIN_ID"]
os.environ.pop("ROS_LOCALHOST_ONLY", None)
# rcl's log files (one per node process) go to a directory of this run, removed at exit
_LOG_DIR = tempfile.mkdtemp(prefix="rbd_ros_test_logs_")
os.environ["ROS_LOG_DIR"] = _LOG_DIR
atexit.register(shutil.rmtree, _LOG_DIR, True)


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """A real rclpy client node (own context, spun in a thread) for the node tests.
    Imported here, not at the top: the core tests must run without ROS installed."""
    from ros_harness import Client
    c = Client()
    yield c
    c.close()


@pytest.fixture(scope="module")
def arm_model():
    """The bundled 7-dof arm (rbd_arm7) as an rbd_ros Model: the model the node tests'
    nodes load."""
    from ros_harness import read_arm_urdf

    import rbd_ros.core as rbd
    return rbd.Model.from_urdf(read_arm_urdf())


# ----------------------------------------------------------------- test oracles
# Missing oracles (oracles.py): skipped with a reason under colcon test, a hard error when
# RBD_REQUIRE_ORACLES=1 (scripts/test.sh, CI).
import oracles  # noqa: E402


def pytest_configure(config):
    if oracles.required():
        missing = oracles.not_installed()
        if missing:
            raise pytest.UsageError(
                "RBD_REQUIRE_ORACLES=1 (scripts/test.sh, CI): every test oracle must be installed; "
                "missing: " + "; ".join(oracles.ORACLES[m] for m in missing))


class _OracleModule(pytest.Module):
    """A test module whose import fails for want of an oracle is skipped with the reason
    (unless oracles are required)."""

    def collect(self):
        try:
            return super().collect()
        except self.CollectError as e:
            reason = oracles.missing_in(e)
            if reason and not oracles.required():
                pytest.skip(f"{self.path.name}: test oracle not installed: {reason}",
                            allow_module_level=True)
            raise


def pytest_pycollect_makemodule(module_path, parent):
    if module_path.name == "__init__.py":
        return None
    return _OracleModule.from_parent(parent, path=module_path)


# The files that take longest (measured: bench/RESULTS.md, "The test suite and CI"), run first:
# with two xdist workers taking a file at a time (scripts/test.sh) the run then ends on
# short files, not with one worker alone on a long one.  Only the run's length depends on
# this list; a file not in it runs after them, in collection order, those that start
# processes (PROCESS_PREFIXES: node, closed-loop and simulator files) first.
SLOW_FILES = (
    "test_node_lifecycle.py", "test_closed_loop_planners.py", "test_core_compile.py", "test_node_payload.py",
    "test_sim_driver.py", "test_node_relay.py", "test_colcon_like.py", "test_node_services.py",
    "test_closed_loop.py", "test_closed_loop_contact.py", "test_core_byte_order.py", "test_node_signals.py",
    "test_node_estimate_payload.py", "test_ident_mujoco.py", "test_node_models.py", "test_node_topics.py",
    "test_node_config.py", "test_node_floating_mimic.py", "test_bench_quick.py", "test_architecture.py",
    "test_node_command.py", "test_oracle_skips.py", "test_core_properties.py", "test_node_planners.py",
    "test_numba_compat.py", "test_node_param_dump.py",
)


PROCESS_PREFIXES = ("test_node_", "test_closed_loop", "test_sim_")


def _file_rank(name: str) -> int:
    if name in SLOW_FILES:
        return SLOW_FILES.index(name)
    return len(SLOW_FILES) + (0 if name.startswith(PROCESS_PREFIXES) else 1)


def pytest_collection_modifyitems(config, items):
    # slow files first (SLOW_FILES); a file's tests keep their order (stable sort)
    items.sort(key=lambda item: _file_rank(item.path.name))
    if oracles.required():
        return
    for item in items:
        need = oracles.NEEDED_IN_SUBPROCESS.get(item.path.name, ())
        missing = oracles.not_installed(need)
        if missing:
            item.add_marker(pytest.mark.skip(
                reason="test oracle not installed: " + "; ".join(oracles.ORACLES[m] for m in missing)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test (or its fixture) that fails for want of an oracle is reported skipped, with
    the reason (unless oracles are required)."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and call.excinfo is not None and not oracles.required():
        reason = oracles.missing_in(call.excinfo.value)
        if reason:
            rep.outcome = "skipped"
            rep.longrepr = (str(item.path), item.location[1] or 0,
                            f"Skipped: test oracle not installed: {reason}")
