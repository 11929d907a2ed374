// spmm_run: read (or generate) one sparse matrix, convert it to BCSR-2:4, multiply it by a random tall-skinny
// fp16 B with the chosen kernels, and report the tile census, timings, throughput and error against fp64.

#include <unistd.h>

#include <algorithm>
#include <random>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "cuda_resources.hpp"
#include "text_report.hpp"
#include "gpu_timing.hpp"
#include "format/bcsr24_matrix.hpp"
#include "format/convert.hpp"
#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/device.hpp"
#include "device/plan_access.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/matrix_market.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24_testkit/metrics.hpp"
#include "bcsr24/precision.hpp"
#include "format/reference.hpp"
#include "format/serialize.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "format/tile_layout.hpp"
#ifdef BCSR24_HAS_NCCL
#include "spmm_run_distributed.hpp"
#endif

namespace {

// Insertion order keeps the JSON readable in the order the text report uses.
using json = nlohmann::ordered_json;
using bcsr24::bench::format;
using bcsr24::bench::human_bytes;
using bcsr24::bench::ProgressLine;
using bcsr24::bench::Stopwatch;
using bcsr24::bench::summarize;
using bcsr24::bench::Timings;

constexpr const char* kProgram = "spmm_run";
/// A kernel whose relative Frobenius error exceeds this fails the run: far above any fp16 rounding effect
/// (u16 = 4.9e-4), so crossing it means a wrong result, not imprecision.
constexpr double kFailRelativeError = 1e-2;
/// Unit roundoffs used by the fp16-derived error expectation.
constexpr double kUnitRoundoffFp16 = 0x1p-11;
constexpr double kUnitRoundoffFp32 = 0x1p-24;
/// The thesis states B's width as nmult blocks of 8 columns (the n of mma m16n8k*).
constexpr int kNmultColumns = 8;
/// Default width: nmult 16 = 128 columns, the middle of the thesis's 8..256 range.
constexpr int kDefaultWidth = 128;

/// Exit codes: 0 success, 1 runtime error or failed accuracy check, 2 bad command line.
constexpr int kExitRuntimeError = 1;
constexpr int kExitUsage = 2;

/// A command line that parsed but makes no sense (exit code 2, like CLI11's own parse errors).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ------------------------------------------------------------------------------------------------------------
// Command line
// ------------------------------------------------------------------------------------------------------------

struct Options {
  std::string input_path;  ///< .mtx, .mtx.gz or .b24; empty when --xdys or --mesh is given
  std::string mesh_spec;   ///< --mesh, e.g. "40x40x40,dofs=3,order=random" (bcsr24::parse_mesh_spec)
  std::string xdys_name;   ///< e.g. "10d5s"
  std::int32_t xdys_size = 16384;
  std::int32_t nmult = 0;  ///< 0 = not given
  std::int32_t width = 0;  ///< --n; 0 = not given
  std::string kernel = "auto";
  int reps = 20;
  int warmup = 5;
  int cpu_reps = 1;
  bool check = true;
  double check_limit_gib = 4.0;
  std::int32_t check_rows = 4096;  ///< rows sampled when the full reference would exceed check_limit_gib
  std::string scaling = "row";
  std::string precision = "fp16";  ///< --precision fp16|bf16|split
  std::string layout = "auto";   ///< --layout aligned|condensed|auto
  std::string reorder = "auto";  ///< --reorder none|rcm|auto
  std::string pattern_values = "ones";
  std::uint64_t seed = 1;
  bool json_output = false;
  std::string save_path;
  bool fp16_out = false;
  double alpha = 1.0;
  double beta = 0.0;
  bool cpu_only = false;
  bool flush_l2 = true;  ///< same default as bench_spmm, so the two programs' timings compare
  int gpus = 0;             ///< --gpus P: distributed over P GPUs by threads of this process; 0 = one GPU
  bool gpus_given = false;  ///< --gpus was on the command line (then P >= 1 is required)
  bool mpi = false;         ///< --mpi: distributed, one MPI process per rank
  bool baseline = true;     ///< distributed modes: also time the whole matrix on one GPU

  /// B's width after resolving --n / --nmult.
  std::int32_t n() const { return width > 0 ? width : (nmult > 0 ? nmult * kNmultColumns : kDefaultWidth); }
  /// --gpus or --mpi: the distributed mode (spmm_run_distributed.cpp) instead of the single-GPU one.
  bool distributed() const { return gpus_given || mpi; }
};

std::vector<std::string> kernel_choices() {
  std::vector<std::string> names;
  for (bcsr24::KernelKind kind : bcsr24::all_kernels()) names.emplace_back(bcsr24::kernel_name(kind));
  names.emplace_back("all");
  return names;
}

void add_options(CLI::App& app, Options& options) {
  app.description(
      "Multiply a sparse matrix A (BCSR-2:4: 16x32 tiles, 2:4 tiles on sparse tensor cores, the rest dense) by a "
      "random fp16 B of n columns, time the GPU kernels and check them against an fp64 reference.\n"
      "Without a usable GPU (or with --cpu-only) the CPU reference path runs instead and the GPU kernels are "
      "reported as skipped.\nExit status: 0 ok, 1 runtime error or relative error above 1e-2, 2 bad arguments.");
  app.add_option("matrix", options.input_path,
                 "Matrix Market file (.mtx, .mtx.gz) or preprocessed matrix (.b24, see --save)");
  auto* xdys = app.add_option("--xdys", options.xdys_name,
                              "Synthetic thesis matrix instead of a file: XdYs = X% dense tiles, Y% 2:4 tiles "
                              "(e.g. 10d5s)");
  app.add_option("--size", options.xdys_size, "Rows = columns of the --xdys matrix")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->needs(xdys);
  app.add_option("--mesh", options.mesh_spec,
                 "3-D mesh matrix instead of a file: NXxNYxNZ[,dofs=D][,stencil=7|27][,order=lex|random][,seed=S] "
                 "(e.g. 40x40x40,dofs=3,order=random)")
      ->excludes(xdys);
  auto* nmult = app.add_option("--nmult", options.nmult,
                               "Width of B in blocks of 8 columns, as in the thesis (n = 8 * nmult)")
                    ->check(CLI::PositiveNumber);
  app.add_option("--n", options.width, "Width of B in columns, any n >= 1 (default 128 = --nmult 16)")
      ->check(CLI::PositiveNumber)
      ->excludes(nmult);
  app.add_option("--kernel", options.kernel,
                 "GPU kernel to run: auto puts each 16-row band on tensor-core tiles (split_pipelined: 2:4 tiles on "
                 "mma.sp, dense tiles on mma.sync) or on CUDA-core CSR (csr_cuda_cores), whichever the cost model "
                 "predicts faster; dense_bt and dense_pipelined are the thesis's ladder; all runs each")
      ->capture_default_str()
      ->check(CLI::IsMember(kernel_choices()));
  app.add_option("--reps", options.reps, "Timed repetitions per kernel (median, min and max are reported)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", options.warmup, "Untimed runs per kernel before timing")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cpu-reps", options.cpu_reps, "Timed repetitions of the CPU reference path")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--check,!--no-check", options.check,
               "Compare every kernel with an fp64 Eigen product of the original matrix (default on; skipped with "
               "a message when the dense reference would exceed --check-limit-gib)");
  app.add_option("--check-rows", options.check_rows,
                 "When the full fp64 reference would exceed --check-limit-gib, check this many rows drawn at "
                 "random (seeded by --seed) instead, and say so")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--check-limit-gib", options.check_limit_gib, "Host memory the reference check may use, GiB")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--scaling", options.scaling,
                 "range handling: row = a power-of-two scale per row (an entry flushes only ~2^-40 below its row's "
                 "largest); auto = one power-of-two scale for the whole matrix when values overflow or underflow; "
                 "none = fail on values beyond the precision's range")
      ->capture_default_str()
      ->check(CLI::IsMember({"row", "auto", "none"}));
  app.add_option("--precision", options.precision,
                 "how A is stored and multiplied: fp16 (B fp16); bf16 (B given as fp32, converted to bf16 while "
                 "staged); split (A = hi + lo in fp16, B fp32 split the same way: about fp32 accuracy)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp16", "bf16", "split"}));
  app.add_option("--layout", options.layout,
                 "Tile layout: aligned = 16x32 tiles on the matrix's own grid (the thesis's BCSR); condensed = each "
                 "16-row band's nonzero columns packed into as few tiles as possible, arranged for 2:4, B rows "
                 "gathered by index; auto = whichever stores fewer bytes")
      ->capture_default_str()
      ->check(CLI::IsMember({"aligned", "condensed", "auto"}));
  app.add_option("--reorder", options.reorder,
                 "Row order before tiling: none = the file's; rcm = reverse Cuthill-McKee (with supervariables); "
                 "auto = rcm when it stores clearly fewer tiles. B and C stay in the caller's order")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "rcm", "auto"}));
  app.add_option("--pattern-values", options.pattern_values,
                 "Values given to the entries of a pattern (structure-only) Matrix Market file")
      ->capture_default_str()
      ->check(CLI::IsMember({"ones", "random"}));
  app.add_option("--seed", options.seed, "Seed for B, C0, pattern values and --xdys matrices")->capture_default_str();
  app.add_flag("--json", options.json_output, "Print one JSON object on stdout instead of text");
  app.add_option("--save", options.save_path, "Write the preprocessed matrix to this .b24 file");
  app.add_flag("--fp16-out", options.fp16_out, "GPU kernels write C in fp16 (default fp32)");
  app.add_option("--alpha", options.alpha, "C = alpha * A * B + beta * C")->capture_default_str();
  app.add_option("--beta", options.beta, "C = alpha * A * B + beta * C (C0 is random when beta != 0)")
      ->capture_default_str();
  app.add_flag("--cpu-only", options.cpu_only, "Do not touch the GPU; run the CPU reference path");
  app.add_flag("--flush-l2,!--no-flush", options.flush_l2,
               "Evict A and B from the GPU's L2 (by reading a buffer of twice its size) before each timed "
               "repetition, as bench_spmm does (default on; --no-flush times with A and B left in L2 by the "
               "previous run)");
  auto* gpus = app.add_option("--gpus", options.gpus,
                              "Distributed mode: spread A over P GPUs (devices 0..P-1), one host thread per GPU, "
                              "NCCL between them; times each stage against one GPU (needs a build with NCCL)");
  app.add_flag("--mpi", options.mpi,
               "Distributed mode under MPI: mpirun -np P spmm_run ... --mpi, one process per GPU (device: local rank "
               "% device count); needs a build with NCCL and MPI")
      ->excludes(gpus);
  app.add_flag("--baseline,!--no-baseline", options.baseline,
               "Distributed modes: also time the whole matrix on one GPU (device 0, or rank 0's) for the speedup and "
               "memory ratio (default on)");
}

