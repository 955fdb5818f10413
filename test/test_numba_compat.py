"""numba's private API as rbd_ros.core uses it (``rbd_ros/core/calls/_numba_compat.py``
and the kernels' views, ``rbd_ros/core/algorithms/views.py``, the only modules that
touch it): if numba changes any of it, these tests fail and say which numba version
did it.  The supported numba range (setup.py) is
the range these tests have passed on."""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numba
import numpy as np
import pytest
from numba import njit

from rbd_ros.core.algorithms import views
from rbd_ros.core.calls import _numba_compat as nbc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHO = (f"numba {numba.__version__} changed an internal rbd_ros.core relies on "
       "(rbd_ros/core/calls/_numba_compat.py, rbd_ros/core/algorithms/views.py)")


def test_compile_for_args_is_what_the_dispatcher_calls_when_nothing_matches():
    @njit(cache=False)
    def f(x):
        return x + 1.0

    assert callable(getattr(f, "_compile_for_args", None)), WHO
    seen = []
    orig = f._compile_for_args

    def spy(*args, **kws):
        seen.append(args)
        return orig(*args, **kws)

    f._compile_for_args = spy
    assert f(1.0) == 2.0 and len(seen) == 1, WHO        # compiled through it
    assert f(2.0) == 3.0 and len(seen) == 1, WHO        # the compiled signature: not called
    with pytest.raises(nbc.NotPlain):
        nbc.plain_arguments_only(f, ())                 # a guard on a compiled kernel
        f(np.zeros(2))
    assert len(f.signatures) == 1, WHO
    # the guard asks ``overloads`` (a dict: one entry per compiled signature) whether
    # anything is compiled; ``signatures`` would hash every type on each call
    assert isinstance(f.overloads, dict) and len(f.overloads) == 1, WHO

    @njit(cache=False)
    def g(x):
        return x

    assert not g.overloads, WHO


def test_disk_cache_index_is_readable():
    from rbd_ros.core.algorithms.rnea import rnea_k
    assert hasattr(rnea_k, "_cache") and hasattr(rnea_k._cache, "_cache_file"), WHO
    assert callable(getattr(rnea_k._cache._cache_file, "_load_index", None)), WHO
    assert nbc.cached_on_disk(rnea_k), WHO + " (or the kernels are not precompiled: run rbd_precompile)"

    @njit(cache=False)
    def g(x):
        return x

    assert not nbc.cached_on_disk(g) and nbc.will_compile([g])
    g(1.0)
    assert not nbc.will_compile([g])


CLAIM = r"""
import json, sys
import numpy as np
first = sys.argv[1]
if first == "unaligned":
    from numba import njit
    @njit
    def f(x):
        return x.size
    for shape in ((3,), (2, 3), (2, 2, 3)):
        f(np.frombuffer(bytearray(b"\0" + np.zeros(shape).tobytes()), np.float64, offset=1).reshape(shape))
from rbd_ros.core.calls import _numba_compat as nbc
safe = nbc.claim_array_typecodes()
ran = []
for shape in ((3,), (2, 3), (2, 2, 3)):
    try:
        nbc._probe(np.ones(shape).astype(">f8" if np.little_endian else "<f8"))
        ran.append(shape)
    except nbc.NotPlain:
        pass
print(json.dumps({"safe": safe, "swapped_ran": len(ran)}))
"""


@pytest.mark.parametrize("first", ["nothing", "unaligned"])
def test_array_typecode_cache_behaves_as_the_claim_assumes(first):
    """Fresh processes: with nothing before it, the claim makes byte-swapped arrays
    miss the plain signatures; after foreign code passed unaligned arrays first,
    byte-swapped arrays are typed plain (numba's shared typecode entry) and the
    claim reports it.  Either outcome changing means numba's typecode cache changed."""
    import json
    p = subprocess.run([sys.executable, "-c", CLAIM, first], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if first == "nothing":
        assert r == {"safe": True, "swapped_ran": 0}, WHO
    else:
        assert r == {"safe": False, "swapped_ran": 3}, WHO


def _version(text):
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3])


