"""Public dynamics functions: argument checks, then one compiled kernel call.

Every function takes the model first and accepts either one state (1-D
arrays) or a batch (2-D arrays with a leading dimension N, all arguments the
same N), which runs on numba's thread count of cores (``numba.get_num_threads()``;
``_run_batch``).  Results are new arrays.

The contract: bad arguments raise ``ValueError`` naming the argument and what
was expected (a non-Model ``model``: ``TypeError``); a result is always
finite: finite arguments so large that the result overflows raise
``ValueError`` naming the largest argument ("... not finite").  The kernels
test the results' finiteness themselves (a status code), so the checks cost
nothing measurable on the fast path.

Single calls with plain arguments (C-contiguous float64 arrays of the right
lengths) take a fast path that checks nothing in Python: numba's dispatcher
checks the types, the kernel the lengths (BAD_SHAPE), and anything else is
converted and checked on the slow path (see ``_plain_arguments_only``).
Read-only, non-contiguous or unaligned float64 arrays are copied to plain
arrays before a kernel sees them, so no call compiles a new numba
specialisation after warm-up.
"""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import config as numba_config
from numba import get_num_threads, typeof
from numba.core import types as nbt

from .algorithms.aba import aba_batch_k, aba_k
from .algorithms.common import BAD_DOFS, BAD_FEXT, BAD_Q, BAD_QUAT, BAD_RESULT, BAD_SHAPE, BAD_V, OK, SINGULAR
from .algorithms.compensation import compensation_k
from .algorithms.coriolis import coriolis_k
from .algorithms.crba import crba_batch_k, crba_k
from .algorithms.forward_dynamics import forward_dynamics_batch_k, forward_dynamics_k
from .algorithms.ltdl import ltdl_k, ltdl_solve_k
from .algorithms.rnea import bias_k, gravity_k, rnea_batch_k, rnea_fext_k, rnea_k
from .model import Model

_F8 = np.dtype(np.float64)
_ND = np.ndarray
_empty = np.empty   # a module global: ~20 ns less than np.empty per call
_NO_FEXT3 = np.zeros((0, 0, 6))
_NO_FEXT = np.zeros((0, 6))   # no f_ext: a (0, 6) array of per-body wrenches
FEXT_FRAMES = ("local", "world")
_LOCAL = FEXT_FRAMES[0]


# ----------------------------------------------------------------------------- no new specialisations

class _NotPlain(TypeError):
    """A fast-path kernel was handed something other than its plain argument types
    (raised from numba's dispatcher, see ``_plain_arguments_only``), or arrays of
    lengths that do not fit the model (the kernel's BAD_SHAPE, raised by ``_check``);
    the public function catches it and takes its checked path."""


def _plain_arguments_only(kernel, types):
    """The fast paths' guard: ``kernel`` runs only on exactly these numba ``types``.

    A single-call fast path checks nothing and hands the caller's objects to
    the kernel: numba's dispatcher types every argument in C anyway (~50 ns
    per array), the kernel checks the lengths (BAD_SHAPE before it reads
    anything), and repeating those tests in Python cost ~150 ns per array
    (>10 % of a 7-dof rnea).  The dispatcher calls ``_compile_for_args`` only
    when no compiled signature matches.  There, the arguments of the first
    call (nothing compiled or loaded from the cache yet) are compiled for if
    they have exactly the plain types; anything else -- a list, a float32,
    read-only, non-contiguous or unaligned array, a 2-D batch -- raises
    ``_NotPlain``, and the public function converts and checks the arguments
    on its slow path (naming the bad one).  So no call compiles a second
    specialisation."""
    compile_for_args = kernel._compile_for_args
    types = tuple(types)

    def _compile_for_args(*args, **kws):
        if kernel.signatures:        # the plain one is compiled: these arguments are not plain
            raise _NotPlain(f"{kernel.__name__}: not the plain argument types")
        try:
            plain = not kws and len(args) == len(types) and all(typeof(a) == t for a, t in zip(args, types))
        except Exception:       # typeof: no numba type at all (numba's own error classes)
            plain = False
        if plain:
            return compile_for_args(*args, **kws)
        raise _NotPlain(f"{kernel.__name__}: not the plain argument types")

    kernel._compile_for_args = _compile_for_args


