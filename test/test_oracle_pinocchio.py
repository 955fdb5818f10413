"""rbd_ros.core against Pinocchio 4.1 on example-robot-data robots.

Every quantity must agree to TOL relative to the largest reference entry;
accelerations are checked by their residual H qdd + b - J^T f - tau relative
to the size of the terms.  States are random (seeded) and mapped by joint name
(test/oracle.py).  Mimic joints: the reference is Pinocchio's mimic=False
result reduced with the constant map G.
"""

import numpy as np
import oracle as orc
import pinocchio as pin
import pytest

import rbd_ros.core as rbd

TOL = 1e-9
N_STATES = 3
N_BATCH = 4

# (id, robot, floating_base, mimic, mimic edit or None)
CASES = [
    ("panda", "panda", False, True, None),
    ("panda-nomimic", "panda", False, False, None),
    # a revolute mimic joint with multiplier and offset (the URDFs above only have offset 0)
    ("panda-mimic-offset", "panda", False, True, ("panda_joint7", "panda_joint1", -0.7, 0.3)),
    ("ur5", "ur5", False, True, None),
    ("kinova", "kinova", False, True, None),
    ("solo12", "solo12", True, True, None),
    ("anymal_c", "anymal_c", True, True, None),
    ("talos", "talos_full_v2", True, True, None),
    ("talos-nomimic", "talos_full_v2", True, False, None),
]


class Case:
    def __init__(self, robot, floating, mimic, edit):
        urdf = orc.robot_urdf(robot)
        if edit is not None:
            urdf = orc.with_mimic(orc._urdf_text(urdf), *edit)
        self.model = rbd.Model.from_urdf(urdf, floating_base=floating, mimic=mimic)
        self.oracle = orc.Oracle(urdf, floating, mimic, layout=self.model)
        rng = np.random.default_rng(12345)
        self.states = [self.oracle.random_state(rng) for _ in range(N_STATES)]
        self.fext = [self.oracle.random_fext(rng) for _ in range(N_STATES)]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def case(request):
    _, robot, floating, mimic, edit = request.param
    return Case(robot, floating, mimic, edit)


def assert_close(what, got, ref, tol=TOL):
    got = np.asarray(got)
    assert got.shape == np.shape(ref), f"{what}: shape {got.shape}, expected {np.shape(ref)}"
    assert np.all(np.isfinite(got)), f"{what}: non-finite values"
    err = orc.rel_err(got, ref)
    assert err <= tol, (f"{what}: relative error {err:.3e} > {tol:g} "
                        f"(max |ref| {np.max(np.abs(ref)):.3e}, worst index "
                        f"{np.unravel_index(np.argmax(np.abs(got - ref)), np.shape(ref))})")


def assert_fd(what, o, q, v, qdd, tau, f=None, frame="local"):
    qdd = np.asarray(qdd)
    assert qdd.shape == (o.nv,), f"{what}: shape {qdd.shape}"
    assert np.all(np.isfinite(qdd)), f"{what}: non-finite qdd"
    r, scale = o.fd_residual(q, v, qdd, tau, f, frame)
    err = np.max(np.abs(r)) / scale
    assert err <= TOL, f"{what}: residual |H qdd + b - tau|/scale = {err:.3e} > {TOL:g}"


# ------------------------------------------------------------------ the model
def test_model_description(case):
    m, o = case.model, case.oracle
    info = o.info
    assert (m.nq, m.nv) == (o.layout.nq, o.layout.nv)
    assert sorted(m.link_names) == sorted(info.link_names)
    assert len(m.link_names) == len(set(m.link_names))
    assert m.mass == pytest.approx(info.mass, rel=1e-12)
    expected_mimic = o.mimic_map
    assert set(m.mimic_joints) == set(expected_mimic)
    for dep, (master, k, off) in expected_mimic.items():
        got = m.mimic_joints[dep]
        assert got[0] == master and got[1] == pytest.approx(k) and got[2] == pytest.approx(off)
    for n, iq, iv in zip(m.joint_names, m.idx_q, m.idx_v):
        assert (m.q_index(n), m.v_index(n)) == (iq, iv)
    if o.floating_base:
        assert m.joint_names[0] == "root_joint" and m.joint_nq[0] == 7
    q0 = np.asarray(m.neutral())
    assert q0.shape == (m.nq,)
    # neutral: Pinocchio's neutral configuration of the independent joints
    assert np.array_equal(q0, o.q_from_pin(pin.neutral(o.model)))
    np.testing.assert_allclose(np.asarray(m.gravity), [0, 0, -9.81])


# ---------------------------------------------------------------- single state
def test_rnea(case):
    for q, v, a, _ in case.states:
        assert_close("rnea", rbd.rnea(case.model, q, v, a), case.oracle.rnea(q, v, a))


@pytest.mark.parametrize("frame", ["local", "world"])
def test_rnea_fext(case, frame):
    o = case.oracle
    for (q, v, a, _), f in zip(case.states, case.fext):
        assert_close(f"rnea f_ext {frame}", rbd.rnea(case.model, q, v, a, f_ext=f, f_ext_frame=frame),
                     o.rnea(q, v, a, f, frame))


def test_rnea_fext_dict_one_link(case):
    """A single wrench given as a dict on a link deep in the tree."""
    o = case.oracle
    q, v, a, _ = case.states[0]
    link = o.deepest_link()
    w = np.array([1.0, -2.0, 3.0, 0.4, -0.5, 0.6])
    ref = o.rnea(q, v, a, {link: w}, "local")
    assert_close("rnea f_ext dict", rbd.rnea(case.model, q, v, a, f_ext={link: w}), ref)
    # and the force matters
    assert orc.rel_err(o.rnea(q, v, a), ref) > 1e-6


