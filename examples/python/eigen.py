"""The 16 smallest eigenpairs of a 3-D mesh matrix (or a 2-D log-normal diffusion matrix, or the normalized Laplacian
of a power-law graph: graph.py), three ways, from the same starting block:

1. bcsr24's LOBPCG (SpdSolver.eigenpairs: fp64 block algebra on the GPU, the Chebyshev preconditioner on bcsr24's
   products);
2. cupyx.scipy.sparse.linalg.lobpcg with CuPy's float32 CSR matrix (no preconditioner: cupyx has none to offer);
3. torch.lobpcg with a torch sparse CSR tensor (float32).

    python examples/python/eigen.py --mesh 70                      # 1.03M rows, 83M nonzeros (mesh.py)
    python examples/python/eigen.py --problem lognormal --grid 1000
    python examples/python/eigen.py --problem graph --vertices 1000000   # ~11M nonzeros, eigenvalues in [0, 2]
    python examples/python/eigen.py --mesh 10 --check              # small; exit 1 unless bcsr24 converges and agrees

Every run stops at |A x - lambda x| <= tol ||A|| (tol 1e-5, ||A|| the Gershgorin bound; cupyx takes that as its
absolute tolerance, torch its relative one) or at --maxiter iterations. Printed per run: iterations, time (GPU
synchronised before and after, set-up outside the clock), the largest residual recomputed here in float64, and
the eigenvalues side by side; bcsr24's eigenvalues are checked against each reference within the sum of the two
residual norms (a symmetric matrix has an eigenvalue within |r| of every Ritz value).
"""

import argparse
import sys
import time

import numpy as np

from bcsr24.linalg import SpdSolver
from diffusion import diffusion_matrix
from graph import normalized_laplacian
from mesh import add_mesh_arguments, check_status, mesh_matrix


