// bcsr24_solve --solver legacy (and the distributed runs, --gpus, --mpi): flexible CG in fp64 with a block CG in
// fp32 inside, on one GPU, the CPU or several GPUs; its warm-up, reports (text and JSON) and the comparison of its
// two inner backends.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "flexible_cg.hpp"
#include "gpu_system.hpp"
#include "problem.hpp"
#include "solve_options.hpp"

namespace bcsr24::ranks {
class Session;  // rank_session.hpp (builds with NCCL); only null pointers to it otherwise
}

namespace bcsr24::solver {

/// One run of the legacy solver with one inner backend (on one GPU, the CPU or several GPUs).
struct LegacyRunReport {
  InnerBackend backend;
  OuterResult result;
  double solve_seconds = 0.0, preprocess_seconds = 0.0, upload_seconds = 0.0;
  std::optional<GpuTimings> timings;
  HostCheck host;
  std::int64_t device_bytes = 0;  ///< on several GPUs: the largest of the ranks
  int gpus = 0;                   ///< 0: single-GPU space
  const char* launch = "";        ///< on several GPUs: "threads" or "mpi"
  const char* partition = "";     ///< on several GPUs: how rows were assigned ("contiguous", "metis")
  nlohmann::json ranks = nlohmann::json::array();  ///< per rank, on several GPUs
  bool ranks_agree = true;
};

/// Runs the legacy solver with each inner backend the options ask for, prints the reports and writes the JSON
/// (`matrix_json` gains the bcsr24 census). `mpi`: this process's MPI session (--mpi), else null; under MPI every
/// process calls it and only the root writes the JSON. Returns 0, or kExitNotConverged when a run did not
/// converge.
int run_legacy(const Options& o, const Problem& problem, nlohmann::json& matrix_json, const ranks::Session* mpi);

}  // namespace bcsr24::solver
