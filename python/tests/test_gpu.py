"""GPU tests of the Python package: CuPy, PyTorch, JAX and Numba arrays in and out, zero copy, streams, out= with
beta, strided and column-major input, every precision and B dtype, autograd, torch.lobpcg, the cupyx solvers and
the lobpcg example. Every product is checked element by element against scipy's float64 product under the bound of
bounds.py (the GPU's fp32 accumulation, float32 B staging). Skipped, with the reason, without a usable GPU or
without the library a test needs."""

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import bcsr24
from bounds import bound, check
from conftest import gpu_reason, has_gpu, laplacian_2d, random_sparse

pytestmark = pytest.mark.skipif(not has_gpu(), reason=gpu_reason())

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (precision, B dtype name): every mode a plan takes.
MODES = [("fp16", "float32"), ("fp16", "float16"), ("bf16", "float32"), ("bf16", "bfloat16"), ("split", "float32")]


def need(module):
    return pytest.importorskip(module, reason=f"{module} is not installed")


def gpu_bound(a, op, b64, b_dtype, **kw):
    return bound(a, op, b64, path="gpu", b_float32=(b_dtype == "float32"), **kw)


def matrix(rng, rows=203, cols=157, density=0.05):
    return random_sparse(rng, rows, cols, density)


# ------------------------------------------------------------------------------------------------------- CuPy
@pytest.mark.parametrize("precision,b_dtype", [m for m in MODES if m[1] != "bfloat16"])
@pytest.mark.parametrize("n", [1, 8, 13, 32])
def test_cupy_in_and_out(rng, precision, b_dtype, n):
    cp = need("cupy")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a, precision=precision)
    b_host = rng.standard_normal((157, n)).astype(b_dtype)
    b = cp.asarray(b_host)
    y = op @ b
    assert isinstance(y, cp.ndarray) and y.dtype == cp.float32 and y.shape == (203, n)
    assert y.data.device_id == b.data.device_id
    check(cp.asnumpy(y), *gpu_bound(a, op, b_host.astype(np.float64), b_dtype))
    v = op @ b[:, 0]
    assert v.shape == (203,)
    check(cp.asnumpy(v), *gpu_bound(a, op, b_host[:, 0].astype(np.float64), b_dtype))


def test_cupy_zero_copy_and_out(rng):
    cp = need("cupy")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a)
    b = cp.asarray(rng.standard_normal((157, 16)).astype(np.float32))
    op @ b  # makes the plan (its workspace is the library's own allocation, not the pool's)
    pool = cp.get_default_memory_pool()
    cp.cuda.Device().synchronize()
    before = pool.used_bytes()
    y = op @ b
    grown = pool.used_bytes() - before
    # The pool rounds allocations up to 512 bytes: only the output was allocated, no copy of B.
    assert grown == -(-y.nbytes // 512) * 512, (grown, y.nbytes)
    out = cp.full((203, 16), cp.nan, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    before_out = pool.used_bytes()
    r = op.matmul(b, out=out)
    assert r is out and r.data.ptr == out.data.ptr
    assert pool.used_bytes() == before_out  # nothing new with out=
    check(cp.asnumpy(out), *gpu_bound(a, op, cp.asnumpy(b).astype(np.float64), "float32"))


def test_cupy_out_with_beta_and_leading_stride(rng):
    cp = need("cupy")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a)
    wide = cp.asarray(rng.standard_normal((157, 40)).astype(np.float32))
    b = wide[:, 5:29]  # leading dimension 40: used in place
    c0 = rng.standard_normal((203, 24)).astype(np.float32)
    big = cp.zeros((203, 31), dtype=cp.float32)
    out = big[:, 3:27]  # an output with a leading stride
    out[...] = cp.asarray(c0)
    r = op.matmul(b, out=out, alpha=-1.5, beta=0.5)
    assert r is out
    check(cp.asnumpy(out), *gpu_bound(a, op, cp.asnumpy(b).astype(np.float64), "float32", alpha=-1.5, beta=0.5,
                                      c0=c0))
    col_major = cp.asfortranarray(b)  # columns not adjacent: copied, same result
    check(cp.asnumpy(op @ col_major), *gpu_bound(a, op, cp.asnumpy(b).astype(np.float64), "float32"))
    with pytest.raises(ValueError, match="unit column stride"):
        op.matmul(b, out=cp.asfortranarray(cp.empty((203, 24), cp.float32)))
    with pytest.raises(TypeError, match="float64"):
        op @ cp.ones((157, 4))


def test_cupy_streams(rng):
    cp = need("cupy")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a)
    b_host = rng.standard_normal((157, 8)).astype(np.float32)
    b = cp.zeros((157, 8), dtype=cp.float32)
    src = cp.asarray(b_host)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        # Work queued on s ahead of the product: a long spin, then B's values. A product that ran on another
        # stream would read the zeros.
        _spin(cp, s)
        b[...] = src
        y = op @ b  # the current stream (s)
    s.synchronize()
    check(cp.asnumpy(y), *gpu_bound(a, op, b_host.astype(np.float64), "float32"))
    # stream= given explicitly (an int handle, and the Stream object)
    s2 = cp.cuda.Stream(non_blocking=True)
    b2 = cp.zeros((157, 8), dtype=cp.float32)
    with s2:
        _spin(cp, s2)
        b2[...] = src
    y2 = op.matmul(b2, stream=s2.ptr)
    y3 = op.matmul(b2, stream=s2)
    s2.synchronize()
    for r in (y2, y3):
        check(cp.asnumpy(r), *gpu_bound(a, op, b_host.astype(np.float64), "float32"))


