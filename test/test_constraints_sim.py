"""The mechanisms in motion and their description: 10 s of constrained forward dynamics at
1 kHz (RK4) with Baumgarte gains from slightly off the loops (e converges to the
integrator's level and stays there), energy conserved without Baumgarte to the
integrator's accuracy (RK4: 16x smaller at half the step), the URDF <constraint>
element and its errors, and other parsers ignoring it."""
import numpy as np
import pytest
from constraint_util import ACTUATED, closed_state, mechanism, rk4

import rbd_ros.core as rbd
from rbd_ros.core.constraints import reference as cref
from rbd_ros.robots import bundled_robot_path


def flow(model, tau, kp, kd, pd=None):
    """ẋ = (v, q̈) of the constrained dynamics under τ (+ a PD law pd = (dofs, q_ref, P, D)
    on the actuated joints)."""
    nq, nv = model.nq, model.nv
    qdd, lam = np.empty(nv), np.empty(sum(c.dim for c in model.constraints))
    cons = ()
    t = np.array(tau, dtype=float)

    def f(x):
        if pd is not None:
            dofs, ref, P, D = pd
            t[dofs] = tau[dofs] + P * (ref - x[dofs]) - D * x[nq + dofs]
        rbd.constrained_forward_dynamics_into(model, x[:nq], x[nq:], t, cons, qdd, lam, kp=kp, kd=kd)
        return np.concatenate([x[nq:], qdd])
    return f


@pytest.mark.parametrize("name", ["fourbar", "delta"])
def test_baumgarte_brings_the_loop_error_to_the_integrator_level(name):
    model = mechanism(name)
    rng = np.random.default_rng(20)
    q, v = closed_state(model, rng, name, speed=0.3)
    # the actuators hold the start pose (gravity torques + a PD law): the delta must not fall
    # through a singular pose, where no integrator keeps the loops closed
    hold = rbd.constrained_inverse_dynamics(model, q, np.zeros(model.nv), np.zeros(model.nv),
                                            actuated=ACTUATED[name]).tau
    dofs = np.array([model.v_index(j) for j in ACTUATED[name]])
    passive = [i for i, j in enumerate(model.joint_names) if j not in ACTUATED[name]]
    q[passive] += 1e-3 * rng.normal(size=len(passive))          # slightly off the loops
    e0 = np.linalg.norm(rbd.constraint_error(model, q))
    assert e0 > 1e-5
    f = flow(model, hold, kp=400.0, kd=40.0, pd=(dofs, q[dofs], 20.0, 2.0))
    x, dt, errs = np.concatenate([q, v]), 1e-3, []
    for k in range(10000):
        x = rk4(f, x, dt)
        if k % 100 == 99:
            errs.append(np.linalg.norm(rbd.constraint_error(model, x[:model.nq])))
    errs = np.array(errs)
    assert np.all(np.isfinite(x))
    assert errs[9] < 1e-3 * e0                     # converged within 1 s
    assert np.max(errs[50:]) < 1e-9, np.max(errs[50:])   # and stays at the integrator's level


def mechanical_energy(model, q, v):
    """½ vᵀ M v − Σ m gᵀ c (the bodies' centres of mass in the world, via the numpy twin)."""
    kin = 0.5 * v @ rbd.crba(model, q) @ v
    pot = 0.0
    g = model.gravity
    X0, _, _, _ = cref._tree_motion(model, q, np.zeros(model.nv))
    for i, X in enumerate(X0):
        R, p = cref._pose(X)
        pot -= model.tree.mass[i] * g @ (p + R @ model.tree.com[i])
    return kin + pot


@pytest.mark.parametrize("name", ["fourbar", "delta"])
def test_energy_is_conserved_to_the_integrators_accuracy(name):
    model = mechanism(name)
    q, v = closed_state(model, np.random.default_rng(21), name, speed=1.0)
    f = flow(model, np.zeros(model.nv), kp=0.0, kd=0.0)        # falling freely for 1 s
    drift = []
    for dt in (4e-3, 2e-3):
        x = np.concatenate([q, v])
        E0 = mechanical_energy(model, q, v)
        for _ in range(int(round(1.0 / dt))):
            x = rk4(f, x, dt)
        drift.append(abs(mechanical_energy(model, x[:model.nq], x[model.nq:]) - E0))
    scale = abs(E0) + 1.0
    assert drift[1] < 1e-6 * scale, drift
    assert drift[0] / drift[1] > 8.0, drift          # fourth order: ~16


