"""Garbage-collector tuning shared by the node and the service worker."""
import gc


def freeze_heap():
    """Collect once, then move every object alive now (numba, llvmlite, rclpy, the model:
    ~120 000 objects) out of the cyclic garbage collector's reach (gc.freeze).  A full
    collection over them took 50-135 ms here and stalls the control path long enough to
    overflow a depth-10 joint_states queue at 1 kHz; afterwards it only scans what was
    allocated since.  Objects created later (new models) are collected as usual."""
    gc.collect()
    gc.freeze()
