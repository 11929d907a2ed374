"""CPU tests of the Python package: building operators (every scipy format, files), options and their errors,
.b24 round trips, the NumPy products (the C++ reference path) against scipy's float64 product within bounds derived
from the arithmetic (bounds.py), and the scipy LinearOperator with cg and eigsh. No GPU needed."""

import gzip
import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import bcsr24
from bounds import bound, check
from conftest import laplacian_2d, random_sparse

PRECISIONS = ["fp16", "bf16", "split"]


# ----------------------------------------------------------------------------------------------------- import
def test_import_needs_no_gpu():
    info = bcsr24.device_info()
    assert set(info) >= {"available", "name", "reason"}
    if not info["available"]:
        assert info["reason"], "an unavailable device must say why"
        assert bcsr24.device_count() == 0 or info["compute_capability"] < 80


def test_exception_tree():
    assert issubclass(bcsr24.ParseError, ValueError) and issubclass(bcsr24.ParseError, bcsr24.Error)
    # The deprecated names of the folded C++ classes stay importable, as ParseError itself.
    assert bcsr24.UnsupportedMatrixError is bcsr24.ParseError and bcsr24.FileFormatError is bcsr24.ParseError
    from bcsr24 import FileFormatError, UnsupportedMatrixError  # noqa: F401
    assert issubclass(bcsr24.NotSupportedError, RuntimeError)
    assert issubclass(bcsr24.CudaError, RuntimeError)
    assert issubclass(bcsr24.RangeError, ValueError)


# ---------------------------------------------------------------------------------------------------- building
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "lil", "dok", "dia"])
def test_from_scipy_every_format(rng, fmt):
    a = random_sparse(rng, 45, 70, 0.1)
    op = bcsr24.SparseOperator.from_scipy(a.asformat(fmt))
    assert op.shape == (45, 70)
    assert op.nnz == a.nnz
    stored = op.stored_csr()
    assert stored.shape == a.shape
    # Stored values are A's rounded to fp16 (11 significant bits; no row spans beyond fp16's range here).
    diff = abs(stored - a).toarray()
    assert np.all(diff <= 2.0**-11 * abs(a).toarray())
    assert stored.nnz == a.nnz


def test_from_scipy_sparse_array_and_index_types(rng):
    a = random_sparse(rng, 30, 30, 0.2)
    arr = sp.csr_array(a)
    arr.indices = arr.indices.astype(np.int64)
    arr.indptr = arr.indptr.astype(np.int64)
    op = bcsr24.SparseOperator.from_scipy(arr)
    assert op.nnz == a.nnz
    # Integer values are exact in every precision.
    ints = sp.csr_matrix(np.array([[1, 0, 3], [0, -2, 0]], dtype=np.int64))
    s = bcsr24.SparseOperator.from_scipy(ints).stored_csr().toarray()
    assert np.array_equal(s, [[1, 0, 3], [0, -2, 0]])


def test_from_scipy_float32_and_duplicates():
    # Duplicates are summed; explicit zeros dropped; float32 values pass through.
    a = sp.coo_matrix((np.array([1.0, 2.0, 0.0, 4.0], np.float32), ([0, 0, 1, 1], [1, 1, 0, 2])), shape=(2, 3))
    op = bcsr24.SparseOperator.from_scipy(a)
    assert np.array_equal(op.stored_csr().toarray(), [[0, 3, 0], [0, 0, 4]])
    assert op.nnz == 2


def test_from_scipy_rejects_wrong_input():
    with pytest.raises(TypeError, match="scipy.sparse"):
        bcsr24.SparseOperator.from_scipy(np.eye(3))
    with pytest.raises(TypeError, match="complex"):
        bcsr24.SparseOperator.from_scipy(sp.csr_matrix(np.eye(3, dtype=np.complex128)))