def test_installed_numba_is_in_the_supported_range():
    """numba is within setup.py's range (in both CI jobs: the main venv has the newest
    release in it; scripts/test_numba_bounds.sh the lower bound, which it names in
    RBD_EXPECT_NUMBA), and package.xml states the same range (doc/numba.md)."""
    with open(os.path.join(ROOT, "setup.py")) as f:
        spec = re.search(r'"numba>=([0-9.]+),<([0-9.]+)"', f.read())
    assert spec, "setup.py pins numba to a range: numba>=A,<B"
    lo, hi, have = _version(spec.group(1)), _version(spec.group(2)), _version(numba.__version__)
    assert lo <= have < hi, f"numba {numba.__version__} outside the supported >={spec.group(1)},<{spec.group(2)}"
    expect = os.environ.get("RBD_EXPECT_NUMBA")
    if expect:
        assert numba.__version__ == expect and have[:2] == lo[:2], \
            f"numba {numba.__version__}: the lower-bound job expects {expect}, setup.py's lower bound {spec.group(1)}"
    dep = [e for e in ET.parse(os.path.join(ROOT, "package.xml")).getroot() if e.text == "python3-numba"]
    assert [(e.get("version_gte"), e.get("version_lt")) for e in dep] == [spec.groups()], \
        "package.xml's python3-numba states setup.py's numba range"
    assert nbc.SUPPORTED == spec.groups(), "_numba_compat.SUPPORTED states setup.py's numba range"


def test_a_numba_below_the_range_is_refused_at_import_with_the_fix():
    with pytest.raises(ImportError, match=r"needs numba>=0\.62,<0\.69, found numba 0\.61\.2: pip install"):
        nbc.check_version("0.61.2")
    with pytest.raises(ImportError, match="found numba 0.56.4"):
        nbc.check_version("0.56.4")
    nbc.check_version("0.62.0")          # sentinel: the bounds themselves pass
    nbc.check_version("0.68.1")
    nbc.check_version("0.69.0rc1")


def test_strided_and_borrowed_views():
    """The kernels' views (views.strided, borrow): the right numbers, written
    through to the array, for float64 and int64 buffers, 1-, 2- and 3-D."""
    @njit(cache=False)
    def probe(a, start):
        b = views.borrow(a)
        R = views.strided(b, start, (3, 4), (10, 1))
        for i in range(3):
            r = R[i]
            for k in range(4):
                r[k] = 100.0 * i + k
        M = views.strided(b, 50, (2, 2, 3), (6, 3, 1))
        M[1, 1, 2] = -1.0
        col = views.strided(b.view(np.int64), 70, (3,), (2,))
        col[2] = 7
        return R[2, 3], R.strides, M.strides, col.strides, b.shape[0]

    a = np.zeros(80)
    got = probe(a, 2)
    assert got == (203.0, (80, 8), (48, 24, 8), (16,), 80), WHO
    want = np.zeros(80)
    for i in range(3):
        want[2 + 10 * i:6 + 10 * i] = 100.0 * i + np.arange(4)
    want[50 + 6 + 3 + 2] = -1.0
    want[74] = np.int64(7).view(np.float64)
    assert np.array_equal(a.view(np.int64), want.view(np.int64)), WHO


def test_borrowed_views_cost_no_reference_counting():
    """Rows of a borrowed array handed to an inlined helper in a loop compile to no
    NRT_incref (the same with a plain array's rows does: what borrow saves)."""
    @njit(inline="always")
    def put(x, y):
        y[0] = x[1]

    def make(borrowed):
        @njit(cache=False)
        def f(a, b, n):
            if borrowed:
                a = views.borrow(a)
                b = views.borrow(b)
            R = a.reshape((n, 4)) if not borrowed else views.strided(a, 0, (n, 4), (4, 1))
            for i in range(n):
                if R[i, 0] > 0.0:
                    put(R[i], b)
            return b[0]
        return f

    a = np.arange(12.0)
    for borrowed in (True, False):
        f = make(borrowed)
        assert f(a, np.zeros(1), 3) == 9.0
        ir = f.inspect_llvm(f.signatures[0])
        increfs = len(re.findall(r"call void @NRT_incref", ir))
        assert (increfs == 0) == borrowed, (WHO, borrowed, increfs)
