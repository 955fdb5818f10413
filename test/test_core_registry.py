"""Every registered algorithm (rbd_ros.core.calls.registry) against its contract, by
parametrisation over the registry: a new entry is tested here without a line
of test code of its own (its oracle test against Pinocchio is its own).

* the public function and its ``_into`` form equal the numpy twin, single
  states and batches, with f_ext in both frames where the entry takes it;
* each argument's wrong length, NaN, wrong type is refused naming it;
* odd arrays (lists, read-only, strided, unaligned, byte-swapped) give the
  plain-array result and compile no new specialisation;
* the kernel writes only the workspace regions its entry declares, and never
  the model vector."""
import numpy as np
import pytest
from core_util import random_state, random_tree_urdf, rel_err

import rbd_ros.core as rbd
from rbd_ros.core.algorithms import layout
from rbd_ros.core.calls import checked
from rbd_ros.core.calls.registry import ALGORITHMS

TOL = 1e-9
ENTRIES = [pytest.param(e, id=e.name) for e in ALGORITHMS]


@pytest.fixture(scope="module", params=[(29, 9, False, 2), (32, 8, True, 0)], ids=["mimic", "floating"])
def model(request):
    seed, n, fb, nmim = request.param
    m = rbd.Model.from_urdf(random_tree_urdf(seed, n, mimic=nmim), floating_base=fb)
    assert len(m.mimic_joints) == nmim and "planar" in m.joint_types and (fb == ("floating" in m.joint_types))
    return m


def inputs(e, model, rng, N=None):
    q, v, a = random_state(model, rng)
    if N is not None:
        rows = [random_state(model, rng) for _ in range(N)]
        q, v, a = (np.array([r[k] for r in rows]) for k in range(3))
    return [q if name == "q" else v if name == "v" else a for name in e.inputs]


def options(e, model):
    """Example values of the entry's options (a frame, a reference), by name."""
    return {o.name: o.example(model) for o in e.options}


def call(e, model, args, **kw):
    return getattr(rbd, e.name)(model, *args, **{**options(e, model), **kw})


def call_into(e, model, args, out):
    return getattr(rbd, e.name + "_into")(model, *args, *options(e, model).values(), out)


@pytest.mark.parametrize("e", ENTRIES)
def test_public_function_equals_twin(e, model):
    rng = np.random.default_rng(1)
    for _ in range(3):
        args = inputs(e, model, rng)
        got = call(e, model, args)
        assert got.shape == e.out_shape(model)
        assert rel_err(got, e.twin(model, *args, **options(e, model))) < TOL
        if e.fext:
            F = rng.normal(size=(len(model.link_names), 6))
            for frame in ("local", "world"):
                assert rel_err(call(e, model, args, f_ext=F, f_ext_frame=frame),
                               e.twin(model, *args, f_ext=F, f_ext_frame=frame)) < TOL


@pytest.mark.parametrize("e", ENTRIES)
def test_into_form_equals_public_function(e, model):
    rng = np.random.default_rng(2)
    args = inputs(e, model, rng)
    out = np.full(e.out_shape(model), np.nan)
    assert call_into(e, model, args, out) is None
    np.testing.assert_array_equal(out, call(e, model, args))
    flat = np.full(int(np.prod(e.out_shape(model))), np.nan)
    call_into(e, model, [list(x) for x in args], flat)      # checked path
    np.testing.assert_array_equal(flat.reshape(out.shape), out)
    ro = np.zeros(flat.size)
    ro.setflags(write=False)
    for bad in (np.zeros(flat.size + 1), flat.astype(np.float32), ro):
        with pytest.raises(ValueError, match="out"):
            call_into(e, model, args, bad)


@pytest.mark.parametrize("e", ENTRIES)
def test_batches_equal_single_calls(e, model):
    rng = np.random.default_rng(3)
    for N in (3, 40):       # 40: more rows than one thread takes (checked.MIN_ROWS_PER_THREAD)
        args = inputs(e, model, rng, N)
        got = call(e, model, args)
        assert got.shape == (N,) + e.out_shape(model)
        for n in range(0, N, 7):
            np.testing.assert_array_equal(got[n], call(e, model, [a[n] for a in args]))


