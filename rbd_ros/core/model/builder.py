"""Builder: the flat model vector ``md`` the kernels read (see layout.py), packed
from a :class:`~rbd_ros.core.model.tree.KinematicTree`.

:func:`topology` derives what depends on the tree's structure only (full
velocity indices, subtree ends, mimic pairs, the LᵀDL elimination tree); a
model that changes only numbers (payload, armature, gravity) reuses it.
:func:`pack` writes the vector.  Nothing here reads URDF.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..algorithms.joints import FREE, PRISMATIC, REVOLUTE
from ..algorithms.layout import (
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
    C_SUBEND,
    C_VI,
    H_GRAV,
    H_NB,
    H_NMIM,
    H_NQ,
    H_NV,
    H_NVF,
    H_OFF_ANC,
    H_OFF_ARM,
    H_OFF_BODY,
    H_OFF_MIMIC,
    HEADER,
    NCOL,
)

JTYPE_CODE = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "free": FREE}


@dataclass(frozen=True)
class Topology:
    """The tree's structure as the kernels need it (read-only, shared by derived models)."""
    fv: np.ndarray            # (nb,) first index of each body's joint in the full velocity vector
    subend: np.ndarray        # (nb,) last body of each body's subtree (depth-first order)
    mimic_pairs: tuple        # (dependent body, master body) per mimic joint
    chains: tuple             # per DOF: its ancestors in the LᵀDL elimination tree, nearest first
    nvf: int                  # length of the full velocity vector (mimic joints counted)


def topology(tree) -> Topology:
    nb = tree.nbodies
    nvs = [tree.nv_of(i) for i in range(nb)]
    fv = np.cumsum([0] + nvs[:-1]).astype(np.int64) if nb else np.zeros(0, dtype=np.int64)
    subend = np.arange(nb, dtype=np.int64)
    for b in range(nb - 1, -1, -1):
        p = int(tree.parent[b])
        if p >= 0:
            subend[p] = max(subend[p], subend[b])
    masters = {int(tree.v_index[i]): i for i in range(nb) if not tree.mimic[i]}
    pairs = tuple((i, masters[int(tree.v_index[i])]) for i in range(nb) if tree.mimic[i])
    par = dof_elimination_tree(tree)
    chains = []
    for k in range(tree.nv):
        chain, j = [], int(par[k])
        while j >= 0:
            chain.append(j)
            j = int(par[j])
        chains.append(tuple(chain))
    return Topology(fv=fv, subend=subend, mimic_pairs=pairs, chains=tuple(chains), nvf=int(sum(nvs)))


def dof_elimination_tree(tree) -> np.ndarray:
    """DOF parent array for the LᵀDL factorisation.

    Builds the structural pattern of H (ancestor pairs of bodies, mapped to
    their DOFs, masters for mimic joints) and runs symbolic elimination from
    the last DOF down: par[k] is the largest column of row k's pattern below k,
    and row k's other entries fill into row par[k].  Without mimic joints this
    is exactly the kinematic tree's DOF parent."""
    nb, nv = tree.nbodies, tree.nv
    dofs = [[int(tree.v_index[i]) + c for c in range(tree.nv_of(i))] for i in range(nb)]
    pattern: list[set[int]] = [set() for _ in range(nv)]
    for i in range(nb):
        j = i
        while j >= 0:
            for a in dofs[i]:
                for b in dofs[j]:
                    if a != b:
                        pattern[max(a, b)].add(min(a, b))
            j = int(tree.parent[j])
    par = np.full(nv, -1, dtype=np.int64)
    for k in range(nv - 1, -1, -1):
        below = {c for c in pattern[k] if c < k}
        if below:
            p = max(below)
            par[k] = p
            pattern[p] |= below - {p}
    return par


def pack(tree, topo: Topology) -> np.ndarray:
    """The flat model vector (layout.py): header, body rows, mimic pairs, each DOF's
    ancestor list in the LᵀDL elimination tree, the armature.  Read-only."""
    nb, nv = tree.nbodies, tree.nv
    nmim = len(topo.mimic_pairs)
    off_body = HEADER
    off_mimic = off_body + nb * NCOL
    off_anc = off_mimic + 2 * nmim
    off_arm = off_anc + nv + 1 + sum(len(c) for c in topo.chains)
    md = np.zeros(off_arm + nv)
    mi = md.view(np.int64)               # the integer entries (layout.py)
    mi[H_NB], mi[H_NV], mi[H_NQ], mi[H_NVF], mi[H_NMIM] = nb, nv, tree.nq, topo.nvf, nmim
    mi[H_OFF_BODY], mi[H_OFF_MIMIC], mi[H_OFF_ANC], mi[H_OFF_ARM] = off_body, off_mimic, off_anc, off_arm
    md[H_GRAV:H_GRAV + 3] = tree.gravity
    if nb:
        rows = md[off_body:off_mimic].reshape(nb, NCOL)
        irows = mi[off_body:off_mimic].reshape(nb, NCOL)
        irows[:, C_PARENT] = tree.parent
        irows[:, C_JTYPE] = [JTYPE_CODE[t] for t in tree.joint_type]
        irows[:, C_QI] = tree.q_index
        irows[:, C_VI] = tree.v_index
        irows[:, C_FV] = topo.fv
        irows[:, C_MIMIC] = tree.mimic
        irows[:, C_SUBEND] = topo.subend
        rows[:, C_MULT] = tree.multiplier
        rows[:, C_OFFSET] = tree.offset
        rows[:, C_ET:C_ET + 9] = np.transpose(tree.placement_R, (0, 2, 1)).reshape(nb, 9)   # E = Rᵀ
        rows[:, C_RT:C_RT + 3] = tree.placement_p
        rows[:, C_AXIS:C_AXIS + 3] = tree.axis
        rows[:, C_MASS] = tree.mass
        rows[:, C_H:C_H + 3] = tree.mass_com
        rows[:, C_IBAR:C_IBAR + 9] = tree.inertia.reshape(nb, 9)
    if nmim:
        mi[off_mimic:off_anc] = np.asarray(topo.mimic_pairs, dtype=np.int64).reshape(-1)
    pos = off_anc + nv + 1
    for k, chain in enumerate(topo.chains):
        mi[off_anc + k] = pos
        mi[pos:pos + len(chain)] = chain
        pos += len(chain)
    mi[off_anc + nv] = pos
    md[off_arm:off_arm + nv] = tree.armature
    md.setflags(write=False)
    return md
