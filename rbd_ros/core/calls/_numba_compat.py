"""Every use of numba's private API, in one module.

The public functions' single-call fast paths hand the caller's objects straight
to a compiled kernel (see ``api.py``) and rely on three things numba does not
document; each is reached only through this module, and
``test/test_numba_compat.py`` fails loudly, naming the numba version, when one
of them changes:

1. ``Dispatcher._compile_for_args``: the dispatcher calls it only when no
   compiled signature matches the arguments (in C, before any Python runs).
   :func:`plain_arguments_only` and :func:`behaved_inputs` replace it per
   kernel, so an argument of an unexpected type never compiles a second
   specialisation (5-20 s).
2. The dispatcher's typecode cache for arrays (``_typeof.c``,
   ``cached_arycode``): arrays that are C- or F-contiguous, aligned, writable
   and in native byte order are typed by (ndim, layout, dtype number); every
   *other* array of a given ndim and dtype number -- strided, read-only,
   unaligned, or byte-swapped -- shares one table entry, filled with the
   numba type of the first such array the process passes to any kernel.  If
   that first one is an unaligned writable C-contiguous float64 array (numba
   types it as a plain C array), a later big-endian float64 array is typed as
   a plain array too, and a kernel reads its bytes unswapped.
   :func:`claim_array_typecodes` fills those entries first, with read-only
   arrays (a type no plain signature converts from), and checks that it
   worked; ``BYTE_ORDER_SAFE`` says whether it did.
3. The on-disk cache index (``Dispatcher._cache._cache_file._load_index``):
   :func:`cached_on_disk` tells whether a kernel will load instead of compile
   (the node's first-start log line and its compile helper).
4. The array data model (``numba.np.arrayobj.make_array`` / ``populate_array``):
   the kernels' borrowed views live next to the kernels, in
   ``algorithms/views.py`` (``algorithms`` may not import ``calls``);
   ``test/test_numba_compat.py`` checks them too.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, typeof

NUMBA_VERSION = numba.__version__
SUPPORTED = ("0.62", "0.69")    # numba >= SUPPORTED[0], < SUPPORTED[1] (setup.py, package.xml, doc/numba.md)


def _release(text: str) -> tuple:
    out = []
    for part in text.split(".")[:3]:
        digits = "".join(c for c in part if c.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def check_version(version: str = NUMBA_VERSION) -> None:
    """Raise ImportError, naming the installed version and the supported range, for a
    numba below the lower bound (its dispatcher lets a byte-swapped array's typing error
    escape, so the core cannot guard its fast paths); a numba above the range imports
    (test/test_numba_compat.py says whether its internals still hold)."""
    if _release(version) < _release(SUPPORTED[0]):
        raise ImportError(f"rbd_ros.core needs numba>={SUPPORTED[0]},<{SUPPORTED[1]}, found numba {version}: "
                          f"pip install 'numba>={SUPPORTED[0]},<{SUPPORTED[1]}' (doc/numba.md)")


check_version()


class NotPlain(TypeError):
    """A fast-path kernel was handed something other than its plain argument types
    (raised from numba's dispatcher, see :func:`plain_arguments_only`), or arrays of
    lengths that do not fit the model (the kernel's BAD_SHAPE); the public function
    catches it and takes its checked path."""


def _guard(kernel, accept, what: str) -> None:
    """Replace ``kernel._compile_for_args`` so that it compiles only for arguments
    ``accept(args)`` approves of, and raises :class:`NotPlain` otherwise."""
    compile_for_args = kernel._compile_for_args

    def _compile_for_args(*args, **kws):
        if not kws and accept(args):
            return compile_for_args(*args)
        raise NotPlain(f"{kernel.__name__}: {what}")

    kernel._compile_for_args = _compile_for_args


def plain_arguments_only(kernel, types) -> None:
    """``kernel`` runs only on exactly these numba ``types``.

    In ``_compile_for_args`` -- which numba calls only when no compiled
    signature matches -- the arguments of the very first call (nothing compiled
    or loaded from the cache yet) are compiled for if they have exactly the
    plain types; anything else (a list, a float32, read-only, non-contiguous or
    byte-swapped array, a 2-D batch) raises :class:`NotPlain`.  So no call
    compiles a second specialisation."""
    types = tuple(types)
    ndims = tuple(getattr(t, "ndim", None) for t in types)

    def accept(args):
        if kernel.overloads:         # the plain one is compiled: these arguments are not plain
            return False             # (.overloads: a dict; .signatures would hash every type)
        if len(args) != len(types) or any(type(a) is np.ndarray and a.ndim != d for a, d in zip(args, ndims)):
            return False             # (a batch: cheaper than numba's typeof)
        try:
            return len(args) == len(types) and all(typeof(a) == t for a, t in zip(args, types))
        except Exception:            # typeof: no numba type at all (numba's own error classes)
            return False

    _guard(kernel, accept, "not the plain argument types")


def behaved_inputs(kernel) -> None:
    """``kernel`` copies odd array arguments instead of compiling for them (the
    kernels the checked paths call, which convert their arguments first: a safety
    net).  A read-only, non-contiguous, unaligned or byte-swapped array has a numba
    type no signature matches; in ``_compile_for_args`` such arrays (any argument
    but the first, the model vector) are replaced by writable C-contiguous copies
    in native byte order and the kernel is re-entered with them.  Outputs are
    always plain arrays the caller made, so no result is written into a discarded
    copy."""
    compile_for_args = kernel._compile_for_args

    def _compile_for_args(*args, **kws):
        fixed = list(args)
        for k in range(1, len(fixed)):
            a = fixed[k]
            if isinstance(a, np.ndarray) and not (a.flags.carray and a.dtype.isnative):
                fixed[k] = np.array(a, dtype=a.dtype.newbyteorder("="), order="C", copy=True)
        if all(f is a for f, a in zip(fixed, args)):
            return compile_for_args(*args, **kws)
        return lambda *_args, **_kws: kernel(*fixed)

    kernel._compile_for_args = _compile_for_args


def cached_on_disk(dispatcher) -> bool:
    """True if numba's on-disk cache has a compiled version of ``dispatcher`` for its
    current source (the index file exists and its source stamp matches)."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:
        return False


def will_compile(dispatchers) -> bool:
    """True if any of the kernels will be compiled (not in memory, not in the disk cache)."""
    return any(not d.signatures and not cached_on_disk(d) for d in dispatchers)


# ----------------------------------------------------------------------------- array typecodes

@njit(cache=True, nogil=True)
def _probe(x):
    """Compiled for plain float64 arrays of 1, 2 and 3 dimensions only (guarded)."""
    return x.ndim


def _odd(ndim: int, kind: str) -> np.ndarray:
    x = np.zeros((2,) * ndim)
    if kind == "readonly":
        x.setflags(write=False)
        return x
    return x.astype(">f8" if np.little_endian else "<f8")    # byte-swapped


def claim_array_typecodes() -> bool:
    """Fill numba's shared typecode entry of odd float64 arrays (see the module
    docstring, 2.) with the read-only array type, for 1-, 2- and 3-D arrays, and
    check that odd arrays -- byte-swapped ones above all -- now miss every plain
    signature.  Returns True if they do (False: something in this process passed
    an unaligned float64 array to a numba kernel before rbd_ros.core was imported;
    the fast paths must then check byte order themselves)."""
    for ndim in (1, 2, 3):
        try:
            _probe(_odd(ndim, "readonly"))      # first odd array of this ndim: its type is cached
        except NotPlain:
            pass
    for ndim in (1, 2, 3):
        _probe(np.zeros((2,) * ndim))           # the plain signatures
    safe = True
    for ndim in (1, 2, 3):
        for kind in ("readonly", "swapped"):
            try:
                _probe(_odd(ndim, kind))
                safe = False                    # ran: typed as a plain array
            except NotPlain:
                pass
    return safe


def _plain_float64(args) -> bool:
    a = args[0] if len(args) == 1 else None
    return isinstance(a, np.ndarray) and a.flags.carray and a.dtype == np.float64 and a.dtype.isnative


_guard(_probe, _plain_float64, "not a plain float64 array")
