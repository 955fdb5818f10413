#!/usr/bin/env python3
"""rbd_ros's MomentumObserver against KDL's ChainExternalWrenchEstimator on the same
recorded data (not a test).

1. Records the closed loop of test/test_core_observer_mujoco.py (MuJoCo, bundled arm,
   1 kHz, a 10 N push at the flange for 1 s; ``hold``: gravity compensation + joint
   impedance, ``free``: gravity compensation only) into .npz files in a tmp dir: q,
   q̇, the applied joint torques, J^T f (J from MuJoCo's mj_jacBody), the flange's
   rotation and Jacobian.
2. Looks for the estimator in PyKDL (Debian ``python3-pykdl`` for /usr/bin/python3) and
   prints what PyKDL exposes.  PyKDL 1.5.1 has no binding for it, so if g++ and the
   KDL headers (``liborocos-kdl-dev``) are there, builds bench/kdl_observer.cpp against
   liborocos-kdl and runs the C++ estimator on the recording (the chain built from the
   URDF here, root -> flange, as kdl_parser would).
3. Runs rbd_ros's observer on the same recording and prints, per estimator and run:
   error against J^T f after 5/K, error against the exact first-order lag of J^T f,
   the time to 63 % of a step (ideal 1/K), the no-contact residual, and the force at
   the flange that explains the estimate (least squares through MuJoCo's Jacobian for
   rbd_ros, KDL's own end-effector wrench rotated to world axes; ``hold`` only: on the
   swinging arm the lagged estimate and the moving Jacobian do not make one force).
   A third run, ``track``: computed-torque tracking of a fast sinusoid (up to 5 rad/s),
   no push: the no-contact residual (false collisions).
   rbd_ros runs twice: ``tau_held`` (the recorded torques were held over each step:
   exact) and the default trapezoid rule (lags by h/2 · dτ/dt).

    .venv/bin/python bench/kdl_observer.py [--gain 50] [--keep DIR]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "test"))     # the closed loop of test_core_observer_mujoco

import mujoco  # noqa: E402
import test_core_observer_mujoco as loop  # noqa: E402

from rbd_ros.core.estimation.observer import MomentumObserver  # noqa: E402
from rbd_ros.sim.mujoco_model import JointMap, load_urdf  # noqa: E402

SYSTEM_PYTHON = "/usr/bin/python3"
TIP = "flange"


# ----------------------------------------------------------------------------- recording

def record(mode, gain, path):
    r = loop.push_run(mode, gain=gain, force=np.zeros(3) if mode == "track" else loop.FORCE)
    mjm, model = load_urdf(loop.ARM_URDF)
    jm = JointMap(mjm, model)
    d = mujoco.MjData(mjm)
    body = mjm.body(TIP).id
    n = len(r["t"])
    R, J = np.zeros((n, 3, 3)), np.zeros((n, 6, model.nv))
    jacp, jacr = np.zeros((3, mjm.nv)), np.zeros((3, mjm.nv))
    for k in range(n):
        d.qpos[jm.model_qpos] = r["q"][k]
        mujoco.mj_kinematics(mjm, d)
        mujoco.mj_comPos(mjm, d)
        R[k] = d.xmat[body].reshape(3, 3)
        mujoco.mj_jacBody(mjm, d, jacp, jacr, body)
        J[k, :3], J[k, 3:] = jacp[:, jm.model_dof], jacr[:, jm.model_dof]
    np.savez(path, t=r["t"], q=r["q"], v=r["v"], tau=r["tau"], jtf=r["jtf"], R=R, J=J, gain=gain,
             t_on=r["t_on"], t_off=r["t_off"], h=r["h"], force=loop.FORCE, mode=mode)
    return path


# ----------------------------------------------------------------------------- estimators

def ours(data, tau_held):
    mjm, model = load_urdf(loop.ARM_URDF)
    obs = MomentumObserver(model, float(data["gain"]), tau_held=tau_held)
    t, q, v, tau = data["t"], data["q"], data["v"], data["tau"]
    est = np.zeros_like(q)
    for k in range(1, len(t)):          # sample 0: no step yet (see push_run)
        est[k] = obs.update(t[k], q[k], v[k], tau[k])
    return est, None


def pykdl_names():
    """What PyKDL exposes (names), or None without /usr/bin/python3 + PyKDL."""
    if not os.path.exists(SYSTEM_PYTHON):
        return None
    out = subprocess.run([SYSTEM_PYTHON, "-c", "import PyKDL; print(' '.join(sorted(n for n in dir(PyKDL) "
                          "if not n.startswith('_'))))"], capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else None


def _rpy(r, p, y):
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return (np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]]) @ np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
            @ np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]]))


def _floats(el, attr, default):
    return np.array([float(x) for x in el.get(attr, default).split()]) if el is not None else np.array(
        [float(x) for x in default.split()])


def kdl_chain_text(urdf_path, tip=TIP):
    """The chain root -> tip as kdl_parser builds it: one segment per joint on the path,
    the joint at the joint origin, the child link's inertia about its com in its axes."""
    root = ET.parse(urdf_path).getroot()
    by_child = {j.find("child").get("link"): j for j in root.findall("joint")}
    links = {lk.get("name"): lk for lk in root.findall("link")}
    path = []
    link = tip
    while link in by_child:
        path.append(by_child[link])
        link = by_child[link].find("parent").get("link")
    lines = [str(len(path))]
    for j in reversed(path):
        child = j.find("child").get("link")
        o = j.find("origin")
        xyz, rpy = _floats(o, "xyz", "0 0 0"), _floats(o, "rpy", "0 0 0")
        axis = _floats(j.find("axis"), "xyz", "1 0 0")
        jtype = j.get("type")
        if jtype not in ("revolute", "continuous", "fixed"):
            raise ValueError(f"joint {j.get('name')}: type {jtype} not handled here")
        m, com, Ic = 0.0, np.zeros(3), np.zeros((3, 3))
        inertial = links[child].find("inertial")
        if inertial is not None:
            m = float(inertial.find("mass").get("value"))
            io = inertial.find("origin")
            com = _floats(io, "xyz", "0 0 0")
            Ri = _rpy(*_floats(io, "rpy", "0 0 0"))
            a = {k: float(v) for k, v in inertial.find("inertia").attrib.items()}
            I = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]],
                          [a["ixz"], a["iyz"], a["izz"]]])
            Ic = Ri @ I @ Ri.T
        nums = [*xyz, *_rpy(*rpy).ravel(), *axis, m, *com, Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]]
        lines.append(f"{child} {0 if jtype == 'fixed' else 1} " + " ".join(repr(float(x)) for x in nums))
    return "\n".join(lines) + "\n"


