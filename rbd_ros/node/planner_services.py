"""``~/retime_trajectory`` and ``~/payload_capacity``: request -> arrays -> ``rbd.retime`` /
``rbd.payload_capacity`` -> response.  No dynamics maths here (doc/planners.md).

Both take joints by name in any order; the joints a request does not name are held at
the latest joint state the node received (``held()``, held_state.py).  Both run where the
other services run (the service worker process by default), never on the control path.
Bad requests get success=False and a message naming the field; a model with a floating
base is refused (the planners need q to be the integral of v, and the node's services
have no base trajectory for them).
"""
from __future__ import annotations

import array
import functools
import re

import numpy as np
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.core as rbd
from rbd_ros.node import payload as pl
from rbd_ros.node.held_state import HeldStateError, fill, map_subset
from rbd_ros.node.names import SRV_PAYLOAD_CAPACITY, SRV_RETIME
from rbd_ros.node.services import NO_MODEL, BadRequest

# as rbd.retime's grid, but at most 1e5: the response holds one JointTrajectoryPoint per
# gridpoint (1e6 of them would be ~1 GB of Python objects in the worker)
MIN_GRIDPOINTS, MAX_GRIDPOINTS = 10, 100_000
FLOATING = ("the model has a floating base: the planner services need a fixed-base model (q the integral "
            "of v, and a base trajectory these services do not take)")


def _fail(resp, message):
    resp.success = False
    resp.message = message
    return resp


def _scale(value, field: str) -> float:
    """A request scale: 0 means 1.0, else a number in (0, 1]."""
    x = float(value)
    if x == 0.0:
        return 1.0
    if not 0.0 < x <= 1.0:      # NaN fails too
        raise BadRequest(f"{field}: expected a number in (0, 1] (0 = 1.0), got {x}")
    return x


def _points(rt, traj, fields, held, required_points: int):
    """JointTrajectory -> (idx, Q (K, nq), arrays per optional field (K, nv) or None, note).

    ``fields``: the optional per-point fields to read (``velocities``, ``accelerations``;
    on each point one value per name, or empty: zeros; None when no point has any).  Joints not in
    ``traj.joint_names`` take the held state (``note`` says how old it is)."""
    idx, err = map_subset(rt, traj.joint_names, "trajectory.joint_names")
    if err:
        raise BadRequest(err)
    n, pts = len(idx), traj.points
    if len(pts) < required_points:
        raise BadRequest(f"trajectory.points has {len(pts)} points, expected at least {required_points}")
    P = np.empty((len(pts), n))
    extra = {f: np.zeros((len(pts), n)) for f in fields}
    given = {f: False for f in fields}
    for i, pt in enumerate(pts):
        if len(pt.positions) != n:
            raise BadRequest(f"trajectory.points[{i}].positions has {len(pt.positions)} entries, expected {n} "
                             "(one per joint_names)")
        P[i] = pt.positions
        for f in fields:
            vals = getattr(pt, f)
            if len(vals) not in (0, n):
                raise BadRequest(f"trajectory.points[{i}].{f} has {len(vals)} entries, expected {n} "
                                 "(one per joint_names) or 0 (zero)")
            if len(vals):
                extra[f][i] = vals
                given[f] = True
    for f, arr in (("positions", P), *extra.items()):
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            i, k = (int(x) for x in bad[0])
            raise BadRequest(f"trajectory.points[{i}].{f}[{k}] is {arr[i, k]} (must be a finite number)")
    model = rt.model
    q0 = np.array(model.neutral(), dtype=np.float64)
    note = fill(rt, idx, q0, held, "trajectory.joint_names")
    Q = np.tile(q0, (len(pts), 1))
    Q[:, rt.dof_q[idx]] = P
    out = {}
    for f in fields:
        if given[f]:
            X = np.zeros((len(pts), model.nv))
            X[:, rt.dof_v[idx]] = extra[f]
            out[f] = X
        else:
            out[f] = None
    return idx, Q, out, note


def _payload(model, msg):
    """The model with the request's payload (geometry_msgs/InertiaStamped; mass 0: none)."""
    p = pl.from_inertia_stamped(msg, "payload.")
    if p.mass == 0.0:
        return model, None
    try:
        return model.with_payload(p.link, p.mass, p.com, p.inertia), p
    except ValueError as e:
        raise BadRequest(str(pl.relabel(p, e))) from None


