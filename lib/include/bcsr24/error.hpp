// The exception tree of bcsr24: every error the library reports is one of these.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

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

/// A Matrix Market file is malformed. Carries the file name and 1-based line number.
class ParseError : public Error {
 public:
  ParseError(std::string file, std::int64_t line, const std::string& problem)
      : Error(file + ":" + std::to_string(line) + ": " + problem),
        file_(std::move(file)),
        line_(line),
        problem_(problem) {}
  const std::string& file() const noexcept { return file_; }
  /// 1-based line number; 0 when the problem is not tied to a line (e.g. unreadable file).
  std::int64_t line() const noexcept { return line_; }
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string file_;
  std::int64_t line_;
  std::string problem_;
};

/// A ParseError for features the reader deliberately rejects (complex fields).
class UnsupportedMatrixError : public ParseError {
 public:
  using ParseError::ParseError;
};

/// A preprocessed-matrix file (.b24) is truncated, corrupted or of another version.
class FileFormatError : public Error {
 public:
  using Error::Error;
};

/// Values cannot be represented in fp16 under the chosen scaling policy.
class RangeError : public Error {
 public:
  using Error::Error;
};

/// A CUDA runtime call failed; the message names the call, file and line. (A failed allocation is OutOfMemory.)
class CudaError : public Error {
 public:
  using Error::Error;
};

/// A cuSPARSE / cuBLAS call failed; the message names the call, file and line.
class CusparseError : public Error {
 public:
  using Error::Error;
};

/// An NCCL call of the distributed operator failed; the message names the call, file, line and NCCL's reason.
class NcclError : public Error {
 public:
  using Error::Error;
};

}  // namespace bcsr24
