"""Unit tests of the compiled building blocks against their 6x6 forms
(rbd_ros.core.algorithms.reference.spatial / jcalc): spatial primitives, joint
transforms (and the X_i every kernel leaves in its workspace through the one
joint dispatch, common.jcalc), the LᵀDL elimination tree, Model.with_gravity,
the workspace layout and its per-body views, and the workspace views of
rbd_ros.core.calls.inspect."""
import numpy as np
import pytest
from core_util import random_state, random_tree_urdf, rel_err
from numba import njit

import rbd_ros.core as rbd
from rbd_ros.core.algorithms import joints, layout, spatial
from rbd_ros.core.algorithms import reference as ref
from rbd_ros.core.algorithms.common import cross_motion, joint_transform, x_motion_inv
from rbd_ros.core.algorithms.reference import spatial as S6
from rbd_ros.core.algorithms.reference.crba import composite_inertias
from rbd_ros.core.algorithms.reference.jcalc import x_up
from rbd_ros.core.algorithms.reference.ltdl import elimination_tree, h_pattern
from rbd_ros.core.algorithms.reference.rnea import id_sweeps, world_transforms
from rbd_ros.core.algorithms.reference.tree import bodies
from rbd_ros.core.calls.inspect import workspace_views
from rbd_ros.core.model.builder import dof_elimination_tree

TOL = 1e-12
SENTINEL = 7.25
ALL_TYPES = ("revolute", "continuous", "prismatic", "fixed", "planar", "floating")


@pytest.fixture
def rng():
    return np.random.default_rng(42)


def rand_rot(rng):
    u = rng.normal(size=4)
    return S6.quat_to_matrix(*u)


def rand_inertia(rng):
    m = rng.uniform(0.5, 2.0)
    A = rng.normal(size=(3, 3))
    return m, rng.normal(size=3), A @ A.T + np.eye(3)


def packed(*parts, off=3, pad=4):
    """The numbers of ``parts`` at offset ``off`` of a sentinel-filled vector."""
    x = np.concatenate([np.ravel(p) for p in parts])
    buf = np.full(off + x.size + pad, SENTINEL)
    buf[off:off + x.size] = x
    return buf


def inside(buf, n, off=3):
    """buf's n numbers at off, after checking nothing outside them was written."""
    assert np.all(buf[:off] == SENTINEL) and np.all(buf[off + n:] == SENTINEL)
    return buf[off:off + n]


def out_buf(n, init=None):
    return packed(np.zeros(n) if init is None else init, off=5)


# ------------------------------------------------------------------ spatial primitives
# (operands are 1-D views; each result is written into the middle of a sentinel-filled
# buffer: ``inside`` checks nothing around it was touched)

def at(buf, n, off=5):
    """The n numbers of ``buf`` at ``off`` as a view (where a kernel writes)."""
    return buf[off:off + n]


def test_motion_and_force_transforms(rng):
    for _ in range(5):
        E, r, m, f = rand_rot(rng), rng.normal(size=3), rng.normal(size=6), rng.normal(size=6)
        X = S6.plux(E, r)
        X12 = np.concatenate([E.ravel(), r])
        o = out_buf(6)
        spatial.Xm(X12, m, at(o, 6))
        assert rel_err(inside(o, 6, 5), X @ m) < TOL
        o = out_buf(6)
        spatial.Xinv_m(X12, m, at(o, 6))
        assert rel_err(inside(o, 6, 5), np.linalg.solve(X, m)) < TOL
        o = out_buf(6)
        spatial.Xstar_f(X12, f, at(o, 6))
        assert rel_err(inside(o, 6, 5), S6.force_transform(X) @ f) < TOL
        base = rng.normal(size=6)
        o = out_buf(6, base)
        spatial.XT_f_add(X12, f, at(o, 6))
        assert rel_err(inside(o, 6, 5), base + X.T @ f) < TOL
        # the flat form (common.py) for offset-addressed code
        o = out_buf(6)
        x_motion_inv(packed(E, r), 3, packed(m, off=2), 2, o, 5)
        assert rel_err(inside(o, 6, 5), np.linalg.solve(X, m)) < TOL


