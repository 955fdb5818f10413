"""The checked path of every public function: reading arguments, errors, batches.

A public function (``public.py``) first hands the caller's objects straight to its
kernel; whatever the kernel's dispatcher refuses (not plain float64 arrays: a list,
a float32, a read-only, strided or byte-swapped array, a batch) or its length check
refuses comes here: :func:`checked_call` / :func:`checked_into` read every argument
-- each error names the argument and what was expected -- then call the same kernels:
one state, or a batch of N states split over threads (:func:`run_batch`), and turn a
kernel's status code into the error it means (:func:`check`).  The non-array
parameters of some functions (a frame name, a reference frame) are :class:`Option` s:
converted to kernel arguments once per model and value (``options.py``).  :func:`dtype_checked` is what
the public functions become in a process where numba may read a byte-swapped array as
a plain one (``BYTE_ORDER_SAFE`` False).
"""
from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, Optional, Protocol, TypeVar, Union

import numpy as np
from numba import config as numba_config
from numba import get_num_threads
from numpy.typing import ArrayLike, NDArray

from ..algorithms.common import BAD_FEXT, BAD_Q, BAD_QUAT, BAD_RESULT, BAD_SHAPE, BAD_V, OK, SINGULAR
from ..algorithms.crba import crba_k
from ..model.model import Model
from . import _numba_compat as nbc
from .options import NO_FEXT, NO_FEXT3, Option

if TYPE_CHECKING:       # the entries' type, for the annotations only (registry.py imports this module)
    from .registry import Algorithm

# The types of the public functions' parameters and results.
Array = NDArray[np.float64]
FExt = Union[ArrayLike, Mapping[str, ArrayLike], None]   # per-link wrenches, or {link: wrench}
FExtFrame = Literal["local", "world"]
Reference = Literal["world", "local", "local_world_aligned"]

_F8 = np.dtype(np.float64)
_ND = np.ndarray
FEXT_FRAMES = ("local", "world")
LOCAL = FEXT_FRAMES[0]

# True unless something passed an unaligned float64 array to a numba kernel before
# this module was imported (see _numba_compat); the public functions then convert
# their inputs' dtypes before a kernel sees them (dtype_checked).
BYTE_ORDER_SAFE = nbc.claim_array_typecodes()


# ----------------------------------------------------------------------------- argument checks

def describe(x: object) -> str:
    """A short description of an argument for error messages."""
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def not_model(model: object) -> None:
    """TypeError unless ``model`` is a Model."""
    if not isinstance(model, Model):
        raise TypeError(f"model: expected an rbd_ros.core.Model (Model.from_urdf), got {describe(model)}")


def convert(x: object, name: str, expected: str) -> Array:
    """``x`` as a writable, aligned, C-contiguous float64 array in native byte order
    (a copy where needed); ValueError naming ``name`` for anything but real numbers."""
    try:
        arr = np.asarray(x)
        if arr.dtype.kind not in "iuf":
            raise TypeError
        if not (arr.dtype == _F8 and arr.dtype.isnative and arr.flags.carray):
            arr = np.array(arr, dtype=np.float64, order="C", copy=True)
        return arr
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {expected} as real numbers, got {describe(x)}") from None


def vec(x: object, n: int, name: str) -> Array:
    """``x`` as a plain float64 array of shape (n,) or (N, n)."""
    if not (type(x) is _ND and x.dtype is _F8 and x.flags.carray):
        x = convert(x, name, f"{n} numbers (or an (N, {n}) batch)")
    if x.shape[-1:] != (n,) or x.ndim > 2:
        raise ValueError(f"{name}: expected shape ({n},) or (N, {n}), got {describe(x)}")
    return x


