"""The public tree view ``model.tree`` (issue 16, item 4): what it holds is
Pinocchio's model of the same URDF (parents, joint placements, inertias, q/v
indices), the packed vector the kernels read says the same thing, payloads and
armature change it, and the reference twin reads the model through it only."""
import ast
import glob
import os

import numpy as np
import oracle as orc
import pinocchio as pin
import pytest
from core_util import random_tree_urdf

import rbd_ros.core as rbd
from rbd_ros.core.algorithms import layout
from rbd_ros.core.model import builder
from rbd_ros.core.model.tree import KinematicTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("robot", ["panda", "ur5", "solo12", "talos_full_v2"])
def test_tree_is_pinocchios_model(robot):
    """Per body (= Pinocchio joint, matched by name): parent, joint placement,
    mass, com, inertia about the com, idx_q / idx_v.  Mimic joints off, as
    Pinocchio's default; fixed base."""
    m = rbd.Model.from_urdf(orc.robot_urdf(robot), mimic=False)
    pm = pin.buildModelFromUrdf(orc.robot_urdf(robot))
    t = m.tree
    assert isinstance(t, KinematicTree) and t.nbodies == pm.njoints - 1 == m.nbodies
    ours = {name: i for i, name in enumerate(t.joint)}
    for j in range(1, pm.njoints):
        i = ours[pm.names[j]]
        p = pm.parents[j]
        assert t.parent[i] == (-1 if p == 0 else ours[pm.names[p]])
        X = pm.jointPlacements[j]
        np.testing.assert_allclose(t.placement_R[i], X.rotation, atol=1e-12)
        np.testing.assert_allclose(t.placement_p[i], X.translation, atol=1e-12)
        I = pm.inertias[j]
        assert abs(t.mass[i] - I.mass) <= 1e-12 * max(1.0, I.mass)
        np.testing.assert_allclose(t.com[i], I.lever, atol=1e-12)
        np.testing.assert_allclose(t.inertia_com[i], I.inertia, atol=1e-10)
        jm = pm.joints[j]
        if jm.nq == 2:     # continuous: Pinocchio stores (cos, sin)
            assert t.joint_type[i] == "revolute"
        else:
            assert t.q_index[i] == m.q_index(pm.names[j])
        assert t.v_index[i] == m.v_index(pm.names[j])     # (talos: children in another order than Pinocchio's)
        assert t.nv_of(i) == jm.nv


def test_fields_are_read_only_and_typed():
    m = rbd.Model.from_urdf(random_tree_urdf(29, 9, mimic=2), floating_base=True)
    t = m.tree
    nb = t.nbodies
    shapes = {"parent": (nb,), "axis": (nb, 3), "placement_R": (nb, 3, 3), "placement_p": (nb, 3),
              "mass": (nb,), "mass_com": (nb, 3), "inertia": (nb, 3, 3), "q_index": (nb,), "v_index": (nb,),
              "mimic": (nb,), "multiplier": (nb,), "offset": (nb,), "gravity": (3,), "armature": (m.nv,)}
    for name, shape in shapes.items():
        x = getattr(t, name)
        assert x.shape == shape and not x.flags.writeable, name
        with pytest.raises(ValueError):
            x[...] = 0
    assert t.parent.dtype == np.int64 and t.mimic.dtype == bool
    assert set(t.joint_type) <= {"revolute", "prismatic", "free"} and t.joint_type[0] == "free"
    assert t.mimic.sum() == len(m.mimic_joints) == 2
    for name, (master, mult, off) in m.mimic_joints.items():
        i = t.joint.index(name)
        assert t.mimic[i] and t.multiplier[i] == mult and t.offset[i] == off
        assert t.v_index[i] == m.v_index(master)
    assert [lp.name for lp in t.links] == list(m.link_names)
    with pytest.raises(AttributeError):     # frozen dataclass
        t.mass = np.zeros(nb)


