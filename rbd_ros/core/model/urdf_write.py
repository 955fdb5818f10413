"""Write identified parameters back into the original URDF text.

``identified_urdf(urdf_text, model)`` returns the text with the ``<inertial>``
elements of the model's bodies (and optionally the ``<dynamics>`` of its
one-axis joints) replaced; every other byte is kept.  Element positions come
from the XML parser itself (expat's byte offsets), so comments, attribute
order, indentation and unrelated elements stay exactly as they were.

A body made of several links merged by fixed joints (e.g. ``link7`` plus a
``flange`` or a sensor) is written back like this: the body's own link (the
child link of its joint, whose frame is the body frame) gets the identified
body minus the unchanged ``<inertial>`` of the other links, if that
remainder is a physically consistent body (mass > 0, pseudo-inertia ⪰ 0);
the other links keep theirs byte for byte.  Otherwise the body's link gets
the whole identified body and the other links' ``<inertial>`` elements are
removed (a note says so).  Either way the URDF loads into the identified
model's bodies.

Written inertials: ``<origin xyz="COM" rpy="0 0 0"/>``, ``<mass>`` and the
full inertia tensor about the COM in the link axes, every number with 12
significant digits (the text reloads to the written parameters within ~1e-12
relative).
"""
import re
import xml.parsers.expat

import numpy as np

from . import inertial as ine
from .model import ModelError
from .urdf import link_inertia, parse_xml


def _spans(data):
    """{('link'|'joint', name): (start, end)} and {(tag, parent kind, parent name): [(start, end)]} byte spans
    of <link>, <joint> and their direct <inertial>, <dynamics> children."""
    p = xml.parsers.expat.ParserCreate()
    stack: list[tuple[str, str, int]] = []
    top: dict[tuple[str, str], tuple[int, int]] = {}
    child: dict[tuple[str, str, str], list[tuple[int, int]]] = {}

    def start(tag, attrs):
        stack.append((tag, attrs.get("name"), p.CurrentByteIndex))

    def end(tag):
        tag_, name, s = stack.pop()
        i = p.CurrentByteIndex             # at "</tag>", or just after "<tag .../>" (an empty element)
        e = data.index(b">", i) + 1 if data[i:i + 2] == b"</" else i
        if len(stack) == 1 and tag in ("link", "joint"):
            top[(tag, name)] = (s, e)
        elif len(stack) == 2 and tag in ("inertial", "dynamics") and stack[1][0] in ("link", "joint"):
            child.setdefault((tag, stack[1][0], stack[1][1]), []).append((s, e))

    p.StartElementHandler, p.EndElementHandler = start, end
    try:
        p.Parse(data, True)
    except xml.parsers.expat.ExpatError as e:
        raise ModelError(f"robot description is not valid XML: {e}") from None
    return top, child


def _set_attributes(tag, values):
    """The start tag text with each attribute of ``values`` set (replaced in place, or appended)."""
    for k, v in values.items():
        pat = re.compile(rf"(\s{k}\s*=\s*)([\"'])(.*?)\2", re.S)
        if pat.search(tag):
            tag = pat.sub(lambda m, v=v: f"{m.group(1)}{m.group(2)}{v}{m.group(2)}", tag, count=1)  # type: ignore[misc]
        else:
            cut = len(tag) - (2 if tag.endswith("/>") else 1)
            tag = f"{tag[:cut].rstrip()} {k}=\"{v}\"{tag[cut:]}"
    return tag


def _num(x):
    return f"{float(x):.12g}"


def _inertial_xml(pi, indent, step):
    m, c, Ic = ine.to_com(pi)
    i2 = indent + step
    return (f"<inertial>\n{i2}<origin xyz=\"{_num(c[0])} {_num(c[1])} {_num(c[2])}\" rpy=\"0 0 0\"/>\n"
            f"{i2}<mass value=\"{_num(m)}\"/>\n"
            f"{i2}<inertia ixx=\"{_num(Ic[0, 0])}\" ixy=\"{_num(Ic[0, 1])}\" ixz=\"{_num(Ic[0, 2])}\" "
            f"iyy=\"{_num(Ic[1, 1])}\" iyz=\"{_num(Ic[1, 2])}\" izz=\"{_num(Ic[2, 2])}\"/>\n{indent}</inertial>")


def _indent(data, pos):
    line = data.rfind(b"\n", 0, pos) + 1
    ws = data[line:pos]
    return ws.decode() if not ws.strip() else ""


def _link_inertials(urdf_text, model):
    """Per link: its <inertial> as a 10-vector in its body's frame (None without one)."""
    out: dict[str, object] = {}
    for link in parse_xml(urdf_text).links:
        info = model.links[model.link_index(link.name)]
        li = link_inertia(link)
        if li is None or info.body < 0:
            out[link.name] = None
            continue
        m, com, Ic, R_LI = li
        R = info.R @ R_LI
        out[link.name] = ine.from_com(m, info.p + info.R @ com, R @ Ic @ R.T)
    return out


