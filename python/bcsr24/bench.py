"""python -m bcsr24.bench: bcsr24's ``op @ b`` against torch.sparse.mm (CSR) and CuPy's CSR ``@``, and the call
overhead of Plan.run over the C++ SpmmPlan::run.

    python -m bcsr24.bench A.mtx --n 8,32,128            # a Matrix Market or .b24 file
    python -m bcsr24.bench --mesh 70 --n 8,16,32,128     # the examples' 3-D mesh matrix (27 points, 3 dofs)

Products: CUDA events around each run, after warm-up runs; before every timed run the L2 cache is flushed (a
buffer twice its size read) and the GPU kept busy 100 us more, so that the Python calls after it are enqueued
before the GPU is free and the events time the product on the device. Median and minimum over the runs, GFLOP/s
as 2 nnz n / time, and each method's relative error ||C - A B||_F / ||A B||_F against the float64 product beside
its time. bcsr24 is timed through ``op @ b`` on CuPy and on torch arrays (the Python path, output allocation
included), each library's CSR through its own operator on the same float32 B.

Call overhead: on a small matrix (--overhead-mesh, default 8: 2,160 rows) at n = 8, 1000 back-to-back
``plan.run(b, out=c)`` (and ``op @ b``) calls timed with two CUDA events, against ``plan.run_repeat(1000, ...)``,
the same C++ SpmmPlan::run loop without Python: (python - C++) / 1000 is the Python cost per call that the GPU
does not hide.
"""

import argparse
import csv
import statistics
import sys
import time

import numpy as np

from . import SparseOperator, _bcsr24, device_info


def _mesh(n):
    """The examples' mesh matrix (examples/python/mesh.py), rebuilt here so that the module needs no examples."""
    import scipy.sparse as sp

    def m(k):
        return sp.diags([0.5 * np.ones(k - 1), np.ones(k), 0.5 * np.ones(k - 1)], [-1, 0, 1], format="csr")

    k = sp.kron(sp.kron(m(n + 2), m(n + 1)), m(n)).tocsr()
    node = 7.0 * sp.identity(k.shape[0], format="csr") - (k - sp.identity(k.shape[0]))
    block = np.array([[1.0, 0.3, 0.15], [0.3, 1.0, 0.3], [0.15, 0.3, 1.0]])
    a = sp.kron(node, sp.csr_matrix(block), format="csr")
    a.sum_duplicates()
    return a, f"mesh {n}x{n + 1}x{n + 2} (27 points, 3 dofs)"


_FLUSH_SOURCE = r"""
extern "C" __global__ void bcsr24_bench_read(const uint4* buf, long long count, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const uint4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // never true for the zeroed buffer: keeps the loads, writes nothing
}

extern "C" __global__ void bcsr24_bench_wait(long long ns) {
  long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(500);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
"""


