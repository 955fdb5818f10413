"""The Model's bodies as a list of plain records (spatial_v2's ``model``
struct: ``parent``, ``jtype``, ``Xtree``, ``I``), read from the public tree
view ``model.tree`` only (never from the packed vector the kernels read, so a
packing bug shows as a disagreement)."""
from dataclasses import dataclass

import numpy as np

from .spatial import inertia, plux


@dataclass
class Body:
    parent: int           # parent body, -1 for the world
    jtype: str            # "revolute", "prismatic" or "free"
    axis: np.ndarray      # joint axis u (1-DOF joints)
    qi: int               # first index in q (the master's for a mimic joint)
    vi: int               # first index in v (the master's for a mimic joint)
    fv: int               # first index in the full velocity vector (mimic joints own one there)
    mult: float           # mimic multiplier (1 otherwise)
    offset: float         # mimic offset (0 otherwise)
    mimic: bool           # a dependent joint: q_i = mult q[qi] + offset, no DOF of its own
    Xtree: np.ndarray     # 6x6 tree transform X_T, parent frame -> joint frame
    I: np.ndarray         # 6x6 spatial inertia about the body origin, body frame

    @property
    def nv(self):
        return 6 if self.jtype == "free" else 1

    @property
    def dofs(self):
        """Indices in the user's v read by this joint."""
        return np.arange(self.vi, self.vi + self.nv)

    @property
    def full_dofs(self):
        """Indices in the full velocity vector (every mimic joint its own DOF)."""
        return np.arange(self.fv, self.fv + self.nv)


def bodies(model):
    """The model's bodies in topological order (parent before child)."""
    t = model.tree
    out, fv = [], 0
    for i in range(len(t.joint_type)):
        jt = t.joint_type[i]
        out.append(Body(parent=int(t.parent[i]), jtype=jt, axis=t.axis[i].copy(),
                        qi=int(t.q_index[i]), vi=int(t.v_index[i]), fv=fv,
                        mult=float(t.multiplier[i]), offset=float(t.offset[i]), mimic=bool(t.mimic[i]),
                        Xtree=plux(t.placement_R[i].T, t.placement_p[i]),
                        I=inertia(t.mass[i], t.mass_com[i], t.inertia[i].reshape(-1))))
        fv += 6 if jt == "free" else 1
    return out


def full_size(model):
    """Length of the full velocity vector (mimic joints counted as DOFs)."""
    return sum(b.nv for b in bodies(model))


def a_grav(model):
    """Spatial gravity acceleration [0; g] in the world frame (a_0 = -a_grav)."""
    return np.concatenate([np.zeros(3), model.gravity])


def mimic_map(model):
    """G (nv_full x nv): v_full = G v.  A mimic joint's row holds its multiplier
    in its master's column; then H = Gᵀ H_full G and tau = Gᵀ tau_full."""
    G = np.zeros((full_size(model), model.nv))
    for b in bodies(model):
        G[np.ix_(b.full_dofs, b.dofs)] = b.mult * np.eye(b.nv)
    return G