bool has_suffix(const std::string& text, const std::string& suffix);

/// Checks the combinations CLI11 cannot express.
void validate(const Options& options) {
  if (int(!options.input_path.empty()) + int(!options.xdys_name.empty()) + int(!options.mesh_spec.empty()) != 1)
    throw UsageError("give exactly one of a matrix file, --xdys NAME or --mesh SPEC");
  if (!options.mesh_spec.empty()) {
    try {
      bcsr24::mesh_nonzeros(bcsr24::parse_mesh_spec(options.mesh_spec));  // a bad spec is a usage error
    } catch (const bcsr24::InvalidArgument& error) {
      throw UsageError(std::string("--mesh: ") + error.what());
    }
  }
  if (!std::isfinite(options.alpha) || !std::isfinite(options.beta))
    throw UsageError("--alpha and --beta must be finite");
  if (static_cast<std::int64_t>(options.nmult) * kNmultColumns > std::numeric_limits<std::int32_t>::max())
    throw UsageError("--nmult is too large");
  if (options.gpus_given && options.gpus < 1)
    throw UsageError("--gpus " + std::to_string(options.gpus) +
                     ": the distributed mode needs P >= 1 GPUs (leave --gpus out for the single-GPU mode)");
  if (options.distributed()) {
    const char* mode = options.mpi ? "--mpi" : "--gpus";
    if (options.cpu_only) throw UsageError(std::string(mode) + " runs on GPUs; it excludes --cpu-only");
    if (options.fp16_out)
      throw UsageError(std::string(mode) + ": distributed products write fp32 C; --fp16-out is not available");
    if (options.kernel != "auto")
      throw UsageError(std::string(mode) + ": every rank's parts are planned by the cost model; --kernel " +
                       options.kernel + " is not available (leave --kernel out)");
    if (!options.save_path.empty()) throw UsageError(std::string(mode) + " excludes --save");
    if (has_suffix(options.input_path, ".b24"))
      throw UsageError(std::string(mode) + ": a .b24 file holds tiles, not the rows the ranks split; give the "
                       "Matrix Market file");
  }
}

// ------------------------------------------------------------------------------------------------------------
// Small helpers: time, progress, formatting, random fp16
// ------------------------------------------------------------------------------------------------------------

class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  double symmetric_unit() { return double(next() >> 11) * 0x1p-52 - 1.0; }

 private:
  std::uint64_t state_;
};

/// Random fp16 values uniform in [-1, 1), row-major, rounded to fp16 (what the GPU sees, exactly).
std::vector<bcsr24::fp16_t> random_fp16(std::int64_t count, std::uint64_t seed) {
  Random random(seed);
  std::vector<bcsr24::fp16_t> values(static_cast<std::size_t>(count));
  for (auto& value : values) value = bcsr24::double_to_fp16(random.symmetric_unit());
  return values;
}

std::string file_stem_without_mtx(const std::string& path) {
  std::filesystem::path p(path);
  std::string name = p.filename().string();
  for (const char* suffix : {".gz", ".mtx", ".b24"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0)
      name.erase(name.size() - s.size());
  }
  return name;
}