def identified_urdf(urdf_text, model, bodies=None, dynamics=False, joints=None):
    """(new URDF text, notes) with the inertial parameters of ``model``'s
    bodies (``bodies``: indices, default every body with mass > 0) and, with
    ``dynamics``, ``<dynamics damping friction>`` of every one-axis DOF joint
    (``joints``: their names, default all) from ``model.damping`` /
    ``model.friction`` (a mimic joint's own damping and friction set to 0: its
    master carries them); the elements of other bodies and joints are left as
    they are, byte for byte (e.g. those an identification kept: its report's
    ``identified_bodies`` and the joints not in ``still_dofs``).  ``model`` must have been
    built from ``urdf_text`` (same links and joints).  Notes: one line per
    body whose merged links' inertials were folded (module docstring)."""
    data = urdf_text.encode("utf-8") if isinstance(urdf_text, str) else bytes(urdf_text)
    text = data.decode("utf-8")
    top, child = _spans(data)
    per_link = _link_inertials(text, model)
    P = ine.inertial_parameters(model)
    names = ine.body_link_names(model)
    fit = [i for i in range(model.nbodies) if P[i, 0] > 0] if bodies is None else list(bodies)
    edits, notes = [], []                                   # (start, end, new bytes)

    def inertial_edit(link, pi):
        if ("link", link) not in top:
            raise ModelError(f"link {link!r}: not found in the URDF text")
        spans = child.get(("inertial", "link", link))
        if spans:
            s, e = spans[0]
            ind = _indent(data, s)
            nl = data.find(b"\n", s, e)                           # keep the children's indentation step
            inner = data[nl + 1:e] if nl >= 0 else b""
            inner_ind = inner[:len(inner) - len(inner.lstrip())].decode()
            step = inner_ind[len(ind):] if inner_ind.startswith(ind) and len(inner_ind) > len(ind) else "  "
            edits.append((s, e, _inertial_xml(pi, ind, step).encode()))
            return
        s, e = top[("link", link)]
        ind = _indent(data, s)
        step = "  "
        body = _inertial_xml(pi, ind + step, step)
        tag = data[s:e]
        if tag.rstrip().endswith(b"/>") and tag.count(b"<") == 1:     # <link name="x"/>
            edits.append((s, e, tag.rstrip()[:-2].rstrip() + f">\n{ind}{step}{body}\n{ind}</link>".encode()))
        else:
            close = data.rindex(b"</link>", s, e)
            edits.append((close, close, (f"{step}{body}\n{ind}" if b"\n" in data[s:e] else body).encode()))

    for i in fit:
        pi = P[i]
        if not pi[0] > 0:
            continue
        main = names[i]
        if main not in model.link_names:
            continue
        others = [n for n, info in zip(model.link_names, model.links)
                  if info.body == i and n != main and per_link.get(n) is not None]
        rest = pi - sum((per_link[n] for n in others), np.zeros(10))
        if not others or (rest[0] > 0 and ine.consistency_margin(rest) >= 0):
            inertial_edit(main, rest)
            continue
        inertial_edit(main, pi)
        for n in others:
            for s, e in child.get(("inertial", "link", n), []):
                line = data.rfind(b"\n", 0, s) + 1
                nl = data.find(b"\n", e)
                if not data[line:s].strip() and (nl < 0 or not data[e:nl].strip()):
                    s, e = line, (nl + 1 if nl >= 0 else e)            # the whole line(s)
                edits.append((s, e, b""))
        notes.append(f"body {main!r}: the identified body does not split into {main!r} and the unchanged "
                     f"{others} (the remainder is not a physical body); written whole into {main!r}, the "
                     f"<inertial> of {others} removed")

    if dynamics:
        written = set(model.joint_names if joints is None else joints)
        unknown = sorted(written - set(model.joint_names))
        if unknown:
            raise ValueError(f"joints: {unknown} are not DOF joints of the model ({list(model.joint_names)})")
        for name, t, iv in zip(model.joint_names, model.joint_types, model.idx_v):
            if t in ("floating", "planar") or name not in written:
                continue
            values = {"damping": _num(model.damping[iv]), "friction": _num(model.friction[iv])}
            spans = child.get(("dynamics", "joint", name))
            if spans:                          # only the two attributes change (others, e.g. Gazebo's, stay)
                s, e = spans[0]
                tag_end = data.index(b">", s) + 1
                edits.append((s, tag_end, _set_attributes(data[s:tag_end].decode(), values).encode()))
                continue
            new = f"<dynamics damping=\"{values['damping']}\" friction=\"{values['friction']}\"/>"
            s, e = top[("joint", name)]
            ind = _indent(data, s)
            close = data.rindex(b"</joint>", s, e)
            edits.append((close, close, (f"  {new}\n{ind}" if b"\n" in data[s:e] else new).encode()))
        # a mimic joint's own <dynamics> folds into its master's (urdf.py): the master's
        # identified value is the whole, so the mimic joint's is set to 0
        for name in (n for n, m in model.mimic_joints.items() if m[0] in written):
            for s, _ in child.get(("dynamics", "joint", name), [])[:1]:
                tag_end = data.index(b">", s) + 1
                edits.append((s, tag_end, _set_attributes(data[s:tag_end].decode(),
                                                          {"damping": "0", "friction": "0"}).encode()))
                notes.append(f"joint {name!r}: a mimic joint; its <dynamics> damping and friction set to 0 "
                             f"(its master {model.mimic_joints[name][0]!r} carries the identified values)")

    out = bytearray(data)
    for s, e, new in sorted(edits, key=lambda x: x[0], reverse=True):
        out[s:e] = new
    return out.decode("utf-8"), notes