def _acceleration_limits(rt, idx, names, values):
    """(nv,) acceleration limits in DOF order (inf for joints not named), or None (none)."""
    n = len(idx)
    if len(values) == 0:
        return None
    if len(values) not in (1, n):
        raise BadRequest(f"acceleration_limits has {len(values)} entries, expected {n} (one per "
                         "trajectory.joint_names), 1 (for every joint) or 0 (none)")
    vals = [float(x) for x in values]
    for k, x in enumerate(vals):
        if not x > 0.0:
            who = f" ({names[k]})" if len(vals) == n else ""
            raise BadRequest(f"acceleration_limits[{k}]{who}: expected a number > 0 (rad/s^2 or m/s^2; inf: no "
                             f"limit), got {x}")
    amax = np.full(rt.model.nv, np.inf)
    amax[rt.dof_v[idx]] = vals if len(vals) == n else vals[0]
    return amax


# the core's argument names in retime's and payload_capacity's errors -> the request's terms
_CORE_TERMS = (
    (re.compile(r"^waypoints\[(\d+)\]"), r"trajectory.points[\1]"),
    (re.compile(r"^waypoints\[(\d+), \d+\]"), r"trajectory.points[\1].positions"),
    (re.compile(r"^waypoints:"), "trajectory.points:"),
    (re.compile(r"^velocity_limits:"), "velocity limits (the URDF's x velocity_scale):"),
    (re.compile(r"^effort_limits:"), "effort limits (the URDF's x effort_scale):"),
    (re.compile(r"^(q|v|a):"), "trajectory.points:"),
)


def _core_error(e: Exception) -> str:
    text = str(e)
    if isinstance(e, BadRequest):
        return text
    for pattern, repl in _CORE_TERMS:
        if pattern.match(text):
            return pattern.sub(repl, text, count=1)
    return text


def _duration(t: float) -> Duration:
    ns = int(round(t * 1e9))
    return Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def _trajectory_msg(header, names, t, columns) -> JointTrajectory:
    """A JointTrajectory with one point per row of the (N, n) arrays in ``columns``
    (field name -> array) at times ``t``."""
    out = JointTrajectory(joint_names=list(names))
    out.header = header
    pts = []
    for i in range(t.shape[0]):
        p = JointTrajectoryPoint()
        for field, arr in columns.items():
            setattr(p, field, array.array("d", arr[i].tobytes()))
        p.time_from_start = _duration(float(t[i]))
        pts.append(p)
    out.points = pts
    return out


def retime_trajectory(rt, req, resp, held=None):
    """rbd_ros_interfaces/srv/RetimeTrajectory: the time-optimal motion through the request's
    waypoints (``rbd.retime``) as a JointTrajectory for ``~/trajectory_in``."""
    if rt is None:
        return _fail(resp, NO_MODEL)
    if rt.floating:
        return _fail(resp, FLOATING)
    try:
        names = list(req.trajectory.joint_names)
        if len(req.trajectory.points) > MAX_GRIDPOINTS:      # the response has a point per waypoint
            raise BadRequest(f"trajectory.points has {len(req.trajectory.points)} waypoints, at most "
                             f"{MAX_GRIDPOINTS} are taken (the response holds a point per gridpoint)")
        idx, W, _, note = _points(rt, req.trajectory, (), held, 2)
        model, payload = _payload(rt.model, req.payload)
        amax = _acceleration_limits(rt, idx, names, req.acceleration_limits)
        grid = int(req.gridpoints)
        if grid != 0 and not MIN_GRIDPOINTS <= grid <= MAX_GRIDPOINTS:
            raise BadRequest(f"gridpoints: expected 0 (the waypoints, at least 100 gridpoints) or a number in "
                             f"[{MIN_GRIDPOINTS}, {MAX_GRIDPOINTS}], got {grid}")
        r = rbd.retime(model, W, acceleration_limits=amax,
                       velocity_scale=_scale(req.velocity_scale, "velocity_scale"),
                       acceleration_scale=_scale(req.acceleration_scale, "acceleration_scale"),
                       effort_scale=_scale(req.effort_scale, "effort_scale"),
                       grid=None if grid == 0 else grid)
    except HeldStateError as e:
        return _fail(resp, str(e))
    except (BadRequest, ValueError) as e:
        return _fail(resp, _core_error(e))
    cols = {"positions": r.q[:, rt.dof_q[idx]], "velocities": r.v[:, rt.dof_v[idx]],
            "accelerations": r.a[:, rt.dof_v[idx]], "effort": r.tau[:, rt.dof_v[idx]]}
    cols = {k: np.ascontiguousarray(v) for k, v in cols.items()}
    if not all(np.isfinite(v).all() for v in cols.values()) or not np.isfinite(r.t).all():
        return _fail(resp, "the retimed trajectory is not finite (numerical failure): nothing returned")
    resp.trajectory = _trajectory_msg(req.trajectory.header, names, r.t, cols)
    resp.duration = float(r.duration)
    resp.binding_joint = r.limiting_joint or ""
    resp.binding_limit = r.limiting_kind or ""
    parts = [f"ok: {r.t.shape[0]} points, {r.duration:.6g} s"]
    if r.limiting_joint:
        parts.append(f"limited most by {r.limiting_joint}'s {r.limiting_kind} limit")
    if payload is not None:
        parts.append(f"with a {payload.mass:g} kg payload on {payload.link}")
    if note:
        parts.append(note)
    resp.success = True
    resp.message = "; ".join(parts)
    return resp