def out_array(x: object, size: int, name: str) -> Array:
    """``x`` as a writable, aligned, C-contiguous float64 array of ``size`` elements, flat (a view)."""
    if not (type(x) is _ND and x.dtype is _F8 and x.flags.carray and x.size == size):
        raise ValueError(f"{name}: expected a writable C-contiguous float64 numpy array of {size} "
                         f"elements, got {describe(x)}")
    return x.reshape(size)


_WHAT = {BAD_Q: "q", BAD_V: "v", BAD_FEXT: "f_ext"}


def check(status: int, third: str = "a", index: Optional[int] = None,
          args: Sequence[tuple[str, Any]] = (), model: Optional[Model] = None) -> None:
    """Raise the ValueError for a kernel status.  ``args``: (name, array) of the
    call's arguments, to name the largest one when the result overflows; ``model``:
    to estimate H's condition when it is singular to working precision."""
    if status == OK:
        return
    if status == BAD_SHAPE:          # only a fast path can see it (the checked paths check lengths)
        raise nbc.NotPlain("an argument's length does not fit the model")
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
        raise ValueError(f"the joint-space inertia matrix H is singular or ill-conditioned at this q{where}"
                         f"{_condition(model, dict(args).get('q'), index)}: a joint that moves no mass "
                         "(a massless leaf link) or inertias of very different magnitudes (a huge payload?)")
    name = _WHAT.get(status, third)
    raise ValueError(f"{name}{where}: expected finite numbers, got NaN or inf")


def _condition(model: Optional[Model], q: Any, index: Optional[int]) -> str:
    """" (cond(H) ~ x with its diagonal scaled to 1)" for the error message, or ""."""
    if model is None or q is None:
        return ""
    try:
        q = np.asarray(q, dtype=np.float64)
        q = q[index] if index is not None and q.ndim == 2 else q
        H = np.empty((model.nv, model.nv))
        if crba_k(model.md_k, model.workspace(), np.ascontiguousarray(q), H) != OK:
            return ""
        d = np.sqrt(np.abs(np.diag(H)))
        d[d == 0] = 1.0
        return f" (cond(H) ~ {np.linalg.cond(H / np.outer(d, d)):.3g} with its diagonal scaled to 1)"
    except Exception:     # an estimate for a message only: never mask the error itself
        return ""


def check_batch(status: Array | NDArray[np.int64], third: str = "a", args: Sequence[tuple[str, Any]] = (),
                model: Optional[Model] = None) -> None:
    """Raise for the first bad batch row."""
    bad = np.flatnonzero(status)
    if bad.size:
        check(int(status[bad[0]]), third, int(bad[0]), args, model)


def batch_size(*args: Array) -> Optional[int]:
    """Leading dimension N if the arguments are a batch, else None."""
    nd = {a.ndim for a in args}
    if nd == {1}:
        return None
    if nd != {2} or len({a.shape[0] for a in args}) != 1:
        shapes = ", ".join(str(a.shape) for a in args)
        raise ValueError(f"arguments must all be single states (1-D) or batches with the same N (2-D); "
                         f"got shapes {shapes}")
    return args[0].shape[0]


def frame_ok(frame: object) -> None:
    """ValueError unless ``frame`` is one of FEXT_FRAMES."""
    if frame not in FEXT_FRAMES:
        raise ValueError(f"f_ext_frame: expected one of {FEXT_FRAMES}, got {frame!r}")