def test_compose(rng):
    Ea, ra, Eb, rb = rand_rot(rng), rng.normal(size=3), rand_rot(rng), rng.normal(size=3)
    o = out_buf(12)
    spatial.X_compose(np.concatenate([Ea.ravel(), ra]), np.concatenate([Eb.ravel(), rb]), at(o, 12))
    got = inside(o, 12, 5)
    assert rel_err(S6.plux(got[:9].reshape(3, 3), got[9:]), S6.plux(Ea, ra) @ S6.plux(Eb, rb)) < TOL


def test_plux_is_rot_times_xlt_and_force_transform(rng):
    E, r = rand_rot(rng), rng.normal(size=3)
    X = S6.plux(E, r)
    assert rel_err(X, S6.rot(E) @ S6.xlt(r)) < TOL
    # X* = [[E, -E rx], [0, E]]
    Xf = np.block([[E, -E @ S6.skew(r)], [np.zeros((3, 3)), E]])
    assert rel_err(S6.force_transform(X), Xf) < TOL


def test_cross_products(rng):
    for _ in range(5):
        v, m, f = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
        o = out_buf(6)
        spatial.crm(v, m, at(o, 6))
        assert rel_err(inside(o, 6, 5), S6.crm(v) @ m) < TOL
        o = out_buf(6)
        cross_motion(packed(v), 3, packed(m, off=2), 2, o, 5)
        assert rel_err(inside(o, 6, 5), S6.crm(v) @ m) < TOL
        base = rng.normal(size=6)
        o = out_buf(6, base)
        spatial.crf_add(v, f, at(o, 6))
        assert rel_err(inside(o, 6, 5), base + S6.crf(v) @ f) < TOL
        # the defining identities: v x m = -m x v, (v x*) f = -(v x)^T f, and icrf
        assert rel_err(S6.crm(v) @ m, -S6.crm(m) @ v) < TOL
        assert rel_err(S6.icrf(f) @ v, S6.crf(v) @ f) < TOL


def test_inertia_mul_and_mat6(rng):
    for _ in range(5):
        m, h, Ibar = rand_inertia(rng)
        I6 = S6.inertia(m, h, Ibar)
        I13 = np.concatenate([[m], h, Ibar.ravel()])
        v = rng.normal(size=6)
        o = out_buf(6)
        spatial.I_m(I13, v, at(o, 6))
        assert rel_err(inside(o, 6, 5), I6 @ v) < TOL
        o = out_buf(36)
        spatial.I_to_mat6(I13, at(o, 36).reshape(6, 6))
        assert rel_err(inside(o, 36, 5).reshape(6, 6), I6) < TOL
        # stored (m, h = m c, Ibar about the origin) is Featherstone's mcI(m, c, Ic)
        c = h / m
        Ic = Ibar - m * S6.skew(c) @ S6.skew(c).T
        assert rel_err(S6.mcI(m, c, Ic), I6) < TOL
        mm, hh, II = spatial.inertia_about_origin(m, c, Ic)
        assert rel_err(S6.inertia(mm, hh, II), I6) < TOL


def test_inertia_congruence(rng):
    for _ in range(5):
        E, r = rand_rot(rng), rng.normal(size=3)
        X = S6.plux(E, r)
        X12 = np.concatenate([E.ravel(), r])
        m, h, Ibar = rand_inertia(rng)
        I13 = np.concatenate([[m], h, Ibar.ravel()])
        m0, h0, I0 = rand_inertia(rng)
        o = out_buf(13, np.concatenate([[m0], h0, I0.ravel()]))
        spatial.XT_I_X_add(X12, I13, at(o, 13))
        got = inside(o, 13, 5)
        want = S6.inertia(m0, h0, I0) + X.T @ S6.inertia(m, h, Ibar) @ X
        assert rel_err(S6.inertia(got[0], got[1:4], got[4:]), want) < TOL
        o = out_buf(13)
        spatial.XT_I_X(X12, I13, at(o, 13))
        got = inside(o, 13, 5)
        assert rel_err(S6.inertia(got[0], got[1:4], got[4:]), X.T @ S6.inertia(m, h, Ibar) @ X) < TOL


