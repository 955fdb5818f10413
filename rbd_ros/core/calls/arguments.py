"""The public functions of every registered algorithm, made from its registry entry.

For an entry ``e`` (``registry.py``) this module makes two functions:

* ``e.name(model, *inputs[, f_ext, f_ext_frame])``: one state (1-D arrays) or a
  batch (2-D arrays with a leading dimension N, all arguments the same N, run
  on numba's thread count of cores); returns a new array.
* ``e.name + "_into"(model, *inputs, out)``: one state, written into the
  caller's ``out`` (a writable C-contiguous float64 array of the result's
  shape); returns None.  Nothing is allocated: the form a control loop calls.

The contract of both: bad arguments raise ``ValueError`` naming the argument
and what was expected (a non-Model ``model``: ``TypeError``); a result is
always finite: finite arguments so large that the result overflows raise
``ValueError`` naming the largest argument ("... not finite"); an ``out`` is
not to be used after an error.

Each function has a fast path and a checked path.  The fast path checks
nothing in Python: it hands the caller's objects to the kernel; numba's
dispatcher checks the types (anything but plain float64 arrays is refused by
the guard in ``_numba_compat``), the kernel checks the lengths (``BAD_SHAPE``,
before it reads anything) and the values (NaN/inf, a status code).  Anything
the fast path refuses goes to the checked path, which converts and checks
every argument, naming the bad one, then calls the same kernel.  The fast
path's source is generated from one template (``_FAST_SOURCE``) so that it
costs what hand-written code costs: a Python call is ~60 ns, a dispatcher
argument ~50 ns, a dtype test ~40 ns per array (bench/RESULTS.md).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
from numba.core import types as nbt

from ..algorithms.common import BAD_FEXT, BAD_Q, BAD_QUAT, BAD_RESULT, BAD_SHAPE, BAD_V, OK, SINGULAR
from ..algorithms.crba import crba_k
from ..model.model import Model
from . import _numba_compat as nbc
from .checked import run_batch, run_rows

_F8 = np.dtype(np.float64)
_ND = np.ndarray
NO_FEXT = np.zeros((0, 6))        # no f_ext: a (0, 6) array of per-body wrenches
NO_FEXT3 = np.zeros((0, 0, 6))    # ... and for a batch
FEXT_FRAMES = ("local", "world")
_LOCAL = FEXT_FRAMES[0]

# True unless something passed an unaligned float64 array to a numba kernel before
# this module was imported (see _numba_compat); the fast paths then test dtypes too.
BYTE_ORDER_SAFE = nbc.claim_array_typecodes()


# ----------------------------------------------------------------------------- argument checks

def describe(x) -> str:
    """A short description of an argument for error messages."""
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def not_model(model) -> None:
    """TypeError unless ``model`` is a Model."""
    if not isinstance(model, Model):
        raise TypeError(f"model: expected an rbd_ros.core.Model (Model.from_urdf), got {describe(model)}")


def convert(x, name: str, expected: str) -> np.ndarray:
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


def vec(x, n: int, name: str) -> np.ndarray:
    """``x`` as a plain float64 array of shape (n,) or (N, n)."""
    if not (type(x) is _ND and x.dtype is _F8 and x.flags.carray):
        x = convert(x, name, f"{n} numbers (or an (N, {n}) batch)")
    if x.shape[-1:] != (n,) or x.ndim > 2:
        raise ValueError(f"{name}: expected shape ({n},) or (N, {n}), got {describe(x)}")
    return x


def out_array(x, size: int, name: str) -> np.ndarray:
    """``x`` as a writable, aligned, C-contiguous float64 array of ``size`` elements, flat (a view)."""
    if not (type(x) is _ND and x.dtype is _F8 and x.flags.carray and x.size == size):
        raise ValueError(f"{name}: expected a writable C-contiguous float64 numpy array of {size} "
                         f"elements, got {describe(x)}")
    return x.reshape(size)


_WHAT = {BAD_Q: "q", BAD_V: "v", BAD_FEXT: "f_ext"}


def check(status, third="a", index=None, args=(), model=None) -> None:
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


def _condition(model, q, index) -> str:
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


def check_batch(status, third="a", args=(), model=None) -> None:
    """Raise for the first bad batch row."""
    bad = np.flatnonzero(status)
    if bad.size:
        check(int(status[bad[0]]), third, int(bad[0]), args, model)


def batch_size(*args):
    """Leading dimension N if the arguments are a batch, else None."""
    nd = {a.ndim for a in args}
    if nd == {1}:
        return None
    if nd != {2} or len({a.shape[0] for a in args}) != 1:
        shapes = ", ".join(str(a.shape) for a in args)
        raise ValueError(f"arguments must all be single states (1-D) or batches with the same N (2-D); "
                         f"got shapes {shapes}")
    return args[0].shape[0]


def frame_ok(frame) -> None:
    if frame not in FEXT_FRAMES:
        raise ValueError(f"f_ext_frame: expected one of {FEXT_FRAMES}, got {frame!r}")


def body_wrenches(model, f_ext, frame, N):
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
    M = model.fext_map(frame)
    flat = f_ext.reshape((-1, nl * 6))
    body = np.ascontiguousarray((flat @ M.T).reshape((-1, model.nbodies, 6)))
    return (body[0] if N is None else body), frame == "world"


# ----------------------------------------------------------------------------- options

REQUIRED = object()      # an option without a default


@dataclass(frozen=True)
class Option:
    """A non-array parameter of a public function (a frame name, a reference) and how
    it becomes kernel arguments: ``convert(model, value) -> tuple`` of plain values
    whose numba ``types`` the kernel is compiled for.  The converted arguments follow
    the state arrays in the kernel call; they are cached per model and value."""
    name: str
    default: object
    convert: object
    types: tuple
    example: object = None   # example(model) -> a valid value (docs, the registry's tests)


def _frame(model, link):
    """A URDF link name -> (its body, its placement in that body as 12 numbers: R row-major, p)."""
    if not isinstance(link, str) or link not in model._link_pos:
        close = model.close_links(link) if isinstance(link, str) else []
        hint = f"; did you mean {close}?" if close else ""
        raise ValueError(f"frame: expected the name of a link of the model, got {link!r}{hint}")
    lp = model.tree.links[model._link_pos[link]]
    return lp.body, np.concatenate([np.asarray(lp.R, dtype=np.float64).reshape(9),
                                    np.asarray(lp.p, dtype=np.float64)])


REFERENCES = ("world", "local", "local_world_aligned")


def _reference(model, ref):
    """Pinocchio's reference frames, by name -> 0 world, 1 local, 2 local_world_aligned."""
    if ref not in REFERENCES:
        raise ValueError(f"reference: expected one of {REFERENCES}, got {ref!r}")
    return (REFERENCES.index(ref),)


