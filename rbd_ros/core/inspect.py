"""Named views of a model's workspace after a kernel call (a debugging aid,
like reading Pinocchio's ``data.oMi[i]``, ``data.v[i]``).

    import rbd_ros.core as rbd
    from rbd_ros.core.inspect import workspace_views
    rbd.rnea(model, q, v, a)
    w = workspace_views(model)            # this thread's workspace, no copy
    w.v[i], w.f[i], w.X(i)                # body i after the call

The arrays are views into ``model.workspace()`` (writable; writing into them
changes the kernels' scratch, never the model).  A slot holds what the *last*
kernel called on this thread left there, and the kernels give some slots
different frames; per slot (``layout.py`` has the region widths):

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
``Ic_*``      crba: composite inertia of i's subtree (m, h, Ibar) about
              body i's origin, body frame
``IA, pA, c`` aba: articulated inertia and bias force, velocity product
              c_i = v_i × S_i qd_i, world frame
``S_world``   crba, coriolis_matrix, aba (1-DOF: column 0): the joint's
              motion subspace columns in world coordinates
``H``         forward_dynamics: the LᵀDL factor of H (D diagonal, L below)
===========  ==============================================================
"""
from dataclasses import dataclass

import numpy as np

from .algorithms.aba import C_ as ABA_C
from .algorithms.aba import IA_, PA_
from .algorithms.coriolis import BC_, IC_, SD_, SW_
from .algorithms.rnea import A_, F_, V_, X_
from .layout import H_NB, H_NMIM, H_NV, H_NVF, W_ABA, W_COR, W_IC, W_RNEA, W_WORLD, region_offsets


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
    Sdot_world: np.ndarray   # (nb, 6, 6)  coriolis_matrix: Ṡ columns (crba: I^c S)
    Ic_world: np.ndarray     # (nb, 6, 6)  coriolis_matrix: composite inertia, world frame
    Bc_world: np.ndarray     # (nb, 6, 6)  coriolis_matrix: composite B, world frame
    H: np.ndarray        # (nv, nv)

    def X(self, i):
        """6x6 motion transform parent -> body i, rot(E) xlt(r)."""
        return _plux(self.E[i], self.r[i])

    def X0(self, i):
        """6x6 motion transform world -> body i."""
        return _plux(self.E0[i], self.r0[i])

    def placement(self, i):
        """(R, p): body i's orientation and origin in the world (Pinocchio's oMi)."""
        return self.E0[i].T.copy(), self.r0[i].copy()

    def body(self, i):
        """Every per-body slot of body i, by name."""
        return {k: getattr(self, k)[i] for k in ("E", "r", "v", "a", "f", "E0", "r0", "Ic_m", "Ic_h", "Ic_Ibar",
                                                 "IA", "pA", "c", "S_world", "Sdot_world", "Ic_world", "Bc_world")}


def _plux(E, r):
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = E
    X[3:, :3] = -E @ np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
    return X


def workspace_views(model, ws=None):
    """Named views of ``ws`` (default: this thread's ``model.workspace()``)."""
    md = model.md
    nb, nv = int(md[H_NB]), int(md[H_NV])
    ws = model.workspace() if ws is None else ws
    o_rnea, o_world, o_ic, o_aba, o_cor, _, o_mat = region_offsets(nb, int(md[H_NVF]), int(md[H_NMIM]))[:7]

    def region(o, width):
        return ws[o:o + nb * width].reshape(nb, width)

    R, W, IC, A, C = (region(o_rnea, W_RNEA), region(o_world, W_WORLD), region(o_ic, W_IC),
                      region(o_aba, W_ABA), region(o_cor, W_COR))
    return WorkspaceViews(
        E=R[:, X_:X_ + 9].reshape(nb, 3, 3), r=R[:, X_ + 9:X_ + 12], v=R[:, V_:V_ + 6], a=R[:, A_:A_ + 6],
        f=R[:, F_:F_ + 6], E0=W[:, 0:9].reshape(nb, 3, 3), r0=W[:, 9:12],
        Ic_m=IC[:, 0], Ic_h=IC[:, 1:4], Ic_Ibar=IC[:, 4:13].reshape(nb, 3, 3),
        IA=A[:, IA_:IA_ + 36].reshape(nb, 6, 6), pA=A[:, PA_:PA_ + 6], c=A[:, ABA_C:ABA_C + 6],
        S_world=C[:, SW_:SW_ + 36].reshape(nb, 6, 6), Sdot_world=C[:, SD_:SD_ + 36].reshape(nb, 6, 6),
        Ic_world=C[:, IC_:IC_ + 36].reshape(nb, 6, 6), Bc_world=C[:, BC_:BC_ + 36].reshape(nb, 6, 6),
        H=ws[o_mat:o_mat + nv * nv].reshape(nv, nv))
