"""Solvers on bcsr24's products, and SparseOperator as a LinearOperator for other libraries' solvers.

    X, info = bcsr24.linalg.cg(A, B, rtol=1e-8)        # A: scipy.sparse SPD matrix; B: (n,) or (n, k) CuPy/torch/...
    solver = bcsr24.linalg.SpdSolver(A)                # prepared once, for many solves
    X, info = solver.solve(B)

``lobpcg`` / ``eigsh`` / ``SpdSolver.eigenpairs`` compute the smallest or largest eigenpairs of a symmetric A with
bcsr24::solvers' LOBPCG (fp64 block algebra on the GPU, the same Chebyshev preconditioner).

``cg`` and ``SpdSolver`` run bcsr24::solvers' block CG (all k right-hand sides at once, fp64, Chebyshev
preconditioner whose products run on the sparse tensor cores; docs/SOLVERS.md) on the GPU for device arrays, and the
same algorithm on the host (the CPU reference path: slow, correct) for NumPy arrays.

``as_linear_operator`` wraps a SparseOperator for cupyx.scipy.sparse.linalg (CuPy vectors) or scipy.sparse.linalg
(NumPy), so that their solvers (gmres, minres, lobpcg, eigsh, ...) run their products through bcsr24.

    A = bcsr24.linalg.as_linear_operator(op)           # or op.as_linear_operator()
    w, v = cupyx.scipy.sparse.linalg.lobpcg(A, X, largest=False)

The operator has dtype float32: products take float32 vectors and blocks and return float32 (whatever the stored
precision: fp16, bf16 or split A all multiply float32 B). A float64 vector raises TypeError unless the operator was
made with ``allow_downcast=True``, which converts it to float32 on entry (the solver then iterates in float64 around
a float32 operator); other dtypes always raise. ``rmatvec``/``rmatmat`` (and ``.H``/``.T``) use ``op.T``: ``op``
itself when the stored matrix is symmetric, else an operator built once from A's stored values transposed.
"""

import time as _time

import numpy as np

from . import _arrays, _bcsr24
from . import errors as _errors

__all__ = ["as_linear_operator", "cg", "lobpcg", "eigsh", "SpdSolver", "SolveInfo"]


def _backend_base(backend):
    if backend is None:
        try:
            import cupy  # noqa: F401

            from . import _bcsr24

            backend = "cupy" if _bcsr24.device_count() > 0 else "scipy"
        except ImportError:
            backend = "scipy"
    if backend == "cupy":
        from cupyx.scipy.sparse.linalg import LinearOperator

        return LinearOperator, backend
    if backend == "scipy":
        from scipy.sparse.linalg import LinearOperator

        return LinearOperator, backend
    raise ValueError(f"backend={backend!r}: expected 'cupy', 'scipy' or None (cupy when CuPy and a GPU exist)")


def as_linear_operator(op, allow_downcast=False, backend=None):
    """A LinearOperator (dtype float32, shape op.shape) whose products are ``op @ x``.

    backend: ``"cupy"`` (cupyx.scipy.sparse.linalg, CuPy arrays), ``"scipy"`` (scipy.sparse.linalg, NumPy arrays:
    the CPU reference path), or None: CuPy when it is installed and a GPU is visible, else SciPy.
    allow_downcast: convert float64 vectors to float32 on entry instead of raising TypeError.
    """
    base, name = _backend_base(backend)

    class BcsrLinearOperator(base):
        """bcsr24's product as a {name} LinearOperator (float32)."""

        def __init__(self, operator, transposed_of=None):
            super().__init__(dtype=np.dtype(np.float32), shape=operator.shape)
            self.operator = operator
            self.allow_downcast = allow_downcast
            self.backend = name
            self._transposed_of = transposed_of

        def _prepare(self, x):
            dtype = _arrays.view(x, "x")[5]
            if dtype == "float32":
                return x
            if dtype == "float64" and self.allow_downcast:
                return x.astype(np.float32)
            if dtype == "float64":
                raise TypeError("x is float64 but the operator is float32: pass float32 vectors, or make the "
                                "operator with as_linear_operator(op, allow_downcast=True)")
            raise TypeError(f"x is {dtype}; the operator multiplies float32 vectors")

        def _matvec(self, x):
            return self.operator @ self._prepare(x)

        def _matmat(self, x):
            return self.operator @ self._prepare(x)

        def _rmatvec(self, x):
            return self.operator.T @ self._prepare(x)

        def _rmatmat(self, x):
            return self.operator.T @ self._prepare(x)

        def _adjoint(self):
            if self._transposed_of is not None:
                return self._transposed_of
            return BcsrLinearOperator(self.operator.T, transposed_of=self)

        _transpose = _adjoint

    BcsrLinearOperator.__doc__ = BcsrLinearOperator.__doc__.format(name=name)
    return BcsrLinearOperator(op)