def test_mat6_congruence(rng):
    for _ in range(5):
        E, r = rand_rot(rng), rng.normal(size=3)
        X = S6.plux(E, r)
        A = rng.normal(size=(6, 6))
        M = A + A.T
        base = rng.normal(size=(6, 6))
        o = out_buf(36, base)
        tmp = np.full(40, SENTINEL)
        spatial.XT_M_X_add(np.concatenate([E.ravel(), r]), M, tmp[2:38], at(o, 36).reshape(6, 6))
        assert rel_err(inside(o, 36, 5).reshape(6, 6), base + X.T @ M @ X) < TOL
        assert np.all(tmp[:2] == SENTINEL) and np.all(tmp[38:] == SENTINEL)   # 36 scratch numbers


def test_cholesky_solve(rng):
    for n in (6, 3, 1):
        A = rng.normal(size=(n, n))
        M = A @ A.T + 0.1 * np.eye(n)
        b = rng.normal(size=n)
        x, L = b.copy(), np.zeros((n, n))
        assert spatial.cholesky_solve(M, L, x)
        assert rel_err(M @ x, b) < 1e-10
        K, y = M.copy(), b.copy()           # in place: L is M
        assert spatial.cholesky_solve(K, K, y) and rel_err(y, x) < 1e-12
        M[n - 1, n - 1] = -1.0
        assert not spatial.cholesky_solve(M, L, b.copy())


def test_skew_and_rpy(rng):
    x, y = rng.normal(size=3), rng.normal(size=3)
    assert rel_err(spatial.skew(x) @ y, np.cross(x, y)) < TOL
    rpy = rng.uniform(-3, 3, 3)
    ex, ey, ez = np.eye(3)
    want = S6.rotation(ez, rpy[2]) @ S6.rotation(ey, rpy[1]) @ S6.rotation(ex, rpy[0])
    assert rel_err(spatial.rpy_to_matrix(rpy), want) < TOL


# ------------------------------------------------------------------ joint transforms

def test_revolute_and_prismatic_transforms(rng):
    for _ in range(5):
        ET, rT = rand_rot(rng), rng.normal(size=3)
        XT = S6.plux(ET, rT)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        x = rng.uniform(-4, 4)
        o = out_buf(12)
        joints.revolute_transform(np.concatenate([ET.ravel(), rT]), u, x, o[5:17])
        got = inside(o, 12, 5)
        assert rel_err(S6.plux(got[:9].reshape(3, 3), got[9:]), S6.rot(S6.rotation(u, x).T) @ XT) < TOL
        o = out_buf(12)
        joints.prismatic_transform(np.concatenate([ET.ravel(), rT]), u, x, o[5:17])
        got = inside(o, 12, 5)
        assert rel_err(S6.plux(got[:9].reshape(3, 3), got[9:]), S6.xlt(u * x) @ XT) < TOL


def test_free_transform(rng):
    ET, rT = rand_rot(rng), rng.normal(size=3)
    q = np.concatenate([rng.normal(size=3), 3.0 * rng.normal(size=4)])     # quaternion not normalised
    o = out_buf(12)
    assert joints.free_transform(np.concatenate([ET.ravel(), rT]), q, o[5:17])
    got = inside(o, 12, 5)
    want = S6.plux(S6.quat_to_matrix(*q[3:]).T, q[:3]) @ S6.plux(ET, rT)
    assert rel_err(S6.plux(got[:9].reshape(3, 3), got[9:]), want) < TOL
    q[3:] = 0.0
    assert not joints.free_transform(np.concatenate([ET.ravel(), rT]), q, np.zeros(12))


def test_planar_basis(rng):
    for n in [np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0]), rng.normal(size=3)]:
        n = n / np.linalg.norm(n)
        e1, e2 = joints.planar_basis(n)
        assert rel_err(np.array([e1, e2, n]) @ np.array([e1, e2, n]).T, np.eye(3)) < TOL
        assert rel_err(np.cross(e1, e2), n) < TOL
    e1, e2 = joints.planar_basis(np.array([0.0, 0.0, 1.0]))
    assert rel_err(e1, [1, 0, 0]) < TOL and rel_err(e2, [0, 1, 0]) < TOL


