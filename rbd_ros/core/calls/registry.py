"""The kernel registry: every algorithm of rbd_ros.core declared once.

An entry names the public function, its compiled kernels, the arguments and
the result's shape, the workspace regions the kernel writes and the numpy twin
(``algorithms/reference/``) that documents and checks it.  From the registry
follow:

* the public functions ``rbd.<name>`` and ``rbd.<name>_into`` (``public.py``,
  written by ``generate.py`` from the entries: one fast path each, one shared
  checked path in ``checked.py``);
* the guards that keep numba from compiling a second specialisation
  (``_numba_compat``, installed at the end of this module): the plain argument
  types are derived from the entry;
* ahead-of-time compilation (``rbd_precompile``, ``compile_steps.py``) and the
  node's warm-up;
* the parametrised tests (``test/test_core_registry.py``: twin agreement,
  argument errors, byte order, odd arrays, regions written, no model write).

To add an algorithm: its kernel file in ``algorithms/``, its twin in
``algorithms/reference/``, an entry below, ``python -m rbd_ros.core.calls.generate``,
an oracle test (ARCHITECTURE.md).

Kernel calling conventions (``st`` an int status, ``common.OK`` = 0):

* ``kernel(md, ws, *inputs, *fast_extra, out) -> st`` (one state; an entry with
  ``options`` takes their converted values in place of ``fast_extra``);
* ``fext_kernel(md, ws, *inputs, fe, fe_world, out) -> st`` (entries with
  ``fext``: per-body wrenches (nb, 6), ``fe_world`` a bool);
* ``batch(md, *INPUTS, [FE, fe_world,] [*options,] OUT, status, start, stop)`` (rows
  start..stop-1 of (N, ...) arrays; None: the kernel is called row by row);
* ``fallback(md, ws, *inputs, fe, fe_world, out) -> st``: called where the
  kernel returns SINGULAR;
* ``post(model, out, *inputs, *keywords) -> result``: what the public function
  returns (entries with ``keywords``: more parameters after the inputs).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import typeof
from numba.core import types as nbt
from numpy.typing import NDArray

from ..algorithms import aba as _aba
from ..algorithms import compensation as _comp
from ..algorithms import contact as _contact
from ..algorithms import coriolis as _cor
from ..algorithms import crba as _crba
from ..algorithms import forward_dynamics as _fd
from ..algorithms import frames as _frames
from ..algorithms import ltdl as _ltdl
from ..algorithms import observer as _observer
from ..algorithms import reference as ref
from ..algorithms import regressor as _reg
from ..algorithms import rnea as _rnea
from ..algorithms.reference import coriolis as _ref_coriolis
from ..algorithms.reference import frames as _ref_frames
from ..algorithms.reference import regressor as _ref_regressor
from ..model.model import Model
from . import _numba_compat as nbc
from .options import FRAME, NO_FEXT, NO_FEXT3, REFERENCE, Option


@dataclass(frozen=True)
class Keyword:
    """A parameter of a public function after its inputs and options, handed to the
    entry's ``post`` (not to the kernel)."""
    name: str
    default: object
    annotation: str                # its type, as public.py spells it


@dataclass(frozen=True)
class Algorithm:
    """One public function of rbd_ros.core and the kernels behind it."""
    name: str                      # rbd.<name>, rbd.<name>_into
    doc: str                       # the public function's docstring
    kernel: Any                    # numba dispatcher, one state (see the module docstring)
    inputs: tuple[str, ...]        # argument names: "q" (nq numbers) or v-sized ("v", "a", "tau")
    out: tuple[int | str, ...]     # the result's shape: ints, "nv", "nq", "nb" or "<k>*nb", e.g. (6, "nv")
    twin: Callable[..., Any]       # reference twin: twin(model, *inputs[, f_ext, f_ext_frame])
    regions: tuple[str, ...]       # workspace regions the kernel writes (layout.SLOTS keys and "mat", "vec")
    batch: Any = None              # batch kernel or adapter, None: row by row
    fext: bool = False             # takes f_ext, f_ext_frame
    fext_kernel: Any = None        # one state with f_ext
    fast_extra: tuple[Any, ...] = ()  # kernel arguments after the inputs on a call without f_ext
    options: tuple[Option, ...] = ()  # non-array parameters (a frame, a reference), after the inputs
    fallback: Any = None           # where the kernel returns SINGULAR
    third: str = "a"               # the argument a BAD_A status names
    group: int = 0                 # rbd_precompile: process 0 or 1
    keywords: tuple[Keyword, ...] = ()     # parameters after the options, for ``post``
    post: Callable[..., Any] | None = None  # post(model, out, *inputs, *keywords) -> the result
    kernels: tuple[Any, ...] = field(default=())  # every dispatcher the entry compiles (default: kernel, batch, ...)

    def out_shape(self, model: Model) -> tuple[int, ...]:
        """The result's shape for ``model``."""
        return tuple(_dim(model, s) for s in self.out)

    def plain_types(self) -> tuple[Any, ...]:
        """The numba types of the fast path's kernel call (what its guard admits)."""
        v = nbt.Array(nbt.float64, 1, "C")
        out = nbt.Array(nbt.float64, len(self.out), "C")
        extra = tuple(t for o in self.options for t in o.types) if self.options else \
            tuple(typeof(x) for x in self.fast_extra)
        return (v, v) + (v,) * len(self.inputs) + extra + (out,)

    def dispatchers(self) -> tuple[Any, ...]:
        """Every numba dispatcher this entry runs."""
        found = [self.kernel, self.fext_kernel, self.batch, self.fallback, *self.kernels]
        return tuple(dict.fromkeys(k for k in found if hasattr(k, "signatures")))


