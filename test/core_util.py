"""Helpers shared by the tests (ROS-free): random URDF trees built in code (no
files), error measures and the bundled arm's joint names."""
import numpy as np

TYPES = ("revolute", "continuous", "prismatic", "fixed", "planar")


def _inertial(rng, mass=None):
    m = rng.uniform(0.2, 3.0) if mass is None else mass
    # a physically consistent inertia: random principal moments satisfying the
    # triangle inequality, rotated by a random rpy
    p = rng.uniform(0.01, 0.1, 3)
    p[2] = rng.uniform(abs(p[0] - p[1]) + 1e-3, p[0] + p[1])
    A = np.diag(p)
    return (f'<inertial><origin xyz="{" ".join(map(str, rng.uniform(-0.1, 0.1, 3)))}" '
            f'rpy="{" ".join(map(str, rng.uniform(-1, 1, 3)))}"/><mass value="{m}"/>'
            f'<inertia ixx="{A[0, 0]}" ixy="0" ixz="0" iyy="{A[1, 1]}" iyz="0" izz="{A[2, 2]}"/></inertial>')


def random_tree_urdf(seed, n_joints=8, types=TYPES, mimic=0, massless_root=True):
    """URDF text of a random kinematic tree: random parents, joint types,
    axes (including negative ones), origins, inertials with rpy != 0.
    ``mimic``: how many revolute joints mimic an earlier revolute joint."""
    rng = np.random.default_rng(seed)
    links = ['<link name="base"/>' if massless_root else f'<link name="base">{_inertial(rng)}</link>']
    joints = []
    revolutes = []
    for k in range(1, n_joints + 1):
        idx = int(rng.integers(0, k))
        parent = "base" if idx == 0 else f"l{idx}"
        t = types[rng.integers(len(types))]
        axis = rng.normal(size=3)
        if rng.random() < 0.3:
            axis = np.zeros(3)
            axis[rng.integers(3)] = rng.choice([-1.0, 1.0])
        mim = ""
        if t == "revolute" and mimic and revolutes and rng.random() < 0.7:
            mimic -= 1
            mim = (f'<mimic joint="{revolutes[rng.integers(len(revolutes))]}" '
                   f'multiplier="{rng.uniform(-2, 2):.3f}" offset="{rng.uniform(-0.5, 0.5):.3f}"/>')
        elif t == "revolute":
            revolutes.append(f"j{k}")
        lim = '<limit lower="-3" upper="3" effort="100" velocity="5"/>' if t in ("revolute", "prismatic") else ""
        joints.append(
            f'<joint name="j{k}" type="{t}"><parent link="{parent}"/><child link="l{k}"/>'
            f'<origin xyz="{" ".join(map(str, rng.uniform(-0.3, 0.3, 3)))}" '
            f'rpy="{" ".join(map(str, rng.uniform(-1.5, 1.5, 3)))}"/>'
            f'<axis xyz="{" ".join(map(str, axis))}"/>{lim}{mim}</joint>')
        links.append(f'<link name="l{k}">{_inertial(rng)}</link>')
    return f'<robot name="random{seed}">' + "".join(links) + "".join(joints) + "</robot>"


def random_state(model, rng, scale=1.0):
    q = rng.uniform(-scale, scale, model.nq)
    for t, i in zip(model.joint_types, model.idx_q):
        if t == "floating":
            u = rng.normal(size=4)
            q[i + 3:i + 7] = u / np.linalg.norm(u)
    return q, rng.uniform(-scale, scale, model.nv), rng.uniform(-scale, scale, model.nv)


def integrate(model, q, v, dt):
    """q (+) v dt, with the free-flyer's quaternion and body-frame velocity."""
    q = q + 0.0
    for t, iq, iv, nq in zip(model.joint_types, model.idx_q, model.idx_v, model.joint_nq):
        if t != "floating":
            q[iq:iq + nq] += v[iv:iv + nq] * dt
            continue
        x, y, z, w = q[iq + 3:iq + 7]
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        q[iq:iq + 3] += R @ v[iv:iv + 3] * dt
        wb = v[iv + 3:iv + 6] * dt
        ang = np.linalg.norm(wb)
        dqv = wb / ang * np.sin(ang / 2) if ang > 0 else wb / 2
        dq = np.array([*dqv, np.cos(ang / 2)])
        # quaternion product q * dq (body-frame increment), (x y z w) order
        a, b = np.array([x, y, z, w]), dq
        prod = np.array([a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
                         a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
                         a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
                         a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2]])
        q[iq + 3:iq + 7] = prod / np.linalg.norm(prod)
    return q


def rel_err(got, ref) -> float:
    """max |got - ref| / max |ref| (absolute when ref is all zeros); shapes must match."""
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    if got.shape != ref.shape:
        raise AssertionError(f"shape {got.shape} != reference shape {ref.shape}")
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    return err / scale if scale > 0 else err


def close_abs(got, ref, tol=1e-9) -> bool:
    """got is not None, has ref's shape and max |got - ref| <= tol (absolute)."""
    if got is None:
        return False
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    return got.shape == ref.shape and float(np.max(np.abs(got - ref), initial=0.0)) <= tol


def close_rel(got, ref, tol=1e-9) -> bool:
    """got is not None, has ref's shape and max |got - ref| <= tol * max(1, max |ref|)."""
    if got is None:
        return False
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    scale = max(1.0, float(np.max(np.abs(ref), initial=0.0)))
    return got.shape == ref.shape and float(np.max(np.abs(got - ref), initial=0.0)) <= tol * scale


ARM_JOINTS = [f"joint{i}" for i in range(1, 8)]      # the bundled rbd_arm7 (and panda) arm joints


# ----------------------------------------------------------------------------- URDF text in code

def urdf_inertial(m=1.0, i=0.1, xyz="0 0 0", rpy="0 0 0"):
    """An <inertial>: mass ``m``, inertia ``i`` on the diagonal, at origin ``xyz`` ``rpy``."""
    return (f'<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{m}"/>'
            f'<inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>')


def urdf_link(name, body=None):
    """A <link> with ``body`` inside (default: urdf_inertial())."""
    return f'<link name="{name}">{urdf_inertial() if body is None else body}</link>'


def urdf_joint(name, parent, child, type_="revolute", axis="0 0 1", xyz="0 0 0", rpy="0 0 0", extra=""):
    """A <joint>, with limits where its type needs them and ``extra`` XML inside."""
    lim = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' if type_ in ("revolute", "prismatic") else ""
    return (f'<joint name="{name}" type="{type_}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{lim}{extra}</joint>')


def urdf_robot(links, joints, name="r"):
    return f'<robot name="{name}">{"".join(links)}{"".join(joints)}</robot>'
