"""The exceptions bcsr24 raises besides Python's own.

Every C++ exception arrives as a Python one carrying the C++ message:

==========================================  =============================================================
C++ (bcsr24/error.hpp)                      Python
==========================================  =============================================================
InvalidArgument                             ValueError (a wrong dtype or array type found in Python: TypeError)
OutOfMemory                                 MemoryError
ParseError (malformed Matrix Market)        bcsr24.ParseError(ValueError): .file, .line (1-based; 0 when the
                                            problem is not tied to a line), .problem
UnsupportedMatrixError (complex field)      bcsr24.UnsupportedMatrixError(ParseError)
FileFormatError (bad .b24)                  bcsr24.FileFormatError(ValueError)
RangeError (values beyond the precision)    bcsr24.RangeError(ValueError)
SizeLimitError (beyond 32-bit indices)      bcsr24.SizeLimitError(ValueError)
NotSupported (no usable GPU, ...)           bcsr24.NotSupportedError(RuntimeError)
CudaError                                   bcsr24.CudaError(RuntimeError)
other bcsr24::Error (cuSPARSE, NCCL)        bcsr24.Error(RuntimeError)
==========================================  =============================================================

A missing file is FileNotFoundError. All the bcsr24-specific classes also derive from :class:`bcsr24.Error`, so
``except bcsr24.Error`` catches every failure of the library itself.
"""


class Error(Exception):
    """Base of the bcsr24-specific exceptions (each also derives from the matching built-in one)."""


class LibraryError(Error, RuntimeError):
    """A bcsr24::Error of no more specific kind (cuSPARSE, NCCL)."""


class ParseError(Error, ValueError):
    """A malformed Matrix Market file. ``file``, ``line`` (1-based, 0 when not tied to a line), ``problem``."""

    file = ""
    line = 0
    problem = ""


class UnsupportedMatrixError(ParseError):
    """A Matrix Market file the reader refuses on purpose (complex values)."""


class FileFormatError(Error, ValueError):
    """A .b24 file that is truncated, corrupted or of another version."""


class RangeError(Error, ValueError):
    """Values that the chosen precision cannot hold under ``scaling="none"`` (or that are not finite)."""


class SizeLimitError(Error, ValueError):
    """Sizes beyond the 32-bit indices of the formats."""


class NotSupportedError(Error, RuntimeError):
    """Valid input outside what bcsr24 supports (e.g. no CUDA device of compute capability 8.0 or newer)."""


class CudaError(Error, RuntimeError):
    """A CUDA runtime call failed; the message names the call."""