def _spin(cp, stream):
    """About a millisecond of GPU work on `stream`."""
    x = cp.ones(1 << 20, dtype=cp.float32)
    with stream:
        for _ in range(20):
            x = cp.sqrt(x * x + 1.0)


def test_cupy_float16_output_and_plan(rng):
    cp = need("cupy")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a)
    plan = op.plan(16, b_dtype=cp.float16, out_dtype="float16", device=cp.cuda.Device().id)
    assert plan.report["n"] == 16 and plan.report["reason"]
    # Measured by default: a measured plan names the candidate it kept; the model's plan measures nothing.
    rep = plan.report
    assert rep["tuning"] == "model" or any(c["chosen"] for c in rep["diagnostics"]["candidates"]), rep
    model = op.plan(16, b_dtype=cp.float16, out_dtype="float16", device=cp.cuda.Device().id, tuning="model").report
    assert model["tuning"] == "model" and model["diagnostics"]["candidates"] == []
    assert model["tuning_budget_ms"] == 0.0 and "Tuning::model" in model["tuning_reason"]
    # A budget of one's own reaches the library and its report (n = 24: no choice stored for it yet).
    budgeted = op.plan(24, device=cp.cuda.Device().id, tuning_budget_ms=150).report
    assert budgeted["tuning_budget_ms"] == 150.0, budgeted
    assert budgeted["tuning_budget_source"].startswith("requested"), budgeted
    b_host = rng.standard_normal((157, 16)).astype(np.float16)
    y = plan.run(cp.asarray(b_host))
    assert y.dtype == cp.float16
    want, tol = gpu_bound(a, op, b_host.astype(np.float64), "float16")
    # float16 output: one more rounding of the fp32 result c (|c| <= |want| + tol): half an fp16 ulp of it, or half
    # the subnormal step 2^-24.
    check(cp.asnumpy(y).astype(np.float64), want, tol + (np.abs(want) + tol) * 2.0**-11 + 2.0**-25)
    out = cp.empty((203, 16), dtype=cp.float16)
    assert plan.run_repeat(3, cp.asarray(b_host), out) is out
    with pytest.raises(ValueError, match="plan was made for n = 16"):
        plan.run(cp.ones((157, 8), dtype=cp.float16))
    with pytest.raises(TypeError, match="plan takes float16"):
        plan.run(cp.ones((157, 16), dtype=cp.float32))


# ---------------------------------------------------------------------------------------------------- PyTorch
@pytest.mark.parametrize("precision,b_dtype", MODES)
@pytest.mark.parametrize("n", [1, 8, 24])
def test_torch_in_and_out(rng, precision, b_dtype, n):
    torch = need("torch")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a, precision=precision)
    b32 = torch.from_numpy(rng.standard_normal((157, n)).astype(np.float32))
    b = b32.to(getattr(torch, b_dtype)).cuda()
    y = op @ b
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32 and y.device == b.device
    b64 = b.double().cpu().numpy()
    check(y.cpu().numpy(), *gpu_bound(a, op, b64, b_dtype))