@pytest.mark.parametrize("e", ENTRIES)
def test_bad_arguments_are_named(e, model):
    rng = np.random.default_rng(4)
    args = inputs(e, model, rng)
    for k, name in enumerate(e.inputs):
        for bad, what in ((args[k][:-1], "shape"), (np.full(args[k].shape, np.nan), "finite"),
                          (["x"] * len(args[k]), "real numbers")):
            wrong = list(args)
            wrong[k] = bad
            with pytest.raises(ValueError, match=rf"^{name}\b.*{what}"):
                call(e, model, wrong)
            if what != "shape":
                with pytest.raises(ValueError, match=rf"^{name}\b"):
                    call_into(e, model, wrong, np.empty(e.out_shape(model)))
    for o in e.options:
        with pytest.raises(ValueError, match=rf"^{o.name}: "):
            call(e, model, args, **{o.name: "no such thing"})
    with pytest.raises(TypeError, match="model: expected an rbd_ros.core.Model"):
        getattr(rbd, e.name)("panda", *args, **options(e, model))
    with pytest.raises(TypeError, match="model: expected an rbd_ros.core.Model"):
        getattr(rbd, e.name + "_into")(None, *args, *options(e, model).values(), np.empty(e.out_shape(model)))


def odd_forms(x):
    """The same numbers as lists, read-only, strided, unaligned and byte-swapped arrays."""
    ro = x.copy()
    ro.setflags(write=False)
    strided = np.repeat(x, 2, axis=-1)[..., ::2]
    raw = bytearray(b"\0" + np.ascontiguousarray(x).tobytes())
    unaligned = np.frombuffer(raw, np.float64, offset=1).reshape(x.shape)
    swapped = x.astype(">f8" if np.little_endian else "<f8")
    return {"list": x.tolist(), "readonly": ro, "strided": strided, "unaligned": unaligned, "swapped": swapped}


@pytest.mark.parametrize("e", ENTRIES)
def test_odd_arrays_give_the_plain_result_and_compile_nothing(e, model):
    rng = np.random.default_rng(5)
    for N in (None, 4):
        args = inputs(e, model, rng, N)
        ref = call(e, model, args)
        before = {k: len(k.signatures) for k in e.dispatchers()}
        for k in range(len(args)):
            for kind, x in odd_forms(args[k]).items():
                wrong = list(args)
                wrong[k] = x
                np.testing.assert_array_equal(call(e, model, wrong), ref, err_msg=f"{e.inputs[k]} {kind}")
                if N is None:
                    out = np.empty(e.out_shape(model))
                    call_into(e, model, wrong, out)
                    np.testing.assert_array_equal(out, ref, err_msg=f"_into {e.inputs[k]} {kind}")
        assert {k: len(k.signatures) for k in e.dispatchers()} == before


def _region_spans(model):
    mi = model.mi
    offs = layout.region_offsets(int(mi[layout.H_NB]), int(mi[layout.H_NVF]), int(mi[layout.H_NMIM]))
    names = ["rnea", "world", "ic", "aba", "cor", "crba", "tmp", "mat", "vec", "y", "k"]
    return {n: (offs[i], offs[i + 1]) for i, n in enumerate(names)}


@pytest.mark.parametrize("e", ENTRIES)
def test_kernel_writes_only_its_declared_regions(e, model):
    """A sentinel (NaN) in every workspace entry; after a call (with f_ext in both
    frames where the entry takes it), every changed entry lies in a region the entry
    declares or the shared scratch (tmp).  The sentinel proves the test sees writes:
    something changed.  The model vector is never written."""
    rng = np.random.default_rng(6)
    args = inputs(e, model, rng)
    ws = model.workspace()
    md_before = model.md_k.copy()
    out = np.empty(e.out_shape(model))
    extra = checked.option_args(e, model, tuple(options(e, model).values())) if e.options else e.fast_extra
    calls = [lambda: e.kernel(model.md_k, ws, *args, *extra, out)]
    if e.fext:
        fe = rng.normal(size=(model.nbodies, 6))
        calls += [lambda w=w: e.fext_kernel(model.md_k, ws, *args, fe, w, out) for w in (False, True)]
    spans = _region_spans(model)
    allowed = np.zeros(ws.shape, dtype=bool)
    for name in e.regions + ("tmp",):
        lo, hi = spans[name]
        allowed[lo:hi] = True
    for c in calls:
        ws[:] = np.nan
        assert c() == 0
        changed = ~np.isnan(ws)
        assert changed.any()
        outside = np.flatnonzero(changed & ~allowed)
        assert outside.size == 0, f"{e.name} wrote outside {e.regions}: " + ", ".join(
            n for n, (lo, hi) in spans.items() if np.any((outside >= lo) & (outside < hi)))
    np.testing.assert_array_equal(model.md_k, md_before)
