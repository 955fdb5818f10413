"""Garbage-collector tuning shared by the node and the service worker."""
import gc


def freeze_heap():
    """Collect once, then move every object alive now (numba, llvmlite, rclpy, the model:
    ~120 000 objects) out of the cyclic garbage collector's reach (gc.freeze), so that no
    later collection scans them (a full one would stall the control path: bench/RESULTS.md);
    afterwards it only scans what was allocated since.  Objects created later (new models)
    are collected as usual."""
    gc.collect()
    gc.freeze()