def body_wrenches(model: Model, f_ext: FExt, frame: object, N: Optional[int]) -> tuple[Array, bool]:
    """Per-link wrenches [f; tau] (``model.link_names`` order, or a dict {link:
    wrench}) -> (per-body spatial forces [n; f] for the kernels, world frame?)."""
    frame_ok(frame)
    nl = len(model.link_names)
    if isinstance(f_ext, dict):
        rows = np.zeros((nl, 6))
        for link, w in f_ext.items():
            w = vec(w, 6, f"f_ext[{link!r}]")
            if w.ndim != 1:
                raise ValueError(f"f_ext[{link!r}]: expected shape (6,) [fx fy fz tx ty tz], got {describe(w)}")
            rows[model.link_index(link)] = w
        f_ext = rows
    want = f"({nl}, 6) per-link wrenches [fx fy fz tx ty tz] in model.link_names order"
    if not (type(f_ext) is _ND and f_ext.dtype is _F8):
        f_ext = convert(f_ext, "f_ext", want)
    shape = (nl, 6) if N is None else (N, nl, 6)
    if f_ext.shape != shape:
        raise ValueError(f"f_ext: expected shape {shape}: {want}; got {describe(f_ext)}")
    M = model.fext_map(str(frame))
    flat = f_ext.reshape((-1, nl * 6))
    body = np.ascontiguousarray((flat @ M.T).reshape((-1, model.nbodies, 6)))
    return (body[0] if N is None else body), frame == "world"


# ----------------------------------------------------------------------------- options

_option_cache: weakref.WeakKeyDictionary[Model, dict[Any, tuple[Any, ...]]] = weakref.WeakKeyDictionary()


class HasOptions(Protocol):
    """What :func:`option_args` reads of a registry entry."""
    @property
    def name(self) -> str: ...
    @property
    def options(self) -> tuple[Option, ...]: ...


def option_args(e: HasOptions, model: Model, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """The kernel arguments of the options ``values`` of entry ``e`` for ``model``."""
    try:
        per_model = _option_cache[model]
    except KeyError:
        per_model = _option_cache.setdefault(model, {})
    except TypeError:
        not_model(model)
        raise
    key = (e.name, values)
    try:
        return per_model[key]
    except (KeyError, TypeError):     # new, or unhashable values (refused by convert)
        pass
    not_model(model)
    args = tuple(x for opt, val in zip(e.options, values) for x in opt.convert(model, val))
    per_model[key] = args
    return args


F = TypeVar("F", bound=Callable[..., Any])

# ----------------------------------------------------------------------------- batches

# Batches: serial row-range kernels (cached by numba, GIL released) run by Python
# threads, one contiguous range of rows per thread; the calling thread runs the first.
# A thread gets at least MIN_ROWS_PER_THREAD rows: below that, starting it costs more
# than it saves.
MIN_ROWS_PER_THREAD = 16
_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, numba_config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="rbd_batch")
        return _pool


def run_batch(kernel: Callable[..., Any], N: int, *args: Any) -> None:
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


def run_rows(kernel: Callable[..., Any], md: Array, ws: Array, arrays: Sequence[Array], extra: tuple[Any, ...],
             out: Array, status: Any) -> None:
    """status[n] = kernel(md, ws, *row n of arrays, *extra, out[n]) for every row (entries
    without a batch kernel; the common arities spelled out: a loop iteration costs less)."""
    if not extra and len(arrays) == 2:
        a, b = arrays
        for n in range(out.shape[0]):
            status[n] = kernel(md, ws, a[n], b[n], out[n])
    elif not extra and len(arrays) == 3:
        a, b, c = arrays
        for n in range(out.shape[0]):
            status[n] = kernel(md, ws, a[n], b[n], c[n], out[n])
    else:
        for n in range(out.shape[0]):
            status[n] = kernel(md, ws, *(x[n] for x in arrays), *extra, out[n])


# ----------------------------------------------------------------------------- checked paths

def _sizes(e: Algorithm, model: Model) -> list[int]:
    return [model.nq if name == "q" else model.nv for name in e.inputs]


