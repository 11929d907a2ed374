"""16 right-hand sides of an SPD system to a true relative residual of 1e-8, three ways, all in CuPy float64 and from
the same B:

1. bcsr24.linalg.cg (bcsr24::solvers: block CG, Chebyshev preconditioner on the sparse tensor cores);
2. block CG written in CuPy with CuPy's float64 CSR products, Jacobi-preconditioned (what a CuPy user would write);
3. cupyx.scipy.sparse.linalg.cg once per column, Jacobi-preconditioned (what a CuPy user would call).

    python examples/python/block_cg.py --problem lognormal --grid 1300   # 2-D log-normal diffusion, 1.69M rows
    python examples/python/block_cg.py --problem mesh --mesh 70          # 3-D mesh, 1.03M rows (mesh.py)
    python examples/python/block_cg.py --problem elasticity --cells 24   # clamped P1 elasticity by scikit-fem
    python examples/python/block_cg.py --problem lognormal --grid 40 --check   # small; exit 1 unless all converge

Prints per run the iterations, the largest true relative residual (recomputed here with the float64 matrix), the
time and the speedup of bcsr24. Times are end to end for one solve (the GPU synchronised before and after), with each
run's set-up outside the clock: bcsr24's SpdSolver and CuPy's CSR matrix are made before, and each run is repeated
once untimed first so that kernels are compiled and loaded. bcsr24's own split (time to solution, products' share,
Python overhead) comes from its report. Baselines that do not converge within --baseline-maxiter or --time-limit are
reported as such, with their time so far: the speedup is then a lower bound.
"""

import argparse
import sys
import time

import numpy as np

import bcsr24
from bcsr24.linalg import SpdSolver
from diffusion import diffusion_matrix, skfem_elasticity
from mesh import add_mesh_arguments, check_status, mesh_matrix

_CHUNK_ROWS = 4096  # rows per batch of the Gram GEMMs: a few hundred batches for a million rows


def gram(cp, u, v):
    """U^T V (k x k) for tall-skinny row-major U and V: strided-batched GEMMs over row chunks, summed."""
    m, k = u.shape
    chunks = m // _CHUNK_ROWS
    full = chunks * _CHUNK_ROWS
    g = cp.zeros((k, v.shape[1]), dtype=cp.float64)
    if chunks:
        ub = u[:full].reshape(chunks, _CHUNK_ROWS, k)
        vb = v[:full].reshape(chunks, _CHUNK_ROWS, v.shape[1])
        g += cp.matmul(ub.transpose(0, 2, 1), vb).sum(axis=0)
    if full < m:
        g += u[full:].T @ v[full:]
    return g


def cupy_block_pcg(cp, a, inv_diag, b, tol, maxiter, time_limit):
    """Jacobi-preconditioned block CG (O'Leary) in CuPy float64: X, iterations, converged. One host synchronisation
    per iteration (the convergence test on the recursive residual's norms)."""
    x = cp.zeros_like(b)
    r = b.copy()
    z = inv_diag[:, None] * r
    p = z.copy()
    rz = gram(cp, r, z)
    b_norm = cp.linalg.norm(b, axis=0)
    start = time.perf_counter()
    for it in range(maxiter):
        rel = float(cp.max(cp.linalg.norm(r, axis=0) / b_norm))
        if rel <= tol:
            return x, it, True
        if time.perf_counter() - start > time_limit:
            return x, it, False
        q = a @ p
        alpha = cp.linalg.solve(gram(cp, p, q), rz)
        x += p @ alpha
        r -= q @ alpha
        z = inv_diag[:, None] * r
        rz_new = gram(cp, r, z)
        beta = cp.linalg.solve(rz, rz_new)
        p = z + p @ beta
        rz = rz_new
    return x, maxiter, False


def cupyx_cg_columns(cp, a, inv_diag, b, tol, maxiter, time_limit):
    """cupyx.scipy.sparse.linalg.cg once per column with a Jacobi preconditioner: X, total iterations, converged."""
    from cupyx.scipy.sparse.linalg import LinearOperator, cg

    n = a.shape[0]
    m = LinearOperator((n, n), matvec=lambda v: inv_diag * v, dtype=cp.float64)
    x = cp.zeros_like(b)
    total, converged, start = 0, True, time.perf_counter()
    for j in range(b.shape[1]):
        count = [0]

        def callback(_, count=count):
            count[0] += 1

        remaining = max(1, maxiter)
        try:
            x[:, j], info = cg(a, b[:, j], rtol=tol, maxiter=remaining, M=m, callback=callback)
        except TypeError:  # CuPy before rtol=
            x[:, j], info = cg(a, b[:, j], tol=tol, maxiter=remaining, M=m, callback=callback)
        total += count[0]
        converged = converged and info == 0
        if time.perf_counter() - start > time_limit:
            return x, total, False
    return x, total, converged


