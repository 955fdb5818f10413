"""Trust, round three (issue 17, core defects 2-6), each reproduced first:
ABA with a tiny mimic-master mass, unbounded payloads and armature, infinite
friction, complex/str/bool numbers accepted, a non-Model ``model``.  (Defect 1,
byte order: test_core_byte_order.py.)"""
import re

import numpy as np
import oracle as orc
import pytest
from core_util import random_state, random_tree_urdf

import rbd_ros.core as rbd
from rbd_ros.core.errors import BOUNDS


def panda_urdf(link_mass=None):
    text = open(orc.robot_urdf("panda")).read()
    if link_mass is None:
        return text
    link, mass = link_mass
    i = text.index(f'<link name="{link}"')
    j = text.index("</link>", i)
    return text[:i] + re.sub(r'<mass value="[^"]*"', f'<mass value="{mass}"', text[i:j]) + text[j:]


def scaled_cond(H):
    d = np.sqrt(np.diag(H))
    return np.linalg.cond(H / np.outer(d, d))


# ---------------------------------------------------------------- 2. ABA, tiny masses
@pytest.mark.parametrize("mass", ["1e-9", "1e-12", "1e-15", "1e-20", "5e-324"])
def test_aba_agrees_with_crba_ltdl_when_a_mimic_master_is_tiny(mass):
    """panda, mimic on (finger_joint2 follows finger_joint1), panda_leftfinger of
    ``mass`` kg: the reduced H stays well conditioned (the right finger carries
    the joint), so ABA must return what CRBA + LᵀDL returns.  Was: error 1.6e-4 at
    1e-12 kg, 0.09 at 1e-15, wrong by 62 at 1e-20, "tau not finite" at 5e-324."""
    m = rbd.Model.from_urdf(panda_urdf(("panda_leftfinger", mass)))
    assert "panda_finger_joint2" in m.mimic_joints
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, v, tau = random_state(m, rng)
        assert scaled_cond(rbd.crba(m, q)) < 1e3
        fd = rbd.forward_dynamics(m, q, v, tau)
        assert np.max(np.abs(rbd.aba(m, q, v, tau) - fd)) <= 1e-9 * max(1.0, np.max(np.abs(fd)))


@pytest.mark.parametrize("seed", [21, 26, 29, 35])
def test_aba_agrees_on_random_mimic_trees_with_tiny_bodies(seed):
    text = random_tree_urdf(seed, 9, mimic=2)
    rng = np.random.default_rng(seed)
    for tiny in ("1e-14", "1e-30"):
        k = int(rng.integers(1, 10))
        t = re.sub(rf'(<link name="l{k}"><inertial>.*?<mass value=")[^"]*"', rf'\g<1>{tiny}"', text, flags=re.S)
        m = rbd.Model.from_urdf(t)
        for _ in range(4):
            q, v, tau = random_state(m, rng)
            if scaled_cond(rbd.crba(m, q)) > 1e6:
                continue
            fd = rbd.forward_dynamics(m, q, v, tau)
            assert np.max(np.abs(rbd.aba(m, q, v, tau) - fd)) <= 1e-9 * max(1.0, np.max(np.abs(fd)))


def test_ill_conditioned_H_is_named_with_its_condition():
    m = rbd.Model.from_urdf(panda_urdf(), mimic=False)
    m2 = m.with_payload("panda_hand", 1e6, [0, 0, 1e3], np.eye(3) * 1e12)
    q = np.full(m.nq, 0.3)
    with pytest.raises(ValueError, match=r"ill-conditioned at this q \(cond\(H\) ~ [0-9.e+]+ with its diagonal"):
        rbd.forward_dynamics(m2, q, q * 0, q * 0)


# ---------------------------------------------------------------- 3. bounds on payloads and armature
@pytest.mark.parametrize("field,args", [
    ("mass", (1e308, [0, 0, 0], np.zeros((3, 3)))),
    ("mass", (BOUNDS["mass"] * 1.01, [0, 0, 0], np.zeros((3, 3)))),
    ("com", (1.0, [0, 0, 1e155], np.zeros((3, 3)))),
    ("com", (1.0, [BOUNDS["length"] * 1.01, 0, 0], np.zeros((3, 3)))),
    ("inertia", (1.0, [0, 0, 0], np.eye(3) * 1e300)),
])
def test_payload_beyond_the_urdf_bounds_is_refused(field, args):
    m = rbd.Model.from_urdf(panda_urdf())
    with pytest.raises(ValueError, match=rf"^{field}: "):
        m.with_payload("panda_hand", *args)


