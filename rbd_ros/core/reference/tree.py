"""The Model's body table as a list of plain records (spatial_v2's ``model``
struct: ``parent``, ``jtype``, ``Xtree``, ``I``), read from ``model.md``
through the column constants of ``layout.py``."""
from dataclasses import dataclass

import numpy as np

from ..joints import FREE, REVOLUTE
from ..layout import (
    C_AXIS,
    C_ET,
    C_FV,
    C_H,
    C_IBAR,
    C_JTYPE,
    C_MASS,
    C_MIMIC,
    C_MULT,
    C_OFFSET,
    C_PARENT,
    C_QI,
    C_RT,
    C_VI,
    H_NB,
    H_NVF,
    body_row,
)
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
    md, mi = model.md, model.mi      # the float and the integer entries (layout.py)
    out = []
    for i in range(int(mi[H_NB])):
        o = int(body_row(mi, i))
        jt = int(mi[o + C_JTYPE])
        E = md[o + C_ET:o + C_ET + 9].reshape(3, 3)
        out.append(Body(parent=int(mi[o + C_PARENT]),
                        jtype="free" if jt == FREE else ("revolute" if jt == REVOLUTE else "prismatic"),
                        axis=md[o + C_AXIS:o + C_AXIS + 3].copy(),
                        qi=int(mi[o + C_QI]), vi=int(mi[o + C_VI]), fv=int(mi[o + C_FV]),
                        mult=float(md[o + C_MULT]), offset=float(md[o + C_OFFSET]),
                        mimic=bool(mi[o + C_MIMIC]),
                        Xtree=plux(E, md[o + C_RT:o + C_RT + 3]),
                        I=inertia(md[o + C_MASS], md[o + C_H:o + C_H + 3], md[o + C_IBAR:o + C_IBAR + 9])))
    return out


def full_size(model):
    """Length of the full velocity vector (mimic joints counted as DOFs)."""
    return int(model.mi[H_NVF])


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
