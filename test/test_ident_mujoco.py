"""End-to-end proof of the identification against a simulated "true" robot
(test/ident_sim.py: the bundled arm with masses changed by 20-40 %, COMs moved
by up to 3 cm, inertias scaled, joint friction and rotor inertia added, in
MuJoCo).  A computed-torque controller built on the *nominal* URDF tracks an
excitation trajectory at 1 kHz for 60 s; the joint states (q, qd, applied
torque) go into a real rosbag2 written with rosbags; ``rbd_identify`` (in
process) turns bag + nominal URDF into an identified URDF.  Then:

(a) torque prediction on a different trajectory: RMS error >= 10x smaller
    than the nominal URDF's;
(b) g(q) against MuJoCo's own bias force at v = 0 on 100 random poses: RMS
    error >= 10x smaller than the nominal URDF's;
(c) an unknown 1.5 kg payload (com (0, 0, 0.05) m at the flange), 20 s of
    excitation: mass within 2 %, com within 3 mm; again with σ = 0.05 N m
    noise on the recorded efforts.
No ROS needed."""
from types import SimpleNamespace

import numpy as np
import pytest
from ident_sim import ARM_URDF, PAYLOAD, gravity_mujoco, simulate, true_robot

import rbd_ros.core as rbd
from rbd_ros.core.estimation.excitation import excitation_trajectory
from rbd_ros.core.model import inertial as ine
from rbd_ros.tools import identify as cli
from rbd_ros.tools.recording import prepare, write_joint_states_bag

EPS = 0.01          # the CLI's default Coulomb smoothing


def _rms(x):
    return float(np.sqrt(np.mean(np.square(x))))


def _cli(*argv):
    return cli.run(cli.build_parser().parse_args([str(a) for a in argv] + ["--quiet"]))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    d = tmp_path_factory.mktemp("ident")
    nominal = rbd.Model.from_urdf(ARM_URDF)
    mjm, truth = true_robot(seed=0)
    exc = excitation_trajectory(nominal, 60.0, maxiter=0, seed=0)
    t, Q, V, U = simulate(mjm, nominal, exc.q, exc.v, exc.a)
    assert len(t) == 60001
    write_joint_states_bag(d / "run_mcap", 1000.0 + t, nominal.joint_names, Q, V, U, storage="mcap")
    identified = _cli(d / "run_mcap", "--urdf", ARM_URDF, "--out", d / "identified.urdf", "--report", d / "r.png")
    return SimpleNamespace(dir=d, nominal=nominal, mjm=mjm, truth=truth, identified=identified,
                           urdf=d / "identified.urdf")


def test_the_written_urdf_is_the_identified_model(world):
    back = rbd.Model.from_urdf(world.urdf)
    assert ine.consistency_margin(ine.inertial_parameters(back)).min() >= -1e-10
    assert np.allclose(ine.inertial_parameters(back), ine.inertial_parameters(world.identified), rtol=1e-9, atol=1e-12)
    assert np.allclose(back.friction, world.identified.friction) and np.allclose(back.damping, world.identified.damping)
    assert np.all(back.armature == 0) and np.all(world.identified.armature > 0)   # URDF has no armature element
    assert (world.dir / "r.png").stat().st_size > 10_000


def test_a_held_out_torque_prediction_is_ten_times_better(world):
    ho = excitation_trajectory(world.nominal, 15.0, maxiter=0, seed=11, harmonics=4)
    t, Q, V, U = simulate(world.mjm, world.nominal, ho.q, ho.v, ho.a)
    s = prepare(t, Q, V, U)
    m = world.identified
    err_nominal = _rms(rbd.rnea(world.nominal, s.q, s.v, s.a) - s.tau)
    err_identified = _rms(rbd.rnea(m, s.q, s.v, s.a) + rbd.friction(m, s.v, EPS) - s.tau)
    assert err_identified * 10 <= err_nominal, (err_nominal, err_identified)


def test_b_gravity_is_ten_times_closer_to_the_true_robot(world):
    lo, hi = world.nominal.position_limit.T
    Q = np.random.default_rng(5).uniform(lo, hi, (100, 7))
    g_true = gravity_mujoco(world.mjm, world.nominal.joint_names, Q)
    back = rbd.Model.from_urdf(world.urdf)
    err_nominal = _rms([rbd.gravity(world.nominal, q) for q in Q] - g_true)
    err_identified = _rms([rbd.gravity(back, q) for q in Q] - g_true)
    assert err_identified * 10 <= err_nominal, (err_nominal, err_identified)


@pytest.fixture(scope="module")
def payload_run(world):
    mjm, _ = true_robot(seed=0, payload=PAYLOAD)
    exc = excitation_trajectory(world.nominal, 20.0, maxiter=0, seed=21)
    return simulate(mjm, world.nominal, exc.q, exc.v, exc.a)


@pytest.mark.parametrize("noise,storage", [(0.0, "sqlite3"), (0.05, "mcap")])
def test_c_an_unknown_payload_is_measured(world, payload_run, noise, storage):
    t, Q, V, U = payload_run
    U = U + np.random.default_rng(9).normal(scale=noise, size=U.shape)
    bag = world.dir / f"payload_{storage}_{noise}"
    write_joint_states_bag(bag, 2000.0 + t, world.nominal.joint_names, Q, V, U, storage=storage)
    arm = [str(x) for x in world.identified.armature]
    out = world.dir / f"with_payload_{storage}.urdf"
    model = _cli(bag, "--urdf", world.urdf, "--payload", "flange", "--armature", *arm, "--holdout", "0",
                 "--out", out)
    mass, com, _ = model.payloads["flange"]
    link, true_mass, true_com, _ = PAYLOAD
    assert abs(mass - true_mass) <= 0.02 * true_mass, mass
    assert np.linalg.norm(com - np.array(true_com)) <= 0.003, com
    # the URDF with the payload link: the same model
    back = rbd.Model.from_urdf(out)
    assert "flange_payload" in back.link_names
    assert np.allclose(ine.inertial_parameters(back), ine.inertial_parameters(model), rtol=1e-9, atol=1e-12)
