"""SparseOperator: A preprocessed once (bcsr24::SparseOperator), multiplied by arrays of any supported library."""

import errno
import math
import numbers
import operator as _op_index
import os
import threading

import numpy as np

from . import _arrays, _bcsr24
from ._plan import Plan
from .errors import SizeLimitError

_HOST = _arrays.HOST
_view = _arrays.view
_default_stream = _arrays.default_stream
_stream_handle = _arrays.stream_handle
_get_ident = threading.get_ident

_PRECISIONS = {"fp16": "fp16", "float16": "fp16", "half": "fp16", "bf16": "bf16", "bfloat16": "bf16",
               "split": "split"}
_SCALINGS = ("per_row", "auto", "none")
_LAYOUTS = ("auto", "aligned", "condensed")
_REORDERS = ("auto", "none", "rcm")
_KERNELS = ("auto", "split_pipelined", "csr_cuda_cores")
_TUNINGS = ("measure", "model")  # bcsr24::Tuning
_INT32_MAX = 2**31 - 1

# The B dtypes each stored precision multiplies (bcsr24::ElementType): its own 16-bit type, or float32 converted
# while staged; split precision needs float32 (its B is split into hi + lo too).
_B_DTYPES = {"fp16": ("float32", "float16"), "bf16": ("float32", "bfloat16"), "split": ("float32",)}


def _forwarded(name, doc):
    """A read-only property whose value is the C++ operator's attribute of the same name."""
    return property(lambda self: getattr(self._impl, name), doc=doc)


def _choice(value, accepted, name):
    if value not in accepted:
        raise ValueError(f"{name}={value!r}: expected one of {', '.join(repr(a) for a in accepted)}")
    return value


