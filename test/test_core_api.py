"""The public API as tools see it: ordinary functions in a module a reader can open
(``rbd_ros/core/calls/public.py``, written by ``calls/generate.py`` from the registry
and committed), imported by name into ``rbd_ros.core``, with real signatures and
docstrings, and a package that says it is typed (py.typed).  The static type check
itself (mypy, pyproject.toml) runs in .ci/run."""
import ast
import inspect
import os
import pydoc
import subprocess
import sys

import pytest

import rbd_ros.core as rbd
from rbd_ros.core.calls import generate, public
from rbd_ros.core.calls.registry import ALGORITHMS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FACADE = os.path.join(ROOT, "rbd_ros", "core", "__init__.py")
NAMES = [n for e in ALGORITHMS for n in (e.name, e.name + "_into")]


def test_public_py_is_what_the_generator_writes_from_the_registry():
    with open(generate.PATH) as f:
        committed = f.read()
    assert committed == generate.source(), \
        "rbd_ros/core/calls/public.py is stale: run python -m rbd_ros.core.calls.generate"


def test_the_generator_sees_a_change_of_the_registry():
    # the sentinel: a changed entry changes the text (so the test above can fail)
    e = ALGORITHMS[0]
    changed = [type(e)(**{**e.__dict__, "doc": e.doc + " (changed)"})] + list(ALGORITHMS[1:])
    assert generate.source(changed) != generate.source()
    assert "(changed)" in generate.source(changed)


def test_generator_check_mode_reports_a_stale_file(tmp_path, monkeypatch):
    stale = tmp_path / "public.py"
    stale.write_text("# stale\n")
    monkeypatch.setattr(generate, "PATH", str(stale))
    assert generate.main(["--check"]) == 1
    assert stale.read_text() == "# stale\n"            # --check writes nothing
    assert generate.main([]) == 0
    assert generate.main(["--check"]) == 0


def test_every_registered_function_is_a_def_in_public_py():
    tree = ast.parse(open(generate.PATH).read())
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert set(NAMES) <= defs
    for name in NAMES:
        fn = getattr(rbd, name)
        assert fn is getattr(public, name)
        assert inspect.isfunction(fn) and fn.__module__ == "rbd_ros.core.calls.public"
        assert inspect.getsourcefile(fn) == generate.PATH     # a reader (and an IDE) can jump to it
        assert fn.__doc__ and fn.__doc__.strip()


def test_the_facade_imports_every_name_explicitly():
    tree = ast.parse(open(FACADE).read())
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "globals" not in calls
    assert set(rbd.__all__) <= imported | {"__version__"}
    assert set(NAMES) <= set(rbd.__all__)
    assert len(rbd.__all__) == len(set(rbd.__all__))
    for name in rbd.__all__:
        assert hasattr(rbd, name), name


def _expected_parameters(e, into):
    names = ["model", *e.inputs, *(o.name for o in e.options)]
    if into:
        return names + ["out"]
    return names + [k.name for k in e.keywords] + (["f_ext", "f_ext_frame"] if e.fext else [])


@pytest.mark.parametrize("e", ALGORITHMS, ids=lambda e: e.name)
def test_signatures_are_real(e):
    for into in (False, True):
        fn = getattr(rbd, e.name + ("_into" if into else ""))
        sig = inspect.signature(fn)
        assert list(sig.parameters) == _expected_parameters(e, into)
        assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in sig.parameters.values())
        assert sig.parameters["model"].annotation == "Model"
        assert all(sig.parameters[x].annotation == "ArrayLike" for x in e.inputs)
        assert sig.return_annotation == ("None" if into else "Array")
        if not into and e.fext:
            assert sig.parameters["f_ext"].default is None
            assert sig.parameters["f_ext_frame"].default == "local"
        for o in e.options:
            want = inspect.Parameter.empty if into or o.default is generate.REQUIRED else o.default
            assert sig.parameters[o.name].default == want


def test_help_shows_the_signature():
    text = pydoc.render_doc(rbd.rnea, renderer=pydoc.plaintext)
    assert "rnea(model: 'Model', q: 'ArrayLike', v: 'ArrayLike', a: 'ArrayLike', f_ext: 'FExt' = None, " \
           "f_ext_frame: 'FExtFrame' = 'local') -> 'Array'" in text
    assert "Inverse dynamics" in text
    sig = inspect.signature(rbd.frame_jacobian)
    assert str(sig) == ("(model: 'Model', q: 'ArrayLike', frame: 'str', reference: 'Reference' = "
                        "'local_world_aligned') -> 'Array'")


def test_the_package_ships_py_typed(tmp_path):
    """setup.py's build copies py.typed and the generated module (what a wheel holds)."""
    p = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert (tmp_path / "rbd_ros" / "py.typed").is_file()
    assert (tmp_path / "rbd_ros" / "core" / "calls" / "public.py").is_file()
    assert (tmp_path / "rbd_ros" / "robots" / "rbd_arm7.urdf").is_file()      # the sentinel: package data lands
