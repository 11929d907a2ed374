"""The test matrix of the Python examples: a 3-D mesh operator with several unknowns per node, built with scipy.

Nodes sit on an nx x ny x nz grid; each couples to its 6 face neighbours (7-point stencil) or to all 26
neighbours (27-point stencil, weights 1/2, 1/4, 1/8 for face, edge and corner neighbours), and each node carries
`dofs` unknowns coupled by a small SPD block, as in vector-valued (elasticity-like) discretisations. The matrix is
kron(node operator, dof block): symmetric positive definite, 81 nonzeros per row for 27 points and 3 dofs. The
block's entries (0.3, 0.1) are not dyadic, so fp16 storage rounds them and split precision matters.

Also what the examples share besides: the mesh options, the exit status of --check, and products timed with CUDA
events.
"""

import numpy as np
import scipy.sparse as sp


def node_operator(nx, ny, nz, stencil):
    """The nx*ny*nz node operator: an irreducibly diagonally dominant M-matrix (SPD)."""
    if stencil == 7:
        def lap(n):
            return sp.diags([-np.ones(n - 1), 2.0 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
        ix, iy, iz = (sp.identity(n, format="csr") for n in (nx, ny, nz))
        return (sp.kron(sp.kron(lap(nz), iy), ix) + sp.kron(sp.kron(iz, lap(ny)), ix)
                + sp.kron(sp.kron(iz, iy), lap(nx))).tocsr()
    if stencil == 27:
        # kron(M, M, M) with M = I + a (sub + super diagonal) weighs a neighbour a^(offsets): a = 1/2.
        def m(n):
            return sp.diags([0.5 * np.ones(n - 1), np.ones(n), 0.5 * np.ones(n - 1)], [-1, 0, 1], format="csr")
        k = sp.kron(sp.kron(m(nz), m(ny)), m(nx)).tocsr()
        interior_sum = 6 * 0.5 + 12 * 0.25 + 8 * 0.125  # 7: the diagonal matches an interior row's couplings
        return (interior_sum * sp.identity(k.shape[0], format="csr") - (k - sp.identity(k.shape[0]))).tocsr()
    raise ValueError(f"stencil must be 7 or 27, got {stencil}")


def dof_block(dofs):
    """A dofs x dofs SPD coupling block (diagonally dominant, non-dyadic entries)."""
    b = np.eye(dofs)
    for d in range(1, dofs):
        b += np.diag(np.full(dofs - d, 0.3 / d), d) + np.diag(np.full(dofs - d, 0.3 / d), -d)
    return b


def mesh_matrix(nx, ny=None, nz=None, stencil=27, dofs=3, dtype=np.float64):
    """The SPD mesh matrix, CSR with int32 indices."""
    ny = nx if ny is None else ny
    nz = nx if nz is None else nz
    a = sp.kron(node_operator(nx, ny, nz, stencil), sp.csr_matrix(dof_block(dofs)), format="csr")
    a.sum_duplicates()
    a.indices = a.indices.astype(np.int32)
    a.indptr = a.indptr.astype(np.int32)
    return a.astype(dtype)


def describe(a, nx, ny, nz, stencil, dofs):
    return (f"3-D {stencil}-point mesh {nx}x{ny}x{nz}, {dofs} dofs per node: {a.shape[0]:,} rows, {a.nnz:,} nonzeros "
            f"({a.nnz / a.shape[0]:.1f} per row)")


def add_mesh_arguments(parser):
    """--mesh, --stencil and --dofs: an example's matrix, built by mesh_matrix on an N x N+1 x N+2 grid."""
    parser.add_argument("--mesh", type=int, default=70, help="nodes per side (the grid is N x N+1 x N+2; default 70)")
    parser.add_argument("--stencil", type=int, default=27, choices=(7, 27))
    parser.add_argument("--dofs", type=int, default=3)


def check_status(check, passed, verdict):
    """An example's exit status: with --check, 0 after printing "check: <verdict>" when it passed, else 1 after
    "check: FAILED"; 0 without --check."""
    if not check:
        return 0
    print(f"check: {verdict}" if passed else "check: FAILED")
    return 0 if passed else 1


def timed_call(cp, run, x, events):
    """run(x) between two CUDA events on the current stream, appended to `events` (GPU time, read after the run)."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    y = run(x)
    stop.record()
    events.append((start, stop))
    return y


def events_ms(cp, events):
    """Milliseconds between the event pairs of timed_call, summed (waits for the last one)."""
    return sum(cp.cuda.get_elapsed_time(start, stop) for start, stop in events)
