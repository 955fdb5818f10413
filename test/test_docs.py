"""The documentation holds together: every relative link in the Markdown files points at a
file that exists (and, with ``#anchor``, at a heading in it), and the README is the front
door issue 16 asks for (at most 200 lines, the two set-up commands)."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md", "ARCHITECTURE.md", "test/README.md", "bench/README.md", "bench/RESULTS.md"] + \
    sorted(os.path.join("doc", f) for f in os.listdir(os.path.join(ROOT, "doc")) if f.endswith(".md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation but '-' and '_'
    dropped, spaces to '-'."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: str) -> set:
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, fenced = set(), False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            out.add(_slug(line.lstrip("#")))
    return out


def _links(doc: str):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    for target in LINK.findall(text):
        if not re.match(r"[a-z]+:", target):
            yield target


@pytest.mark.parametrize("doc", DOCS)
def test_relative_links_resolve(doc):
    links = list(_links(doc))
    bad = []
    for target in links:
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(ROOT, os.path.dirname(doc), path)) if path \
            else os.path.join(ROOT, doc)
        if not os.path.exists(full):
            bad.append(f"{target}: no such file")
        elif anchor and full.endswith(".md") and anchor not in _anchors(full):
            bad.append(f"{target}: no heading with anchor #{anchor}")
    assert not bad, f"{doc}: " + "; ".join(bad)


def test_link_checker_sees_links_and_anchors():
    """Sentinel: the checker finds the README's links, and a wrong anchor would fail."""
    assert sum(1 for _ in _links("README.md")) >= 10
    assert "inputs" in _anchors(os.path.join(ROOT, "doc", "node.md"))
    assert "no-such-heading" not in _anchors(os.path.join(ROOT, "doc", "node.md"))
    assert _slug("Services (`rbd_ros_interfaces`)") == "services-rbd_ros_interfaces"


def test_readme_is_a_front_door():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert len(text.split("\n")) <= 201
    assert "bash scripts/demo.sh" in text and "bash scripts/test.sh" in text