def residual_norms(cp, a64, x, w):
    """|A x_j - w_j x_j| in float64, per column."""
    x = cp.asarray(x, dtype=cp.float64)
    w = cp.asarray(w, dtype=cp.float64)
    return cp.asnumpy(cp.linalg.norm(a64 @ x - x * w[None, :], axis=0))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", default="mesh", choices=("mesh", "lognormal", "graph"))
    p.add_argument("--grid", type=int, default=1000)
    p.add_argument("--vertices", type=int, default=1000000, help="graph: vertices")
    add_mesh_arguments(p)
    p.add_argument("--k", type=int, default=16)
    p.add_argument("--tol", type=float, default=1e-5, help="relative to ||A|| (Gershgorin)")
    p.add_argument("--maxiter", type=int, default=300)
    p.add_argument("--degree", type=int, default=15, help="bcsr24: the Chebyshev preconditioner's degree")
    p.add_argument("--precision", default="split", choices=("split", "fp16", "bf16"),
                   help="bcsr24: the preconditioner's products")
    p.add_argument("--torch-tol", type=float, default=None,
                   help="torch.lobpcg's own tol (default --tol; its criterion differs: pass a smaller one to make it "
                        "reach --tol in the residual measured here)")
    p.add_argument("--runs", default="bcsr24,cupyx,torch")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)

    import cupy as cp
    import cupyx.scipy.sparse as csp

    t = time.perf_counter()
    if args.problem == "mesh":
        nx, ny, nz = args.mesh, args.mesh + 1, args.mesh + 2
        a = mesh_matrix(nx, ny, nz, args.stencil, args.dofs)
        name = f"3-D {args.stencil}-point mesh {nx}x{ny}x{nz}, {args.dofs} dofs"
    elif args.problem == "graph":
        a = normalized_laplacian(args.vertices)
        name = f"normalized Laplacian of a power-law graph, {args.vertices:,} vertices"
    else:
        a = diffusion_matrix((args.grid, args.grid))
        name = f"2-D log-normal diffusion {args.grid}^2"
    print(f"matrix: {name}: {a.shape[0]:,} rows, {a.nnz:,} nonzeros ({time.perf_counter() - t:.1f} s to build)")
    norm = float(abs(a).sum(axis=1).max())
    x0 = np.random.default_rng(args.seed).standard_normal((a.shape[0], args.k))
    a64 = csp.csr_matrix(a)
    runs = {}

    if "bcsr24" in args.runs:
        solver = SpdSolver(a)
        options = dict(degree=args.degree, inner_precision=args.precision)
        solver.eigenpairs(cp.asarray(x0), tol=args.tol, maxiter=1, **options)  # untimed: blocks, plans, spectrum
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        w, v, info = solver.eigenpairs(cp.asarray(x0), tol=args.tol, maxiter=args.maxiter, **options)
        cp.cuda.Device().synchronize()
        seconds = time.perf_counter() - t
        print(f"bcsr24: {info.message}; products {100 * info.product_share:.0f}% of {info.seconds:.3f} s, "
              f"{info.host_synchronizations} host synchronisations, preconditioner {info.preconditioner}")
        runs["bcsr24 LOBPCG"] = (cp.asnumpy(w), residual_norms(cp, a64, v, w), info.iterations, seconds,
                                 info == 0)
    if "cupyx" in args.runs:
        from cupyx.scipy.sparse.linalg import lobpcg as cupyx_lobpcg

        a32 = csp.csr_matrix(a.astype(np.float32))
        cupyx_lobpcg(a32, cp.asarray(x0, dtype=cp.float32), largest=False, maxiter=2)  # untimed: kernels compiled
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        w, v, hist = cupyx_lobpcg(a32, cp.asarray(x0, dtype=cp.float32), largest=False, tol=args.tol * norm,
                                  maxiter=args.maxiter, retResidualNormsHistory=True)
        cp.cuda.Device().synchronize()
        seconds = time.perf_counter() - t
        res = residual_norms(cp, a64, v, w)
        runs["cupyx lobpcg (CSR fp32)"] = (cp.asnumpy(w), res, len(hist), seconds,
                                           bool(np.all(res <= args.tol * norm * 1.5)))
    if "torch" in args.runs:
        import torch

        at = torch.sparse_csr_tensor(torch.tensor(a.indptr, dtype=torch.int64), torch.tensor(a.indices, dtype=torch.int64),
                                     torch.tensor(a.data, dtype=torch.float32), size=a.shape, device="cuda")
        xt = torch.tensor(x0, dtype=torch.float32, device="cuda")
        torch.lobpcg(at, k=args.k, X=xt, niter=2, largest=False)  # untimed
        torch.cuda.synchronize()
        t = time.perf_counter()
        torch_tol = args.tol if args.torch_tol is None else args.torch_tol
        w, v = torch.lobpcg(at, k=args.k, X=xt, niter=args.maxiter, tol=torch_tol, largest=False)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t
        wn, vn = w.cpu().numpy(), cp.asarray(v.cpu().numpy())
        res = residual_norms(cp, a64, vn, wn)
        runs["torch.lobpcg (CSR fp32)"] = (wn, res, -1, seconds, bool(np.all(res <= args.tol * norm * 1.5)))

    base = runs.get("bcsr24 LOBPCG")
    print(f"\n{'run':<26}{'iterations':>11}{'max |r| / ||A||':>17}{'time (s)':>10}  bcsr24 speedup")
    for label, (w, res, its, seconds, ok) in runs.items():
        speedup = "" if base is None or label.startswith("bcsr24") else f"{seconds / base[3]:.2f}x"
        print(f"{label:<26}{its if its >= 0 else '-':>11}{res.max() / norm:>17.2e}{seconds:>10.3f}  {speedup}"
              f"{'' if ok else '  (not converged)'}")
    agree = True
    if base is not None:
        print("\neigenvalues (bcsr24 | others):")
        for j in range(args.k):
            row = f"  {base[0][j]:.10e}"
            for label, (w, res, _, _, _) in runs.items():
                if label.startswith("bcsr24"):
                    continue
                close = abs(base[0][j] - w[j]) <= base[1][j] + res[j]
                agree = agree and close
                row += f" | {w[j]:.10e}{'' if close else ' (differs beyond the residuals)'}"
            print(row)
    passed = base is not None and base[4] and agree
    return check_status(args.check, passed, "bcsr24 converged and agrees with the references")


if __name__ == "__main__":
    sys.exit(main())