# ------------------------------------------------------------------------------------------------------ solvers
_INT32_MAX = 2**31 - 1
_STOP_CODES = {"converged": 0, "breakdown": -1}


class SolveInfo(int):
    """What a solve did. As an int it follows SciPy's ``info``: 0 converged, > 0 the iterations made without
    converging (iteration limit, time limit, stagnation), < 0 a breakdown (A not positive definite).

    Attributes: stop ("converged", "max_iterations", "stagnation", "breakdown", "time_limit"), message, iterations,
    relative_residual and residual_norm (per column, true fp64 residuals |b_j - A x_j| of the returned X before any
    rounding to float32), history (the largest relative residual at the start and after each iteration), seconds
    (time to solution), setup_seconds, spectrum_seconds, product_seconds, product_share, products,
    host_synchronizations, preconditioner, fallback_iteration, chebyshev, plan, asymmetry (of A), and
    python_seconds (the whole call, conversions included).
    """

    def __new__(cls, report, asymmetry, python_seconds):
        stop = report["stop"]
        code = _STOP_CODES.get(stop, max(1, report["iterations"]))
        self = super().__new__(cls, code)
        self.__dict__.update(report)
        self.asymmetry = asymmetry
        self.python_seconds = python_seconds
        return self

    @property
    def converged(self):
        return self.stop == "converged"

    def __repr__(self):
        return f"SolveInfo({int(self)}, stop={self.stop!r}, iterations={self.iterations}, message={self.message!r})"


def _csr_of(A, name="A"):
    """(indptr int32, indices int32, data float64, shape) of a canonical CSR matrix from a scipy.sparse matrix, a
    cupyx.scipy.sparse matrix (copied to the host) or a bcsr24.SparseOperator (the matrix it was built from, or the
    matrix it stores when it was read from a file)."""
    from ._operator import SparseOperator

    if isinstance(A, SparseOperator):
        if A._source is None:
            rows, cols, indptr, indices, data = A._impl.stored_csr()
            return indptr, indices, data, (rows, cols)
        import scipy.sparse as sp

        indptr, indices, data, shape = A._source
        A = sp.csr_matrix((data, indices, indptr), shape=shape)
    if type(A).__module__.startswith("cupyx") and hasattr(A, "get"):
        A = A.get()
    import scipy.sparse as sp

    if not sp.issparse(A):
        raise TypeError(f"{name}: expected a scipy.sparse matrix, a bcsr24.SparseOperator or a "
                        f"bcsr24.linalg.SpdSolver, got {type(A).__module__}.{type(A).__name__}")
    if A.dtype.kind == "c":
        raise TypeError(f"{name} has complex values ({A.dtype}); bcsr24 solves real systems")
    rows, cols = A.shape
    if rows > _INT32_MAX or A.nnz > _INT32_MAX:
        raise _errors.SizeLimitError(f"{name} ({rows} rows, {A.nnz} nonzeros) exceeds bcsr24's 32-bit indices")
    a = A.tocsr(copy=False) if A.format == "csr" else A.tocsr()
    if not (a.has_canonical_format if hasattr(a, "has_canonical_format") else True):
        a = a.copy()
        a.sum_duplicates()
    a.sort_indices()
    indptr = np.ascontiguousarray(a.indptr, dtype=np.int32)
    indices = np.ascontiguousarray(a.indices, dtype=np.int32)
    data = np.ascontiguousarray(a.data, dtype=np.float64)
    return indptr, indices, data, (rows, cols)


