"""The momentum observer's step (rbd_ros.core.estimation.observer.MomentumObserver.update), compiled.

Given this sample's H(q) (nv x nv), g(q) and C(q, v)ᵀ v (computed by the caller
with ``compensation_into`` and ``coriolis_transpose_v_into``), one call does the
rest of the update of the observer's module docstring:

    p_k = H v,   β_k = τ − τ_f(v) + Cᵀv − g
    r_k = K (p_k − m_{k−1} − h/2 (β_{k−1} + r_{k−1} + β_k [+ τ_k − τ_{k−1}])) / (1 + K h / 2)
    m_k = m_{k−1} + h/2 (β_{k−1} + r_{k−1} + β_k [+ τ_k − τ_{k−1}] + r_k)

(the bracket with ``tau_held``), with the restarts: returns one of the codes below;
on every code but OK the residual ``r`` is zero.  ``st`` holds the scalar state
[started (0/1), t_{k−1}].  Allocates nothing.
"""
import math

from numba import njit

from .spatial import ENTRY, JIT

OK, STARTED, GAP, JUMP, TIME, NOT_FINITE = 0, 1, 2, 3, 4, 5


@njit(**JIT)
def _restart(t, q, tau, p, b, st, q_prev, m, r, beta, tau_prev, code):
    """State re-initialised at this sample: m = p, r = 0."""
    for i in range(r.shape[0]):
        r[i] = 0.0
        m[i] = p[i]
        beta[i] = b[i]
        tau_prev[i] = tau[i]
    for i in range(q.shape[0]):
        q_prev[i] = q[i]
    st[0] = 1.0
    st[1] = t
    return code


@njit(**ENTRY)
def observer_step_k(H, g, ctv, t, q, v, tau, K, damping, coulomb, eps, friction, tau_held, max_gap, max_jump,
                    st, q_prev, m, r, beta, tau_prev, p, b, scratch):
    """One update; ``p``, ``b`` (nv,) hold p_k, β_k on return, ``scratch`` (2, nv).
    Returns a code."""
    nv = r.shape[0]
    finite = math.isfinite(t)
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            s += H[i, j] * v[j]
        p[i] = s
        bi = tau[i] - g[i] + ctv[i]
        if friction:
            bi -= damping[i] * v[i] + coulomb[i] * math.tanh(v[i] / eps)
        b[i] = bi
        finite = finite and math.isfinite(bi) and math.isfinite(s) and math.isfinite(tau[i])
    for i in range(q.shape[0]):
        finite = finite and math.isfinite(q[i])
    if not finite:
        for i in range(nv):
            r[i] = 0.0
        st[0] = 0.0
        return NOT_FINITE
    if st[0] == 0.0:
        return _restart(t, q, tau, p, b, st, q_prev, m, r, beta, tau_prev, STARTED)
    h = t - st[1]
    if not h > 0.0:
        return _restart(t, q, tau, p, b, st, q_prev, m, r, beta, tau_prev, TIME)
    if h > max_gap:
        return _restart(t, q, tau, p, b, st, q_prev, m, r, beta, tau_prev, GAP)
    for i in range(q.shape[0]):
        if abs(q[i] - q_prev[i]) > max_jump:
            return _restart(t, q, tau, p, b, st, q_prev, m, r, beta, tau_prev, JUMP)
    half = 0.5 * h
    for i in range(nv):                 # r_k and m_k into scratch, state written once all are finite
        w = beta[i] + r[i] + b[i]
        if tau_held:
            w += tau[i] - tau_prev[i]
        mi = m[i] + half * w
        ri = K[i] * (p[i] - mi) / (1.0 + K[i] * half)
        mi += half * ri
        if not (math.isfinite(ri) and math.isfinite(mi)):
            for j in range(nv):
                r[j] = 0.0
            st[0] = 0.0
            return NOT_FINITE
        scratch[0, i] = ri
        scratch[1, i] = mi
    for i in range(nv):
        r[i] = scratch[0, i]
        m[i] = scratch[1, i]
        beta[i] = b[i]
        tau_prev[i] = tau[i]
    for i in range(q.shape[0]):
        q_prev[i] = q[i]
    st[1] = t
    return OK