MODELS = [(31, 10, False, 3, True), (32, 12, True, 3, False), (33, 9, True, 0, False)]


@pytest.fixture(scope="module", params=MODELS, ids=lambda c: f"seed{c[0]}-fb{int(c[2])}-mim{c[3]}")
def model(request):
    seed, n, fb, nmim, massless_root = request.param
    return rbd.Model.from_urdf(random_tree_urdf(seed, n, types=ALL_TYPES, mimic=nmim, massless_root=massless_root),
                               floating_base=fb)


def test_models_cover_every_joint_type():
    kinds = set()
    for seed, n, fb, nmim, mr in MODELS:
        m = rbd.Model.from_urdf(random_tree_urdf(seed, n, types=ALL_TYPES, mimic=nmim, massless_root=mr),
                                floating_base=fb)
        kinds |= {b.jtype + ("-mimic" if b.mimic else "") for b in bodies(m)}
    assert kinds >= {"revolute", "prismatic", "free", "revolute-mimic"}


def kernel_transform(model, i, q):
    X = np.zeros(12)
    assert joint_transform(model.md, model.mi, layout.body_row(model.mi, i), q, X, 0)
    return X


def test_joint_transform_matches_jcalc(model):
    q, _, _ = random_state(model, np.random.default_rng(5))
    for i, b in enumerate(bodies(model)):
        X = kernel_transform(model, i, q)
        assert rel_err(S6.plux(X[:9].reshape(3, 3), X[9:]), x_up(b, q)) < TOL, (i, b.jtype)


KERNELS = {
    "rnea": lambda m, q, v, a: rbd.rnea(m, q, v, a),
    "gravity": lambda m, q, v, a: rbd.gravity(m, q),
    "bias": lambda m, q, v, a: rbd.bias(m, q, v),
    "crba": lambda m, q, v, a: rbd.crba(m, q),
    "aba": lambda m, q, v, a: rbd.aba(m, q, v, a),
    "forward_dynamics": lambda m, q, v, a: rbd.forward_dynamics(m, q, v, a),
    "coriolis_matrix": lambda m, q, v, a: rbd.coriolis_matrix(m, q, v),
    "rnea_fext_world": lambda m, q, v, a: rbd.rnea(m, q, v, a, np.ones((len(m.link_names), 6)), "world"),
}


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_every_kernels_joint_transform_equals_jcalc(model, kernel):
    """Every kernel computes X_i through common.jcalc into its workspace view X[i]:
    the transform each leaves there is common.joint_transform's (the flat form) and
    the twin's jcalc."""
    q, v, a = random_state(model, np.random.default_rng(6))
    w = workspace_views(model)
    w.E[:] = SENTINEL
    w.r[:] = SENTINEL
    KERNELS[kernel](model, q, v, a)
    for i, b in enumerate(bodies(model)):
        X = kernel_transform(model, i, q)
        assert rel_err(np.concatenate([w.E[i].ravel(), w.r[i]]), X) < 1e-14, (kernel, i, b.jtype)
        assert rel_err(w.X(i), x_up(b, q)) < TOL


# ------------------------------------------------------------------ LᵀDL elimination tree

def brute_force_fill(model, seed=0):
    """Nonzero pattern of L from a dense numeric LᵀDL of a random SPD matrix
    with H's structural pattern (no cancellation with random numbers)."""
    P = h_pattern(model)
    n = model.nv
    rng = np.random.default_rng(seed)
    A = np.where(P, rng.uniform(-1, 1, (n, n)), 0.0)
    H = (A + A.T) / 2 + 2 * n * np.eye(n)
    L = np.eye(n)
    for k in range(n - 1, -1, -1):          # dense H = Lᵀ D L, eliminating from the last row
        L[k, :k] = H[k, :k] / H[k, k]
        H[:k, :k] -= np.outer(L[k, :k], H[k, :k])
    return np.abs(np.tril(L, -1)) > 1e-14