_V1 = nbt.Array(nbt.float64, 1, "C")
def _deepest_link(model):
    """The URDF link on the body with the most ancestors (a robot's tool flange, usually)."""
    depth = [0] * model.nbodies
    for i, p in enumerate(model.tree.parent):
        depth[i] = 0 if p < 0 else depth[p] + 1
    links = [lp for lp in model.tree.links if lp.body >= 0] or list(model.tree.links)
    return max(links, key=lambda lp: depth[lp.body] if lp.body >= 0 else -1).name


FRAME = Option("frame", REQUIRED, _frame, (nbt.int64, _V1), _deepest_link)
REFERENCE = Option("reference", "local_world_aligned", _reference, (nbt.int64,), lambda model: "local")
_option_cache = weakref.WeakKeyDictionary()


def option_args(e, model, values) -> tuple:
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


# ----------------------------------------------------------------------------- checked paths

def _sizes(e, model):
    return [model.nq if name == "q" else model.nv for name in e.inputs]


def checked_call(e, model, inputs, f_ext=None, frame=_LOCAL, options=()):
    """The checked path of ``e.name``: every argument converted and checked (naming
    the bad one), one state or a batch."""
    not_model(model)
    extra = option_args(e, model, options) if e.options else e.fast_extra
    arrays = [vec(x, n, name) for x, n, name in zip(inputs, _sizes(e, model), e.inputs)]
    N = batch_size(*arrays)
    args = tuple(zip(e.inputs, arrays))
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


def checked_into(e, model, inputs, out, options=()):
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


# ----------------------------------------------------------------------------- fast paths

# The fast path of every public function, one template.  {name}: the function,
# {params}: its parameters, {inputs}: the state arrays, {extra}: the kernel's extra
# arguments of a call without f_ext (constants, or the converted options), {out}:
# the result's shape expression, {cond}: when the fast path applies, {guard}: the
# dtype test where byte order is unsafe.
_FAST_SOURCE = '''
def {name}(model, {params}):
    try:
        if {cond}{guard}:
            out = _empty({out})
            st = _kernel(model.md_k, model._tls.ws, {inputs}{extra}, out)
            if st:
{fallback}                _check(st, _third, args=({named}), model=model)
            return out
    except TypeError:         # not plain arrays, or a length that does not fit: checked path
        pass
    except AttributeError:    # not a Model (TypeError), or this thread's first call (no workspace yet)
        _not_model(model)
    return _checked(_entry, model, ({inputs},){fext_args}{opt_kw})
'''

