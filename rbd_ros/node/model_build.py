"""Building the node's model (ROS-light: no rclpy, no DDS): URDF -> Model (+ armature,
+ payloads) -> Robot, warmed up (``build_robot``; ``warm_control_path``, and the node's
steps of ``rbd_precompile``); the same Robot's model with another payload set
(``with_payloads``, cheap: the URDF is not parsed again); the ``armature`` parameter ->
the model's vector.

Payloads follow the model: after a new robot description, a payload whose link still
exists is re-attached, one whose link is gone is dropped (listed in
``rt.options["dropped_payloads"]`` so the node can warn naming it).
"""
from __future__ import annotations

import math
import time

import numpy as np
import yaml

import rbd_ros.core as rbd
from rbd_ros import robots
from rbd_ros.core.calls import registry
from rbd_ros.node import effort_law, recent, warmup
from rbd_ros.node.contacts import Contacts
from rbd_ros.node.loops import Loops, transmission_joints
from rbd_ros.node.payload import DEFAULT_FRICTION_VELOCITY_EPS, PayloadError, check_removal, relabel
from rbd_ros.node.robot import Robot, actuated_missing_text, merge_k, warm_merge


def attach(model, payloads) -> "rbd.Model":
    """``model`` (its own payloads removed) with ``payloads`` (iterable of Payload;
    mass 0 = none on that link).  PayloadError naming the field of the first bad one."""
    for link in list(model.payloads):
        model = model.without_payload(link)
    for p in payloads:
        if p.mass == 0.0:
            check_removal(model, p)
            continue
        try:
            model = model.with_payload(p.link, p.mass, p.com, p.inertia)
        except ValueError as e:
            raise relabel(p, e) from None
    return model


def split_known(model, payloads: dict):
    """(payloads whose link is in the model, sorted names of the links that are not)."""
    links = set(model.link_names)
    kept = {k: p for k, p in payloads.items() if k in links}
    return kept, sorted(k for k in payloads if k not in links)


# ----------------------------------------------------------------------------- armature

def armature_by_name(rt, values, field: str = "armature") -> dict:
    """The ``armature`` parameter (one value per output joint of ``rt``, in ``joints``
    order; empty = zero) -> {DOF name: value} of the non-zero values.  PayloadError
    naming the entry and the joint for a wrong length or a negative/non-finite value."""
    values = list(values or ())
    if not values:
        return {}
    if len(values) != rt.nout:
        raise PayloadError(f"{field}: {len(values)} values, expected {rt.nout} (one per joint of "
                           f"`joints`: {list(rt.out_names)}) or none")
    out = {}
    for k, (name, x) in enumerate(zip(rt.out_names, values)):
        x = float(x)
        if not (math.isfinite(x) and x >= 0.0):
            raise PayloadError(f"{field}[{k}] ({name}): expected a finite number >= 0 (rotor "
                               f"inertia reflected to the joint, kg m^2 or kg), got {x}")
        if x:
            out[name] = x
    return out


def armature_vector(rt, by_name: dict) -> np.ndarray:
    """{DOF name: value} -> the model's (nv,) armature (0 elsewhere).  PayloadError for a
    name that is not a DOF of rt (the service worker gets names from the node)."""
    arm = np.zeros(rt.model.nv)
    for name, x in by_name.items():
        i = rt.dof_index.get(name)
        if i is None:
            raise PayloadError(rt.unknown_joint_text(name, "armature"))
        arm[rt.dof_v[i]] = float(x)
    return arm


def armature_text(rt) -> str:
    """Non-zero armature per DOF name ('none' if all zero), for diagnostics."""
    arm = rt.model.armature
    parts = [f"{n}: {arm[rt.dof_v[i]]:g}" for i, n in enumerate(rt.dof_names) if arm[rt.dof_v[i]]]
    return ", ".join(parts) if parts else "none"


def payloads_text(model) -> str:
    """Active payloads 'link: mass kg, ...' ('none'), for diagnostics."""
    pl = model.payloads
    return ", ".join(f"{k}: {pl[k][0]:g} kg" for k in sorted(pl)) if pl else "none"


# ----------------------------------------------------------------------------- warm-up

def node_kernels():
    """The node's own numba kernels (joint-state merge, effort law, recent joint states)."""
    return (merge_k,) + effort_law.KERNELS + recent.KERNELS


