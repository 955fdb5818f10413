"""Builder: the flat model vector ``md`` (see layout.py) from body rows.

:mod:`rbd_ros.core.urdf` flattens a URDF into one row of ``NCOL`` numbers per
elementary body; this module turns those rows into the read-only vector the
kernels read (:func:`pack_model_data`) and computes the LᵀDL elimination tree
(:func:`dof_elimination_tree`).  It depends on the layout and the Model
module's gravity check, never on the URDF parser.
"""
import numpy as np

from .joints import FREE
from .layout import (
    C_JTYPE,
    C_PARENT,
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
    INT_COLS,
    NCOL,
)


def pack_model_data(body_rows, dof_parent, mimic_pairs, nq, nv, nvf, gravity):
    """Assemble the flat model vector (see layout.py): header, body rows,
    mimic pairs, then each DOF's ancestor list in the LᵀDL elimination tree
    given by ``dof_parent`` (from :func:`dof_elimination_tree`), then the
    armature (zero here: ``Model.with_armature`` writes it)."""
    nb = len(body_rows)
    nmim = len(mimic_pairs)
    off_body = HEADER
    off_mimic = off_body + nb * NCOL
    # ancestor lists: nv + 1 offsets (absolute, into md), then each DOF's
    # ancestors in the elimination tree, nearest first
    chains = []
    for k in range(nv):
        chain, j = [], int(dof_parent[k])
        while j >= 0:
            chain.append(j)
            j = int(dof_parent[j])
        chains.append(chain)
    off_anc = off_mimic + 2 * nmim
    off_arm = off_anc + nv + 1 + sum(len(c) for c in chains)
    md = np.zeros(off_arm + nv)
    mi = md.view(np.int64)               # the integer entries (layout.py)
    mi[H_OFF_ARM] = off_arm
    mi[H_NB], mi[H_NV], mi[H_NQ], mi[H_NVF], mi[H_NMIM] = nb, nv, nq, nvf, nmim
    md[H_GRAV:H_GRAV + 3] = gravity      # checked by the caller (urdf._gravity)
    mi[H_OFF_BODY], mi[H_OFF_MIMIC], mi[H_OFF_ANC] = off_body, off_mimic, off_anc
    if nb:
        rows = np.asarray(body_rows, dtype=float)
        md[off_body:off_mimic] = rows.reshape(-1)
        table = mi[off_body:off_mimic].reshape(nb, NCOL)
        for c in INT_COLS:
            table[:, c] = rows[:, c].astype(np.int64)
    if nmim:
        mi[off_mimic:off_anc] = np.asarray(mimic_pairs, dtype=np.int64).reshape(-1)
    pos = off_anc + nv + 1
    for k, chain in enumerate(chains):
        mi[off_anc + k] = pos
        mi[pos:pos + len(chain)] = chain
        pos += len(chain)
    mi[off_anc + nv] = pos
    md.setflags(write=False)
    return md


def dof_elimination_tree(body_rows, nv):
    """DOF parent array for the LᵀDL factorisation.

    Builds the structural pattern of H (ancestor pairs of bodies, mapped to
    their DOFs, masters for mimic joints) and runs symbolic elimination from
    the last DOF down: par[k] is the largest column of row k's pattern below k,
    and row k's other entries fill into row par[k].  Without mimic joints this
    is exactly the kinematic tree's DOF parent."""
    nb = len(body_rows)
    parent = [int(r[C_PARENT]) for r in body_rows]
    dofs = []
    for r in body_rows:
        n = 6 if int(r[C_JTYPE]) == FREE else 1
        dofs.append([int(r[C_VI]) + c for c in range(n)])
    pattern = [set() for _ in range(nv)]
    for i in range(nb):
        j = i
        while j >= 0:
            for a in dofs[i]:
                for b in dofs[j]:
                    if a != b:
                        hi, lo = max(a, b), min(a, b)
                        pattern[hi].add(lo)
            j = parent[j]
    par = np.full(nv, -1, dtype=float)
    for k in range(nv - 1, -1, -1):
        below = {c for c in pattern[k] if c < k}
        if below:
            p = max(below)
            par[k] = p
            pattern[p] |= below - {p}
    return par

