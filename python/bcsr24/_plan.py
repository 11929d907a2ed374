"""Plan: one product width, B dtype and output dtype fixed once on one device (bcsr24::SpmmPlan), run many times on
arrays of any supported library."""

from . import _arrays, _bcsr24

_HOST = _arrays.HOST
_view = _arrays.view
_default_stream = _arrays.default_stream
_VIEWERS = _arrays.VIEWERS
_empty = _arrays.empty
_finish = _arrays.finish
_stream_handle = _arrays.stream_handle
_NO_IN_PLACE = (_arrays.JAX,)
_IN_ORDER = (_arrays.TORCH, _arrays.CUPY)  # results handed back unfinished, ordered on the caller's stream


class Plan:
    """``C = alpha * A @ B + beta * C`` for B of ``n`` columns, made by :meth:`SparseOperator.plan`.

    ``run`` allocates nothing but the result (nothing with ``out=``), never synchronises the host (except for JAX
    arrays and arrays of unknown libraries, which are handed back finished) and enqueues the product on the
    caller's current stream. A plan is used by one thread at a time and its runs must not overlap on the device:
    use one plan per thread and stream (``op @ b`` does that for you).
    """

    __slots__ = ("_op", "_impl", "n", "b_dtype", "out_dtype", "kernel", "device", "_rows", "_cols", "_report",
                 "__weakref__")

    def __init__(self, op, impl, n, b_dtype, out_dtype, kernel, device):
        self._op = op
        self._impl = impl
        self.n = n
        self.b_dtype = b_dtype
        self.out_dtype = out_dtype
        self.kernel = kernel
        self.device = device
        self._rows, self._cols = op.shape
        self._report = None

    @property
    def report(self):
        """What the plan runs where (bcsr24::PlanReport as a dict, in spmm_run --json's keys: kernel, bands on tiles
        and on CSR, predicted time, reason; how it was chosen: ``tuning``, ``tuning_reason``, ``tuning_ms``,
        ``tuning_budget_ms``, ``tuning_budget_source``; and ``diagnostics``, the experimental kernel internals
        (keys may change): tiles, bytes per path, pipeline, CSR shape, the parts of ``tuning_ms``
        (``tuning_drafting_ms`` ... ``tuning_timing_ms``) and ``candidates``, a list of dicts with ``description``,
        ``predicted_us``, ``measured_us`` (-1: not measured), ``runs``, ``build_ms`` (-1: not built), ``chosen``,
        ``note``); ``{"kernel": "reference", ...}`` for a CPU plan."""
        if self._report is None:
            if self._impl is None:
                self._report = {"kernel": "reference", "n": self.n, "precision": self._op.precision,
                                "input": self.b_dtype, "reason": "CPU plan: bcsr24::reference_spmm"}
            else:
                self._report = self._impl.report
        return dict(self._report)

    @property
    def workspace_bytes(self):
        """Device bytes of the plan's own workspace and work lists (0 for a CPU plan)."""
        return 0 if self._impl is None else self._impl.workspace_bytes

    def __repr__(self):
        where = "cpu" if self.device < 0 else f"cuda:{self.device}"
        return (f"<bcsr24.Plan n={self.n} b_dtype={self.b_dtype} out_dtype={self.out_dtype} kernel={self.kernel} "
                f"on {where}>")

    def run(self, b, out=None, alpha=1.0, beta=0.0, stream=None):
        """``alpha * A @ b + beta * out``, returned as an array of b's library (``out`` itself when given).

        b: ``(k, n)`` or ``(k,)`` with k = A's columns, row-major with any leading stride, of this plan's
        ``b_dtype``, on the plan's device (NumPy: the CPU reference path). out: ``(m, n)`` / ``(m,)`` of
        ``out_dtype`` with unit column stride, written in place; needed when ``beta != 0``. stream: an int
        handle or a CuPy/PyTorch/Numba stream; default the current stream of b's library.
        """
        viewer = _VIEWERS.get(type(b))
        v = viewer(b, "b") if viewer is not None else _view(b)
        return self._run_view(v, out, alpha, beta, None if stream is None else _stream_handle(stream))

    def _run_view(self, v, out, alpha, beta, stream, out_view=None):
        if v[0] == _HOST:
            return self._op._host_product(v, out, alpha, beta, self)
        if self._impl is None:
            raise ValueError(f"b is on CUDA device {v[6]} but this is a CPU plan (made with device='cpu' or "
                             f"without a GPU)")
        if v[2] != self._cols or v[3] != self.n or v[5] != self.b_dtype or v[6] != self.device:
            self._reject(v)
        if stream is None:
            s = _default_stream(v)
        else:
            s = stream
            if v[9] is not None and v[9] != s and v[0] != _arrays.JAX:
                # __cuda_array_interface__ names the stream the data is ready on: order the given one after it.
                _bcsr24.stream_wait(s, v[9], self.device)
        if out is None:
            if beta != 0.0:
                raise ValueError("beta != 0 reads C: pass it as out=")
            out, c_ptr = _empty(v, self._rows, self.out_dtype)
            ldc = 1 if v[7] else self.n
        else:
            if v[0] in _NO_IN_PLACE:
                raise TypeError("out=: JAX arrays are immutable; bcsr24 returns a new array for JAX input")
            c_ptr, ldc = _out_pointer(out, self._rows, v, self.out_dtype, self.device, out_view)
        self._impl.run(v[1], v[4], c_ptr, ldc, float(alpha), float(beta), s)
        return out if v[0] in _IN_ORDER else _finish(v, out, s)

    def _reject(self, v):
        """Raises the error that says why view `v` is not a B this plan takes."""
        if v[2] != self._cols:
            raise ValueError(f"b has {v[2]} rows but A has {self._cols} columns (b must be (k, n) with k = "
                             f"A.shape[1])")
        if v[3] != self.n:
            raise ValueError(f"b has {v[3]} columns but the plan was made for n = {self.n}")
        if v[5] != self.b_dtype:
            raise TypeError(f"b is {v[5]} but the plan takes {self.b_dtype} (make a plan with b_dtype={v[5]!r}, or "
                            f"convert b)")
        raise ValueError(f"b is on CUDA device {v[6]} but the plan (and the operator) live on device {self.device}")

    def run_repeat(self, count, b, out, alpha=1.0, beta=0.0, stream=None):
        """The same product ``count`` times back to back from C++ (no Python per product): the benchmark's
        baseline for the call overhead of :meth:`run`. b and out as for run (out required)."""
        if self._impl is None:
            raise ValueError("run_repeat times GPU plans only")
        v = _view(b)
        if v[0] == _HOST or v[6] != self.device or v[3] != self.n or v[5] != self.b_dtype or v[2] != self._cols:
            raise ValueError("run_repeat: b must be a device array this plan takes")
        c_ptr, ldc = _out_pointer(out, self._rows, v, self.out_dtype, self.device)
        s = _default_stream(v) if stream is None else _stream_handle(stream)
        self._impl.run_repeat(count, v[1], v[4], c_ptr, ldc, float(alpha), float(beta), s)
        return out


def _out_pointer(out, rows, bv, dtype, device, o=None):
    """Pointer and leading dimension of a result array (of view `o` when given), checked against what the product
    writes."""
    if o is None:
        viewer = _VIEWERS.get(type(out))
        o = viewer(out, "out") if viewer is not None else _view(out, "out")
    if o[0] == _HOST:
        raise ValueError("out is a host array but b is on a CUDA device")
    if o[8] is not out and o[0] in (_arrays.TORCH, _arrays.CUPY):
        # The viewer had to copy: the columns of out are not adjacent, so it cannot be written in place.
        raise ValueError("out must have unit column stride (row-major with any leading stride)")
    shape_b = (bv[2], bv[3])
    want = (rows,) if bv[7] else (rows, bv[3])
    got = (o[2],) if o[7] else (o[2], o[3])
    if got != want:
        raise ValueError(f"out has shape {got} but A @ b has shape {want} (b: {shape_b[0]} x {shape_b[1]})")
    if o[5] != dtype:
        raise TypeError(f"out is {o[5]} but the product writes {dtype}")
    if o[6] != device:
        raise ValueError(f"out is on CUDA device {o[6]} but b and the operator are on device {device}")
    return o[1], o[4]