def _behaved_inputs(kernel):
    """Make ``kernel`` copy odd array arguments instead of compiling for them
    (the kernels the checked paths call, which convert their arguments first:
    a safety net).  Read-only, non-contiguous or unaligned float64 arrays have
    a numba type no signature matches, and numba would compile a new
    specialisation (5-20 s).  In ``_compile_for_args`` (see above), and only
    there, such arrays (any argument but the model vector ``md_k`` in
    front) are replaced by C-contiguous copies, and the callable returned
    re-enters the kernel with them (an existing signature).  Outputs are
    always plain arrays the caller made (``np.empty`` or checked by ``_out``),
    so no result is written into a discarded copy.  (With compiling disabled,
    ``disable_compile()``, numba raises TypeError for such arrays instead.)"""
    compile_for_args = kernel._compile_for_args

    def _compile_for_args(*args, **kws):
        fixed = list(args)
        for k in range(1, len(fixed)):
            a = fixed[k]
            if isinstance(a, _ND) and not a.flags.carray:
                fixed[k] = np.array(a, order="C", copy=True)
        if all(f is a for f, a in zip(fixed, args)):
            return compile_for_args(*args, **kws)
        return lambda *_args, **_kws: kernel(*fixed)

    kernel._compile_for_args = _compile_for_args


_V = nbt.Array(nbt.float64, 1, "C")                    # ws, q, v, a, tau, out
_MD = _V                                               # Model.md_k: writable too (see Model)
_M = nbt.Array(nbt.float64, 2, "C")                    # H, the (0, 6) "no f_ext"
_FAST = {   # the fast paths' kernels and their plain argument types (rnea_k serves the node too)
    rnea_k: (_MD, _V, _V, _V, _V, _V),
    gravity_k: (_MD, _V, _V, _V),
    bias_k: (_MD, _V, _V, _V, _V),
    crba_k: (_MD, _V, _V, _M),
    forward_dynamics_k: (_MD, _V, _V, _V, _V, _M, nbt.boolean, _V),
    aba_k: (_MD, _V, _V, _V, _V, _M, nbt.boolean, _V),
}
for _k, _types in _FAST.items():
    _plain_arguments_only(_k, _types)
for _k in (aba_batch_k, compensation_k, coriolis_k, crba_batch_k, forward_dynamics_batch_k, ltdl_k,
           ltdl_solve_k, rnea_batch_k, rnea_fext_k):
    _behaved_inputs(_k)


def _not_model(model):
    """Called on an AttributeError: a TypeError if ``model`` is not a Model."""
    if not isinstance(model, Model):
        raise TypeError(f"model: expected an rbd_ros.core.Model (Model.from_urdf), got "
                        f"{_describe(model)}") from None


def _first_in_thread(model) -> bool:
    """Called on an AttributeError from a fast path (which reads this thread's workspace
    as ``model._tls.ws``, ~30 ns less than ``model.workspace()``): a TypeError if
    ``model`` is not a Model; True if this thread had no workspace yet (now made: call
    again), False if the AttributeError has another cause (re-raise it)."""
    _not_model(model)
    if hasattr(model._tls, "ws"):
        return False
    model.workspace()
    return True


# ----------------------------------------------------------------------------- argument checks

def _plain(x, shape):
    """True for a float64 ndarray of exactly this shape (compensation_into's
    arguments), where the kernel itself checks the values (NaN/inf) and reports
    a status.  (The single-call fast paths check nothing in Python: see
    ``_plain_arguments_only``.)"""
    return x.__class__ is _ND and x.dtype is _F8 and x.shape == shape


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def _vec(x, n, name):
    """``x`` as a C-contiguous float64 array of shape (n,) or (N, n)."""
    if not (type(x) is np.ndarray and x.dtype is _F8 and x.flags.carray):
        x = _convert(x, name, f"{n} numbers (or an (N, {n}) batch)")
    if x.shape[-1:] != (n,) or x.ndim > 2:
        raise ValueError(f"{name}: expected shape ({n},) or (N, {n}), got {_describe(x)}")
    return x


def _convert(x, name, expected):
    try:
        arr = np.asarray(x)
        if arr.dtype.kind not in "iuf":
            raise TypeError
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        return arr if arr.flags.carray else arr.copy()     # read-only or unaligned: a plain copy
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {expected} as real numbers, got {_describe(x)}") from None


