"""bcsr24.linalg.cg and SpdSolver: the host path (NumPy, in CI) and the GPU path (CuPy, PyTorch, JAX arrays; skipped
with the reason where no device or library is present). Every converged solve is checked by an independent float64
residual with scipy against the matrix as given; refused inputs raise the documented errors.

Tolerance: the solver stops on its own fp64 residual; recomputing b - A x in another order adds rounding only
(RECOMPUTE_SLACK). A float32 X adds its own rounding: |A| |x| 2^-24 per column (fp32_bound)."""

import numpy as np
import pytest
import scipy.sparse as sp

import bcsr24
from bcsr24.linalg import SolveInfo, SpdSolver, cg
from conftest import gpu_reason, has_gpu, laplacian_2d

RECOMPUTE_SLACK = 1.0 + 1e-6


def fem_like(nx=13, ny=11, seed=3):
    """A 2-D diffusion matrix with coefficients over three decades (143 rows: no multiple of 16), symmetric."""
    rng = np.random.default_rng(seed)
    n = nx * ny
    k = np.exp(rng.uniform(-3.5, 3.5, size=n))
    rows, cols, vals = [], [], []
    for y in range(ny):
        for x in range(nx):
            i = y * nx + x
            diag = 0.0
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                xx, yy = x + dx, y + dy
                if 0 <= xx < nx and 0 <= yy < ny:
                    j = yy * nx + xx
                    c = 2.0 / (1.0 / k[i] + 1.0 / k[j])
                    rows.append(i)
                    cols.append(j)
                    vals.append(-c)
                    diag += c
                else:
                    diag += 2.0 * k[i]
            rows.append(i)
            cols.append(i)
            vals.append(diag)
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


def relative_residuals(a, b, x):
    b2 = np.asarray(b, dtype=np.float64).reshape(a.shape[0], -1)
    x2 = np.asarray(x, dtype=np.float64).reshape(a.shape[0], -1)
    r = b2 - a @ x2
    return np.linalg.norm(r, axis=0) / np.linalg.norm(b2, axis=0)


def fp32_bound(a, b, x):
    """Per column: what rounding x to float32 may add to |b - A x| / |b|."""
    b2 = np.asarray(b, dtype=np.float64).reshape(a.shape[0], -1)
    x2 = np.asarray(x, dtype=np.float64).reshape(a.shape[0], -1)
    return np.linalg.norm(abs(a) @ abs(x2), axis=0) * 2.0**-24 / np.linalg.norm(b2, axis=0)


# ------------------------------------------------------------------------------------------------- host path
@pytest.mark.parametrize("k", [1, 4, 13])
@pytest.mark.parametrize("preconditioner", ["chebyshev", "jacobi", "none"])
def test_cg_numpy_converges(rng, k, preconditioner):
    a = fem_like()
    b = rng.uniform(-1, 1, size=(a.shape[0], k))
    x, info = cg(a, b, rtol=1e-8, preconditioner=preconditioner)
    assert isinstance(info, SolveInfo) and info == 0 and info.converged, info.message
    assert x.shape == b.shape and x.dtype == np.float64
    assert np.all(relative_residuals(a, b, x) <= 1e-8 * RECOMPUTE_SLACK)
    assert len(info.relative_residual) == k and max(info.relative_residual) <= 1e-8
    assert len(info.history) == info.iterations + 1
    assert info.preconditioner == preconditioner


def test_cg_vector_and_float32_and_x0(rng):
    a = laplacian_2d(9, 14)
    b = rng.uniform(-1, 1, size=a.shape[0])
    x, info = cg(a, b)
    assert info == 0 and x.shape == b.shape
    assert relative_residuals(a, b, x)[0] <= 1e-8 * RECOMPUTE_SLACK
    x32, info32 = cg(a, b.astype(np.float32))
    assert info32 == 0 and x32.dtype == np.float32
    assert relative_residuals(a, b.astype(np.float32), x32)[0] <= (
        1e-8 * RECOMPUTE_SLACK + fp32_bound(a, b.astype(np.float32), x32)[0])
    x_again, info_again = cg(a, b, x0=x)
    assert info_again == 0 and info_again.iterations == 0
    np.testing.assert_array_equal(x_again, x)