bool has_suffix(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ------------------------------------------------------------------------------------------------------------
// Input: Matrix Market file, .b24 file or synthetic XdYs matrix
// ------------------------------------------------------------------------------------------------------------

struct LoadedMatrix {
  std::string name;
  std::string source;  ///< "matrix_market", "b24" or "synthetic"
  bcsr24::CsrMatrix reference_csr;  ///< the original matrix (or, for .b24, the stored one)
  bool reference_is_original = true;
  bcsr24::Bcsr24Matrix bcsr;
  json matrix_json;
  json preprocessing_json = json::object();
  json layout_json = json::object();  ///< the layout choice against the thesis baseline (layout_json())
};

/// The layout and order chosen, why, and the tiles and bytes before (aligned, file order) and after.
json layout_json(const bcsr24::LayoutReport& r, const bcsr24::TileCensus& after) {
  json j = {{"layout", bcsr24::layout_name(r.layout)},
            {"reordering", bcsr24::reordering_name(r.reordering)},
            {"reason", r.reason},
            {"baseline_stored_tiles", r.baseline_stored_tiles},
            {"baseline_sparse24_tiles", r.baseline_sparse24_tiles},
            {"baseline_sparse24_share",
             r.baseline_stored_tiles > 0 ? double(r.baseline_sparse24_tiles) / double(r.baseline_stored_tiles) : 0.0},
            {"baseline_bytes", r.baseline_bytes},
            {"stored_tiles", after.stored_tiles()},
            {"sparse24_share", after.sparse24_share()},
            {"bytes", after.total_bytes()},
            {"index_bytes", after.index_bytes},
            {"index_share", after.total_bytes() > 0 ? double(after.index_bytes) / double(after.total_bytes()) : 0.0},
            {"reorder_s", r.reorder_seconds},
            {"baseline_s", r.baseline_seconds},
            {"pack_s", r.pack_seconds},
            {"total_s", r.total_seconds}};
  if (r.condensed_tiles_file_order >= 0) j["condensed_tiles_file_order"] = r.condensed_tiles_file_order;
  if (r.condensed_tiles_rcm >= 0) j["condensed_tiles_rcm"] = r.condensed_tiles_rcm;
  return j;
}

/// convert = false (MPI ranks other than 0 in the distributed mode, which only need the CSR): stops after reading
/// or generating; then only name, source and reference_csr are filled.
LoadedMatrix load_matrix(const Options& options, bool show_progress, bool convert = true) {
  LoadedMatrix loaded;
  // Synthetic sources: name the matrix, then generate it with a progress line and a timing.
  const auto generate = [&](std::string name, const auto& generator) {
    loaded.name = std::move(name);
    loaded.source = "synthetic";
    ProgressLine progress(show_progress, "generating " + loaded.name);
    Stopwatch watch;
    loaded.reference_csr = generator();
    loaded.preprocessing_json["generate_s"] = watch.seconds();
    progress.done(watch.seconds());
  };
  if (!options.mesh_spec.empty()) {
    const bcsr24::MeshSpec spec = bcsr24::parse_mesh_spec(options.mesh_spec);
    generate(bcsr24::mesh_name(spec), [&] { return bcsr24::generate_mesh_matrix(spec); });
    loaded.matrix_json = {{"mesh", options.mesh_spec}, {"dofs_per_node", spec.dofs_per_node},
                          {"stencil", spec.stencil},
                          {"node_order", spec.order == bcsr24::NodeOrder::random ? "random" : "lexicographic"}};
  } else if (!options.xdys_name.empty()) {
    bcsr24::XdYsSpec spec;
    bcsr24::parse_xdys_name(options.xdys_name, spec.dense_percent, spec.sparse24_percent);
    spec.rows = spec.cols = options.xdys_size;
    spec.seed = options.seed;
    generate(options.xdys_name + "_" + std::to_string(options.xdys_size), [&] { return bcsr24::generate_xdys(spec); });
    loaded.matrix_json = {{"xdys", options.xdys_name}, {"dense_percent", spec.dense_percent},
                          {"sparse24_percent", spec.sparse24_percent}};
  } else {
    const std::string& path = options.input_path;
    // The library would also fail, but naming the file here gives the same message for .mtx and .b24.
    if (!std::filesystem::exists(path)) throw bcsr24::Error(path + ": no such file");
    loaded.name = file_stem_without_mtx(path);
    if (has_suffix(path, ".b24")) {
      loaded.source = "b24";
      ProgressLine progress(show_progress, "loading " + path);
      Stopwatch watch;
      loaded.bcsr = bcsr24::load_bcsr24(path);
      loaded.preprocessing_json["load_s"] = watch.seconds();
      progress.done(watch.seconds());
      // A .b24 file carries no original matrix, so its reference is the stored one: the check then
      // measures the kernels, not the fp16 rounding of A.
      loaded.reference_csr = bcsr24::stored_matrix_csr(loaded.bcsr);
      loaded.reference_is_original = false;
      loaded.matrix_json = json::object();
    } else {
      loaded.source = "matrix_market";
      bcsr24::MatrixMarketOptions mm_options;
      mm_options.pattern_values =
          options.pattern_values == "random" ? bcsr24::PatternValues::random : bcsr24::PatternValues::ones;
      mm_options.seed = options.seed;
      bcsr24::MatrixMarketInfo info;
      ProgressLine progress(show_progress, "reading " + path);
      Stopwatch watch;
      loaded.reference_csr = bcsr24::read_matrix_market(path, mm_options, &info);
      loaded.preprocessing_json["read_s"] = watch.seconds();
      progress.done(watch.seconds());
      loaded.matrix_json = {{"field", info.field},
                            {"symmetry", info.symmetry},
                            {"file_entries", info.entries}};
    }
    loaded.matrix_json["path"] = path;
  }
  if (!convert) return loaded;

  if (loaded.source != "b24") {
    bcsr24::ConvertOptions convert_options;
    convert_options.scaling = options.scaling == "none"   ? bcsr24::ScalingPolicy::none
                              : options.scaling == "auto" ? bcsr24::ScalingPolicy::automatic
                                                          : bcsr24::ScalingPolicy::per_row;
    convert_options.precision = bcsr24::precision_from_name(options.precision);
    convert_options.layout = bcsr24::layout_from_name(options.layout);
    convert_options.reorder = bcsr24::reordering_from_name(options.reorder);
    ProgressLine progress(show_progress, "converting to BCSR-2:4");
    Stopwatch watch;
    bcsr24::LayoutReport report;
    loaded.bcsr = bcsr24::convert_to_bcsr24(loaded.reference_csr, convert_options, &report);
    loaded.preprocessing_json["convert_s"] = watch.seconds();
    progress.done(watch.seconds());
    loaded.layout_json = layout_json(report, loaded.bcsr.census());
  } else {
    loaded.layout_json = {{"layout", bcsr24::layout_name(loaded.bcsr.layout)},
                          {"reordering", bcsr24::reordering_name(loaded.bcsr.reordering)},
                          {"reason", "preprocessed .b24 file"}};
  }
  if (!options.save_path.empty()) {
    ProgressLine progress(show_progress, "saving " + options.save_path);
    Stopwatch watch;
    bcsr24::save_bcsr24(options.save_path, loaded.bcsr);
    loaded.preprocessing_json["save_s"] = watch.seconds();
    loaded.preprocessing_json["saved_to"] = options.save_path;
    progress.done(watch.seconds());
  }

  // Common fields first, then what only this kind of source knows (file, banner, XdYs percentages).
  json matrix = {{"name", loaded.name},
                 {"source", loaded.source},
                 {"rows", loaded.bcsr.rows},
                 {"cols", loaded.bcsr.cols},
                 {"nnz", loaded.bcsr.nnz},
                 {"entries_with_explicit_zeros", loaded.reference_csr.nnz()},
                 {"density", double(loaded.bcsr.nnz) /
                                 std::max(1.0, double(loaded.bcsr.rows) * double(loaded.bcsr.cols))}};
  matrix.update(loaded.matrix_json);
  loaded.matrix_json = std::move(matrix);
  return loaded;
}

json census_json(const bcsr24::TileCensus& census) {
  return {{"tile_rows", census.tile_rows},
          {"tile_cols", census.tile_cols},
          {"dense_tiles", census.dense_tiles},
          {"sparse24_tiles", census.sparse24_tiles},
          {"zero_tiles", census.zero_tiles},
          {"stored_tiles", census.stored_tiles()},
          {"sparse24_share", census.sparse24_share()},
          {"nnz", census.nnz},
          {"dense_nnz", census.dense_nnz},
          {"sparse24_nnz", census.sparse24_nnz},
          {"nnz_per_tile", census.nnz_per_tile()},
          {"dense_bytes", census.dense_bytes},
          {"sparse24_bytes", census.sparse24_bytes},
          {"empty_tile_rows", census.empty_tile_rows},
          {"max_tiles_per_tile_row", census.max_tiles_per_tile_row},
          {"index_bytes", census.index_bytes},
          {"b_row_index", census.gathered_b_rows ? "gathered" : "implicit"},
          {"row_order_bytes", census.row_order_bytes},
          {"layout", bcsr24::layout_name(census.layout)},
          {"reordering", bcsr24::reordering_name(census.reordering)}};
}

json scaling_json(const bcsr24::Fp16Scaling& scaling, const std::string& policy) {
  return {{"policy", policy},
          {"exponent", scaling.exponent},
          {"scaled", scaling.exponent != 0},
          {"max_abs", scaling.max_abs},
          {"min_abs_nonzero", scaling.min_abs_nonzero},
          {"overflow_count", scaling.overflow_count},
          {"underflow_count", scaling.underflow_count},
          {"flushed_count", scaling.flushed_count},
          {"subnormal_count", scaling.subnormal_count},
          {"per_row", scaling.per_row},
          {"min_row_exponent", scaling.min_row_exponent},
          {"max_row_exponent", scaling.max_row_exponent},
          {"max_flushed_relative", scaling.max_flushed_relative},
          {"max_relative_error", scaling.max_relative_error},
          {"frobenius_relative_error", scaling.frobenius_relative_error}};
}

// ------------------------------------------------------------------------------------------------------------
// fp64 reference and error
// ------------------------------------------------------------------------------------------------------------

using DenseRowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using SparseRowMajorView = Eigen::Map<const Eigen::SparseMatrix<double, Eigen::RowMajor, std::int32_t>>;

/// Host memory the reference check needs: the fp64 result, B, |B| and B^2, the fetched C and C0 (float), and
/// three per-entry weight arrays beside the CSR.
double reference_check_bytes(std::int64_t rows, std::int64_t cols, std::int64_t n, std::int64_t nnz) {
  return 8.0 * double(rows) * double(n) + 8.0 * 3.0 * double(cols) * double(n) +
         4.0 * 2.0 * double(rows) * double(n) + 3.0 * 8.0 * double(nnz);
}

/// What fp16 arithmetic lets a correct kernel's relative Frobenius error be.
struct ErrorExpectation {
  double typical = 0.0;  ///< RMS estimate from independent roundings: where correct kernels land
  double bound = 0.0;    ///< worst case: a correct kernel never exceeds it
};

struct Reference {
  std::vector<double> c;  ///< alpha * A * B + beta * C0 in fp64, rows x n row-major (rows: all, or `rows`)
  std::vector<std::int32_t> rows;  ///< the sampled rows of C, ascending; empty = every row
  std::int32_t n = 0;
  double norm = 0.0;      ///< ||c||_F
  ErrorExpectation f32_output, f16_output;
  double seconds = 0.0;

  const ErrorExpectation& expectation(bool fp16_output) const { return fp16_output ? f16_output : f32_output; }
};

/// Worst-case absolute error of storing `value` after scaling by 2^-exponent. fp16: relative 2^-11 in the normal
/// range, absolute 2^-25 (times the scale) among subnormals, the whole value when it flushes to zero; bf16:
/// relative 2^-8 (its range is fp32's); split: relative 2^-22 (hi keeps 11 bits, lo 11 more), absolute 2^-36
/// once the low part is subnormal.
double storage_error(double value, std::int32_t exponent, bcsr24::Precision precision) {
  const double magnitude = std::abs(value);
  switch (precision) {
    case bcsr24::Precision::bf16: return std::min(magnitude, 0x1p-8 * magnitude + std::ldexp(0x1p-134, exponent));
    case bcsr24::Precision::split: return std::min(magnitude, 0x1p-22 * magnitude + std::ldexp(0x1p-36, exponent));
    case bcsr24::Precision::fp16: break;
  }
  if (std::ldexp(magnitude, -exponent) >= bcsr24::kFp16MinNormal) return kUnitRoundoffFp16 * magnitude;
  return std::min(magnitude, std::ldexp(0.5 * bcsr24::kFp16MinSubnormal, exponent));
}

/// The value `value` becomes once stored after scaling by 2^-exponent (round to nearest even).
double stored_value(double value, std::int32_t exponent, bcsr24::Precision precision) {
  const double scaled = std::ldexp(value, -exponent);
  double stored = 0.0;
  switch (precision) {
    case bcsr24::Precision::fp16: stored = bcsr24::fp16_to_float(bcsr24::double_to_fp16(scaled)); break;
    case bcsr24::Precision::bf16: stored = bcsr24::bf16_to_float(bcsr24::double_to_bf16(scaled)); break;
    case bcsr24::Precision::split: {
      const double hi = bcsr24::fp16_to_float(bcsr24::double_to_fp16(scaled));
      const double lo = bcsr24::fp16_to_float(bcsr24::double_to_fp16(std::ldexp(scaled - hi, bcsr24::kSplitLoShift)));
      stored = hi + std::ldexp(lo, -bcsr24::kSplitLoShift);
      break;
    }
  }
  return std::ldexp(stored, exponent);
}

/// Computes the fp64 product of the reference CSR with B and, in the same pass over row chunks, two error
/// figures per output element. The worst-case bound is
///   |alpha| sum_k (e_ik + gamma(k_i) |a_ik|) |b_kj| + |beta| |c0_ij| u32 + (3 u32 + u_out) |cref_ij|
/// where e_ik bounds the fp16 storage error of a_ik (0 when the reference is the stored matrix itself), gamma(k)
/// = k u / (1 - k u) with u = 2^-23 covers fp32 accumulation over the k_i nonzeros of row i (tensor cores
/// truncate rather than round, hence 2^-23), 3 u32 the final scalings and u_out the output rounding. The typical
/// error takes the storage error exactly, d_ik = fl16(a_ik) - a_ik, and the other roundings as independent:
///   (alpha (D B)_ij)^2 + alpha^2 sum_k k_i u32^2 a_ik^2 b_kj^2 + (u_out^2 / 3) cref_ij^2.
/// Every term is a sparse product with per-entry weights, so the figures cost three more products.
/// The rows `rows` (ascending) of `a`, as a matrix of rows.size() rows.
bcsr24::CsrMatrix csr_rows(const bcsr24::CsrMatrix& a, const std::vector<std::int32_t>& rows) {
  bcsr24::CsrMatrix out;
  out.rows = static_cast<std::int32_t>(rows.size());
  out.cols = a.cols;
  out.row_ptr.assign(rows.size() + 1, 0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::int32_t begin = a.row_ptr[rows[i]], end = a.row_ptr[rows[i] + 1];
    out.col_idx.insert(out.col_idx.end(), a.col_idx.begin() + begin, a.col_idx.begin() + end);
    out.values.insert(out.values.end(), a.values.begin() + begin, a.values.begin() + end);
    out.row_ptr[i + 1] = static_cast<std::int32_t>(out.col_idx.size());
  }
  return out;
}

/// `count` distinct rows of 0 .. rows-1 drawn uniformly (seeded), ascending.
std::vector<std::int32_t> sample_rows(std::int32_t rows, std::int32_t count, std::uint64_t seed) {
  std::vector<std::int32_t> all(static_cast<std::size_t>(rows));
  for (std::int32_t i = 0; i < rows; ++i) all[static_cast<std::size_t>(i)] = i;
  std::mt19937_64 rng(seed ^ 0x5eed5a3b1eULL);
  const std::int32_t take = std::min(rows, count);
  for (std::int32_t i = 0; i < take; ++i)  // partial Fisher-Yates
    std::swap(all[static_cast<std::size_t>(i)],
              all[static_cast<std::size_t>(i + std::int32_t(rng() % std::uint64_t(rows - i)))]);
  all.resize(static_cast<std::size_t>(take));
  std::sort(all.begin(), all.end());
  return all;
}

/// sample: the rows of C to compute (ascending), or empty for all of them.
Reference compute_reference(const LoadedMatrix& loaded, std::int32_t n, const std::vector<bcsr24::fp16_t>& b,
                            const std::vector<bcsr24::fp16_t>& c0, double alpha, double beta, bool show_progress,
                            std::vector<std::int32_t> sample = {}) {
  constexpr double kAccumulationRoundoff = 0x1p-23;
  const bcsr24::CsrMatrix sampled = sample.empty() ? bcsr24::CsrMatrix{} : csr_rows(loaded.reference_csr, sample);
  const bcsr24::CsrMatrix& a = sample.empty() ? loaded.reference_csr : sampled;
  const bcsr24::Precision precision = loaded.bcsr.precision;
  // B reaches a bf16 matrix's kernels as fp32 and is rounded to bf16 while staged (2^-8); fp16 and split
  // matrices multiply the fp16-representable B exactly.
  const double b_roundoff = precision == bcsr24::Precision::bf16 ? 0x1p-8 : 0.0;
  ProgressLine progress(show_progress, "fp64 reference product");
  Stopwatch watch;
  Reference reference;
  reference.n = n;
  reference.rows = std::move(sample);
  reference.c.assign(static_cast<std::size_t>(a.rows) * n, 0.0);

  std::vector<double> bound_weights(a.values.size()), storage_deltas(a.values.size()),
      accumulation_variances(a.values.size());
  for (std::int32_t row = 0; row < a.rows; ++row) {
    const double k = double(a.row_ptr[row + 1] - a.row_ptr[row]);
    const double gamma = k * kAccumulationRoundoff / (1.0 - k * kAccumulationRoundoff);
    for (std::int32_t i = a.row_ptr[row]; i < a.row_ptr[row + 1]; ++i) {
      const double value = a.values[i];
      const bool rounded = loaded.reference_is_original;
      const std::int32_t exponent = loaded.bcsr.exponent_of_row(reference.rows.empty() ? row : reference.rows[row]);
      bound_weights[i] = (rounded ? storage_error(value, exponent, precision) : 0.0) +
                         (gamma + b_roundoff * (1.0 + 0x1p-8)) * std::abs(value);
      storage_deltas[i] = rounded ? stored_value(value, exponent, precision) - value : 0.0;
      accumulation_variances[i] = k * kUnitRoundoffFp32 * kUnitRoundoffFp32 * value * value;
    }
  }
  auto view = [&](const std::vector<double>& values) {
    return SparseRowMajorView(a.rows, a.cols, a.nnz(), a.row_ptr.data(), a.col_idx.data(), values.data());
  };
  const SparseRowMajorView a_view = view(a.values), bound_view = view(bound_weights),
                           delta_view = view(storage_deltas), variance_view = view(accumulation_variances);
  DenseRowMajor b_double(a.cols, n);
  for (std::int64_t i = 0; i < std::int64_t(a.cols) * n; ++i) b_double.data()[i] = bcsr24::fp16_to_float(b[i]);
  const DenseRowMajor b_abs = b_double.cwiseAbs();
  const DenseRowMajor b_squared = b_double.cwiseAbs2();

  // Row chunks keep the scratch small and give the progress line something to count.
  const std::int32_t chunk_rows = std::max<std::int32_t>(1, std::min<std::int32_t>(a.rows, 4096));
  DenseRowMajor bound_product, delta_product, variance_product;
  double norm_sq = 0.0, bound_f32_sq = 0.0, bound_f16_sq = 0.0, typical_f32_sq = 0.0, typical_f16_sq = 0.0;
  for (std::int32_t row0 = 0; row0 < a.rows; row0 += chunk_rows) {
    const std::int32_t count = std::min(chunk_rows, a.rows - row0);
    Eigen::Map<DenseRowMajor> c_chunk(reference.c.data() + std::int64_t(row0) * n, count, n);
    c_chunk.noalias() = alpha * (a_view.middleRows(row0, count) * b_double);
    bound_product.noalias() = bound_view.middleRows(row0, count) * b_abs;
    delta_product.noalias() = delta_view.middleRows(row0, count) * b_double;
    variance_product.noalias() = variance_view.middleRows(row0, count) * b_squared;
    for (std::int32_t r = 0; r < count; ++r) {
      for (std::int32_t j = 0; j < n; ++j) {
        const std::int64_t index = (std::int64_t(row0) + r) * n + j;
        const std::int64_t c_row = reference.rows.empty() ? std::int64_t(row0) + r : reference.rows[row0 + r];
        double& value = reference.c[index];
        const double c0_value = beta != 0.0 ? double(bcsr24::fp16_to_float(c0[c_row * n + j])) : 0.0;
        value += beta * c0_value;
        const double magnitude = std::abs(value);
        const double bound = std::abs(alpha) * bound_product(r, j) +
                             std::abs(beta) * std::abs(c0_value) * kUnitRoundoffFp32 +
                             3.0 * kUnitRoundoffFp32 * magnitude;
        const double bound_f32 = bound + kUnitRoundoffFp32 * magnitude;
        const double bound_f16 = bound + kUnitRoundoffFp16 * magnitude;
        const double storage = alpha * delta_product(r, j);
        const double variance = storage * storage + alpha * alpha * variance_product(r, j);
        norm_sq += value * value;
        bound_f32_sq += bound_f32 * bound_f32;
        bound_f16_sq += bound_f16 * bound_f16;
        typical_f32_sq += variance + kUnitRoundoffFp32 * kUnitRoundoffFp32 / 3.0 * value * value;
        typical_f16_sq += variance + kUnitRoundoffFp16 * kUnitRoundoffFp16 / 3.0 * value * value;
      }
    }
    progress.percent(double(row0 + count) / double(a.rows));
  }
  reference.norm = std::sqrt(norm_sq);
  const double denominator = reference.norm > 0.0 ? reference.norm : 1.0;
  reference.f32_output = {std::sqrt(typical_f32_sq) / denominator, std::sqrt(bound_f32_sq) / denominator};
  reference.f16_output = {std::sqrt(typical_f16_sq) / denominator, std::sqrt(bound_f16_sq) / denominator};
  reference.seconds = watch.seconds();
  progress.done(reference.seconds);
  return reference;
}

/// ||C - Cref||_F / ||Cref||_F over the reference's rows (all, or the sample); an absolute norm when Cref is
/// zero. NaN anywhere in those rows of C gives NaN. value_at(i) reads element i of C (row-major, ld = n).
template <typename ValueAt>
double relative_error(const Reference& reference, ValueAt value_at) {
  double diff_sq = 0.0;
  const std::size_t n = static_cast<std::size_t>(reference.n);
  for (std::size_t i = 0; i < reference.c.size(); ++i) {
    const std::size_t c_index = reference.rows.empty() ? i : std::size_t(reference.rows[i / n]) * n + i % n;
    const double diff = value_at(c_index) - reference.c[i];
    diff_sq += diff * diff;
  }
  return std::sqrt(diff_sq) / (reference.norm > 0.0 ? reference.norm : 1.0);
}

// ------------------------------------------------------------------------------------------------------------
// Results
// ------------------------------------------------------------------------------------------------------------

/// The check fields of a result: rel_error, its expectation and whether it is within the bound.
void add_error_fields(json& result, double rel_error, const ErrorExpectation& expectation) {
  // JSON has no NaN: a NaN error (poisoned C left unwritten) is reported as null with a flag.
  if (std::isfinite(rel_error)) result["rel_error"] = rel_error;
  else result["rel_error_not_finite"] = true;
  result["expected_rel_error"] = expectation.typical;
  result["rel_error_bound"] = expectation.bound;
  result["within_bound"] = rel_error <= expectation.bound;
}

/// One row of the results table.
json result_json(const std::string& kernel, const std::string& device, const Timings& timings,
                 const bcsr24::SpmmCost& cost, bool floor_applies, std::optional<double> rel_error,
                 const ErrorExpectation* expectation) {
  const double seconds = timings.median_ms * 1e-3;
  json result = {{"kernel", kernel},
                 {"device", device},
                 {"median_ms", timings.median_ms},
                 {"min_ms", timings.min_ms},
                 {"max_ms", timings.max_ms},
                 {"tflops_thesis", cost.thesis_flops / seconds * 1e-12},
                 {"tflops_useful", cost.useful_flops / seconds * 1e-12},
                 {"bandwidth_gbs", cost.min_bytes / seconds * 1e-9},
                 {"floor_fraction", nullptr},
                 {"rel_error", nullptr},
                 {"expected_rel_error", nullptr},
                 {"rel_error_bound", nullptr},
                 {"within_bound", nullptr}};
  // The memory floor is a GPU figure (kReferenceBandwidth); it says nothing about the CPU path.
  if (floor_applies) result["floor_fraction"] = (cost.min_bytes / bcsr24::kReferenceBandwidth) / seconds;
  if (rel_error && expectation) add_error_fields(result, *rel_error, *expectation);
  return result;
}

/// The plan: how the bands and their nonzeros and bytes are split between tiles and CSR.
json plan_json(const bcsr24::PlanReport& plan) {
  const double nnz = double(plan.sparse24_nnz + plan.dense_nnz + plan.csr_nnz);
  const double bytes = double(plan.sparse24_bytes + plan.dense_bytes + plan.csr_bytes);
  auto share = [](double part, double whole) { return whole > 0 ? part / whole : 0.0; };
  return {{"tile_bands", plan.tile_bands},
          {"csr_bands", plan.csr_bands},
          {"sparse24_tiles", plan.sparse24_tiles},
          {"dense_tiles", plan.dense_tiles},
          {"sparse24_nnz", plan.sparse24_nnz},
          {"dense_nnz", plan.dense_nnz},
          {"csr_nnz", plan.csr_nnz},
          {"nnz_share", {{"sparse24", share(double(plan.sparse24_nnz), nnz)},
                         {"dense", share(double(plan.dense_nnz), nnz)},
                         {"csr", share(double(plan.csr_nnz), nnz)}}},
          {"sparse24_bytes", plan.sparse24_bytes},
          {"dense_bytes", plan.dense_bytes},
          {"csr_bytes", plan.csr_bytes},
          {"bytes_share", {{"sparse24", share(double(plan.sparse24_bytes), bytes)},
                           {"dense", share(double(plan.dense_bytes), bytes)},
                           {"csr", share(double(plan.csr_bytes), bytes)}}},
          {"split_bands", plan.split_bands},
          {"split_parts", plan.split_parts},
          {"tile_pipeline", plan.deep_tile_pipeline ? "deep" : "standard"},
          {"tile_stages", plan.tile_stages},
          {"band_groups", plan.band_groups},
          {"band_group_steps", plan.band_group_steps},
          {"csr_long_rows", plan.csr_long_rows},
          {"csr_long_blocks", plan.csr_long_blocks},
          {"csr_medium_rows", plan.csr_medium_rows},
          {"csr_shape", {{"chunks", plan.csr_chunks}, {"nz_lanes", plan.csr_nz_lanes}}},
          {"predicted_ms", plan.predicted_us >= 0 ? json(plan.predicted_us * 1e-3) : json(nullptr)},
          {"tiles_only_predicted_ms", plan.tiles_only_us * 1e-3},
          {"csr_only_predicted_ms", plan.csr_only_us >= 0 ? json(plan.csr_only_us * 1e-3) : json(nullptr)},
          {"reason", plan.reason}};
}

/// "plan" lines of one kernel: where its nonzeros and bytes go.
void print_plan(const std::string& kernel, const json& plan) {
  auto pct = [](const json& v) { return format("%.1f%%", 100.0 * v.get<double>()); };
  std::cout << "plan        " << kernel << ": " << plan["tile_bands"] << " bands on tiles, " << plan["csr_bands"]
            << " on CSR (" << plan["reason"].get<std::string>() << ")\n"
            << "            nonzeros: 2:4 tiles " << pct(plan["nnz_share"]["sparse24"]) << ", dense tiles "
            << pct(plan["nnz_share"]["dense"]) << ", CSR " << pct(plan["nnz_share"]["csr"]) << "; bytes of A: 2:4 tiles "
            << pct(plan["bytes_share"]["sparse24"]) << ", dense tiles " << pct(plan["bytes_share"]["dense"])
            << ", CSR " << pct(plan["bytes_share"]["csr"]) << "\n";
  if (plan["split_bands"].get<int>() > 0)
    std::cout << "            " << plan["split_bands"] << " long band(s) split over " << plan["split_parts"]
              << " blocks\n";
  if (plan["tile_pipeline"].get<std::string>() == "deep")
    std::cout << "            deep tile pipeline (" << plan["tile_stages"] << " stages per warp)\n";
  if (plan["band_groups"].get<int>() > 0) {
    const double tiles = std::max(1.0, plan["sparse24_tiles"].get<double>() + plan["dense_tiles"].get<double>());
    std::cout << "            " << plan["band_groups"] << " band groups of 16 bands, "
              << format("%.2f", plan["band_group_steps"].get<double>() / tiles) << " B-block loads per tile\n";
  }
}

bool result_failed(const json& result) {
  if (result.value("rel_error_not_finite", false)) return true;
  return result["rel_error"].is_number() && !(result["rel_error"].get<double>() <= kFailRelativeError);
}

// ------------------------------------------------------------------------------------------------------------
// Human-readable report
// ------------------------------------------------------------------------------------------------------------

/// "layout" lines: what was chosen and why, and the thesis baseline (aligned, file order) beside it.
void print_layout(const json& layout) {
  std::cout << "layout      " << layout["layout"].get<std::string>() << ", rows " << 
      (layout["reordering"] == "rcm" ? "reordered by RCM" : "in file order") << " ("
            << layout["reason"].get<std::string>() << ")\n";
  if (!layout.contains("baseline_stored_tiles") || layout["baseline_stored_tiles"].get<std::int64_t>() < 0) return;
  std::cout << "            before (aligned, file order): " << layout["baseline_stored_tiles"] << " tiles, "
            << format("%.1f%%", 100.0 * layout["baseline_sparse24_share"].get<double>()) << " 2:4, "
            << human_bytes(layout["baseline_bytes"].get<double>()) << "\n"
            << "            after:                        " << layout["stored_tiles"] << " tiles, "
            << format("%.1f%%", 100.0 * layout["sparse24_share"].get<double>()) << " 2:4, "
            << human_bytes(layout["bytes"].get<double>()) << " (B-row indices and row map "
            << human_bytes(layout["index_bytes"].get<double>()) << ", "
            << format("%.1f%%", 100.0 * layout["index_share"].get<double>()) << ")\n"
            << "            time: reorder " << format("%.3f s", layout["reorder_s"].get<double>()) << ", baseline count "
            << format("%.3f s", layout["baseline_s"].get<double>()) << ", build " << format("%.3f s", layout["pack_s"].get<double>())
            << ", conversion total " << format("%.3f s", layout["total_s"].get<double>()) << "\n";
}

void print_matrix(const json& matrix, const json& census, const json& scaling, const json& preprocessing) {
  std::cout << "matrix      " << matrix["name"].get<std::string>();
  if (matrix.contains("field"))
    std::cout << " (Matrix Market, " << matrix["field"].get<std::string>() << ", "
              << matrix["symmetry"].get<std::string>() << ")";
  else if (matrix["source"] == "b24")
    std::cout << " (preprocessed .b24)";
  else
    std::cout << (matrix.contains("mesh") ? " (3-D mesh)" : " (synthetic XdYs)");
  std::cout << "\n            " << matrix["rows"] << " x " << matrix["cols"] << ", " << matrix["nnz"]
            << " nonzeros";
  if (matrix["entries_with_explicit_zeros"] != matrix["nnz"])
    std::cout << " (" << matrix["entries_with_explicit_zeros"] << " entries with explicit zeros)";
  std::cout << ", density " << format("%.3g", matrix["density"].get<double>()) << "\n";

  std::cout << "tiles       16x32: " << census["tile_rows"] << " tile rows x " << census["tile_cols"]
            << " tile columns\n"
            << "            stored " << census["stored_tiles"] << " = " << census["dense_tiles"] << " dense + "
            << census["sparse24_tiles"] << " 2:4 (" << format("%.1f", 100.0 * census["sparse24_share"].get<double>())
            << "% 2:4), zero " << census["zero_tiles"] << "\n"
            << "            " << format("%.1f", census["nnz_per_tile"].get<double>()) << " nonzeros per stored tile ("
            << format("%.1f%%", 100.0 * census["nnz_per_tile"].get<double>() / bcsr24::kDenseTileValues)
            << " of 512)\n"
            << "            dense list " << human_bytes(census["dense_bytes"].get<double>()) << ", 2:4 list "
            << human_bytes(census["sparse24_bytes"].get<double>()) << "\n"
            << "            " << census["empty_tile_rows"] << " empty tile rows, at most "
            << census["max_tiles_per_tile_row"] << " tiles in one tile row\n";

  {
    std::string label = scaling["precision"].get<std::string>();
    label.resize(12, ' ');
    std::cout << label;
  }
  if (scaling["per_row"].get<bool>())
    std::cout << "rows scaled by 2^" << scaling["min_row_exponent"] << " .. 2^" << scaling["max_row_exponent"]
              << " (products rescaled exactly)";
  else if (scaling["scaled"].get<bool>())
    std::cout << "values scaled by 2^" << scaling["exponent"] << " (products rescaled exactly)";
  else
    std::cout << "no scaling needed";
  std::cout << "; max |a| " << format("%.3g", scaling["max_abs"].get<double>()) << ", min |a| "
            << format("%.3g", scaling["min_abs_nonzero"].get<double>()) << "\n"
            << "            overflow " << scaling["overflow_count"] << ", underflow " << scaling["underflow_count"]
            << ", flushed to zero " << scaling["flushed_count"] << " (largest "
            << format("%.2g", scaling["max_flushed_relative"].get<double>()) << " of its row's largest), subnormal "
            << scaling["subnormal_count"] << "\n"
            << "            stored A against the input: max relative error "
            << format("%.2e", scaling["max_relative_error"].get<double>()) << ", Frobenius "
            << format("%.2e", scaling["frobenius_relative_error"].get<double>()) << "\n";

  std::cout << "preprocess ";
  static const std::pair<const char*, const char*> steps[] = {{"generate_s", "generate"}, {"read_s", "read"},
                                                              {"load_s", "load .b24"}, {"convert_s", "convert"},
                                                              {"save_s", "save .b24"}};
  for (const auto& [key, label] : steps)
    if (preprocessing.contains(key))
      std::cout << " " << label << " " << format("%.3f s", preprocessing[key].get<double>());
  std::cout << "\n";
}

void print_results_header() {
  std::printf("%-18s %10s %10s %10s %9s %9s %9s %8s %10s  %s\n", "kernel", "median ms", "min ms", "max ms",
              "TFLOPS", "useful", "GB/s", "floor", "rel.error", "check");
  std::printf("%-18s %10s %10s %10s %9s %9s\n", "", "", "", "", "(thesis)", "TFLOPS");
}

/// The "rel.error" and "check" columns of a result: the error (or "not run", "NaN/inf") and the verdict.
std::pair<std::string, std::string> error_and_verdict(const json& result) {
  std::string error = "not run", verdict;
  if (result.value("rel_error_not_finite", false)) {
    error = "NaN/inf";
    verdict = "FAILED";
  } else if (result["rel_error"].is_number()) {
    const double rel_error = result["rel_error"].get<double>();
    error = format("%.2e", rel_error);
    if (rel_error > kFailRelativeError)
      verdict = "FAILED (> 1e-2)";
    else
      verdict = std::string(result["within_bound"].get<bool>() ? "ok" : "ABOVE fp16 bound") + " (typical " +
                format("%.1e", result["expected_rel_error"].get<double>()) + ", bound " +
                format("%.1e", result["rel_error_bound"].get<double>()) + ")";
  }
  return {error, verdict};
}

void print_result(const json& result) {
  std::string floor = result["floor_fraction"].is_number()
                          ? format("%.1f%%", 100.0 * result["floor_fraction"].get<double>())
                          : "n/a";
  const auto [error, verdict] = error_and_verdict(result);
  std::printf("%-18s %10.4f %10.4f %10.4f %9.4g %9.4g %9.1f %8s %10s  %s\n",
              result["kernel"].get<std::string>().c_str(), result["median_ms"].get<double>(),
              result["min_ms"].get<double>(), result["max_ms"].get<double>(),
              result["tflops_thesis"].get<double>(), result["tflops_useful"].get<double>(),
              result["bandwidth_gbs"].get<double>(), floor.c_str(), error.c_str(), verdict.c_str());
  std::fflush(stdout);
}

// ------------------------------------------------------------------------------------------------------------
// GPU path
// ------------------------------------------------------------------------------------------------------------

using bcsr24::bench::CudaStream;
using bcsr24::bench::DeviceBuffer;
#define SPMM_RUN_CUDA(call) bcsr24::bench::check_cuda((call), #call, __FILE__, __LINE__)

struct MultiplyInputs {
  std::int32_t n = 0;
  std::vector<bcsr24::fp16_t> b;   ///< cols x n
  std::vector<bcsr24::fp16_t> c0;  ///< rows x n, only when beta != 0
};

/// Runs each kernel: one checked run from a known C (NaN-poisoned when beta == 0, so unwritten outputs show),
/// then `warmup` untimed and `reps` timed runs on a scratch C, each timed run between two CUDA events.
std::vector<json> run_gpu_kernels(const Options& options, const LoadedMatrix& loaded, const MultiplyInputs& inputs,
                                  const Reference* reference, const bcsr24::DeviceInfo& device) {
  const std::int32_t n = inputs.n;
  const std::int64_t rows = loaded.bcsr.rows, cols = loaded.bcsr.cols;
  const bool fp16_out = options.fp16_out;
  const std::size_t c_element = fp16_out ? 2 : 4;
  const std::size_t c_count = static_cast<std::size_t>(rows) * n;
  const bcsr24::SpmmCost cost =
      bcsr24::spmm_cost(loaded.bcsr.census(), rows, cols, n, int(c_element), options.beta != 0.0);

  std::vector<bcsr24::KernelKind> kernels;
  if (options.kernel == "all") kernels = bcsr24::all_kernels();
  else kernels.push_back(bcsr24::kernel_from_name(options.kernel));
  auto wanted = [&](bcsr24::KernelKind kind) { return std::find(kernels.begin(), kernels.end(), kind) != kernels.end(); };
  bcsr24::UploadOptions upload;
  upload.merged_dense = wanted(bcsr24::KernelKind::dense_bt) || wanted(bcsr24::KernelKind::dense_pipelined);
  upload.csr = wanted(bcsr24::KernelKind::csr_cuda_cores) ? bcsr24::CsrCopy::all : bcsr24::CsrCopy::candidates;

  const bcsr24::DeviceMatrix device_matrix(loaded.bcsr, upload);
  // fp16 matrices take B in fp16; bf16 and split ones take it in fp32 (the same values, widened exactly), converted
  // by the kernels while staging.
  const bool f32_b = loaded.bcsr.precision != bcsr24::Precision::fp16;
  std::vector<float> b_f32;
  if (f32_b) {
    b_f32.resize(inputs.b.size());
    for (std::size_t i = 0; i < b_f32.size(); ++i) b_f32[i] = bcsr24::fp16_to_float(inputs.b[i]);
  }
  DeviceBuffer b_device(f32_b ? b_f32.size() * sizeof(float) : inputs.b.size() * sizeof(bcsr24::fp16_t));
  SPMM_RUN_CUDA(cudaMemcpy(b_device.get(), f32_b ? static_cast<const void*>(b_f32.data()) : inputs.b.data(),
                           b_device.bytes(), cudaMemcpyHostToDevice));
  DeviceBuffer c_device(c_count * c_element);
  // Our stream does not synchronise with the legacy default stream, which the upload may have used.
  SPMM_RUN_CUDA(cudaDeviceSynchronize());

  // C0 in the output type: the same fp16-representable values the reference used.
  std::vector<unsigned char> c0_bytes;
  if (options.beta != 0.0) {
    c0_bytes.resize(c_count * c_element);
    if (fp16_out) {
      std::memcpy(c0_bytes.data(), inputs.c0.data(), c0_bytes.size());
    } else {
      auto* c0_float = reinterpret_cast<float*>(c0_bytes.data());
      for (std::size_t i = 0; i < c_count; ++i) c0_float[i] = bcsr24::fp16_to_float(inputs.c0[i]);
    }
  }
  std::optional<bcsr24::bench::L2Flush> l2_flush;
  if (options.flush_l2 && device.l2_bytes > 0) l2_flush.emplace(static_cast<std::size_t>(device.l2_bytes) * 2);

  const CudaStream stream;
  bcsr24::PlanOptions plan_options;
  plan_options.output = fp16_out ? bcsr24::OutputType::f16 : bcsr24::OutputType::f32;
  plan_options.input = f32_b ? bcsr24::InputType::f32 : bcsr24::InputType::f16;
  const float alpha = float(options.alpha), beta = float(options.beta);
  auto multiply = [&](const bcsr24::SpmmPlan& plan, cudaStream_t s) {
    if (f32_b)
      plan.run(static_cast<const float*>(b_device.get()), n, static_cast<float*>(c_device.get()), n, alpha, beta, s);
    else
      plan.run(static_cast<const bcsr24::fp16_t*>(b_device.get()), n, c_device.get(), n, alpha, beta, s);
  };
  std::vector<unsigned char> c_host(c_count * c_element);
  std::vector<json> results;

  for (bcsr24::KernelKind kind : kernels) {
    const bcsr24::SpmmPlan plan = bcsr24::detail::PlanAccess::make(device_matrix, n, kind, plan_options);
    auto reset_c = [&] {
      if (options.beta == 0.0)
        SPMM_RUN_CUDA(cudaMemsetAsync(c_device.get(), 0xFF, c_device.bytes(), stream.get()));  // NaN in f32 and f16
      else
        SPMM_RUN_CUDA(cudaMemcpyAsync(c_device.get(), c0_bytes.data(), c0_bytes.size(), cudaMemcpyHostToDevice,
                                      stream.get()));
    };

    std::optional<double> rel_error;
    if (reference) {
      reset_c();
      multiply(plan, stream.get());
      SPMM_RUN_CUDA(cudaMemcpyAsync(c_host.data(), c_device.get(), c_host.size(), cudaMemcpyDeviceToHost,
                                    stream.get()));
      SPMM_RUN_CUDA(cudaStreamSynchronize(stream.get()));
      if (fp16_out) {
        const auto* c = reinterpret_cast<const bcsr24::fp16_t*>(c_host.data());
        rel_error = relative_error(*reference, [&](std::size_t i) { return double(bcsr24::fp16_to_float(c[i])); });
      } else {
        const auto* c = reinterpret_cast<const float*>(c_host.data());
        rel_error = relative_error(*reference, [&](std::size_t i) { return double(c[i]); });
      }
    }

    // Timed runs use C as it stands: with beta != 0 it accumulates, which changes values, not the work done.
    reset_c();
    const std::vector<double> milliseconds = bcsr24::bench::time_gpu_runs(
        [&](cudaStream_t s) { multiply(plan, s); },
        options.warmup, options.reps, l2_flush ? &*l2_flush : nullptr, stream.get());
    results.push_back(result_json(bcsr24::kernel_name(kind), "gpu", summarize(milliseconds), cost, true, rel_error,
                                  reference ? &reference->expectation(fp16_out) : nullptr));
    results.back()["plan"] = plan_json(plan.report());
    if (!options.json_output) print_result(results.back());
  }
  if (!options.json_output)
    for (const json& result : results)
      if (result["kernel"] == "auto") {
        std::cout << "\n";
        print_plan("auto", result["plan"]);
      }
  return results;
}

// ------------------------------------------------------------------------------------------------------------
// CPU path: bcsr24::reference_spmm on the host format
// ------------------------------------------------------------------------------------------------------------

json run_cpu_reference(const Options& options, const LoadedMatrix& loaded, const MultiplyInputs& inputs,
                       const Reference* reference, bool show_progress) {
  const std::int32_t n = inputs.n;
  const std::size_t c_count = static_cast<std::size_t>(loaded.bcsr.rows) * n;
  const bcsr24::SpmmCost cost =
      bcsr24::spmm_cost(loaded.bcsr.census(), loaded.bcsr.rows, loaded.bcsr.cols, n, 4, options.beta != 0.0);
  std::vector<float> c(c_count);
  auto reset_c = [&] {
    if (options.beta == 0.0)
      std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());
    else
      for (std::size_t i = 0; i < c_count; ++i) c[i] = bcsr24::fp16_to_float(inputs.c0[i]);
  };

  std::vector<double> milliseconds;
  std::optional<double> rel_error;
  for (int rep = 0; rep < options.cpu_reps; ++rep) {
    reset_c();
    ProgressLine progress(show_progress, "CPU reference_spmm run " + std::to_string(rep + 1));
    Stopwatch watch;
    bcsr24::reference_spmm(loaded.bcsr, n, inputs.b.data(), n, c.data(), n, options.alpha, options.beta);
    milliseconds.push_back(watch.seconds() * 1e3);
    progress.done(watch.seconds());
    if (rep == 0 && reference) {
      rel_error = relative_error(*reference, [&](std::size_t i) { return double(c[i]); });
    }
  }
  // reference_spmm writes float C, so the fp32-output expectation applies.
  json result = result_json("cpu_reference", "cpu", summarize(milliseconds), cost, false, rel_error,
                            reference ? &reference->expectation(false) : nullptr);
  if (!options.json_output) print_result(result);
  return result;
}