_WHAT = {BAD_Q: "q", BAD_V: "v", BAD_FEXT: "f_ext"}


def _check(status, third="a", index=None, args=()):
    """Raise the ValueError for a kernel status.  ``args``: (name, array) of the
    call's arguments, to name the largest one when the result overflows."""
    if status == OK:
        return
    if status == BAD_SHAPE:          # only a fast path can see it (the checked paths check lengths)
        raise _NotPlain("an argument's length does not fit the model")
    where = "" if index is None else f" (batch row {index})"
    if status == BAD_QUAT:
        raise ValueError(f"q{where}: a free-flyer quaternion (qx qy qz qw) has zero norm")
    if status == BAD_RESULT:
        name, big = "arguments", 0.0
        for n, x in args:
            x = np.asarray(x, dtype=float)
            if x.size and index is not None:
                x = x[index]
            mx = float(np.max(np.abs(x))) if x.size else 0.0
            if mx > big:
                name, big = n, mx
        raise ValueError(f"{name}{where}: the result is not finite: the {name} values (up to {big:.3g} in "
                         "magnitude) are too large for this model (overflow)")
    if status == SINGULAR:
        raise ValueError(f"the joint-space inertia matrix is singular at this q{where}: "
                         "some joint moves no mass (massless leaf link?)")
    name = _WHAT.get(status, third)
    raise ValueError(f"{name}{where}: expected finite numbers, got NaN or inf")


def _check_batch(status, third="a", args=()):
    """Raise for the first bad batch row (every kernel reports a non-finite result
    itself: BAD_RESULT)."""
    bad = np.flatnonzero(status)
    if bad.size:
        _check(int(status[bad[0]]), third, int(bad[0]), args)


def _batch(*args):
    """Leading dimension N if the arguments are a batch, else None."""
    nd = {a.ndim for a in args}
    if nd == {1}:
        return None
    if nd != {2} or len({a.shape[0] for a in args}) != 1:
        shapes = ", ".join(str(a.shape) for a in args)
        raise ValueError(f"arguments must all be single states (1-D) or batches with the same N (2-D); "
                         f"got shapes {shapes}")
    return args[0].shape[0]


# Batches: serial row-range kernels (cached by numba, GIL released) run by Python
# threads, one contiguous range of rows per thread; the calling thread runs the first.
# A thread gets at least MIN_ROWS_PER_THREAD rows: below that, starting it costs more
# than it saves (~20 us against 1-30 us per row).
MIN_ROWS_PER_THREAD = 16
_pool = None
_pool_lock = threading.Lock()


def _thread_pool():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, numba_config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="rbd_batch")
        return _pool


