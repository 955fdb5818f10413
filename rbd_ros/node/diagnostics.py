"""The node's /diagnostics status as a pure function of its state (no DDS):
``build_status(...)`` returns a DiagnosticStatus; the node only stamps and publishes it."""
from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from rbd_ros.node.model_build import armature_text, payloads_text


def _short(names, n=10):
    return str(list(names[:n]))[:-1] + (", ...]" if len(names) > n else "]")


def build_status(node_fqn: str, rt, stats, now: float, max_state_age: float, *,
                 services: str, services_error: str | None = None,
                 command_friction: bool = False, payload_rejected: int = 0,
                 command=(), relay: dict | None = None) -> DiagnosticStatus:
    """Status of the node named node_fqn.

    rt: the current Robot or None; stats: the control path's Stats; now: monotonic
    time (the clock of the joint-state stamps in rt); services: what the services are
    doing ("on (worker pid 12)", "starting ...", "off"); services_error: why they are
    off, if they are (raises the level to WARN); command_friction: the parameter (the
    command output adds joint friction); payload_rejected: ~/payload messages refused.
    The model's payloads ("link: mass kg", ...) and non-zero armature ("joint: value")
    come from rt. command: (key, value) pairs of the effort command
    (ControlPath.command_diagnostics: command_mode, command_fallback, command_clamped,
    desired_dropped, ...); relay: the trajectory relay's totals
    ({"relayed": n, "refused": m}) or None."""
    status = DiagnosticStatus()
    status.name = f"rbd_ros: {node_fqn}"
    kv = []
    if rt is None:
        status.level = DiagnosticStatus.WARN
        status.message = "no robot model (waiting for robot_description)"
        kv += [KeyValue(key="model", value=""), KeyValue(key="dof", value="0")]
    else:
        status.hardware_id = rt.model.name
        if rt.ready(now, max_state_age):
            status.level = DiagnosticStatus.OK
            status.message = "streaming"
        else:
            status.level = DiagnosticStatus.WARN
            missing, stale = rt.missing_and_stale(now, max_state_age)
            parts = []
            if missing:
                parts.append(f"never received {_short(missing)}")
            if stale:
                parts.append(f"older than max_state_age {max_state_age:g} s {_short(stale)}")
            status.message = "waiting for joint states: " + "; ".join(parts)
        kv += [KeyValue(key="model", value=rt.model.name),
               KeyValue(key="dof", value=str(rt.ndof)),
               KeyValue(key="floating_base", value=str(rt.floating).lower()),
               KeyValue(key="model_source", value=rt.source),
               KeyValue(key="payloads", value=payloads_text(rt.model)),
               KeyValue(key="armature", value=armature_text(rt))]
    st = stats
    kv += [KeyValue(key="messages_in", value=str(st.msgs_in)),
           KeyValue(key="messages_out", value=str(st.msgs_out)),
           KeyValue(key="messages_dropped", value=str(sum(st.dropped.values())))]
    for reason, count in sorted(st.dropped.items()):
        kv.append(KeyValue(key=f"dropped_{reason}", value=str(count)))
    kv += [KeyValue(key="waiting_for_state", value=str(st.not_ready)),
           KeyValue(key="rate_limited", value=str(st.rate_limited))]
    pct = st.percentiles()
    if pct is not None:
        (cb50, cb99), (co50, co99), (pu50, pu99) = pct
        kv += [KeyValue(key="compute_time_p50_us", value=f"{co50:.1f}"),
               KeyValue(key="compute_time_p99_us", value=f"{co99:.1f}"),
               KeyValue(key="callback_time_p50_us", value=f"{cb50:.1f}"),
               KeyValue(key="callback_time_p99_us", value=f"{cb99:.1f}"),
               KeyValue(key="publish_time_p50_us", value=f"{pu50:.1f}"),
               KeyValue(key="publish_time_p99_us", value=f"{pu99:.1f}")]
        (cpu50, cpu99), (wait50, wait99) = st.cpu_percentiles()
        kv += [KeyValue(key="callback_cpu_p50_us", value=f"{cpu50:.1f}"),
               KeyValue(key="callback_cpu_p99_us", value=f"{cpu99:.1f}"),
               KeyValue(key="callback_wait_p50_us", value=f"{wait50:.1f}"),
               KeyValue(key="callback_wait_p99_us", value=f"{wait99:.1f}")]
    kv += [KeyValue(key="command_friction", value=str(bool(command_friction)).lower()),
           KeyValue(key="payloads_rejected", value=str(int(payload_rejected)))]
    kv += [KeyValue(key=k, value=v) for k, v in command]
    if relay is not None:
        kv += [KeyValue(key=f"trajectories_{k}", value=str(v)) for k, v in relay.items()]
    kv += [KeyValue(key="services", value=services),
           KeyValue(key="last_error", value=st.last_error)]
    if services_error:
        status.level = max(status.level, DiagnosticStatus.WARN)
        status.message += "; services off (see last_error / the log)"
    status.values = kv
    return status


def as_array(status: DiagnosticStatus, stamp) -> DiagnosticArray:
    arr = DiagnosticArray()
    arr.header.stamp = stamp
    arr.status = [status]
    return arr