def test_from_csr_validation_names_the_problem():
    with pytest.raises(ValueError, match="decreases at row 1"):
        bcsr24.SparseOperator.from_csr([0, 2, 1, 3], [0, 1, 2], [1.0, 1.0, 1.0], (3, 3))
    with pytest.raises(ValueError, match="column index 7"):
        bcsr24.SparseOperator.from_csr([0, 1], [7], [1.0], (1, 3))
    with pytest.raises(ValueError, match="indptr"):
        bcsr24.SparseOperator.from_csr([0, 1], [0], [1.0], (2, 3))


def test_non_finite_and_range_errors():
    a = sp.csr_matrix(np.array([[np.nan, 1.0], [0.0, 1.0]]))
    with pytest.raises(bcsr24.RangeError):
        bcsr24.SparseOperator.from_scipy(a)
    big = sp.csr_matrix(np.array([[1e6, 1.0], [0.0, 1.0]]))
    with pytest.raises(bcsr24.RangeError, match="none"):
        bcsr24.SparseOperator.from_scipy(big, scaling="none")
    op = bcsr24.SparseOperator.from_scipy(big, scaling="auto")
    assert op.scaling_report["exponent"] > 0


@pytest.mark.parametrize("name,value,message", [
    ("precision", "fp8", "precision='fp8'"),
    ("scaling", "row", "scaling='row'"),
    ("layout", "blocked", "layout='blocked'"),
    ("reorder", "amd", "reorder='amd'"),
    ("threads", -1, "threads=-1"),
])
def test_options_are_checked_by_name(name, value, message):
    a = sp.identity(8, format="csr")
    with pytest.raises(ValueError, match=message):
        bcsr24.SparseOperator.from_scipy(a, **{name: value})


@pytest.mark.parametrize("layout", ["aligned", "condensed", "auto"])
@pytest.mark.parametrize("reorder", ["none", "rcm", "auto"])
def test_options_reach_the_conversion(rng, layout, reorder):
    a = random_sparse(rng, 70, 70, 0.05)
    a = a + a.T
    op = bcsr24.SparseOperator.from_scipy(a, layout=layout, reorder=reorder, threads=1)
    rep = op.layout_report
    if layout != "auto":
        assert rep["layout"] == layout
    if reorder != "auto":
        assert rep["reordering"] == reorder
    assert op.census["layout"] == rep["layout"]
    assert op.options["layout"] == layout and op.options["reorder"] == reorder
    assert isinstance(rep["reason"], str) and rep["reason"]


def test_reports_are_dicts(rng):
    op = bcsr24.SparseOperator.from_scipy(random_sparse(rng, 100, 80, 0.05))
    c = op.census
    assert c["stored_tiles"] == c["sparse24_tiles"] + c["dense_tiles"]
    assert c["nnz"] == op.nnz and 0.0 <= c["sparse24_share"] <= 1.0
    s = op.scaling_report
    assert s["per_row"] and s["flushed_count"] == 0 and s["max_relative_error"] <= 2.0**-11
    assert "fp16" in repr(op)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_dtype_and_precision(precision):
    op = bcsr24.SparseOperator.from_scipy(sp.identity(4, format="csr"), precision=precision)
    assert op.precision == precision
    want = {"fp16": "float16", "bf16": "bfloat16", "split": "float32"}[precision]
    assert str(getattr(op.dtype, "name", op.dtype)) == want


# -------------------------------------------------------------------------------------------------------- files
def test_b24_round_trip(tmp_path, rng):
    a = random_sparse(rng, 123, 77, 0.07)
    op = bcsr24.SparseOperator.from_scipy(a, precision="split", layout="condensed")
    path = tmp_path / "a.b24"
    op.save(path)
    back = bcsr24.SparseOperator.from_file(path)
    assert back.shape == op.shape and back.nnz == op.nnz and back.precision == "split"
    assert back.census == op.census
    assert back.layout_report["reason"] == "preprocessed matrix"
    assert (back.stored_csr() != op.stored_csr()).nnz == 0
    b = rng.standard_normal((77, 5)).astype(np.float32)
    assert np.array_equal(op @ b, back @ b)