def _run_batch(kernel, N, *args):
    """``kernel(*args, start, stop)`` over rows 0..N-1, split over up to
    ``numba.get_num_threads()`` threads (this one included)."""
    nth = min(get_num_threads(), N // MIN_ROWS_PER_THREAD)
    if nth <= 1:
        kernel(*args, 0, N)
        return
    chunk = -(-N // nth)
    pool = _thread_pool()
    futures = [pool.submit(kernel, *args, k * chunk, min(N, (k + 1) * chunk)) for k in range(1, nth)]
    try:
        kernel(*args, 0, chunk)
    finally:
        for f in futures:
            f.result()


def _frame_ok(frame):
    if frame not in FEXT_FRAMES:
        raise ValueError(f"f_ext_frame: expected one of {FEXT_FRAMES}, got {frame!r}")


def _fext(model, f_ext, frame, N):
    """Per-link wrenches [f; tau] -> per-body spatial forces [n; f] for the kernels."""
    _frame_ok(frame)
    nl = len(model.link_names)
    if isinstance(f_ext, dict):
        rows = np.zeros((nl, 6))
        for link, w in f_ext.items():
            w = _vec(w, 6, f"f_ext[{link!r}]")
            if w.ndim != 1:
                raise ValueError(f"f_ext[{link!r}]: expected shape (6,) [fx fy fz tx ty tz], got {_describe(w)}")
            rows[model.link_index(link)] = w
        f_ext = rows
    want = f"({nl}, 6) per-link wrenches [fx fy fz tx ty tz] in model.link_names order"
    if not (type(f_ext) is np.ndarray and f_ext.dtype is _F8):
        f_ext = _convert(f_ext, "f_ext", want)
    shape = (nl, 6) if N is None else (N, nl, 6)
    if f_ext.shape != shape:
        raise ValueError(f"f_ext: expected shape {shape}: {want}; got {_describe(f_ext)}")
    M = model.fext_map(frame)
    flat = f_ext.reshape((-1, nl * 6))
    body = np.ascontiguousarray((flat @ M.T).reshape((-1, model.nbodies, 6)))
    return (body[0] if N is None else body), frame == "world"


# ----------------------------------------------------------------------------- dynamics

def rnea(model, q, v, a, f_ext=None, f_ext_frame="local"):
    """Inverse dynamics tau = H(q) a + C(q, v) v + g(q) - J^T f_ext (RNEA).

    ``f_ext``: wrenches applied *on* the links by the environment, shape
    (len(model.link_names), 6), rows [fx fy fz tx ty tz], or a dict
    {link: wrench}.  ``f_ext_frame="local"``: each in its link's frame, moment
    about the link origin; ``"world"``: world axes, moment about the world
    origin."""
    try:
        if f_ext is None and f_ext_frame is _LOCAL:
            out = _empty(model._nv)     # the fast path (see _FAST)
            st = rnea_k(model.md_k, model._tls.ws, q, v, a, out)
            if st:
                _check(st, args=(("q", q), ("v", v), ("a", a)))
            return out
        q = _vec(q, model.nq, "q")
    except TypeError:     # not plain arrays, or a length that does not fit: checked below
        q = _vec(q, model.nq, "q")
    except AttributeError:
        if _first_in_thread(model):
            return rnea(model, q, v, a, f_ext, f_ext_frame)
        raise
    v = _vec(v, model.nv, "v")
    a = _vec(a, model.nv, "a")
    N = _batch(q, v, a)
    args = (("q", q), ("v", v), ("a", a), ("f_ext", f_ext if isinstance(f_ext, _ND) else ()))
    if f_ext is None:
        _frame_ok(f_ext_frame)
    if N is None:
        out = np.empty(model.nv)
        if f_ext is None:
            _check(rnea_k(model.md_k, model.workspace(), q, v, a, out), args=args)
        else:
            fe, world = _fext(model, f_ext, f_ext_frame, None)
            _check(rnea_fext_k(model.md_k, model.workspace(), q, v, a, fe, world, True, True, out), args=args)
        return out
    fe, world = (_NO_FEXT3, False) if f_ext is None else _fext(model, f_ext, f_ext_frame, N)
    out = np.empty((N, model.nv))
    status = np.zeros(N, dtype=np.int64)
    _run_batch(rnea_batch_k, N, model.md_k, q, v, a, fe, world, True, True, out, status)
    _check_batch(status, args=args)
    return out


def gravity(model, q):
    """Generalised gravity g(q) = rnea(q, 0, 0)."""
    try:
        out = _empty(model._nv)     # the fast path (see _FAST)
        st = gravity_k(model.md_k, model._tls.ws, q, out)
        if st:
            _check(st, args=(("q", q),))
        return out
    except TypeError:     # not plain arrays, or a length that does not fit: checked below
        q = _vec(q, model.nq, "q")
    except AttributeError:
        if _first_in_thread(model):
            return gravity(model, q)
        raise
    if q.ndim == 1:
        out = np.empty(model.nv)
        _check(gravity_k(model.md_k, model.workspace(), q, out), args=(("q", q),))
        return out
    N = q.shape[0]
    out = np.empty((N, model.nv))
    status = np.zeros(N, dtype=np.int64)
    _run_batch(rnea_batch_k, N, model.md_k, q, q, q, _NO_FEXT3, False, False, False, out, status)
    _check_batch(status, args=(("q", q),))
    return out


def bias(model, q, v):
    """Bias forces C(q, v) v + g(q) = rnea(q, v, 0)."""
    try:
        out = _empty(model._nv)     # the fast path (see _FAST)
        st = bias_k(model.md_k, model._tls.ws, q, v, out)
        if st:
            _check(st, args=(("q", q), ("v", v)))
        return out
    except TypeError:     # not plain arrays, or a length that does not fit: checked below
        q = _vec(q, model.nq, "q")
    except AttributeError:
        if _first_in_thread(model):
            return bias(model, q, v)
        raise
    v = _vec(v, model.nv, "v")
    N = _batch(q, v)
    args = (("q", q), ("v", v))
    if N is None:
        out = np.empty(model.nv)
        _check(bias_k(model.md_k, model.workspace(), q, v, out), args=args)
        return out
    out = np.empty((N, model.nv))
    status = np.zeros(N, dtype=np.int64)
    _run_batch(rnea_batch_k, N, model.md_k, q, v, v, _NO_FEXT3, False, True, False, out, status)
    _check_batch(status, args=args)
    return out


def crba(model, q):
    """Joint-space inertia matrix H(q) (symmetric, full), CRBA."""
    try:
        H = _empty(model._shape_H)  # the fast path (see _FAST)
        st = crba_k(model.md_k, model._tls.ws, q, H)
        if st:
            _check(st, args=(("q", q),))
        return H
    except TypeError:     # not plain arrays, or a length that does not fit: checked below
        q = _vec(q, model.nq, "q")
    except AttributeError:
        if _first_in_thread(model):
            return crba(model, q)
        raise
    if q.ndim == 1:
        H = np.empty((model.nv, model.nv))
        _check(crba_k(model.md_k, model.workspace(), q, H), args=(("q", q),))
        return H
    N = q.shape[0]
    H = np.empty((N, model.nv, model.nv))
    status = np.zeros(N, dtype=np.int64)
    _run_batch(crba_batch_k, N, model.md_k, q, H, status)
    _check_batch(status, args=(("q", q),))
    return H


def _out(x, size, name):
    """``x`` as a writable, aligned, C-contiguous float64 array of ``size`` elements, flat (a view)."""
    if not (type(x) is np.ndarray and x.dtype is _F8 and x.flags.carray and x.size == size):
        raise ValueError(f"{name}: expected a writable C-contiguous float64 numpy array of {size} "
                         f"elements, got {_describe(x)}")
    return x.reshape(size)


def dof_indices(model, dofs=None):
    """``dofs`` (velocity indices, None: all in model order) checked, as an int64 array."""
    if not isinstance(model, Model):
        _not_model(model)
    if dofs is None:
        return np.arange(model.nv, dtype=np.int64)
    arr = np.asarray(dofs)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"dofs: expected a 1-D sequence of velocity indices, got {_describe(dofs)}")
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= model.nv))
    if bad.size:
        raise ValueError(f"dofs[{int(bad[0])}] = {int(arr[bad[0]])} is not a velocity index "
                         f"(0..{model.nv - 1})")
    return arr