def test_spd_solver_reuse_and_limits(rng):
    a = fem_like(15, 9)
    solver = SpdSolver(a)
    b = rng.uniform(-1, 1, size=(a.shape[0], 3))
    _, first = solver.solve(b)
    _, second = solver.solve(b)
    assert first == 0 and second == 0
    assert first.spectrum_seconds > 0.0 and second.spectrum_seconds == 0.0
    _, limited = solver.solve(b, maxiter=1)
    assert limited.stop == "max_iterations" and int(limited) == 1  # SciPy: > 0 is the iterations without converging
    _, loose = solver.solve(b, rtol=1e-14, atol=1e-2)
    assert loose == 0 and max(loose.residual_norm) <= 1e-2 * RECOMPUTE_SLACK


def test_sparse_operator_as_a_solves_the_fp64_matrix(rng):
    a = fem_like()
    op = bcsr24.SparseOperator.from_scipy(a)  # fp16 storage: the solver must still solve a itself
    b = rng.uniform(-1, 1, size=(a.shape[0], 2))
    x, info = cg(op, b)
    assert info == 0
    assert np.all(relative_residuals(a, b, x) <= 1e-8 * RECOMPUTE_SLACK)
    assert len(op._spd_solvers) == 1  # kept for the next call
    cg(op, b)
    assert len(op._spd_solvers) == 1


def test_symmetric_to_rounding_is_accepted_and_reported(rng):
    a = fem_like().tolil()
    a[3, 4] = a[3, 4] * (1 + 3e-15)
    a = a.tocsr()
    b = rng.uniform(-1, 1, size=(a.shape[0], 2))
    x, info = cg(a, b)
    assert info == 0 and 0.0 < info.asymmetry < 1e-12
    sym = (a + a.T) * 0.5
    assert np.all(relative_residuals(sym, b, x) <= 1e-8 * RECOMPUTE_SLACK)


def test_scikit_fem_elasticity_solves_as_assembled(rng):
    """Clamped P1 elasticity as scikit-fem assembles it: symmetric to rounding only, accepted as it is."""
    skfem = pytest.importorskip("skfem", reason="scikit-fem is not installed")
    from skfem.models.elasticity import lame_parameters, linear_elasticity

    mesh = skfem.MeshTet.init_tensor(*(np.linspace(0.0, 1.0, 5),) * 3)
    basis = skfem.Basis(mesh, skfem.ElementVector(skfem.ElementTetP1()))
    k = skfem.asm(linear_elasticity(*lame_parameters(1e3, 0.3)), basis)
    free = np.setdiff1d(np.arange(basis.N), basis.get_dofs(lambda x: np.isclose(x[0], 0.0)).all())
    a = k[free][:, free].tocsr()
    b = rng.uniform(-1, 1, size=(a.shape[0], 3))
    x, info = cg(a, b)
    assert info == 0, info.message
    assert info.asymmetry < 1e-12
    assert np.all(relative_residuals(a, b, x) <= 1e-8 * RECOMPUTE_SLACK)


