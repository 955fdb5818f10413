"""The torque the simulated actuators apply in a step (no ROS here): the commanded effort
plus, optionally, a joint PD of the driver's own (the command is then its feed-forward),
clamped at the effort limits, with the clamped steps counted per joint."""
from __future__ import annotations

import numpy as np


class Actuators:
    """``limits``: one effort limit (N m or N) per joint of the driver's ``joints``, +inf for
    none (a joint whose URDF ``<limit effort>`` is 0 or missing); ``clamp``: apply them.

    :meth:`apply` is called once per physics step.  A joint counts as clamped in a step
    when its requested effort is *at or beyond* its limit (a command that a controller
    already clipped to the limit counts: the actuator is saturated); :attr:`clamped` holds
    the count per joint, :attr:`clamped_steps` the steps with at least one."""

    def __init__(self, limits, clamp: bool = True):
        self.limits = np.array(limits, dtype=np.float64)
        if self.limits.ndim != 1 or np.any(np.isnan(self.limits)) or np.any(self.limits <= 0):
            raise ValueError(f"effort limits: expected one number > 0 (or inf) per joint, got {self.limits.tolist()}")
        self.clamp = bool(clamp)
        self.clamped = np.zeros(self.limits.size, dtype=np.int64)
        self.clamped_steps = 0
        self._at = np.zeros(self.limits.size, dtype=bool)
        self._abs = np.zeros(self.limits.size)
        self.kp = self.kd = self.target = None

    def set_pd(self, kp, kd, target) -> None:
        """A joint PD inside the actuators: each step adds kp (target - q) - kd qd (one gain,
        or one per joint; N m/rad and N m s/rad, or N/m and N s/m), before clamping.
        ValueError naming pd_kp / pd_kd / pd_target."""
        n = self.limits.size
        arrays = []
        for name, x in (("pd_kp", kp), ("pd_kd", kd), ("pd_target", target)):
            a = np.array(x, dtype=np.float64).reshape(-1)
            if name != "pd_target" and a.size == 1:
                a = np.full(n, a[0])
            if a.shape != (n,) or not np.all(np.isfinite(a)) or (name != "pd_target" and np.any(a < 0)):
                what = (f"{n} finite numbers (one per joint)" if name == "pd_target"
                        else f"one number >= 0 or {n} (one per joint)")
                raise ValueError(f"{name}: expected {what}, got {a.tolist()}")
            arrays.append(a)
        self.kp, self.kd, self.target = arrays

    def apply(self, requested, out, q=None, v=None) -> None:
        """``out`` = ``requested`` (+ the PD at joint positions ``q`` and velocities ``v``)
        clamped to +-limits (when clamping); counts the step."""
        out[:] = requested
        if self.kp is not None:
            out += self.kp * (self.target - q) - self.kd * v
        if not self.clamp:
            return
        at = np.greater_equal(np.abs(out, out=self._abs), self.limits, out=self._at)
        if at.any():
            self.clamped += at
            self.clamped_steps += 1
            np.clip(out, -self.limits, self.limits, out=out)

    def counts(self, joints) -> dict:
        """{"clamped_steps": n, "clamped_steps/<joint>": n per joint} for /diagnostics."""
        return {"clamped_steps": self.clamped_steps,
                **{f"clamped_steps/{j}": int(c) for j, c in zip(joints, self.clamped)}}