@pytest.mark.parametrize("seed,n,fb,nmim", [(31, 10, False, 3), (32, 12, True, 3), (34, 14, True, 5),
                                            (35, 12, False, 0), (36, 8, True, 0)])
def test_dof_elimination_tree_against_brute_force(seed, n, fb, nmim):
    m = rbd.Model.from_urdf(random_tree_urdf(seed, n, types=ALL_TYPES, mimic=nmim, massless_root=False),
                            floating_base=fb)
    mi = m.mi
    lam = np.asarray(dof_elimination_tree(m.tree), dtype=int)
    assert np.array_equal(lam, elimination_tree(h_pattern(m)))
    # every fill-in entry of L lies on the row's ancestor chain, and the
    # nearest one is λ(k): what the sparse LᵀDL relies on
    F = brute_force_fill(m)
    for k in range(m.nv):
        chain, j = [], lam[k]
        while j >= 0:
            chain.append(j)
            j = lam[j]
        assert set(np.flatnonzero(F[k])) <= set(chain), k
        if F[k].any():
            assert lam[k] == np.flatnonzero(F[k]).max()
        # and the model stores exactly this chain
        s, e = layout.ancestors(mi, k)
        assert [int(x) for x in mi[s:e]] == chain
    if nmim == 0 and not fb:
        # no mimic: λ is the kinematic tree's DOF parent
        tree = bodies(m)
        for b in tree:
            first = b.dofs[0]
            p = b.parent
            want = tree[p].dofs[-1] if p >= 0 else -1
            assert lam[first] == want


# ------------------------------------------------------------------ Model.with_gravity

def test_integer_entries_are_int64_and_mean_what_layout_says():
    """The topology is stored as int64 (read through ``Model.mi``), not as float
    casts: a float 1.0 stored there reads as 4607182418800017408 through mi."""
    m = rbd.Model.from_urdf(random_tree_urdf(37, 12, types=ALL_TYPES, mimic=3, massless_root=False),
                            floating_base=True)
    mi = m.mi
    assert mi.dtype == np.int64 and not mi.flags.writeable and np.shares_memory(mi, m.md)
    assert (mi[layout.H_NB], mi[layout.H_NV], mi[layout.H_NQ]) == (m.nbodies, m.nv, m.nq)
    assert np.array_equal(m.md[layout.H_GRAV:layout.H_GRAV + 3], m.gravity)
    ref_bodies = bodies(m)
    for i in range(len(ref_bodies)):
        o = layout.body_row(mi, i)
        assert -1 <= mi[o + layout.C_PARENT] < i
        assert mi[o + layout.C_JTYPE] in (joints.REVOLUTE, joints.PRISMATIC, joints.FREE)
        assert 0 <= mi[o + layout.C_QI] < m.nq and 0 <= mi[o + layout.C_VI] < m.nv
        assert i <= mi[o + layout.C_SUBEND] < m.nbodies and mi[o + layout.C_MIMIC] in (0, 1)
    pairs = [layout.mimic_pair(mi, k) for k in range(int(mi[layout.H_NMIM]))]
    assert len(pairs) == sum(b.mimic for b in ref_bodies) >= 1
    for dep, master in pairs:
        assert ref_bodies[dep].mimic and not ref_bodies[master].mimic
        assert ref_bodies[dep].vi == ref_bodies[master].vi
    arm = int(mi[layout.H_OFF_ARM])
    assert np.array_equal(m.md[arm:arm + m.nv], m.armature)


def test_with_gravity(model):
    q, _, _ = random_state(model, np.random.default_rng(7))
    g2 = np.array([1.0, -2.0, 3.5])
    m2 = model.with_gravity(g2)
    assert np.array_equal(m2.gravity, g2) and np.array_equal(model.gravity, [0.0, 0.0, -9.81])
    assert np.array_equal(np.delete(m2.mi, range(layout.H_GRAV, layout.H_GRAV + 3)),
                          np.delete(model.mi, range(layout.H_GRAV, layout.H_GRAV + 3)))   # bit for bit
    assert not m2.md.flags.writeable
    assert m2.workspace() is not model.workspace()
    assert rel_err(rbd.gravity(m2, q), ref.gravity(m2, q)) < 1e-9
    assert rel_err(rbd.gravity(model, q), ref.gravity(model, q)) < 1e-9
    assert rel_err(rbd.gravity(m2.with_gravity([0, 0, 0]), q), np.zeros(model.nv)) == 0.0
    for bad in ([1.0, 2.0], [0.0, np.nan, 0.0], "down"):
        with pytest.raises(ValueError, match="gravity"):
            model.with_gravity(bad)


