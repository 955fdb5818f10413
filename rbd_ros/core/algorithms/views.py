"""The kernels' array views: numba's array data model (``numba.np.arrayobj.make_array``
/ ``populate_array``), the one use of numba's private API inside ``algorithms``
(the rest is in ``calls/_numba_compat.py``; ``test/test_numba_compat.py`` checks both
and names the numba version if any of it changes).

:func:`borrow`, :func:`strided` and :func:`contiguous` build array views inside
kernels that are not reference-counted (a NULL meminfo, as ``numba.carray`` makes),
so the kernels can hand per-body views (``X[i]``, ``v[p]``) to inlined helpers
without the atomic reference-count updates numba emits around every array a helper
receives (~25 % of CRBA's time on a 7-DOF arm; bench/RESULTS.md), and without the
slice clamping and checks of ``reshape`` / ``as_strided``.
"""
from numba.core import cgutils, types
from numba.core.imputils import impl_ret_untracked
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array


@intrinsic
def borrow(typingctx, a):
    """``a`` itself (same type, data, shape and strides) without reference counting:
    inside a kernel, a borrowed array and every view taken of it cost no atomic
    reference-count update when passed around.  Valid while the original is (for a
    kernel's arguments: the whole call); never return or store one."""
    if not isinstance(a, types.Array):
        return None
    sig = a(a)

    def codegen(context, builder, sig, args):
        src = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(sig.return_type)(context, builder)
        populate_array(out, data=src.data, shape=src.shape, strides=src.strides, itemsize=src.itemsize,
                       meminfo=None)
        return impl_ret_untracked(context, builder, sig.return_type, out._getvalue())

    return sig, codegen


@intrinsic
def contiguous(typingctx, a, start, shape):
    """The C-contiguous view of ``a``'s elements from ``start`` on with ``shape`` (a tuple
    of integers): numpy's ``a[start:start + size].reshape(shape)``, unchecked and not
    reference-counted (see :func:`borrow`), typed as a C-contiguous array like the
    kernels' arguments (``a``'s elements from ``start`` on must be contiguous: a kernel
    argument, a borrowed one, a ``vector`` view).  numba's own reshape calls a C
    function (~170 instructions)."""
    if not (isinstance(a, types.Array) and isinstance(start, types.Integer)
            and isinstance(shape, types.BaseTuple) and len(shape) > 0
            and all(isinstance(t, types.Integer) for t in shape)):
        return None
    ret = types.Array(a.dtype, len(shape), "C", readonly=not a.mutable)
    sig = ret(a, start, shape)

    def codegen(context, builder, sig, args):
        intp = context.get_value_type(types.intp)
        src = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(sig.return_type)(context, builder)
        dims = [context.cast(builder, x, t, types.intp)
                for x, t in zip(cgutils.unpack_tuple(builder, args[2]), sig.args[2], strict=True)]
        itemsize = intp(context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype)))
        strides = [itemsize]
        for d in reversed(dims[1:]):
            strides.insert(0, builder.mul(strides[0], d))
        first = context.cast(builder, args[1], sig.args[1], types.intp)
        populate_array(out, data=builder.gep(src.data, [first]), shape=dims, strides=strides,
                       itemsize=src.itemsize, meminfo=None)
        return impl_ret_untracked(context, builder, sig.return_type, out._getvalue())

    return sig, codegen


@intrinsic
def strided(typingctx, a, start, shape, strides):
    """The view of ``a``'s buffer that starts at element ``start`` and has ``shape``
    and ``strides`` (tuples of integers; strides in elements): numpy's
    ``as_strided(a[start:], shape, strides * itemsize)``, unchecked (the caller checked
    that the view lies inside ``a``) and not reference-counted (see :func:`borrow`).
    ``a`` must be contiguous (a kernel argument, a borrowed one, or such a view's row)."""
    if not (isinstance(a, types.Array) and isinstance(start, types.Integer)
            and isinstance(shape, types.BaseTuple) and isinstance(strides, types.BaseTuple)
            and len(shape) == len(strides) > 0
            and all(isinstance(t, types.Integer) for t in tuple(shape) + tuple(strides))):
        return None
    ret = types.Array(a.dtype, len(shape), "A", readonly=not a.mutable)
    sig = ret(a, start, shape, strides)

    def codegen(context, builder, sig, args):
        intp = context.get_value_type(types.intp)
        src = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(sig.return_type)(context, builder)

        def ints(tup, tys):
            return [context.cast(builder, x, t, types.intp)
                    for x, t in zip(cgutils.unpack_tuple(builder, tup), tys, strict=True)]
        first = context.cast(builder, args[1], sig.args[1], types.intp)
        itemsize = intp(context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype)))
        populate_array(out, data=builder.gep(src.data, [first]), shape=ints(args[2], sig.args[2]),
                       strides=[builder.mul(s, itemsize) for s in ints(args[3], sig.args[3])],
                       itemsize=src.itemsize, meminfo=None)
        return impl_ret_untracked(context, builder, sig.return_type, out._getvalue())

    return sig, codegen