def payload_capacity(rt, req, resp, held=None):
    """rbd_ros_interfaces/srv/PayloadCapacity: the heaviest payload on ``req.link`` along the
    request's trajectory (no points: the latest joint state, held still)."""
    if rt is None:
        return _fail(resp, NO_MODEL)
    if rt.floating:
        return _fail(resp, FLOATING)
    try:
        scale = _scale(req.effort_scale, "effort_scale")
        inertia = [float(x) for x in req.inertia]
        if len(inertia) not in (0, 6):
            raise BadRequest(f"inertia has {len(inertia)} entries, expected 6 (ixx ixy ixz iyy iyz izz per kg "
                             "about the com, m^2) or 0 (a point mass)")
        com = [float(req.com.x), float(req.com.y), float(req.com.z)]
        model = rt.model
        if len(req.trajectory.points) == 0:
            q = np.array(model.neutral(), dtype=np.float64)
            note = fill(rt, np.zeros(0, dtype=np.int64), q, held, "trajectory (no points: the latest joint state)")
            Q, V, A = q[None, :], None, None
        else:
            _, Q, X, note = _points(rt, req.trajectory, ("velocities", "accelerations"), held, 1)
            V, A = X["velocities"], X["accelerations"]          # None: zeros
        cap = rbd.payload_capacity(model, req.link, Q, V, A, com=com, inertia=inertia or None,
                                   effort_limits=np.asarray(model.effort_limit) * scale)
    except HeldStateError as e:
        return _fail(resp, str(e))
    except (BadRequest, ValueError) as e:
        text = str(e)
        if text.startswith("effort_limits: no joint"):        # the link is what to change
            return _fail(resp, "link:" + text[len("effort_limits:"):])
        return _fail(resp, _core_error(e))
    resp.mass = float(cap.mass)
    resp.limiting_joint = cap.limiting_joint
    resp.limiting_point = int(cap.limiting_sample)
    resp.per_point = array.array("d", np.ascontiguousarray(cap.per_sample, dtype=np.float64).tobytes())
    if cap.feasible:
        text = (f"ok: {cap.mass:.6g} kg on {req.link}, limited by {cap.limiting_joint}'s effort limit at point "
                f"{cap.limiting_sample}")
    else:
        text = (f"ok: 0 kg: the trajectory exceeds {cap.limiting_joint}'s effort limit at point "
                f"{cap.limiting_sample} even without a payload")
    resp.success = True
    resp.message = text + (f"; {note}" if note else "")
    return resp


def table(held=None):
    """(srv type, name, fn(rt, req, resp)) of both services for
    ``services.create_dynamics_services(extra=...)``; ``held()``: the node's latest joint
    state (held_state.py; None: requests must name every joint).  ImportError if
    rbd_ros_interfaces is missing."""
    from rbd_ros_interfaces import srv as isrv  # may be missing: ImportError (see the docstring)
    return [(isrv.RetimeTrajectory, SRV_RETIME, functools.partial(retime_trajectory, held=held)),
            (isrv.PayloadCapacity, SRV_PAYLOAD_CAPACITY, functools.partial(payload_capacity, held=held))]
