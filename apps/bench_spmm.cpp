// GPU benchmark: every bcsr24 kernel and the cuSPARSE/cuBLAS baselines on one matrix, timed in one run.
//
// Method (gpu_timing.hpp): CUDA events around each multiply only; warm-up runs first; L2 flushed (a read of
// twice its size, leaving no dirty lines behind) before every timed run so that matrices smaller than L2 are not
// measured from cache; the methods of one width timed in two passes, in order and in reverse, half of --reps each;
// median, min and max over the --reps runs. Each method's output is checked against a float64 product (cuSPARSE
// CSR fp64 on the same device) and its relative Frobenius error is printed next to its time: against the product with
// the B it was given (fp16 B: the fp16 values; bf16 B: the bf16 values; fp32 B: the full fp32 values).
//
// Precision variants, timed in the same run as the default: auto_f32b (fp16 A, fp32 B), auto_bf16 (bf16 A and B),
// auto_bf16_f32b, auto_split (split A, fp32 B), auto_matrix_scale (fp16 with one scale for the whole matrix
// instead of one per row) and auto_c16 (fp16 C, rounded once from fp32 sums: what a peer writing fp16 C moves).
// --precision and --b-type set the precision of the plain methods.
//
// auto is measured by default (--tuning measure, Tuning::measure: the cost model's best candidates timed on the
// matrix, the fastest kept, within --tuning-budget) and its tuning printed: the budget and where it came from, each
// candidate's predicted and measured time; --tuning model, or the method auto_model, is the cost model's plan
// alone, and auto_tiles, auto_hybrid, auto_csr, auto_vectors and auto_hybrid_vectors force the bands' paths, so the
// candidates can be timed one by one.
//
// The physical limit beside every bcsr24 time: the DRAM bytes its plan moves per product (the bytes of A the plan
// reads, B once, C once), the rate that is at the median time, and its share of the device's copy bandwidth,
// measured once per process (cudaMemcpy between two buffers of 256 MiB, gpu_timing.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>

#include "bcsr24/device.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/matrix_market.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24_experimental/plan_knobs.hpp"
#include "bcsr24_testkit/metrics.hpp"
#include "bcsr24_testkit/splitmix64.hpp"
#include "cli.hpp"
#include "cuda_resources.hpp"
#include "cusparse_baselines.hpp"
#include "gpu_timing.hpp"
#include "matrix_source.hpp"
#include "bench_spmm_rows.hpp"

