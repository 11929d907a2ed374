// The exception tree of bcsr24: every error the library reports is one of these.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace bcsr24 {

/// Base class of every exception thrown by bcsr24.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A caller broke a documented precondition (bad size, null pointer, bad option).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// The input is valid but outside what bcsr24 supports (complex values, too old a GPU...).
class NotSupported : public Error {
 public:
  using Error::Error;
};

/// A size would overflow the 32-bit indices used by the formats or exhaust memory.
class SizeLimitError : public Error {
 public:
  using Error::Error;
};

/// Device (or host) memory does not hold what an operation needs: the message names what was being allocated,
/// how much, and how much was free. Nothing of the failed operation is left allocated; what existed before
/// (an operator, its other plans) stays usable.
class OutOfMemory : public SizeLimitError {
 public:
  using SizeLimitError::SizeLimitError;
};

/// An input file is malformed or not readable as what it claims to be: a Matrix Market file (malformed, or a
/// feature the reader refuses on purpose: complex values, vector objects, compressions other than gzip) or a
/// preprocessed-matrix file (.b24: truncated, corrupted or of another version). Carries the file name, the 1-based
/// line number (0 when the problem is not tied to a line, as for every .b24 problem) and the problem; the message
/// is "file:line: problem", or "file: problem" for line 0.
class ParseError : public Error {
 public:
  ParseError(std::string file, std::int64_t line, const std::string& problem)
      : Error(file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + problem),
        file_(std::move(file)),
        line_(line),
        problem_(problem) {}
  const std::string& file() const noexcept { return file_; }
  /// 1-based line number; 0 when the problem is not tied to a line (an unreadable or .b24 file).
  std::int64_t line() const noexcept { return line_; }
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string file_;
  std::int64_t line_;
  std::string problem_;
};

/// Values cannot be represented in fp16 under the chosen scaling policy.
class RangeError : public Error {
 public:
  using Error::Error;
};

/// A CUDA runtime, cuSPARSE/cuBLAS or NCCL call failed; the message names the call, file and line (and, for NCCL,
/// its reason). A failed allocation is OutOfMemory.
class CudaError : public Error {
 public:
  using Error::Error;
};

}  // namespace bcsr24