def compensation_into(model, q, v, dofs, g, b=None, H=None):
    """g(q), and optionally the bias b(q, v) = C(q, v) v + g(q) and H(q), restricted
    to and ordered by the velocity indices ``dofs`` (an int64 array from
    :func:`dof_indices`; an index out of range raises ValueError), written
    into preallocated float64 arrays: ``g`` and ``b`` of len(dofs) elements,
    ``H`` of len(dofs)**2 (flat or square, row-major).  One compiled call for
    a control loop; single states only.  ``b`` / ``H`` None: not computed.
    Raises ValueError for non-finite q or v, or a non-finite result (the
    outputs are then not to be used)."""
    try:
        q = q if _plain(q, model._sq) else _vec(q, model.nq, "q")
    except AttributeError:
        _not_model(model)
        raise
    v = v if _plain(v, model._sv) else _vec(v, model.nv, "v")
    if q.ndim != 1 or v.ndim != 1:
        raise ValueError("compensation_into: single states only (q and v 1-D)")
    if not (dofs.__class__ is _ND and dofs.dtype == np.int64 and dofs.ndim == 1):
        raise ValueError(f"dofs: expected an int64 array (see dof_indices), got {_describe(dofs)}")
    m = dofs.shape[0]
    g = _out(g, m, "g")
    bb = g if b is None else _out(b, m, "b")
    hh = g if H is None else _out(H, m * m, "H")
    st = compensation_k(model.md_k, model.workspace(), q, v, dofs, b is not None, H is not None,
                        g, bb, hh)
    if st:
        if st == BAD_DOFS:
            dof_indices(model, dofs)        # raises, naming the first bad index
        _check(st, "v", args=(("q", q), ("v", v)))


