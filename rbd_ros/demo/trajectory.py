"""The demo's start pose and trajectory (no ROS): q0 + A (1 - cos(2 pi k t / D)) / 2 per
joint, which starts and ends at rest; :func:`settle` brings the arm of a
:class:`~rbd_ros.demo.closed_loop.ClosedLoop` to rest at q0."""
from __future__ import annotations

import numpy as np

Q0 = (0.0, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0)     # elbow bent, wrist up: gravity loads every link
TRAJ_S = 4.0
TRAJ_AMP = (0.4, 0.3, 0.4, 0.3, 0.4, 0.4, 0.4)
TRAJ_K = (1, 1, 2, 1, 2, 2, 2)


def reference(t: float, q0=Q0, duration=TRAJ_S, amp=TRAJ_AMP, k=TRAJ_K):
    """(q, v, a) of the demo trajectory at t seconds after its start (q0 at rest outside)."""
    q0 = np.asarray(q0, dtype=float)
    if t <= 0.0 or t >= duration:
        return q0.copy(), np.zeros(q0.size), np.zeros(q0.size)
    w = 2.0 * np.pi * np.asarray(k, dtype=float) / duration
    a_ = np.asarray(amp, dtype=float)
    return (q0 + 0.5 * a_ * (1.0 - np.cos(w * t)), 0.5 * a_ * w * np.sin(w * t),
            0.5 * a_ * w * w * np.cos(w * t))


def reference_batch(t, **kw):
    """reference() at each time of the array t: (Q, V, A) of shape (len(t), 7)."""
    out = [reference(float(x), **kw) for x in np.asarray(t)]
    return tuple(np.array([o[i] for o in out]) for i in range(3))


def settle(loop, q0=Q0, tol=5e-3, vtol=5e-2, hold=0.3, timeout=60.0) -> bool:
    """Computed torque to q0 (the driver steps from start-up on, so the arm has fallen and
    swung until the node's first command reached it) until the arm has stayed within tol
    rad of q0 and vtol rad/s of rest for `hold` s."""
    loop.desired_fn = lambda t: reference(0.0, q0)
    res = loop.set_params(command_mode="computed_torque")
    assert all(ok for ok, _ in res), res
    q0 = np.asarray(q0)

    def still():   # under command (the driver applies an effort) and at rest near q0
        t1 = loop.now()
        t, Q, V, E = loop.window(t1 - hold, t1)
        return len(t) > 10 and t[-1] - t[0] > 0.8 * hold and np.all(np.any(E != 0.0, axis=1)) \
            and np.max(np.abs(Q - q0)) < tol and np.max(np.abs(V)) < vtol
    return loop._wait(still, timeout, loop.node_proc)
