"""``rbd.payload_capacity``: the heaviest payload a link can carry along a trajectory
within the effort limits.

For a payload of mass m with a fixed centre of mass and a fixed inertia per kg, every
joint torque is affine in m: τ(m) = τ0 + m τ1, with τ0 the torques without the
payload and τ1 those one kilogram of it adds (inverse dynamics is linear in the
inertial parameters).  |τ0_j + m τ1_j| <= τ_max_j is an interval of m per joint and
sample, so the capacity is a minimum of ratios: exact, no search.
"""
from dataclasses import dataclass

import numpy as np

from ..calls.checked import describe, not_model, vec
from ..calls.public import rnea
from ..model.robot_terms import check_payload
from .limits import dof_names, limit_vector


@dataclass(frozen=True, eq=False)
class PayloadCapacity:
    """``mass`` (kg): the largest payload for which every |τ| <= its limit at every
    sample; ``per_sample`` (N,) the largest at each sample alone (inf where no
    limited joint feels the payload); ``limiting_joint`` (name) and
    ``limiting_dof`` (index) of the joint whose limit sets ``mass``, at sample
    ``limiting_sample``.  ``feasible`` False: the motion exceeds a limit even
    without a payload; then ``mass`` is 0, ``per_sample`` is 0 where it does, and
    the limiting joint and sample are where it exceeds its limit most."""
    mass: float
    per_sample: np.ndarray
    limiting_joint: str
    limiting_dof: int
    limiting_sample: int
    feasible: bool


def _state(x, n, name, shape):
    if x is None:
        return np.zeros(shape)
    x = vec(x, n, name)
    if x.shape != shape:
        raise ValueError(f"{name}: expected shape {shape} like q, got {describe(x)}")
    return x


def payload_capacity(model, link, q, v=None, a=None, *, com=(0.0, 0.0, 0.0), inertia=None, effort_limits=None):
    """The largest payload mass on URDF link ``link`` for which every joint torque
    stays within its effort limit at every sample of the trajectory (q, v, a).

    ``q``: (nq,) or an (N, nq) batch; ``v``, ``a``: the same N (None: zeros, a
    static hold).  ``com``: the payload's centre of mass in the link frame (m);
    ``inertia``: its rotational inertia *per kg* about the com, link axes (m², a 3x3
    matrix or ixx ixy ixz iyy iyz izz; None: a point mass).  The payload replaces
    any the model already carries on ``link``; other payloads, armature and the URDF
    friction (damping · v + friction · sign(v)) count.  ``effort_limits``: nv
    numbers or one for all, > 0 (N·m or N; inf: none; None: the URDF's).

    τ is affine in the mass (module docstring), so the answer is exact: at ``mass``
    some |τ_j| equals its limit, above it one exceeds it.  Returns a
    :class:`PayloadCapacity`.  Raises ValueError naming the argument: an unknown
    link (with the closest names), a bad com or inertia, bad q, v, a, a zero,
    negative or NaN limit; ``effort_limits`` also when no joint with a finite
    limit feels a payload on ``link`` (an unbounded capacity).  A motion that
    exceeds a limit even without a payload is no error: ``mass`` 0,
    ``feasible`` False."""
    not_model(model)
    per_kg = np.zeros((3, 3)) if inertia is None else inertia
    _, com, per_kg = check_payload(model, link, 1.0, com, per_kg)
    q = vec(q, model.nq, "q")
    n = model.nv
    shape = q.shape[:-1] + (n,)
    v = _state(v, n, "v", shape)
    a = _state(a, n, "a", shape)
    tmax = limit_vector(model, effort_limits, "effort_limits", "N m or N", model.effort_limit)
    base = model.without_payload(link) if link in model.payloads else model
    rigid0 = rnea(base, q, v, a)
    tau1 = rnea(base.with_payload(link, 1.0, com, per_kg), q, v, a) - rigid0
    tau0 = rigid0 + model.damping * v + model.friction * np.sign(v)
    tau0, tau1 = np.atleast_2d(tau0), np.atleast_2d(tau1)
    with np.errstate(divide="ignore", invalid="ignore"):
        load = np.abs(tau0) / tmax                     # the unloaded torques against their limits
        # the mass at which tau0 + m tau1 reaches the limit on the side tau1 pushes towards
        bound = np.where(tau1 != 0.0, (np.sign(tau1) * tmax - tau0) / tau1, np.inf)
    bound[~(bound >= 0.0)] = np.inf                   # inf - inf with an unlimited joint
    over = load > 1.0
    bound[over] = 0.0                                  # even no payload fits there
    per_sample = bound.min(axis=1)
    if np.any(over):
        ii, jj = np.unravel_index(int(np.argmax(np.where(over, load, 0.0))), load.shape)
        i, j = int(ii), int(jj)
    else:
        i = int(per_sample.argmin())
        j = int(bound[i].argmin())
    mass = float(per_sample[i])
    if not np.isfinite(mass):
        raise ValueError(f"effort_limits: no joint with a finite effort limit feels a payload on link {link!r}; "
                         "its capacity is unbounded")
    return PayloadCapacity(mass=mass, per_sample=per_sample, limiting_joint=dof_names(model)[j],
                           limiting_dof=j, limiting_sample=i, feasible=not np.any(over))
