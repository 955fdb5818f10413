"""Named views of a model's workspace after a kernel call (a debugging aid,
like reading Pinocchio's ``data.oMi[i]``, ``data.v[i]``).

    import rbd_ros.core as rbd
    from rbd_ros.core.calls.inspect import workspace_views
    rbd.rnea(model, q, v, a)
    w = workspace_views(model)            # this thread's workspace, no copy
    w.v[i], w.f[i], w.X(i)                # body i after the call

The arrays are views into ``model.workspace()`` (writable; writing into them
changes the kernels' scratch, never the model).  A slot holds what the *last*
kernel called on this thread left there, and the kernels give some slots
different frames; per view (``layout.py`` names the slot behind each, with
its width and region):

===========  ==============================================================
``E``, ``r``  X_i = X_J(q_i) X_T(i), parent -> body i, stored (E, r): every
              kernel (rnea/gravity/bias, crba, aba, forward_dynamics,
              coriolis_matrix)
``v``         rnea/bias: body i's velocity in its own frame; aba,
              coriolis_matrix: in the world frame
``a``         rnea: body i's acceleration (gravity included as a_0 = -a_g)
              in its own frame; aba: in the world frame
``f``         rnea: the force transmitted across joint i (after the backward
              sweep: subtree sum), body frame
``E0, r0``    world -> body i: written by crba, aba, coriolis_matrix, and
              rnea with world-frame f_ext.  ``placement(i)`` = (R, p) of
              body i in the world (R = E0ᵀ, p = r0), Pinocchio's oMi
``Ic_*``      crba: composite inertia of i's subtree (m, h, Ibar) in world
              coordinates, about the world origin
``IA, pA, c`` aba: articulated inertia and bias force, velocity product
              c_i = v_i × S_i qd_i, world frame
``S_world``   coriolis_matrix: the joint's motion subspace columns in
              world coordinates (CO_S)
``crba_S_world``, ``F_world``
              crba: the same S_i columns scaled by the mimic multiplier m_i
              (CR_S) and F_i = I^c_i m_i S_i, one column per column of S_i,
              world coordinates (CR_F)
``aba_S_world`` aba (1-DOF joints): S_i in world coordinates (AB_S)
``Sdot_world``, ``Ic_world``, ``Bc_world``
              coriolis_matrix: Ṡ_i columns; I^c_i and B^c_i (composites
              over i's subtree), world frame (CO_SDOT, CO_IC, CO_BC)
``H``         forward_dynamics: the LᵀDL factor of H (D diagonal, L below)
===========  ==============================================================
"""
from dataclasses import dataclass, field

import numpy as np

from ..algorithms.layout import (
    AB_C,
    AB_IA,
    AB_PA,
    AB_S,
    CO_BC,
    CO_IC,
    CO_S,
    CO_SDOT,
    CR_F,
    CR_S,
    H_NB,
    H_NMIM,
    H_NV,
    H_NVF,
    IC_I,
    R_ABA,
    R_COR,
    R_CRBA,
    R_IC,
    R_MAT,
    R_RNEA,
    R_WORLD,
    RN_A,
    RN_F,
    RN_V,
    RN_X,
    SLOTS,
    W_ABA,
    W_COR,
    W_CRBA,
    W_IC,
    W_RNEA,
    W_WORLD,
    WO_X,
    region_offsets,
)
from ..algorithms.reference.spatial import plux
from . import registry


