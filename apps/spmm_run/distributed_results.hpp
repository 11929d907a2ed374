// What spmm_run's distributed mode measures (distributed.cpp) and reports (distributed_report.cpp): the stages
// every rank times, one rank's figures, what rank 0 collects, and the single-GPU baseline.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "bcsr24/distributed_operator.hpp"
#include "bcsr24_experimental/distributed_stages.hpp"
#include "distributed.hpp"

namespace bcsr24::spmm_run::dist {

using experimental::DistributedStages;

struct Stage {
  DistributedStages stages;
  const char* name;
};
/// The order every rank times them in (all first: halo_only reuses the halo rows the previous exchanges left).
constexpr std::array<Stage, 4> kStages = {{{DistributedStages::all, "all"},
                                           {DistributedStages::local_only, "local_only"},
                                           {DistributedStages::exchange_only, "exchange_only"},
                                           {DistributedStages::halo_only, "halo_only"}}};

/// One rank's figures, gathered as bytes on rank 0 (the ranks run the same program).
struct RankStats {
  std::int32_t rank = 0, device = 0;
  std::int32_t row_begin = 0, rows = 0, col_begin = 0, owned_cols = 0, halo_rows = 0, send_rows = 0;
  std::int64_t local_nnz = 0, halo_nnz = 0, bytes_sent = 0, bytes_received = 0, operator_bytes = 0, plan_bytes = 0;
  double build_s = 0.0;
  char device_name[128] = {};
  char host[64] = {};
};
static_assert(std::is_trivially_copyable_v<RankStats>, "RankStats travels as bytes");

/// What rank 0 collects.
struct RootResults {
  std::vector<RankStats> stats;          // by rank
  std::vector<std::vector<double>> ms;   // by rank: stage-major, kStages.size() x reps
  std::vector<std::int32_t> row_offsets;
  PartitionMethod partition = PartitionMethod::contiguous;  // the method the operator used
  std::vector<float> c;                  // the whole C of the checked run, when gathered (the file's numbering)
  bool gathered = false;
};

struct Baseline {
  bool ran = false;
  std::string skipped_reason;
  int device = 0;
  std::string device_name;
  std::vector<double> ms;
  std::int64_t operator_bytes = 0, plan_bytes = 0;
  std::vector<float> c;  // the checked run's C, when kept
};

/// fp16 matrices take B in fp16; bf16 and split ones in fp32 (the same values, widened exactly), as spmm_run's
/// single-GPU path gives them.
inline bool fp32_b(const DistributedJob& job) { return job.options.precision != Precision::fp16; }

/// The report of a distributed run on rank 0 (docs/SPMM_RUN.md, "Distributed mode"), and its text unless --json.
nlohmann::ordered_json make_report(const Session& session, const DistributedJob& job, const CheckFunction& check,
                                   const RootResults& results, const Baseline& baseline,
                                   const std::string& nccl_version);

}  // namespace bcsr24::spmm_run::dist
