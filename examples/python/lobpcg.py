"""The k smallest eigenpairs of a 3-D mesh matrix with cupyx.scipy.sparse.linalg.lobpcg, once with bcsr24's operator
and once with CuPy's own CSR matrix (float32), from the same starting block.

    python examples/python/lobpcg.py                       # 70^3 nodes x 3 dofs: 1.03M rows, 83M nonzeros, k = 16
    python examples/python/lobpcg.py --mesh 20 --check     # small; exit 1 unless both runs agree

Prints the eigenvalues of both runs, their iterations and products, the total time of each solve and the time spent
in its products (CUDA events around every product; bcsr24's plan creation is kept out of the product time and
reported on its own). The eigenvalues agree when every |difference| is within the sum of the two runs' residual
norms ||A x - lambda x|| (with the float64 A): each Ritz value lies within its residual norm of an eigenvalue.
"""

import argparse
import sys
import time

import numpy as np

import bcsr24
from mesh import add_mesh_arguments, check_status, describe, events_ms, mesh_matrix, timed_call


def timed_operator(cla, cp, apply, shape, label, plan_for=None):
    """A float32 LinearOperator whose products are timed with CUDA events (GPU time, collected after the run)."""
    events = []
    plan_seconds = [0.0]
    widths = set()

    def product(x):
        widths.add(x.shape[1] if x.ndim == 2 else 1)
        if plan_for is not None:
            t = time.perf_counter()
            plan = plan_for(x)  # made once per width; kept out of the product time
            plan_seconds[0] += time.perf_counter() - t
            run = plan.run
        else:
            run = apply
        return timed_call(cp, run, x, events)

    op = cla.LinearOperator(shape, matvec=product, matmat=product, dtype=np.float32)

    def report():
        ms = events_ms(cp, events)
        return {"label": label, "products": len(events), "product_ms": ms, "plan_s": plan_seconds[0],
                "widths": len(widths)}

    return op, report


def solve(cla, cp, op, x0, args):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    w, v, history = cla.lobpcg(op, x0.copy(), largest=False, tol=args.tol, maxiter=args.maxiter,
                               retResidualNormsHistory=True)
    cp.cuda.Device().synchronize()
    return w, v, len(history), time.perf_counter() - t