namespace {

using namespace bcsr24;

using experimental::BandGroups;
using experimental::BandPaths;
using experimental::PlanKnobs;
using experimental::TilePipeline;
#define BENCH_CUDA(call) bench::check_cuda((call), #call, __FILE__, __LINE__)

using bench::DeviceBuffer;
using bench::summarize;

using apps::parse_int_list;
using bench_spmm::open_csv;
using bench_spmm::plan_summary;
using bench_spmm::print_matrix_summary;
using bench_spmm::print_plan_row;
using bench_spmm::print_tuning_row;

/// What a bcsr24 method multiplies: the matrix's precision and scaling, B's element type and C's.
struct Variant {
  Precision precision = Precision::fp16;
  ScalingPolicy scaling = ScalingPolicy::per_row;
  ElementType input = ElementType::automatic;
  ElementType output = ElementType::f32;
};

/// The variant a method name selects (the suffix), or `plain` for the plain kernel names.
bool variant_of(const std::string& method, const Variant& plain, Variant& out, std::string& base) {
  struct Suffix { const char* text; Variant v; };
  const Suffix suffixes[] = {
      {"_bf16_f32b", {Precision::bf16, ScalingPolicy::per_row, ElementType::f32}},  // before "_f32b": longest first
      {"_f32b", {Precision::fp16, ScalingPolicy::per_row, ElementType::f32}},
      {"_bf16", {Precision::bf16, ScalingPolicy::per_row, ElementType::bf16}},
      {"_split", {Precision::split, ScalingPolicy::per_row, ElementType::f32}},
      {"_matrix_scale", {Precision::fp16, ScalingPolicy::automatic, ElementType::f16}},
      // fp16 C (fp32 accumulation, rounded once at the store): half the output bytes, what a peer writing fp16 C
      // moves; compared with it like for like.
      {"_c16", {Precision::fp16, ScalingPolicy::per_row, ElementType::f16, ElementType::f16}},
  };
  for (const Suffix& x : suffixes) {
    const std::string suffix = x.text;
    if (method.size() > suffix.size() && method.compare(method.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out = x.v;
      base = method.substr(0, method.size() - suffix.size());
      return true;
    }
  }
  out = plain;
  base = method;
  return false;
}

/// The method without its plan-option suffix (the last one: "auto_f32b_deep"), and the options it selects:
/// "_whole" runs every band as one block (PlanKnobs::split_long_bands off), "_standard" and "_deep" force the
/// tile pipeline depth (PlanKnobs::tile_pipeline), "_grouped" and "_ungrouped" switch band groups on or off
/// (PlanKnobs::band_groups), "_tiles", "_hybrid", "_csr", "_vectors" (every band as narrow vectors) and
/// "_hybrid_vectors" (the low-reuse bands as narrow vectors) force the bands' paths (PlanKnobs::paths), and
/// "_model" makes the plan by the cost model alone (Tuning::model; otherwise `tuning` stays as given: --tuning).
/// Before any of those, numeric suffixes set a knob: "_runsR" PlanKnobs::csr_short_run_rows to R (0: off), e.g.
/// auto_csr_runs4; "_piecesS" PlanKnobs::vector_piece_steps to S (0: automatic), e.g. auto_vectors_pieces8.
std::string strip_plan_suffix(const std::string& method, PlanKnobs& options, Tuning& tuning) {
  const std::pair<const char*, std::int32_t PlanKnobs::*> numeric[] = {
      {"_runs", &PlanKnobs::csr_short_run_rows}, {"_pieces", &PlanKnobs::vector_piece_steps}};
  for (const auto& [text, knob] : numeric) {
    const std::size_t at = method.rfind(text), digits = at + std::strlen(text);
    if (at != std::string::npos && digits < method.size() && method.size() - digits <= 9 &&
        method.find_first_not_of("0123456789", digits) == std::string::npos) {
      options.*knob = std::stoi(method.substr(digits));
      return strip_plan_suffix(method.substr(0, at), options, tuning);
    }
  }
  struct Suffix {
    const char* text;
    bool split_long_bands;
    TilePipeline pipeline;
    BandGroups groups;
    BandPaths paths;
    Tuning tuning;
  };
  constexpr TilePipeline kAutoPipe = TilePipeline::automatic;
  constexpr BandGroups kAutoGroups = BandGroups::automatic;
  constexpr BandPaths kAutoPaths = BandPaths::automatic;
  const Suffix suffixes[] = {{"_whole", false, kAutoPipe, kAutoGroups, kAutoPaths, Tuning::measure},
                             {"_standard", true, TilePipeline::standard, kAutoGroups, kAutoPaths, Tuning::measure},
                             {"_deep", true, TilePipeline::deep, kAutoGroups, kAutoPaths, Tuning::measure},
                             {"_ungrouped", true, kAutoPipe, BandGroups::off, kAutoPaths, Tuning::measure},
                             {"_grouped", true, kAutoPipe, BandGroups::on, kAutoPaths, Tuning::measure},
                             {"_tiles", true, kAutoPipe, kAutoGroups, BandPaths::tiles, Tuning::measure},
                             {"_hybrid", true, kAutoPipe, kAutoGroups, BandPaths::hybrid, Tuning::measure},
                             {"_csr", true, kAutoPipe, kAutoGroups, BandPaths::csr, Tuning::measure},
                             // before "_vectors": the longer suffix first
                             {"_hybrid_vectors", true, kAutoPipe, kAutoGroups, BandPaths::hybrid_vectors,
                              Tuning::measure},
                             {"_vectors", true, kAutoPipe, kAutoGroups, BandPaths::vectors, Tuning::measure},
                             {"_model", true, kAutoPipe, kAutoGroups, kAutoPaths, Tuning::model}};
  for (const Suffix& x : suffixes) {
    const std::string suffix = x.text;
    if (method.size() > suffix.size() && method.compare(method.size() - suffix.size(), suffix.size(), suffix) == 0) {
      options.split_long_bands = x.split_long_bands;
      options.tile_pipeline = x.pipeline;
      options.band_groups = x.groups;
      options.paths = x.paths;
      if (x.tuning == Tuning::model) tuning = Tuning::model;
      return method.substr(0, method.size() - suffix.size());
    }
  }
  return method;
}

/// Operators of one matrix: the plain one (--precision, --layout, --reorder), the precision variants' (made when a
/// method first needs them) and the thesis layout's (aligned tiles, file order) for split_aligned.
class Operators {
 public:
  Operators(const CsrMatrix& csr, const OperatorOptions& plain) : csr_(csr), plain_options_(plain) {
    plain_.emplace(SparseOperator::from_csr(csr, plain));
  }
  const SparseOperator& plain() const { return *plain_; }
  /// A variant's operator: the plain one when precision and scaling agree.
  const SparseOperator& variant(const Variant& v) {
    if (v.precision == plain_options_.precision && v.scaling == plain_options_.scaling) return *plain_;
    for (auto& [key, op] : variants_)
      if (key.precision == v.precision && key.scaling == v.scaling) return op;
    OperatorOptions options = plain_options_;
    options.precision = v.precision;
    options.scaling = v.scaling;
    SparseOperator op = SparseOperator::from_csr(csr_, options);
    const Fp16Scaling& sc = op.scaling();
    std::printf("variant %s%s: %lld values flushed (largest %.2e of its row's largest), stored A relative error "
                "max %.2e, Frobenius %.2e\n",
                precision_name(v.precision), v.scaling == ScalingPolicy::automatic ? " (one scale for the matrix)" : "",
                static_cast<long long>(sc.flushed_count), sc.max_flushed_relative, sc.max_relative_error,
                sc.frobenius_relative_error);
    variants_.emplace_back(v, std::move(op));
    return variants_.back().second;
  }
  /// The thesis layout in fp16 (the first call converts).
  const SparseOperator& thesis() {
    if (!thesis_) {
      OperatorOptions options;
      options.layout = TileLayout::aligned;
      options.reorder = Reordering::none;
      thesis_.emplace(SparseOperator::from_csr(csr_, options));
    }
    return *thesis_;
  }

 private:
  const CsrMatrix& csr_;
  OperatorOptions plain_options_;
  std::optional<SparseOperator> plain_, thesis_;
  std::deque<std::pair<Variant, SparseOperator>> variants_;  // a deque: appending moves no operator
};

/// The command line.
struct Settings {
  apps::MatrixSource source;
  apps::StorageOptions storage;
  std::string name, n_list = "8,32,128", methods_text = "all", csv_path, b_type_text = "auto";
  std::string write_matrix_path;  // --write-matrix: the matrix as read or generated, for another harness to time
  int reps = 20, warmup = 5;
  apps::TuningOptions tuning;  // --tuning, --tuning-budget: how auto and its variants choose (not _model)
  bool no_check = false, no_flush = false;
};

void add_options(CLI::App& app, Settings& s) {
  s.source.add_options(app, apps::MatrixSource::FileOption::named, "seed for the synthetic matrix and B");
  app.add_option("--name", s.name, "label in the output (default: file stem or generator name)");
  app.add_option("--n", s.n_list, "comma-separated widths of B")->capture_default_str();
  app.add_option("--methods", s.methods_text,
                 "comma list of auto,split_pipelined,csr_cuda_cores,split_aligned,"
                 "cusparse_csr_f16,cusparse_csr_f32,cusparse_bsr16_f16,cusparse_bsr16_f32,cublas_dense,"
                 "cusparse_spmv_f16,cusparse_spmv_f32, or all (all but the SpMV ones); "
                 "a bcsr24 kernel with the suffix _whole runs every band as one block (PlanKnobs::split_long_bands "
                 "off), e.g. auto_whole; _standard and _deep force the tile pipeline depth of the fp32-B modes "
                 "(PlanKnobs::tile_pipeline), e.g. auto_f32b_deep; _grouped and _ungrouped switch band groups on or "
                 "off (PlanKnobs::band_groups), e.g. auto_grouped; _tiles, _hybrid, _csr, _vectors and _hybrid_vectors "
                 "force the bands' paths of auto (PlanKnobs::paths; _vectors: every band as narrow vectors on "
                 "tensor cores, _hybrid_vectors: the low-reuse bands), e.g. auto_vectors; _runsR after the others "
                 "sets the CSR short rows' runs (PlanKnobs::csr_short_run_rows, 0 off), e.g. auto_csr_runs4, and _piecesS "
                 "the narrow vectors' most K-steps a work piece (PlanKnobs::vector_piece_steps), e.g. "
                 "auto_vectors_pieces8; _model "
                 "makes auto's plan by the cost model alone (plain auto measures its candidates, Tuning::measure); "
                 "_f32b, _bf16, _bf16_f32b, _split and _matrix_scale select a precision variant, _c16 writes fp16 C "
                 "(fp32 accumulation); cusparse_spmv_f16 and "
                 "cusparse_spmv_f32 (cusparseSpMV) run at n = 1 only")
      ->capture_default_str();
  s.storage.add_to(app, false);
  app.add_option("--b-type", s.b_type_text,
                 "element type of B for the plain bcsr24 methods: auto (the matrix's 16-bit type; fp32 for split), "
                 "fp16, bf16 or fp32")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "fp16", "bf16", "fp32"}));
  app.add_option("--reps", s.reps, "timed runs per method (median reported)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", s.warmup, "untimed runs first")->capture_default_str();
  s.tuning.add_to(app);
  app.add_option("--csv", s.csv_path, "append one row per (n, method) to this CSV file");
  app.add_option("--write-matrix", s.write_matrix_path,
                 "also write the matrix as read or generated (e.g. --synth) to this Matrix Market file, so that "
                 "another program (a peer's harness) can time the same matrix");
  app.add_flag("--no-check", s.no_check, "skip the float64 reference check");
  app.add_flag("--no-flush", s.no_flush, "do not flush L2 between timed runs");
}

