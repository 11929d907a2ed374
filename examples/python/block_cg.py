"""Block conjugate gradients (O'Leary) for 16 right-hand sides of a 3-D mesh matrix, written in CuPy, with the
products A @ P through bcsr24 and through CuPy's own CSR matrix (float32), from the same right-hand sides.

    python examples/python/block_cg.py                      # 70^3 nodes x 3 dofs: 1.03M rows, 83M nonzeros
    python examples/python/block_cg.py --mesh 20 --check    # small; exit 1 unless both reach the tolerance alike

Prints both residual histories side by side (the largest relative residual ||b_j - A x_j|| / ||b_j|| over the
right-hand sides, per iteration), the final residuals recomputed with the float64 matrix, and the end-to-end times
(everything from the first product to the converged X, with the GPU synchronised before and after), split into
the products (CUDA events around each) and the rest.

The block algebra is written the way a GPU solver needs it, the same for both runs: the k x k Gram matrices of the
m x k blocks (m in the millions) are batched GEMMs over row chunks, summed (one GEMM with an inner dimension of a
million keeps only a few blocks of the GPU busy), the residual norms come from the diagonal of R^T R, and the
iteration synchronises the host once per iteration (the convergence test).
"""

import argparse
import sys
import time

import numpy as np

import bcsr24
from mesh import add_mesh_arguments, check_status, describe, events_ms, mesh_matrix, timed_call

_CHUNK_ROWS = 4096  # rows per batch of the Gram GEMMs: a few hundred batches for a million rows


def gram(cp, u, v):
    """U^T V (k x k, float64) for tall-skinny row-major U and V: strided-batched GEMMs over row chunks of
    _CHUNK_ROWS rows, their partial products summed in float64."""
    m, k = u.shape
    chunks = m // _CHUNK_ROWS
    full = chunks * _CHUNK_ROWS
    g = cp.zeros((k, v.shape[1]), dtype=cp.float64)
    if chunks:
        ub = u[:full].reshape(chunks, _CHUNK_ROWS, k)
        vb = v[:full].reshape(chunks, _CHUNK_ROWS, v.shape[1])
        g += cp.matmul(ub.transpose(0, 2, 1), vb).sum(axis=0, dtype=cp.float64)
    if full < m:
        g += (u[full:].T @ v[full:]).astype(cp.float64)
    return g


def block_cg(cp, apply, b, tol, maxiter):
    """X with A X = B for SPD A: one product per iteration; returns X and the residual history."""
    x = cp.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = gram(cp, r, r)
    b_norm = cp.sqrt(cp.diagonal(rr)).copy()
    history = []
    for _ in range(maxiter):
        # ||r_j|| from the diagonal of R^T R: no pass over R of its own; the one host synchronisation per iteration.
        rel = float(cp.max(cp.sqrt(cp.maximum(cp.diagonal(rr), 0.0)) / b_norm))
        history.append(rel)
        if rel <= tol:
            break
        q = apply(p)
        # alpha = (P^T A P)^-1 (R^T R); the k x k systems are solved in float64 (they are tiny).
        alpha = cp.linalg.solve(gram(cp, p, q), rr).astype(cp.float32)
        x += p @ alpha
        r -= q @ alpha
        rr_new = gram(cp, r, r)
        beta = cp.linalg.solve(rr, rr_new).astype(cp.float32)
        p = r + p @ beta
        rr = rr_new
    return x, history


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_mesh_arguments(p)
    p.add_argument("--rhs", type=int, default=16, help="right-hand sides (block width)")
    p.add_argument("--tol", type=float, default=1e-5, help="relative residual of every right-hand side")
    p.add_argument("--maxiter", type=int, default=2000)
    p.add_argument("--precision", default="split", choices=("fp16", "bf16", "split"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless both runs converge to the tolerance in iteration counts within 10%%")
    args = p.parse_args(argv)

    import cupy as cp
    import cupyx.scipy.sparse as csp

    nx, ny, nz = args.mesh, args.mesh + 1, args.mesh + 2
    a = mesh_matrix(nx, ny, nz, args.stencil, args.dofs)
    print(f"matrix: {describe(a, nx, ny, nz, args.stencil, args.dofs)}")
    op = bcsr24.SparseOperator.from_scipy(a, precision=args.precision)
    a32 = csp.csr_matrix(a.astype(np.float32))
    a64 = csp.csr_matrix(a)
    rng = np.random.default_rng(args.seed)
    b = cp.asarray(rng.standard_normal((a.shape[0], args.rhs)).astype(np.float32))

    # Plans for the block width exist before the clock starts (one plan; CuPy's CSR needs none).
    plan = op.plan_for(b)
    runs = []
    for label, product in ((f"bcsr24 ({args.precision})", plan.run), ("CuPy CSR (fp32)", lambda x: a32 @ x)):
        events = []

        def apply(x, product=product, events=events):
            return timed_call(cp, product, x, events)

        # Warm-up: two iterations compile CuPy's kernels (the first call of each in a process) and make cuSPARSE's
        # handle and buffers; bcsr24's plan already exists.
        block_cg(cp, apply, b, 0.0, 2)
        events.clear()
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        x, history = block_cg(cp, apply, b, args.tol, args.maxiter)
        cp.cuda.Device().synchronize()
        seconds = time.perf_counter() - t
        product_s = events_ms(cp, events) * 1e-3
        true_res = float(cp.max(cp.linalg.norm(a64 @ x.astype(cp.float64) - b, axis=0) / cp.linalg.norm(b, axis=0)))
        runs.append((label, history, seconds, true_res, product_s, len(events)))

    (l1, h1, s1, t1, p1, n1), (l2, h2, s2, t2, p2, n2) = runs
    print(f"\n{'iteration':>10}{l1:>24}{l2:>24}")
    for i in range(max(len(h1), len(h2))):
        if i < 10 or i % 25 == 0 or i >= max(len(h1), len(h2)) - 3:
            c1 = f"{h1[i]:.6e}" if i < len(h1) else ""
            c2 = f"{h2[i]:.6e}" if i < len(h2) else ""
            print(f"{i:>10}{c1:>24}{c2:>24}")
    print(f"\n{'iterations':>10}{len(h1) - 1:>24}{len(h2) - 1:>24}")
    print(f"{'residual':>10}{t1:>24.3e}{t2:>24.3e}   (float64 A, largest over the right-hand sides)")
    print(f"{'products':>10}{p1:>24.3f}{p2:>24.3f}   (s, {n1} / {n2} products: {p2 / max(p1, 1e-12):.2f}x)")
    print(f"{'rest':>10}{s1 - p1:>24.3f}{s2 - p2:>24.3f}   (s: block algebra, convergence tests)")
    print(f"{'time (s)':>10}{s1:>24.3f}{s2:>24.3f}   (CuPy / bcsr24: {s2 / max(s1, 1e-12):.2f}x end to end)")
    converged = h1[-1] <= args.tol and h2[-1] <= args.tol
    similar = abs(len(h1) - len(h2)) <= max(1, 0.1 * len(h2))
    print(f"both converged to {args.tol:g}: {'yes' if converged else 'NO'}; iteration counts "
          f"{'within' if similar else 'NOT within'} 10%")
    return check_status(args.check, converged and similar, "converged")


if __name__ == "__main__":
    sys.exit(main())