def _dim(model: Model, s: int | str) -> int:
    if s == "nv":
        return model.nv
    if s == "nq":
        return model.nq
    if isinstance(s, str) and s.endswith("nb"):
        return int(s[:-2].rstrip("*") or 1) * model.nbodies
    return int(s)


# ----------------------------------------------------------------------------- adapters
Arr = NDArray[Any]
# (thin Python functions that give a shared kernel an entry's calling convention;
# flags are plain Python bools: numba types them as ``boolean``, one specialisation)

def _rnea_fext(md: Arr, ws: Arr, q: Arr, v: Arr, a: Arr, fe: Arr, world: bool, out: Arr) -> int:
    return _rnea.rnea_into(md, ws, q, v, a, fe, world, True, True, out)


def _rnea_batch(md: Arr, Q: Arr, V: Arr, A: Arr, FE: Arr, world: bool, OUT: Arr, status: Arr, start: int,
                stop: int) -> None:
    _rnea.rnea_batch_k(md, Q, V, A, FE, world, True, True, OUT, status, start, stop)


def _gravity_batch(md: Arr, Q: Arr, OUT: Arr, status: Arr, start: int, stop: int) -> None:
    _rnea.rnea_batch_k(md, Q, Q, Q, NO_FEXT3, False, False, False, OUT, status, start, stop)


def _bias_batch(md: Arr, Q: Arr, V: Arr, OUT: Arr, status: Arr, start: int, stop: int) -> None:
    _rnea.rnea_batch_k(md, Q, V, V, NO_FEXT3, False, True, False, OUT, status, start, stop)


def joint_columns(model: Model, Y: NDArray[np.float64], q: object, v: object, a: object, armature: bool,
                  damping: bool, friction: bool, velocity_eps: float) -> NDArray[np.float64]:
    """rbd.regressor's ``post``: the bodies' 10 nb columns ``Y`` with optional per-DOF
    columns after them: armature (qdd), viscous friction (qd), Coulomb friction
    (tanh(qd / velocity_eps), the law of rbd.friction)."""
    if not (armature or damping or friction):
        return Y
    eps = velocity_eps if isinstance(velocity_eps, (int, float)) and not isinstance(velocity_eps, bool) \
        else np.nan
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"velocity_eps: expected a finite number > 0 (rad/s), got {velocity_eps!r}")
    V = np.asarray(v, dtype=np.float64).reshape(Y.shape[:-2] + (model.nv,))
    A = np.asarray(a, dtype=np.float64).reshape(V.shape)
    blocks = [Y]
    for on, x in ((armature, A), (damping, V), (friction, np.tanh(V / eps) if friction else None)):
        if on:
            D = np.zeros(Y.shape[:-1] + (model.nv,))
            idx = np.arange(model.nv)
            D[..., idx, idx] = x
            blocks.append(D)
    return np.concatenate(blocks, axis=-1)


# ----------------------------------------------------------------------------- the registry

