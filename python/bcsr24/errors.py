"""The exceptions bcsr24 raises besides Python's own.

Every C++ exception arrives as a Python one carrying the C++ message:

==========================================  =============================================================
C++ (bcsr24/error.hpp)                      Python
==========================================  =============================================================
InvalidArgument                             ValueError (a wrong dtype or array type found in Python: TypeError)
OutOfMemory                                 MemoryError
ParseError                                  bcsr24.ParseError(ValueError): a malformed Matrix Market file, one the
                                            reader refuses (complex values, vectors) or a bad .b24 file; .file,
                                            .line (1-based; 0 when not tied to a line, as for .b24), .problem
RangeError (values beyond the precision)    bcsr24.RangeError(ValueError)
SizeLimitError (beyond 32-bit indices)      bcsr24.SizeLimitError(ValueError)
NotSupported (no usable GPU, ...)           bcsr24.NotSupportedError(RuntimeError)
CudaError (CUDA runtime, cuSPARSE, NCCL)    bcsr24.CudaError(RuntimeError)
other bcsr24::Error                         bcsr24.LibraryError(RuntimeError)
(deprecated names)                          bcsr24.UnsupportedMatrixError, bcsr24.FileFormatError: aliases of
                                            bcsr24.ParseError (the C++ classes were folded into ParseError), kept
                                            so that existing ``except`` clauses still work
==========================================  =============================================================

A missing file is FileNotFoundError. All the bcsr24-specific classes also derive from :class:`bcsr24.Error`, so
``except bcsr24.Error`` catches every failure of the library itself.
"""


class Error(Exception):
    """Base of the bcsr24-specific exceptions (each also derives from the matching built-in one)."""


class LibraryError(Error, RuntimeError):
    """A bcsr24::Error of no more specific kind (e.g. a .b24 file that cannot be written)."""


class ParseError(Error, ValueError):
    """An input file that cannot be read: a malformed Matrix Market file, one the reader refuses on purpose (complex
    values, vector objects, compressions other than gzip), or a truncated, corrupted or foreign .b24 file. ``file``,
    ``line`` (1-based, 0 when not tied to a line), ``problem``."""

    file = ""
    line = 0
    problem = ""


class RangeError(Error, ValueError):
    """Values that the chosen precision cannot hold under ``scaling="none"`` (or that are not finite)."""


class SizeLimitError(Error, ValueError):
    """Sizes beyond the 32-bit indices of the formats."""


class NotSupportedError(Error, RuntimeError):
    """Valid input outside what bcsr24 supports (e.g. no CUDA device of compute capability 8.0 or newer)."""


class CudaError(Error, RuntimeError):
    """A CUDA runtime, cuSPARSE/cuBLAS or NCCL call failed; the message names the call."""


# Deprecated: the C++ library folded these into ParseError. Kept as aliases so that code catching them still works.
UnsupportedMatrixError = ParseError
FileFormatError = ParseError
