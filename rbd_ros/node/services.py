"""Service request -> arrays -> rbd_ros.core -> response.  No dynamics maths here.

Every function takes the current Robot (or None), a request and a response
of the rbd_ros_interfaces service types, fills the response and returns it.
Bad requests give success=False and a message naming the field.

Inverse dynamics: ``include_friction`` adds ``rbd.friction`` (the URDF's
damping and Coulomb friction, smoothed by ``rt.options["friction_velocity_eps"]``)
at the request's velocities; efforts above the URDF effort limits
(``model.effort_limit``, inf = none) are reported in ``limit_violations`` and
counted in the message, the efforts are still returned (success stays true).
"""
from __future__ import annotations

import array
import math
import re

import numpy as np
from geometry_msgs.msg import Accel, Wrench

import rbd_ros.core as rbd
from rbd_ros.node.held_state import HeldStateError, fill, map_subset
from rbd_ros.node.names import SRV_FD, SRV_FD_TRAJ, SRV_ID, SRV_ID_TRAJ
from rbd_ros.node.payload import DEFAULT_FRICTION_VELOCITY_EPS

NO_MODEL = ("no robot model loaded yet: publish the URDF on robot_description or set the "
            "robot_description / urdf_file parameter")
CHUNK = 512  # trajectory points per core call (bounded memory, GIL released in between)


class BadRequest(ValueError):
    pass


