"""The node on closed-loop mechanisms (issue 24, "Node"): the bundled four-bar and delta.

The node's model building, Robot and control step, in this process (ROS-free): joint
states of the actuated joints alone are completed (the passive joints equal
rbd.close_loops / loop_velocity; a passive joint received only seeds the solve), g, b
are the actuator torques of rbd.constrained_inverse_dynamics and λ its constraint
forces, H the tree's; computed torque; every way a loop model is refused (naming the
constraint or the parameter) while the model in use stays; at run time a state whose
loops cannot be closed, or near a singular configuration, publishes nothing and names
the constraint, and the next good state does (the sentinel).  The services and topics
over DDS: test_closed_loop_mechanisms.py (its node runs the delta)."""
import array
import logging

import numpy as np
import pytest

import rbd_ros.core as rbd
from rbd_ros.node import model_build as mb
from rbd_ros.node.control_step import ControlStep
from rbd_ros.node.model_manager import ModelManager
from rbd_ros.node.params import Params
from rbd_ros.node.stats import Stats
from rbd_ros.node.terms import TERMS
from rbd_ros.robots import read_description

ACT = {"fourbar": ("crank",), "delta": ("shoulder1", "shoulder2", "shoulder3")}
TOL = 1e-9


def build(name, **kw):
    text, where = read_description(name, "")
    kw.setdefault("actuated", ACT[name])
    return mb.build_robot(text, floating_base=False, mimic=True, gravity=(0.0, 0.0, -9.81), joints=(),
                          source=where, **kw)


def rel(got, ref):
    ref = np.asarray(ref)
    return float(np.max(np.abs(np.asarray(got) - ref)) / max(1.0, float(np.max(np.abs(ref)))))


class Step:
    """The node's control step on a Robot, every output live."""

    def __init__(self, rt, **params):
        self.rt = rt
        self.stats = Stats()
        self.step = ControlStep(TERMS, Params(max_state_age=0.0, actuated_joints=actuated_of(rt), **params),
                                logging.getLogger("test"), on_error=self.stats.error)
        self.bound = self.step.make(rt)
        self.step.bind(self.bound)
        self.step.set_live({"g", "b", "h", "lam", "cmd"}, {"ff"})
        self.t = 1.0

    def send(self, names, q, v=None):
        self.t += 0.002
        return self.step.joint_state(self.bound, self.stats, list(names), array.array("d", q),
                                     array.array("d", v if v is not None else []), [], self.t, self.t)

    def term(self, key):
        return self.bound.by_key[key]


def actuated_of(rt):
    return rt.loops.actuated if rt.loops is not None else ()


def closed(model, names, qa, va, seed=None):
    """The core's completion of the actuated joints ``names`` at (qa, va)."""
    q = np.zeros(model.nq) if seed is None else np.array(seed, dtype=float)
    q[[model.q_index(j) for j in names]] = qa
    q = rbd.close_loops(model, q, fixed=list(names))
    v = np.zeros(model.nv)
    v[[model.v_index(j) for j in names]] = va
    return q, rbd.loop_velocity(model, q, v, fixed=list(names))


@pytest.mark.parametrize("name", ["fourbar", "delta"])
def test_joint_states_of_the_actuated_joints_give_the_mechanism_s_torques(name):
    rt = build(name)
    s = Step(rt)
    m, act = rt.model, ACT[name]
    ia = [m.v_index(j) for j in act]
    rng = np.random.default_rng(5)
    assert rt.out_names == act and rt.required.tolist() == [int(n in act) for n in rt.dof_names]
    for _ in range(3):
        qa, va = rng.uniform(-0.3, 0.3, len(act)), rng.uniform(-1, 1, len(act))
        keys = s.send(act, qa, va)
        assert set(keys) == {"g", "b", "h", "lam", "cmd"}, s.stats.last_error
        q, v = closed(m, act, qa, va, seed=rt.q)
        assert np.max(np.abs(rt.q - q)) <= 1e-9 and np.max(np.abs(rt.v - v)) <= 1e-8
        comp = s.term("g")
        zero = np.zeros(m.nv)
        g = rbd.constrained_inverse_dynamics(m, q, zero, zero, actuated=list(act))
        assert rel(comp.g, g.tau[ia]) <= TOL
        a = np.zeros(m.nv)
        free = [i for i in range(m.nv) if i not in ia]
        J, gam = rbd.constraint_jacobian(m, q), rbd.constraint_drift(m, q, v)
        a[free] = np.linalg.lstsq(J[:, free], -gam, rcond=None)[0]
        b = rbd.constrained_inverse_dynamics(m, q, v, a, actuated=list(act))
        assert b.acceleration_residual <= 1e-9
        assert rel(comp.b, b.tau[ia]) <= 1e-8 and rel(comp.lam, b.lam) <= 1e-8
        assert rel(comp.h.reshape(len(act), len(act)), rbd.crba(m, q)[np.ix_(ia, ia)]) <= TOL   # the tree's H
        assert rel(s.term("cmd").array("cmd"), comp.g) <= TOL     # command_mode gravity
    # a passive joint received only seeds the solve: the same completion
    before = rt.q.copy()
    passive = [n for n in rt.dof_names if n not in act][0]
    keys = s.send(act + (passive,), before[[m.q_index(j) for j in act]].tolist() + [before[m.q_index(passive)] + 0.05],
                  [0.0] * (len(act) + 1))
    assert keys is not None and np.max(np.abs(rt.q - before)) <= 1e-9
    forces = s.term("g").forces
    assert [f[0] for f in forces] == [c.name for c in m.constraints]
    assert [f[1] for f in forces] == [c.link_a for c in m.constraints]