def _ptr(a):
    return a.__array_interface__["data"][0]


class SpdSolver:
    """A symmetric positive definite A prepared once for many solves (bcsr24::solvers::SpdSolver): its fp64 copy,
    Jacobi scaling and preconditioner operators are made once, the spectrum bounds are found by the first solve and
    reused. ``solve(B)`` takes (n,) or (n, k) float64 or float32 arrays of CuPy, PyTorch, JAX, Numba (GPU, zero
    copy, the caller's stream) or NumPy (the host path).

    A: a scipy.sparse matrix (or cupyx.scipy.sparse, copied to the host once), or a bcsr24.SparseOperator (solved
    with the matrix it was built from: from_scipy / from_csr keep a reference to it; an operator read from a file
    is solved with the matrix it stores). A matrix symmetric to within ``symmetry_tol`` (relative, per pair; see
    docs/SOLVERS.md) is solved with its symmetric part (the asymmetry found is ``asymmetry``); a matrix that is not
    raises ValueError naming the worst pair, as does a matrix that is not square.
    """

    def __init__(self, A, *, symmetry_tol=1e-8, threads=0):
        indptr, indices, data, shape = _csr_of(A)
        if shape[0] != shape[1]:
            raise ValueError(f"A has shape {shape}: an SPD matrix is square")
        if indptr.shape[0] != shape[0] + 1:
            raise ValueError(f"A's indptr has {indptr.shape[0]} entries for {shape[0]} rows")
        self._impl = _bcsr24.SpdSolver.from_csr(shape[0], shape[1], _ptr(indptr), _ptr(indices), _ptr(data),
                                                float(symmetry_tol), int(threads))
        # ||A|| as the eigensolver measures it (the Gershgorin bound max_i sum_j |a_ij|)
        row_sums = np.bincount(np.repeat(np.arange(shape[0]), np.diff(indptr)), weights=np.abs(data),
                               minlength=shape[0])
        self._norm = float(row_sums.max()) if row_sums.size and row_sums.max() > 0 else 1.0
        self.shape = shape
        self.asymmetry = self._impl.asymmetry

    @property
    def nnz(self):
        return self._impl.nnz

    def _norm_estimate(self):
        return self._norm

    def eigenpairs(self, X, *, B=None, tol=1e-5, maxiter=500, largest=False, preconditioner="chebyshev", degree=15,
                   inner_precision="split", time_limit=None, stream=None):
        """w, V, info: the k smallest (or largest) eigenpairs by LOBPCG from the starting block X (n, k; float64 or
        float32, any supported library; random is fine). A pair converges once |A x - lambda x| <= tol ||A||
        (||A|| = info.norm_estimate). w is ascending for the smallest, descending for the largest; V has X's library
        and dtype, orthonormal columns. Non-convergence is reported in info (an int: 0 when every pair converged).

        B: the generalized problem A x = lambda B x with a symmetric positive definite B (a mass matrix: scipy.sparse,
        cupyx.scipy.sparse or a bcsr24.SparseOperator; copied to the device for the call). V is then B-orthonormal and
        the residual is |A x - lambda B x|. A B that is not positive definite raises ValueError."""
        return _eigenpairs(self, X, tol, maxiter, largest, preconditioner, degree, inner_precision, time_limit,
                           stream, B)

    def solve(self, B, x0=None, *, rtol=1e-8, atol=0.0, maxiter=None, preconditioner="chebyshev", degree=15,
              inner_precision="split", time_limit=None, stream=None):
        """X, info: the solution of A X = B (an array of B's library, shape and dtype) and a :class:`SolveInfo`.

        Every column stops when ``|b_j - A x_j| <= max(rtol |b_j|, atol)`` in the true fp64 residual.
        maxiter: block iterations (None: 1000); preconditioner: "chebyshev" (default), "jacobi" or "none";
        degree: the Chebyshev polynomial's degree; inner_precision: how the polynomial's products store A ("split",
        "fp16", "bf16"); time_limit: seconds (None: none); x0: initial guess (same shape, library and dtype as B).
        Not converging is reported in info, not raised. NaN or Inf in B or x0 raises ValueError before any work.
        """
        start = _time.perf_counter()
        v = _arrays.view(B, "B")
        n, k = v[2], v[3]
        if n != self.shape[0]:
            raise ValueError(f"B has {n} rows but A is {self.shape[0]} x {self.shape[1]}")
        if v[5] not in ("float64", "float32"):
            raise TypeError(f"B is {v[5]}: the solver takes float64 or float32 right-hand sides")
        if not 1 <= k <= 64:
            raise ValueError(f"B has {k} columns: the solver takes 1 to 64 right-hand sides at once")
        options = (float(rtol), float(atol), 1000 if maxiter is None else int(maxiter),
                   0.0 if time_limit is None else float(time_limit), x0 is not None, str(preconditioner),
                   int(degree), str(inner_precision))
        w = None
        if x0 is not None:
            w = _arrays.view(x0, "x0")
            if w[0] != v[0] or w[2] != n or w[3] != k or w[5] != v[5] or w[6] != v[6]:
                raise ValueError("x0 must have B's shape, dtype, library and device")
        if v[0] == _arrays.HOST:
            # The host path iterates in float64: float32 input is widened on entry and X rounded once at the end.
            b = np.ascontiguousarray(v[8], dtype=np.float64)
            x = np.empty((n,) if v[7] else (n, k), dtype=np.float64)
            if w is not None:
                x[...] = w[8]
            report = self._impl.solve_host(_ptr(b), 1 if v[7] else k, _ptr(x), 1 if v[7] else k, k, *options)
            if v[5] == "float32":
                x = x.astype(np.float32)
            X = x if v[10] is None else v[10](x)
        else:
            s = _arrays.default_stream(v) if stream is None else _arrays.stream_handle(stream)
            X, x_ptr = _arrays.empty(v, n, v[5])
            ldx = 1 if v[7] else k
            if w is not None:
                _bcsr24.copy_rows(x_ptr, ldx, w[1], w[4], n, k, 8 if v[5] == "float64" else 4, v[6], s)
            report = self._impl.solve(v[1], v[4], x_ptr, ldx, k, v[5] == "float32", v[6], s, *options)
            # x is written when the solve returns; JAX (and protocol-only arrays) get their result through finish().
            X = X if v[0] in (_arrays.TORCH, _arrays.CUPY) else _arrays.finish(v, X, s)
        return X, SolveInfo(report, self.asymmetry, _time.perf_counter() - start)


