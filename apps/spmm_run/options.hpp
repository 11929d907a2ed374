// spmm_run's command line: the options, their defaults and the combinations CLI11 cannot check.
#pragma once

#include <cstdint>
#include <string>

#include "cli.hpp"
#include "matrix_source.hpp"

namespace bcsr24::spmm_run {

inline constexpr const char* kProgram = "spmm_run";
/// The thesis states B's width as nmult blocks of 8 columns (the n of mma m16n8k*).
inline constexpr int kNmultColumns = 8;
/// Default width: nmult 16 = 128 columns, the middle of the thesis's 8..256 range.
inline constexpr int kDefaultWidth = 128;
/// Rows drawn uniformly for a sampled check (--check-rows).
inline constexpr std::int32_t kDefaultCheckRows = 4096;

struct Options {
  apps::MatrixSource source;     ///< the matrix (file, .b24, --xdys, --mesh, --graph, --synth) and --seed
  apps::StorageOptions storage;  ///< --precision, --scaling, --layout, --reorder
  apps::TuningOptions tuning;    ///< --tuning, --tuning-budget (auto plans)
  std::int32_t nmult = 0;  ///< 0 = not given
  std::int32_t width = 0;  ///< --n; 0 = not given
  std::string kernel = "auto";
  int reps = 20;
  int warmup = 5;
  int cpu_reps = 1;
  bool check = true;
  std::int32_t check_rows = kDefaultCheckRows;
  std::string pattern_values = "ones";
  bool json_output = false;
  std::string save_path;
  bool fp16_out = false;
  double alpha = 1.0;
  double beta = 0.0;
  bool cpu_only = false;
  bool flush_l2 = true;     ///< same default as bench_spmm, so the two programs' timings compare
  int gpus = 0;             ///< --gpus P: distributed over P GPUs by threads of this process; 0 = one GPU
  bool gpus_given = false;  ///< --gpus was on the command line (then P >= 1 is required)
  bool mpi = false;         ///< --mpi: distributed, one MPI process per rank
  bool baseline = true;     ///< distributed modes: also time the whole matrix on one GPU
  std::string partition = "automatic";  ///< distributed modes: --partition automatic|contiguous|metis

  std::uint64_t seed() const { return source.seed; }
  /// B's width after resolving --n / --nmult.
  std::int32_t n() const { return width > 0 ? width : (nmult > 0 ? nmult * kNmultColumns : kDefaultWidth); }
  /// --gpus or --mpi: the distributed mode (distributed.cpp) instead of the single-GPU one.
  bool distributed() const { return gpus_given || mpi; }
};

void add_options(CLI::App& app, Options& options);
/// Checks the combinations CLI11 cannot express (after parsing; `app` tells whether --gpus was given).
/// @throw apps::UsageError
void validate(const CLI::App& app, Options& options);

}  // namespace bcsr24::spmm_run