def residuals(cp, a64, w, v):
    """||A v_i - w_i v_i|| / ||v_i|| with the float64 matrix."""
    v = v.astype(cp.float64)
    r = a64 @ v - v * w.astype(cp.float64)[None, :]
    return cp.asnumpy(cp.linalg.norm(r, axis=0) / cp.linalg.norm(v, axis=0))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_mesh_arguments(p)
    p.add_argument("--k", type=int, default=16, help="eigenpairs (block size)")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--maxiter", type=int, default=20, help="cupyx's default is 20")
    p.add_argument("--precision", default="split", choices=("fp16", "bf16", "split"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless the eigenvalues agree within the residual norms and the iteration counts "
                        "within 10%%")
    args = p.parse_args(argv)

    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as cla

    nx, ny, nz = args.mesh, args.mesh + 1, args.mesh + 2  # unequal sides: no exactly repeated eigenvalues
    t = time.perf_counter()
    a = mesh_matrix(nx, ny, nz, args.stencil, args.dofs)
    print(f"matrix: {describe(a, nx, ny, nz, args.stencil, args.dofs)} (built in {time.perf_counter() - t:.1f} s)")

    t = time.perf_counter()
    op = bcsr24.SparseOperator.from_scipy(a, precision=args.precision)
    c = op.census
    print(f"bcsr24: {op.precision}, {c['layout']}/{c['reordering']}, 2:4 share {c['sparse24_share']:.2f}, "
          f"stored A relative error {op.scaling_report['max_relative_error']:.2g} "
          f"(converted in {time.perf_counter() - t:.1f} s)")
    a32 = csp.csr_matrix(a.astype(np.float32))
    a64 = csp.csr_matrix(a)

    rng = np.random.default_rng(args.seed)
    x0 = cp.asarray(rng.standard_normal((a.shape[0], args.k)).astype(np.float32))

    # Warm-up, untimed. CuPy compiles each of its own kernels the first time a process uses it (NVRTC, about half a
    # second each; lobpcg reaches some only when pairs converge and the block narrows): a full solve on a small
    # mesh compiles them, so that neither timed solve pays for them. Then two iterations with each operator on the
    # real matrix; bcsr24 makes its plan for the block width there. None of this belongs to the comparison.
    t = time.perf_counter()
    small = csp.csr_matrix(mesh_matrix(8, 9, 10, args.stencil, args.dofs).astype(np.float32))
    small_x0 = cp.asarray(rng.standard_normal((small.shape[0], args.k)).astype(np.float32))
    cla.lobpcg(small, small_x0, largest=False, tol=args.tol, maxiter=max(args.maxiter, 200))
    cp.cuda.Device().synchronize()
    print(f"warm-up: CuPy's kernels compiled on a {small.shape[0]:,}-row mesh in {time.perf_counter() - t:.1f} s")
    warm, warm_report = timed_operator(cla, cp, None, a.shape, "warm-up", plan_for=op.plan_for)
    warm_theirs, _ = timed_operator(cla, cp, lambda x: a32 @ x, a.shape, "warm-up")
    warm_args = argparse.Namespace(**{**vars(args), "maxiter": 2})
    for lin in (warm, warm_theirs):
        solve(cla, cp, lin, x0, warm_args)
    plan_ms = warm_report()["plan_s"] * 1e3

    ours, ours_report = timed_operator(cla, cp, None, a.shape, f"bcsr24 ({args.precision})", plan_for=op.plan_for)
    theirs, theirs_report = timed_operator(cla, cp, lambda x: a32 @ x, a.shape, "CuPy CSR (fp32)")
    results = []
    for lin, report in ((ours, ours_report), (theirs, theirs_report)):
        w, v, iterations, seconds = solve(cla, cp, lin, x0, args)
        order = cp.argsort(w)
        w, v = w[order], v[:, order]
        res = residuals(cp, a64, w, v)
        results.append((cp.asnumpy(w).astype(np.float64), res, iterations, seconds, report()))

    (w1, r1, it1, s1, rep1), (w2, r2, it2, s2, rep2) = results
    print(f"\n{'':24}{rep1['label']:>22}{rep2['label']:>22}")
    print(f"{'iterations':24}{it1:>22}{it2:>22}")
    print(f"{'products':24}{rep1['products']:>22}{rep2['products']:>22}")
    print(f"{'time in products (ms)':24}{rep1['product_ms']:>22.2f}{rep2['product_ms']:>22.2f}"
          f"   (CuPy / bcsr24: {rep2['product_ms'] / max(rep1['product_ms'], 1e-9):.2f}x)")
    print(f"{'per product (ms)':24}{rep1['product_ms'] / max(rep1['products'], 1):>22.3f}"
          f"{rep2['product_ms'] / max(rep2['products'], 1):>22.3f}")
    print(f"{'total solve (s)':24}{s1:>22.3f}{s2:>22.3f}   (after a 2-iteration warm-up of each; bcsr24's plan "
          f"made there in {plan_ms:.1f} ms)")
    # lobpcg applies A to the residuals of the pairs not yet converged: the block narrows as it converges, and each
    # new width is a new bcsr24 plan (made once, then reused), whose creation is part of the solve's time.
    print(f"{'block widths':24}{rep1['widths']:>22}{rep2['widths']:>22}   (bcsr24 plans made during the solve: "
          f"{rep1['plan_s']:.3f} s)")
    print(f"\n{'i':>3}{'eigenvalue (bcsr24)':>22}{'(CuPy CSR)':>22}{'|difference|':>15}{'r1 + r2':>12}")
    agree = True
    for i in range(len(w1)):
        diff = abs(w1[i] - w2[i])
        ok = diff <= r1[i] + r2[i]
        agree &= bool(ok)
        print(f"{i:>3}{w1[i]:>22.10g}{w2[i]:>22.10g}{diff:>15.3g}{r1[i] + r2[i]:>12.3g}{'' if ok else '  !'}")
    same_iterations = abs(it1 - it2) <= max(1, 0.1 * it2)
    print(f"\neigenvalues agree within the residual norms: {'yes' if agree else 'NO'}; "
          f"iterations {it1} vs {it2}: {'within' if same_iterations else 'NOT within'} 10%")
    return check_status(args.check, agree and same_iterations, "eigenvalues agree")


if __name__ == "__main__":
    sys.exit(main())
