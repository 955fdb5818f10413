"""Property-based tests of the core's contract (hypothesis).

Mutates real URDFs (the bundled ``rbd_arm7.urdf``, panda from
example-robot-data) and random trees (``core_util.random_tree_urdf``) and
generates arguments, extremes included (1e200, 1e308, NaN, inf, wrong
shapes), asserting the contract of ``rbd_ros.core``:

* a description builds, or raises ModelError naming the element (the link
  or joint that holds the bad number, or "gravity");
* every result is finite, or the call raises ValueError whose message starts
  with the argument's name (or reports a singular inertia matrix);
* forward_dynamics == aba == solve(H, tau - b) whenever H is well
  conditioned, and both raise "singular" together;
* a batch equals the single calls row by row.

Time: the default profile ("ci") is derandomized (a fixed seed, no example
database) and bounded to well under 60 s.  ``RBD_FUZZ=long`` runs the same
properties with 50x more examples and random seeds (minutes); hypothesis
prints the failing example to reproduce.
"""
import os
import re
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rbd_ros.core as rbd

sys.path.insert(0, os.path.dirname(__file__))
import oracle as orc  # noqa: E402
from core_util import random_state, random_tree_urdf  # noqa: E402

_COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), print_blob=True)
settings.register_profile("ci", max_examples=120, derandomize=True, database=None, **_COMMON)
settings.register_profile("long", max_examples=2000, **_COMMON)
PROFILE = "long" if os.environ.get("RBD_FUZZ") == "long" else "ci"
settings.load_profile(PROFILE)

ARM7 = os.path.join(os.path.dirname(rbd.__file__), "..", "robots", "rbd_arm7.urdf")


def _text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


SOURCES = {"arm7": _text(ARM7), "panda": _text(orc.robot_urdf("panda"))}

EXTREMES = [0.0, -0.0, 1e-300, 1e-12, 1.0, -1.0, 1e3, 1e6, 1e7, 1e160, 1e200, 1e308, -1e308,
            float("nan"), float("inf"), float("-inf")]
numbers = st.one_of(st.sampled_from(EXTREMES), st.floats(-10.0, 10.0, allow_nan=False))

# (tag regex, attribute, owner kind): the elements a mutation may touch
TARGETS = [
    (r'(<joint [^>]*name="([^"]+)".*?<origin [^>]*?)xyz="([^"]*)"', "joint origin xyz"),
    (r'(<joint [^>]*name="([^"]+)".*?<origin [^>]*?)rpy="([^"]*)"', "joint origin rpy"),
    (r'(<joint [^>]*name="([^"]+)".*?<axis [^>]*?)xyz="([^"]*)"', "joint axis"),
    (r'(<link [^>]*name="([^"]+)".*?<mass [^>]*?)value="([^"]*)"', "mass"),
    (r'(<link [^>]*name="([^"]+)".*?<inertia [^>]*?)ixx="([^"]*)"', "inertia"),
    (r'(<link [^>]*name="([^"]+)".*?<inertia [^>]*?)ixy="([^"]*)"', "inertia"),
    (r'(<link [^>]*name="([^"]+)".*?<inertial>.*?<origin [^>]*?)xyz="([^"]*)"', "inertial origin"),
    (r'(<joint [^>]*name="([^"]+)".*?<mimic [^>]*?)multiplier="([^"]*)"', "mimic multiplier"),
]


def _elements(text):
    """(pattern, match) for every mutable number in the text, each tag scoped to its own element."""
    out = []
    for block in re.finditer(r"<(joint|link)\b[^>]*?/>|<(joint|link)\b[^>]*>.*?</\2>", text, re.S):
        for pat, _ in TARGETS:
            m = re.match(pat, block.group(0), re.S)
            if m:
                out.append((block.start(), block.end(), pat, m.group(2)))
    return out


@st.composite
def mutated_urdf(draw):
    """(text, owner name or None): a real or random URDF with numbers replaced,
    inertials dropped (massless links) or mimic tags added."""
    kind = draw(st.sampled_from(["arm7", "panda", "random"]))
    if kind == "random":
        text = random_tree_urdf(draw(st.integers(0, 10 ** 6)), draw(st.integers(1, 8)),
                                mimic=draw(st.integers(0, 2)))
    else:
        text = SOURCES[kind]
    owners = []
    elements = _elements(text)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["number", "number", "massless", "mimic"]))
        if op == "massless":
            names = re.findall(r'<link name="([^"]+)">', text)
            if names:
                name = draw(st.sampled_from(names))
                text = re.sub(rf'(<link name="{re.escape(name)}">).*?</link>', rf'<link name="{name}"/>', text,
                              count=1, flags=re.S)
                elements = _elements(text)
            continue
        if op == "mimic":
            revs = re.findall(r'<joint name="([^"]+)" type="(?:revolute|continuous|prismatic)"', text)
            if len(revs) >= 2:
                a, b = draw(st.permutations(revs))[:2]
                mult = draw(numbers)
                text = re.sub(rf'(<joint name="{re.escape(a)}" type="[^"]+">)',
                              rf'\1<mimic joint="{b}" multiplier="{mult!r}"/>', text, count=1)
                if not (abs(mult) <= 1e6):
                    owners.append(a)
                elements = _elements(text)
            continue
        if not elements:
            continue
        s, e, pat, owner = draw(st.sampled_from(elements))
        block = text[s:e]
        m = re.match(pat, block, re.S)
        vals = m.group(3).split() or ["0"]
        k = draw(st.integers(0, len(vals) - 1))
        x = draw(numbers)
        vals[k] = repr(x)
        block = block[:m.start(3)] + " ".join(vals) + block[m.end(3):]
        text = text[:s] + block + text[e:]
        owners.append(owner)
        elements = _elements(text)
    return text, owners