def coriolis_matrix(model, q, v):
    """Coriolis matrix C(q, v) with C v = bias - gravity and Hdot - 2C skew-symmetric
    (the Christoffel-symbol factorisation)."""
    try:
        q = _vec(q, model.nq, "q")
    except AttributeError:
        _not_model(model)
        raise
    v = _vec(v, model.nv, "v")
    N = _batch(q, v)
    args = (("q", q), ("v", v))
    if N is None:
        C = np.empty((model.nv, model.nv))
        _check(coriolis_k(model.md_k, model.workspace(), q, v, C), args=args)
        return C
    C = np.empty((N, model.nv, model.nv))
    ws = model.workspace()
    status = np.zeros(N, dtype=np.int64)
    for n in range(N):
        status[n] = coriolis_k(model.md_k, ws, q[n], v[n], C[n])
    _check_batch(status, "a", args=args)
    return C


def forward_dynamics(model, q, v, tau, f_ext=None, f_ext_frame="local"):
    """Joint accelerations qdd = H^-1 (tau - b(q, v, f_ext)) via CRBA and the
    sparse LᵀDL factorisation.  ``f_ext`` as in :func:`rnea`.  A singular H
    (a pivot d_k <= 1e-10 H_kk, e.g. a joint that moves no mass) raises
    ValueError."""
    return _fd(model, q, v, tau, f_ext, f_ext_frame, forward_dynamics_k, forward_dynamics_batch_k)


def aba(model, q, v, tau, f_ext=None, f_ext_frame="local"):
    """Joint accelerations by the articulated-body algorithm (same result as
    :func:`forward_dynamics`; mimic joints handled as constraints; where an
    articulated inertia is nearly singular the kernel falls back to CRBA +
    LᵀDL, see ``algorithms/aba.py``)."""
    return _fd(model, q, v, tau, f_ext, f_ext_frame, aba_k, aba_batch_k, forward_dynamics_k)


def _fd(model, q, v, tau, f_ext, frame, kernel, kernel_batch, fallback=None):
    """forward_dynamics / aba.  ``fallback``: the kernel that computes the result where
    ``kernel`` reports SINGULAR (aba: a nearly singular pivot -> CRBA + LᵀDL)."""
    try:
        if f_ext is None and frame is _LOCAL:
            out = _empty(model._nv)     # the fast path (see _FAST)
            st = kernel(model.md_k, model._tls.ws, q, v, tau, _NO_FEXT, False, out)
            if st:
                if st == SINGULAR and fallback is not None:
                    st = fallback(model.md_k, model._tls.ws, q, v, tau, _NO_FEXT, False, out)
                _check(st, "tau", args=(("q", q), ("v", v), ("tau", tau)))
            return out
        q = _vec(q, model.nq, "q")
    except TypeError:     # not plain arrays, or a length that does not fit: checked below
        q = _vec(q, model.nq, "q")
    except AttributeError:
        if _first_in_thread(model):
            return _fd(model, q, v, tau, f_ext, frame, kernel, kernel_batch, fallback)
        raise
    v = _vec(v, model.nv, "v")
    tau = _vec(tau, model.nv, "tau")
    N = _batch(q, v, tau)
    args = (("q", q), ("v", v), ("tau", tau), ("f_ext", f_ext if isinstance(f_ext, _ND) else ()))
    if f_ext is None:
        _frame_ok(frame)
    ws = model.workspace()
    if N is None:
        out = np.empty(model.nv)
        fe, world = (_NO_FEXT, False) if f_ext is None else _fext(model, f_ext, frame, None)
        st = kernel(model.md_k, ws, q, v, tau, fe, world, out)
        if st == SINGULAR and fallback is not None:
            st = fallback(model.md_k, ws, q, v, tau, fe, world, out)
        _check(st, "tau", args=args)
        return out
    fe, world = (_NO_FEXT3, False) if f_ext is None else _fext(model, f_ext, frame, N)
    out = np.empty((N, model.nv))
    status = np.zeros(N, dtype=np.int64)
    _run_batch(kernel_batch, N, model.md_k, q, v, tau, fe, world, out, status)
    if fallback is not None:
        for n in np.flatnonzero(status == SINGULAR):
            status[n] = fallback(model.md_k, ws, q[n], v[n], tau[n], fe[n] if fe.shape[0] == N else _NO_FEXT,
                                 world, out[n])
    _check_batch(status, "tau", args=args)
    return out