def test_payload_and_armature_at_the_bounds_keep_every_result_finite():
    """The largest payload and armature the bounds admit: every algorithm's result is
    finite (or a ValueError naming the cause), never inf/NaN in the model."""
    m = rbd.Model.from_urdf(panda_urdf(), mimic=False)
    big = m.with_payload("panda_hand", BOUNDS["mass"], [BOUNDS["length"]] * 3, np.eye(3) * BOUNDS["inertia"])
    big = big.with_armature(np.full(m.nv, BOUNDS["armature"]))
    assert np.all(np.isfinite(big.md[np.isfinite(big.md)])) and np.all(np.isfinite(big.tree.inertia))
    q = np.full(m.nq, 0.3)
    for f, args in ((rbd.gravity, (q,)), (rbd.bias, (q, q)), (rbd.crba, (q,)), (rbd.rnea, (q, q, q)),
                    (rbd.forward_dynamics, (q, q, q)), (rbd.aba, (q, q, q))):
        try:
            assert np.all(np.isfinite(f(big, *args)))
        except ValueError as e:
            assert "ill-conditioned" in str(e) or "not finite" in str(e)


def test_armature_beyond_its_bound_is_refused():
    m = rbd.Model.from_urdf(panda_urdf(), mimic=False)
    with pytest.raises(ValueError, match=r"armature\[0\] \(panda_joint1\): expected a finite number >= 0 and <="):
        m.with_armature(np.r_[1.7e308, np.zeros(m.nv - 1)])
    with pytest.raises(ValueError, match=r"armature\['panda_joint2'\]"):
        m.with_armature({"panda_joint2": 2 * BOUNDS["armature"]})


# ---------------------------------------------------------------- 4. friction
def test_urdf_damping_beyond_its_bound_is_refused_and_friction_never_returns_inf():
    text = panda_urdf()
    huge = re.sub(r'(<joint name="panda_joint1".*?<dynamics[^>]*?)damping="[^"]*"', r'\1damping="1e308"', text,
                  count=1, flags=re.S)
    assert huge != text
    with pytest.raises(rbd.ModelError, match=r"panda_joint1.*<dynamics damping> 1e\+308 exceeds the bound"):
        rbd.Model.from_urdf(huge)
    at_bound = huge.replace('damping="1e308"', f'damping="{BOUNDS["damping"]:g}"')
    m = rbd.Model.from_urdf(at_bound)
    tau = rbd.friction(m, np.full(m.nv, 2.0))
    assert np.all(np.isfinite(tau)) and tau[0] == 2 * BOUNDS["damping"]     # the sentinel: damping is there
    with pytest.raises(ValueError, match=r"^v: the result is not finite"):
        rbd.friction(m, np.full(m.nv, 1e300))


def test_mimic_joint_dynamics_fold_into_the_master():
    text = panda_urdf()
    text = re.sub(r'(<joint name="panda_finger_joint2".*?)<dynamics[^>]*/>',
                  r'\1<dynamics damping="0.5" friction="0.2"/>', text, count=1, flags=re.S)
    m = rbd.Model.from_urdf(text)
    free = rbd.Model.from_urdf(text, mimic=False)     # the mimic joint a DOF of its own: its own terms
    mult = m.mimic_joints["panda_finger_joint2"][1]
    k, k1, k2 = m.v_index("panda_finger_joint1"), free.v_index("panda_finger_joint1"), \
        free.v_index("panda_finger_joint2")
    assert free.damping[k2] == 0.5 and free.friction[k2] == 0.2
    assert m.damping[k] == pytest.approx(free.damping[k1] + mult ** 2 * 0.5)
    assert m.friction[k] == pytest.approx(free.friction[k1] + abs(mult) * 0.2)