def _vector(values, n: int, field: str, required: bool) -> np.ndarray | None:
    if len(values) == 0 and not required:
        return None
    if len(values) != n:
        expect = f"{n} (one per name)" if required else f"{n} (one per name) or 0 (all zero)"
        raise BadRequest(f"{field} has {len(values)} entries, expected {expect}")
    arr = np.asarray(values, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise BadRequest(f"{field}[{int(bad[0])}] is {arr[bad[0]]} (must be a finite number)")
    return arr


def _finite(values, field: str) -> list:
    vals = [float(x) for x in values]
    for k, x in enumerate(vals):
        if not math.isfinite(x):
            raise BadRequest(f"{field} is not finite (component {k} = {x})")
    return vals


def _wrenches(rt, links, wrenches, frame: str):
    if len(links) != len(wrenches):
        raise BadRequest(f"wrench_links has {len(links)} names but wrenches has {len(wrenches)} "
                         f"entries (one wrench per link name)")
    frame_l = (frame or "").strip().lower() or "local"
    if frame_l not in ("local", "world"):
        raise BadRequest(f"wrench_frame: expected 'local', 'world' or '' (= local), got {frame!r}")
    if not links:
        return None, "local"
    f_ext = np.zeros((len(rt.link_index), 6))
    for k, (ln, w) in enumerate(zip(links, wrenches)):
        i = rt.link_index.get(ln)
        if i is None:
            raise BadRequest(f"wrench_links[{k}]: unknown link {ln!r}; the model's links are "
                             f"{list(rt.link_index)[:40]}")
        f_ext[i] += _wrench6(w, f"wrenches[{k}]")
    return f_ext, frame_l


def _base_q(pose) -> list:
    p = _finite((pose.position.x, pose.position.y, pose.position.z), "base_pose.position")
    quat = _finite((pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w),
                   "base_pose.orientation")
    norm = math.sqrt(sum(c * c for c in quat))
    if abs(norm - 1.0) > 1e-3:
        raise BadRequest(f"base_pose.orientation must be a unit quaternion (norm {norm:.6g})")
    return p + [c / norm for c in quat]


def _state(rt, names, position, velocity, third, third_field):
    """Build q, v and a third nv-vector (acceleration or effort) from name-matched arrays."""
    idx, err = rt.map_names(names, "name")
    if err:
        raise BadRequest(err)
    n = len(names)
    pos = _vector(position, n, "position", True)
    vel = _vector(velocity, n, "velocity", False)
    thr = _vector(third, n, third_field, False)
    model = rt.model
    q = np.array(model.neutral(), dtype=np.float64)
    v = np.zeros(model.nv)
    x = np.zeros(model.nv)
    q[rt.dof_q[idx]] = pos
    if vel is not None:
        v[rt.dof_v[idx]] = vel
    if thr is not None:
        x[rt.dof_v[idx]] = thr
    return idx, q, v, x


# rbd_ros.core names its arguments q, v, a, tau, f_ext; the requests call them so
_REQUEST_FIELDS = {"q": "position", "v": "velocity", "a": "acceleration", "tau": "effort",
                   "f_ext": "wrenches"}
_CORE_ARG = re.compile(r"(q|v|a|tau|f_ext)\b")


def _request_error(e: Exception) -> str:
    """An error in the request's terms: a core ValueError's leading argument name
    (``tau: the result is not finite ...``) becomes the request field it came from
    (``effort: ...``), a batch row the trajectory point."""
    text = str(e)
    m = None if isinstance(e, BadRequest) else _CORE_ARG.match(text)
    if m is None:
        return text
    arg, field = m.group(1), _REQUEST_FIELDS[m.group(1)]
    rest = text[m.end():].replace(f"the {arg} values", f"the {field} values")
    return field + rest.replace("(batch row ", "(trajectory point ")


def _overflow(q, v, x, x_field: str) -> str:
    """Why finite inputs gave a non-finite result: their size (float64 overflow).  A
    singular inertia matrix is reported by rbd_ros.core itself, with its own message."""
    big = max((float(np.max(np.abs(a))) if a.size else 0.0, f) for a, f in
              ((q, "position"), (v, "velocity"), (x, x_field)))
    return (f"the inputs overflow float64 arithmetic (largest magnitude {big[0]:.3g} in "
            f"{big[1]}); use physically plausible values")


def _ok(resp, message="ok"):
    resp.success = True
    resp.message = message
    return resp


def _fail(resp, message):
    resp.success = False
    resp.message = message
    return resp


def _twist(t, field: str):
    """geometry_msgs Twist/Accel -> [linear; angular] (Pinocchio's free-flyer order)."""
    return _finite((t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z), field)


def inverse_dynamics(rt, req, resp):
    if rt is None:
        return _fail(resp, NO_MODEL)
    try:
        idx, q, v, a = _state(rt, req.name, req.position, req.velocity, req.acceleration,
                              "acceleration")
        f_ext, frame = _wrenches(rt, req.wrench_links, req.wrenches, req.wrench_frame)
        if rt.floating:
            q[0:7] = _base_q(req.base_pose)
            v[0:6] = _twist(req.base_velocity, "base_velocity")
            a[0:6] = _twist(req.base_acceleration, "base_acceleration")
        tau = rbd.rnea(rt.model, q, v, a, f_ext=f_ext, f_ext_frame=frame)
        if getattr(req, "include_friction", False):
            tau += rbd.friction(rt.model, v, friction_eps(rt))
    except (BadRequest, ValueError) as e:
        return _fail(resp, _request_error(e))
    out = np.ascontiguousarray(tau[rt.dof_v[idx]])
    if not np.isfinite(tau).all():
        return _fail(resp, "the computed efforts are not finite: " + _overflow(q, v, a, "acceleration"))
    resp.name = list(req.name)
    resp.effort = array.array("d", out.tobytes())
    if rt.floating:
        resp.base_wrench = _six_to(Wrench, tau[0:6].tolist())
    n_viol = _limit_violations(rt, req.name, idx, out[None, :], resp)
    return _ok(resp, _violations_text(n_viol, "ok"))


def friction_eps(rt) -> float:
    """The Coulomb smoothing velocity the model was built with (friction_velocity_eps)."""
    return float(rt.options.get("friction_velocity_eps", DEFAULT_FRICTION_VELOCITY_EPS))


def _limit_violations(rt, names, idx, efforts, resp) -> int:
    """Fill resp.limit_violations with every (point, joint) of ``efforts`` (points x
    len(names), request order) whose magnitude exceeds the joint's effort limit;
    returns how many.  Points first, joints in request order within a point."""
    if not hasattr(resp, "limit_violations"):
        return 0
    limit = np.asarray(rt.model.effort_limit)[rt.dof_v[idx]]
    over = np.argwhere(np.abs(efforts) > limit)
    if over.size == 0:
        return 0
    from rbd_ros_interfaces.msg import EffortLimitViolation  # (present where services run)
    resp.limit_violations = [
        EffortLimitViolation(joint=names[k], point=int(i), effort=float(efforts[i, k]),
                             limit=float(limit[k]))
        for i, k in over.tolist()]
    return len(over)


def _violations_text(n: int, head: str) -> str:
    if not n:
        return head
    return (f"{head}; {n} effort limit violation{'s' if n != 1 else ''} (|effort| above the "
            f"URDF effort limit): see limit_violations")


def forward_dynamics(rt, req, resp):
    if rt is None:
        return _fail(resp, NO_MODEL)
    try:
        idx, q, v, tau = _state(rt, req.name, req.position, req.velocity, req.effort, "effort")
        f_ext, frame = _wrenches(rt, req.wrench_links, req.wrenches, req.wrench_frame)
        if rt.floating:
            q[0:7] = _base_q(req.base_pose)
            v[0:6] = _twist(req.base_velocity, "base_velocity")
            tau[0:6] = _wrench6(req.base_wrench, "base_wrench")
        qdd = rbd.forward_dynamics(rt.model, q, v, tau, f_ext=f_ext, f_ext_frame=frame)
    except (BadRequest, ValueError) as e:
        return _fail(resp, _request_error(e))
    if not np.isfinite(qdd).all():
        return _fail(resp, "the computed accelerations are not finite: " + _overflow(q, v, tau, "effort"))
    resp.name = list(req.name)
    resp.acceleration = array.array("d", np.ascontiguousarray(qdd[rt.dof_v[idx]]).tobytes())
    if rt.floating:
        resp.base_acceleration = _six_to(Accel, qdd[0:6].tolist())
    return _ok(resp)


def _per_point(values, npts: int, field: str, required: bool):
    """A per-point base field: None if empty and optional, else one entry per point."""
    if len(values) == 0 and not required:
        return None
    if len(values) != npts:
        expect = f"{npts} (one per trajectory point)" + ("" if required else " or 0 (all zero)")
        why = " for a floating-base model" if required else ""
        raise BadRequest(f"{field} has {len(values)} entries, expected {expect}{why}")
    return values


def _wrench6(w, field: str):
    return _finite((w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z), field)


def _base_trajectory(req, npts, Q, V, X, third: str, third_fn):
    """Floating base: base_poses / base_velocities / <third> (per point) into Q, V, X."""
    poses = _per_point(req.base_poses, npts, "base_poses", True)
    for i, pose in enumerate(poses):
        try:
            Q[i, 0:7] = _base_q(pose)
        except BadRequest as e:
            raise BadRequest(f"base_poses[{i}]: {e}") from None
    for field, dst, fn in (("base_velocities", V, _twist), (third, X, third_fn)):
        vals = _per_point(getattr(req, field), npts, field, False)
        if vals is not None:
            for i, x in enumerate(vals):
                dst[i, 0:6] = fn(x, f"{field}[{i}]")


def _trajectory_arrays(rt, traj, second: str, third: str, held=None):
    """JointTrajectory -> (idx, Q, V, X) in model order; X from points[i].<third>.
    A floating base stays at the neutral pose, at rest (see _base_trajectory).
    ``held`` (the relay): joints not named are held at the latest joint state (held_state.py),
    at rest; None: every joint must be named."""
    if held is None:
        idx, err = rt.map_names(traj.joint_names, "trajectory.joint_names")
    else:
        idx, err = map_subset(rt, traj.joint_names, "trajectory.joint_names")
    if err:
        raise BadRequest(err)
    n = len(idx)
    points = traj.points
    npts = len(points)
    if npts == 0:
        raise BadRequest("trajectory.points is empty")
    P = np.empty((npts, n))
    S = np.zeros((npts, n))
    T = np.zeros((npts, n))
    for i, pt in enumerate(points):
        pos = pt.positions
        if len(pos) != n:
            raise BadRequest(f"trajectory.points[{i}].positions has {len(pos)} entries, expected {n} "
                             f"(one per joint_names)")
        P[i] = pos
        for field, dst in ((second, S), (third, T)):
            vals = getattr(pt, field)
            if len(vals):
                if len(vals) != n:
                    raise BadRequest(f"trajectory.points[{i}].{field} has {len(vals)} entries, "
                                     f"expected {n} (one per joint_names) or 0 (all zero)")
                dst[i] = vals
    for field, arr in (("positions", P), (second, S), (third, T)):
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            i, k = (int(x) for x in bad[0])
            raise BadRequest(f"trajectory.points[{i}].{field}[{k}] is {arr[i, k]} "
                             f"(must be a finite number)")
    model = rt.model
    q0 = np.array(model.neutral(), dtype=np.float64)
    if held is not None:
        try:
            fill(rt, idx, q0, held, "trajectory.joint_names")
        except HeldStateError as e:
            raise BadRequest(str(e)) from None
    Q = np.tile(q0, (npts, 1))
    V = np.zeros((npts, model.nv))
    X = np.zeros((npts, model.nv))
    Q[:, rt.dof_q[idx]] = P
    V[:, rt.dof_v[idx]] = S
    X[:, rt.dof_v[idx]] = T
    return idx, Q, V, X


def _batched(fn, rt, Q, V, X, f_ext, frame):
    """Batch core calls in chunks (bounded memory; the GIL is free between and during them)."""
    out = np.empty_like(V)
    fe = None
    for s in range(0, Q.shape[0], CHUNK):
        e = min(s + CHUNK, Q.shape[0])
        if f_ext is not None and (fe is None or fe.shape[0] != e - s):
            fe = np.ascontiguousarray(np.broadcast_to(f_ext, (e - s,) + f_ext.shape))
        out[s:e] = fn(rt.model, Q[s:e], V[s:e], X[s:e], f_ext=fe, f_ext_frame=frame)
    return out


def _fill_points(points, field: str, values: np.ndarray):
    for pt, row in zip(points, values):
        setattr(pt, field, array.array("d", row.tobytes()))


def _trajectory(rt, req, resp, fn, third: str, result: str, what: str, base_in, base_out,
                add=None, check=None, held=None):
    """Shared body of the trajectory services: ``fn`` over every point, the
    result written into each point's ``result`` field.  Floating base:
    ``base_in`` = (request field, converter) of the third base quantity,
    ``base_out`` = (response field, message type) of the base result.
    ``add(rt, req, V)``: None or an array added to the result (inverse dynamics:
    friction); ``check(rt, req, idx, out, resp)``: count of limit violations put in
    resp (inverse dynamics); ``held``: see _trajectory_arrays."""
    if rt is None:
        return _fail(resp, NO_MODEL)
    try:
        idx, Q, V, X = _trajectory_arrays(rt, req.trajectory, "velocities", third, held)
        if rt.floating:
            _base_trajectory(req, Q.shape[0], Q, V, X, *base_in)
        f_ext, frame = _wrenches(rt, req.wrench_links, req.wrenches, req.wrench_frame)
        res = _batched(fn, rt, Q, V, X, f_ext, frame)
        extra = add(rt, req, V) if add is not None else None
        if extra is not None:
            res += extra
    except (BadRequest, ValueError) as e:
        return _fail(resp, _request_error(e))
    out = np.ascontiguousarray(res[:, rt.dof_v[idx]])
    bad = np.argwhere(~np.isfinite(out))
    if bad.size:
        return _fail(resp, f"the computed {what} of point {int(bad[0][0])} is not finite")
    if rt.floating and not np.isfinite(res[:, 0:6]).all():
        return _fail(resp, f"the computed base {what} is not finite")
    _fill_points(req.trajectory.points, result, out)
    resp.trajectory = req.trajectory
    if rt.floating:
        field, msg_type = base_out
        setattr(resp, field, [_six_to(msg_type, row) for row in res[:, 0:6].tolist()])
    n_viol = check(rt, req, idx, out, resp) if check is not None else 0
    return _ok(resp, _violations_text(n_viol, f"ok: {out.shape[0]} points"))


def _six_to(msg_type, row):
    """[linear; angular] (or [force; torque]) -> a geometry_msgs Accel or Wrench."""
    m = msg_type()
    a, b = (m.linear, m.angular) if msg_type is Accel else (m.force, m.torque)
    a.x, a.y, a.z, b.x, b.y, b.z = row
    return m


def _friction_of(rt, req, V):
    if getattr(req, "include_friction", False):
        return rbd.friction(rt.model, V, friction_eps(rt))
    return None


def _trajectory_violations(rt, req, idx, out, resp):
    return _limit_violations(rt, list(req.trajectory.joint_names), idx, out, resp)


def inverse_dynamics_trajectory(rt, req, resp, held=None):
    """``held`` (the relay only): joints not named are held at the latest joint state."""
    return _trajectory(rt, req, resp, rbd.rnea, "accelerations", "effort", "effort",
                       ("base_accelerations", _twist), ("base_wrenches", Wrench),
                       add=_friction_of, check=_trajectory_violations, held=held)


def forward_dynamics_trajectory(rt, req, resp):
    return _trajectory(rt, req, resp, rbd.forward_dynamics, "effort", "accelerations", "acceleration",
                       ("base_wrenches", _wrench6), ("base_accelerations", Accel))


def create_dynamics_services(node, base_name: str, get_runtime, log, extra=()):
    """The four dynamics services, and those of ``extra`` ((srv type, name, fn) like the
    table below: the planner services, ``planner_services.table``), under ``base_name``
    (the dynamics node's fully qualified name), answered with the runtime returned by
    get_runtime().  Used by the node (in-process services) and by the service worker.
    ImportError if rbd_ros_interfaces is missing."""
    from rbd_ros_interfaces import srv as isrv  # may be missing: ImportError (see the docstring)
    table = [
        (isrv.InverseDynamics, SRV_ID, inverse_dynamics),
        (isrv.InverseDynamicsTrajectory, SRV_ID_TRAJ, inverse_dynamics_trajectory),
        (isrv.ForwardDynamics, SRV_FD, forward_dynamics),
        (isrv.ForwardDynamicsTrajectory, SRV_FD_TRAJ, forward_dynamics_trajectory),
        *extra,
    ]
    services = []
    for srv_type, rel, fn in table:
        name = base_name.rstrip("/") + "/" + rel[2:]

        def callback(request, response, fn=fn, name=name):
            try:
                response = fn(get_runtime(), request, response)
            except Exception as e:  # never let a request kill the node
                response.success = False
                response.message = f"internal error: {type(e).__name__}: {e}"
                log.error(f"{name}: {response.message}")
            if not response.success:
                log.warning(f"{name}: request refused: {response.message}",
                            throttle_duration_sec=1.0)
            return response

        services.append(node.create_service(srv_type, name, callback))
    return services