ALGORITHMS = [
    Algorithm(
        name="rnea", inputs=("q", "v", "a"), out=("nv",),
        kernel=_rnea.rnea_k, fext=True, fext_kernel=_rnea_fext, batch=_rnea_batch,
        kernels=(_rnea.rnea_into, _rnea.rnea_batch_k), twin=ref.rnea, regions=("rnea", "world"),
        doc="""Inverse dynamics tau = H(q) a + C(q, v) v + g(q) - J^T f_ext (RNEA).

        ``f_ext``: wrenches applied *on* the links by the environment, shape
        (len(model.link_names), 6), rows [fx fy fz tx ty tz], or a dict
        {link: wrench}.  ``f_ext_frame="local"``: each in its link's frame, moment
        about the link origin; ``"world"``: world axes, moment about the world
        origin."""),
    Algorithm(
        name="gravity", inputs=("q",), out=("nv",),
        kernel=_rnea.gravity_k, batch=_gravity_batch, kernels=(_rnea.rnea_batch_k,),
        twin=ref.gravity, regions=("rnea",),
        doc="Generalised gravity g(q) = rnea(q, 0, 0)."),
    Algorithm(
        name="bias", inputs=("q", "v"), out=("nv",),
        kernel=_rnea.bias_k, batch=_bias_batch, kernels=(_rnea.rnea_batch_k,),
        twin=ref.bias, regions=("rnea",),
        doc="Bias forces C(q, v) v + g(q) = rnea(q, v, 0)."),
    Algorithm(
        name="crba", inputs=("q",), out=("nv", "nv"),
        kernel=_crba.crba_k, batch=_crba.crba_batch_k, twin=ref.crba, regions=("rnea", "world", "ic", "crba"),
        doc="Joint-space inertia matrix H(q) (symmetric, full), CRBA."),
    Algorithm(
        name="forward_dynamics", inputs=("q", "v", "tau"), out=("nv",), third="tau",
        kernel=_fd.forward_dynamics_k, fast_extra=(NO_FEXT, False), fext=True,
        fext_kernel=_fd.forward_dynamics_k, batch=_fd.forward_dynamics_batch_k, group=1,
        twin=ref.forward_dynamics, regions=("rnea", "world", "ic", "crba", "mat"),
        doc="""Joint accelerations qdd = H^-1 (tau - b(q, v, f_ext)) via CRBA and the
        sparse LᵀDL factorisation.  ``f_ext`` as in :func:`rnea`.  A singular H
        (a pivot d_k <= 1e-10 H_kk, e.g. a joint that moves no mass) raises
        ValueError."""),
    Algorithm(
        name="aba", inputs=("q", "v", "tau"), out=("nv",), third="tau",
        kernel=_aba.aba_k, fast_extra=(NO_FEXT, False), fext=True, fext_kernel=_aba.aba_k,
        batch=_aba.aba_batch_k, fallback=_fd.forward_dynamics_k, group=1, twin=ref.aba,
        regions=("rnea", "world", "aba", "vec", "y", "k"),
        doc="""Joint accelerations by the articulated-body algorithm (same result as
        :func:`forward_dynamics`; mimic joints handled as constraints; where an
        articulated inertia is nearly singular the kernel falls back to CRBA +
        LᵀDL, see ``algorithms/aba.py``)."""),
    Algorithm(
        name="coriolis_matrix", inputs=("q", "v"), out=("nv", "nv"),
        kernel=_cor.coriolis_k, twin=ref.coriolis_matrix, regions=("rnea", "world", "cor"),
        doc="""Coriolis matrix C(q, v) with C v = bias - gravity and Hdot - 2C skew-symmetric
        (the Christoffel-symbol factorisation)."""),
    Algorithm(
        name="coriolis_transpose_v", inputs=("q", "v"), out=("nv",),
        kernel=_cor.coriolis_transpose_v_k, kernels=(_cor.coriolis_into,),
        twin=_ref_coriolis.coriolis_transpose_v, regions=("rnea", "world", "cor", "mat"),
        doc="""C(q, v)ᵀ v, exactly, with C the Coriolis matrix :func:`coriolis_matrix` returns:
        the generalized-momentum observer's term (d/dt (H v) = tau + tau_ext + Cᵀ v - g,
        as Ḣ = C + Cᵀ)."""),
    Algorithm(
        name="regressor", inputs=("q", "v", "a"), out=("nv", "10*nb"),
        kernel=_reg.regressor_k, batch=_reg.regressor_batch_k, kernels=(_reg.regressor_into,),
        twin=_ref_regressor.regressor, regions=("rnea", "world", "cor"),
        keywords=(Keyword("armature", False, "bool"), Keyword("damping", False, "bool"),
                  Keyword("friction", False, "bool"), Keyword("velocity_eps", 1e-3, "float")),
        post=joint_columns,
        doc="""Joint-torque regressor Y (nv x 10 nbodies): tau = rnea(q, v, a) = Y pi, pi the
        stacked ``model.inertial_parameters()`` rows (per body [m, m c, Ixx Ixy Iyy Ixz Iyz
        Izz] about the body origin, body frame: Pinocchio's computeJointTorqueRegressor
        columns).  A batch (N, ...) gives (N, nv, 10 nbodies).

        ``armature``, ``damping``, ``friction``: append nv columns each (in this order:
        qdd, qd, tanh(qd / velocity_eps)), so that Y [pi; model.armature; model.damping;
        model.friction] = rnea(q, v, a) + friction(model, v, velocity_eps)."""),
    Algorithm(
        name="frame_jacobian", inputs=("q",), options=(FRAME, REFERENCE), out=(6, "nv"),
        kernel=_frames.frame_jacobian_k, kernels=(_frames.frame_into,), twin=_ref_frames.frame_jacobian,
        regions=("rnea", "world"),
        doc="""Jacobian J (6 x nv) of URDF link ``frame``: its velocity [linear; angular] = J v.

        ``reference`` (Pinocchio's): ``"local_world_aligned"`` (default) the velocity of
        the frame's origin in world axes; ``"local"`` the same in the frame's axes;
        ``"world"`` the spatial velocity in world axes at the world origin.  Any link,
        also one merged into its parent by fixed joints (its fixed offset applied); a
        link fixed to the world gives zeros.  Mimic joints add their multiplier times
        their column to their master's."""),
    Algorithm(
        name="frame_velocity", inputs=("q", "v"), options=(FRAME, REFERENCE), out=(6,),
        kernel=_frames.frame_velocity_k, kernels=(_frames.frame_into,), twin=_ref_frames.frame_velocity,
        regions=("rnea", "world"),
        doc="""Velocity [linear; angular] of URDF link ``frame`` (= frame_jacobian v), in
        ``reference`` as :func:`frame_jacobian`."""),
    Algorithm(
        name="frame_acceleration", inputs=("q", "v", "a"), options=(FRAME, REFERENCE), out=(6,),
        kernel=_frames.frame_acceleration_k, kernels=(_frames.frame_into,), twin=_ref_frames.frame_acceleration,
        regions=("rnea", "world"),
        doc="""Classical acceleration [linear; angular] of the origin of URDF link ``frame``
        in ``reference`` (Pinocchio's ``getFrameClassicalAcceleration``: the spatial
        acceleration plus [ω × v_linear; 0]); with a = 0 it is J̇ v."""),
]

