"""Sampled joint signals -> identification samples (ROS-free; used by the
``rbd_identify`` tools on recorded bags and by the node on the joint states it
received).

``prepare(t, q, v, tau)``: a zero-phase low-pass (scipy.signal.filtfilt of a
Butterworth filter, ``cutoff_hz``, default 10 Hz: 5-10x the top frequency of
usual excitation trajectories, <= 1-2 Hz) applied to q, qd and tau alike (so
their delays match: none), qdd by central differences of the filtered qd, the
filter's edges trimmed, then decimated to ``output_rate`` (default 10x the
cut-off: the filtered signals carry nothing above the cut-off, and
neighbouring samples at 1 kHz repeat each other).  Gaps in the stamps (> 5
sample periods, or ``max_gap``) split the samples into segments filtered apart.

scipy is the identification extra's (``pip install -e '.[ident]'``); it is
imported when ``prepare`` runs.
"""
from dataclasses import dataclass

import numpy as np

DEFAULT_CUTOFF_HZ = 10.0
GAP_PERIODS = 5                 # a step in the stamps longer than this many sample periods splits the samples


class RecordingError(ValueError):
    """The recording (or the samples) cannot be used; the text says what is missing."""


@dataclass
class Samples:
    """Filtered, differentiated, decimated samples ready for ``identify``: t (N,),
    q (N, k), v, a, tau (N, k)."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    tau: np.ndarray


def prepare(t, q, v, tau, *, cutoff_hz=DEFAULT_CUTOFF_HZ, order=4, output_rate=None, trim=None, max_gap=None):
    """Samples from raw (t (N,), q (N, k), v (N, k) or None, tau (N, k)).

    Uniform resampling at the median sample period (linear interpolation),
    Butterworth low-pass of ``order`` at ``cutoff_hz`` run forwards and
    backwards (scipy.signal.filtfilt: no delay), qd = filtered v (or d/dt of
    the filtered q when v is None), qdd = central differences of qd, ``trim``
    seconds (default 4 / cutoff: the filter's edge transients, seen in qdd)
    dropped at each end of each segment, then every k-th sample kept for
    ``output_rate`` (default 10 x cutoff; None or >= the sample rate: no
    decimation).  A step in the stamps longer than ``max_gap`` seconds (default
    ``GAP_PERIODS`` sample periods) splits the samples into segments filtered apart
    (each loses ``trim`` at both ends); shorter gaps are bridged by the linear
    interpolation.  Repeated stamps keep their first sample.  RecordingError:
    fewer than 2 samples, unsorted stamps, ``cutoff_hz`` not below half the
    sample rate, or no stretch without gaps long enough to filter."""
    from scipy.signal import butter, filtfilt  # heavy optional dependency (the identification extra)
    t = np.asarray(t, dtype=float)
    if t.size < 2:
        raise RecordingError(f"recording: {t.size} samples, need many more")
    if not np.all(np.diff(t) >= 0):
        raise RecordingError("t: the stamps must be sorted")
    keep = np.concatenate([[True], np.diff(t) > 0])             # no repeated stamps
    t, q, tau = t[keep], np.asarray(q, dtype=float)[keep], np.asarray(tau, dtype=float)[keep]
    v = None if v is None else np.asarray(v, dtype=float)[keep]
    if t.size < 2:
        raise RecordingError(f"recording: {t.size} distinct stamps, need many more")
    dt = float(np.median(np.diff(t)))
    fs = 1.0 / dt
    if not 0 < cutoff_hz < 0.5 * fs:
        raise RecordingError(f"cutoff_hz: {cutoff_hz} Hz must be between 0 and half the sample rate ({0.5 * fs:g} Hz)")
    b, a = butter(order, cutoff_hz / (0.5 * fs))
    trim = 4.0 / cutoff_hz if trim is None else float(trim)
    rate = 10.0 * cutoff_hz if output_rate is None else float(output_rate)
    step = max(1, int(np.floor(fs / rate * (1 + 1e-9)))) if rate < fs else 1     # 499.99999 Hz / 100 Hz: 5
    gap = GAP_PERIODS * dt if max_gap is None else max(float(max_gap), GAP_PERIODS * dt)
    cuts = np.flatnonzero(np.diff(t) > gap) + 1
    out = []
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [t.size]])):
        ts = t[lo:hi]
        grid = ts[0] + dt * np.arange(int(np.floor((ts[-1] - ts[0]) / dt)) + 1)
        n_trim = int(round(trim / dt))
        if grid.size <= max(3 * (2 * order + 1), 2 * n_trim + 3):
            continue                                            # too short to filter
        qf = filtfilt(b, a, resample(grid, ts, q[lo:hi]), axis=0)
        vf = np.gradient(qf, dt, axis=0) if v is None else filtfilt(b, a, resample(grid, ts, v[lo:hi]), axis=0)
        af = np.gradient(vf, dt, axis=0)
        tf = filtfilt(b, a, resample(grid, ts, tau[lo:hi]), axis=0)
        sl = slice(n_trim, grid.size - n_trim, step)
        out.append((grid[sl], qf[sl], vf[sl], af[sl], tf[sl]))
    if not out:
        raise RecordingError(f"recording: no stretch without gaps is long enough to filter "
                             f"({len(cuts) + 1} segments, sample period {dt * 1e3:.3g} ms)")
    return Samples(*(np.concatenate([o[k] for o in out]) for k in range(5)))


def resample(grid, t, x):
    """x (N, k) sampled at t -> at the times ``grid`` (linear interpolation)."""
    return np.column_stack([np.interp(grid, t, x[:, j]) for j in range(x.shape[1])])