# ----------------------------------------------------------------------------- LᵀDL

def ltdl(model, H):
    """Factorise H = Lᵀ D L exploiting branch-induced sparsity (only ancestors
    are visited).  Returns one matrix: D on the diagonal, L's off-diagonal
    entries below it, zeros above.  Use with :func:`ltdl_solve`; :func:`ltdl_unpack` gives
    (L, D).  Batches (N, nv, nv) are factorised one by one.  H must be finite
    and positive definite: a pivot d_k <= 1e-10 H_kk counts as singular
    (``algorithms/ltdl.py``)."""
    try:
        nv = model.nv
    except AttributeError:
        _not_model(model)
        raise
    H = _convert(H, "H", f"an ({nv}, {nv}) symmetric positive-definite matrix")
    if H.shape[-2:] != (nv, nv) or H.ndim not in (2, 3):
        raise ValueError(f"H: expected shape ({nv}, {nv}) or (N, {nv}, {nv}), got {_describe(H)}")
    LD = H.copy()
    for k, M in enumerate(LD.reshape((-1, nv, nv))):
        if not ltdl_k(model.md_k, M) or not np.isfinite(M).all():
            where = "" if LD.ndim == 2 else f" (batch row {k})"
            raise ValueError(f"H{where}: expected a finite symmetric positive-definite matrix "
                             "(non-finite entries, or singular to working precision)")
    return np.tril(LD)


def ltdl_solve(model, LD, b):
    """Solve H x = b given ``LD = ltdl(model, H)``; b is (nv,) or (m, nv) right-hand sides
    (with a batch of factors, (N, nv)).  Raises ValueError for non-finite LD
    or b, an LD whose diagonal D is not positive, or a non-finite result
    (b too large)."""
    try:
        nv = model.nv
    except AttributeError:
        _not_model(model)
        raise
    LD = _convert(LD, "LD", f"the ({nv}, {nv}) result of ltdl()")
    b = _vec(b, nv, "b")
    if LD.ndim == 2:
        if LD.shape != (nv, nv):
            raise ValueError(f"LD: expected shape ({nv}, {nv}), got {_describe(LD)}")
    elif LD.shape[1:] != (nv, nv) or b.shape != (LD.shape[0], nv):
        raise ValueError(f"LD and b: expected (N, {nv}, {nv}) and (N, {nv}), got {LD.shape} and {b.shape}")
    batch = LD.ndim == 3
    for name, x in (("LD", LD), ("b", b)):
        ok = np.isfinite(x.reshape((x.shape[0], -1)) if batch else x.reshape(1, -1)).all(axis=1)
        if not ok.all():
            where = f" (batch row {int(np.flatnonzero(~ok)[0])})" if batch else ""
            raise ValueError(f"{name}{where}: expected finite numbers, got NaN or inf")
    if not (np.diagonal(LD, axis1=-2, axis2=-1) > 0.0).all():
        raise ValueError("LD: expected the result of ltdl() (a positive diagonal D), got a diagonal entry <= 0")
    if not batch:
        x = np.array(b, copy=True).reshape((-1, nv))
        ltdl_solve_k(model.md_k, LD, x)
        x = x.reshape(b.shape)
    else:
        x = b.copy()
        for n in range(LD.shape[0]):
            ltdl_solve_k(model.md_k, LD[n], x[n:n + 1])
    if not np.isfinite(x).all():
        raise ValueError("b: the result is not finite: the b values are too large for this factor (overflow)")
    return x


def ltdl_unpack(LD):
    """(L, D) from the packed factor: H = Lᵀ diag(D) L, L unit lower triangular."""
    LD = np.asarray(LD)
    L = np.tril(LD, -1) + np.eye(LD.shape[-1])
    return L, np.diagonal(LD, axis1=-2, axis2=-1).copy()