@dataclass
class WorkspaceViews:
    E: np.ndarray        # (nb, 3, 3)
    r: np.ndarray        # (nb, 3)
    v: np.ndarray        # (nb, 6)
    a: np.ndarray        # (nb, 6)
    f: np.ndarray        # (nb, 6)
    E0: np.ndarray       # (nb, 3, 3)
    r0: np.ndarray       # (nb, 3)
    Ic_m: np.ndarray     # (nb,)
    Ic_h: np.ndarray     # (nb, 3)
    Ic_Ibar: np.ndarray  # (nb, 3, 3)
    IA: np.ndarray       # (nb, 6, 6)
    pA: np.ndarray       # (nb, 6)
    c: np.ndarray        # (nb, 6)
    S_world: np.ndarray  # (nb, 6, 6): column k of S at [i, k]
    crba_S_world: np.ndarray  # (nb, 6, 6)  crba: column k of S at [i, k]
    aba_S_world: np.ndarray   # (nb, 6)  aba: S of a 1-DOF joint
    F_world: np.ndarray  # (nb, 6, 6)  crba: column k of I^c S at [i, k]
    Sdot_world: np.ndarray   # (nb, 6, 6)  coriolis_matrix: Ṡ columns
    Ic_world: np.ndarray     # (nb, 6, 6)  coriolis_matrix: composite inertia, world frame
    Bc_world: np.ndarray     # (nb, 6, 6)  coriolis_matrix: composite B, world frame
    H: np.ndarray        # (nv, nv)
    # every per-body slot of layout.SLOTS by name, e.g. "RN_V": (nb, 6)
    slots: dict[str, np.ndarray] = field(default_factory=dict)
    # region name (layout.SLOTS key) -> {slot name: view}
    regions: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    def of(self, algorithm: str) -> dict:
        """{slot name: (nb, width) view} of every per-body slot in the workspace regions
        the registered algorithm ``algorithm`` writes (``registry.BY_NAME[...].regions``)."""
        entry = registry.BY_NAME.get(algorithm)
        if entry is None:
            raise ValueError(f"algorithm: unknown {algorithm!r}; registered: {sorted(registry.BY_NAME)}")
        return {k: v for r in entry.regions if r in self.regions for k, v in self.regions[r].items()}

    def X(self, i):
        """6x6 motion transform parent -> body i, rot(E) xlt(r)."""
        return plux(self.E[i], self.r[i])

    def X0(self, i):
        """6x6 motion transform world -> body i."""
        return plux(self.E0[i], self.r0[i])

    def placement(self, i):
        """(R, p): body i's orientation and origin in the world (Pinocchio's oMi)."""
        return self.E0[i].T.copy(), self.r0[i].copy()

    def body(self, i):
        """Every per-body slot of body i, by name."""
        return {k: getattr(self, k)[i] for k in ("E", "r", "v", "a", "f", "E0", "r0", "Ic_m", "Ic_h", "Ic_Ibar",
                                                 "IA", "pA", "c", "aba_S_world", "S_world", "crba_S_world", "F_world",
                                                 "Sdot_world", "Ic_world", "Bc_world")}


def workspace_views(model, ws=None):
    """Named views of ``ws`` (default: this thread's ``model.workspace()``)."""
    mi = model.mi
    nb, nv = int(mi[H_NB]), int(mi[H_NV])
    ws = model.workspace() if ws is None else ws
    offs = region_offsets(nb, int(mi[H_NVF]), int(mi[H_NMIM]))

    def region(r, width):
        return ws[offs[r]:offs[r] + nb * width].reshape(nb, width)

    def slot(reg, o, n, shape=None):
        return reg[:, o:o + n].reshape((nb,) + (shape or (n,)))

    R, W, IC, A, C, F = (region(R_RNEA, W_RNEA), region(R_WORLD, W_WORLD), region(R_IC, W_IC),
                         region(R_ABA, W_ABA), region(R_COR, W_COR), region(R_CRBA, W_CRBA))
    o_mat = offs[R_MAT]
    starts = {"rnea": R_RNEA, "world": R_WORLD, "ic": R_IC, "aba": R_ABA, "cor": R_COR, "crba": R_CRBA}
    regions = {}
    for name, (width, slots) in SLOTS.items():
        reg = region(starts[name], width)
        regions[name] = {k: reg[:, o:o + n] for k, (o, n) in slots.items()}
    return WorkspaceViews(
        E=slot(R, RN_X, 9, (3, 3)), r=slot(R, RN_X + 9, 3), v=slot(R, RN_V, 6), a=slot(R, RN_A, 6),
        f=slot(R, RN_F, 6), E0=slot(W, WO_X, 9, (3, 3)), r0=slot(W, WO_X + 9, 3),
        Ic_m=IC[:, IC_I], Ic_h=slot(IC, IC_I + 1, 3), Ic_Ibar=slot(IC, IC_I + 4, 9, (3, 3)),
        IA=slot(A, AB_IA, 36, (6, 6)), pA=slot(A, AB_PA, 6), c=slot(A, AB_C, 6),
        aba_S_world=slot(A, AB_S, 6), S_world=slot(C, CO_S, 36, (6, 6)), crba_S_world=slot(F, CR_S, 36, (6, 6)),
        F_world=slot(F, CR_F, 36, (6, 6)),
        Sdot_world=slot(C, CO_SDOT, 36, (6, 6)), Ic_world=slot(C, CO_IC, 36, (6, 6)),
        Bc_world=slot(C, CO_BC, 36, (6, 6)),
        H=ws[o_mat:o_mat + nv * nv].reshape(nv, nv),
        slots={k: v for r in regions.values() for k, v in r.items()}, regions=regions)