// ------------------------------------------------------------------------------------------------------------

/// The matrix sections of the report (matrix, census, layout, suitability, scaling, preprocessing), printed too
/// unless --json.
void report_matrix(const Options& options, const LoadedMatrix& loaded, json& report) {
  const bcsr24::TileCensus census = loaded.bcsr.census();
  report["matrix"] = loaded.matrix_json;
  report["census"] = census_json(census);
  report["layout"] = loaded.layout_json;
  const bcsr24::TileSuitability suitability = bcsr24::tile_suitability(census, loaded.bcsr.rows);
  report["suitability"] = {{"tile_bytes", suitability.tile_bytes},
                           {"csr_f16_bytes", suitability.csr_f16_bytes},
                           {"byte_ratio", suitability.ratio},
                           {"suits_tiles", suitability.suits_tiles}};
  report["scaling"] = scaling_json(loaded.bcsr.scaling, loaded.source == "b24" ? "from .b24" : options.scaling);
  report["scaling"]["precision"] = bcsr24::precision_name(loaded.bcsr.precision);
  report["preprocessing"] = loaded.preprocessing_json;
  if (!options.json_output) {
    print_matrix(report["matrix"], report["census"], report["scaling"], report["preprocessing"]);
    print_layout(report["layout"]);
    std::cout << "suitability tile lists " << human_bytes(suitability.tile_bytes) << " vs CSR fp16 "
              << human_bytes(suitability.csr_f16_bytes) << " (" << format("%.1f", suitability.ratio) << "x)"
              << (suitability.suits_tiles
                      ? "\n"
                      : ": too few nonzeros per tile for the tensor-core path; cuSPARSE CSR is likely faster here\n");
  }
}