def test_refused_inputs(rng):
    a = fem_like()
    b = rng.uniform(-1, 1, size=(a.shape[0], 2))
    skew = a.tolil()
    skew[2, 3] = 2 * skew[2, 3]
    with pytest.raises(ValueError, match=r"not symmetric.*a\(2, 3\)|a\(2, 3\).*not symmetric|not symmetric"):
        cg(skew.tocsr(), b)
    with pytest.raises(ValueError, match="square"):
        cg(sp.random(5, 7, density=0.5, format="csr"), np.ones((5, 1)))
    bad = b.copy()
    bad[10, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or Inf"):
        cg(a, bad)
    x0 = np.zeros_like(b)
    x0[0, 0] = np.inf
    with pytest.raises(ValueError, match="initial guess"):
        cg(a, b, x0=x0)
    with pytest.raises(ValueError, match="rows"):
        cg(a, b[:-1])
    with pytest.raises(TypeError, match="float64 or float32"):
        cg(a, b.astype(np.int64))
    with pytest.raises(ValueError, match="1 to 64"):
        cg(a, np.ones((a.shape[0], 65)))
    with pytest.raises(ValueError, match="preconditioner"):
        cg(a, b, preconditioner="ilu")


def test_indefinite_matrix_stops_with_breakdown(rng):
    n = 60
    a = sp.diags([-np.ones(n - 1), np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")  # eigenvalues in (-1, 3)
    x, info = cg(a, rng.uniform(-1, 1, size=(n, 2)))
    assert info.stop == "breakdown" and int(info) < 0, info.message
    assert np.all(np.isfinite(x))
    neg = sp.diags([np.r_[np.ones(n - 1), -1.0]], [0], format="csr")
    x, info = cg(neg, np.ones((n, 1)))
    assert info.stop == "breakdown" and info.iterations == 0 and "not positive definite" in info.message


# ------------------------------------------------------------------------------------------------------ GPU path
gpu = pytest.mark.skipif(not has_gpu(), reason=gpu_reason())


@gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cg_cupy(rng, dtype):
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    a = fem_like(31, 23)
    b = rng.uniform(-1, 1, size=(a.shape[0], 16)).astype(dtype)
    x, info = cg(a, cupy.asarray(b))
    assert isinstance(x, cupy.ndarray) and x.dtype == dtype and info == 0, info.message
    xh = cupy.asnumpy(x)
    slack = fp32_bound(a, b, xh) if dtype == "float32" else 0.0
    assert np.all(relative_residuals(a, b, xh) <= 1e-8 * RECOMPUTE_SLACK + slack)
    assert info.host_synchronizations == info.iterations and info.product_share > 0.0
    # x0 on the device, and a 1-D right-hand side.
    x2, info2 = cg(a, cupy.asarray(b[:, 0]), x0=x[:, 0].copy())
    assert info2 == 0 and x2.shape == (a.shape[0],)
    if dtype == "float64":  # a float32 x0 is the solution rounded: above the tolerance, it needs iterations
        assert info2.iterations == 0


@gpu
def test_cg_torch_and_jax(rng):
    a = fem_like(17, 19)
    b = rng.uniform(-1, 1, size=(a.shape[0], 5))
    torch = pytest.importorskip("torch", reason="torch is not installed")
    xt, info = cg(a, torch.tensor(b, device="cuda"))
    assert isinstance(xt, torch.Tensor) and xt.is_cuda and info == 0
    assert np.all(relative_residuals(a, b, xt.cpu().numpy()) <= 1e-8 * RECOMPUTE_SLACK)
    jnp = pytest.importorskip("jax.numpy", reason="jax is not installed")
    import jax

    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax sees no GPU")
    jax.config.update("jax_enable_x64", True)
    xj, info = cg(a, jnp.asarray(b))
    assert info == 0
    assert np.all(relative_residuals(a, b, np.asarray(xj)) <= 1e-8 * RECOMPUTE_SLACK)


# ------------------------------------------------------------------------------------------------- eigenpairs
def _check_eigen(a, w, v, info, largest):
    """Each eigenvalue within its residual norm of the reference of the same rank; V orthonormal."""
    import scipy.linalg as sl

    ref = sl.eigh(a.toarray(), eigvals_only=True)
    k = len(w)
    want = ref[::-1][:k] if largest else ref[:k]
    w = np.asarray(w)
    assert np.all(np.abs(w - want) <= np.asarray(info.residual_norm) * (1 + 1e-6) + 1e-12), (w, want)
    vh = np.asarray(v, dtype=np.float64)
    np.testing.assert_allclose(vh.T @ vh, np.eye(k), atol=1e-8)


@pytest.mark.parametrize("largest", [False, True])
def test_eigenpairs_numpy_against_eigh(rng, largest):
    a = fem_like()
    solver = SpdSolver(a)
    x0 = rng.standard_normal((a.shape[0], 5))
    w, v, info = solver.eigenpairs(x0, tol=1e-8, largest=largest)
    assert info == 0 and info.converged and info.converged_pairs == 5, info.message
    _check_eigen(a, w, v, info, largest)


def test_lobpcg_scipy_signature_and_refusals(rng):
    a = fem_like()
    x0 = rng.standard_normal((a.shape[0], 3))
    w, v = bcsr24.linalg.lobpcg(a, x0, tol=1e-6, largest=False)
    assert w.shape == (3,) and v.shape == x0.shape
    assert np.all(np.diff(w) >= 0)
    w2, v2, hist = bcsr24.linalg.lobpcg(a, x0, largest=True, retResidualNormsHistory=True)
    assert np.all(np.diff(w2) <= 0) and len(hist) >= 1
    with pytest.warns(UserWarning, match="limit"):
        bcsr24.linalg.lobpcg(a, x0, maxiter=1, largest=False)
    with pytest.raises(NotImplementedError):
        bcsr24.linalg.lobpcg(a, x0, Y=x0[:, :1])
    w3 = bcsr24.linalg.eigsh(a, 4, which="SA", tol=1e-6, return_eigenvectors=False)  # CuPy where a GPU is
    w3 = w3.get() if hasattr(w3, "get") else np.asarray(w3)
    assert w3.shape == (4,) and np.all(np.diff(w3) >= 0)


def _fem_stiffness_and_mass(refine=4):
    """The Dirichlet Laplacian's stiffness and consistent mass matrices of P1 triangles on the unit square, assembled
    by scikit-fem as its users do (225 interior nodes at refine=4)."""
    skfem = pytest.importorskip("skfem", reason="scikit-fem is not installed (python/requirements-test.txt)")
    from skfem.models.poisson import laplace, mass

    basis = skfem.Basis(skfem.MeshTri().refined(refine), skfem.ElementTriP1())
    k, m = skfem.condense(laplace.assemble(basis), mass.assemble(basis), D=basis.get_dofs())[:2]
    return k.tocsr(), m.tocsr()


@pytest.mark.parametrize("largest", [False, True])
def test_generalized_eigenpairs_against_scipy_eigh(rng, largest):
    import scipy.linalg as sl

    k_mat, m_mat = _fem_stiffness_and_mass()
    x0 = rng.standard_normal((k_mat.shape[0], 6))
    w, v, info = SpdSolver(k_mat).eigenpairs(x0, B=m_mat, tol=1e-9, largest=largest)
    assert info == 0, info.message
    ref = sl.eigh(k_mat.toarray(), m_mat.toarray(), eigvals_only=True)
    want = ref[::-1][:6] if largest else ref[:6]
    # |theta - lambda| <= |r|_{M^-1} <= |r| / sqrt(lambda_min(M)) for an M-unit x
    m_min = sl.eigh(m_mat.toarray(), eigvals_only=True)[0]
    assert np.all(np.abs(np.asarray(w) - want) <= np.asarray(info.residual_norm) / np.sqrt(m_min) * (1 + 1e-6)
                  + 1e-12 * np.abs(want)), (w, want)
    np.testing.assert_allclose(v.T @ (m_mat @ v), np.eye(6), atol=1e-8)
    r = k_mat @ v - (m_mat @ v) * np.asarray(w)
    np.testing.assert_allclose(np.linalg.norm(r, axis=0), info.residual_norm, rtol=1e-4, atol=1e-14)
    if not largest:  # the smallest Dirichlet eigenvalue of the unit square is 2 pi^2, approached from above
        assert 2 * np.pi ** 2 < w[0] < 1.1 * 2 * np.pi ** 2
    # the scipy signature: lobpcg(A, X, B) and eigsh(A, k, M=...)
    w2, _ = bcsr24.linalg.lobpcg(k_mat, x0, m_mat, tol=1e-9 * info.norm_estimate, largest=largest)
    np.testing.assert_allclose(w2, w, rtol=1e-6)
    w3 = bcsr24.linalg.eigsh(k_mat, 3, M=m_mat, which="LA" if largest else "SA", v0=x0[:, :3], tol=1e-5,
                             return_eigenvectors=False)
    w3 = np.sort(np.asarray(w3))
    np.testing.assert_allclose(w3, np.sort(want[:3]), rtol=1e-5)


def test_generalized_eigenpairs_refuse_a_b_that_is_not_spd(rng):
    k_mat, m_mat = _fem_stiffness_and_mass(3)
    x0 = rng.standard_normal((k_mat.shape[0], 3))
    solver = SpdSolver(k_mat)
    negative = m_mat.tolil()
    negative[4, 4] = -1.0
    with pytest.raises(ValueError, match="not positive definite.*row 4"):
        solver.eigenpairs(x0, B=negative.tocsr())
    # A positive diagonal and still indefinite: M - c I with lambda_min(M) < c < min_i m_ii, found in the iteration.
    lam_min = np.linalg.eigvalsh(m_mat.toarray())[0]
    assert lam_min < m_mat.diagonal().min()
    indefinite = sp.csr_matrix(m_mat - sp.identity(m_mat.shape[0]) * 0.5 * (lam_min + m_mat.diagonal().min()))
    with pytest.raises(ValueError, match="not positive definite"):
        solver.eigenpairs(x0, B=indefinite, maxiter=200)
    with pytest.raises(ValueError, match="shape"):
        solver.eigenpairs(x0, B=m_mat[:-1, :-1])
    with pytest.raises(TypeError, match="B: expected"):
        solver.eigenpairs(x0, B=m_mat.toarray())


def test_eigenpairs_repeated_eigenvalues_and_bad_starts(rng):
    a = sp.diags(np.repeat([2.0, 1.0, 3.0], 40), format="csr")
    w, v, info = SpdSolver(a).eigenpairs(rng.standard_normal((120, 5)))
    assert info == 0
    np.testing.assert_allclose(w, np.ones(5), atol=1e-4)
    x0 = rng.standard_normal((120, 3))
    x0[:, 2] = x0[:, 0]
    with pytest.raises(ValueError, match="rank deficient"):
        SpdSolver(a).eigenpairs(x0)
    with pytest.raises(ValueError, match="n / 3"):
        SpdSolver(a).eigenpairs(rng.standard_normal((120, 41)))


@gpu
def test_eigenpairs_cupy_and_torch(rng):
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    a = fem_like(31, 23)
    solver = SpdSolver(a)
    x0 = rng.standard_normal((a.shape[0], 8))
    w, v, info = solver.eigenpairs(cupy.asarray(x0), tol=1e-8)
    assert isinstance(v, cupy.ndarray) and isinstance(w, cupy.ndarray) and info == 0, info.message
    assert info.host_synchronizations >= info.iterations
    _check_eigen(a, cupy.asnumpy(w), cupy.asnumpy(v), info, False)
    host_w, _, host_info = solver.eigenpairs(x0, tol=1e-8)
    assert np.all(np.abs(cupy.asnumpy(w) - host_w) <= np.asarray(info.residual_norm) + np.asarray(
        host_info.residual_norm))
    torch = pytest.importorskip("torch", reason="torch is not installed")
    wt, vt = bcsr24.linalg.lobpcg(a, torch.tensor(x0, device="cuda", dtype=torch.float32), largest=True, tol=1e-4)
    assert vt.dtype == torch.float32 and vt.is_cuda and wt.shape == (8,)
