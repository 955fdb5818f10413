"""The generalized-momentum observer: external joint torques from q, q̇ and the joint torques.

De Luca & Mattone (2003); Haddadin, De Luca, Albu-Schäffer, "Robot
Collisions" (T-RO 2017).  Along any motion of a rigid-body model

    ṗ = τ + τ_ext + C(q, q̇)ᵀ q̇ − g(q),        p = H(q) q̇

(H includes the model's armature; Ḣ = C + Cᵀ for the Christoffel-symbol C
that :func:`rbd_ros.core.coriolis_matrix` returns).  The residual

    r(t) = K ( p(t) − p(0) − ∫₀ᵗ (τ − τ_f + Cᵀq̇ − g + r) ds )

obeys ṙ = K (τ_ext − r): a first-order lag of τ_ext with gain K (1/s, time
constant 1/K), without joint accelerations and without inverting H.
τ_f is the opt-in friction law of :func:`rbd_ros.core.friction`.

Discrete form (sample k at stamp t_k, step h = t_k − t_{k−1}, any h > 0),
with β = τ − τ_f + Cᵀq̇ − g and m the predicted momentum p(0) + ∫(β + r):

    m_k = m_{k−1} + h/2 (β_{k−1} + r_{k−1} + β_k + r_k)      (trapezoid rule)
    r_k = K (p_k − m_k)

solved for r_k in closed form: r_k = K (p_k − m_{k−1} − h/2 (β_{k−1} + r_{k−1}
+ β_k)) / (1 + K h / 2).  The trapezoid rule makes the β part second-order
accurate (its error ~h²/12 |β̈| per unit time) and the r part the bilinear
(Tustin) image of the continuous filter: stable for every K h > 0, free of
sign-alternating ringing for K h < 2 (e.g. K < 2000 1/s at 1 kHz).

The torque's share of the integral: by default the trapezoid of the samples,
right for a torque that varies continuously (a joint torque sensor).  If the
torque reaching the joints is instead held constant over each step (a
zero-order hold, as a digital controller applies its command), the trapezoid
misses the true impulse h τ by h/2 (τ_k − τ_{k−1}) per step: the estimate is
off by about h/2 · |dτ/dt| (0.5 ms × the torque rate at 1 kHz), a lag.  With
``tau_held=True`` the observer takes each sample's τ as the torque held over
the step that *ends* at the sample (what a driver reports after applying a
command: rbd_ros.sim, a ros2_control effort command read back) and integrates
h τ_k exactly; the state-dependent terms stay on the trapezoid rule.

Re-initialisation (p(0) = the current p, integral 0, r = 0; the update then
returns zeros and :attr:`MomentumObserver.status` says why): the first sample
and the first after :meth:`~MomentumObserver.reset`; a step longer than
``max_gap``; a joint moving more than ``max_jump`` between samples; a stamp not
after the previous one; non-finite input (or input so large the dynamics
overflow: no state is kept then, the next finite sample starts again).  An
update never returns a non-finite number.
"""
import math

import numpy as np

from ..algorithms import observer as _k
from ..calls.control_loop import compensation_into, dof_indices
from ..calls.public import coriolis_transpose_v_into
from ..model.model import Model

_F8 = np.dtype(np.float64)

# status values (MomentumObserver.status): the last update's outcome
OK = "ok"                      # an estimate
STARTED = "started"            # first sample (after construction or reset()): zeros, state initialised
GAP = "gap"                    # step longer than max_gap: re-initialised, zeros
JUMP = "jump"                  # |q_k - q_{k-1}| > max_jump on some coordinate: re-initialised, zeros
TIME = "time_not_increasing"   # t_k <= t_{k-1}: re-initialised, zeros
NOT_FINITE = "not_finite"      # NaN/inf input or an overflowing result: zeros, uninitialised
RESTARTS = (STARTED, GAP, JUMP, TIME, NOT_FINITE)
_STATUS = {_k.OK: OK, _k.STARTED: STARTED, _k.GAP: GAP, _k.JUMP: JUMP, _k.TIME: TIME, _k.NOT_FINITE: NOT_FINITE}


