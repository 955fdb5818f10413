"""Recorded joint states -> identification samples.

* ``read_joint_states``: a rosbag2 (sqlite3 or MCAP, read without ROS by the
  ``rosbags`` package: ``AnyReader`` + the ROS 2 Jazzy typestore; imported when
  first needed, RecordingError saying how to install it if it is not) of
  sensor_msgs/JointState -> times, positions, velocities, efforts.
* ``prepare`` (``rbd_ros.core.estimation.signals``, re-exported here): the zero-phase
  low-pass of q, qd and tau, qdd by central differences, decimation; the
  cut-off is ``cutoff_hz`` (default ``DEFAULT_CUTOFF_HZ``, 10 Hz).
* ``write_joint_states_bag``: the inverse of ``read_joint_states`` (tests,
  examples).

Near zero velocity Coulomb friction is stiction, not the tanh law the model
uses: ``rbd_ros.core.estimation.identification`` leaves those rows out
(``coulomb_min_velocity``).
"""
import importlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rbd_ros.core.estimation.signals import DEFAULT_CUTOFF_HZ, RecordingError, Samples, prepare  # noqa: F401  (re-exported)

JOINT_STATE = "sensor_msgs/msg/JointState"


@dataclass
class Recording:
    """Joint states read from a bag, in ``names`` order, sorted by time."""
    t: np.ndarray              # (N,) s
    names: list
    position: np.ndarray       # (N, k)
    velocity: np.ndarray       # (N, k) or None when the messages carry none
    effort: np.ndarray         # (N, k)
    topic: str
    skipped: int = 0           # messages left out (other joint sets, missing fields)
    all_names: tuple = ()      # every joint name seen on the topic


ROSBAGS_MISSING = ("reading and writing rosbag2 needs the rosbags package (no rosdep key): "
                   "pip install rosbags, or the ident extra (doc/calibrate.md)")


def _rosbags(module):
    """The rosbags submodule ``module``; RecordingError saying what to install when rosbags is not."""
    try:
        return importlib.import_module(f"rosbags.{module}")
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] != "rosbags":
            raise
        raise RecordingError(ROSBAGS_MISSING) from e


def _typestore():
    typesys = _rosbags("typesys")
    return typesys.get_typestore(typesys.Stores.ROS2_JAZZY)


def read_joint_states(path, topic=None, joints=None, progress=None):
    """Recording of the sensor_msgs/JointState messages of the bag at ``path``.

    ``topic``: default the bag's only JointState topic, else ``/joint_states``.
    ``joints``: names that every used message must contain (messages without
    them, e.g. a gripper's on the same topic, are skipped); default: the most
    frequent name set.  ``progress(done, total)``: called every 1000 messages.
    Stamps: ``header.stamp``, or the bag's receive time when the stamps are 0.
    RecordingError says what is missing (no bag, no JointState topic, no
    efforts, no message with the joints)."""
    AnyReader = _rosbags("highlevel").AnyReader
    path = Path(path)
    if not path.exists():
        raise RecordingError(f"bag {str(path)!r}: no such file or directory")
    try:
        reader = AnyReader([path], default_typestore=_typestore())
        reader.open()
    except Exception as e:      # rosbags raises its own error classes for every kind of bad bag
        raise RecordingError(f"bag {str(path)!r}: cannot be read as a rosbag2 (sqlite3 or MCAP): {e}") from None
    try:
        conns = [c for c in reader.connections if c.msgtype == JOINT_STATE]
        if not conns:
            topics = sorted({f"{c.topic} ({c.msgtype})" for c in reader.connections})
            raise RecordingError(f"bag {str(path)!r} has no {JOINT_STATE} topic (its topics: {topics})")
        found = sorted({c.topic for c in conns})
        if topic is None:
            topic = found[0] if len(found) == 1 else ("/joint_states" if "/joint_states" in found else None)
            if topic is None:
                raise RecordingError(f"bag {str(path)!r} has several JointState topics {found}: choose one (--topic)")
        conns = [c for c in conns if c.topic == topic]
        if not conns:
            raise RecordingError(f"bag {str(path)!r}: no JointState topic {topic!r} (JointState topics: {found})")
        total = sum(c.msgcount for c in conns)
        rows = []
        for k, (conn, stamp_ns, raw) in enumerate(reader.messages(connections=conns)):
            m = reader.deserialize(raw, conn.msgtype)
            t = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
            rows.append((t, stamp_ns * 1e-9, tuple(m.name), m.position, m.velocity, m.effort))
            if progress is not None and (k + 1) % 1000 == 0:
                progress(k + 1, total)
        if progress is not None:
            progress(len(rows), total)
    finally:
        reader.close()
    return _assemble(rows, topic, joints, str(path))