/// A host array copied to a new device buffer (at least 16 bytes).
template <typename Host>
DeviceBuffer upload(const Host& host) {
  DeviceBuffer device(std::max<std::size_t>(host.size() * sizeof(host[0]), 16));
  BENCH_CUDA(cudaMemcpy(device.get(), host.data(), host.size() * sizeof(host[0]), cudaMemcpyHostToDevice));
  return device;
}

/// The float64 product with the exact values of a B (computed the first time a method is given that B).
struct Reference {
  std::vector<double> c;
  double norm = 0;
  bool ready = false;
};

/// B of one width in every type the methods take: fp16, fp32 and fp64 with the same fp16 values, the unrounded fp32
/// values (b_full) and their bf16 rounding; rows past cols zero.
struct HostB {
  std::vector<fp16_t> b16, bf16;
  std::vector<float> b32, full;
  std::vector<double> b64;
};

HostB random_b(const CsrMatrix& csr, std::int32_t n, std::uint64_t seed) {
  const std::int64_t k_pad = (std::int64_t(csr.cols) + 15) / 16 * 16;
  SplitMix64 random{seed * 1000003 + std::uint64_t(n)};
  HostB h;
  h.b16.assign(std::size_t(k_pad) * n, 0);
  h.bf16.assign(h.b16.size(), 0);
  h.b32.assign(h.b16.size(), 0.0f);
  h.full.assign(h.b16.size(), 0.0f);
  h.b64.assign(h.b16.size(), 0.0);
  for (std::int64_t i = 0; i < std::int64_t(csr.cols) * n; ++i) {
    const double v = random.symmetric_unit();
    h.b16[i] = double_to_fp16(v);
    h.b32[i] = fp16_to_float(h.b16[i]);
    h.b64[i] = h.b32[i];
    h.full[i] = float(v);
    h.bf16[i] = double_to_bf16(h.full[i]);
  }
  return h;
}