_INTO_SOURCE = '''
def {name}_into(model, {inputs}{opt_params}, out):
    try:
        if True{guard}:
            st = _kernel(model.md_k, model._tls.ws, {inputs}{extra}, out)
            if st:
{fallback}                _check(st, _third, args=({named}), model=model)
            return
    except TypeError:
        pass
    except AttributeError:
        _not_model(model)
    _checked_into(_entry, model, ({inputs},), out{opt_kw})
'''

_FALLBACK = '''                if st == _SINGULAR:
                    st = _fallback(model.md_k, model._tls.ws, {inputs}, _NO_FEXT, False, out)
'''


def _dim_source(s) -> str:
    """A dimension of ``Algorithm.out`` as Python source in ``model``."""
    if s in ("nv", "nq"):
        return f"model._{s}"
    if isinstance(s, str) and s.endswith("nb"):
        return f"{int(s[:-2].rstrip('*') or 1)} * model.nbodies"
    return str(int(s))


def _source(template, e, byte_order_safe):
    inputs = ", ".join(e.inputs)
    fext = e.fext
    guard = "" if byte_order_safe else "".join(f" and {x}.dtype is _F8" for x in e.inputs)
    extra = "".join(f", _extra{k}" for k in range(len(e.fast_extra)))
    names = [o.name for o in e.options]
    if names:      # the options, converted (cached per model): *_options(...)
        extra = ", *_options(_entry, model, (" + ", ".join(names) + ",))"
    defaults = "".join(f", {o.name}" + ("" if o.default is REQUIRED else f"={o.default!r}") for o in e.options)
    out = {("nv",): "model._nv", ("nv", "nv"): "model._shape_H"}.get(tuple(e.out)) or \
        "(" + ", ".join(_dim_source(s) for s in e.out) + ",)"
    return template.format(
        name=e.name, inputs=inputs, extra=extra, out=out, guard=guard,
        params=inputs + defaults + (", f_ext=None, f_ext_frame=\"local\"" if fext else ""),
        opt_params="".join(f", {n}" for n in names),
        opt_kw=", options=(" + ", ".join(names) + ",)" if names else "",
        cond="f_ext is None and f_ext_frame is _LOCAL" if fext else "True",
        fext_args=", f_ext, f_ext_frame" if fext else "",
        named=", ".join(f"(\"{x}\", {x})" for x in e.inputs) + ",",
        fallback=_FALLBACK.format(inputs=inputs) if e.fallback is not None else "")


def make_public(e, byte_order_safe=BYTE_ORDER_SAFE):
    """(the public function, its ``_into`` twin) of registry entry ``e``."""
    namespace = dict(_empty=np.empty, _kernel=e.kernel, _fallback=e.fallback, _entry=e, _third=e.third,
                     _check=check, _not_model=not_model, _checked=checked_call, _checked_into=checked_into,
                     _SINGULAR=SINGULAR, _NO_FEXT=NO_FEXT, _LOCAL=_LOCAL, _F8=_F8, _options=option_args,
                     **{f"_extra{k}": x for k, x in enumerate(e.fast_extra)})
    fns = []
    for template in (_FAST_SOURCE, _INTO_SOURCE):
        src = _source(template, e, byte_order_safe)
        exec(compile(src, f"<rbd_ros.core.api: {e.name}>", "exec"), namespace)
        fns.append(namespace.pop(e.name if template is _FAST_SOURCE else e.name + "_into"))
    public, into = fns
    public.__doc__ = e.doc
    into.__doc__ = (f"{e.name}({', '.join(e.inputs)}) for one state, written into ``out`` (a writable "
                    f"C-contiguous float64 array of the result's shape); allocates nothing.  Raises "
                    f"ValueError as {e.name} does (``out`` is then not to be used).")
    for f in (public, into):
        f.__module__ = "rbd_ros.core"
    return public, into


def build(algorithms, other_kernels=()) -> dict:
    """{public name: function} for the registry's entries (``<name>`` and
    ``<name>_into`` each); installs the numba guards: a fast-path kernel compiles
    only for its plain argument types, every other kernel copies odd arrays
    instead of compiling for them (``_numba_compat``)."""
    fns, guarded = {}, set()
    for e in algorithms:
        nbc.plain_arguments_only(e.kernel, e.plain_types())
        guarded.add(e.kernel)
    for k in [d for e in algorithms for d in e.dispatchers()] + list(other_kernels):
        if k not in guarded:
            nbc.behaved_inputs(k)
            guarded.add(k)
    for e in algorithms:
        public, into = make_public(e)
        fns[e.name], fns[e.name + "_into"] = (e.wrap(public) if e.wrap else public), into
    return fns