def precompile_steps(model):
    """The node's steps of ``rbd_precompile`` (entry point group ``rbd_ros.precompile``):
    (name, function, group).  ``crba (one state)`` is what the first start's helper
    compiles for the node (compensation_into calls CRBA); the names are
    ``warmup.HELPER_STEPS``."""
    q = model.neutral()

    def law():
        rt = Robot(model, (), "precompile")
        effort_law.CommandLaw(rt, np.zeros(rt.nout), np.zeros(rt.nout)).warm_kernels()

    def merge():
        warm_merge(model.nq, model.nv, model.nv)
        recent.RecentStates(model.nq, model.nv, (), 0.01, 100.0)     # compiles its kernel

    def loops():
        fb = rbd.Model.from_urdf(robots.bundled_robot_path("fourbar"))
        warm_loops(Robot(fb, (), "precompile", loops=Loops(fb, ("crank",))))

    return [("crba (one state)", lambda: rbd.crba(model, q), 0),
            ("node command law kernels", law, 0),
            ("node merge kernel", merge, 0),
            ("node closed-loop kernels", loops, 0)]


def warm_loops(rt) -> None:
    """Run once what a Robot with closed loops runs per message: the completion of the
    state (positions, velocities, accelerations) and the constrained inverse dynamics."""
    lp = rt.loops
    if lp is None:
        return
    q, v = rt.q.copy(), np.zeros(rt.model.nv)
    lp.complete(q, v)
    g, b = np.empty(rt.nout), np.empty(rt.nout)
    lp.compensate(q, v, g)
    lp.compensate(q, v, g, b, np.empty(lp.m))
    a = lp.bias_state(q, v)
    lp.torques(q, v, a, g, np.empty(lp.m))


def warm_contacts(rt) -> None:
    """Run once what a Robot with contacts runs per message (the base's accelerations from
    the contacts, the constrained inverse dynamics with the friction cones, H), at the
    neutral pose with the base state left as it is; rbd.ModelError when the cones' QP
    solver (daqp) is missing."""
    ct = rt.contacts
    if ct is None:
        return
    q, v = np.array(rt.model.neutral(), dtype=np.float64), np.zeros(rt.model.nv)
    n = rt.nout
    log, ct.log = ct.log, None
    try:
        ct.compensate(q, v, np.empty(n), np.empty(n), True, np.empty(n * n))
        ct.torques(q, v, ct.bias_state(q, v), np.empty(n))
    except ImportError as e:        # the friction cones' QP solver (daqp) is not installed
        raise rbd.ModelError(f"parameter contacts: {e}") from None
    finally:
        ct.log = log
        ct.infeasible = ct._msg_infeasible = False
        ct.infeasible_count = 0


def warm_control_path(rt, log=None) -> None:
    """Compile and run once what the node's torque topics use (warmup.py's module
    docstring): RNEA here while, from a cold cache, a helper process compiles CRBA, the
    command law's and the merge kernel; then ``compensation_into`` and the merge kernel.
    The terms warm up their own kernels when they are made for the Robot (loading them
    from the cache the helper filled)."""
    t0, was_cold = warmup.announce("control-path", warmup.CONTROL_PATH, node_kernels(), warmup.CONTROL_PATH_S, log)
    helper = warmup.compile_in_helper() if was_cold else None
    model = rt.model
    q = np.array(model.neutral(), dtype=np.float64)
    z = np.zeros(model.nv)
    rbd.rnea_into(model, q, z, z, np.empty(model.nv))      # RNEA (meanwhile the helper: CRBA)
    if helper is not None:          # compensation_into needs CRBA: its cache entry first
        warmup.wait_for_helper(helper, lambda: registry.cached(["crba"]))
    rbd.compensation_into(model, q, z, rt.out_v, np.empty(rt.nout), np.empty(rt.nout),
                          np.empty(rt.nout * rt.nout))
    if helper is not None:          # then the helper's rest: command law, merge kernel
        warmup.wait_for_helper(helper, lambda: False)
    warm_merge(model.nq, model.nv, rt.ndof)     # the merge kernel as Robot.update calls it
    warm_loops(rt)
    warm_contacts(rt)
    if was_cold:
        warmup.log_line(log, warmup.ready_line("control-path", time.perf_counter() - t0))


# ----------------------------------------------------------------------------- building

def _finish(model, joints, source, options, warm: bool = True, services: bool = False) -> Robot:
    """The Robot; ``warm``: compile (numba) and run once the kernels this process needs,
    so that no message pays a compile: the control path's in the node
    (``warm_control_path``), the services' in the service worker
    (``warmup.warm_services``, which also sets ``rt.fd_error``: a model whose H is
    singular -- a massless leaf -- still has g, b, H and inverse dynamics; its forward
    dynamics requests are refused one by one).  A payload change skips it: the kernels
    are compiled already, and whether forward dynamics works for the new model is found
    (and logged) by the service worker's own warm-up."""
    lo = options.get("loops") or {}
    loops = Loops(model, lo.get("actuated", ()), lo.get("loop_cond_limit")) if model.constraints else None
    co = options.get("contacts")
    contacts = None
    if co:
        actuated = tuple(n for n, t in zip(model.joint_names, model.joint_types) if t != "floating")
        contacts = Contacts(model, co, actuated)
    rt = Robot(model, joints, source, loops=loops, initial=lo.get("initial_positions", ()), contacts=contacts)
    rt.options = options
    if warm:
        if services:
            warmup.warm_services(rt)
        else:
            warm_control_path(rt)
    return rt


