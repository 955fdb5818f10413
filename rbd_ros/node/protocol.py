"""The line protocol between the node (worker_client.py) and its service worker
process (service_worker.py), defined once for both sides.

* command line: ``python -m rbd_ros.node.service_worker NODE_FQN THREADS EXPECT_MODEL
  [RELAY_IN RELAY_OUT]`` (``worker_argv`` / ``parse_argv``); the resolved topics of the
  trajectory relay (relay.py), if the worker runs it.
* node -> worker (stdin), one JSON object per line, one per model change
  (``model_command`` / ``parse_model_command``):
  ``{"urdf": ..., "where": ..., "floating_base": ..., "mimic": ..., "gravity": [...],
  "armature": {dof name: value}, "payloads": [{"link", "mass", "com", "inertia"}, ...],
  "friction_velocity_eps": ..., "loops": {"actuated": [...], "constraints": [...],
  "initial_positions": [...], "loop_cond_limit": ...}, "contacts": {"links": [...], "types":
  [...], "mu": ..., "sole": [...]}}`` (the last five optional: none, none, 0.01, no loops of
  the node's own, no contacts; constraints as model_build.constraint_dict, contacts as
  contacts.contact_options);
  ``{"state_reply": id, "names": [...], "positions": [...], "age_s": s}`` or
  ``{"state_reply": id, "error": ...}`` (both with ``"contacts": {"links", "normals",
  "friction"}`` when the node has contacts: the set in use): the node's latest joint state,
  the answer to a ``state_request`` (``state_reply`` / ``parse_state_reply``; held_state.py).
  Closing stdin tells the worker to exit.
* worker -> node (stdout), one JSON object per line (``event_*`` / ``parse_event``):
  ``{"event": "ready"}`` once its services exist;
  ``{"event": "model", "ok": true, "name": ..., "dof": ...}`` or
  ``{"event": "model", "ok": false, "error": ...}`` after each model command;
  ``{"event": "relay", "relayed": n, "refused": m}`` (totals) after each relayed trajectory;
  ``{"event": "state_request", "id": k}``: a request needs the node's latest joint state
  (the joints it does not name are held there).
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from rbd_ros.node.payload import DEFAULT_FRICTION_VELOCITY_EPS, Payload

WORKER_MODULE = "rbd_ros.node.service_worker"
EVENT_READY = "ready"
EVENT_MODEL = "model"
EVENT_RELAY = "relay"
EVENT_STATE_REQUEST = "state_request"
_STATE_REPLY_HEAD = '{"state_reply": '   # how a state reply line starts (json.dumps keeps key order)


@dataclass(frozen=True)
class WorkerArgs:
    node_fqn: str
    threads: int
    expect_model: bool
    relay: tuple | None = None   # (in topic, out topic) of the trajectory relay


def worker_argv(node_fqn: str, threads: int, expect_model: bool, python=None,
                relay=None) -> list:
    return [python or sys.executable, "-m", WORKER_MODULE, node_fqn, str(int(threads)),
            "1" if expect_model else "0", *(relay or ())]


def parse_argv(argv) -> WorkerArgs:
    relay = (argv[3], argv[4]) if len(argv) > 4 else None
    return WorkerArgs(argv[0], int(argv[1]), len(argv) > 2 and argv[2] == "1", relay)


def model_command(urdf: str, where: str, floating_base: bool, mimic: bool, gravity,
                  armature=None, payloads=(), friction_velocity_eps=None, loops=None, contacts=None) -> str:
    """``armature``: {DOF name: value}; ``payloads``: payload.Payload objects; ``loops``:
    Robot.options["loops"] (plain data) or None; ``contacts``: Robot.options["contacts"] or
    None."""
    cmd = {"urdf": urdf, "where": where, "floating_base": bool(floating_base),
           "mimic": bool(mimic), "gravity": [float(x) for x in gravity],
           "armature": {str(k): float(x) for k, x in (armature or {}).items()},
           "payloads": [p.as_dict() for p in payloads]}
    if friction_velocity_eps is not None:
        cmd["friction_velocity_eps"] = float(friction_velocity_eps)
    if loops:
        cmd["loops"] = loops
    if contacts:
        cmd["contacts"] = contacts
    return json.dumps(cmd)


def parse_model_command(line: str) -> dict:
    """The keyword arguments of payload.build_robot (but joints) from a command line.
    Raises ValueError/KeyError on a malformed line."""
    cmd = json.loads(line)
    payloads = [Payload.from_dict(d) for d in cmd.get("payloads", ())]
    return {"urdf_text": cmd["urdf"], "source": cmd["where"],
            "floating_base": cmd["floating_base"], "mimic": cmd["mimic"],
            "gravity": cmd["gravity"], "armature": dict(cmd.get("armature") or {}),
            "payloads": {p.link: p for p in payloads},
            "friction_velocity_eps": float(cmd.get("friction_velocity_eps",
                                                   DEFAULT_FRICTION_VELOCITY_EPS)),
            **({"contacts": cmd["contacts"]} if cmd.get("contacts") else {}),
            **(cmd.get("loops") or {})}


def event_ready() -> str:
    return json.dumps({"event": EVENT_READY})


def event_model(ok: bool, *, name: str = "", dof: int = 0, error: str = "") -> str:
    if ok:
        return json.dumps({"event": EVENT_MODEL, "ok": True, "name": name, "dof": dof})
    return json.dumps({"event": EVENT_MODEL, "ok": False, "error": error})


def event_relay(relayed: int, refused: int) -> str:
    return json.dumps({"event": EVENT_RELAY, "relayed": int(relayed), "refused": int(refused)})


def parse_event(line: str):
    """An event dict, or None for a line that is not one (worker output is only ours,
    but a stray print must not break the reader)."""
    try:
        ev = json.loads(line)
    except ValueError:
        return None
    return ev if isinstance(ev, dict) and "event" in ev else None


def event_state_request(k: int) -> str:
    return json.dumps({"event": EVENT_STATE_REQUEST, "id": int(k)})


def state_reply(k: int, snapshot: dict) -> str:
    """The node's answer to state request ``k``: a held_state.snapshot dict."""
    return json.dumps({"state_reply": int(k), **snapshot})


def parse_state_reply(line: str):
    """(id, snapshot dict) if ``line`` is a state reply, else None (a model command).
    Looks at the start of the line only: model lines carry a whole URDF."""
    if not line.startswith(_STATE_REPLY_HEAD):
        return None
    d = json.loads(line)
    return int(d.pop("state_reply")), d