# ------------------------------------------------------------------ workspace layout

@pytest.mark.parametrize("nb,nvf,nmim", [(0, 0, 0), (1, 6, 0), (7, 12, 2), (40, 45, 5)])
def test_workspace_regions_are_disjoint(nb, nvf, nmim):
    offs = layout.region_offsets(nb, nvf, nmim)
    sizes = {layout.R_RNEA: nb * layout.W_RNEA, layout.R_WORLD: nb * layout.W_WORLD, layout.R_IC: nb * layout.W_IC,
             layout.R_ABA: nb * layout.W_ABA, layout.R_COR: nb * layout.W_COR, layout.R_CRBA: nb * layout.W_CRBA,
             layout.R_TMP: layout.TMP, layout.R_MAT: nvf * nvf, layout.R_VEC: 8 * nvf, layout.R_Y: nvf * nmim,
             layout.R_K: nmim * nmim + 2 * nmim + 8}
    assert sorted(sizes) == list(range(layout.R_END)) and len(offs) == layout.R_END + 1
    assert offs[0] == 0
    for k, size in sizes.items():
        assert offs[k + 1] - offs[k] == size      # each region ends where the next starts
    assert offs[layout.R_END] == offs[layout.R_K] + sizes[layout.R_K]


SLOT_PREFIX = {"rnea": "RN_", "world": "WO_", "ic": "IC_", "aba": "AB_", "cor": "CO_", "crba": "CR_"}


def test_slots_fit_their_regions():
    """Every named slot lies inside its region's width, slots of one region do
    not overlap, and every slot constant of layout.py is in SLOTS."""
    listed = set()
    for region, (width, slots) in layout.SLOTS.items():
        ivs = sorted((o, o + n, name) for name, (o, n) in slots.items())
        assert ivs[0][0] >= 0 and ivs[-1][1] <= width, region
        for (_, end, a), (start, _, b) in zip(ivs[:-1], ivs[1:], strict=True):
            assert end <= start, (region, a, b)
        for name, (o, _) in slots.items():
            assert name.startswith(SLOT_PREFIX[region]) and getattr(layout, name) == o
        listed |= set(slots)
    defined = {k for k in vars(layout) if k.startswith(tuple(SLOT_PREFIX.values()))}
    assert defined == listed
    # no slot name reads like a body-table column, no two names differ only by case
    columns = {k for k in vars(layout) if k.startswith("C_")}
    assert columns and not (listed & columns)
    assert len({k.lower() for k in listed | columns}) == len(listed | columns)


def test_slot_helpers_address_body_blocks():
    for helper, width in ((layout.rnea_slot, layout.W_RNEA), (layout.world_slot, layout.W_WORLD),
                          (layout.ic_slot, layout.W_IC), (layout.aba_slot, layout.W_ABA),
                          (layout.cor_slot, layout.W_COR), (layout.crba_slot, layout.W_CRBA)):
        for o, i in ((0, 0), (17, 0), (17, 3), (1000, 41)):
            assert helper(o, i) == o + i * width


