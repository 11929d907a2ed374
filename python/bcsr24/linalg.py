"""SparseOperator as a LinearOperator of cupyx.scipy.sparse.linalg (CuPy vectors) or scipy.sparse.linalg (NumPy),
so that their solvers (cg, gmres, minres, lobpcg, eigsh, ...) run their products through bcsr24.

    A = bcsr24.linalg.as_linear_operator(op)           # or op.as_linear_operator()
    w, v = cupyx.scipy.sparse.linalg.lobpcg(A, X, largest=False)

The operator has dtype float32: products take float32 vectors and blocks and return float32 (whatever the stored
precision: fp16, bf16 or split A all multiply float32 B). A float64 vector raises TypeError unless the operator was
made with ``allow_downcast=True``, which converts it to float32 on entry (the solver then iterates in float64 around
a float32 operator); other dtypes always raise. ``rmatvec``/``rmatmat`` (and ``.H``/``.T``) use ``op.T``: ``op``
itself when the stored matrix is symmetric, else an operator built once from A's stored values transposed.
"""

import numpy as np

from . import _arrays

__all__ = ["as_linear_operator"]


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
