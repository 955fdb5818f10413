"""The install commands the docs give ROS users agree with package.xml and setup.py (issue
22, item 6): every ``rosdep install`` line skips python3-numba (rosdep has no usable numba
for Jazzy: doc/numba.md) and only keys package.xml declares; the same code block then
installs numba with pip; every pip requirement in those blocks is the one setup.py states."""
import ast
import os
import re
import shlex
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md", "doc/testing.md", "doc/numba.md"]
# keys the docs skip -> the pip distribution that replaces each (doc/numba.md says why)
SKIPPED = {"python3-numba": "numba"}


def code_blocks(path):
    """The fenced code blocks of a markdown file, each a list of its lines (``\\`` continuations joined)."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    out = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        out.append([line.split(" #")[0].strip() for line in block.replace("\\\n", " ").splitlines()
                    if line.strip()])
    return out


def setup_requirements():
    """{distribution: requirement string} of setup.py's install_requires and extras (read with ast)."""
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = re.match(r"^([A-Za-z0-9_.\-]+)(\[[a-z,]+\])?((==|>=|<=|<|>|~=)[^ ]+)$", node.value)
            if m:
                out[m.group(1).lower()] = m.group(1) + m.group(3)
    return out


def package_xml():
    """{key: element} of package.xml's dependencies."""
    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    return {e.text: e for e in root if e.tag.endswith("depend")}


def install_blocks():
    """(doc, block) for every code block with a ``rosdep install`` line."""
    return [(doc, b) for doc in DOCS for b in code_blocks(doc) if any(x.startswith("rosdep install") for x in b)]


def _words(line):
    return shlex.split(line)


def _skipped_keys(words):
    out = []
    for k, w in enumerate(words):
        if w == "--skip-keys":
            out += words[k + 1].split()
        elif w.startswith("--skip-keys="):
            out += w.split("=", 1)[1].split()
    return out


def _pip_requirements(words):
    """The requirement arguments of a ``pip install`` command (options dropped)."""
    k = words.index("install")
    return [w for w in words[k + 1:] if not w.startswith("-")]


def test_the_docs_have_the_install_lines():
    """Sentinel: the scan finds the README's rosdep and pip lines."""
    docs = {doc for doc, _ in install_blocks()}
    assert {"README.md", "doc/testing.md", "doc/numba.md"} <= docs


PIP = re.compile(r"(python3 -m )?pip3? install ")


@pytest.mark.parametrize("doc,block", install_blocks(), ids=lambda x: x if isinstance(x, str) else "")
def test_rosdep_skips_numba_and_pip_installs_setup_pys_range(doc, block):
    check_block(doc, block)


def check_block(doc, block):
    deps, reqs = package_xml(), setup_requirements()
    for k, line in enumerate(block):
        if not line.startswith("rosdep install"):
            continue
        words = _words(line)
        skipped = _skipped_keys(words)
        assert set(SKIPPED) <= set(skipped), f"{doc}: {line!r} does not skip {sorted(SKIPPED)}"
        unknown = [key for key in skipped if key not in deps]
        assert not unknown, f"{doc}: {line!r} skips keys package.xml does not declare: {unknown}"
        assert "src/rbd_ros/rbd_ros_interfaces" in words and "--ignore-src" in words, line
        # each skipped key's pip replacement follows in the same block
        named = {re.split(r"[<>=!~\[]", r)[0].lower() for x in block[k + 1:] if PIP.match(x)
                 for r in _pip_requirements(_words(x))}
        for key in skipped:
            assert SKIPPED[key] in named, f"{doc}: {key} is skipped but no pip line after it installs {SKIPPED[key]}"
    for line in block:
        if not PIP.match(line):
            continue
        words = _words(line)
        assert "--break-system-packages" in words and "--user" in words, \
            f"{doc}: {line}: a system Python is externally managed (PEP 668) on Ubuntu 24.04 and Debian 12"
        for r in _pip_requirements(words):
            name = re.split(r"[<>=!~\[]", r)[0].lower()
            assert name in reqs, f"{doc}: pip installs {r}, which setup.py does not name"
            assert r == reqs[name], f"{doc}: pip installs {r!r}, setup.py states {reqs[name]!r}"


def test_package_xml_states_setup_pys_numba_range():
    dep = package_xml()["python3-numba"]
    lo, hi = re.match(r"numba>=([0-9.]+),<([0-9.]+)$", setup_requirements()["numba"]).groups()
    assert (dep.get("version_gte"), dep.get("version_lt")) == (lo, hi)


@pytest.mark.parametrize("change,error", [
    (lambda b: [re.sub(r"'numba[^']*'", "'numba>=0.50'", x) for x in b], "setup.py states"),
    (lambda b: [x.replace(" --skip-keys python3-numba", "") for x in b], "does not skip"),
    (lambda b: [x.replace("--skip-keys python3-numba", "--skip-keys 'python3-numba python3-nope'") for x in b],
     "does not declare"),
    (lambda b: [x for x in b if not PIP.match(x)], "no pip line"),
])
def test_the_checker_sees_a_wrong_block(change, error):
    """Sentinels: the README's block passes; changed, it fails for the reason expected."""
    (doc, block), = [(d, b) for d, b in install_blocks() if d == "README.md"]
    check_block(doc, block)
    with pytest.raises(AssertionError, match=error):
        check_block(doc, change(block))