def test_computed_torque_and_feedforward_on_the_delta():
    rt = build("delta")
    kp, kd = 100.0, 20.0
    s = Step(rt, command_mode="computed_torque", kp=(kp,), kd=(kd,), max_desired_age=0.0, clamp_effort=False)
    m, act = rt.model, ACT["delta"]
    ia = [m.v_index(j) for j in act]
    rng = np.random.default_rng(8)
    qa, va = rng.uniform(-0.2, 0.2, 3), rng.uniform(-0.5, 0.5, 3)
    qd, vd, ad = qa + 0.01, va - 0.1, rng.uniform(-1, 1, 3)
    pt = type("P", (), {"positions": list(qd), "velocities": list(vd), "accelerations": list(ad)})()
    assert s.step.desired(s.bound, list(act), [pt], s.t) == ["ff"]
    q_ff, v_ff = closed(m, act, qd, vd, seed=rt.q)
    a = np.zeros(m.nv)
    a[ia] = ad
    free = [i for i in range(m.nv) if i not in ia]
    J, gam = rbd.constraint_jacobian(m, q_ff), rbd.constraint_drift(m, q_ff, v_ff)
    a[free] = np.linalg.lstsq(J[:, free], -gam - J[:, ia] @ ad, rcond=None)[0]
    ff = rbd.constrained_inverse_dynamics(m, q_ff, v_ff, a, actuated=list(act)).tau[ia]
    assert rel(s.term("cmd").array("ff"), ff) <= 1e-8
    s.send(act, qa, va)
    q, v = closed(m, act, qa, va, seed=rt.q)
    a = np.zeros(m.nv)
    a[ia] = ad + kp * (qd - qa) + kd * (vd - va)
    J, gam = rbd.constraint_jacobian(m, q), rbd.constraint_drift(m, q, v)
    a[free] = np.linalg.lstsq(J[:, free], -gam - J[:, ia] @ a[ia], rcond=None)[0]
    tau = rbd.constrained_inverse_dynamics(m, q, v, a, actuated=list(act)).tau[ia]
    assert rel(s.term("cmd").array("cmd"), tau) <= 1e-8
    assert np.max(np.abs(tau - s.term("g").g)) > 0.1          # not the hold


FOURBAR_YAML = """constraints:
  - name: coupler_rocker
    link_a: coupler_link
    link_b: rocker_link
    origin_a: {xyz: [0.35, 0.0, 0.0]}
    origin_b: {xyz: [0.25, 0.0, 0.0], rpy: [0.0, 0.0, -0.8537743490928347]}
    mask: [1, 1, 0, 0, 0, 0]
"""


def _fourbar_without_its_constraint():
    text, _ = read_description("fourbar", "")
    a = text.index("<constraint ")
    b = text.index("</constraint>") + len("</constraint>")
    return text[:a] + text[b:]


def test_a_constraints_file_closes_a_urdf_without_the_element(tmp_path):
    path = tmp_path / "loops.yaml"
    path.write_text(FOURBAR_YAML)
    tree = _fourbar_without_its_constraint()
    rt = mb.build_robot(tree, floating_base=False, mimic=True, gravity=(0, 0, -9.81), joints=(), source="x",
                        actuated=("crank",), constraints=mb.read_constraints_file(str(path)))
    ref = build("fourbar")
    assert rt.model.constraints == ref.model.constraints
    a, b = Step(rt), Step(ref)
    assert a.send(["crank"], [0.4]) and b.send(["crank"], [0.4])
    assert np.array_equal(a.term("g").g, b.term("g").g) and np.max(np.abs(a.term("g").g)) > 0.1
    # the file's constraints travel to the service worker as plain data
    (back,) = [mb.constraint_from_dict(d) for d in rt.options["loops"]["constraints"]]
    (c,) = ref.model.constraints
    assert (back.name, back.link_a, back.link_b, back.mask) == (c.name, c.link_a, c.link_b, c.mask)
    assert np.allclose(back.origin_a, c.origin_a, rtol=0, atol=1e-15)     # (made orthonormal again: the
    assert np.allclose(back.origin_b, c.origin_b, rtol=0, atol=1e-15)     # last bit may differ)