/// The fp64 reference, when it fits in the memory allowed (else a sample of rows, or none, and why), and the
/// report's "check" section (printed too unless --json). fp16_output: which expectation the text quotes.
std::optional<Reference> prepare_reference(const Options& options, const LoadedMatrix& loaded,
                                           const MultiplyInputs& inputs, bool fp16_output, bool show_progress,
                                           json& report) {
  std::optional<Reference> reference;
  json check = {{"enabled", options.check},
                {"reference", loaded.reference_is_original ? "original matrix" : "stored (decoded) matrix"},
                {"fail_above", kFailRelativeError}};
  if (options.check) {
    const double needed = reference_check_bytes(loaded.bcsr.rows, loaded.bcsr.cols, inputs.n,
                                                loaded.reference_csr.nnz());
    const double limit = options.check_limit_gib * 1024.0 * 1024.0 * 1024.0;
    std::vector<std::int32_t> sample;
    double sampled_needed = 0.0;
    if (needed > limit) {
      // Too big for the whole product: check a random sample of rows instead of nothing, and say so.
      sample = sample_rows(loaded.bcsr.rows, options.check_rows, options.seed);
      std::int64_t sample_nnz = 0;
      for (const std::int32_t row : sample) sample_nnz += loaded.reference_csr.row_ptr[row + 1] - loaded.reference_csr.row_ptr[row];
      sampled_needed = reference_check_bytes(std::int64_t(sample.size()), loaded.bcsr.cols, inputs.n, sample_nnz);
      check["full_reference_bytes"] = needed;
    }
    if (needed > limit && sampled_needed > limit) {
      check["skipped_reason"] = "the fp64 reference needs " + human_bytes(needed) + " (" + human_bytes(sampled_needed) +
                                " for " + std::to_string(sample.size()) + " sampled rows), over --check-limit-gib " +
                                format("%g", options.check_limit_gib);
    } else {
      if (!sample.empty()) {
        check["sampled_rows"] = static_cast<std::int64_t>(sample.size());
        check["sample_reason"] = "the full fp64 reference needs " + human_bytes(needed) + ", over --check-limit-gib " +
                                 format("%g", options.check_limit_gib);
      }
      reference = compute_reference(loaded, inputs.n, inputs.b, inputs.c0, options.alpha, options.beta,
                                    show_progress, std::move(sample));
      check["reference_s"] = reference->seconds;
      check["f32_output"] = {{"expected_rel_error", reference->f32_output.typical},
                             {"rel_error_bound", reference->f32_output.bound}};
      check["f16_output"] = {{"expected_rel_error", reference->f16_output.typical},
                             {"rel_error_bound", reference->f16_output.bound}};
    }
  }
  report["check"] = check;
  if (!options.json_output) {
    std::cout << "check       ";
    if (!options.check)
      std::cout << "off (--no-check)\n";
    else if (!reference)
      std::cout << "skipped: " << check["skipped_reason"].get<std::string>() << "\n";
    else
      std::cout << "fp64 Eigen product of the " << check["reference"].get<std::string>()
                << (check.contains("sampled_rows")
                        ? ", " + std::to_string(check["sampled_rows"].get<std::int64_t>()) + " rows sampled at random (" +
                              check["sample_reason"].get<std::string>() + ")"
                        : std::string())
                << " (" << format("%.2f s", reference->seconds) << ")\n            fp16-derived relative error: typical "
                << format("%.1e", reference->expectation(fp16_output).typical)
                << ", bound " << format("%.1e", reference->expectation(fp16_output).bound)
                << "; a kernel fails above " << format("%.0e", kFailRelativeError) << "\n";
  }
  return reference;
}