def build_robot(urdf_text: str, *, floating_base: bool, mimic: bool, gravity, joints,
                source: str, armature=None, payloads: dict | None = None,
                friction_velocity_eps: float = DEFAULT_FRICTION_VELOCITY_EPS,
                services: bool = False, actuated=(), constraints=(), initial_positions=(),
                loop_cond_limit: float | None = None, contacts: dict | None = None):
    """``runtime.build_robot`` plus armature and payloads (``services``: warm up the
    service kernels, in the worker process, instead of the control path's).

    ``armature``: {DOF name: value}, or the ``armature`` parameter (a list in ``joints``
    order, see ``armature_by_name``); ``payloads``: link -> Payload.  A payload never
    makes the model fail: one on a link the model lacks, or one the model refuses (a
    bad start-up parameter), is left out and listed in ``rt.options["dropped_payloads"]``
    as (link, reason).  Raises rbd.ModelError / ValueError for a bad model, PayloadError
    for a bad armature.

    Closed loops: ``constraints`` (rbd.Constraint, e.g. from ``read_constraints_file``)
    are added to the URDF's; a model with loops needs ``actuated`` (joint names; the
    ModelError names the URDF's transmissions as a hint) and closes them from
    ``initial_positions`` (one per DOF; empty: zero), or is refused naming the
    constraint; ``loop_cond_limit``: see loops.Loops.

    Contacts: ``contacts`` (contacts.contact_options: the contact set's links, types, μ,
    sole; None: no contacts) makes a Robot that stands on them (a floating base is
    required; a link the model lacks is refused, naming it).

    ``rt.options`` carries what the service worker needs to build the same model
    (``protocol.model_command``): floating_base, mimic, gravity, armature ({DOF name:
    value}), payloads (the attached ones), friction_velocity_eps, and with loops
    ``loops``: {actuated, constraints (the added ones, as ``constraint_dict``),
    initial_positions, loop_cond_limit} (else None), ``contacts`` (the contact options or
    None)."""
    if "<" not in urdf_text:
        raise rbd.ModelError(f"the robot description is not URDF XML (starts with "
                             f"{urdf_text[:40]!r})")
    g = [float(x) for x in gravity]
    if len(g) != 3 or not all(math.isfinite(x) for x in g):
        raise rbd.ModelError(f"parameter gravity: expected 3 finite numbers, got {list(gravity)}")
    model = rbd.Model.from_urdf(urdf_text, floating_base=floating_base, mimic=mimic,
                                gravity=tuple(g))
    constraints = tuple(c if isinstance(c, rbd.Constraint) else constraint_from_dict(c) for c in constraints or ())
    if constraints:
        model = model.with_constraints(model.constraints + constraints)
    actuated = tuple(actuated or ())
    if model.constraints and not actuated:
        raise rbd.ModelError(actuated_missing_text([c.name for c in model.constraints],
                                                   transmission_joints(urdf_text)))
    initial = tuple(initial_positions or ())
    by_name = {}
    if armature is not None and len(armature):
        loops = Loops(model, actuated, loop_cond_limit) if model.constraints else None
        probe = Robot(model, joints, source, loops=loops, initial=initial)   # names (and closing the loops): cheap
        by_name = dict(armature) if isinstance(armature, dict) else armature_by_name(probe, armature)
        model = model.with_armature(armature_vector(probe, by_name))
    known, missing = split_known(model, dict(payloads or {}))
    dropped = [(link, f"the model has no link {link!r}") for link in missing]
    kept = {}
    for link, p in known.items():
        try:
            model = attach(model, list(kept.values()) + [p])
            kept[link] = p
        except PayloadError as e:
            dropped.append((link, str(e)))
    options = {"floating_base": bool(floating_base), "mimic": bool(mimic), "gravity": g,
               "armature": by_name, "payloads": kept,
               "friction_velocity_eps": float(friction_velocity_eps),
               "dropped_payloads": dropped, "loops": None, "contacts": contacts or None}
    if model.constraints:
        options["loops"] = {"actuated": list(actuated), "constraints": [constraint_dict(c) for c in constraints],
                            "initial_positions": [float(x) for x in initial],
                            "loop_cond_limit": loop_cond_limit}
    return _finish(model, joints, source, options, services=services)