def test_a_model_with_loops_that_cannot_be_used_is_refused_naming_why(tmp_path):
    def refused(match, name="delta", text=None, **kw):
        src = text if text is not None else read_description(name, "")[0]
        with pytest.raises(rbd.ModelError, match=match):
            mb.build_robot(src, floating_base=False, mimic=True, gravity=(0, 0, -9.81), joints=(), source="x", **kw)

    refused(r"actuated_joints: the model has closed loops \(constraints \['wrist2_a', 'wrist3_a'\]\).*"
            r"transmissions name \['shoulder1', 'shoulder2', 'shoulder3'\]")
    refused(r"actuated_joints\[1\]: 'elbow9' is not a 1-DOF joint", actuated=("shoulder1", "elbow9"))
    far = [0.0] * 13                # the shoulders beyond the platform's reach
    far[0], far[5], far[9] = 2.5, -2.5, 2.5
    refused(r"constraint 'wrist[23]_a' keeps an error.*from initial_positions", actuated=ACT["delta"],
            initial_positions=far)
    refused(r"initial_positions: 2 values, expected 13", actuated=ACT["delta"], initial_positions=[0.0, 0.0])
    tree = _fourbar_without_its_constraint()
    for body, match in (
            (FOURBAR_YAML.replace("rocker_link", "nope_link"), "constraint 'coupler_rocker'.*nope_link"),
            (FOURBAR_YAML.replace("[1, 1, 0, 0, 0, 0]", "[0, 0, 0, 0, 0, 0]"),
             r"constraints\[0\]: constraint 'coupler_rocker': mask: every direction is 0"),
            (FOURBAR_YAML.replace("link_b:", "link_c:"), r"constraints\[0\]: unknown keys \['link_c'\]"),
            ("constraints: [", "not YAML"),
            ("loops: []", "a non-empty list 'constraints'"),
            (FOURBAR_YAML.replace("xyz: [0.35, 0.0, 0.0]", "xyz: [0.35, .nan, 0.0]"),
             r"origin_a.xyz: expected 3 finite numbers")):
        path = tmp_path / "c.yaml"
        path.write_text(body)
        with pytest.raises(rbd.ModelError, match=match):
            mb.build_robot(tree, floating_base=False, mimic=True, gravity=(0, 0, -9.81), joints=(), source="x",
                           actuated=("crank",), constraints=mb.read_constraints_file(str(path)))
    with pytest.raises(rbd.ModelError, match="cannot be read"):
        mb.read_constraints_file(str(tmp_path / "missing.yaml"))
    # a running node keeps its working model (ModelManager, as the node uses it)
    bound, errors = [], []
    mm = ModelManager(bound.append, lambda: bound[-1] if bound else None, lambda rt, text: None,
                      logging.getLogger("test"), errors.append)
    text, where = read_description("delta", "")
    assert mm.try_swap(text, where, Params(actuated_joints=ACT["delta"]))
    good = bound[-1]
    assert not mm.try_swap(text, where, Params(actuated_joints=ACT["delta"], initial_positions=tuple(far)))
    assert bound[-1] is good and "constraint 'wrist" in errors[-1] and "keeping model 'delta'" in errors[-1]


def test_a_state_whose_loops_cannot_close_or_near_a_singularity_publishes_nothing():
    rt = build("delta")
    s = Step(rt)
    act = ACT["delta"]
    assert s.send(act, [0.1, 0.0, -0.1])
    g_good = s.term("g").g.copy()
    q_good = rt.q.copy()
    assert s.send(act, [2.5, -2.5, 2.5]) is None                   # out of reach
    assert s.stats.dropped == {"loops_not_closed": 1}
    assert "constraint 'wrist" in s.stats.last_error and "cannot be closed" in s.stats.last_error
    assert np.array_equal(rt.q, q_good) and np.array_equal(s.term("g").g, g_good)   # the last closed state kept
    assert dict(s.step.diagnostics(0.0))["loop_status"].startswith("not closed: ")
    assert s.send(act, [0.1, 0.0, -0.1]) is not None                # the sentinel
    assert dict(s.step.diagnostics(0.0))["loop_status"] == "closed"
    # near a singular configuration: a limit below this state's condition estimate
    cond = rt.loops.cond
    assert 1.0 < cond < 100.0
    s.step.configure(Params(max_state_age=0.0, actuated_joints=act, loop_cond_limit=cond * 0.9))
    assert s.send(act, [0.1, 0.0, -0.1]) is None
    assert s.stats.dropped.get("near_singular") == 1
    assert "near a singular configuration" in s.stats.last_error and "constraint 'wrist" in s.stats.last_error
    assert dict(s.step.diagnostics(0.0))["loop_status"].startswith("near singular: ")
    s.step.configure(Params(max_state_age=0.0, actuated_joints=act))
    assert s.send(act, [0.1, 0.0, -0.1]) is not None
    assert dict(s.step.diagnostics(0.0))["loop_status"] == "closed"


def test_the_observer_and_the_payload_estimation_refuse_loops():
    rt = build("delta")
    step = ControlStep(TERMS, Params(actuated_joints=ACT["delta"]), logging.getLogger("test"))
    err = step.settings_error(Params(actuated_joints=ACT["delta"], observer=True), rt)
    assert err.startswith("observer: the momentum observer needs a kinematic tree")
