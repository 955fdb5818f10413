"""The sim driver's /diagnostics values (no ROS here; doc/sim.md lists them)."""
from __future__ import annotations

import numpy as np


def status_values(drv, late, work) -> dict:
    """Key -> value of the driver ``drv`` (a :class:`~rbd_ros.sim.simulator.SimDriver`);
    ``late``: per step since the last status, its lateness (real time) or the wait for its
    command (lock-step), s; ``work``: per step, the loop's own time, s."""
    lat = np.asarray(late) * 1e3 if late else np.zeros(1)
    wk = np.asarray(work) * 1e6 if work else np.zeros(1)
    # state_stamp_s: the stamp of the latest joint state published (a client learns from
    # it how far the loop has run: in lock-step the simulated time)
    values = {"model": drv.model.name, "rate_hz": drv.rate, "sim_time_s": drv.data.time,
              "state_stamp_s": repr(drv.last_stamp_ns * 1e-9),
              **drv.stats, **drv.counts, "command_stale": drv.stale,
              "wrenches_applied": drv.wrench.applied, "wrench_active": drv.wrench.active is not None,
              "clamp_effort": drv.actuators.clamp, **drv.actuators.counts(drv.joints)}
    # lock-step: how long the loop waited for each command (the round trip through the
    # controller), and the commands that answered no awaited state; real time: step lateness
    if drv.lock_step:
        values.update({"lock_step": True, "lock_step_unmatched": drv.handshake.unmatched,
                       "command_wait_p50_ms": float(np.percentile(lat, 50)),
                       "command_wait_p99_ms": float(np.percentile(lat, 99)),
                       "command_wait_max_ms": float(np.max(lat))})
    else:
        values.update({"step_late_p50_ms": float(np.percentile(lat, 50)),
                       "step_late_p99_ms": float(np.percentile(lat, 99))})
    values.update({"step_work_p50_us": float(np.percentile(wk, 50)),
                   "step_work_p99_us": float(np.percentile(wk, 99))})
    return values