class _Flush:
    """Reads a buffer of twice the L2 size so that no run finds A or B in L2 from the run before (a read, as
    bench_spmm's flush: a write would leave dirty lines whose write-back the timed run would pay), then keeps the
    GPU busy for ``wait_us`` more (one thread polling the global timer): the Python calls that follow (start event,
    product) are enqueued while the GPU still works, so the events time the product on the device, as the C++
    benchmark's do, and not the latency of a Python call (which the call-overhead table measures on its own)."""

    def __init__(self, cp, l2_bytes, wait_us=100.0):
        self.cp = cp
        self.buf = cp.zeros(max(2 * l2_bytes, 1 << 20) // 16, dtype=cp.uint32).reshape(-1, 4)
        self.sink = cp.zeros(1, dtype=cp.uint32)
        module = cp.RawModule(code=_FLUSH_SOURCE)
        self.read = module.get_function("bcsr24_bench_read")
        self.wait = module.get_function("bcsr24_bench_wait")
        self.wait_ns = cp.int64(int(wait_us * 1e3))

    def __call__(self):
        self.read((1024,), (256,), (self.buf, self.cp.int64(self.buf.shape[0]), self.sink))
        if self.wait_ns > 0:
            self.wait((1,), (1,), (self.wait_ns,))


def _time(run, flush, warmup, reps):
    """Per-run milliseconds (CUDA events on the legacy default stream, which CuPy and torch use here)."""
    for _ in range(warmup):
        run()
    times = []
    timer = _bcsr24.EventTimer()
    for _ in range(reps):
        flush()
        timer.start(0)
        run()
        timer.stop(0)
        times.append(timer.elapsed_ms())
    return times


def _rel_error(c, ref):
    c = np.asarray(c, dtype=np.float64)
    return float(np.linalg.norm(c - ref) / max(np.linalg.norm(ref), 1e-300))


def products(args, a, label, rows_out):
    import cupy as cp
    import cupyx.scipy.sparse as csp

    try:
        import torch
    except ImportError:
        torch = None
    info = device_info()
    flush = _Flush(cp, info["l2_bytes"])
    t = time.perf_counter()
    op = SparseOperator.from_scipy(a, precision=args.precision)
    convert_s = time.perf_counter() - t
    c = op.census
    print(f"matrix: {label}: {a.shape[0]:,} x {a.shape[1]:,}, {a.nnz:,} nonzeros; bcsr24 {op.precision}, "
          f"{c['layout']}/{c['reordering']}, 2:4 share {c['sparse24_share']:.2f} (converted in {convert_s:.1f} s)")
    print(f"device: {info['name']} (sm_{info['compute_capability']}, L2 {info['l2_bytes'] >> 20} MiB); "
          f"warm-up {args.warmup}, {args.reps} timed runs each, L2 flushed before each")
    a32 = a.astype(np.float32)
    cupy_csr = csp.csr_matrix(a32)
    a64_gpu = csp.csr_matrix(a.astype(np.float64))
    torch_csr = None
    if torch is not None:
        torch_csr = torch.sparse_csr_tensor(torch.from_numpy(a32.indptr.astype(np.int64)),
                                            torch.from_numpy(a32.indices.astype(np.int64)),
                                            torch.from_numpy(a32.data), size=a32.shape, device="cuda")
    b_dtype = args.b_dtype
    rows = []
    header = f"{'n':>5} {'method':<28} {'B':>8} {'median ms':>10} {'min ms':>9} {'GFLOP/s':>9} {'rel. error':>11}"
    print(header)
    for n in args.n:
        rng = np.random.default_rng(n)
        b_host = rng.standard_normal((a.shape[1], n)).astype(np.float32)
        b32 = cp.asarray(b_host)
        ref = cp.asnumpy(a64_gpu @ b32.astype(cp.float64))
        b_ours = b32.astype(b_dtype)
        methods = [("bcsr24 op @ b (CuPy)", b_dtype, lambda: op @ b_ours)]
        if torch is not None:
            tb = torch.as_tensor(b_ours, device="cuda")
            tb32 = torch.as_tensor(b32, device="cuda")
            methods.append(("bcsr24 op @ b (torch)", b_dtype, lambda: op @ tb))
            methods.append(("torch.sparse.mm (CSR)", "float32", lambda: torch.sparse.mm(torch_csr, tb32)))
        methods.append(("CuPy CSR @", "float32", lambda: cupy_csr @ b32))
        for name, bt, run in methods:
            out = run()
            cp.cuda.Device().synchronize()
            host = out.cpu().numpy() if torch is not None and isinstance(out, torch.Tensor) else cp.asnumpy(out)
            err = _rel_error(host, ref)
            times = _time(run, flush, args.warmup, args.reps)
            med, best = statistics.median(times), min(times)
            gflops = 2.0 * a.nnz * n / (med * 1e-3) / 1e9
            print(f"{n:>5} {name:<28} {bt:>8} {med:>10.4f} {best:>9.4f} {gflops:>9.1f} {err:>11.2e}")
            rows.append({"matrix": label, "rows": a.shape[0], "nnz": a.nnz, "n": n, "method": name, "b_dtype": bt,
                         "precision": op.precision, "median_ms": med, "min_ms": best, "gflops": gflops,
                         "rel_error": err, "device": info["name"]})
        plan = op.plan_for(b_ours)
        print(f"{'':>5} plan: {plan.report['reason']}")
    return rows


def overhead(args):
    import cupy as cp

    try:
        import torch
    except ImportError:
        torch = None
    a, label = _mesh(args.overhead_mesh)
    op = SparseOperator.from_scipy(a, precision=args.precision)
    n, calls = 8, args.overhead_calls
    print(f"\ncall overhead: {label}, {a.shape[0]:,} rows, n = {n}, {calls} back-to-back calls, CUDA events around "
          f"all of them")
    rows = []
    libs = [("CuPy", lambda x: cp.asarray(x), lambda shape: cp.empty(shape, dtype=cp.float32))]
    if torch is not None:
        libs.append(("torch", lambda x: torch.as_tensor(x, device="cuda"),
                     lambda shape: torch.empty(shape, device="cuda")))
    rng = np.random.default_rng(0)
    b_host = rng.standard_normal((a.shape[1], n)).astype(np.float32).astype(args.b_dtype)
    timer = _bcsr24.EventTimer()

    def timed(loop):
        loop()  # warm-up (plans, allocator pools)
        best = []
        for _ in range(5):
            cp.cuda.Device().synchronize()
            timer.start(0)
            loop()
            timer.stop(0)
            best.append(timer.elapsed_ms())
        return statistics.median(best) * 1e3 / calls  # microseconds per call

    for lib, to_device, empty in libs:
        b = to_device(b_host)
        c = empty((a.shape[0], n))
        plan = op.plan_for(b)
        t_cpp = timed(lambda: plan.run_repeat(calls, b, c))

        def python_loop():
            for _ in range(calls):
                plan.run(b, out=c)

        def matmul_loop():
            for _ in range(calls):
                op @ b

        t_py = timed(python_loop)
        t_mm = timed(matmul_loop)
        print(f"  {lib:<6} C++ SpmmPlan::run {t_cpp:7.2f} us/call | plan.run(b, out=c) {t_py:7.2f} us/call "
              f"(+{t_py - t_cpp:5.2f}) | op @ b {t_mm:7.2f} us/call (+{t_mm - t_cpp:5.2f})")
        for method, t in (("C++ run_repeat", t_cpp), ("plan.run(out=c)", t_py), ("op @ b", t_mm)):
            rows.append({"matrix": label, "rows": a.shape[0], "nnz": a.nnz, "n": n, "method": f"overhead {lib}: "
                         f"{method}", "b_dtype": args.b_dtype, "precision": op.precision, "median_ms": t * 1e-3,
                         "min_ms": "", "gflops": "", "rel_error": "", "device": device_info()["name"],
                         "overhead_us": t - t_cpp})
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bcsr24.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("matrix", nargs="?", help="a .mtx, .mtx.gz or .b24 file")
    p.add_argument("--mesh", type=int, help="use the N x N+1 x N+2 27-point mesh with 3 dofs instead of a file")
    p.add_argument("--n", default="8,32,128", help="columns of B, comma-separated (default 8,32,128)")
    p.add_argument("--precision", default="fp16", choices=("fp16", "bf16", "split"))
    p.add_argument("--b-dtype", default="float32", choices=("float32", "float16"),
                   help="B of the bcsr24 runs (float16 needs fp16 A); the CSR libraries get float32")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--overhead-mesh", type=int, default=8, help="mesh size of the call-overhead matrix (0: skip)")
    p.add_argument("--overhead-calls", type=int, default=1000)
    p.add_argument("--csv", help="write every measurement to this CSV file")
    args = p.parse_args(argv)
    args.n = [int(x) for x in args.n.split(",") if x]
    if (args.matrix is None) == (args.mesh is None):
        p.error("give a matrix file or --mesh N (not both)")
    info = device_info()
    if not info["available"]:
        print(f"bcsr24.bench needs a GPU: {info['reason']}", file=sys.stderr)
        return 2
    if args.mesh is not None:
        a, label = _mesh(args.mesh)
    else:
        import scipy.sparse as sp

        # The CSR libraries multiply the file's matrix (a .b24 file's stored values); bcsr24 converts it with the
        # chosen precision.
        if args.matrix.endswith(".b24"):
            a = SparseOperator.from_file(args.matrix).stored_csr()
        else:
            a = _read_csr(args.matrix)
        a = sp.csr_matrix(a)
        label = args.matrix
    rows = products(args, a, label, a.shape[0])
    if args.overhead_mesh:
        rows += overhead(args)
    if args.csv:
        keys = ["matrix", "rows", "nnz", "n", "method", "b_dtype", "precision", "median_ms", "min_ms", "gflops",
                "rel_error", "overhead_us", "device"]
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys, restval="")
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {args.csv}")
    return 0


def _read_csr(path):
    """The file's matrix in float64 CSR, read by scipy."""
    import scipy.io

    try:
        return scipy.io.mmread(path).tocsr()
    except Exception as e:  # content scipy does not read (e.g. gzip without the .gz name): say so, then go on
        print(f"note: scipy cannot read {path} ({e}); the CSR libraries multiply the values bcsr24 stores in split "
              f"precision (about fp32) instead", file=sys.stderr)
        return SparseOperator.from_file(path, precision="split").stored_csr()


if __name__ == "__main__":
    sys.exit(main())