def with_payloads(rt, payloads: dict):
    """A new Robot: rt's model (same URDF, armature, joints) with exactly ``payloads``
    (link -> Payload).  PayloadError naming the field of a bad one."""
    model = attach(rt.model, payloads.values())
    options = dict(rt.options, payloads=dict(payloads), dropped_payloads=[])
    return _finish(model, rt.out_names, rt.source, options, warm=False)


# ----------------------------------------------------------------------------- constraints

def constraint_dict(c) -> dict:
    """An rbd.Constraint as plain data (the service worker's model command)."""
    return {"name": c.name, "link_a": c.link_a, "link_b": c.link_b, "mask": list(c.mask),
            "origin_a": np.asarray(c.origin_a).reshape(-1).tolist(),
            "origin_b": np.asarray(c.origin_b).reshape(-1).tolist()}


def constraint_from_dict(d) -> "rbd.Constraint":
    return rbd.Constraint(d["link_a"], d.get("link_b"), origin_a=np.reshape(d["origin_a"], (4, 4)),
                          origin_b=np.reshape(d["origin_b"], (4, 4)), mask=d["mask"], name=d["name"])


def _rpy(r, p, y) -> np.ndarray:
    """URDF's roll-pitch-yaw: R = Rz(y) Ry(p) Rx(r)."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _origin(entry, key, where):
    """``{xyz: [3], rpy: [3]}`` (both optional) -> a 4x4 transform; ModelError naming it."""
    o = entry.get(key)
    T = np.eye(4)
    if o is None:
        return T
    if not isinstance(o, dict) or set(o) - {"xyz", "rpy"}:
        raise rbd.ModelError(f"{where}.{key}: expected a mapping with xyz and/or rpy (3 numbers each), got {o!r}")
    for part in ("xyz", "rpy"):
        x = o.get(part, [0.0, 0.0, 0.0])
        if not (isinstance(x, (list, tuple)) and len(x) == 3 and all(isinstance(v, (int, float)) and
                                                                      not isinstance(v, bool) and math.isfinite(v)
                                                                      and abs(v) <= 1e6 for v in x)):
            raise rbd.ModelError(f"{where}.{key}.{part}: expected 3 finite numbers, got {x!r}")
    T[:3, :3] = _rpy(*o.get("rpy", [0.0, 0.0, 0.0]))
    T[:3, 3] = o.get("xyz", [0.0, 0.0, 0.0])
    return T


CONSTRAINT_KEYS = {"name", "link_a", "link_b", "origin_a", "origin_b", "mask"}


def read_constraints_file(path: str) -> tuple:
    """The loop closures of a YAML file (parameter constraints_file; doc/constraints.md):

        constraints:
          - name: coupler_rocker             # optional (default link_a-link_b)
            link_a: coupler_link
            link_b: rocker_link              # optional: absent or null = the world
            origin_a: {xyz: [0.35, 0, 0], rpy: [0, 0, 0]}     # optional, default identity
            origin_b: {xyz: [0.25, 0, 0], rpy: [0, 0, -0.854]}
            mask: [1, 1, 0, 0, 0, 0]         # optional, default 1 1 1 0 0 0 (a point)

    A tuple of rbd.Constraint; ModelError naming the file and the entry (links are
    checked when they meet the model)."""
    where = f"constraints_file {path!r}"
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise rbd.ModelError(f"{where}: cannot be read ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise rbd.ModelError(f"{where}: not YAML ({str(e).splitlines()[0]})") from None
    items = doc.get("constraints") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not items:
        raise rbd.ModelError(f"{where}: expected a mapping with a non-empty list 'constraints', got {doc!r:.80}")
    out = []
    for k, entry in enumerate(items):
        at = f"{where}: constraints[{k}]"
        if not isinstance(entry, dict):
            raise rbd.ModelError(f"{at}: expected a mapping, got {entry!r:.80}")
        extra = sorted(set(entry) - CONSTRAINT_KEYS)
        if extra:
            raise rbd.ModelError(f"{at}: unknown keys {extra} (expected {sorted(CONSTRAINT_KEYS)})")
        try:
            out.append(rbd.Constraint(entry.get("link_a"), entry.get("link_b"), origin_a=_origin(entry, "origin_a", at),
                                      origin_b=_origin(entry, "origin_b", at), mask=entry.get("mask"),
                                      name=entry.get("name")))
        except ValueError as e:
            raise rbd.ModelError(f"{at}: {e}") from None
    return tuple(out)