def checked_call(e: Algorithm, model: Model, inputs: Sequence[object], f_ext: FExt = None, frame: object = LOCAL,
                 options: tuple[Any, ...] = ()) -> Array:
    """The checked path of ``e.name``: every argument converted and checked (naming
    the bad one), one state or a batch."""
    not_model(model)
    extra = option_args(e, model, options) if e.options else e.fast_extra
    arrays = [vec(x, n, name) for x, n, name in zip(inputs, _sizes(e, model), e.inputs)]
    N = batch_size(*arrays)
    args: tuple[tuple[str, Any], ...] = tuple(zip(e.inputs, arrays))
    if e.fext:
        args += (("f_ext", f_ext if isinstance(f_ext, _ND) else ()),)
        if f_ext is None:
            frame_ok(frame)
    shape = e.out_shape(model)
    ws = model.workspace()
    md = model.md_k
    if N is None:
        out = np.empty(shape)
        if f_ext is None:
            fe, world = NO_FEXT, False
            st = e.kernel(md, ws, *arrays, *extra, out)
        else:
            fe, world = body_wrenches(model, f_ext, frame, None)
            st = e.fext_kernel(md, ws, *arrays, fe, world, out)
        if st == SINGULAR and e.fallback is not None:
            st = e.fallback(md, ws, *arrays, fe, world, out)
        check(st, e.third, args=args, model=model)
        return out
    out = np.empty((N,) + shape)
    status = np.zeros(N, dtype=np.int64)
    if e.fext:
        fe, world = (NO_FEXT3, False) if f_ext is None else body_wrenches(model, f_ext, frame, N)
        run_batch(e.batch, N, md, *arrays, fe, world, out, status)
    elif e.batch is not None:
        run_batch(e.batch, N, md, *arrays, *extra, out, status)
    else:
        run_rows(e.kernel, md, ws, arrays, extra, out, status)
    if e.fallback is not None:
        for n in np.flatnonzero(status == SINGULAR):
            fe_n = fe[n] if fe.shape[0] == N else NO_FEXT
            status[n] = e.fallback(md, ws, *(a[n] for a in arrays), fe_n, world, out[n])
    check_batch(status, e.third, args=args, model=model)
    return out


def checked_into(e: Algorithm, model: Model, inputs: Sequence[object], out: object,
                 options: tuple[Any, ...] = ()) -> None:
    """The checked path of ``e.name + "_into"``: one state into ``out``."""
    not_model(model)
    extra = option_args(e, model, options) if e.options else e.fast_extra
    arrays = [vec(x, n, name) for x, n, name in zip(inputs, _sizes(e, model), e.inputs)]
    if any(a.ndim != 1 for a in arrays):
        raise ValueError(f"{e.name}_into: single states only ({', '.join(e.inputs)} 1-D)")
    shape = e.out_shape(model)
    flat = out_array(out, int(np.prod(shape)), "out")
    st = e.kernel(model.md_k, model.workspace(), *arrays, *extra, flat.reshape(shape))
    if st == SINGULAR and e.fallback is not None:
        st = e.fallback(model.md_k, model.workspace(), *arrays, NO_FEXT, False, flat.reshape(shape))
    check(st, e.third, args=tuple(zip(e.inputs, arrays)), model=model)


# ----------------------------------------------------------------------------- byte order

def dtype_checked(fn: F, inputs: Sequence[str]) -> F:
    """``fn`` (a public function) with its state arguments ``inputs`` converted to
    native float64 arrays first where they are arrays of another dtype: what the
    public functions become where byte order is unsafe (``arguments.BYTE_ORDER_SAFE``
    False: numba may type a byte-swapped float64 array as a plain one)."""
    n = len(inputs)
    names = frozenset(inputs)

    def native(x: Any) -> Any:
        if type(x) is _ND and x.dtype is not _F8 and x.dtype.kind in "iuf":
            return np.ascontiguousarray(x, dtype=np.float64)
        return x

    @functools.wraps(fn)
    def public(model: Any, *args: Any, **kwargs: Any) -> Any:
        args = tuple(native(x) if k < n else x for k, x in enumerate(args))
        kwargs = {k: native(x) if k in names else x for k, x in kwargs.items()}
        return fn(model, *args, **kwargs)

    return public  # type: ignore[return-value]     # same signature (functools.wraps)