/// The operands of one width n: B in every type on the device, C with rows rounded up to 16, and the float64
/// references of the B values each method is given (each computed the first time a method needs it).
class WidthOperands {
  const CsrMatrix& csr_;
  std::int32_t n_;
  bench::Baselines& baselines_;
  HostB host_;

 public:
  WidthOperands(const CsrMatrix& csr, std::int32_t n, std::uint64_t seed, bench::Baselines& baselines)
      : csr_(csr),
        n_(n),
        baselines_(baselines),
        host_(random_b(csr, n, seed)),
        d_b16(upload(host_.b16)),
        d_b32(upload(host_.b32)),
        d_b64(upload(host_.b64)),
        d_b_full(upload(host_.full)),
        d_b_bf16(upload(host_.bf16)),
        c_bytes(std::size_t((std::int64_t(csr.rows) + 15) / 16 * 16) * n * 4),
        d_c(c_bytes) {}

  const Reference& fp16_reference() { return reference_for(fp16_, [&](std::size_t i) { return host_.b64[i]; }); }
  const Reference& full_reference() {
    return reference_for(full_, [&](std::size_t i) { return double(host_.full[i]); });
  }
  const Reference& bf16_reference() {
    return reference_for(bf16_, [&](std::size_t i) { return double(bf16_to_float(host_.bf16[i])); });
  }