def test_gravity(case):
    for q, *_ in case.states:
        assert_close("gravity", rbd.gravity(case.model, q), case.oracle.gravity(q))


def test_bias(case):
    for q, v, *_ in case.states:
        assert_close("bias", rbd.bias(case.model, q, v), case.oracle.bias(q, v))


def test_crba(case):
    for q, *_ in case.states:
        H = np.asarray(rbd.crba(case.model, q))
        assert_close("crba", H, case.oracle.crba(q))
        assert orc.rel_err(H, H.T) <= 1e-14, "crba: H not symmetric"


def test_coriolis_matrix(case):
    o = case.oracle
    for q, v, *_ in case.states:
        C = np.asarray(rbd.coriolis_matrix(case.model, q, v))
        ref = o.coriolis_matrix(q, v)
        # the defining properties first (they hold for any valid factorization) ...
        b_minus_g = o.bias(q, v) - o.gravity(q)
        assert_close("coriolis C v = b - g", C @ v, b_minus_g)
        assert_close("coriolis C + C^T = dH/dt", C + C.T, o.hdot(q, v))
        # ... then Pinocchio's matrix itself
        assert_close("coriolis_matrix", C, ref)


def test_forward_dynamics(case):
    for q, v, _, tau in case.states:
        assert_fd("forward_dynamics", case.oracle, q, v, rbd.forward_dynamics(case.model, q, v, tau), tau)


def test_aba(case):
    for q, v, _, tau in case.states:
        assert_fd("aba", case.oracle, q, v, rbd.aba(case.model, q, v, tau), tau)


@pytest.mark.parametrize("frame", ["local", "world"])
@pytest.mark.parametrize("fn", ["forward_dynamics", "aba"])
def test_fd_fext(case, fn, frame):
    for (q, v, _, tau), f in zip(case.states, case.fext):
        qdd = getattr(rbd, fn)(case.model, q, v, tau, f_ext=f, f_ext_frame=frame)
        assert_fd(f"{fn} f_ext {frame}", case.oracle, q, v, qdd, tau, f, frame)


def test_qdd_matches_pinocchio(case):
    """Accelerations themselves, relative to max |qdd|, against pin.aba (or the
    reduced CRBA solve with mimic joints); pin.aba and that solve agree to ~1e-15
    on these robots although cond(H) reaches 1e7 on talos."""
    o = case.oracle
    for (q, v, _, tau), f in zip(case.states, case.fext):
        for fn in ("aba", "forward_dynamics"):
            assert_close(fn, getattr(rbd, fn)(case.model, q, v, tau), o.aba(q, v, tau))
            assert_close(f"{fn} f_ext", getattr(rbd, fn)(case.model, q, v, tau, f_ext=f),
                         o.aba(q, v, tau, f))


# ---------------------------------------------------------------------- batch
def _stack(case, k):
    return np.stack([s[k] for s in case.states[:N_BATCH]] +
                    [case.states[0][k]] * max(0, N_BATCH - len(case.states)))


def test_batch_matches_single_calls(case):
    m, o = case.model, case.oracle
    Q, V, A, T = (_stack(case, k) for k in range(4))
    n = len(Q)
    single = {
        "rnea": lambda i: rbd.rnea(m, Q[i], V[i], A[i]),
        "gravity": lambda i: rbd.gravity(m, Q[i]),
        "bias": lambda i: rbd.bias(m, Q[i], V[i]),
        "crba": lambda i: rbd.crba(m, Q[i]),
        "coriolis_matrix": lambda i: rbd.coriolis_matrix(m, Q[i], V[i]),
        "forward_dynamics": lambda i: rbd.forward_dynamics(m, Q[i], V[i], T[i]),
        "aba": lambda i: rbd.aba(m, Q[i], V[i], T[i]),
    }
    batch = {
        "rnea": rbd.rnea(m, Q, V, A),
        "gravity": rbd.gravity(m, Q),
        "bias": rbd.bias(m, Q, V),
        "crba": rbd.crba(m, Q),
        "coriolis_matrix": rbd.coriolis_matrix(m, Q, V),
        "forward_dynamics": rbd.forward_dynamics(m, Q, V, T),
        "aba": rbd.aba(m, Q, V, T),
    }
    for name, out in batch.items():
        out = np.asarray(out)
        for i in range(n):
            assert_close(f"batch {name}[{i}] vs single", out[i], np.asarray(single[name](i)))
    # and the batch against the oracle
    for i in range(n):
        assert_close(f"batch rnea[{i}]", batch["rnea"][i], o.rnea(Q[i], V[i], A[i]))
        assert_close(f"batch crba[{i}]", batch["crba"][i], o.crba(Q[i]))
        assert_fd(f"batch forward_dynamics[{i}]", o, Q[i], V[i], batch["forward_dynamics"][i], T[i])
        assert_fd(f"batch aba[{i}]", o, Q[i], V[i], batch["aba"][i], T[i])


def test_batch_fext(case):
    m, o = case.model, case.oracle
    Q, V, A, T = (_stack(case, k) for k in range(4))
    F = np.stack([case.fext[i % len(case.fext)] for i in range(len(Q))])
    tau = np.asarray(rbd.rnea(m, Q, V, A, f_ext=F, f_ext_frame="world"))
    qdd = np.asarray(rbd.aba(m, Q, V, T, f_ext=F))
    assert tau.shape == (len(Q), m.nv) and qdd.shape == (len(Q), m.nv)
    for i in range(len(Q)):
        assert_close(f"batch rnea f_ext world[{i}]", tau[i], o.rnea(Q[i], V[i], A[i], F[i], "world"))
        assert_fd(f"batch aba f_ext[{i}]", o, Q[i], V[i], qdd[i], T[i], F[i])
