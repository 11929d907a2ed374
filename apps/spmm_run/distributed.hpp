// spmm_run's distributed mode (--gpus P, --mpi): A spread over several GPUs with bcsr24::DistributedOperator,
// one rank per GPU, timed stage by stage against the single-GPU product. Compiled into spmm_run only when the
// library was built with NCCL (BCSR24_HAS_NCCL); the MPI launcher only when MPI was found too (BCSR24_HAS_MPI).
// No NCCL, MPI or CUDA types here: main.cpp includes this header and keeps the reading, the fp64 reference and
// its thresholds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "rank_session.hpp"

namespace bcsr24::spmm_run {

// The session and its launch modes are the programs' shared ones (rank_session.hpp).
using ranks::Launch;
using ranks::mpi_available;
using ranks::Session;

/// The error fields of one checked result, computed by main.cpp against its fp64 reference.
struct CheckOutcome {
  nlohmann::ordered_json fields;  ///< rel_error (null when NaN/inf, with rel_error_not_finite), expected_rel_error,
                                  ///< rel_error_bound, within_bound: the keys of a single-GPU result
  std::string error_text;         ///< "1.23e-04" or "NaN/inf"
  std::string verdict;            ///< "ok (typical ..., bound ...)", "ABOVE fp16 bound (...)", "FAILED (> 1e-2)"
  bool failed = false;            ///< above spmm_run's failure threshold, or not finite
};
/// Compares a rows x n row-major fp32 C (the whole product, gathered on the root) with the reference (on the
/// rows it checks).
using CheckFunction = std::function<CheckOutcome(const std::vector<float>& c)>;

/// What every rank multiplies. The pointers refer to the caller's data, identical on every process (same file
/// or generator, same seed); in thread mode the rank threads share them read-only.
struct DistributedJob {
  const CsrMatrix* a = nullptr;  ///< the whole matrix, global row and column indices
  /// The whole matrix converted once with `options`: the single-GPU baseline takes it over (moves it out, so
  /// that its device copy is freed before the ranks build theirs). Needed on the root process when `baseline`;
  /// may be null elsewhere.
  SparseOperator* converted = nullptr;
  OperatorOptions options;  ///< precision, scaling, layout and reordering: every rank's parts and the baseline
  PartitionMethod partition = PartitionMethod::automatic;  ///< --partition: how rows are assigned to ranks
  Tuning tuning = Tuning::measure;  ///< how the parts' and the baseline's plans are chosen (--tuning)
  double tuning_budget_ms = 0.0;    ///< --tuning-budget (0: the library's default)
  std::int32_t n = 0;
  const std::vector<fp16_t>* b = nullptr;   ///< the whole B, a->cols x n row-major, fp16 values
  const std::vector<fp16_t>* c0 = nullptr;  ///< the whole C0, a->rows x n (only read when beta != 0)
  float alpha = 1.0f, beta = 0.0f;
  int warmup = 5, reps = 20;
  bool flush_l2 = true;
  bool baseline = true;       ///< also time the single-GPU product on the root's device, before the distributed part
  bool text_output = true;    ///< the root prints the text report on stdout (false: --json)
  bool show_progress = false; ///< the root prints progress lines on stderr
  std::uint64_t nnz = 0;      ///< nonzeros of A (for the useful TFLOPS)
};

/// Runs the distributed product: the baseline (root, when asked), the communicator(s), every rank's operator and
/// plan, one checked run and the timed stages. Collective: every process of the session calls it.
/// @param check on the root: compares the gathered C (empty: no check, C is not gathered); ignored elsewhere
/// @return on the root, the "distributed" section of the JSON report (also printed as text when
///         job.text_output); null on other processes.
/// @throw bcsr24::Error (CudaError for CUDA and NCCL calls, InvalidArgument ...) with the failing rank named.
nlohmann::ordered_json run_distributed(const Session& session, const DistributedJob& job,
                                       const CheckFunction& check);

}  // namespace bcsr24::spmm_run