# ---------------------------------------------------------------- 5. complex, str, bool
@pytest.mark.parametrize("call,field", [
    (lambda m: m.with_payload("panda_hand", 1.0, np.array([0, 0, 0.1 + 1j]), np.eye(3) * 1e-3), "com"),
    (lambda m: m.with_payload("panda_hand", 1.0, [0, 0, 0.1], np.eye(3) * (1e-3 + 1e-4j)), "inertia"),
    (lambda m: m.with_armature(np.full(m.nv, 0.1 + 0.2j)), "armature"),
    (lambda m: m.with_payload("panda_hand", "1.5", [0, 0, 0], np.zeros((3, 3))), "mass"),
    (lambda m: m.with_payload("panda_hand", True, [0, 0, 0], np.zeros((3, 3))), "mass"),
    (lambda m: m.with_payload("panda_hand", 1.0 + 0j, [0, 0, 0], np.zeros((3, 3))), "mass"),
    (lambda m: m.with_payload("panda_hand", 1.0, ["0", "0", "0"], np.zeros((3, 3))), "com"),
    (lambda m: m.with_armature({"panda_joint1": "0.1"}), r"armature\['panda_joint1'\]"),
    (lambda m: m.with_armature({"panda_joint1": True}), r"armature\['panda_joint1'\]"),
    (lambda m: rbd.friction(m, np.zeros(m.nv), velocity_eps="1.5"), "velocity_eps"),
    (lambda m: rbd.friction(m, np.zeros(m.nv), velocity_eps=True), "velocity_eps"),
    (lambda m: rbd.friction(m, np.zeros(m.nv) + 0j), "v"),
    (lambda m: m.with_gravity(np.array([0, 0, -9.81 + 1j])), "gravity"),
])
def test_complex_strings_and_booleans_are_not_numbers(call, field):
    m = rbd.Model.from_urdf(panda_urdf())
    with pytest.raises(ValueError, match=rf"^{field}"):
        call(m)


# ---------------------------------------------------------------- 6. a non-Model model
def test_every_core_function_raises_type_error_for_a_non_model():
    m = rbd.Model.from_urdf(panda_urdf())
    q, z = np.zeros(m.nq), np.zeros(m.nv)
    args = {"friction": (z,), "compensation_into": (q, z, np.arange(m.nv), np.empty(m.nv)),
            "dof_indices": (), "ltdl": (np.eye(m.nv),), "ltdl_solve": (np.eye(m.nv), z),
            "external_wrench": (q, z, "panda_hand"), "MomentumObserver": (10.0,),
            "external_wrench_into": (q, z, "panda_hand", "local", np.empty(6)),
            "identify": (q[None], z[None], z[None], z[None]),
            "identify_payload": ("panda_hand", q[None], z[None], z[None], z[None]),
            "excitation_trajectory": (10.0,), "retime": (np.array([q, q]),),
            "payload_capacity": ("panda_hand", q),
            "constraint_error": (q,), "constraint_jacobian": (q,), "constraint_drift": (q, z),
            "constraint_velocity": (q, z), "constrained_forward_dynamics": (q, z, z),
            "constrained_inverse_dynamics": (q, z, z), "close_loops": (q,), "loop_velocity": (q, z),
            "constrained_forward_dynamics_into": (q, z, z, (), np.empty(m.nv), np.empty(0)),
            "constrained_inverse_dynamics_into": (q, z, z, (), np.empty(m.nv), np.empty(0)),
            "LoopCompletion": ([],), "LoopCompensation": ([],)}
    names = [n for n in rbd.__all__ if callable(getattr(rbd, n)) and n not in (
        "Model", "ModelError", "ltdl_unpack", "CollisionDetector", "RetimeResult", "PayloadCapacity",
        "Constraint", "ConstrainedForwardDynamics", "ConstrainedInverseDynamics", "LoopsNotClosed")]
    assert {"friction", "rnea", "rnea_into", "crba", "aba_into", "compensation_into"} <= set(names)
    for name in names:
        if name in args:
            a = args[name]
        else:
            from rbd_ros.core.registry import BY_NAME
            e = BY_NAME[name[:-5] if name.endswith("_into") else name]
            a = tuple(q if x == "q" else z for x in e.inputs) + tuple(o.example(m) for o in e.options)
            if name.endswith("_into"):
                a += (np.empty(e.out_shape(m)),)
        for bad in ("panda", None, 3.0):
            with pytest.raises(TypeError, match="model: expected an rbd_ros.core.Model"):
                getattr(rbd, name)(bad, *a)