def _float64_block(X, v):
    """X as a float64 array of its own library (a copy unless it already is one), row-major."""
    if v[5] == "float64" and v[4] == v[3]:
        return X.copy() if hasattr(X, "copy") else X.clone()
    if v[0] == _arrays.TORCH:
        return X.to(_arrays._torch.float64).contiguous()
    if v[0] == _arrays.HOST:
        return np.array(v[8], dtype=np.float64, order="C")
    if v[0] == _arrays.JAX:
        import jax.numpy as jnp

        return jnp.asarray(X, dtype=jnp.float64)
    import cupy

    return cupy.ascontiguousarray(cupy.asarray(X), dtype=cupy.float64)


def _same_library(values, like, v):
    """A 1-D float64 array of `like`'s library (and device) holding `values`."""
    if v[0] == _arrays.TORCH:
        return _arrays._torch.tensor(values, dtype=_arrays._torch.float64, device=like.device)
    if v[0] == _arrays.CUPY:
        import cupy

        return cupy.asarray(values, dtype=cupy.float64)
    if v[0] == _arrays.JAX:
        import jax.numpy as jnp

        return jnp.asarray(values)
    return np.asarray(values, dtype=np.float64)


class EigenInfo(SolveInfo):
    """What an eigenvalue computation did (SpdSolver.eigenpairs): an int like SolveInfo (0 every pair converged), with
    the report's fields as attributes: stop, message, iterations, converged_pairs, eigenvalues, residual_norm
    (|A x_j - lambda_j x_j|), norm_estimate (the ||A|| of the tolerance), history, seconds, product_share, ..."""