def _tuning_budget(value, tuning):
    """A plan's tuning_budget_ms as the library takes it: 0.0 for the default (None)."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"tuning_budget_ms={value!r}: expected a number of milliseconds or None")
    budget = float(value)
    if not math.isfinite(budget) or budget < 0:
        raise ValueError(f"tuning_budget_ms={value!r}: expected a finite number >= 0 (or None for the default)")
    if budget > 0 and tuning != "measure":
        raise ValueError(f"tuning_budget_ms={value!r} applies to tuning='measure'; tuning={tuning!r} times nothing")
    return budget


def _options(precision, scaling, layout, reorder, threads):
    if not isinstance(precision, str) or precision not in _PRECISIONS:
        raise ValueError(f"precision={precision!r}: expected one of 'fp16', 'bf16', 'split'")
    threads = _op_index.index(threads)
    if threads < 0:
        raise ValueError(f"threads={threads}: expected >= 0 (0: all hardware threads)")
    return (_PRECISIONS[precision], _choice(scaling, _SCALINGS, "scaling"), _choice(layout, _LAYOUTS, "layout"),
            _choice(reorder, _REORDERS, "reorder"), threads)


def _device_index(device):
    """-1 for the CPU, else a CUDA ordinal, from None, 'cpu', 'cuda', 'cuda:1', an int, or a torch/CuPy device."""
    if device is None:
        return _bcsr24.current_device() if _bcsr24.device_count() > 0 else -1
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        if device == "cpu":
            return -1
        if device == "cuda":
            return max(_bcsr24.current_device(), 0)
        if device.startswith("cuda:"):
            return int(device[5:])
        raise ValueError(f"device={device!r}: expected 'cpu', 'cuda', 'cuda:N' or an int")
    kind = getattr(device, "type", None)
    if kind == "cpu":
        return -1
    for attr in ("index", "id"):
        value = getattr(device, attr, None)
        if isinstance(value, int):
            return value
    if kind == "cuda":
        return max(_bcsr24.current_device(), 0)
    raise TypeError(f"device: expected 'cpu', 'cuda:N', an int or a torch/CuPy device, got {device!r}")


class SparseOperator:
    """A sparse matrix A converted once to bcsr24's tiled format, for ``A @ B`` with tall-skinny B.

    Build with :meth:`from_scipy` or :meth:`from_file`; multiply with ``op @ b`` (a plan per shape, dtype, device,
    stream and thread is made on first use and kept) or through an explicit :meth:`plan`. ``b`` may be an array
    of CuPy, PyTorch, JAX, Numba (or anything speaking ``__cuda_array_interface__`` / DLPack) on a GPU, or a
    NumPy array (the CPU reference path).

    Options (keywords of the constructors), as bcsr24::OperatorOptions:

    - ``precision``: ``"fp16"`` (default), ``"bf16"``, or ``"split"`` (fp16 hi + lo, about fp32 accuracy; B must
      be float32);
    - ``scaling``: ``"per_row"`` (default: a power of two per row keeps every finite value in range), ``"auto"``
      (one power of two for the matrix), ``"none"`` (out-of-range values raise :class:`bcsr24.RangeError`);
    - ``layout``: ``"auto"`` (default), ``"aligned"``, ``"condensed"``;
    - ``reorder``: ``"auto"`` (default), ``"none"``, ``"rcm"``; B and C stay in A's own order whatever is chosen;
    - ``threads``: host threads of the conversion, 0 (default) = all.

    The device copy is made on the device of the first GPU array multiplied (or of the first GPU plan); an array
    on another device later raises ValueError naming both.
    """

    def __init__(self, impl, _key=None):
        if _key is not _CONSTRUCT:
            raise TypeError("use SparseOperator.from_scipy, from_csr or from_file")
        self._impl = impl
        self._rows = impl.rows
        self._cols = impl.cols
        self._plans = {}
        self._transpose = None
        self._symmetric = None
        self._lock = threading.Lock()
        # The CSR arrays it was built from (references, not copies), for bcsr24.linalg's solvers, which work with
        # the fp64 matrix; None for an operator read from a file. And the solvers linalg.cg made on it.
        self._source = None
        self._spd_solvers = {}

    # ------------------------------------------------------------------------------------------------ builders
    @classmethod
    def from_scipy(cls, a, *, precision="fp16", scaling="per_row", layout="auto", reorder="auto", threads=0):
        """From any scipy.sparse matrix or array (a cupyx.scipy.sparse one is copied to the host first).

        CSR with int32 indices and float64 or float32 values is read in place (the C++ side copies it once into
        its own CSR); other formats are converted with ``.tocsr()``, wider indices are narrowed (or
        SizeLimitError beyond 32 bits), other real values widened to float64. Duplicates are summed and
        explicit zeros dropped. @raise TypeError for complex values or non-sparse input.
        """
        opts = _options(precision, scaling, layout, reorder, threads)
        if type(a).__module__.startswith("cupyx") and hasattr(a, "get"):
            a = a.get()
        import scipy.sparse as sp

        if not sp.issparse(a):
            raise TypeError(f"a: expected a scipy.sparse matrix or array, got {type(a).__module__}."
                            f"{type(a).__name__} (for a dense array use scipy.sparse.csr_array(a))")
        if a.ndim != 2:
            raise ValueError(f"a must be 2-D, got shape {a.shape}")
        if a.dtype.kind == "c":
            raise TypeError(f"a has complex values ({a.dtype}); bcsr24 multiplies real matrices")
        if a.format != "csr":
            a = a.tocsr()
        return cls._from_arrays(a.indptr, a.indices, a.data, a.shape, opts)

    @classmethod
    def from_csr(cls, indptr, indices, data, shape, *, precision="fp16", scaling="per_row", layout="auto",
                 reorder="auto", threads=0):
        """From CSR arrays on the host (as scipy's ``(data, indices, indptr)``): the same rules as from_scipy."""
        opts = _options(precision, scaling, layout, reorder, threads)
        return cls._from_arrays(np.asarray(indptr), np.asarray(indices), np.asarray(data), tuple(shape), opts)

    @classmethod
    def _from_arrays(cls, indptr, indices, data, shape, opts):
        rows, cols = (_op_index.index(s) for s in shape)
        if rows < 0 or cols < 0:
            raise ValueError(f"shape {shape}: negative dimensions")
        if rows > _INT32_MAX or cols > _INT32_MAX:
            raise SizeLimitError(f"shape {shape} exceeds bcsr24's 32-bit indices")
        if indptr.ndim != 1 or indptr.shape[0] != rows + 1:
            raise ValueError(f"indptr has shape {indptr.shape}, expected ({rows + 1},) for {rows} rows")
        nnz = int(indptr[-1]) if rows >= 0 and indptr.shape[0] else 0
        if nnz > _INT32_MAX:
            raise SizeLimitError(f"{nnz} nonzeros exceed bcsr24's 32-bit indices")
        if indices.ndim != 1 or indices.shape[0] < nnz or data.ndim != 1 or data.shape[0] < nnz:
            raise ValueError(f"indices ({indices.shape[0]}) and data ({data.shape[0]}) must hold indptr[-1] = {nnz} "
                             f"entries")
        if indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu":
            raise TypeError(f"indptr and indices must be integers, got {indptr.dtype} and {indices.dtype}")
        if data.dtype.kind == "c":
            raise TypeError(f"data has complex values ({data.dtype}); bcsr24 multiplies real matrices")
        if data.dtype.kind not in "fiub":
            raise TypeError(f"data must be real numbers, got {data.dtype}")
        # Views where the arrays already are int32 / float64 / float32 and contiguous; copies otherwise.
        if indptr.dtype != np.int32:
            if indptr.shape[0] and int(indptr.max(initial=0)) > _INT32_MAX:
                raise SizeLimitError("indptr exceeds bcsr24's 32-bit indices")
            indptr = indptr.astype(np.int32)
        if indices.dtype != np.int32:
            if nnz and int(indices[:nnz].max()) > _INT32_MAX:
                raise SizeLimitError("column indices exceed bcsr24's 32-bit indices")
            indices = indices.astype(np.int32)
        if data.dtype != np.float64 and data.dtype != np.float32:
            data = data.astype(np.float64)  # exact for every integer and float16 value
        indptr = np.ascontiguousarray(indptr)
        indices = np.ascontiguousarray(indices)
        data = np.ascontiguousarray(data)
        ptr = lambda x: x.__array_interface__["data"][0]  # noqa: E731
        impl = _bcsr24.Operator.from_csr(rows, cols, ptr(indptr), ptr(indices), ptr(data), data.dtype == np.float32,
                                         *opts)
        op = cls(impl, _CONSTRUCT)
        op._source = (indptr, indices, data, (rows, cols))
        return op

    @classmethod
    def from_file(cls, path, *, precision="fp16", scaling="per_row", layout="auto", reorder="auto", threads=0,
                  pattern_values="ones", seed=1):
        """Reads a Matrix Market file (.mtx, or gzip content such as .mtx.gz) or a preprocessed .b24 file (by its
        extension; a .b24 keeps its own precision, layout and order, and the options are not used).

        pattern_values: ``"ones"`` or ``"random"`` (uniform in [-1, 1), reproducible from ``seed``) for pattern
        files. @raise FileNotFoundError, bcsr24.ParseError (file, line, problem; line 0 for a bad .b24 file).
        """
        opts = _options(precision, scaling, layout, reorder, threads)
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        _choice(pattern_values, ("ones", "random"), "pattern_values")
        impl = _bcsr24.Operator.from_file(path, *opts, pattern_values, _op_index.index(seed))
        return cls(impl, _CONSTRUCT)

    def save(self, path):
        """Writes the preprocessed matrix to a .b24 file, which :meth:`from_file` loads without converting."""
        self._impl.save(os.fspath(path))

    # ------------------------------------------------------------------------------------------------ properties
    @property
    def shape(self):
        return (self._rows, self._cols)

    ndim = 2

    nnz = _forwarded("nnz", "Nonzeros of the source matrix (explicit zeros excluded).")

    precision = _forwarded("precision", """How A's values are stored: ``"fp16"``, ``"bf16"`` or ``"split"``.""")

    @property
    def dtype(self):
        """The element type A is stored in: numpy.float16 for fp16; bfloat16 for bf16 (ml_dtypes' dtype when that
        package is installed, else the string ``"bfloat16"``); numpy.float32 for split precision, whose hi + lo
        pair carries about fp32's 22-24 significant bits. Products are float32 (see :meth:`plan`)."""
        p = self._impl.precision
        if p == "fp16":
            return np.dtype(np.float16)
        if p == "split":
            return np.dtype(np.float32)
        try:
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        except ImportError:
            return "bfloat16"

    options = _forwarded("options", "The options the operator was built with (for a .b24 file: the file's precision, "
                                    "layout and order).")

    census = _forwarded("census", "Tile statistics (bcsr24::TileCensus): 2:4, dense and empty 16x32 tiles, bytes, "
                                  "2:4 share.")

    layout_report = _forwarded("layout_report", "The layout and row order chosen and why, with the thesis layout's "
                                                "tiles and bytes beside them.")

    scaling_report = _forwarded("scaling_report", "Range findings and the power-of-two scaling applied "
                                                  "(bcsr24::Fp16Scaling), incl. the relative error of the stored A.")

    @property
    def device(self):
        """The CUDA device of the operator's device copy, or None before the first GPU use."""
        d = self._impl.device
        return None if d < 0 else d

    device_bytes = _forwarded("device_bytes", "Device bytes of the operator's copy (0 before the first GPU use).")

    def __repr__(self):
        c = self.census
        return (f"<bcsr24.SparseOperator {self._rows}x{self._cols}, nnz={self.nnz}, precision={self.precision}, "
                f"layout={c['layout']}/{c['reordering']}, 2:4 share {c['sparse24_share']:.2f}>")

    def stored_csr(self):
        """The matrix the products multiply by (each value in the stored precision times its power-of-two scale,
        in A's own row and column order; values that flushed to zero absent), as a scipy.sparse.csr_matrix of
        float64."""
        import scipy.sparse as sp

        rows, cols, row_ptr, col_idx, values = self._impl.stored_csr()
        return sp.csr_matrix((values, col_idx, row_ptr), shape=(rows, cols))

    def is_symmetric(self):
        """Whether the stored matrix equals its transpose exactly (computed once)."""
        if self._symmetric is None:
            if self._rows != self._cols:
                self._symmetric = False
            else:
                s = self.stored_csr()
                self._symmetric = bool((s != s.T).nnz == 0)
        return self._symmetric

    @property
    def T(self):
        """A^T as an operator: this one when the stored matrix is symmetric, else one built (once) from the stored
        values of A transposed, with the same options, so that A^T's products use exactly A's stored values
        (re-stored per row of A^T: exact unless a column of A spans more than the precision's range)."""
        if self._transpose is None:
            if self.is_symmetric():
                return self
            o = self._impl.options
            self._transpose = SparseOperator.from_scipy(self.stored_csr().T.tocsr(), precision=o["precision"],
                                                        scaling=o["scaling"], layout=o["layout"],
                                                        reorder=o["reorder"], threads=o["threads"])
            self._transpose._transpose = self
        return self._transpose

    def as_linear_operator(self, allow_downcast=False, backend=None):
        """A ``cupyx.scipy.sparse.linalg.LinearOperator`` (for CuPy vectors) or ``scipy.sparse.linalg`` one (for
        NumPy) with matvec, matmat and rmatvec; see :func:`bcsr24.linalg.as_linear_operator`."""
        from .linalg import as_linear_operator

        return as_linear_operator(self, allow_downcast=allow_downcast, backend=backend)

    # --------------------------------------------------------------------------------------------------- plans
    def plan(self, n, b_dtype="float32", out_dtype="float32", kernel="auto", device=None, tuning="measure",
             tuning_budget_ms=None):
        """A :class:`Plan` for B of ``n`` columns (bcsr24::SparseOperator::make_plan).

        b_dtype: ``"float32"`` (default; any precision, converted while the kernels stage B), ``"float16"``
        (fp16 A), ``"bfloat16"`` (bf16 A); strings, NumPy, PyTorch or JAX dtypes. out_dtype: ``"float32"``, or
        ``"float16"`` with fp16 A and fp16 B. kernel: ``"auto"`` (the cost model's per-band choice),
        ``"split_pipelined"``, ``"csr_cuda_cores"``. device: a CUDA device (int, ``"cuda:N"``, torch/CuPy device)
        or ``"cpu"`` for the reference path; default the current CUDA device, or the CPU when there is none. The
        first GPU plan uploads A to its device. tuning: how an ``"auto"`` plan chooses (bcsr24::Tuning):
        ``"measure"`` (default: the cost model's best candidates timed on the matrix, the fastest kept and
        remembered by the operator per n and dtypes; ``plan.report["diagnostics"]["candidates"]`` lists them) or
        ``"model"`` (the cost model alone, no GPU work while planning). tuning_budget_ms: the most
        milliseconds measuring may take (bcsr24::PlanOptions::tuning_budget_ms); ``None`` (default) is the library's
        budget, 10% of the operator's conversion time (at least 20 ms, at most 1 s; ``plan.report["tuning_budget_ms"]``
        and ``["tuning_budget_source"]`` say which applied); only with ``tuning="measure"``.
        """
        n = _op_index.index(n)
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        bd = _arrays.dtype_name(b_dtype, "b_dtype")
        od = _arrays.dtype_name(out_dtype, "out_dtype")
        self._check_b_dtype(bd, "b_dtype")
        if od not in ("float32", "float16"):
            raise TypeError(f"out_dtype={od}: products are written as float32 (or float16 with fp16 A and B)")
        if od == "float16" and not (self.precision == "fp16" and bd == "float16"):
            raise TypeError(f"out_dtype=float16 needs fp16 A and float16 B (A is {self.precision}, B {bd})")
        _choice(kernel, _KERNELS, "kernel")
        _choice(tuning, _TUNINGS, "tuning")
        budget = _tuning_budget(tuning_budget_ms, tuning)
        dev = _device_index(device)
        impl = None if dev < 0 else _bcsr24.make_plan(self._impl, n, kernel, bd, od, dev, tuning, budget)
        return Plan(self, impl, n, bd, od, kernel, dev)

    def _check_b_dtype(self, dtype, name):
        allowed = _B_DTYPES[self.precision]
        if dtype in allowed:
            return
        if dtype == "float64":
            raise TypeError(f"{name} is float64: bcsr24 multiplies float32 B (or the matrix's own 16-bit type); "
                            f"convert explicitly, e.g. b.astype('float32') — the product's accuracy is that of the "
                            f"stored {self.precision} A either way")
        raise TypeError(f"{name} is {dtype}, but a {self.precision} matrix multiplies {' or '.join(allowed)} B")

    # ------------------------------------------------------------------------------------------------ products
    def __matmul__(self, b):
        return self.matmul(b)

    def matmul(self, b, out=None, alpha=1.0, beta=0.0, stream=None):
        """``alpha * A @ b + beta * out`` as an array of b's own library on b's device (``out`` when given).

        Plans are made on first use per (n, b dtype, out dtype, device, stream, thread) and kept. For a torch
        tensor that requires grad (with grad enabled) the product is recorded for autograd
        (:func:`bcsr24.torch.matmul`). See :meth:`Plan.run` for the array rules.
        """
        torch = _arrays._torch
        if torch is not None and isinstance(b, torch.Tensor) and b.requires_grad and torch.is_grad_enabled():
            if out is not None or alpha != 1.0 or beta != 0.0:
                raise ValueError("a product recorded for autograd takes no out=, alpha or beta")
            from .torch import matmul

            return matmul(self, b)
        v = _view(b)
        if v[0] == _HOST:
            return self._host_product(v, out, alpha, beta, None)
        s = _default_stream(v) if stream is None else _stream_handle(stream)
        if out is None:
            o, od = None, "float32"
        else:
            o = _view(out, "out")
            od = o[5]
        plan = self._plans.get((v[3], v[5], od, v[6], s, _get_ident())) or self._cached_plan(v, od, s)
        return plan._run_view(v, out, alpha, beta, s, o)

    def plan_for(self, b, out=None, stream=None):
        """The plan ``op.matmul(b, out=out, stream=stream)`` runs, made now if it does not exist yet: lets a timed
        loop keep plan creation (a workspace allocation, which synchronises the device) out of its timings. For
        host arrays, a CPU plan."""
        v = _view(b)
        od = "float32" if out is None else _view(out, "out")[5]
        if v[0] == _HOST:
            return self.plan(v[3], v[5], od, device="cpu")
        s = _default_stream(v) if stream is None else _stream_handle(stream)
        return self._plans.get((v[3], v[5], od, v[6], s, _get_ident())) or self._cached_plan(v, od, s)

    def _cached_plan(self, v, od, s):
        key = (v[3], v[5], od, v[6], s, _get_ident())
        self._check_b_dtype(v[5], "b")
        if od not in ("float32", "float16"):
            raise TypeError(f"out is {od}; products are written as float32 (or float16 with fp16 A and B)")
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                plan = self.plan(v[3], v[5], od, device=v[6])
                self._plans[key] = plan
        return plan

    def _host_product(self, v, out, alpha, beta, plan):
        """The CPU reference path (bcsr24::reference_spmm): float32 or (fp16 A) float16 B on the host."""
        rows_b, n, ld, dtype = v[2], v[3], v[4], v[5]
        if rows_b != self._cols:
            raise ValueError(f"b has {rows_b} rows but A has {self._cols} columns (b must be (k, n) with k = "
                             f"A.shape[1])")
        if plan is not None:
            if n != plan.n:
                raise ValueError(f"b has {n} columns but the plan was made for n = {plan.n}")
            if dtype != plan.b_dtype:
                raise TypeError(f"b is {dtype} but the plan takes {plan.b_dtype}")
        if dtype == "float32":
            b_f16 = False
        elif dtype == "float16" and self.precision == "fp16":
            b_f16 = True
        else:
            self._check_b_dtype(dtype, "b")
            raise TypeError(f"b is {dtype}: the CPU path multiplies float32 B (or float16 B with fp16 A)")
        shape = (self._rows,) if v[7] else (self._rows, n)
        out_f16 = plan is not None and plan.out_dtype == "float16"
        if out is None:
            if beta != 0.0:
                raise ValueError("beta != 0 reads C: pass it as out=")
            c = np.empty(shape, dtype=np.float32)
        else:
            if v[10] is not None and hasattr(out, "numpy"):
                out = out.numpy()  # a CPU torch tensor: written through its NumPy view
            if not isinstance(out, np.ndarray):
                raise TypeError(f"out must be a NumPy array (or CPU tensor) for host b, got {type(out).__name__}")
            if out.shape != shape:
                raise ValueError(f"out has shape {out.shape} but A @ b has shape {shape}")
            want = np.float16 if out_f16 else np.float32
            if out.dtype != want:
                raise TypeError(f"out is {out.dtype.name} but the product writes {np.dtype(want).name}")
            if not out.flags.writeable:
                raise ValueError("out is read-only")
            c = out if (not out_f16 and out.flags.c_contiguous) else np.ascontiguousarray(out, dtype=np.float32)
        ldc = 1 if v[7] else n
        self._impl.reference(n, v[1], ld, b_f16, c.__array_interface__["data"][0], ldc, float(alpha), float(beta))
        if out is not None and c is not out:
            out[...] = c
            return out
        if out_f16:
            c = c.astype(np.float16)
        return c if v[10] is None else v[10](c)


_CONSTRUCT = object()
