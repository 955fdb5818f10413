"""Write the bundled closed-loop mechanisms rbd_ros/robots/fourbar.urdf and delta.urdf.

    python scripts/make_mechanisms.py          # rewrites both files

numpy only (no rbd_ros).  Every number of the two URDFs comes from here: the
dimensions below, and masses and inertias computed from the parts' shapes and
materials (uniform bars and tubes, small spheres for joint hardware).  The joint
origins are chosen so that q = 0 is a closed configuration (the "home" pose) and
the two frames of each loop closure coincide there.  The loop closures use the
``<constraint>`` element doc/constraints.md describes.
"""
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "rbd_ros", "robots")

STEEL, ALUMINIUM, CARBON = 7850.0, 2700.0, 1600.0     # kg/m^3


# ---------------------------------------------------------------- small geometry helpers
def rot_x(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def rpy_of(R):
    """URDF roll-pitch-yaw of R = Rz(y) Ry(p) Rx(r) (away from pitch = ±pi/2)."""
    p = math.asin(max(-1.0, min(1.0, -R[2, 0])))
    r = math.atan2(R[2, 1], R[2, 2])
    y = math.atan2(R[1, 0], R[0, 0])
    assert np.allclose(rot_z(y) @ rot_y(p) @ rot_x(r), R, atol=1e-12)
    return np.array([r, p, y])


def fmt(v):
    return " ".join(repr(0.0 if abs(x) < 5e-16 else float(x)) for x in v)


# ---------------------------------------------------------------- inertias (about the centre of mass)
class Part:
    """A rigid part: mass, centre of mass and inertia about it, in its link's frame."""

    def __init__(self, m, c, Ic):
        self.m, self.c, self.Ic = float(m), np.asarray(c, float), np.asarray(Ic, float)

    def __add__(self, other):
        m = self.m + other.m
        c = (self.m * self.c + other.m * other.c) / m
        Ic = np.zeros((3, 3))
        for p in (self, other):
            d = p.c - c
            Ic += p.Ic + p.m * (d @ d * np.eye(3) - np.outer(d, d))
        return Part(m, c, Ic)


def box_x(density, length, width, thickness, start=0.0):
    """A bar along x from ``start`` (width along y, thickness along z)."""
    m = density * length * width * thickness
    Ic = np.diag([m * (width ** 2 + thickness ** 2) / 12, m * (length ** 2 + thickness ** 2) / 12,
                  m * (length ** 2 + width ** 2) / 12])
    return Part(m, [start + length / 2, 0, 0], Ic)


def tube_x(density, length, outer_d, wall, start=0.0, offset=(0.0, 0.0)):
    """A round tube along x from ``start``, its axis at (y, z) = ``offset``."""
    ro, ri = outer_d / 2, outer_d / 2 - wall
    m = density * math.pi * (ro ** 2 - ri ** 2) * length
    axial = m * (ro ** 2 + ri ** 2) / 2
    transverse = m * (3 * (ro ** 2 + ri ** 2) + length ** 2) / 12
    return Part(m, [start + length / 2, offset[0], offset[1]], np.diag([axial, transverse, transverse]))


def ball(m, at, radius):
    """Joint hardware: a solid sphere."""
    return Part(m, at, np.eye(3) * 0.4 * m * radius ** 2)


def disc_z(m, at, radius, thickness):
    """A plate: a disc in the xy plane."""
    return Part(m, at, np.diag([m * (3 * radius ** 2 + thickness ** 2) / 12] * 2 + [m * radius ** 2 / 2]))


def inertial(part, indent="    "):
    I = part.Ic
    return (f'{indent}<inertial>\n'
            f'{indent}  <origin xyz="{fmt(part.c)}" rpy="0 0 0"/>\n'
            f'{indent}  <mass value="{part.m:.6g}"/>\n'
            f'{indent}  <inertia ixx="{I[0, 0]:.6g}" ixy="{I[0, 1]:.6g}" ixz="{I[0, 2]:.6g}" '
            f'iyy="{I[1, 1]:.6g}" iyz="{I[1, 2]:.6g}" izz="{I[2, 2]:.6g}"/>\n'
            f'{indent}</inertial>\n')


def link(name, part=None):
    if part is None:
        return f'  <link name="{name}"/>\n'
    return f'  <link name="{name}">\n{inertial(part)}  </link>\n'


def joint(name, jtype, parent, child, xyz, rpy, axis=None, limit=None, dynamics=None):
    s = (f'  <joint name="{name}" type="{jtype}">\n    <parent link="{parent}"/>\n    <child link="{child}"/>\n'
         f'    <origin xyz="{fmt(xyz)}" rpy="{fmt(rpy)}"/>\n')
    if axis is not None:
        s += f'    <axis xyz="{fmt(axis)}"/>\n'
    if limit is not None:
        s += "    <limit " + " ".join(f'{k}="{v:.6g}"' for k, v in limit.items()) + "/>\n"
    if dynamics is not None:
        s += "    <dynamics " + " ".join(f'{k}="{v:.6g}"' for k, v in dynamics.items()) + "/>\n"
    return s + "  </joint>\n"


def transmission(joint_name, reduction):
    return (f'  <transmission name="{joint_name}_transmission">\n'
            f'    <type>transmission_interface/SimpleTransmission</type>\n'
            f'    <joint name="{joint_name}">\n'
            f'      <hardwareInterface>hardware_interface/EffortJointInterface</hardwareInterface>\n'
            f'    </joint>\n'
            f'    <actuator name="{joint_name}_motor">\n'
            f'      <mechanicalReduction>{reduction:g}</mechanicalReduction>\n'
            f'    </actuator>\n'
            f'  </transmission>\n')


def constraint(name, ctype, parent, parent_xyz, parent_rpy, child, child_xyz, child_rpy, mask=None):
    s = (f'  <constraint name="{name}" type="{ctype}">\n'
         f'    <parent link="{parent}"/>\n    <parent_origin xyz="{fmt(parent_xyz)}" rpy="{fmt(parent_rpy)}"/>\n'
         f'    <child link="{child}"/>\n    <child_origin xyz="{fmt(child_xyz)}" rpy="{fmt(child_rpy)}"/>\n')
    if mask is not None:
        s += f'    <mask value="{" ".join(str(int(m)) for m in mask)}"/>\n'
    return s + "  </constraint>\n"


# ---------------------------------------------------------------- the four-bar
FOURBAR_DOC = """<!--
  fourbar: a planar crank-rocker four-bar linkage in a vertical plane, bundled with
  rbd_ros as the smallest closed-loop mechanism.  Written for rbd_ros by
  scripts/make_mechanisms.py (every number comes from there).

  Ground 0.30 m (pivots A and D), crank 0.10 m (A-B, actuated joint "crank",
  continuous), coupler 0.35 m (B-C), rocker 0.25 m (D-C).  Grashof (0.10 + 0.35 <=
  0.30 + 0.25) with the crank shortest: the crank turns fully, the rocker swings
  between 71 and 127 degrees and the transmission angle stays within 34-82 degrees,
  so the passive joints (coupler, rocker) are determined by the crank everywhere.
  Mobility 3 joints - 2 loop rows = 1 = the actuated crank.

  Links: steel flat bar 30 x 8 mm (7850 kg/m^3) with 15 mm of material beyond each
  pivot; masses and inertias are those of the bars (uniform boxes).  Limits: a
  small geared servo on the crank (20 N m, 10 rad/s); the passive joints carry no
  actuator (effort 0 = no limit in rbd_ros).

  Frames: the base link is turned so that the mechanism moves in its local x-y plane
  (local y = world up, local z = world -y): every joint turns about its local z.  q = 0
  is a closed configuration (crank at 60 degrees above the ground line).

  Loop closure: the coupler's end C and the rocker's end C are joined by a revolute
  joint about z, cut here (rbd_ros <constraint>, doc/constraints.md).  In a planar
  mechanism only the two in-plane rows (vx, vy) of a revolute closure are
  independent (the other three are zero for every planar motion), so the mask says
  so: 1 1 0 0 0 0.
-->
"""


def fourbar():
    d, a, b, c = 0.30, 0.10, 0.35, 0.25
    theta0 = math.radians(60.0)
    D = np.array([d, 0.0])         # pivot A is the origin
    B = a * np.array([math.cos(theta0), math.sin(theta0)])
    # C: |C - B| = b, |C - D| = c, the upper (open) branch
    BD = D - B
    L = np.linalg.norm(BD)
    x = (b * b - c * c + L * L) / (2 * L)
    h = math.sqrt(b * b - x * x)
    e = BD / L
    C = B + x * e + h * np.array([-e[1], e[0]])
    if C[1] < 0:
        C = B + x * e - h * np.array([-e[1], e[0]])
    ang_crank = theta0
    ang_coupler = math.atan2(*(C - B)[::-1])
    ang_rocker = math.atan2(*(C - D)[::-1])
    assert abs(np.linalg.norm(C - B) - b) < 1e-12 and abs(np.linalg.norm(C - D) - c) < 1e-12

    over, width, thick = 0.015, 0.030, 0.008
    bar = {n: box_x(STEEL, length + 2 * over, width, thick, start=-over)
           for n, length in (("crank", a), ("coupler", b), ("rocker", c))}
    base = box_x(STEEL, d + 2 * over, width, thick, start=-over)

    s = '<?xml version="1.0"?>\n' + FOURBAR_DOC + '<robot name="fourbar">\n'
    s += link("world")
    s += joint("world_to_ground", "fixed", "world", "ground", [0, 0, 0.5], [math.pi / 2, 0, 0])
    s += link("ground", base)
    s += joint("crank", "continuous", "ground", "crank_link", [0, 0, 0], [0, 0, ang_crank], axis=[0, 0, 1],
               limit=dict(effort=20.0, velocity=10.0), dynamics=dict(damping=0.0, friction=0.0))
    s += link("crank_link", bar["crank"])
    s += joint("coupler", "revolute", "crank_link", "coupler_link", [a, 0, 0], [0, 0, ang_coupler - ang_crank],
               axis=[0, 0, 1], limit=dict(lower=-math.pi, upper=math.pi, effort=0.0, velocity=20.0))
    s += link("coupler_link", bar["coupler"])
    s += joint("rocker", "revolute", "ground", "rocker_link", [d, 0, 0], [0, 0, ang_rocker], axis=[0, 0, 1],
               limit=dict(lower=-1.6, upper=1.6, effort=0.0, velocity=20.0))
    s += link("rocker_link", bar["rocker"])
    s += transmission("crank", 1.0)
    # the closure's frames: at C on both bars, coinciding at q = 0 (the rocker side turned
    # by the bars' angle difference there)
    s += constraint("coupler_rocker", "revolute", "coupler_link", [b, 0, 0], [0, 0, 0],
                    "rocker_link", [c, 0, 0], [0, 0, ang_coupler - ang_rocker], mask=[1, 1, 0, 0, 0, 0])
    s += "</robot>\n"
    return s


# ---------------------------------------------------------------- the delta
DELTA_DOC = """<!--
  delta: a three-arm delta robot (a hanging parallel pick-and-place robot), bundled
  with rbd_ros as a spatial closed-loop mechanism.  Written for rbd_ros by
  scripts/make_mechanisms.py (every number comes from there).

  Dimensions of a mid-size delta picker: shoulder axes on a 0.20 m radius, upper arms
  0.35 m, forearms 0.80 m, platform joints on a 0.05 m radius; the base 1.0 m above the
  world origin, the platform about 0.78 m below the base at q = 0 (shoulders 0.4 rad
  below horizontal), which is a closed configuration.

  Kinematics: each arm is shoulder (revolute about the base tangent a, actuated), an
  upper arm, an elbow universal joint (axis a, then n = a x forearm), the forearm, a
  wrist universal joint (n, then a) and the platform: the 3-RUU equivalent of a
  delta's parallelogram forearm (the same platform positions; the three arms together
  keep the platform from turning).  Universal joints are two revolute joints with a
  small cross link between them.  The tree holds arm 1 down to the platform and
  arms 2 and 3 down to their wrist crosses; the wrist's last axis a of arms 2 and 3
  is the loop closure (rbd_ros <constraint type="revolute">, a 5D closure about the
  constraint frame's z = a).  Mobility 13 joints - 10 loop rows = 3 = the actuated
  shoulders; the 10 passive joints are determined by the shoulders away from the
  delta's singular poses (forearms parallel to the platform plane, or a forearm in
  the plane of its upper arm and shoulder axis).

  Parts: upper arm = aluminium tube 40 x 3 mm with a 0.25 kg elbow housing at its
  end; forearm = the parallelogram's two carbon-fibre tubes 16 x 1.5 mm, 0.10 m
  apart, with 20 g ball-joint ends (lumped on the forearm's axis line, their
  spread kept in the inertia); cross links 50 g (elbow) and 30 g (wrist); platform
  an aluminium plate 0.07 m in radius and 15 mm thick.  Limits: a geared servo per
  shoulder (80 N m, 20 rad/s); the passive joints carry no actuator (effort 0 = no
  limit in rbd_ros), their ranges those of ball joints (+-0.7 rad) or free.
-->
"""


def delta():
    Rb, L1, L2, rp, theta_h = 0.20, 0.35, 0.80, 0.05, 0.40
    base_z = 1.0
    phis = [0.0, 2 * math.pi / 3, 4 * math.pi / 3]
    # home: platform centred below the base, orientation = the base's
    rhat = [np.array([math.cos(p), math.sin(p), 0.0]) for p in phis]
    z = np.array([0.0, 0.0, 1.0])
    elbow = [(Rb + L1 * math.cos(theta_h)) * r - L1 * math.sin(theta_h) * z for r in rhat]
    radial = Rb + L1 * math.cos(theta_h) - rp
    depth = L1 * math.sin(theta_h) + math.sqrt(L2 ** 2 - radial ** 2)
    centre = np.array([0.0, 0.0, -depth])
    attach = [centre + rp * r for r in rhat]

    upper = tube_x(ALUMINIUM, L1, 0.040, 0.003) + ball(0.25, [L1, 0, 0], 0.03)
    rods = [tube_x(CARBON, L2, 0.016, 0.0015, offset=(y, 0.0)) for y in (-0.05, 0.05)]
    forearm = rods[0] + rods[1]
    for x in (0.0, L2):
        for y in (-0.05, 0.05):
            forearm = forearm + ball(0.02, [x, y, 0], 0.01)
    # the rods' spread is kept in the inertia, their mass centred on the axis line
    forearm = Part(forearm.m, [L2 / 2, 0, 0], forearm.Ic)
    elbow_cross = ball(0.05, [0, 0, 0], 0.015)
    wrist_cross = ball(0.03, [0, 0, 0], 0.012)
    platform = disc_z(ALUMINIUM * math.pi * 0.07 ** 2 * 0.015, [0, 0, 0], 0.07, 0.015)
    base = disc_z(8.0, [0, 0, 0.02], 0.30, 0.04)

    s = '<?xml version="1.0"?>\n' + DELTA_DOC + '<robot name="delta">\n'
    s += link("world")
    s += joint("world_to_base", "fixed", "world", "base", [0, 0, base_z], [0, 0, 0])
    s += link("base", base)
    closures = []
    for i, (phi, r) in enumerate(zip(phis, rhat), start=1):
        U = rot_z(phi) @ rot_y(theta_h)                  # upper arm frame: x along the arm
        u = (attach[i - 1] - elbow[i - 1]) / L2          # forearm direction (world)
        ul = U.T @ u
        assert abs(ul[1]) < 1e-12
        beta = math.atan2(-ul[2], ul[0])
        W = U @ rot_y(beta)                              # forearm / wrist frame: x along the forearm
        assert np.allclose(W[:, 0], u, atol=1e-12)
        shoulder = dict(lower=-0.35 - theta_h, upper=1.4 - theta_h, effort=80.0, velocity=20.0)
        free = dict(lower=-math.pi, upper=math.pi, effort=0.0, velocity=40.0)
        ball_range = dict(lower=-0.7, upper=0.7, effort=0.0, velocity=40.0)
        s += joint(f"shoulder{i}", "revolute", "base", f"upper_arm{i}", Rb * r, [0, theta_h, phi], axis=[0, 1, 0],
                   limit=shoulder)
        s += link(f"upper_arm{i}", upper)
        s += joint(f"elbow{i}_a", "revolute", f"upper_arm{i}", f"elbow_cross{i}", [L1, 0, 0], [0, beta, 0],
                   axis=[0, 1, 0], limit=free)
        s += link(f"elbow_cross{i}", elbow_cross)
        s += joint(f"elbow{i}_n", "revolute", f"elbow_cross{i}", f"forearm{i}", [0, 0, 0], [0, 0, 0],
                   axis=[0, 0, 1], limit=ball_range)
        s += link(f"forearm{i}", forearm)
        s += joint(f"wrist{i}_n", "revolute", f"forearm{i}", f"wrist_cross{i}", [L2, 0, 0], [0, 0, 0],
                   axis=[0, 0, 1], limit=ball_range)
        s += link(f"wrist_cross{i}", wrist_cross)
        if i == 1:
            # the platform frame: at arm 1's wrist point, axes of the base
            s += joint("wrist1_a", "revolute", "wrist_cross1", "platform", [0, 0, 0], rpy_of(W.T), axis=[0, 1, 0],
                       limit=free)
            s += link("platform", platform.__class__(platform.m, -rp * rhat[0], platform.Ic))
            s += joint("platform_to_tool", "fixed", "platform", "tool0", -rp * rhat[0] + [0, 0, -0.0075], [0, 0, 0])
            s += link("tool0")
        else:
            # closure frames: z along a (the wrist cross's y), coinciding at q = 0
            frame_in_wrist = rot_x(-math.pi / 2)
            frame_in_platform = W @ frame_in_wrist
            closures.append(constraint(f"wrist{i}_a", "revolute", f"wrist_cross{i}", [0, 0, 0],
                                       rpy_of(frame_in_wrist), "platform", attach[i - 1] - attach[0],
                                       rpy_of(frame_in_platform)))
    for i in (1, 2, 3):
        s += transmission(f"shoulder{i}", 1.0)
    s += "".join(closures)
    s += "</robot>\n"
    return s


if __name__ == "__main__":
    for name, text in (("fourbar", fourbar()), ("delta", delta())):
        path = os.path.normpath(os.path.join(OUT, name + ".urdf"))
        with open(path, "w") as f:
            f.write(text)
        print("wrote", path)
