"""Simulated samples for observer tests (the momentum observer in the core, the node's
control step): a computed-torque tracker and the implicit trapezoid rule on the momentum
form of the dynamics, solved to rounding (test_core_observer.py's module doc says why
that integrator integrates the true dynamics).  Written from rbd_ros.core's dynamics."""
import numpy as np

import rbd_ros.core as rbd


class Tracker:
    """Computed-torque tracking of q_d(t) = q0 + A sin(ω t + φ) (a fast motion: up to
    ~4 rad/s and ~60 rad/s²), on ``ctrl_model``; tau(t, q, v) is what the motors apply."""

    def __init__(self, ctrl_model, q0, seed=0, amp=0.4, freq=1.5, kp=400.0, kd=40.0):
        rng = np.random.default_rng(seed)
        n = ctrl_model.nv
        self.m = ctrl_model
        self.q0 = np.asarray(q0, float)
        self.A = amp * rng.uniform(0.5, 1.0, n)
        self.w = 2 * np.pi * freq * rng.uniform(0.7, 1.3, n)
        self.phi = rng.uniform(0, 2 * np.pi, n)
        self.kp, self.kd = kp, kd

    def desired(self, t):
        s, c = np.sin(self.w * t + self.phi), np.cos(self.w * t + self.phi)
        return self.q0 + self.A * s, self.A * self.w * c, -self.A * self.w ** 2 * s

    def __call__(self, t, q, v):
        qd, vd, ad = self.desired(t)
        return rbd.rnea(self.m, q, v, ad + self.kp * (qd - q) + self.kd * (vd - v))


def sample_times(T, h, irregular, seed=1):
    if not irregular:
        return np.arange(int(round(T / h)) + 1) * h
    rng = np.random.default_rng(seed)
    steps = rng.uniform(0.4 * h, 1.6 * h, int(2 * T / h))
    t = np.concatenate([[0.0], np.cumsum(steps)])
    return t[t <= T]


def momentum_force(model, q, v, tau):
    """f = τ + C(q, v)ᵀ v − g(q) (C from rbd.coriolis_matrix), p = H(q) v."""
    C = rbd.coriolis_matrix(model, q, v)
    return tau + C.T @ v - rbd.gravity(model, q), rbd.crba(model, q) @ v


def simulate_trapezoid(plant, tau_fn, times, q0, v0, held=False):
    """The implicit trapezoid rule on (q, p) (see the module doc), solved to rounding.
    ``held``: the torque is computed from the state at each step's start and held over
    the step (a digital controller), p_{k+1} = p_k + h/2 (f'_k + f'_{k+1}) + h τ_k with
    f' = Cᵀq̇ − g, and TAU[k] is the torque of the step that ended at sample k (what a
    driver reports; TAU[0]: the first step's)."""
    n = len(times)
    Q, V, TAU = (np.zeros((n, plant.nv)) for _ in range(3))
    q, v = np.array(q0, float), np.array(v0, float)
    tau = tau_fn(times[0], q, v)
    f, p = momentum_force(plant, q, v, 0.0 * tau if held else tau)
    Q[0], V[0], TAU[0] = q, v, tau
    for k in range(1, n):
        h = times[k] - times[k - 1]
        v_new = v + h * rbd.aba(plant, q, v, tau)
        extra = None
        for _ in range(60):
            q_new = q + h / 2 * (v + v_new)
            if held:
                f_new, _ = momentum_force(plant, q_new, v_new, 0.0 * tau)
                rhs = p + h / 2 * (f + f_new) + h * tau
            else:
                tau_new = tau_fn(times[k], q_new, v_new)
                f_new, _ = momentum_force(plant, q_new, v_new, tau_new)
                rhs = p + h / 2 * (f + f_new)
            v_next = np.linalg.solve(rbd.crba(plant, q_new), rhs)
            change = np.max(np.abs(v_next - v_new))
            v_new = v_next
            if extra is None and change <= 1e-12 * (1.0 + np.max(np.abs(v_next))):
                extra = 3               # then a few more: down to rounding (it stalls at ~1 ulp)
            elif extra is not None:
                extra -= 1
                if extra == 0:
                    break
        else:
            raise AssertionError("fixed-point iteration did not converge")
        q = q + h / 2 * (v + v_new)
        v = v_new
        if held:
            TAU[k] = tau                      # the torque of the step that ended here
            tau = tau_fn(times[k], q, v)      # the next step's
            f, p = momentum_force(plant, q, v, 0.0 * tau)
        else:
            tau = tau_fn(times[k], q, v)
            f, p = momentum_force(plant, q, v, tau)
            TAU[k] = tau
        Q[k], V[k] = q, v
    return Q, V, TAU