def _eigenpairs(solver, X, tol, maxiter, largest, preconditioner, degree, inner_precision, time_limit, stream,
                mass=None):
    start = _time.perf_counter()
    mass_args = ()
    if mass is not None:
        m_indptr, m_indices, m_data, m_shape = _csr_of(mass, "B")
        if m_shape != solver.shape:
            raise ValueError(f"B has shape {m_shape} but A is {solver.shape[0]} x {solver.shape[1]}")
        mass_args = (m_shape[0], _ptr(m_indptr), _ptr(m_indices), _ptr(m_data))
    v = _arrays.view(X, "X")
    n, k = v[2], v[3]
    if v[7]:
        raise ValueError("X must be 2-D (n, k): the starting block")
    if n != solver.shape[0]:
        raise ValueError(f"X has {n} rows but A is {solver.shape[0]} x {solver.shape[1]}")
    if v[5] not in ("float64", "float32"):
        raise TypeError(f"X is {v[5]}: the eigensolver takes float64 or float32 blocks")
    x = _float64_block(X, v)
    w_view = _arrays.view(x, "X")
    host = w_view[0] == _arrays.HOST
    s = 0 if host else (_arrays.default_stream(w_view) if stream is None else _arrays.stream_handle(stream))
    if not host and w_view[0] == _arrays.JAX:
        # JAX arrays are immutable: the solver writes into a buffer of its own, handed back through DLPack.
        buf, ptr = _arrays.empty(w_view, n, "float64")
        _bcsr24.copy_rows(ptr, k, w_view[1], w_view[4], n, k, 8, w_view[6], s)
        x, w_view = buf, (w_view[0], ptr) + w_view[2:]
    report = solver._impl.eigen(w_view[1], w_view[4], k, host, w_view[6], s, float(tol),
                                500 if maxiter is None else int(maxiter), bool(largest),
                                0.0 if time_limit is None else float(time_limit), str(preconditioner), int(degree),
                                str(inner_precision), *mass_args)
    if not host and v[0] not in (_arrays.TORCH, _arrays.CUPY):
        x = _arrays.finish(v, x, s)
    if v[5] == "float32":
        x = x.float() if v[0] == _arrays.TORCH else x.astype("float32")
    if host and v[10] is not None:
        x = v[10](x)
    w = _same_library(report["eigenvalues"], X, v)
    return w, x, EigenInfo(report, solver.asymmetry, _time.perf_counter() - start)


def _solver_for(A, symmetry_tol):
    from ._operator import SparseOperator

    if isinstance(A, SpdSolver):
        return A
    if isinstance(A, SparseOperator):
        solver = A._spd_solvers.get(symmetry_tol)
        if solver is None:
            solver = A._spd_solvers[symmetry_tol] = SpdSolver(A, symmetry_tol=symmetry_tol)
        return solver
    return SpdSolver(A, symmetry_tol=symmetry_tol)


def lobpcg(A, X, B=None, M=None, Y=None, tol=None, maxiter=None, largest=True, verbosityLevel=0,
           retLambdaHistory=False, retResidualNormsHistory=False, restartControl=20, *, preconditioner="chebyshev",
           stream=None):
    """The eigenpairs of a symmetric A from the starting block X (n, k) by bcsr24's LOBPCG: ``w, v = lobpcg(A, X)``
    with the signature of scipy.sparse.linalg.lobpcg / cupyx.scipy.sparse.linalg.lobpcg.

    A: a scipy.sparse matrix, a bcsr24.SparseOperator or an SpdSolver; X: a float64 or float32 array of CuPy,
    PyTorch, JAX (GPU) or NumPy (host path); w and v come back in X's library (v in X's dtype). B: the generalized
    problem A x = lambda B x with a symmetric positive definite B (a sparse mass matrix, as A; v is then
    B-orthonormal; a B that is not positive definite raises ValueError). tol: the residual norm |A x - lambda B x|
    each pair must reach (None: 1e-5 ||A||, ||A|| the Gershgorin bound); maxiter: iterations (None: 500, where SciPy's
    default is 20). Not converging is reported by a warning, as SciPy does. Differences: constraints (Y) and the
    lambda history are not supported (NotImplementedError); M is ignored (bcsr24 uses its own Chebyshev
    preconditioner for the smallest eigenvalues, none for the largest); retResidualNormsHistory returns the largest
    |r| / ||A|| per iteration.
    """
    import warnings

    if Y is not None:
        raise NotImplementedError("bcsr24.linalg.lobpcg: constraints (Y) are not supported yet")
    if retLambdaHistory:
        raise NotImplementedError("bcsr24.linalg.lobpcg: retLambdaHistory is not supported")
    if M is not None:
        warnings.warn("bcsr24.linalg.lobpcg ignores M: it preconditions with its own Chebyshev polynomial",
                      stacklevel=2)
    solver = _solver_for(A, 1e-8)
    norm = solver._norm_estimate()
    rel = 1e-5 if tol is None else float(tol) / norm
    w, v, info = _eigenpairs(solver, X, rel, maxiter, largest, preconditioner, 15, "split", None, stream, B)
    if info.stop != "converged":
        warnings.warn(f"bcsr24.linalg.lobpcg: {info.message}", UserWarning, stacklevel=2)
    if verbosityLevel:
        print(info.message)
    lobpcg.last_info = info
    if retResidualNormsHistory:
        return w, v, list(info.history)
    return w, v