int run(const Options& options) {
  const bool show_progress = !options.json_output && isatty(STDERR_FILENO);
  json report = {{"program", kProgram}};

  LoadedMatrix loaded = load_matrix(options, show_progress);
  report_matrix(options, loaded, report);

  // Which path runs: the GPU kernels when a device of sm_80+ is there and wanted, else the CPU reference.
  bcsr24::DeviceInfo device;
  if (options.cpu_only) {
    device.reason = "--cpu-only given";
  } else {
    device = bcsr24::query_device();
    if (device.available && device.compute_capability < 80) {
      device.available = false;
      device.reason = device.name + " is sm_" + std::to_string(device.compute_capability) +
                      "; mma.sp and cp.async need sm_80 or newer";
    }
  }
  report["gpu"] = {{"available", device.available},
                   {"name", device.name},
                   {"compute_capability", device.compute_capability},
                   {"reason", device.available ? "" : device.reason}};

  MultiplyInputs inputs;
  inputs.n = options.n();
  inputs.b = random_fp16(std::int64_t(loaded.bcsr.cols) * inputs.n, options.seed);
  if (options.beta != 0.0)
    inputs.c0 = random_fp16(std::int64_t(loaded.bcsr.rows) * inputs.n, options.seed ^ 0xC0C0C0C0C0C0C0C0ull);
  report["multiply"] = {{"n", inputs.n},
                        {"nmult", inputs.n % kNmultColumns == 0 ? json(inputs.n / kNmultColumns) : json(nullptr)},
                        {"alpha", options.alpha},
                        {"beta", options.beta},
                        {"output", device.available && options.fp16_out ? "f16" : "f32"},
                        {"seed", options.seed},
                        {"reps", device.available ? options.reps : options.cpu_reps},
                        {"warmup", device.available ? options.warmup : 0},
                        {"flush_l2", device.available && options.flush_l2}};
  if (!options.json_output) {
    std::cout << "multiply    C = " << options.alpha << " * A * B + " << options.beta << " * C, n = " << inputs.n;
    if (inputs.n % kNmultColumns == 0) std::cout << " (nmult " << inputs.n / kNmultColumns << ")";
    std::cout << ", B random fp16 in [-1, 1) (seed " << options.seed << "), "
              << (device.available && options.fp16_out ? "fp16" : "fp32") << " output\n";
  }

  // The fp64 reference, when it fits in the memory allowed.
  const std::optional<Reference> reference =
      prepare_reference(options, loaded, inputs, options.fp16_out && device.available, show_progress, report);

  std::vector<json> results;
  if (device.available) {
    if (!options.json_output) {
      std::cout << "gpu         " << device.name << " (sm_" << device.compute_capability << ", "
                << device.multiprocessors << " SMs), " << options.warmup << " warm-up + " << options.reps
                << " timed runs per kernel" << (options.flush_l2 ? ", L2 flushed before each" : "") << "\n\n";
      print_results_header();
    }
    results = run_gpu_kernels(options, loaded, inputs, reference ? &*reference : nullptr, device);
  } else {
    if (!options.json_output) {
      std::cout << "GPU kernels skipped: " << device.reason << "\n"
                << "cpu         bcsr24::reference_spmm on the host format (double accumulation), "
                << options.cpu_reps << " timed run(s)\n\n";
      print_results_header();
    }
    results.push_back(run_cpu_reference(options, loaded, inputs, reference ? &*reference : nullptr, show_progress));
  }
  report["results"] = results;

  if (options.json_output) std::cout << report.dump(2) << std::endl;

  int status = 0;
  for (const json& result : results) {
    if (!result_failed(result)) continue;
    const std::string error = result["rel_error"].is_number() ? format("%.3e", result["rel_error"].get<double>())
                                                               : std::string("NaN/inf");
    std::cerr << kProgram << ": error: kernel " << result["kernel"].get<std::string>() << " relative error "
              << error << " exceeds " << format("%.0e", kFailRelativeError) << "\n";
    status = kExitRuntimeError;
  }
  return status;
}

