"""rbd_ros.tools: rosbag2 joint states (sqlite3 and MCAP, written and read
with rosbags), the zero-phase preprocessing, and rbd_identify's errors."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from rbd_ros.core import friction as friction_torque
from rbd_ros.core import gravity, rnea
from rbd_ros.core.estimation.excitation import excitation_trajectory
from rbd_ros.core.model import inertial as ine
from rbd_ros.core.model.model import Model
from rbd_ros.robots import bundled_robot_path
from rbd_ros.tools import identify as cli
from rbd_ros.tools.recording import RecordingError, prepare, read_joint_states, write_joint_states_bag

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM_URDF = bundled_robot_path("rbd_arm7")  # the nominal arm (ident_sim's, without MuJoCo)

NAMES = [f"joint{i}" for i in range(1, 8)]


def _signals(n=3000, rate=1000.0):
    t = 5.0 + np.arange(n) / rate
    w = 2 * np.pi * np.array([0.3, 0.5, 0.7, 0.2, 0.4, 0.6, 0.8])
    q = np.sin(np.outer(t, w))
    v = np.cos(np.outer(t, w)) * w
    a = -np.sin(np.outer(t, w)) * w ** 2
    return t, q, v, a, 3 * q + 1


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_bag_round_trip(tmp_path, storage):
    t, q, v, _, tau = _signals(500)
    bag = tmp_path / storage
    write_joint_states_bag(bag, t, NAMES, q, v, tau, storage=storage)
    rec = read_joint_states(bag)
    assert rec.names == NAMES and rec.topic == "/joint_states" and rec.skipped == 0
    assert np.allclose(rec.t, t, atol=1e-9, rtol=0)
    assert np.array_equal(rec.position, q) and np.array_equal(rec.velocity, v) and np.array_equal(rec.effort, tau)
    # in another joint order
    rec2 = read_joint_states(bag, joints=NAMES[::-1])
    assert np.array_equal(rec2.position, q[:, ::-1])


def test_bag_errors_say_what_is_missing(tmp_path):
    t, q, v, _, tau = _signals(100)
    write_joint_states_bag(tmp_path / "noeff", t, NAMES, q, v, None)
    with pytest.raises(RecordingError, match="carry no efforts"):
        read_joint_states(tmp_path / "noeff")
    with pytest.raises(RecordingError, match="no such file"):
        read_joint_states(tmp_path / "missing")
    write_joint_states_bag(tmp_path / "other", t, NAMES, q, v, tau, topic="/arm/joint_states")
    with pytest.raises(RecordingError, match="no JointState topic '/joint_states'"):
        read_joint_states(tmp_path / "other", topic="/joint_states")
    with pytest.raises(RecordingError, match=r"never named: \['elbow'\]"):
        read_joint_states(tmp_path / "other", joints=NAMES + ["elbow"])


def test_prepare_differentiates_without_delay():
    t, q, v, a, tau = _signals(6000)
    s = prepare(t, q, v, tau, cutoff_hz=10.0)
    assert s.t[0] >= t[0] + 0.4 - 1e-9 and s.t[-1] <= t[-1] - 0.4 + 1e-9      # edges trimmed
    assert np.allclose(np.diff(s.t), 0.01)                                       # decimated to 10 x cut-off
    k = np.rint((s.t - t[0]) * 1000).astype(int)
    assert np.max(np.abs(s.a - a[k])) <= 2e-3 * np.max(np.abs(a))
    assert np.max(np.abs(s.q - q[k])) <= 1e-4 and np.max(np.abs(s.tau - tau[k])) <= 1e-3
    # velocities missing: from the positions
    s2 = prepare(t, q, None, tau, cutoff_hz=10.0)
    assert np.max(np.abs(s2.v - v[k])) <= 1e-3 * np.max(np.abs(v))
    # a gap splits the recording; each part filtered on its own
    keep = np.ones(len(t), bool)
    keep[2500:2600] = False
    s3 = prepare(t[keep], q[keep], v[keep], tau[keep], cutoff_hz=10.0)
    assert not np.any((s3.t > t[2499] - 0.4 + 1e-6) & (s3.t < t[2600] + 0.4 - 1e-6))
    assert np.max(np.abs(s3.a - a[np.rint((s3.t - t[0]) * 1000).astype(int)])) <= 2e-3 * np.max(np.abs(a))
    with pytest.raises(RecordingError, match="cutoff_hz"):
        prepare(t, q, v, tau, cutoff_hz=600.0)


def _run(capsys, *argv):
    rc = cli.main([str(a) for a in argv] + ["--quiet"])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_errors(tmp_path, capsys):
    t, q, v, _, tau = _signals(200)
    write_joint_states_bag(tmp_path / "noeff", t, NAMES, q, v, None)
    rc, _, err = _run(capsys, tmp_path / "noeff", "--urdf", ARM_URDF)
    assert rc == 2 and "rbd_identify: error:" in err and "no efforts" in err
    write_joint_states_bag(tmp_path / "extra", t, NAMES + ["gripper"], np.hstack([q, q[:, :1]]),
                           np.hstack([v, v[:, :1]]), np.hstack([tau, tau[:, :1]]))
    rc, _, err = _run(capsys, tmp_path / "extra", "--urdf", ARM_URDF)
    assert rc == 2 and "bag joints ['gripper'] are not joints of" in err and "--ignore-joints gripper" in err
    write_joint_states_bag(tmp_path / "few", t, NAMES[:5], q[:, :5], v[:, :5], tau[:, :5])
    rc, _, err = _run(capsys, tmp_path / "few", "--urdf", ARM_URDF)
    assert rc == 2 and "never named: ['joint6', 'joint7']" in err
    rc, _, err = _run(capsys, tmp_path / "extra", "--urdf", tmp_path / "none.urdf")
    assert rc == 2 and "none.urdf" in err


@pytest.fixture(scope="module")
def locked_bag(tmp_path_factory):
    """A 24 s recording at 500 Hz of a "true" arm (every body's parameters scaled by 0.7-1.3,
    friction) moving with joint5 locked (a brake adds 3 N m there): (bag, truth, nominal,
    joint5's position)."""
    nominal = Model.from_urdf(ARM_URDF)
    rng = np.random.default_rng(9)
    P = ine.inertial_parameters(nominal) * rng.uniform(0.7, 1.3, (nominal.nbodies, 1))
    truth = ine._rebuilt(nominal, P, damping=rng.uniform(0.1, 0.5, 7), friction=rng.uniform(0.2, 1.0, 7))
    tr = excitation_trajectory(nominal, 24.0, maxiter=0, seed=3)
    q, v, a = tr.q[::2].copy(), tr.v[::2].copy(), tr.a[::2].copy()
    q[:, 4], v[:, 4], a[:, 4] = tr.center[4], 0.0, 0.0
    tau = rnea(truth, q, v, a) + friction_torque(truth, v, 0.01)
    tau[:, 4] += 3.0
    bag = tmp_path_factory.mktemp("locked") / "bag"
    write_joint_states_bag(bag, tr.t[::2], NAMES, q, v, tau)
    return bag, truth, nominal, tr.center[4]


def test_cli_identifies_a_recording_with_a_locked_joint(tmp_path, capsys, locked_bag):
    """Issue 22, item 5: a locked joint does not stop rbd_identify; it keeps the URDF's values,
    the output says which and why, the write-back leaves its elements alone, and what moves is
    the true robot's."""
    bag, truth, nominal, q5 = locked_bag
    out = tmp_path / "identified.urdf"
    rc, stdout, err = _run(capsys, bag, "--urdf", ARM_URDF, "--out", out)
    assert rc == 0, err
    assert "joint joint5: still (faster than coulomb_min_velocity = 0.05 in 0 % of the samples" in stdout
    assert "body link5: moved only by still joints" in stdout
    assert re.search(r"joint5 .*\(still: not fitted\)", stdout)
    text, new = open(ARM_URDF).read(), out.read_text()
    for tag, name in (("joint", "joint5"), ("link", "link5")):
        pat = rf'<{tag} name="{name}"[ >].*?</{tag}>'
        assert re.search(pat, new, re.S).group(0) == re.search(pat, text, re.S).group(0)
    assert re.search(r'<link name="link6"[ >].*?</link>', new, re.S).group(0) != \
        re.search(r'<link name="link6"[ >].*?</link>', text, re.S).group(0)
    model = Model.from_urdf(str(out))
    Q = np.random.default_rng(4).uniform(-1.0, 1.0, (50, 7))
    Q[:, 4] = q5
    g = {k: np.array([gravity(m, x) for x in Q]) for k, m in (("id", model), ("nom", nominal), ("true", truth))}
    moving = np.arange(7) != 4
    assert np.abs(g["id"] - g["true"])[:, moving].max() <= np.abs(g["nom"] - g["true"])[:, moving].max() / 20
    assert np.allclose(model.friction[moving], truth.friction[moving], rtol=0.1, atol=0.02)
    assert model.friction[4] == nominal.friction[4] and model.damping[4] == nominal.damping[4]


def test_cli_strict_and_max_cond_refuse(capsys, locked_bag):
    bag = locked_bag[0]
    rc, _, err = _run(capsys, bag, "--urdf", ARM_URDF, "--strict")
    assert rc == 2 and "too little excitation: joints ['joint5'] do not move" in err
    rc, _, err = _run(capsys, bag, "--urdf", ARM_URDF, "--max-cond", 1.5)
    assert rc == 2 and "too little excitation: the condition number" in err


def test_cli_without_rosbags_says_what_to_install(tmp_path, capsys, monkeypatch):
    """rosbags has no rosdep key: on a ROS install without it, rbd_identify says what to install."""
    for name in [m for m in sys.modules if m.split(".")[0] == "rosbags"] + ["rosbags"]:
        monkeypatch.setitem(sys.modules, name, None)     # an import of it now fails as if not installed
    (tmp_path / "bag").mkdir()
    rc, _, err = _run(capsys, tmp_path / "bag", "--urdf", ARM_URDF)
    assert rc == 2 and "rbd_identify: error: reading and writing rosbag2 needs the rosbags package" in err, err
    assert "pip install rosbags" in err


def test_console_script_is_registered():
    with open(os.path.join(ROOT, "setup.py")) as f:     # the source tree's (ARM_URDF may be an installed copy)
        assert '"rbd_identify = rbd_ros.tools.identify:main"' in f.read()
    out = subprocess.run([sys.executable, "-m", "rbd_ros.tools.identify", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "--payload LINK" in out.stdout
