"""bcsr24: sparse matrix times tall-skinny dense products on NVIDIA sparse tensor cores.

    import bcsr24
    op = bcsr24.SparseOperator.from_scipy(a)          # or .from_file("A.mtx"), once
    y = op @ x                                         # x: CuPy, PyTorch, JAX, Numba (GPU) or NumPy (CPU)
    plan = op.plan(32); plan.run(x, out=y, beta=1.0)   # explicit plans, in-place results

docs/PYTHON.md describes arrays, dtypes, streams, errors and the solver adapters (bcsr24.linalg, bcsr24.torch).
Importing needs no GPU, driver or CUDA Python package: the CUDA runtime is linked into the extension statically.
"""

from . import _bcsr24
from .errors import CudaError, Error, LibraryError, NotSupportedError, ParseError, RangeError, SizeLimitError
from .errors import FileFormatError, UnsupportedMatrixError  # deprecated aliases of ParseError

_bcsr24._set_error_classes(ParseError, NotSupportedError, CudaError, RangeError, SizeLimitError, LibraryError)

from ._operator import SparseOperator  # noqa: E402
from ._plan import Plan  # noqa: E402
from . import linalg  # noqa: E402  (bcsr24.torch is imported on demand: it needs torch)

__version__ = "0.1.0"


def device_count():
    """CUDA devices visible to this process; 0 without a driver or device. Never raises."""
    return _bcsr24.device_count()


def device_info(device=-1):
    """What bcsr24 sees of a CUDA device (-1: the current one): available, name, compute_capability,
    multiprocessors, l2_bytes, global_memory_bytes, and the reason when it is not usable. Never raises."""
    if _bcsr24.device_count() == 0:
        return {"available": False, "name": "", "compute_capability": 0, "multiprocessors": 0, "l2_bytes": 0,
                "global_memory_bytes": 0, "reason": _bcsr24.device_info(-1)["reason"] or "no CUDA device"}
    return _bcsr24.device_info(device)


__all__ = ["SparseOperator", "Plan", "device_count", "device_info", "Error", "LibraryError", "ParseError",
           "UnsupportedMatrixError", "FileFormatError", "RangeError", "SizeLimitError", "NotSupportedError",
           "CudaError"]