# kernels behind hand-written public functions (control_loop.py, linalg.py,
# estimation/observer.py and contact.py): compiled by rbd_precompile and guarded like the rest
OTHER_KERNELS: dict[str, tuple[Any, ...]] = {
    "compensation_into": (_comp.compensation_k,),
    "ltdl": (_ltdl.ltdl_k,),
    "ltdl_solve": (_ltdl.ltdl_solve_k,),
    "MomentumObserver": (_observer.observer_step_k,),
    "external_wrench": (_contact.wrench_lstsq_k,),
    "CollisionDetector": (_contact.collision_ratios_k,),
}

BY_NAME = {e.name: e for e in ALGORITHMS}


def kernels_of(names: Iterable[str]) -> tuple[Any, ...]:
    """Every numba dispatcher behind the public functions ``names`` (``<name>_into``
    counts as ``<name>``)."""
    out: list[Any] = []
    for n in names:
        n = n[:-5] if n.endswith("_into") and n[:-5] in BY_NAME else n
        out += BY_NAME[n].dispatchers() if n in BY_NAME else OTHER_KERNELS[n]
    return tuple(dict.fromkeys(out))


def will_compile(names: Iterable[str], kernels: Sequence[Any] = ()) -> bool:
    """True if a kernel behind the public functions ``names``, or one of the numba
    dispatchers ``kernels`` (a caller's own), is neither compiled in this process nor in
    numba's disk cache (its first call will compile: seconds)."""
    return nbc.will_compile(kernels_of(names) + tuple(kernels))


def cached(names: Iterable[str]) -> bool:
    """True if every kernel behind the public functions ``names`` is compiled in this
    process or in numba's disk cache (another process may have just written it)."""
    return all(k.signatures or nbc.cached_on_disk(k) for k in kernels_of(names))


def guard_kernels(algorithms: Iterable[Algorithm], other_kernels: Iterable[Any] = ()) -> None:
    """Install the numba guards (``_numba_compat``): each entry's fast-path kernel
    compiles only for its plain argument types (anything else raises ``NotPlain``, a
    TypeError, and the public function takes its checked path); every other kernel
    copies odd arrays instead of compiling for them."""
    algorithms = list(algorithms)
    guarded = set()
    for e in algorithms:
        nbc.plain_arguments_only(e.kernel, e.plain_types())
        guarded.add(e.kernel)
    for k in [d for e in algorithms for d in e.dispatchers()] + list(other_kernels):
        if k not in guarded:
            nbc.behaved_inputs(k)
            guarded.add(k)


guard_kernels(ALGORITHMS, [k for ks in OTHER_KERNELS.values() for k in ks])