class MomentumObserver:
    """Discrete-time generalized-momentum observer of the external joint torques.

    ``MomentumObserver(model, gain, *, friction=False, velocity_eps=1e-3,
    max_gap=0.05, max_jump=0.25, tau_held=False)``

    ``model``   an :class:`~rbd_ros.core.Model`; its armature and payloads are
                part of H and g (give the observer the model the robot really is).
    ``gain``    K in 1/s, a number or nv numbers (one per DOF), finite and > 0.
    ``friction`` True: τ is the motor-side torque (commanded, or current × torque
                constant) and the model's ``damping``/``friction`` law
                (:func:`rbd_ros.core.friction`, with ``velocity_eps``) is
                subtracted from it; False (default): τ is what the joints apply
                to the links (a link-side torque sensor, or a frictionless sim).
    ``max_gap`` s; a longer step between stamps re-initialises.
    ``max_jump`` rad or m; a larger change of any q coordinate between two
                samples re-initialises (a continuous joint reported wrapped to
                ±π does too).
    ``tau_held`` False: τ is sampled from a continuous signal (trapezoid rule);
                True: each τ was held constant over the step ending at its
                sample (see the module doc).
    Raises ValueError naming the bad argument.

    :meth:`update` ``(t, q, v, tau)`` -> τ̂_ext (nv,) in model DOF order.  ``t``
    the sample's stamp in s (any origin, increasing); ``q`` (nq,), ``v`` and
    ``tau`` (nv,) in model order.  Returns the observer's own read-only buffer,
    overwritten by the next update (copy it to keep it).  With C-contiguous
    float64 arrays an update allocates nothing; other array-likes are converted.
    Wrong lengths raise ValueError (a programming error); bad numbers do not
    (see the module doc).  After each update :attr:`status` is one of
    ``OK`` (an estimate) or a restart reason in ``RESTARTS`` (the output is zeros),
    :attr:`valid` is ``status == OK``, and :attr:`restarts` counts the
    restarts by reason.  State: O(nv) numbers; not thread-safe (one observer
    per stream).
    """

    def __init__(self, model, gain, *, friction=False, velocity_eps=1e-3, max_gap=0.05, max_jump=0.25,
                 tau_held=False):
        if not isinstance(model, Model):
            raise TypeError(f"model: expected an rbd_ros.core.Model, got {type(model).__name__}")
        nv, nq = model.nv, model.nq
        try:
            K = np.array(np.broadcast_to(np.asarray(gain, dtype=float), (nv,)))
        except (TypeError, ValueError):
            raise ValueError(f"gain: expected a number or {nv} numbers (1/s), got {gain!r}"[:200]) from None
        if not np.all(np.isfinite(K) & (K > 0)):
            raise ValueError(f"gain: expected finite numbers > 0 (1/s), got {K.tolist()}")
        self.model = model
        self.gain = K
        self.friction = bool(friction)
        self.tau_held = bool(tau_held)
        self.velocity_eps = self._positive(velocity_eps, "velocity_eps", "rad/s")
        self.max_gap = self._positive(max_gap, "max_gap", "s")
        self.max_jump = self._positive(max_jump, "max_jump", "rad or m")
        self._sq, self._sv = (nq,), (nv,)
        self._dofs = dof_indices(model)
        self._damping = np.array(model.damping, dtype=float)
        self._coulomb = np.array(model.friction, dtype=float)
        z = np.zeros
        # state (the compiled step, algorithms/observer.py, updates it in place)
        self._r = z(nv)                  # r_k
        self._m = z(nv)                  # predicted momentum p(0) + ∫(β + r)
        self._beta = z(nv)               # β_{k-1}
        self._tau_prev = z(nv)           # τ_{k-1}
        self._q_prev = z(nq)
        self._st = z(2)                  # [started (0/1), t_{k-1}]
        # scratch
        self._g = z(nv)
        self._H = z((nv, nv))
        self._p = z(nv)
        self._ctv = z(nv)
        self._b = z(nv)
        self._scratch = z((2, nv))
        self._out = self._r.view()
        self._out.setflags(write=False)
        self.status = STARTED
        self.restarts = {k: 0 for k in RESTARTS}

    @staticmethod
    def _positive(x, name, unit):
        try:
            y = float(x)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected a number > 0 ({unit}), got {x!r}"[:200]) from None
        if not (math.isfinite(y) and y > 0):
            raise ValueError(f"{name}: expected a finite number > 0 ({unit}), got {y}")
        return y

    @property
    def valid(self):
        """True if the last update returned an estimate (not zeros after a restart)."""
        return self.status == OK

    def reset(self):
        """Forget the state: the next update starts again (returns zeros, status STARTED)."""
        self._st[0] = 0.0
        self._r.fill(0.0)

    # ------------------------------------------------------------ update
    def _arg(self, x, shape, name):
        """``x`` as it is if a plain array (what the compiled step is compiled for: C-contiguous,
        aligned, writable, native float64), else a copy that is (never a second compile)."""
        if type(x) is np.ndarray and x.dtype is _F8 and x.shape == shape and x.flags.c_contiguous \
                and x.flags.writeable and x.flags.aligned:
            return x
        try:
            y = np.array(x, dtype=np.float64, order="C")
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected {shape[0]} real numbers, got {x!r}"[:200]) from None
        if y.shape != shape:
            raise ValueError(f"{name}: expected {shape[0]} numbers (model order), got shape {y.shape}")
        return y

    def update(self, t, q, v, tau):
        """τ̂_ext (nv,) after the sample (t, q, v, tau); see the class doc."""
        q = self._arg(q, self._sq, "q")
        v = self._arg(v, self._sv, "v")
        tau = self._arg(tau, self._sv, "tau")
        try:
            t = float(t)
        except (TypeError, ValueError):
            raise ValueError(f"t: expected a number (s), got {t!r}"[:200]) from None
        try:
            compensation_into(self.model, q, v, self._dofs, self._g, None, self._H)
            coriolis_transpose_v_into(self.model, q, v, self._ctv)
        except ValueError:          # non-finite q or v, or dynamics that overflow
            code = _k.NOT_FINITE
            self._r.fill(0.0)
            self._st[0] = 0.0
        else:
            code = _k.observer_step_k(self._H, self._g, self._ctv, t, q, v, tau, self.gain, self._damping,
                                      self._coulomb, self.velocity_eps, self.friction, self.tau_held,
                                      self.max_gap, self.max_jump, self._st, self._q_prev, self._m, self._r,
                                      self._beta, self._tau_prev, self._p, self._b, self._scratch)
        status = _STATUS[code]
        self.status = status
        if code:
            self.restarts[status] += 1
        return self._out