def build_kdl(tmp):
    """Path of the compiled C++ runner, or None (with the reason printed)."""
    if shutil.which("g++") is None or not os.path.exists("/usr/include/kdl/chainexternalwrenchestimator.hpp"):
        print("KDL C++: no g++ or no /usr/include/kdl/chainexternalwrenchestimator.hpp "
              "(apt-get install g++ liborocos-kdl-dev): not run")
        return None
    exe = os.path.join(tmp, "kdl_observer")
    cmd = ["g++", "-O2", "-std=c++14", "-I/usr/include/eigen3", os.path.join(ROOT, "bench", "kdl_observer.cpp"),
           "-o", exe, "-lorocos-kdl"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        print("KDL C++: build failed:\n" + out.stderr[-2000:])
        return None
    return exe


def kdl(data, exe):
    q, v, tau = data["q"][1:], data["v"][1:], data["tau"][1:]      # from the first reported state
    lines = [kdl_chain_text(loop.ARM_URDF), str(len(q))]
    lines += [" ".join(repr(float(x)) for x in np.concatenate([q[k], v[k], tau[k]])) for k in range(len(q))]
    rate = 1.0 / float(data["h"])
    out = subprocess.run([exe, repr(rate), repr(float(data["gain"]))], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True)
    res = np.array([[float(x) for x in ln.split()] for ln in out.stdout.splitlines()])
    nv = q.shape[1]
    est, wrench = np.zeros_like(data["q"]), np.zeros((len(data["q"]), 6))
    est[1:], wrench[1:] = res[:, :nv], res[:, nv:]
    return est, wrench


# ----------------------------------------------------------------------------- metrics

def lagged(data):
    e = np.exp(-float(data["gain"]) * float(data["h"]))
    u = data["jtf"]
    y = np.zeros_like(u)
    for k in range(1, len(u)):
        y[k] = u[k] + e * (y[k - 1] - u[k])
    return y


def _n(x):
    return np.max(np.abs(x), axis=-1)


def metrics(data, est, wrench):
    t, jtf = data["t"], data["jtf"]
    if str(data["mode"]) == "track":         # no push: the false-collision level only
        nan = float("nan")
        return {"err_jtf": nan, "err_lag": nan, "t63_ms": nan, "quiet": float(np.max(_n(est[t >= 0.1]))),
                "start": float(np.max(_n(est[1:51]))), "force_err": nan}
    K, t_on, t_off = float(data["gain"]), float(data["t_on"]), float(data["t_off"])
    push = (t >= t_on + 5 / K) & (t <= t_off)
    scale = float(np.max(_n(jtf)))
    i = int(np.argmax(np.abs(jtf[int(round(t_on / data["h"])) + 1])))
    ratio = est[:, i] / np.where(jtf[:, i] != 0, jtf[:, i], np.inf)
    after = np.flatnonzero((t > t_on) & (ratio >= 1 - np.exp(-1)))
    m = {"err_jtf": float(np.max(_n(est[push] - jtf[push]) / _n(jtf[push]))),
         "err_lag": float(np.max(_n(est[1:] - lagged(data)[1:]))) / scale,
         "t63_ms": (t[after[0]] - t_on) * 1e3 if after.size else float("nan"),
         "quiet": float(np.max(_n(est[(t >= 0.1) & (t < t_on)]))),
         "start": float(np.max(_n(est[1:51])))}
    # force at the flange explaining the estimate (world axes), mean over the settled push
    f_true = np.asarray(data["force"])
    if wrench is None:
        F = np.array([np.linalg.lstsq(data["J"][k].T, est[k], rcond=None)[0][:3] for k in np.flatnonzero(push)])
    else:
        F = np.array([data["R"][k] @ wrench[k, :3] for k in np.flatnonzero(push)])
    m["force_err"] = float(np.max(np.linalg.norm(F - f_true, axis=1)))
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gain", type=float, default=loop.K)
    ap.add_argument("--keep", help="write the recordings and the runner here (default: a tmp dir, removed)")
    args = ap.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix="kdl_observer_")
    os.makedirs(tmp, exist_ok=True)
    try:
        names = pykdl_names()
        if names is None:
            print("PyKDL: not importable by /usr/bin/python3 (apt-get install python3-pykdl)")
        else:
            has = "ChainExternalWrenchEstimator" in names
            print(f"PyKDL: ChainExternalWrenchEstimator {'exposed' if has else 'NOT exposed'}; "
                  f"PyKDL exposes: {' '.join(names)}")
        exe = build_kdl(tmp)
        rows = []
        for mode in ("hold", "free", "track"):
            data = dict(np.load(record(mode, args.gain, os.path.join(tmp, f"push_{mode}.npz"))))
            runs = [("rbd_ros, tau_held", ours(data, True)), ("rbd_ros, trapezoid", ours(data, False))]
            if exe is not None:
                runs.append(("KDL", kdl(data, exe)))
            for name, (est, wrench) in runs:
                rows.append((mode, name, metrics(data, est, wrench)))
        print(f"\nK = {args.gain:g} 1/s, 1 kHz, 10 N push at the flange for 1 s (recordings in {tmp})\n")
        print("| run | estimator | max err vs J^T f after 5/K | max err vs lag(J^T f) | t to 63 % (ideal "
              f"{1e3 / args.gain:.0f} ms) | no contact max | first 50 ms max | force err after 5/K |")
        print("|---|---|---|---|---|---|---|---|")
        def pct(x, digits):
            return "-" if np.isnan(x) else f"{x * 100:.{digits}f} %"

        for mode, name, m in rows:
            force = f"{m['force_err']:.3f} N" if mode == "hold" else "-"
            t63 = "-" if np.isnan(m["t63_ms"]) else f"{m['t63_ms']:.0f} ms"
            print(f"| {mode} | {name} | {pct(m['err_jtf'], 2)} | {pct(m['err_lag'], 3)} | {t63} | "
                  f"{m['quiet']:.1e} N m | {m['start']:.2g} N m | {force} |")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