  const DeviceBuffer d_b16, d_b32, d_b64, d_b_full, d_b_bf16;
  const std::size_t c_bytes;
  DeviceBuffer d_c;

 private:
  template <class ValueOf>
  const Reference& reference_for(Reference& r, ValueOf value_of) {
    if (r.ready) return r;
    std::vector<double> exact(host_.b64.size(), 0.0);
    for (std::int64_t i = 0; i < std::int64_t(csr_.cols) * n_; ++i) exact[std::size_t(i)] = value_of(std::size_t(i));
    const DeviceBuffer d_exact = upload(exact);
    r.c = baselines_.reference(n_, static_cast<const double*>(d_exact.get()));
    for (double v : r.c) r.norm += v * v;
    r.norm = std::sqrt(r.norm);
    r.ready = true;
    return r;
  }

  Reference fp16_, full_, bf16_;
};

/// One method ready to time at one width: its runs, its plan (bcsr24 methods), the reference its B checks against
/// (null: the fp16-B one) and the census of the layout it multiplies.
struct MethodRun {
  std::function<void(cudaStream_t)> run;
  std::unique_ptr<SpmmPlan> plan;
  const Reference* reference = nullptr;
  bool c16 = false;  ///< C is fp16 bits (a _c16 method), not float
  bool thesis_layout = false;
};

/// A bcsr24 method (auto, split_pipelined, csr_cuda_cores and their variants) at width n. False, with the row
/// printed, for a forced choice the matrix cannot run (e.g. _csr, _grouped).
bool prepare_library_method(const std::string& method, std::int32_t n, const Settings& s, Operators& operators,
                            const Variant& plain, WidthOperands& w, MethodRun& m) {
  std::string base;
  PlanKnobs knobs;
  PlanOptions defaults;
  s.tuning.apply(defaults);
  Tuning tuning = defaults.tuning;
  Variant variant;
  variant_of(strip_plan_suffix(method, knobs, tuning), plain, variant, base);
  PlanOptions plan_options;
  plan_options.input = variant.input;
  plan_options.output = variant.output;
  s.tuning.apply(plan_options);
  plan_options.tuning = tuning;  // --tuning, or model for a _model method
  const SparseOperator& variant_op = operators.variant(variant);
  try {
    m.plan = std::make_unique<SpmmPlan>(
        experimental::make_plan(variant_op, n, kernel_from_name(base), plan_options, knobs));
  } catch (const InvalidArgument& e) {
    std::printf("| %d | %s | n/a: %s | | | | | | | | | | |\n", n, method.c_str(), e.what());
    return false;
  }
  if (base == "auto") {
    print_plan_row(n, method, m.plan->report());
    print_tuning_row(n, method, m.plan->report());
  }
  SpmmPlan* plan = m.plan.get();
  const ElementType input = plan->input();
  m.c16 = plan->output() == ElementType::f16;
  void* c = w.d_c.get();
  if (input == ElementType::f32) {
    if (!s.no_check) m.reference = &w.full_reference();
    const float* b = static_cast<const float*>(w.d_b_full.get());
    m.run = [plan, b, c, n](cudaStream_t st) {
      plan->run(b, n, static_cast<float*>(c), n, 1.0f, 0.0f, reinterpret_cast<Stream>(st));
    };
  } else {
    if (input == ElementType::bf16 && !s.no_check) m.reference = &w.bf16_reference();
    const auto* b = static_cast<const fp16_t*>(input == ElementType::bf16 ? w.d_b_bf16.get() : w.d_b16.get());
    m.run = [plan, b, c, n](cudaStream_t st) { plan->run(b, n, c, n, 1.0f, 0.0f, reinterpret_cast<Stream>(st)); };
  }
  return true;
}