URDF = """<robot name="r">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="1" lower="-3" upper="3"/></joint>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
  </inertial></link>
  {constraint}
</robot>"""


def test_the_urdf_constraint_element():
    c = rbd.Model.from_urdf(URDF.format(constraint="""
      <constraint name="c" type="revolute"><parent link="l1"/><parent_origin xyz="1 0 0" rpy="0 0 0.5"/>
        <parent_axis xyz="0 1 0"/><child link="base"/><child_origin xyz="0 1 0"/></constraint>""")).constraints
    assert len(c) == 1 and c[0].name == "c" and c[0].link_a == "l1" and c[0].link_b == "base"
    assert c[0].mask == (1, 1, 1, 1, 1, 0)
    # z of the parent frame turned onto the axis y after rpy: R = Rz(0.5) R(z -> y)
    assert np.allclose(c[0].origin_a[:3, 2], [-np.sin(0.5), np.cos(0.5), 0.0])
    assert np.allclose(c[0].origin_a[:3, 3], [1, 0, 0]) and np.allclose(c[0].origin_b[:3, 3], [0, 1, 0])
    c = rbd.Model.from_urdf(URDF.format(constraint="""
      <constraint name="w"><parent link="l1"/><mask value="1 0 1 0 0 1"/></constraint>""")).constraints
    assert c[0].link_b is None and c[0].mask == (1, 0, 1, 0, 0, 1)
    for ctype, mask in (("fixed", (1,) * 6), ("spherical", (1, 1, 1, 0, 0, 0)), ("planar", (0, 0, 1, 1, 1, 0))):
        c = rbd.Model.from_urdf(URDF.format(constraint=f'<constraint name="x" type="{ctype}"><parent link="l1"/>'
                                            '</constraint>')).constraints
        assert c[0].mask == mask


@pytest.mark.parametrize("element, message", [
    ('<constraint name="c" type="revolute"><parent link="l2"/></constraint>',
     "constraint 'c': link_a 'l2' is not a link of the model"),
    ('<constraint name="c" type="spherical"><parent link="l1"/><child link="nope"/></constraint>',
     "constraint 'c': link_b 'nope' is not a link"),
    ('<constraint name="c"><parent link="l1"/><mask value="0 0 0 0 0 0"/></constraint>',
     "constraint 'c' <mask>: every direction is 0"),
    ('<constraint name="c" type="spherical"><parent link="l1"/><mask value="1 1 1 1 0 0"/></constraint>',
     "constraint 'c' <mask>: '1 1 1 1 0 0' constrains a direction a spherical joint leaves free"),
    ('<constraint name="c" type="universal"><parent link="l1"/></constraint>', "unknown type 'universal'"),
    ('<constraint name="c" type="fixed"><child link="l1"/></constraint>', "constraint 'c': missing <parent"),
    ('<constraint name="c" type="fixed"><parent link="base"/></constraint>',
     "constraint 'c': both frames are fixed to the world"),
    ('<constraint name="c" type="fixed"><parent link="l1"/><parent_origin xyz="1 nan 0"/></constraint>',
     "constraint 'c' <parent_origin>: xyz='1 nan 0' is not finite"),
])
def test_bad_constraint_elements_are_refused_naming_the_constraint(element, message):
    with pytest.raises(rbd.ModelError, match=message.replace("(", r"\(")):
        rbd.Model.from_urdf(URDF.format(constraint=element))


def test_other_parsers_ignore_the_element():
    """urdf_parser_py (the tree) and MuJoCo's URDF import load the bundled mechanisms."""
    mujoco = pytest.importorskip("mujoco")
    for name in ("fourbar", "delta"):
        with open(bundled_robot_path(name)) as f:
            text = f.read()
        assert "<constraint" in text
        m = mujoco.MjModel.from_xml_string(text)
        assert m.nv == mechanism(name).nv and m.neq == 0