@njit(cache=False)
def _probe_views(md, ws):
    """Writes each body's slot numbers through the kernels' views; returns the body
    table read through layout.bodies (test_views_address_the_layout)."""
    B = layout.bodies(md)
    offs = layout.offsets(md)
    X, v, a, f = layout.rnea_slots(ws, offs, B.n)
    X0 = layout.world_slots(ws, offs, B.n)
    Ic = layout.ic_slots(ws, offs, B.n)
    IA, pA, c, U, D, u, S = layout.aba_slots(ws, offs, B.n)
    Sc, F = layout.crba_slots(ws, offs, B.n)
    CS, CSd, CIc, CBc = layout.cor_slots(ws, offs, B.n)
    for i in range(B.n):            # write each body's slot numbers through the views
        for k in range(12):
            X[i, k] = 1000 * i + layout.RN_X + k
            X0[i, k] = 1000 * i + 100 + k
        for k in range(6):
            v[i, k] = 1000 * i + layout.RN_V + k
            a[i, k] = 1000 * i + layout.RN_A + k
            f[i, k] = 1000 * i + layout.RN_F + k
            pA[i, k] = 1000 * i + 200 + layout.AB_PA + k
            c[i, k] = 1000 * i + 200 + layout.AB_C + k
            U[i, k] = 1000 * i + 200 + layout.AB_U + k
            u[i, k] = 1000 * i + 200 + layout.AB_TAU + k
            S[i, k] = 1000 * i + 200 + layout.AB_S + k
        for k in range(13):
            Ic[i, k] = 1000 * i + 400 + k
        for r in range(6):
            for k in range(6):
                IA[i, r, k] = 1000 * i + 200 + layout.AB_IA + 6 * r + k
                D[i, r, k] = 1000 * i + 200 + layout.AB_D + 6 * r + k
                Sc[i, r, k] = 1000 * i + 500 + layout.CR_S + 6 * r + k
                F[i, r, k] = 1000 * i + 500 + layout.CR_F + 6 * r + k
                CS[i, r, k] = 1000 * i + 600 + layout.CO_S + 6 * r + k
                CSd[i, r, k] = 1000 * i + 600 + layout.CO_SDOT + 6 * r + k
                CIc[i, r, k] = 1000 * i + 600 + layout.CO_IC + 6 * r + k
                CBc[i, r, k] = 1000 * i + 600 + layout.CO_BC + 6 * r + k
    table = np.zeros((B.n, 12))
    for i in range(B.n):
        table[i, 0] = B.parent[i]
        table[i, 1] = B.jtype[i]
        table[i, 2] = B.qi[i]
        table[i, 3] = B.vi[i]
        table[i, 4] = B.fv[i]
        table[i, 5] = B.mult[i]
        table[i, 6] = B.offset[i]
        table[i, 7] = B.Xtree[i, 11]
        table[i, 8] = B.axis[i, 2]
        table[i, 9] = B.I[i, 12]
        table[i, 10] = B.mimic[i]
        table[i, 11] = B.subend[i]
    return table


def test_views_address_the_layout(model):
    """The kernels' per-body views read what the offsets of layout.py address: the
    body table's columns (bodies) and every region's slots (*_slots), body by body."""
    ws = np.full(model.workspace().size, SENTINEL)
    table = _probe_views(model.md, ws)
    mi, md, nb = model.mi, model.md, model.nbodies
    offs = layout.region_offsets(nb, int(mi[layout.H_NVF]), int(mi[layout.H_NMIM]))
    regions = ((layout.R_RNEA, layout.rnea_slot, 0), (layout.R_WORLD, layout.world_slot, 100),
               (layout.R_ABA, layout.aba_slot, 200), (layout.R_IC, layout.ic_slot, 400),
               (layout.R_CRBA, layout.crba_slot, 500), (layout.R_COR, layout.cor_slot, 600))
    for i in range(nb):
        for r, slot, tag in regions:
            width = layout.SLOTS[{0: "rnea", 100: "world", 200: "aba", 400: "ic", 500: "crba", 600: "cor"}[tag]][0]
            block = ws[slot(offs[r], i):slot(offs[r], i) + width]
            used = block != SENTINEL
            assert np.array_equal(block[used], 1000 * i + tag + np.flatnonzero(used)), (i, tag)
        o = layout.body_row(mi, i)
        want = [mi[o + layout.C_PARENT], mi[o + layout.C_JTYPE], mi[o + layout.C_QI], mi[o + layout.C_VI],
                mi[o + layout.C_FV], md[o + layout.C_MULT], md[o + layout.C_OFFSET], md[o + layout.C_ET + 11],
                md[o + layout.C_AXIS + 2], md[o + layout.C_MASS + 12], mi[o + layout.C_MIMIC], mi[o + layout.C_SUBEND]]
        assert np.array_equal(table[i], np.array(want, dtype=float)), i


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_kernels_stay_inside_workspace_size(model, kernel):
    """Run each kernel in a workspace of exactly workspace_size numbers
    followed by a sentinel tail: the tail is never written."""
    size = layout.workspace_size(model.md)
    assert size == model.workspace().size
    big = np.full(size + 64, SENTINEL)
    model._tls.ws = big[:size]          # this thread's workspace, with a guard behind it
    try:
        q, v, a = random_state(model, np.random.default_rng(8))
        KERNELS[kernel](model, q, v, a)
        assert np.all(big[size:] == SENTINEL)
        assert np.any(big[:size] != SENTINEL)          # the kernel did use this workspace
    finally:
        del model._tls.ws