/// Prints "spmm_run: error: <message>" as one line (newlines inside a message would split it) and returns `code`.
int report_error(const std::string& message, const char* suffix, int code) {
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::cerr << kProgram << ": error: " << line << suffix << "\n";
  return code;
}

// ------------------------------------------------------------------------------------------------------------
// Distributed mode (--gpus, --mpi): the matrix, B and the reference as above; the ranks in spmm_run_distributed.cpp
// ------------------------------------------------------------------------------------------------------------

/// Why this build cannot run the distributed mode the command line asks for (empty when it can).
std::string missing_distributed_support(const Options& options) {
  if (!options.distributed()) return {};
#ifndef BCSR24_HAS_NCCL
  return std::string("built without NCCL: ") + (options.mpi ? "--mpi" : "--gpus") +
         " needs the library's distributed operator (bcsr24_distributed); reconfigure with NCCL found "
         "(BCSR24_NCCL_ROOT=..., or BCSR24_WITH_NCCL=ON to require it)";
#else
  if (options.mpi && !bcsr24::spmm_run::mpi_available())
    return "built without MPI: --mpi needs MPI found when spmm_run was configured (e.g. Debian's libopenmpi-dev); "
           "--gpus P runs the same on one host without MPI";
  return {};
#endif
}

#ifdef BCSR24_HAS_NCCL
/// The check of a gathered rows x n fp32 C against the reference, with the same fields, verdict and failure
/// threshold as a single-GPU kernel's.
bcsr24::spmm_run::CheckOutcome check_outcome(const Reference& reference, const std::vector<float>& c) {
  json fields = {{"rel_error", nullptr}, {"expected_rel_error", nullptr}, {"rel_error_bound", nullptr},
                 {"within_bound", nullptr}};
  add_error_fields(fields, relative_error(reference, [&](std::size_t i) { return double(c[i]); }),
                   reference.expectation(false));
  auto [error, verdict] = error_and_verdict(fields);
  return {fields, error, verdict, result_failed(fields)};
}