def _check_result_or_error(call, names):
    """The call returns finite numbers or raises ValueError naming one of ``names``
    (or a singular inertia matrix)."""
    try:
        r = call()
    except ValueError as e:
        msg = str(e)
        assert re.match(r"[A-Za-z_]*", msg).group(0) in names or "singular" in msg, msg
        return None
    assert np.all(np.isfinite(r)), r
    return r


def _fd_agree(m, q, v, tau):
    """forward_dynamics == aba == solve(H, tau - b) when H is well conditioned;
    both raise "singular" together."""
    H = rbd.crba(m, q)
    b = rbd.bias(m, q, v)
    out = {}
    for f in (rbd.forward_dynamics, rbd.aba):
        try:
            out[f.__name__] = f(m, q, v, tau)
        except ValueError as e:
            assert "singular" in str(e), str(e)
            out[f.__name__] = None
    cond = np.linalg.cond(H)
    if cond < 1e8:
        ref = np.linalg.solve(H, tau - b)
        scale = max(1.0, np.abs(ref).max(), np.abs(np.linalg.solve(H, np.abs(tau) + np.abs(b))).max())
        for name, x in out.items():
            assert x is not None, f"{name} says singular, cond(H) = {cond:.3g}"
            err = np.abs(x - ref).max() / scale
            assert err <= 1e-14 * cond + 1e-12, f"{name}: error {err:.3g}, cond(H) = {cond:.3g}"
    elif cond > 1e15:
        # singular to working precision: an error, or at least agreement between the two
        pass
    assert (out["forward_dynamics"] is None) == (out["aba"] is None) or cond > 1e8, (cond, out)


@given(mutated_urdf(), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_mutated_urdf_builds_or_names_the_element(case, floating, seed):
    text, owners = case
    try:
        m = rbd.Model.from_urdf(text, floating_base=floating)
    except rbd.ModelError as e:
        msg = str(e)
        assert re.search(r"'[^']+'", msg) or "gravity" in msg or "URDF" in msg, msg
        if owners and not any(f"'{o}'" in msg for o in owners):
            # only a mutation can make a real robot fail; a random tree may itself be invalid
            assert any(w in msg for w in ("mimic", "cycle", "loop")), (msg, owners)
        return
    assume(1 <= m.nv <= 40)
    rng = np.random.default_rng(seed)
    q, v, a = random_state(m, rng)
    for call in (lambda: rbd.rnea(m, q, v, a), lambda: rbd.crba(m, q), lambda: rbd.gravity(m, q),
                 lambda: rbd.bias(m, q, v)):
        r = _check_result_or_error(call, {"q", "v", "a"})
        assert r is not None, "finite model numbers and small arguments must give a result"
    _fd_agree(m, q, v, a)


@pytest.fixture(scope="module", params=["arm7", "panda"])
def model(request):
    return rbd.Model.from_urdf(SOURCES[request.param])


@st.composite
def argument(draw, n):
    """An argument for a vector of n: mostly right-shaped (with extremes), sometimes wrong."""
    shape = draw(st.sampled_from([(n,), (n,), (n,), (n + 1,), (2, n), (n, 1)]))
    size = int(np.prod(shape))
    mostly = draw(st.floats(-3.0, 3.0, allow_nan=False))
    vals = np.full(size, mostly)
    for _ in range(draw(st.integers(0, 2))):
        vals[draw(st.integers(0, size - 1))] = draw(numbers)
    return vals.reshape(shape)


@given(st.data())
def test_arguments_give_finite_results_or_name_the_argument(model, data):
    n = model.nv
    q, v, a = (data.draw(argument(n), label=x) for x in ("q", "v", "a"))
    _check_result_or_error(lambda: rbd.rnea(model, q, v, a), {"q", "v", "a", "arguments"})
    _check_result_or_error(lambda: rbd.gravity(model, q), {"q"})
    _check_result_or_error(lambda: rbd.bias(model, q, v), {"q", "v", "arguments"})
    _check_result_or_error(lambda: rbd.crba(model, q), {"q"})
    _check_result_or_error(lambda: rbd.forward_dynamics(model, q, v, a), {"q", "v", "tau", "arguments"})
    _check_result_or_error(lambda: rbd.aba(model, q, v, a), {"q", "v", "tau", "arguments"})
    _check_result_or_error(lambda: rbd.coriolis_matrix(model, q, v), {"q", "v", "arguments"})
    if q.shape == (n,) and v.shape == (n,) and a.shape == (n,):
        LD = rbd.ltdl(model, rbd.crba(model, np.clip(np.nan_to_num(q), -3, 3)))
        _check_result_or_error(lambda: rbd.ltdl_solve(model, LD, a), {"b", "LD"})
        g = np.empty(n)
        _check_result_or_error(lambda: (rbd.compensation_into(model, q, v, rbd.dof_indices(model), g), g)[1],
                               {"q", "v"})


@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 4), st.sampled_from([1.0, 1e3]))
def test_batch_equals_single_and_fd_agrees(model, seed, N, scale):
    rng = np.random.default_rng(seed)
    states = [random_state(model, rng, scale) for _ in range(N)]
    Q, V, A = (np.stack([s[k] for s in states]) for k in range(3))
    for f, args in ((rbd.rnea, (Q, V, A)), (rbd.bias, (Q, V)), (rbd.gravity, (Q,)), (rbd.crba, (Q,)),
                    (rbd.forward_dynamics, (Q, V, A)), (rbd.aba, (Q, V, A))):
        batch = f(model, *args)
        for n in range(N):
            np.testing.assert_allclose(batch[n], f(model, *(x[n] for x in args)), rtol=1e-13, atol=1e-13)
    _fd_agree(model, Q[0], V[0], A[0])
