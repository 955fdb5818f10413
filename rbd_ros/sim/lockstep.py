"""Lock-step stepping of the simulated driver (no ROS here).

In lock-step mode the driver publishes a joint state, then waits for the command that
answers *that* state before it steps the physics again.  A command answers a state when
its stamp equals the state's stamp: the commands come as sensor_msgs/JointState
(``effort_command_state``: ``name``, ``effort``, ``header.stamp``), which is what the
dynamics node publishes on ``~/effort_command_state`` (stamped with the joint_states
stamp it was computed from).  The unstamped Float64MultiArray input is not used in
lock-step: a rule like "the first command after I published state k is k's" takes a
late answer to state k-1 (after a timeout) for k's, and any other publisher's message
too; an equal stamp cannot be mistaken.

:class:`CommandOrder` checks a stamped command and puts it into the driver's joint
order; :class:`Handshake` is the rendezvous between the physics loop (``expect`` before
publishing, ``wait`` after) and the thread that receives the commands (``offer``).
"""
from __future__ import annotations

import threading
import time

import numpy as np

# why a stamped command is dropped (the driver's /diagnostics counters)
WRONG_JOINTS = "dropped_wrong_joints"
WRONG_LENGTH = "dropped_wrong_length"
NOT_FINITE = "dropped_not_finite"


class CommandOrder:
    """Stamped commands by joint name -> efforts in ``joints`` order."""

    def __init__(self, joints):
        self.joints = list(joints)
        self._index = {n: i for i, n in enumerate(self.joints)}
        self._names = None           # the last message's names and their permutation (reused)
        self._perm = None

    def order(self, names, efforts):
        """``(efforts in joints order, None, None)`` or ``(None, reason, text)`` when the
        command is refused: ``names`` must be the driver's joints, each once, in any
        order (WRONG_JOINTS), with one finite effort per name (WRONG_LENGTH, NOT_FINITE)."""
        names = list(names)
        if names != self._names:
            perm = [self._index.get(n, -1) for n in names]
            if len(names) != len(self.joints) or -1 in perm or len(set(perm)) != len(perm):
                return None, WRONG_JOINTS, (f"joints {names}, expected each of {self.joints} once "
                                            f"(in any order)")
            self._names, self._perm = names, np.argsort(np.array(perm, dtype=np.intp))
        e = np.asarray(efforts, dtype=np.float64)
        if e.shape != (len(names),):
            return None, WRONG_LENGTH, f"{e.size} efforts for {len(names)} joints"
        if not np.all(np.isfinite(e)):
            return None, NOT_FINITE, f"an effort is not finite: {e.tolist()}"
        return e[self._perm], None, None


class Handshake:
    """One state out, its command in.  The loop calls :meth:`expect` with the stamp of the
    state it is about to publish, publishes, then :meth:`wait`\\ s; the receiving thread
    calls :meth:`offer` for every valid command.  Only the first command stamped with the
    expected stamp is taken; every other one (a late answer to an earlier state, a second
    answer, a foreign publisher's) is counted in :attr:`unmatched` and ignored."""

    def __init__(self):
        self._cond = threading.Condition()
        self._await = None           # stamp (int ns) of the state waiting for its command
        self._got = None
        self.matched = 0
        self.unmatched = 0

    def expect(self, stamp_ns: int) -> None:
        """The next command to take is the one stamped ``stamp_ns`` (call before publishing
        the state, so that its answer cannot come first)."""
        with self._cond:
            self._await = int(stamp_ns)
            self._got = None

    def offer(self, stamp_ns: int, effort) -> bool:
        """A command stamped ``stamp_ns``: True if it is the awaited one (it is kept)."""
        with self._cond:
            if self._await is not None and self._got is None and int(stamp_ns) == self._await:
                self._got = effort
                self.matched += 1
                self._cond.notify_all()
                return True
            self.unmatched += 1
            return False

    def wait(self, timeout: float, stop=None):
        """The awaited command (efforts), or None after ``timeout`` s without it or as soon as
        ``stop()`` (checked every 0.1 s) is true; either way nothing is awaited afterwards
        until the next :meth:`expect`."""
        end = time.monotonic() + timeout
        with self._cond:
            while self._got is None:
                left = end - time.monotonic()
                if left <= 0 or (stop is not None and stop()):
                    break
                self._cond.wait(min(left, 0.1))
            got, self._got, self._await = self._got, None, None
            return got
