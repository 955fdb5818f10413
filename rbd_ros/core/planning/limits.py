"""Reading the planners' arguments: per-DOF limits, scales, the DOF names."""
import numpy as np

from ..calls.checked import describe, not_model
from ..model.checks import real_array, real_number


def dof_names(model):
    """(nv,) the name of the joint that owns each DOF (a planar joint's three DOFs share it)."""
    names = []
    for name, nv in zip(model.joint_names, model.joint_nv):
        names += [name] * nv
    return names


def limit_vector(model, value, name, unit, default=None):
    """(nv,) limits in DOF order from ``value``: None -> ``default`` (the URDF's; None:
    no limit), one number for every DOF, or nv numbers.  Every limit must be > 0;
    inf means none.  ValueError naming ``name`` (and the DOF) otherwise."""
    not_model(model)
    nv = model.nv
    if value is None:
        return np.full(nv, np.inf) if default is None else np.array(default, dtype=float)
    expected = f"a number or {nv} numbers in DOF order, each > 0 ({unit}; inf: no limit)"
    lim = real_array(value, name, expected)
    if lim.ndim == 0:
        lim = np.full(nv, float(lim))
    if lim.shape != (nv,):
        raise ValueError(f"{name}: expected {expected}, got {describe(value)}")
    bad = np.flatnonzero(~(lim > 0))            # NaN, zero, negative
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{name}[{k}] ({dof_names(model)[k]}): expected a number > 0 ({unit}; inf: no "
                         f"limit), got {lim[k]}")
    return lim


def scale_factor(value, name):
    """A scale in (0, 1] as a float; ValueError naming ``name`` otherwise."""
    x = real_number(value, name, "a number in (0, 1]")
    if not 0.0 < x <= 1.0:
        raise ValueError(f"{name}: expected a number in (0, 1], got {x}")
    return x
