"""Readable reference twins of the compiled kernels (plain numpy, 6x6 spatial
matrices, written like Featherstone's spatial_v2: one short function per
algorithm whose docstring is the textbook table it implements).

    from rbd_ros.core.algorithms import reference as ref
    tau = ref.rnea(model, q, v, a)          # ID      (RBDA Table 5.1)
    H = ref.crba(model, q)                  # HandC   (RBDA Table 6.2)
    LD = ref.ltdl(model, H)                 # LTDL    (RBDA Table 6.3)
    qdd = ref.aba(model, q, v, tau)         # FDab    (RBDA Table 7.1)

They take the same ``Model`` and arguments as ``rbd_ros.core`` (single
states; f_ext per link as the public API takes it) and return the same
numbers: the documentation of the fast kernels and a second oracle that
needs no Pinocchio.  Slow (Python loops, small matrices): never on a hot path.
"""
from .aba import aba
from .coriolis import coriolis_matrix
from .crba import crba
from .forward_dynamics import forward_dynamics, hand_c
from .jcalc import jcalc
from .ltdl import dof_parents, ltdl, ltdl_solve
from .rnea import bias, gravity, rnea, rnea_body_forces

__all__ = ["rnea", "rnea_body_forces", "gravity", "bias", "crba", "hand_c", "ltdl", "ltdl_solve", "dof_parents", "aba",
           "forward_dynamics", "coriolis_matrix", "jcalc"]
