"""The public functions made from the registry (``registry.ALGORITHMS``, ``api.build``):
``rnea``, ``rnea_into``, ``gravity``, ... one pair per entry, importable from here by
the core's own modules and re-exported by ``rbd_ros.core``."""
from .calls import arguments as api
from .calls.registry import ALGORITHMS, OTHER_KERNELS

PUBLIC = api.build(ALGORITHMS, [k for ks in OTHER_KERNELS.values() for k in ks])
globals().update(PUBLIC)
__all__ = list(PUBLIC)