def build_problem(args):
    if args.problem == "lognormal":
        shape = (args.grid, args.grid) if args.dim == 2 else (args.grid,) * 3
        a = diffusion_matrix(shape, sigma=args.sigma, correlation=args.correlation, seed=args.seed)
        return a, f"{args.dim}-D log-normal diffusion {'x'.join(map(str, shape))} (sigma {args.sigma})"
    if args.problem == "mesh":
        nx, ny, nz = args.mesh, args.mesh + 1, args.mesh + 2
        return mesh_matrix(nx, ny, nz, args.stencil, args.dofs), f"3-D {args.stencil}-point mesh {nx}x{ny}x{nz}"
    return skfem_elasticity(args.cells), f"clamped P1 elasticity (scikit-fem), {args.cells}^3 cells"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", default="lognormal", choices=("lognormal", "mesh", "elasticity"))
    p.add_argument("--grid", type=int, default=1300, help="lognormal: cells per side (default 1300)")
    p.add_argument("--dim", type=int, default=2, choices=(2, 3))
    p.add_argument("--sigma", type=float, default=2.5)
    p.add_argument("--correlation", type=int, default=4)
    p.add_argument("--cells", type=int, default=24, help="elasticity: cells per side")
    add_mesh_arguments(p)
    p.add_argument("--rhs", type=int, default=16, help="right-hand sides")
    p.add_argument("--tol", type=float, default=1e-8, help="true relative residual of every right-hand side")
    p.add_argument("--maxiter", type=int, default=5000, help="bcsr24's block iterations")
    p.add_argument("--baseline-maxiter", type=int, default=20000)
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per baseline run")
    p.add_argument("--runs", default="bcsr24,cupy_block,cupyx_cg")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", action="store_true", help="exit 1 unless every run converges")
    args = p.parse_args(argv)

    import cupy as cp
    import cupyx.scipy.sparse as csp

    t = time.perf_counter()
    a, name = build_problem(args)
    print(f"matrix: {name}: {a.shape[0]:,} rows, {a.nnz:,} nonzeros ({time.perf_counter() - t:.1f} s to build)")
    rng = np.random.default_rng(args.seed)
    b = cp.asarray(rng.uniform(-1.0, 1.0, (a.shape[0], args.rhs)))
    a64 = csp.csr_matrix(a)
    inv_diag = cp.asarray(1.0 / a.diagonal())
    b_norm = cp.linalg.norm(b, axis=0)

    def true_residual(x):
        return float(cp.max(cp.linalg.norm(b - a64 @ x, axis=0) / b_norm))

    runs = [r for r in args.runs.split(",") if r]
    results = {}
    if "bcsr24" in runs:
        t = time.perf_counter()
        solver = SpdSolver(a)
        setup = time.perf_counter() - t
        solver.solve(b, maxiter=1)  # untimed: device blocks, plans, kernels loaded, the spectrum bounds found
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        x, info = solver.solve(b, rtol=args.tol, maxiter=args.maxiter)
        cp.cuda.Device().synchronize()
        seconds = time.perf_counter() - t
        overhead = info.python_seconds - info.seconds - info.setup_seconds
        print(f"bcsr24: SpdSolver made in {setup:.2f} s (host); {info.message}")
        print(f"        time to solution {info.seconds:.3f} s (spectrum bounds reused from the warm-up solve), products "
              f"{100 * info.product_share:.0f}%, Python overhead {1e3 * overhead:.2f} ms "
              f"({100 * overhead / max(seconds, 1e-12):.2f}%); plan: {info.plan}")
        results["bcsr24.linalg.cg"] = (info.iterations, true_residual(x), seconds, info == 0)
    if "cupy_block" in runs:
        cupy_block_pcg(cp, a64, inv_diag, b, args.tol, 2, 1e9)  # untimed: CuPy's kernels compiled
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        x, its, ok = cupy_block_pcg(cp, a64, inv_diag, b, args.tol, args.baseline_maxiter, args.time_limit)
        cp.cuda.Device().synchronize()
        results["CuPy block PCG (CSR fp64)"] = (its, true_residual(x), time.perf_counter() - t, ok)
    if "cupyx_cg" in runs:
        cupyx_cg_columns(cp, a64, inv_diag, b[:, :1], args.tol, 2, 1e9)
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        x, its, ok = cupyx_cg_columns(cp, a64, inv_diag, b, args.tol, args.baseline_maxiter, args.time_limit)
        cp.cuda.Device().synchronize()
        results[f"cupyx cg x {args.rhs} (Jacobi)"] = (its, true_residual(x), time.perf_counter() - t, ok)

    base = results.get("bcsr24.linalg.cg")
    print(f"\n{'run':<30}{'iterations':>12}{'residual':>12}{'time (s)':>11}  bcsr24 speedup")
    for label, (its, res, seconds, ok) in results.items():
        speedup = "" if base is None or label.startswith("bcsr24") else (
            f"{seconds / base[2]:.2f}x" + ("" if ok else " (lower bound: not converged)"))
        print(f"{label:<30}{its:>12}{res:>12.2e}{seconds:>11.3f}  {speedup}{'' if ok else '  NOT CONVERGED'}")
    passed = all(ok and res <= args.tol * (1 + 1e-6) for _, res, _, ok in results.values())
    return check_status(args.check, passed, "converged")


if __name__ == "__main__":
    sys.exit(main())