def test_torch_zero_copy_out_and_beta(rng):
    torch = need("torch")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a)
    b = torch.randn(157, 32, device="cuda")
    op @ b
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    y = op @ b
    grown = torch.cuda.memory_allocated() - before
    assert grown == -(-y.numel() * 4 // 512) * 512, (grown, y.numel() * 4)  # the output only
    c0 = torch.randn(203, 32, device="cuda")
    out = c0.clone()
    r = op.matmul(b, out=out, alpha=0.25, beta=-2.0)
    assert r is out and r.data_ptr() == out.data_ptr()
    check(out.cpu().numpy(), *gpu_bound(a, op, b.double().cpu().numpy(), "float32", alpha=0.25, beta=-2.0,
                                        c0=c0.cpu().numpy()))
    strided = torch.randn(157, 50, device="cuda")[:, 7:39]  # leading stride 50
    check((op @ strided).cpu().numpy(), *gpu_bound(a, op, strided.double().cpu().numpy(), "float32"))
    col_major = strided.t().contiguous().t()
    check((op @ col_major).cpu().numpy(), *gpu_bound(a, op, strided.double().cpu().numpy(), "float32"))


def test_torch_stream_ordering(rng):
    torch = need("torch")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a)
    src = torch.randn(157, 8, device="cuda")
    b = torch.zeros(157, 8, device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)  # keeps s busy; the copy and the product wait behind it on s
        b.copy_(src)
        y = op @ b
    s.synchronize()
    check(y.cpu().numpy(), *gpu_bound(a, op, src.double().cpu().numpy(), "float32"))


@pytest.mark.parametrize("symmetric", [True, False])
def test_torch_autograd(rng, symmetric):
    torch = need("torch")
    import bcsr24.torch
    a = laplacian_2d(13, 11) if symmetric else matrix(rng, 143, 143)
    op = bcsr24.SparseOperator.from_scipy(a)
    assert op.is_symmetric() == symmetric
    b = torch.randn(143, 8, device="cuda", requires_grad=True)
    y = op @ b  # recorded for autograd (b requires grad)
    assert y.requires_grad
    g = torch.randn(143, 8, device="cuda")
    (y * g).sum().backward()
    stored_t = op.stored_csr().T.tocsr()
    check(b.grad.cpu().numpy(), *gpu_bound(stored_t, op.T, g.double().cpu().numpy(), "float32"))
    b2 = torch.randn(143, 4, device="cuda", dtype=torch.float16, requires_grad=True)
    bcsr24.torch.matmul(op, b2).sum().backward()
    assert b2.grad.dtype == torch.float16 and b2.grad.shape == b2.shape


def test_torch_lobpcg_with_operator_tensor():
    torch = need("torch")
    import bcsr24.torch as bt
    import scipy.sparse.linalg as spla

    a = laplacian_2d(30, 30)
    op = bcsr24.SparseOperator.from_scipy(a, precision="split")
    A = bt.as_tensor(op)
    assert A.shape == (900, 900) and A.dtype == torch.float32 and A.is_cuda
    with pytest.raises(TypeError, match="supports A @ X"):
        A.sum()
    torch.manual_seed(0)
    X = torch.randn(900, 6, device="cuda")
    w, v = torch.lobpcg(A, k=4, X=X, largest=True, niter=400, tol=1e-5)
    w_ref = spla.eigsh(op.stored_csr(), k=4, which="LA", return_eigenvectors=False)
    assert np.allclose(np.sort(w.cpu().numpy()), np.sort(w_ref), rtol=1e-3)


# --------------------------------------------------------------------------------------------------------- JAX
@pytest.mark.parametrize("precision,b_dtype", [("fp16", "float32"), ("fp16", "float16"), ("bf16", "bfloat16"),
                                               ("split", "float32")])