def eigsh(A, k=6, which="SA", v0=None, tol=None, maxiter=None, return_eigenvectors=True, *, M=None, seed=0):
    """The k smallest ("SA") or largest ("LA") eigenpairs of a symmetric A: (w, v), w ascending as
    scipy.sparse.linalg.eigsh returns them. The starting block is random (seeded), on the GPU (CuPy) when CuPy and a
    device are there, else NumPy; v0, a starting block (n, k), takes its place. M: the generalized problem
    A x = lambda M x with a symmetric positive definite M, as eigsh's M (lobpcg's B)."""
    if which not in ("SA", "LA"):
        raise ValueError(f"which={which!r}: bcsr24.linalg.eigsh computes 'SA' (smallest) or 'LA' (largest)")
    solver = _solver_for(A, 1e-8)
    n = solver.shape[0]
    if v0 is None:
        x = np.random.default_rng(seed).standard_normal((n, k))
        if _bcsr24.device_count() > 0:
            try:
                import cupy

                x = cupy.asarray(x)
            except ImportError:
                pass
    else:
        x = v0
    w, v = lobpcg(solver, x, B=M, tol=tol, maxiter=maxiter, largest=(which == "LA"))
    if which == "LA":  # descending from the solver: ascending as eigsh returns
        w, v = w[::-1], v[:, ::-1]
    return (w, v) if return_eigenvectors else w


def cg(A, B, x0=None, *, rtol=1e-8, atol=0.0, maxiter=None, preconditioner="chebyshev", degree=15,
       inner_precision="split", time_limit=None, stream=None, symmetry_tol=1e-8):
    """Solves A X = B for a symmetric positive definite A with bcsr24's block CG: X, info.

    The signature follows scipy.sparse.linalg.cg / cupyx.scipy.sparse.linalg.cg (``X, info = cg(A, B, x0,
    rtol=..., atol=..., maxiter=...)``, info 0 when converged), but B may hold up to 64 right-hand sides as
    columns, all solved together. A: a scipy.sparse matrix, a bcsr24.SparseOperator, or a :class:`SpdSolver` (reused
    as it is: make one to solve with the same A many times; cg on a SparseOperator keeps the solver it made on the
    operator for the next call). Other arguments as :meth:`SpdSolver.solve`.
    """
    from ._operator import SparseOperator

    if isinstance(A, SpdSolver):
        solver = A
    elif isinstance(A, SparseOperator):
        solver = A._spd_solvers.get(symmetry_tol)
        if solver is None:
            solver = A._spd_solvers[symmetry_tol] = SpdSolver(A, symmetry_tol=symmetry_tol)
    else:
        solver = SpdSolver(A, symmetry_tol=symmetry_tol)
    return solver.solve(B, x0, rtol=rtol, atol=atol, maxiter=maxiter, preconditioner=preconditioner, degree=degree,
                        inner_precision=inner_precision, time_limit=time_limit, stream=stream)