/// Any method at width n: split_aligned (the default kernel on the thesis layout), a bcsr24 method, or a cuSPARSE /
/// cuBLAS baseline. False, with the row printed, where the method does not apply.
bool prepare_method(const std::string& method, std::int32_t n, const Settings& s, Operators& operators,
                    const Variant& plain, bench::Baselines& baselines, WidthOperands& w, MethodRun& m) {
  m.thesis_layout = method == "split_aligned";
  if (m.thesis_layout) {
    m.plan = std::make_unique<SpmmPlan>(operators.thesis().make_plan(n, KernelKind::split_pipelined));
    SpmmPlan* plan = m.plan.get();
    const auto* b = static_cast<const fp16_t*>(w.d_b16.get());
    void* c = w.d_c.get();
    m.run = [plan, b, c, n](cudaStream_t st) { plan->run(b, n, c, n, 1.0f, 0.0f, reinterpret_cast<Stream>(st)); };
    return true;
  }
  std::string base;
  PlanKnobs knobs;
  Tuning tuning = Tuning::measure;
  Variant variant;
  variant_of(strip_plan_suffix(method, knobs, tuning), plain, variant, base);
  if (base == "split_pipelined" || base == "csr_cuda_cores" || base == "auto")
    return prepare_library_method(method, n, s, operators, plain, w, m);
  bench::Baseline which{};
  bool known = false;
  for (bench::Baseline b : bench::all_baselines())
    if (method == bench::baseline_name(b)) {
      which = b;
      known = true;
    }
  if (!known) throw apps::UsageError("unknown method " + method);
  std::string why;
  if (!baselines.prepare(which, n, w.d_b16.get(), static_cast<const float*>(w.d_b32.get()),
                         static_cast<float*>(w.d_c.get()), why)) {
    std::printf("| %d | %s | n/a: %s | | | | | | | | | | |\n", n, method.c_str(), why.c_str());
    return false;
  }
  m.run = [&baselines, which](cudaStream_t st) { baselines.run(which, st); };
  return true;
}