def test_jax_in_and_out(rng, precision, b_dtype):
    jax = need("jax")
    import jax.numpy as jnp

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX sees no GPU (CPU-only jaxlib)")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a, precision=precision)
    b = jax.device_put(jnp.asarray(rng.standard_normal((157, 16)), dtype=getattr(jnp, b_dtype)), gpus[0])
    y = op @ b
    assert isinstance(y, jax.Array) and y.dtype == jnp.float32 and y.shape == (203, 16)
    assert list(y.devices())[0] == gpus[0]
    check(np.asarray(y), *gpu_bound(a, op, np.asarray(b.astype(jnp.float32)).astype(np.float64), b_dtype))
    with pytest.raises(TypeError, match="immutable"):
        op.matmul(b, out=jnp.zeros((203, 16), jnp.float32))


# ------------------------------------------------------------------------------------------------------- Numba
def test_numba_in_and_out(rng):
    need("numba")
    from numba import cuda

    if not cuda.is_available():
        pytest.skip("Numba sees no CUDA device")
    a = matrix(rng)
    op = bcsr24.SparseOperator.from_scipy(a)
    b_host = rng.standard_normal((157, 8)).astype(np.float32)
    y = op @ cuda.to_device(b_host)
    assert cuda.is_cuda_array(y)
    check(y.copy_to_host(), *gpu_bound(a, op, b_host.astype(np.float64), "float32"))


# ------------------------------------------------------------------------------------------------ cupyx solvers
def test_cupyx_cg_and_lobpcg(rng):
    cp = need("cupy")
    import cupyx.scipy.sparse.linalg as cla

    a = laplacian_2d(20, 20) + sp.identity(400) * 0.25
    op = bcsr24.SparseOperator.from_scipy(a, precision="split")
    lin = op.as_linear_operator()
    assert lin.backend == "cupy"
    b = cp.asarray(rng.standard_normal(400).astype(np.float32))
    # CuPy renamed cg's tol to rtol (as scipy did) in later versions.
    tol_name = "rtol" if "rtol" in inspect.signature(cla.cg).parameters else "tol"
    x, info = cla.cg(lin, b, maxiter=1000, **{tol_name: 1e-5})
    assert info == 0
    res = np.linalg.norm(a @ cp.asnumpy(x).astype(np.float64) - cp.asnumpy(b)) / float(cp.linalg.norm(b))
    assert res < 1e-4
    X = cp.asarray(rng.standard_normal((400, 4)).astype(np.float32))
    w, _ = cla.lobpcg(lin, X, largest=False, tol=1e-4, maxiter=500)
    w_ref = np.linalg.eigvalsh(a.toarray())[:4]
    assert np.allclose(np.sort(cp.asnumpy(w)), w_ref, rtol=1e-3)


def test_lobpcg_example_converges():
    need("cupy")
    script = os.path.join(ROOT, "examples", "python", "lobpcg.py")
    r = subprocess.run([sys.executable, script, "--mesh", "10", "--k", "4", "--tol", "1e-4", "--maxiter", "200",
                        "--check"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "eigenvalues agree" in r.stdout


def test_block_cg_example_converges():
    need("cupy")
    script = os.path.join(ROOT, "examples", "python", "block_cg.py")
    r = subprocess.run([sys.executable, script, "--problem", "mesh", "--mesh", "10", "--rhs", "4", "--check"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "converged" in r.stdout


# --------------------------------------------------------------------------------------------------- devices
def test_device_mismatch_names_both():
    cp = need("cupy")
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one GPU: the two-device check needs two")
    op = bcsr24.SparseOperator.from_scipy(laplacian_2d(8, 8))
    with cp.cuda.Device(0):
        op @ cp.ones((64, 8), dtype=cp.float32)
    with cp.cuda.Device(1):
        with pytest.raises(ValueError, match="device 0.*device 1|device 1.*device 0"):
            op @ cp.ones((64, 8), dtype=cp.float32)


def test_bench_runs(tmp_path):
    need("cupy")
    from bcsr24 import bench

    csv_path = tmp_path / "bench.csv"
    assert bench.main(["--mesh", "6", "--n", "8,16", "--reps", "3", "--warmup", "1", "--overhead-mesh", "4",
                       "--overhead-calls", "50", "--csv", str(csv_path)]) == 0
    text = csv_path.read_text()
    assert "bcsr24 op @ b (CuPy)" in text and "CuPy CSR @" in text and "overhead" in text
