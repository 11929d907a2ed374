"""Arrays in and out: what a caller's array is (pointer, shape, leading dimension, dtype, device, stream), and a
new array of the caller's own library for the result.

Every supported library is recognised by its type, once, and read through its cheapest accessors (a torch tensor's
data_ptr() and stride(), a CuPy array's data.ptr and strides); anything else speaking __cuda_array_interface__ or
DLPack is read through those protocols. Nothing here copies a row-major input: only an array whose columns are not
adjacent in memory (column stride != 1) is copied, by its own library, into a row-major one.
"""

import numpy as np

from . import _bcsr24

# A view is a tuple, the cheapest thing to build per call:
#   (lib, ptr, rows, n, ld, dtype, device, vector, array, stream, wrap)
# lib: one of the names below; ptr: int address; rows x n: the matrix (a vector is rows x 1); ld: leading dimension
# in elements; dtype: "float16", "bfloat16", "float32", "float64" or another name; device: CUDA ordinal, -1 on the
# host; vector: the input was 1-D; array: the (possibly copied) array to keep alive; stream: the stream the
# library asks work on its data to be ordered on (None: the library's current stream, looked up later); wrap: for
# host arrays of another library (a CPU torch tensor, a JAX CPU array), what turns the NumPy result back into one.
HOST, TORCH, CUPY, JAX, NUMBA, CAI, DLPACK = "numpy", "torch", "cupy", "jax", "numba", "cai", "dlpack"

# NumPy/CuPy dtype names by type character (dtype.name is computed in Python, about a microsecond per call).
_CHAR_NAMES = {"e": "float16", "f": "float32", "d": "float64"}

_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_HOST, _DLPACK_CUDA_MANAGED = 1, 2, 3, 13


def _shape2(shape, strides_elements, name):
    """rows, n, ld, vector from a shape and element strides; None when the columns are not adjacent."""
    if len(shape) == 2:
        rows, n = shape
        s0, s1 = strides_elements
        if n > 1 and s1 != 1:
            return None
        ld = s0 if rows > 1 else n
        if ld < n:  # a broadcast (zero-stride) or overlapping layout: only a copy is row-major
            return None
        return rows, n, ld, False
    if len(shape) == 1:
        rows = shape[0]
        s0 = strides_elements[0] if rows > 1 else 1
        if s0 < 1:
            return None
        # A vector is a rows x 1 matrix whose leading dimension is the element stride.
        return rows, 1, s0, True
    raise ValueError(f"{name} must be 1-D (k,) or 2-D (k, n), got shape {tuple(shape)}")