/// Correctness first: poisons C (all-ones bytes are NaN), runs once and returns the relative Frobenius error
/// against the float64 product.
double check_method(MethodRun& m, const CsrMatrix& csr, std::int32_t n, WidthOperands& w, cudaStream_t stream) {
  const Reference& reference = m.reference ? *m.reference : w.fp16_reference();
  BENCH_CUDA(cudaMemset(w.d_c.get(), 0xff, w.c_bytes));
  m.run(stream);
  BENCH_CUDA(cudaStreamSynchronize(stream));
  std::vector<float> c(std::size_t(csr.rows) * n);
  if (m.c16) {
    std::vector<fp16_t> bits(c.size());
    BENCH_CUDA(cudaMemcpy(bits.data(), w.d_c.get(), bits.size() * 2, cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = fp16_to_float(bits[i]);
  } else {
    BENCH_CUDA(cudaMemcpy(c.data(), w.d_c.get(), c.size() * 4, cudaMemcpyDeviceToHost));
  }
  double err = 0;
  for (std::size_t i = 0; i < c.size(); ++i) err += (double(c[i]) - reference.c[i]) * (double(c[i]) - reference.c[i]);
  return reference.norm > 0 ? std::sqrt(err) / reference.norm : std::sqrt(err);
}

/// What run() shares with every method's row: the matrix, its census and the device, the copy rate, the CSV.
struct RowContext {
  const Settings& s;
  const CsrMatrix& csr;
  const TileCensus& census;
  const DeviceInfo& device;
  const bench::CopyBandwidth& copy;
  std::ofstream& csv;
};

/// Prints a timed method's row (and appends it to the CSV).
void print_method_row(const RowContext& x, const std::string& method, std::int32_t n, const MethodRun& m,
                      const SpmmCost& cost, const TileCensus& method_census, double rel,
                      const std::vector<double>& milliseconds) {
  const bench::Timings t = summarize(milliseconds);
  const double sec = t.median_ms * 1e-3;
  const double thesis = cost.thesis_flops / sec * 1e-12, useful = cost.useful_flops / sec * 1e-12;
  const double gbs = cost.min_bytes / sec * 1e-9;
  const double floor_frac = (cost.min_bytes / kReferenceBandwidth) / sec;
  // The bytes the plan moves (bcsr24 methods only: a baseline has no plan report) against the copy rate.
  const SpmmPlan* plan = m.plan.get();
  const double plan_bytes = plan ? plan_dram_bytes(plan->report(), x.csr.rows, x.csr.cols, m.c16 ? 2 : 4) : -1.0;
  const double plan_gbs = plan ? plan_bytes / sec * 1e-9 : -1.0;
  const double copy_fraction = plan && x.copy.bytes_per_s > 0 ? plan_bytes / sec / x.copy.bytes_per_s : -1.0;
  const auto cell = [](double value, const char* pattern) {
    return value >= 0 ? bench::format(pattern, value) : std::string();
  };
  std::printf("| %d | %s | %.4f | %.4f | %.4f | %.2f | %.3f | %.0f | %.2f | %s | %s | %s | %.2e |\n", n,
              method.c_str(), t.median_ms, t.min_ms, t.max_ms, thesis, useful, gbs, floor_frac,
              cell(plan_bytes / double(1 << 20), "%.2f").c_str(), cell(plan_gbs, "%.0f").c_str(),
              cell(copy_fraction * 100.0, "%.1f%%").c_str(), rel);
  std::fflush(stdout);
  if (!x.csv.is_open()) return;
  const TileCensus& census = x.census;
  x.csv << x.s.name << ',' << x.csr.rows << ',' << x.csr.cols << ',' << x.csr.nnz() << ',' << n << ',' << method << ','
        << t.median_ms << ',' << t.min_ms << ',' << t.max_ms << ',' << thesis << ',' << useful << ',' << gbs << ','
        << floor_frac << ',' << rel << ',' << method_census.dense_tiles << ',' << method_census.sparse24_tiles << ','
        << method_census.zero_tiles << ',' << method_census.sparse24_share() << ',' << '"' << x.device.name << '"'
        << ','
        << (m.thesis_layout ? "aligned/none"
                            : std::string(layout_name(census.layout)) + "/" + reordering_name(census.reordering))
        << ',' << (plan ? std::to_string(plan->report().predicted_us) : std::string()) << ','
        << (plan && plan->report().tuning == Tuning::measure ? std::to_string(plan->report().tuning_ms)
                                                             : std::string())
        << ',' << '"' << (plan ? plan_summary(plan->report()) : std::string()) << '"' << ','
        << cell(plan_bytes, "%.0f") << ',' << cell(plan_gbs, "%.6g") << ',' << cell(copy_fraction, "%.6g") << ','
        << cell(x.copy.bytes_per_s > 0 ? x.copy.bytes_per_s * 1e-9 : -1.0, "%.6g") << ','
        << (plan && plan->report().tuning_budget_ms > 0 ? std::to_string(plan->report().tuning_budget_ms)
                                                        : std::string())
        << '\n';
}

int run(Settings& s) {
  s.source.validate();
  s.tuning.validate();
  const DeviceInfo dev_info = query_device();
  if (!dev_info.available) throw NotSupported("no usable GPU: " + dev_info.reason);
  if (s.name.empty()) s.name = s.source.name();

  const bench::Stopwatch prep_watch;
  const CsrMatrix csr = s.source.load();
  if (!s.write_matrix_path.empty()) write_matrix_market(s.write_matrix_path, csr);
  Variant plain;
  plain.precision = precision_from_name(s.storage.precision);
  plain.input = element_type_from_name(s.b_type_text);
  OperatorOptions plain_options = s.storage.to_operator_options();
  Operators operators(csr, plain_options);
  const SparseOperator& op = operators.plain();
  const TileCensus& census = op.census();
  const double prep_s = prep_watch.seconds();
  const bool chosen_is_thesis_layout = census.layout == TileLayout::aligned && census.reordering == Reordering::none;

  // split_aligned: the default kernel on the thesis layout (aligned tiles, file order), timed in the same run as
  // the chosen layout so the two compare directly; listed only when the chosen layout differs.
  std::vector<std::string> methods =
      s.methods_text == "all"
          ? std::vector<std::string>{"auto", "split_pipelined", "csr_cuda_cores", "split_aligned", "cusparse_csr_f16",
                                     "cusparse_csr_f32", "cusparse_bsr16_f16", "cusparse_bsr16_f32", "cublas_dense"}
          : apps::split_list(s.methods_text);
  if (chosen_is_thesis_layout)
    methods.erase(std::remove(methods.begin(), methods.end(), "split_aligned"), methods.end());

  std::printf("device: %s (sm_%d, %d SMs, L2 %lld MiB)\n", dev_info.name.c_str(), dev_info.compute_capability,
              dev_info.multiprocessors, static_cast<long long>(dev_info.l2_bytes >> 20));
  // The physical limit every bcsr24 time is compared with ("of copy"): measured once, before anything is uploaded.
  const bench::CopyBandwidth& copy = bench::copy_bandwidth();
  print_matrix_summary(copy, s.name, csr, prep_s, op);

  std::size_t free_bytes = 0, total_bytes = 0;
  BENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  bench::Baselines baselines(csr, std::int64_t(free_bytes / 4), std::int64_t(free_bytes / 4));
  std::unique_ptr<bench::L2Flush> flush;
  if (!s.no_flush)
    flush = std::make_unique<bench::L2Flush>(std::size_t(std::max<std::int64_t>(dev_info.l2_bytes, 1 << 20)) * 2);
  const bench::CudaStream stream_owner;
  const cudaStream_t stream = stream_owner.get();
  std::ofstream csv = open_csv(s.csv_path);
  const RowContext context{s, csr, census, dev_info, copy, csv};

  std::printf("\n| n | method | median ms | min ms | max ms | TFLOPS (thesis) | TFLOPS (useful) | GB/s | floor/t | "
              "plan MiB | plan GB/s | of copy | rel error |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (std::int32_t n : parse_int_list(s.n_list)) {
    if (n < 1) throw apps::UsageError("--n values must be >= 1");
    WidthOperands operands(csr, n, s.source.seed, baselines);
    const SpmmCost chosen_cost = spmm_cost(census, csr.rows, csr.cols, n);
    // Every method of this width is prepared and checked first, then all are timed in two passes, in --methods
    // order and in reverse (gpu_timing.hpp says why), and their rows printed in --methods order.
    struct Prepared {
      std::string method;
      MethodRun m;
      double rel = 0.0;
    };
    std::vector<Prepared> prepared;  // moving one keeps its plan where it is: the closures hold the plan's address
    for (const std::string& method : methods) {
      Prepared p{method, MethodRun{}, 0.0};
      if (!prepare_method(method, n, s, operators, plain, baselines, operands, p.m)) continue;
      p.rel = s.no_check ? std::numeric_limits<double>::quiet_NaN() : check_method(p.m, csr, n, operands, stream);
      prepared.push_back(std::move(p));
    }
    std::vector<std::function<void(cudaStream_t)>> runs;
    for (const Prepared& p : prepared) runs.push_back(p.m.run);
    const std::vector<std::vector<double>> milliseconds =
        bench::time_gpu_runs_both_orders(runs, s.warmup, s.reps, flush.get(), stream);
    for (std::size_t k = 0; k < prepared.size(); ++k) {
      const Prepared& p = prepared[k];
      const TileCensus& method_census = p.m.thesis_layout ? operators.thesis().census() : census;
      const SpmmCost cost = p.m.thesis_layout ? spmm_cost(method_census, csr.rows, csr.cols, n) : chosen_cost;
      print_method_row(context, p.method, n, p.m, cost, method_census, p.rel, milliseconds[k]);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_spmm: time bcsr24's kernels against cuSPARSE and cuBLAS on one matrix", "bench_spmm"};
  Settings settings;
  return apps::run_main(
      app, argc, argv, [&](CLI::App& a) { add_options(a, settings); }, [&] { return run(settings); });
}
