import atexit
import os
import shutil
import tempfile

# Real DDS, isolated per test process: localhost discovery and a domain id of our own,
# set before rclpy is imported anywhere (subprocess nodes inherit them).
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("RBD_TEST_DOMAIN_ID", str(1 + os.getpid() % 100))
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
