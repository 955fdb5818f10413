"""QP solvers on the contact friction problem: the measurements behind DAQP (issue 25).

    python bench/contact_solvers.py [--cases 20] [--calls 50]

The problem constrained_inverse_dynamics hands its solver when a cone is active:

    min ½ ‖λ‖²   s.t.   J_baseᵀ λ = (M a + b)_base   (6 rows),   C λ <= 0   (cones)

on solo12 standing on 4 point feet (12 unknowns, 16 pyramid rows) and talos in double
support on flat feet (12 unknowns, 32 contact-wrench-cone rows), built from
test/contact_util.py.  Three sets of cases, interleaved solver by solver:

* ``active``:  random base accelerations whose friction-free optimum leaves a cone but
  which are feasible (what the node meets while a robot moves);
* ``boundary``: right-hand sides made from forces on the cones' boundary, a foot
  unloaded in half of them (degenerate: several facets through the apex; barely feasible);
* ``pulling``: the same right-hand sides with the vertical force reversed (infeasible:
  a solver must say so, not return a wrong λ).

Per solver: the median µs per solve (from the numpy arrays, including its Python
interface), failures (no answer, or an answer off the reference by > 1e-6 relative, or
cones violated), infeasible cases detected.  The reference is DAQP's answer checked by
its KKT conditions.  Solvers not installed are skipped: pip install proxsuite osqp
clarabel quadprog.  Run it on a calm machine.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test"))
from contact_util import Robot, cone_rows  # noqa: E402

INF = 1e30


def s_daqp(B, c, C):
    import daqp  # the solvers are optional here: each is imported where it is tried
    m = B.shape[1]
    A = np.vstack([B, C])
    bu = np.r_[c, np.zeros(len(C))]
    bl = np.r_[c, np.full(len(C), -INF)]
    sense = np.r_[np.full(len(c), 5), np.zeros(len(C))].astype(np.int32)
    x, _, flag, _ = daqp.solve(np.eye(m), np.zeros(m), A, bu, bl, sense, primal_tol=1e-10)
    return x, {1: "optimal", -1: "infeasible"}.get(flag, f"flag {flag}")


def s_proxsuite(B, c, C):
    import proxsuite
    m = B.shape[1]
    qp = proxsuite.proxqp.dense.QP(m, B.shape[0], C.shape[0])
    qp.settings.eps_abs = 1e-10
    qp.settings.eps_rel = 0.0
    qp.init(np.eye(m), np.zeros(m), B, c, C, np.full(len(C), -INF), np.zeros(len(C)))
    qp.solve()
    st = str(qp.results.info.status)
    return qp.results.x.copy(), "optimal" if st.endswith("SOLVED") else ("infeasible" if "INFEAS" in st else st)


def s_osqp(B, c, C):
    import osqp
    import scipy.sparse as sp
    m = B.shape[1]
    s = osqp.OSQP()
    s.setup(sp.csc_matrix(np.eye(m)), np.zeros(m), sp.csc_matrix(np.vstack([B, C])),
            np.r_[c, np.full(len(C), -np.inf)], np.r_[c, np.zeros(len(C))], verbose=False, eps_abs=1e-10,
            eps_rel=1e-10, polish=True)
    r = s.solve()
    st = str(r.info.status)
    return r.x, "optimal" if st.startswith("solved") else ("infeasible" if "infeasible" in st else st)


def s_clarabel(B, c, C):
    import clarabel
    import scipy.sparse as sp
    m = B.shape[1]
    st = clarabel.DefaultSettings()
    st.verbose = False
    s = clarabel.DefaultSolver(sp.csc_matrix(np.eye(m)), np.zeros(m), sp.csc_matrix(np.vstack([B, C])),
                               np.r_[c, np.zeros(len(C))],
                               [clarabel.ZeroConeT(len(c)), clarabel.NonnegativeConeT(len(C))], st)
    r = s.solve()
    status = str(r.status)
    return np.array(r.x), "optimal" if status == "Solved" else ("infeasible" if "Infeasible" in status else status)


def s_quadprog(B, c, C):
    import quadprog
    m = B.shape[1]
    try:
        x = quadprog.solve_qp(np.eye(m), np.zeros(m), np.vstack([B, -C]).T, np.r_[c, np.zeros(len(C))], len(c))[0]
    except ValueError as e:
        return None, "infeasible" if "inconsistent" in str(e) else str(e)
    return x, "optimal"


SOLVERS = {"daqp": s_daqp, "proxsuite": s_proxsuite, "osqp": s_osqp, "clarabel": s_clarabel,
           "quadprog": s_quadprog}


def kkt_ok(B, c, C, x, tol=1e-8):
    """x optimal for min ½‖x‖² s.t. Bx = c, Cx <= 0: feasible, and x + Bᵀν + C_Aᵀη = 0
    with η >= 0 on the active rows (least squares)."""
    s = max(1.0, np.max(np.abs(c)))
    if np.linalg.norm(B @ x - c) > tol * s or np.max(C @ x) > tol * s:
        return False
    act = np.abs(C @ x) <= 1e-7 * s
    K = np.vstack([B, C[act]]).T
    y = np.linalg.lstsq(K, -x, rcond=None)[0]
    return np.linalg.norm(K @ y + x) <= 1e-7 * s and np.all(y[B.shape[0]:] >= -1e-7 * s)


def cases(robot, rng, n):
    cons = robot.contacts()
    mu = 0.5
    fr = [robot.friction(mu)] * len(cons)
    q = robot.q
    active, boundary, pulling = [], [], []
    B0, c0, _, _ = robot.system(q, *robot.motion(cons, np.zeros(6)), cons)
    C = cone_rows(robot, q, cons, fr)
    tries = 0
    while len(active) < n and tries < 50 * n:
        tries += 1
        scale = 1.0 if robot.flat else 2.0
        v, a = robot.motion(cons, np.r_[rng.normal(size=3) * scale, rng.normal(size=3) * 2 * scale])
        B, c, _, _ = robot.system(q, v, a, cons)
        x, st = s_daqp(B, c, C)
        mu0 = np.linalg.lstsq(B, c, rcond=None)[0]
        if st == "optimal" and np.max(C @ mu0) > 0 and kkt_ok(B, c, C, x):
            active.append((B, c, C, x))
    m = B0.shape[1]
    dim = 6 if robot.flat else 3
    while len(boundary) < n:
        d = rng.normal(size=m)      # a point of the cones' boundary: the farthest along d in a box
        import daqp
        lam, _, _, _ = daqp.solve(np.eye(m) * 1e-3, -d, np.vstack([C, np.eye(m)]), np.r_[np.zeros(len(C)),
                                  np.full(m, 50.0)], np.r_[np.full(len(C), -INF), np.full(m, -50.0)])
        if rng.uniform() < 0.5:
            k = rng.integers(0, len(cons))
            lam[dim * k:dim * k + dim] = 0.0
        c = B0 @ lam
        if np.linalg.norm(c) < 1.0:
            continue
        x, st = s_daqp(B0, c, C)
        boundary.append((B0, c, C, x if st == "optimal" and kkt_ok(B0, c, C, x, 1e-7) else None))
        pulling.append((B0, c * np.r_[1, 1, -1, 1, 1, 1], C, None))
    return active, boundary, pulling


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    solvers = {}
    for name, f in SOLVERS.items():
        try:
            __import__(name)
            solvers[name] = f
        except ImportError:
            print(f"({name} not installed: skipped)")
    for rname in ("solo12", "talos_full_v2"):
        robot = Robot(rname)
        active, boundary, pulling = cases(robot, rng, args.cases)
        print(f"{rname}: {len(active)} active, {len(boundary)} boundary, {len(pulling)} pulling cases")
        for name, f in solvers.items():
            t, fails, bfails, detected = [], 0, 0, 0
            for B, c, C, ref in active:
                x, st = f(B, c, C)
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    f(B, c, C)
                t.append((time.perf_counter() - t0) / args.calls * 1e6)
                if st != "optimal" or x is None or np.max(np.abs(x - ref)) > 1e-6 * np.max(np.abs(ref)):
                    fails += 1
            for B, c, C, _ref in boundary:
                x, st = f(B, c, C)
                s = max(1.0, np.max(np.abs(c)))
                if st != "optimal" or x is None or np.max(C @ x) > 1e-8 * s or np.linalg.norm(B @ x - c) > 1e-8 * s:
                    bfails += 1
            for B, c, C, _ in pulling:
                detected += f(B, c, C)[1] == "infeasible"
            print(f"  {name:10s} median {np.median(t):8.1f} us   active: {fails}/{len(active)} failed   "
                  f"boundary: {bfails}/{len(boundary)} failed   pulling: {detected}/{len(pulling)} said infeasible")


if __name__ == "__main__":
    main()