def _unpack(model):
    """The kernels' view of the model: the packed vector read back through layout.py."""
    md, mi = model.md, model.mi
    o = int(mi[layout.H_OFF_BODY])
    rows = md[o:o + model.nbodies * layout.NCOL].reshape(-1, layout.NCOL)
    irows = mi[o:o + model.nbodies * layout.NCOL].reshape(-1, layout.NCOL)
    a = int(mi[layout.H_OFF_ARM])
    return dict(parent=irows[:, layout.C_PARENT], q_index=irows[:, layout.C_QI], v_index=irows[:, layout.C_VI],
                mimic=irows[:, layout.C_MIMIC].astype(bool), multiplier=rows[:, layout.C_MULT],
                offset=rows[:, layout.C_OFFSET], axis=rows[:, layout.C_AXIS:layout.C_AXIS + 3],
                placement_R=rows[:, layout.C_ET:layout.C_ET + 9].reshape(-1, 3, 3).transpose(0, 2, 1),
                placement_p=rows[:, layout.C_RT:layout.C_RT + 3], mass=rows[:, layout.C_MASS],
                mass_com=rows[:, layout.C_H:layout.C_H + 3],
                inertia=rows[:, layout.C_IBAR:layout.C_IBAR + 9].reshape(-1, 3, 3),
                gravity=md[layout.H_GRAV:layout.H_GRAV + 3], armature=md[a:a + model.nv])


@pytest.mark.parametrize("seed,fb,nmim", [(29, False, 2), (32, True, 0), (21, True, 2)])
def test_packed_vector_says_what_the_tree_says(seed, fb, nmim):
    m = rbd.Model.from_urdf(random_tree_urdf(seed, 9, mimic=nmim), floating_base=fb)
    m = m.with_armature(np.linspace(0, 0.1, m.nv) * (np.array(m.tree.mass).size > 0)) \
        if "floating" not in m.joint_types else m
    m = m.with_payload(m.link_names[-1], 0.7, [0.01, 0.02, 0.03], np.diag([1e-3, 2e-3, 2.5e-3]))
    for name, packed in _unpack(m).items():
        np.testing.assert_array_equal(packed, getattr(m.tree, name), err_msg=name)


def test_payload_armature_gravity_change_the_tree():
    m = rbd.Model.from_urdf(orc.robot_urdf("panda"))
    lp = m.tree.link_placement("panda_hand")
    m2 = m.with_payload("panda_hand", 1.5, [0, 0, 0.05], np.zeros((3, 3)))
    dm = m2.tree.mass - m.tree.mass
    assert dm[lp.body] == pytest.approx(1.5) and np.count_nonzero(dm) == 1
    c = lp.p + lp.R @ np.array([0, 0, 0.05])
    np.testing.assert_allclose(m2.tree.mass_com[lp.body] - m.tree.mass_com[lp.body], 1.5 * c, atol=1e-15)
    assert m2.base_tree is m.tree and m2.without_payload("panda_hand").tree.mass.tolist() == m.tree.mass.tolist()
    m3 = m2.with_armature({"panda_joint1": 0.2})
    assert m3.tree.armature[0] == 0.2 and m3.tree.mass.tolist() == m2.tree.mass.tolist()
    assert m3.with_gravity([0, 0, -1]).tree.gravity.tolist() == [0, 0, -1]


def test_reference_twin_reads_no_packed_data():
    """The reference twin imports nothing from layout, builder, joints or the kernels,
    and reads no md/mi: a packing bug cannot be shared by kernel and oracle."""
    forbidden = {"layout", "builder", "joints", "algorithms", "spatial", "api", "registry"}
    for path in glob.glob(os.path.join(ROOT, "rbd_ros", "core", "reference", "*.py")):
        tree = ast.parse(open(path).read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                assert node.level <= 1 or mod.split(".")[0] not in forbidden, (path, mod)
                if node.level == 2:
                    assert mod.split(".")[0] not in forbidden, (path, mod)
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("md", "mi", "md_k"), (path, node.attr)


def test_topology_is_shared_by_derived_models():
    m = rbd.Model.from_urdf(orc.robot_urdf("talos_full_v2"))
    m2 = m.with_payload(m.link_names[5], 1.0, [0, 0, 0], np.zeros((3, 3))).with_gravity([0, 0, -3])
    assert m2._topology is m._topology
    fresh = builder.topology(m2.tree)
    for name in ("fv", "subend"):
        np.testing.assert_array_equal(getattr(fresh, name), getattr(m._topology, name))
    assert fresh.chains == m._topology.chains and fresh.mimic_pairs == m._topology.mimic_pairs