/// --gpus P / --mpi. Every process reads or generates the same matrix and B; only rank 0's process converts the
/// whole matrix (for the report and the single-GPU baseline), prints, computes the reference and checks.
int run_distributed_mode(const Options& options) {
  namespace dist = bcsr24::spmm_run;
  const dist::Launch launch = options.mpi ? dist::Launch::mpi : dist::Launch::threads;
  dist::Session session(launch, options.gpus);  // MPI_Init in MPI mode
  try {
    session.select_devices();  // before reading: too few GPUs fails at once
    const bool root = session.is_root();
    const bool show_progress = root && !options.json_output && isatty(STDERR_FILENO);
    json report = {{"program", kProgram}};
    const LoadedMatrix loaded = load_matrix(options, show_progress, root);
    if (root) report_matrix(options, loaded, report);

    // The same global B (and C0) on every process: the same seed, as the single-GPU mode makes it.
    MultiplyInputs inputs;
    inputs.n = options.n();
    inputs.b = random_fp16(std::int64_t(loaded.reference_csr.cols) * inputs.n, options.seed);
    if (options.beta != 0.0)
      inputs.c0 = random_fp16(std::int64_t(loaded.reference_csr.rows) * inputs.n, options.seed ^ 0xC0C0C0C0C0C0C0C0ull);
    std::optional<Reference> reference;
    if (root) {
      report["multiply"] = {{"n", inputs.n},
                            {"nmult", inputs.n % kNmultColumns == 0 ? json(inputs.n / kNmultColumns) : json(nullptr)},
                            {"alpha", options.alpha},
                            {"beta", options.beta},
                            {"output", "f32"},
                            {"seed", options.seed},
                            {"reps", options.reps},
                            {"warmup", options.warmup},
                            {"flush_l2", options.flush_l2}};
      if (!options.json_output) {
        std::cout << "multiply    C = " << options.alpha << " * A * B + " << options.beta << " * C, n = " << inputs.n;
        if (inputs.n % kNmultColumns == 0) std::cout << " (nmult " << inputs.n / kNmultColumns << ")";
        std::cout << ", B random fp16 in [-1, 1) (seed " << options.seed << "), fp32 output\n";
      }
      reference = prepare_reference(options, loaded, inputs, false, show_progress, report);
    }

    dist::DistributedJob job;
    job.a = &loaded.reference_csr;
    job.converted = root ? &loaded.bcsr : nullptr;
    // The single-GPU mapping of the options (load_matrix), for every rank's parts and the baseline.
    job.options.scaling = options.scaling == "none"   ? bcsr24::ScalingPolicy::none
                                  : options.scaling == "auto" ? bcsr24::ScalingPolicy::automatic
                                                              : bcsr24::ScalingPolicy::per_row;
    job.options.precision = bcsr24::precision_from_name(options.precision);
    job.options.layout = bcsr24::layout_from_name(options.layout);
    job.options.reorder = bcsr24::reordering_from_name(options.reorder);
    job.n = inputs.n;
    job.b = &inputs.b;
    job.c0 = &inputs.c0;
    job.alpha = float(options.alpha);
    job.beta = float(options.beta);
    job.warmup = options.warmup;
    job.reps = options.reps;
    job.flush_l2 = options.flush_l2;
    job.baseline = options.baseline;
    job.text_output = !options.json_output;
    job.show_progress = show_progress;
    job.nnz = static_cast<std::uint64_t>(root ? loaded.bcsr.nnz : loaded.reference_csr.nnz());
    dist::CheckFunction check;
    if (reference) check = [&](const std::vector<float>& c) { return check_outcome(*reference, c); };

    const json distributed = dist::run_distributed(session, job, check);
    int status = 0;
    if (root) {
      report["distributed"] = distributed;
      if (options.json_output) std::cout << report.dump(2) << std::endl;
      const std::pair<const char*, json> checked[] = {
          {"distributed", distributed.at("check")},
          {"single_gpu", distributed.at("baseline").is_object()
                             ? distributed.at("baseline").value("check", json(nullptr))
                             : json(nullptr)}};
      for (const auto& [name, result] : checked) {
        if (!result.is_object() || !result_failed(result)) continue;
        const std::string error = result["rel_error"].is_number() ? format("%.3e", result["rel_error"].get<double>())
                                                                   : std::string("NaN/inf");
        std::cerr << kProgram << ": error: kernel " << name << " relative error " << error << " exceeds "
                  << format("%.0e", kFailRelativeError) << "\n";
        status = kExitRuntimeError;
      }
    }
    return session.agree_on_status(status);
  } catch (const std::exception& error) {
    const int code = report_error(session.error_prefix() + std::string(error.what()), "", kExitRuntimeError);
    session.abort_all_if_mpi(code);  // the other processes may be waiting for this one in a collective
    return code;
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"", kProgram};
  Options options;
  try {
    add_options(app, options);
    app.parse(argc, argv);
    options.gpus_given = app.count("--gpus") > 0;
    if (const std::string missing = missing_distributed_support(options); !missing.empty())
      return report_error(missing, "", kExitUsage);
    validate(options);
  } catch (const CLI::Success& success) {  // --help: CLI11 prints the help text on stdout
    return app.exit(success);
  } catch (const CLI::Error& error) {
    return report_error(error.what(), " (see --help)", kExitUsage);
  } catch (const UsageError& error) {
    return report_error(error.what(), " (see --help)", kExitUsage);
  } catch (const std::exception& error) {  // e.g. all_kernels() failing while the option list is built
    return report_error(error.what(), "", kExitRuntimeError);
  }

  try {
#ifdef BCSR24_HAS_NCCL
    if (options.distributed()) return run_distributed_mode(options);
#endif
    return run(options);
  } catch (const bcsr24::Error& error) {
    return report_error(error.what(), "", kExitRuntimeError);
  } catch (const std::exception& error) {
    return report_error(error.what(), "", kExitRuntimeError);
  }
}
