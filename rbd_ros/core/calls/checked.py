"""Running a kernel over the rows of a batch: row-range kernels on Python threads
(``run_batch``), or one call per row for entries without a batch kernel (``run_rows``)."""
import threading
from concurrent.futures import ThreadPoolExecutor

from numba import config as numba_config
from numba import get_num_threads

# Batches: serial row-range kernels (cached by numba, GIL released) run by Python
# threads, one contiguous range of rows per thread; the calling thread runs the first.
# A thread gets at least MIN_ROWS_PER_THREAD rows: below that, starting it costs more
# than it saves.
MIN_ROWS_PER_THREAD = 16
_pool = None
_pool_lock = threading.Lock()


def _thread_pool():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, numba_config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="rbd_batch")
        return _pool


def run_batch(kernel, N, *args) -> None:
    """``kernel(*args, start, stop)`` over rows 0..N-1, split over up to
    ``numba.get_num_threads()`` threads (this one included)."""
    nth = min(get_num_threads(), N // MIN_ROWS_PER_THREAD)
    if nth <= 1:
        kernel(*args, 0, N)
        return
    chunk = -(-N // nth)
    pool = _thread_pool()
    futures = [pool.submit(kernel, *args, k * chunk, min(N, (k + 1) * chunk)) for k in range(1, nth)]
    try:
        kernel(*args, 0, chunk)
    finally:
        for f in futures:
            f.result()


def run_rows(kernel, md, ws, arrays, extra, out, status) -> None:
    """status[n] = kernel(md, ws, *row n of arrays, *extra, out[n]) for every row (entries
    without a batch kernel; the common arities spelled out: a loop iteration costs less)."""
    if not extra and len(arrays) == 2:
        a, b = arrays
        for n in range(out.shape[0]):
            status[n] = kernel(md, ws, a[n], b[n], out[n])
    elif not extra and len(arrays) == 3:
        a, b, c = arrays
        for n in range(out.shape[0]):
            status[n] = kernel(md, ws, a[n], b[n], c[n], out[n])
    else:
        for n in range(out.shape[0]):
            status[n] = kernel(md, ws, *(x[n] for x in arrays), *extra, out[n])