def _assemble(rows, topic, joints, where):
    if not rows:
        raise RecordingError(f"bag {where!r}: topic {topic!r} has no messages")
    if joints is None:
        sets = {}
        for r in rows:
            sets[r[2]] = sets.get(r[2], 0) + 1
        names = list(max(sets, key=sets.get))
    else:
        names = list(joints)
    want = set(names)
    used = [r for r in rows if want <= set(r[2])]
    if not used:
        seen = sorted({n for r in rows for n in r[2]})
        missing = sorted(want - set(seen))
        raise RecordingError(f"bag {where!r}: no message on {topic!r} names all of the joints {names}"
                             + (f"; never named: {missing}" if missing else "") + f" (names seen: {seen})")
    if all(len(r[5]) == 0 for r in used):
        raise RecordingError(f"bag {where!r}: the JointState messages on {topic!r} carry no efforts; identification "
                             "needs the torques the joints applied (measured, or motor current x torque constant)")
    complete = [r for r in used if len(r[5]) == len(r[2]) and len(r[3]) == len(r[2])]
    have_v = all(len(r[4]) == len(r[2]) for r in complete)
    sels = {}
    pos, vel, eff, t_head, t_bag = [], [], [], [], []
    for r in complete:
        sel = sels.get(r[2])
        if sel is None:
            sel = sels[r[2]] = [r[2].index(n) for n in names]
        pos.append(np.asarray(r[3], dtype=float)[sel])
        eff.append(np.asarray(r[5], dtype=float)[sel])
        if have_v:
            vel.append(np.asarray(r[4], dtype=float)[sel])
        t_head.append(r[0])
        t_bag.append(r[1])
    t = np.array(t_head if np.any(np.array(t_head) != 0) else t_bag)
    order = np.argsort(t, kind="stable")
    return Recording(t=t[order], names=names, position=np.array(pos)[order],
                     velocity=np.array(vel)[order] if have_v else None, effort=np.array(eff)[order], topic=topic,
                     skipped=len(rows) - len(complete),
                     all_names=tuple(sorted({n for r in rows for n in r[2]})))


def write_joint_states_bag(path, t, names, position, velocity, effort, storage="mcap", topic="/joint_states"):
    """Write a rosbag2 (``storage`` "mcap" or "sqlite3") with one
    sensor_msgs/JointState per row (header.stamp = t, receive time = t)."""
    rosbag2 = _rosbags("rosbag2")
    StoragePlugin, Writer = rosbag2.StoragePlugin, rosbag2.Writer
    ts = _typestore()
    JointState, Header, Time = (ts.types[k] for k in (JOINT_STATE, "std_msgs/msg/Header",
                                                      "builtin_interfaces/msg/Time"))
    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    names = list(names)
    empty = np.zeros(0)
    with Writer(Path(path), version=9, storage_plugin=plugin) as w:
        conn = w.add_connection(topic, JOINT_STATE, typestore=ts)
        for k, tk in enumerate(np.asarray(t, dtype=float)):
            ns = int(round(tk * 1e9))
            msg = JointState(header=Header(stamp=Time(sec=ns // 10 ** 9, nanosec=ns % 10 ** 9), frame_id=""),
                             name=names, position=np.asarray(position[k], dtype=float),
                             velocity=empty if velocity is None else np.asarray(velocity[k], dtype=float),
                             effort=empty if effort is None else np.asarray(effort[k], dtype=float))
            w.write(conn, ns, ts.serialize_cdr(msg, JOINT_STATE))
