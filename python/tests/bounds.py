"""Element-wise error bounds of bcsr24's products, derived from the arithmetic as in test/gpu/gpu_harness.hpp's
ModeArithmetic (docs/PRECISION.md): never a tolerance picked to pass.

For row i (ScalingPolicy::per_row: stored = a * 2^-e_i with e_i = ilogb(max_j |a_ij|) - 14, so 2^e_i <= row max /
2^14; otherwise the matrix-wide 2^exponent of scaling_report):
  storing a:   |stored - a| <= u_a |a| + s_a 2^e_i
  staging b:   |staged - b| <= u_b |b| + s_b max_k |b_kj|      (GPU, float32 B only; 16-bit B is exact)
  split mode drops A_lo B_lo: <= 2^-22 |a| |b|                  (GPU only; the CPU reference keeps it)
  accumulation: (2 k_i + extra) additions, each off by at most u_acc (2^-23 for the GPU's fp32 tensor cores, which
                may truncate; 2^-53 for the CPU reference's float64), and the rounding of the result to float32.
"""

import numpy as np
import scipy.sparse as sp

ARITHMETIC = {
    # precision: (u_a, s_a, dropped, u_b for float32 B, s_b for float32 B)
    "fp16": (2.0**-11, 2.0**-25, 0.0, 2.0**-11, 2.0**-39),
    "bf16": (2.0**-8, 2.0**-134, 0.0, 2.0**-8, 0.0),
    "split": (2.0**-22, 2.0**-35, 2.0**-22, 2.0**-22, 2.0**-50),
}


def row_steps(a, op):
    """2^e_i, the scale of each row's stored values (an upper bound for per-row scaling)."""
    rep = op.scaling_report
    a = sp.csr_matrix(a)
    if rep["per_row"]:
        row_max = np.zeros(a.shape[0])
        absa = abs(a)
        nz = np.diff(absa.indptr) > 0
        row_max[nz] = absa.max(axis=1).toarray().ravel()[nz]
        return np.where(row_max > 0, row_max / 2.0**14, 0.0)
    return np.full(a.shape[0], 2.0 ** rep["exponent"])


def bound(a, op, b, alpha=1.0, beta=0.0, c0=None, path="cpu", b_float32=True, extra_terms=16):
    """(reference float64 result, element-wise bound) for alpha * A @ b + beta * c0, with A the ORIGINAL matrix and
    b exactly as the library was given it (float16 values already rounded)."""
    u_a, s_a, dropped, u_b32, s_b32 = ARITHMETIC[op.precision]
    gpu = path == "gpu"
    u_b, s_b = (u_b32, s_b32) if (gpu and b_float32) else (0.0, 0.0)
    if not gpu:
        dropped = 0.0
    u_acc = 2.0**-23 if gpu else 2.0**-53
    a = sp.csr_matrix(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    vector = b.ndim == 1
    b2 = b.reshape(-1, 1) if vector else b
    absa = abs(a)
    ref = a @ b2
    abs_sum = absa @ abs(b2)
    abs_b = (a != 0).astype(np.float64) @ abs(b2)
    abs_a = np.asarray(absa.sum(axis=1)).reshape(-1, 1)
    k = np.diff(a.indptr).reshape(-1, 1).astype(np.float64)
    terms = 2.0 * k + extra_terms
    gamma = terms * u_acc / (1.0 - terms * u_acc)
    col_max = abs(b2).max(axis=0, initial=0.0).reshape(1, -1)
    step = row_steps(a, op).reshape(-1, 1)
    product_error = (abs_sum * (u_a + u_b + u_a * u_b + dropped + gamma) + abs_b * step * s_a
                     + abs_a * (1.0 + u_a) * s_b * col_max)
    c_old = np.zeros_like(ref) if (beta == 0.0 or c0 is None) else np.asarray(c0, np.float64).reshape(ref.shape)
    want = alpha * ref + beta * c_old
    u32 = 2.0**-23
    tol = abs(alpha) * product_error + abs(beta * c_old) * 2 * u32 + abs(want) * u32 + 1e-300
    if vector:
        want, tol = want.ravel(), tol.ravel()
    return want, tol


def check(got, want, tol):
    """Asserts every element within its bound and a non-zero output (a product writing nothing cannot pass)."""
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.all(np.isfinite(got)), "non-finite outputs"
    err = np.abs(got - want)
    worst = float(np.max(err / tol)) if err.size else 0.0
    assert np.all(err <= tol), f"{int(np.sum(err > tol))} of {err.size} outputs outside the bound (max ratio {worst:.3g})"
    assert np.linalg.norm(got) > 0, "the product is all zero"
    return worst