# ------------------------------------------------------------------ inspect.workspace_views

def test_workspace_views_after_rnea(model):
    q, v, a = random_state(model, np.random.default_rng(9))
    rbd.rnea(model, q, v, a)
    w = workspace_views(model)
    assert np.shares_memory(w.v, model.workspace())
    _, r = id_sweeps(model, q, v, a)
    for i in range(model.nbodies):
        assert rel_err(w.X(i), r["X"][i]) < TOL
        assert rel_err(w.v[i], r["v"][i]) < 1e-10
        assert rel_err(w.a[i], r["a"][i]) < 1e-10
        assert rel_err(w.f[i], r["f"][i]) < 1e-10
        assert set(w.body(i)) >= {"E", "r", "v", "a", "f", "E0", "r0", "IA"}
    # the generic views follow layout.SLOTS and the registry's regions: the same memory
    assert np.shares_memory(w.slots["RN_V"], w.v) and np.array_equal(w.slots["RN_V"], w.v)
    assert np.array_equal(w.of("rnea")["RN_F"], w.f)
    assert set(w.of("gravity")) == set(layout.SLOTS["rnea"][1])
    assert set(w.of("crba")) >= set(layout.SLOTS["ic"][1]) | set(layout.SLOTS["crba"][1])
    assert set(w.slots) == {k for _, slots in layout.SLOTS.values() for k in slots}
    with pytest.raises(ValueError, match="algorithm: unknown 'rena'"):
        w.of("rena")


def test_workspace_views_after_crba_and_forward_dynamics(model):
    q, v, tau = random_state(model, np.random.default_rng(10))
    H = rbd.crba(model, q)
    w = workspace_views(model)
    tree = bodies(model)
    Xup = [x_up(b, q) for b in tree]
    X0 = world_transforms(tree, Xup)
    IC = composite_inertias(tree, Xup)
    for i in range(model.nbodies):
        assert rel_err(w.X0(i), X0[i]) < TOL
        R, p = w.placement(i)              # oMi: body i's frame in the world
        assert rel_err(S6.plux(R.T, p), X0[i]) < TOL
        # composite inertias in world coordinates: X0^T I^c X0
        assert rel_err(S6.inertia(w.Ic_m[i], w.Ic_h[i], w.Ic_Ibar[i]), X0[i].T @ IC[i] @ X0[i]) < 1e-10
    rbd.forward_dynamics(model, q, v, tau)
    # the factor is in the lower triangle (the kernel keeps scratch above it)
    assert rel_err(np.tril(w.H), ref.ltdl(model, H)) < 1e-9


def test_workspace_views_after_aba(model):
    """aba keeps velocities in the world frame: v_world = X0^-1 v_body."""
    q, v, tau = random_state(model, np.random.default_rng(11))
    rbd.aba(model, q, v, tau)
    w = workspace_views(model)
    _, r = id_sweeps(model, q, v, np.zeros(model.nv))
    X0 = world_transforms(bodies(model), r["X"])
    for i in range(model.nbodies):
        assert rel_err(w.X0(i), X0[i]) < TOL
        assert rel_err(w.v[i], np.linalg.solve(X0[i], r["v"][i])) < 1e-10