def test_bad_b24_is_a_parse_error(tmp_path):
    path = tmp_path / "bad.b24"
    path.write_bytes(b"not a b24 file at all")
    with pytest.raises(bcsr24.ParseError) as info:
        bcsr24.SparseOperator.from_file(path)
    assert info.value.file == str(path) and info.value.line == 0
    assert "not a .b24 file" in info.value.problem and str(info.value).startswith(f"{path}: ")


def test_mtx_and_mtx_gz(tmp_path, rng):
    a = random_sparse(rng, 40, 33, 0.1)
    mtx = tmp_path / "a.mtx"
    scipy.io.mmwrite(str(mtx), a)
    gz = tmp_path / "a.mtx.gz"
    gz.write_bytes(gzip.compress(mtx.read_bytes()))
    for path in (mtx, gz, str(mtx)):
        op = bcsr24.SparseOperator.from_file(path)
        assert op.shape == (40, 33) and op.nnz == a.nnz
        assert abs(op.stored_csr() - a).max() <= 2.0**-11 * abs(a).max()


def test_pattern_values(tmp_path):
    path = tmp_path / "p.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 1\n2 2\n3 1\n")
    ones = bcsr24.SparseOperator.from_file(path).stored_csr()
    assert np.array_equal(ones.toarray(), [[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    r1 = bcsr24.SparseOperator.from_file(path, pattern_values="random", seed=5).stored_csr()
    r2 = bcsr24.SparseOperator.from_file(path, pattern_values="random", seed=5).stored_csr()
    assert (r1 != r2).nnz == 0 and not np.array_equal(r1.toarray(), ones.toarray())
    with pytest.raises(ValueError, match="pattern_values"):
        bcsr24.SparseOperator.from_file(path, pattern_values="zeros")


def test_malformed_mtx_names_file_and_line(tmp_path):
    path = tmp_path / "broken.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n% comment\n3 3 2\n1 1 1.0\n2 x 2.0\n")
    with pytest.raises(bcsr24.ParseError) as info:
        bcsr24.SparseOperator.from_file(path)
    e = info.value
    assert isinstance(e, ValueError)
    assert e.file == str(path)
    assert e.line == 5
    assert e.problem and e.problem in str(e)
    assert f"{path}:5" in str(e)


def test_complex_mtx_is_unsupported(tmp_path):
    path = tmp_path / "c.mtx"
    path.write_text("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1.0 2.0\n")
    with pytest.raises(bcsr24.ParseError) as info:
        bcsr24.SparseOperator.from_file(path)
    assert info.value.line >= 1
    assert "complex matrices are not supported" in str(info.value)


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        bcsr24.SparseOperator.from_file("/nonexistent/matrix.mtx")


def _shared_data():
    folder = os.environ.get("BCSR24_SHARED_DATA") or os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                                                  "shared", "data")
    return folder if os.path.isfile(os.path.join(folder, "mm-edge", "README.tsv")) else None


@pytest.mark.skipif(_shared_data() is None, reason="shared data not found (../shared/data or $BCSR24_SHARED_DATA)")
def test_shared_invalid_files_raise_typed_errors():
    # The rows fast_matrix_market marks invalid: each must arrive in Python as a ParseError (file and line) or a
    # SizeLimitError, never as a crash or a generic exception (test_mm_edge.cpp checks the C++ side of all rows).
    folder = os.path.join(_shared_data(), "mm-edge")
    with open(os.path.join(folder, "README.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    invalid = [r[0] for r in rows if len(r) > 2 and r[2].startswith("error (fmm throws invalid_mm")]
    assert invalid, "README.tsv lists no invalid files"
    for name in invalid:
        with pytest.raises((bcsr24.ParseError, bcsr24.SizeLimitError)) as info:
            bcsr24.SparseOperator.from_file(os.path.join(folder, name))
        if isinstance(info.value, bcsr24.ParseError):
            assert info.value.file.endswith(os.path.basename(name)), (name, info.value.file)


# ----------------------------------------------------------------------------------------------- NumPy products
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("n", [1, 3, 8, 19])
def test_numpy_product_float32(rng, precision, n):
    a = random_sparse(rng, 97, 131, 0.06)
    op = bcsr24.SparseOperator.from_scipy(a, precision=precision)
    b = rng.standard_normal((131, n)).astype(np.float32)
    got = op @ b
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (97, n)
    check(got, *bound(a, op, b))


def test_numpy_product_float16_b(rng):
    a = random_sparse(rng, 64, 50, 0.1)
    op = bcsr24.SparseOperator.from_scipy(a)
    b = rng.standard_normal((50, 8)).astype(np.float16)
    check(op @ b, *bound(a, op, b.astype(np.float64)))


def test_numpy_vector_alpha_beta_out(rng):
    a = random_sparse(rng, 81, 60, 0.1)
    op = bcsr24.SparseOperator.from_scipy(a)
    x = rng.standard_normal(60).astype(np.float32)
    y = op @ x
    assert y.shape == (81,)
    check(y, *bound(a, op, x))
    c0 = rng.standard_normal(81).astype(np.float32)
    out = c0.copy()
    r = op.matmul(x, out=out, alpha=-0.5, beta=2.0)
    assert r is out
    check(out, *bound(a, op, x, alpha=-0.5, beta=2.0, c0=c0))


def test_numpy_leading_stride_and_column_major(rng):
    a = random_sparse(rng, 40, 50, 0.1)
    op = bcsr24.SparseOperator.from_scipy(a)
    wide = rng.standard_normal((50, 12)).astype(np.float32)
    b = wide[:, 2:7]  # leading dimension 12, columns adjacent: used in place
    check(op @ b, *bound(a, op, b))
    f = np.asfortranarray(wide)  # columns not adjacent: copied
    check(op @ f, *bound(a, op, wide))
    v = wide[:, 3]  # a strided vector
    check(op @ v, *bound(a, op, v))
    swapped = wide.astype(wide.dtype.newbyteorder(">"))  # same values, big-endian bytes: converted, never misread
    assert np.array_equal(op @ swapped, op @ wide)


def test_numpy_errors_name_the_argument(rng):
    op = bcsr24.SparseOperator.from_scipy(random_sparse(rng, 20, 30, 0.2))
    with pytest.raises(TypeError, match="float64.*astype"):
        op @ np.ones((30, 4))
    with pytest.raises(TypeError, match="int32"):
        op @ np.ones((30, 4), dtype=np.int32)
    with pytest.raises(ValueError, match="b has 29 rows"):
        op @ np.ones((29, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="shape"):
        op @ np.ones((30, 4, 1), dtype=np.float32)
    with pytest.raises(TypeError, match="expected an array"):
        op @ "text"
    with pytest.raises(ValueError, match="beta"):
        op.matmul(np.ones((30, 4), np.float32), beta=1.0)
    with pytest.raises(ValueError, match="out has shape"):
        op.matmul(np.ones((30, 4), np.float32), out=np.empty((20, 5), np.float32))
    with pytest.raises(TypeError, match="out is float64"):
        op.matmul(np.ones((30, 4), np.float32), out=np.empty((20, 4)))
    split = bcsr24.SparseOperator.from_scipy(sp.identity(30, format="csr"), precision="split")
    with pytest.raises(TypeError, match="split matrix multiplies float32"):
        split @ np.ones((30, 2), dtype=np.float16)


def test_plan_options_are_checked(rng):
    op = bcsr24.SparseOperator.from_scipy(random_sparse(rng, 20, 30, 0.2), precision="bf16")
    with pytest.raises(ValueError, match="n must be >= 1"):
        op.plan(0)
    with pytest.raises(TypeError, match="float16"):
        op.plan(8, b_dtype="float16")
    with pytest.raises(TypeError, match="out_dtype=float16"):
        op.plan(8, out_dtype="float16")
    with pytest.raises(ValueError, match="kernel='fast'"):
        op.plan(8, kernel="fast", device="cpu")
    with pytest.raises(TypeError, match="float64"):
        op.plan(8, b_dtype=np.float64)
    with pytest.raises(ValueError, match="tuning='fast'"):
        op.plan(8, tuning="fast", device="cpu")
    with pytest.raises(ValueError, match="tuning=None"):
        op.plan(8, tuning=None, device="cpu")
    for tuning in ("measure", "model"):  # both accepted; a CPU plan has nothing to tune
        assert op.plan(8, tuning=tuning, device="cpu").report["kernel"] == "reference"


def test_cpu_plan(rng):
    a = random_sparse(rng, 50, 40, 0.1)
    op = bcsr24.SparseOperator.from_scipy(a)
    plan = op.plan(6, b_dtype=np.float32, device="cpu")
    assert plan.report["kernel"] == "reference" and plan.workspace_bytes == 0
    b = rng.standard_normal((40, 6)).astype(np.float32)
    check(plan.run(b), *bound(a, op, b))
    with pytest.raises(ValueError, match="plan was made for n = 6"):
        plan.run(np.ones((40, 5), np.float32))
    f16 = op.plan(6, b_dtype="float16", out_dtype="float16", device="cpu")
    r = f16.run(b.astype(np.float16))
    assert r.dtype == np.float16


def test_gpu_plan_without_gpu_says_why(rng):
    if bcsr24.device_info()["available"]:
        pytest.skip("a GPU is present: this checks the error of a machine without one")
    op = bcsr24.SparseOperator.from_scipy(random_sparse(rng, 20, 30, 0.2))
    with pytest.raises(bcsr24.NotSupportedError):
        op.plan(8, device=0)


def test_transpose(rng):
    a = random_sparse(rng, 60, 45, 0.1)
    op = bcsr24.SparseOperator.from_scipy(a)
    assert not op.is_symmetric()
    t = op.T
    assert t.shape == (45, 60) and t.T is op
    x = rng.standard_normal((60, 3)).astype(np.float32)
    stored_t = op.stored_csr().T
    # A^T's products use A's stored values (re-stored exactly: every value is already an fp16 number here).
    assert (t.stored_csr() != stored_t.tocsr()).nnz == 0
    check(t @ x, *bound(stored_t, t, x))
    s = bcsr24.SparseOperator.from_scipy(laplacian_2d(7, 5))
    assert s.is_symmetric() and s.T is s


# -------------------------------------------------------------------------------------------- LinearOperator
def test_linear_operator_cg(rng):
    a = laplacian_2d(12, 9) + sp.identity(108) * 0.5
    op = bcsr24.SparseOperator.from_scipy(a)
    lin = op.as_linear_operator(backend="scipy")
    assert lin.shape == a.shape and lin.dtype == np.float32
    b = rng.standard_normal(108).astype(np.float32)
    x, info = spla.cg(lin, b, rtol=1e-5, maxiter=500)
    assert info == 0
    # The stored matrix is A exactly here (integers and halves), so the residual is A's own.
    res = np.linalg.norm(a @ x.astype(np.float64) - b) / np.linalg.norm(b)
    assert res < 1e-4
    y = rng.standard_normal((108, 4)).astype(np.float32)
    check(lin.matmat(y), *bound(a, op, y))
    check(lin.rmatvec(y[:, 0]), *bound(a, op, y[:, 0]))
    with pytest.raises(TypeError, match="allow_downcast"):
        lin.matvec(np.ones(108))
    down = bcsr24.linalg.as_linear_operator(op, allow_downcast=True, backend="scipy")
    assert down.matvec(np.ones(108)).dtype == np.float32


def test_linear_operator_eigsh_and_nonsymmetric_rmatvec(rng):
    a = laplacian_2d(10, 10)
    op = bcsr24.SparseOperator.from_scipy(a, precision="split")
    lin = bcsr24.linalg.as_linear_operator(op, backend="scipy")
    w = spla.eigsh(lin, k=4, which="LA", tol=1e-6, return_eigenvectors=False)
    w_ref = spla.eigsh(a.astype(np.float64), k=4, which="LA", return_eigenvectors=False)
    assert np.allclose(np.sort(w), np.sort(w_ref), rtol=1e-4)
    n = random_sparse(rng, 30, 20, 0.2)
    lin_n = bcsr24.linalg.as_linear_operator(bcsr24.SparseOperator.from_scipy(n), backend="scipy")
    x = rng.standard_normal(30).astype(np.float32)
    op_n = bcsr24.SparseOperator.from_scipy(n)
    check(lin_n.rmatvec(x), *bound(op_n.stored_csr().T, op_n.T, x))
    assert lin_n.H.shape == (20, 30)


# ------------------------------------------------------------------------------------- CPU tensors of other libraries
def test_torch_cpu_tensors_autograd_and_lobpcg(rng):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import scipy.sparse.linalg as spla

    import bcsr24.torch as bt

    a = random_sparse(rng, 60, 60, 0.1)
    op = bcsr24.SparseOperator.from_scipy(a)
    b = torch.from_numpy(rng.standard_normal((60, 5)).astype(np.float32))
    y = op @ b
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    check(y.numpy(), *bound(a, op, b.numpy()))
    b.requires_grad_(True)
    g = torch.from_numpy(rng.standard_normal((60, 5)).astype(np.float32))
    (bt.matmul(op, b) * g).sum().backward()
    stored_t = op.stored_csr().T.tocsr()
    check(b.grad.numpy(), *bound(stored_t, op.T, g.numpy()))
    lap = bcsr24.SparseOperator.from_scipy(laplacian_2d(12, 10), precision="split")
    A = bt.as_tensor(lap, device="cpu")
    assert A.shape == (120, 120) and A.dtype == torch.float32
    with pytest.raises(TypeError, match="supports A @ X"):
        torch.add(A, 1)
    with pytest.raises(TypeError):  # operators: torch turns the TypeError into NotImplemented, Python words it
        A + 1
    torch.manual_seed(0)
    w, _ = torch.lobpcg(A, k=3, X=torch.randn(120, 5), largest=True, niter=500, tol=1e-5)
    w_ref = spla.eigsh(lap.stored_csr(), k=3, which="LA", return_eigenvectors=False)
    assert np.allclose(np.sort(w.numpy()), np.sort(w_ref), rtol=1e-3)


def test_jax_cpu_arrays(rng):
    jax = pytest.importorskip("jax", reason="jax is not installed")
    import jax.numpy as jnp

    a = random_sparse(rng, 30, 40, 0.2)
    op = bcsr24.SparseOperator.from_scipy(a)
    b = jax.device_put(jnp.asarray(rng.standard_normal((40, 3)), dtype=jnp.float32), jax.devices("cpu")[0])
    y = op @ b
    assert isinstance(y, jax.Array)
    check(np.asarray(y), *bound(a, op, np.asarray(b)))


class _DLPackOnly:
    """An array known only through DLPack (no NumPy type, no __array__)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_only_host_array(rng):
    a = random_sparse(rng, 25, 18, 0.2)
    op = bcsr24.SparseOperator.from_scipy(a)
    b = rng.standard_normal((18, 4)).astype(np.float32)
    check(op @ _DLPackOnly(b), *bound(a, op, b))
    ptr, shape, strides, dtype, device_type, _ = bcsr24._bcsr24.dlpack_view(_DLPackOnly(b[:, 1:3]))
    assert (shape, strides, dtype, device_type) == ([18, 2], [4, 1], "float32", 1)
    assert ptr == b[:, 1:].__array_interface__["data"][0]


def test_bench_without_gpu_says_why(capsys):
    if bcsr24.device_info()["available"]:
        pytest.skip("a GPU is present: test_gpu.py runs the benchmark")
    from bcsr24 import bench

    assert bench.main(["--mesh", "4", "--n", "8"]) == 2
    assert "needs a GPU" in capsys.readouterr().err