# --------------------------------------------------------------------------------------------------- NumPy / host
def _numpy_view(a, name, wrap=None):
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))  # the kernels read native byte order
    itemsize = a.itemsize
    st = a.strides
    dims = None
    if all(s % itemsize == 0 for s in st):
        dims = _shape2(a.shape, tuple(s // itemsize for s in st), name)
    elif a.ndim not in (1, 2):
        _shape2(a.shape, st, name)  # raises the shape error
    if dims is None:
        a = np.ascontiguousarray(a)
        dims = _shape2(a.shape, tuple(s // itemsize for s in a.strides), name)
    rows, n, ld, vector = dims
    dt = a.dtype
    return (HOST, a.__array_interface__["data"][0], rows, n, ld, _CHAR_NAMES.get(dt.char) or dt.name, -1, vector, a,
            None, wrap)


# --------------------------------------------------------------------------------------------------------- PyTorch
_torch = None
_TORCH_DTYPES = {}
_TORCH_FROM_NAME = {}
_torch_raw_stream = None


def _load_torch():
    global _torch, _torch_raw_stream
    import torch

    _torch = torch
    for name in ("float16", "bfloat16", "float32", "float64"):
        _TORCH_DTYPES[getattr(torch, name)] = name
        _TORCH_FROM_NAME[name] = getattr(torch, name)
    # The raw current-stream query returns the handle without building a torch.cuda.Stream (a few microseconds).
    _torch_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return torch


def _torch_view(t, name):
    if t.is_cuda:
        shape = t.shape
        st = t.stride()
        # The common case first, without the general shape rules: a row-major matrix (or a contiguous vector).
        if len(shape) == 2:
            if st[1] == 1 and shape[0] > 1 and st[0] >= shape[1]:
                return (TORCH, t.data_ptr(), shape[0], shape[1], st[0], _TORCH_DTYPES.get(t.dtype) or _dtype_text(t),
                        t.get_device(), False, t, None, None)
        elif len(shape) == 1 and st[0] == 1:
            return (TORCH, t.data_ptr(), shape[0], 1, 1, _TORCH_DTYPES.get(t.dtype) or _dtype_text(t),
                    t.get_device(), True, t, None, None)
        dims = _shape2(shape, st, name)
        if dims is None:
            t = t.contiguous()  # columns not adjacent: the one case that is copied
            dims = _shape2(t.shape, t.stride(), name)
        rows, n, ld, vector = dims
        return (TORCH, t.data_ptr(), rows, n, ld, _TORCH_DTYPES.get(t.dtype) or _dtype_text(t), t.get_device(),
                vector, t, None, None)
    if t.dtype == _torch.bfloat16:
        raise TypeError(f"{name}: bfloat16 CPU tensors have no NumPy form; use float32 for the CPU path")
    return _numpy_view(t.detach().numpy(), name, _torch.from_numpy)


def _dtype_text(t):
    return str(t.dtype).replace("torch.", "")


def _torch_stream(device):
    if _torch_raw_stream is not None:
        return _torch_raw_stream(device)
    return _torch.cuda.current_stream(device).cuda_stream


def _torch_empty(shape, dtype, device, like):
    out = _torch.empty(shape, dtype=_TORCH_FROM_NAME[dtype], device=like.device)
    return out, out.data_ptr()


# ------------------------------------------------------------------------------------------------------------ CuPy
_cupy = None


def _load_cupy():
    global _cupy
    import cupy

    _cupy = cupy
    return cupy


def _cupy_view(a, name):
    shape = a.shape
    st = a.strides
    itemsize = a.itemsize
    # The common case first, without the general shape rules: a row-major matrix (or a contiguous vector).
    if len(shape) == 2:
        if st[1] == itemsize and shape[0] > 1 and st[0] >= shape[1] * itemsize and st[0] % itemsize == 0:
            mem = a.data
            dt = a.dtype
            return (CUPY, mem.ptr, shape[0], shape[1], st[0] // itemsize, _CHAR_NAMES.get(dt.char) or dt.name,
                    mem.device_id, False, a, None, None)
    elif len(shape) == 1 and st[0] == itemsize:
        mem = a.data
        dt = a.dtype
        return (CUPY, mem.ptr, shape[0], 1, 1, _CHAR_NAMES.get(dt.char) or dt.name, mem.device_id, True, a, None,
                None)
    dims = None if any(s % itemsize for s in st) else _shape2(shape, tuple(s // itemsize for s in st), name)
    if dims is None:
        a = _cupy.ascontiguousarray(a)
        dims = _shape2(a.shape, tuple(s // itemsize for s in a.strides), name)
    rows, n, ld, vector = dims
    return (CUPY, a.data.ptr, rows, n, ld, a.dtype.name, a.data.device_id, vector, a, None, None)


def _cupy_stream(device):
    return _cupy.cuda.get_current_stream().ptr


def _cupy_empty(shape, dtype, device, like):
    out = _cupy.empty(shape, dtype=dtype)
    if out.data.device_id != device:
        with _cupy.cuda.Device(device):
            out = _cupy.empty(shape, dtype=dtype)
    return out, out.data.ptr


# ------------------------------------------------------------------------------------------------------------- JAX
_jax = None


def _load_jax():
    global _jax
    import jax
    import jax.dlpack  # noqa: F401  (from_dlpack for the results)
    import jax.numpy  # noqa: F401  (asarray for CPU results)

    _jax = jax
    return jax


def _jax_view(x, name):
    devices = x.devices()
    if len(devices) != 1:
        raise ValueError(f"{name}: a JAX array sharded over {len(devices)} devices; pass a single-device array")
    device = next(iter(devices))
    if device.platform != "gpu":
        return _numpy_view(np.asarray(x), name, _jax.numpy.asarray)
    # JAX runs asynchronously on streams of its own: the data must exist before another library reads it.
    x.block_until_ready()
    shape = x.shape
    # JAX arrays on the GPU are dense and row-major.
    dims = _shape2(shape, (shape[1], 1) if len(shape) == 2 else (1,), name)
    rows, n, ld, vector = dims
    return (JAX, x.unsafe_buffer_pointer(), rows, n, ld, x.dtype.name, device.local_hardware_id, vector, x, 0, None)


def _dlpack_empty(shape, dtype, device, like):
    return _bcsr24.device_empty(list(shape), dtype, device)


# ----------------------------------------------------------------------------------- __cuda_array_interface__ (Numba)
def _cai_view(a, name, lib):
    cai = a.__cuda_array_interface__
    shape = tuple(cai["shape"])
    try:
        dt = np.dtype(cai["typestr"])
    except TypeError:
        raise TypeError(f"{name}: unsupported __cuda_array_interface__ typestr {cai['typestr']!r}") from None
    itemsize = dt.itemsize
    strides = cai.get("strides")
    if strides is None:
        el = (shape[1], 1) if len(shape) == 2 else (1,)
    else:
        if any(s % itemsize for s in strides):
            raise ValueError(f"{name}: strides {strides} are not multiples of the element size {itemsize}")
        el = tuple(s // itemsize for s in strides)
    dims = _shape2(shape, el, name)
    if dims is None:
        raise ValueError(f"{name}: columns are not adjacent in memory (strides {strides}); bcsr24 copies only "
                         f"CuPy, PyTorch and NumPy arrays: pass a row-major array")
    rows, n, ld, vector = dims
    ptr = cai["data"][0]
    # CAI v3: a stream the consumer must order its work after (1: legacy default, 2: per-thread default).
    stream = cai.get("stream", None)
    device = _bcsr24.pointer_device(ptr) if ptr else _bcsr24.current_device()
    if device < 0:
        raise ValueError(f"{name}: __cuda_array_interface__ points at memory that is not on a CUDA device")
    return (lib, ptr, rows, n, ld, dt.name, device, vector, a, stream, None)


def _numba_empty(shape, dtype, device, like):
    from numba import cuda

    if dtype == "bfloat16":
        raise TypeError("Numba has no bfloat16 arrays")
    out = cuda.device_array(shape, dtype=dtype)
    return out, out.__cuda_array_interface__["data"][0]


def _dlpack_view(a, name):
    ptr, shape, strides, dtype, device_type, device_id = _bcsr24.dlpack_view(a)
    if device_type in (_DLPACK_CPU, _DLPACK_CUDA_HOST):
        return _numpy_view(np.from_dlpack(a), name)
    if device_type not in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
        raise TypeError(f"{name}: DLPack device type {device_type} is neither the CPU nor a CUDA device")
    dims = _shape2(tuple(shape), tuple(strides), name)
    if dims is None:
        raise ValueError(f"{name}: columns are not adjacent in memory (strides {strides}); pass a row-major array")
    rows, n, ld, vector = dims
    return (DLPACK, ptr, rows, n, ld, dtype, device_id, vector, a, None, None)


# ------------------------------------------------------------------------------------------------------- dispatch
VIEWERS = {np.ndarray: _numpy_view}  # type -> viewer, filled on first sight of each type


def _viewer_for(tp):
    module = tp.__module__ or ""
    top = module.split(".", 1)[0]
    viewer = None
    if top == "torch" or (top != "numpy" and any(b.__module__.startswith("torch") for b in tp.__mro__[1:])):
        if _torch is None:
            _load_torch()
        if issubclass(tp, _torch.Tensor):
            viewer = _torch_view
    elif top == "cupy":
        if _cupy is None:
            _load_cupy()
        if issubclass(tp, _cupy.ndarray):
            viewer = _cupy_view
    elif top in ("jax", "jaxlib"):
        if _jax is None:
            _load_jax()
        if issubclass(tp, _jax.Array):
            viewer = _jax_view
    elif top == "numba" and hasattr(tp, "__cuda_array_interface__"):
        viewer = lambda a, name: _cai_view(a, name, NUMBA)  # noqa: E731
    if viewer is None:
        if issubclass(tp, np.ndarray):
            viewer = _numpy_view
        elif hasattr(tp, "__cuda_array_interface__"):
            viewer = lambda a, name: _cai_view(a, name, CAI)  # noqa: E731
        elif hasattr(tp, "__dlpack__"):
            viewer = _dlpack_view
        elif hasattr(tp, "__array_interface__") or hasattr(tp, "__array__"):
            viewer = lambda a, name: _numpy_view(np.asarray(a), name)  # noqa: E731
        else:
            return None
    VIEWERS[tp] = viewer
    return viewer


def view(a, name="b"):
    """The view tuple of an array (see the top of this file). @raise TypeError for objects that are no array."""
    viewer = VIEWERS.get(type(a)) or _viewer_for(type(a))
    if viewer is None:
        raise TypeError(f"{name}: expected an array (NumPy, CuPy, PyTorch, JAX, Numba, or any object with "
                        f"__cuda_array_interface__ or __dlpack__), got {type(a).__module__}.{type(a).__name__}")
    return viewer(a, name)


_STREAM_OF = {TORCH: _torch_stream, CUPY: _cupy_stream}
_EMPTY_OF = {TORCH: _torch_empty, CUPY: _cupy_empty, JAX: _dlpack_empty, NUMBA: _numba_empty,
             CAI: _dlpack_empty, DLPACK: _dlpack_empty}


def default_stream(v):
    """The stream an array's own library would run the next operation on."""
    if v[9] is not None:
        return v[9]
    get = _STREAM_OF.get(v[0])
    return get(v[6]) if get is not None else 0


def empty(v, rows, dtype):
    """(array, pointer): an uninitialised row-major result of the library of view `v`, (rows, n) or (rows,) for a
    vector input; its leading dimension is n (1 for a vector)."""
    shape = (rows,) if v[7] else (rows, v[3])
    return _EMPTY_OF[v[0]](shape, dtype, v[6], v[8])


class _DLPackCapsule:
    """A DLPack capsule of a CUDA buffer as the protocol object (__dlpack__, __dlpack_device__) that newer JAX
    versions take instead of the bare capsule. The work that wrote it is finished: no stream to wait on."""

    __slots__ = ("_capsule", "_device")

    def __init__(self, capsule, device):
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self._capsule

    def __dlpack_device__(self):
        return (2, self._device)  # kDLCUDA


def finish(v, out, stream):
    """Hands the result back: JAX (immutable, own streams) gets a synchronised buffer through DLPack."""
    if v[0] == JAX:
        _bcsr24.stream_synchronize(stream, v[6])
        return _jax.dlpack.from_dlpack(_DLPackCapsule(out, v[6]))
    if v[0] in (CAI, DLPACK):
        # Objects without a known library: the result is a DLPack-capable buffer; the work must be done before a
        # consumer that ignores streams reads it.
        _bcsr24.stream_synchronize(stream, v[6])
    return out


def stream_handle(stream):
    """An int cudaStream_t from an int or a stream object of CuPy (.ptr), PyTorch (.cuda_stream), Numba
    (.handle) or any object with __cuda_stream__."""
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return int(proto()[1])
    for attr in ("ptr", "cuda_stream"):
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    handle = getattr(stream, "handle", None)
    if handle is not None:
        value = getattr(handle, "value", handle)
        return int(value or 0)
    raise TypeError(f"stream: expected an int handle or a CuPy/PyTorch/Numba stream, got {type(stream).__name__}")


def dtype_name(dtype, name):
    """'float16', 'bfloat16', 'float32', 'float64' or another NumPy name, from a string, NumPy, PyTorch or JAX
    dtype."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        s = dtype.replace("torch.", "")
        aliases = {"fp16": "float16", "half": "float16", "f16": "float16", "bf16": "bfloat16", "fp32": "float32",
                   "float": "float32", "single": "float32", "f32": "float32", "fp64": "float64", "double": "float64"}
        s = aliases.get(s, s)
        if s == "bfloat16":
            return s
        try:
            return np.dtype(s).name
        except TypeError:
            raise TypeError(f"{name}: unknown dtype {dtype!r}") from None
    text = str(dtype)
    if text.startswith("torch."):
        return dtype_name(text, name)
    dname = getattr(dtype, "name", None)
    if isinstance(dname, str) and dname == "bfloat16":
        return dname
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"{name}: unknown dtype {dtype!r}") from None
