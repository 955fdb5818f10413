"""The non-array parameters of the public functions (a frame name, a reference frame)
and the values the kernels take in place of absent arguments.

An :class:`Option` says how its value becomes kernel arguments; the checked path
(``checked.option_args``) converts a value once per model and caches it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numba.core import types as nbt
from numpy.typing import NDArray

if TYPE_CHECKING:       # annotations only
    from ..model.model import Model

NO_FEXT = np.zeros((0, 6))        # no f_ext: a (0, 6) array of per-body wrenches
NO_FEXT3 = np.zeros((0, 0, 6))    # ... and for a batch

REQUIRED = object()      # an option without a default


@dataclass(frozen=True)
class Option:
    """A non-array parameter of a public function (a frame name, a reference) and how
    it becomes kernel arguments: ``convert(model, value) -> tuple`` of plain values
    whose numba ``types`` the kernel is compiled for.  The converted arguments follow
    the state arrays in the kernel call; they are cached per model and value."""
    name: str
    default: object
    convert: Callable[[Model, Any], tuple[Any, ...]]
    types: tuple[Any, ...]
    example: Callable[[Model], Any]   # example(model) -> a valid value (docs, the registry's tests)


def _frame(model: Model, link: object) -> tuple[int, NDArray[np.float64]]:
    """A URDF link name -> (its body, its placement in that body as 12 numbers: R row-major, p)."""
    if not isinstance(link, str) or link not in model._link_pos:
        close = model.close_links(link) if isinstance(link, str) else []
        hint = f"; did you mean {close}?" if close else ""
        raise ValueError(f"frame: expected the name of a link of the model, got {link!r}{hint}")
    lp = model.tree.links[model._link_pos[link]]
    return lp.body, np.concatenate([np.asarray(lp.R, dtype=np.float64).reshape(9),
                                    np.asarray(lp.p, dtype=np.float64)])


REFERENCES = ("world", "local", "local_world_aligned")


def _reference(model: Model, ref: object) -> tuple[int]:
    """Pinocchio's reference frames, by name -> 0 world, 1 local, 2 local_world_aligned."""
    if ref not in REFERENCES:
        raise ValueError(f"reference: expected one of {REFERENCES}, got {ref!r}")
    return (REFERENCES.index(ref),)


_V1 = nbt.Array(nbt.float64, 1, "C")


def _deepest_link(model: Model) -> str:
    """The URDF link on the body with the most ancestors (a robot's tool flange, usually)."""
    depth = [0] * model.nbodies
    for i, p in enumerate(model.tree.parent):
        depth[i] = 0 if p < 0 else depth[p] + 1
    links = [lp for lp in model.tree.links if lp.body >= 0] or list(model.tree.links)
    return max(links, key=lambda lp: depth[lp.body] if lp.body >= 0 else -1).name


FRAME = Option("frame", REQUIRED, _frame, (nbt.int64, _V1), _deepest_link)
REFERENCE = Option("reference", "local_world_aligned", _reference, (nbt.int64,), lambda model: "local")
