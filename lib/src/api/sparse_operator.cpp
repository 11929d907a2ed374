// SparseOperator: validates and copies the caller's CSR, converts it once, uploads it once (lazily, under a
// mutex), and hands out SpmmPlans. Everything heavy is delegated to convert_to_bcsr24, DeviceMatrix, SpmmPlan.
#include "bcsr24/sparse_operator.hpp"

#include "bcsr24/reference.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/error.hpp"
#include "device/plan_access.hpp"
#include "device/plan_draft.hpp"
#include "device/plan_tuning.hpp"
#include "format/convert.hpp"
#include "format/layout_check.hpp"
#include "format/reference.hpp"
#include "format/serialize.hpp"
#include "format/tile_layout.hpp"

namespace bcsr24 {

struct SparseOperator::State {
  Bcsr24Matrix host;
  TileCensus census;
  LayoutReport layout_report;
  OperatorOptions options;
  // The device copy is created at most once, and the lists some kernels add to it once each; the mutex makes
  // concurrent first uses safe.
  mutable std::mutex upload_mutex;
  mutable std::unique_ptr<DeviceMatrix> device;
  // What measured plans chose, per n, types and device (locked by itself): reused by later plans, saved in .b24.
  mutable detail::TunedChoices tuned;
};

namespace {

/// Checks the raw CSR arrays before anything is read past row_ptr, naming the first broken rule.
void check_csr_arrays(std::int32_t rows, std::int32_t cols, const std::int32_t* row_ptr,
                      const std::int32_t* col_idx, const void* values) {
  const std::string where = "SparseOperator::from_csr: ";
  if (rows < 0 || cols < 0)
    throw InvalidArgument(where + "negative dimensions " + std::to_string(rows) + " x " + std::to_string(cols));
  if (row_ptr == nullptr) throw InvalidArgument(where + "row_ptr is null");
  if (row_ptr[0] != 0) throw InvalidArgument(where + "row_ptr[0] is " + std::to_string(row_ptr[0]) + ", expected 0");
  for (std::int32_t r = 0; r < rows; ++r)
    if (row_ptr[r + 1] < row_ptr[r])
      throw InvalidArgument(where + "row_ptr decreases at row " + std::to_string(r) + " (" +
                            std::to_string(row_ptr[r]) + " -> " + std::to_string(row_ptr[r + 1]) + ")");
  const std::int32_t nnz = row_ptr[rows];
  if (nnz > 0 && col_idx == nullptr) throw InvalidArgument(where + "col_idx is null with nnz = " + std::to_string(nnz));
  if (nnz > 0 && values == nullptr) throw InvalidArgument(where + "values is null with nnz = " + std::to_string(nnz));
  for (std::int32_t r = 0; r < rows; ++r)
    for (std::int32_t p = row_ptr[r]; p < row_ptr[r + 1]; ++p)
      if (col_idx[p] < 0 || col_idx[p] >= cols)
        throw InvalidArgument(where + "row " + std::to_string(r) + " has column index " + std::to_string(col_idx[p]) +
                              " outside [0, " + std::to_string(cols) + ")");
}

template <typename Value>
CsrMatrix copy_csr(std::int32_t rows, std::int32_t cols, const std::int32_t* row_ptr, const std::int32_t* col_idx,
                   const Value* values) {
  check_csr_arrays(rows, cols, row_ptr, col_idx, values);
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.assign(row_ptr, row_ptr + rows + 1);
  const std::size_t nnz = static_cast<std::size_t>(row_ptr[rows]);
  if (nnz > 0) {
    a.col_idx.assign(col_idx, col_idx + nnz);
    a.values.assign(values, values + nnz);  // float -> double is exact
  }
  sort_rows_and_sum_duplicates(a);
  return a;
}

void check_host_matrix(const Bcsr24Matrix& m) {
  const std::string where = "SparseOperator::from_host: ";
  if (m.rows < 0 || m.cols < 0) throw InvalidArgument(where + "negative dimensions");
  if (m.tile_rows != (std::int64_t(m.rows) + kTileRows - 1) / kTileRows ||
      m.tile_cols != (std::int64_t(m.cols) + kTileCols - 1) / kTileCols)
    throw InvalidArgument(where + "tile_rows/tile_cols do not match " + std::to_string(m.rows) + " x " +
                          std::to_string(m.cols));
  const auto check_list = [&](const TileList& list, const char* name, std::size_t values_per_tile,
                              std::size_t meta_per_tile) {
    if (list.row_ptr.size() != static_cast<std::size_t>(m.tile_rows) + 1 ||
        list.row_ptr.back() != list.tiles() || list.values.size() != std::size_t(list.tiles()) * values_per_tile ||
        list.metadata.size() != std::size_t(list.tiles()) * meta_per_tile)
      throw InvalidArgument(where + name + " tile list sizes are inconsistent");
  };
  check_list(m.sparse24, "2:4", kSparseTileValues, kSparseTileMetaWords);
  check_list(m.dense, "dense", kDenseTileValues, 0);
  if (const std::string problem = detail::layout_problem(m); !problem.empty()) throw InvalidArgument(where + problem);
}

// A stored choice's enums are written as their codes (format/serialize.hpp lists them). B types are ElementType's own
// values; output types keep the codes of the files written when they had an enum of their own (0 fp32, 1 fp16).
static_assert(int(ElementType::f16) == 1 && int(ElementType::bf16) == 2 && int(ElementType::f32) == 3, "B type codes");
std::uint8_t output_code(ElementType output) { return output == ElementType::f16 ? 1 : 0; }
ElementType output_from_code(std::uint8_t code) { return code == 1 ? ElementType::f16 : ElementType::f32; }
static_assert(int(BandPaths::tiles) == 1 && int(BandPaths::csr) == 2 && int(BandPaths::hybrid) == 3 &&
                  int(BandPaths::vectors) == 4 && int(BandPaths::hybrid_vectors) == 5,
              "paths codes");
static_assert(int(TilePipeline::standard) == 1 && int(TilePipeline::deep) == 2, "pipeline codes");

std::vector<B24TunedChoice> file_choices(const std::vector<detail::StoredChoice>& stored) {
  std::vector<B24TunedChoice> out;
  for (const detail::StoredChoice& s : stored) {
    B24TunedChoice c;
    c.n = s.key.n;
    c.input = static_cast<std::uint8_t>(s.key.input);
    c.output = output_code(s.key.output);
    c.paths = static_cast<std::uint8_t>(s.choice.paths);
    c.split_long_bands = s.choice.split_long_bands ? 1 : 0;
    c.tile_pipeline = static_cast<std::uint8_t>(s.choice.tile_pipeline);
    c.band_groups = s.choice.band_groups ? 1 : 0;
    c.measured_us = s.measured_us >= 0.0 ? s.measured_us : -1.0;
    c.device = s.key.device;
    out.push_back(std::move(c));
  }
  return out;
}

/// The file's choices (load_bcsr24 checked their codes) as the operator keeps them.
std::vector<detail::StoredChoice> stored_choices(const std::vector<B24TunedChoice>& file) {
  std::vector<detail::StoredChoice> out;
  for (const B24TunedChoice& c : file) {
    detail::StoredChoice s;
    s.key = detail::TunedKey{c.n, static_cast<ElementType>(c.input), output_from_code(c.output), c.device};
    s.choice.paths = static_cast<BandPaths>(c.paths);
    s.choice.split_long_bands = c.split_long_bands != 0;
    s.choice.tile_pipeline = static_cast<TilePipeline>(c.tile_pipeline);
    s.choice.band_groups = c.band_groups != 0;
    s.measured_us = c.measured_us;
    out.push_back(std::move(s));
  }
  return out;
}

bool has_b24_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext == ".b24";
}

}  // namespace

SparseOperator::SparseOperator(std::unique_ptr<State> state) : state_(std::move(state)) {}
SparseOperator::~SparseOperator() = default;
SparseOperator::SparseOperator(SparseOperator&&) noexcept = default;
SparseOperator& SparseOperator::operator=(SparseOperator&&) noexcept = default;

SparseOperator detail::OperatorAccess::from_host(Bcsr24Matrix host, const OperatorOptions& options) {
  LayoutReport report;
  report.layout = host.layout;
  report.reordering = host.reordering;
  report.reason = "preprocessed matrix";
  report.baseline_stored_tiles = report.baseline_sparse24_tiles = report.baseline_bytes = -1;
  // The options say what the operator holds: the stored matrix's precision, layout and row order.
  OperatorOptions held = options;
  held.precision = host.precision;
  held.layout = host.layout;
  held.reorder = host.reordering;
  return adopt(std::move(host), std::move(report), held);
}

const Bcsr24Matrix& detail::OperatorAccess::host(const SparseOperator& op) noexcept { return op.state_->host; }

detail::TunedChoices& detail::OperatorAccess::tuned(const SparseOperator& op) noexcept { return op.state_->tuned; }

SparseOperator detail::OperatorAccess::adopt(Bcsr24Matrix host, LayoutReport report, const OperatorOptions& options) {
  check_host_matrix(host);
  auto state = std::make_unique<SparseOperator::State>();
  state->host = std::move(host);
  state->census = state->host.census();
  state->layout_report = std::move(report);
  state->options = options;
  return SparseOperator(std::move(state));
}

namespace {

SparseOperator convert_and_adopt(const CsrMatrix& a, const OperatorOptions& options) {
  LayoutReport report;
  Bcsr24Matrix host = convert_to_bcsr24(a, convert_options(options), &report);
  return detail::OperatorAccess::adopt(std::move(host), std::move(report), options);
}

}  // namespace

SparseOperator SparseOperator::from_csr(const CsrMatrix& a, const OperatorOptions& options) {
  if (a.row_ptr.size() != static_cast<std::size_t>(std::max(a.rows, 0)) + 1)
    throw InvalidArgument("SparseOperator::from_csr: row_ptr has " + std::to_string(a.row_ptr.size()) +
                          " entries, expected rows + 1");
  if (a.col_idx.size() != a.values.size() ||
      static_cast<std::int64_t>(a.col_idx.size()) != static_cast<std::int64_t>(a.row_ptr.back()))
    throw InvalidArgument("SparseOperator::from_csr: col_idx, values and row_ptr[rows] disagree on nnz");
  return from_csr(a.rows, a.cols, a.row_ptr.data(), a.col_idx.data(), a.values.data(), options);
}

SparseOperator SparseOperator::from_csr(std::int32_t rows, std::int32_t cols, const std::int32_t* row_ptr,
                                        const std::int32_t* col_idx, const double* values,
                                        const OperatorOptions& options) {
  return convert_and_adopt(copy_csr(rows, cols, row_ptr, col_idx, values), options);
}

SparseOperator SparseOperator::from_csr(std::int32_t rows, std::int32_t cols, const std::int32_t* row_ptr,
                                        const std::int32_t* col_idx, const float* values,
                                        const OperatorOptions& options) {
  return convert_and_adopt(copy_csr(rows, cols, row_ptr, col_idx, values), options);
}

SparseOperator SparseOperator::from_file(const std::string& path, const OperatorOptions& options) {
  if (has_b24_extension(path)) {
    std::vector<B24TunedChoice> choices;
    SparseOperator op = detail::OperatorAccess::from_host(load_bcsr24(path, &choices), options);
    op.state_->tuned.assign(stored_choices(choices));
    return op;
  }
  // The reader's CSR is already sorted and unique, so it goes straight to the conversion.
  return convert_and_adopt(read_matrix_market(path, options.matrix_market), options);
}

std::int32_t SparseOperator::rows() const noexcept { return state_->host.rows; }
std::int32_t SparseOperator::cols() const noexcept { return state_->host.cols; }
std::int64_t SparseOperator::nnz() const noexcept { return state_->host.nnz; }
const TileCensus& SparseOperator::census() const noexcept { return state_->census; }
const LayoutReport& SparseOperator::layout_report() const noexcept { return state_->layout_report; }
const Fp16Scaling& SparseOperator::scaling() const noexcept { return state_->host.scaling; }
Precision SparseOperator::precision() const noexcept { return state_->host.precision; }
const OperatorOptions& SparseOperator::options() const noexcept { return state_->options; }

void SparseOperator::save(const std::string& path) const {
  save_bcsr24(path, state_->host, file_choices(state_->tuned.all()));
}

CsrMatrix SparseOperator::stored_csr() const { return stored_matrix_csr(state_->host); }

CsrMatrix SparseOperator::stored_rows(const std::vector<std::int32_t>& rows) const {
  return stored_matrix_rows(state_->host, rows);
}

void SparseOperator::upload() const { (void)detail::OperatorAccess::device(*this); }

bool SparseOperator::uploaded() const noexcept {
  std::lock_guard<std::mutex> lock(state_->upload_mutex);
  return state_->device != nullptr;
}

std::int64_t SparseOperator::device_bytes() const noexcept {
  std::lock_guard<std::mutex> lock(state_->upload_mutex);
  return state_->device ? state_->device->device_bytes() : 0;
}

const DeviceMatrix& detail::OperatorAccess::device(const SparseOperator& op, KernelKind kernel,
                                                   bool every_band_vectors, bool every_band_csr) {
  SparseOperator::State& state = *op.state_;
  std::lock_guard<std::mutex> lock(state.upload_mutex);
  if (!state.device) {
    // A failed upload leaves nothing allocated (the DeviceMatrix frees what it made) and no device copy: a later
    // call tries again.
    try {
      state.device = std::make_unique<DeviceMatrix>(state.host, UploadOptions{});
    } catch (const OutOfMemory& e) {
      throw OutOfMemory(std::string("SparseOperator::upload: ") + e.what());
    }
  }
  // What the other kernels read besides the default lists is made on their first plan and kept; plans made
  // before keep pointing at lists that do not move.
  try {
    if (kernel == KernelKind::csr_cuda_cores) state.device->add_csr_of_every_band(state.host);
    if (every_band_vectors) state.device->add_vectors_of_every_band(state.host);
  } catch (const OutOfMemory& e) {  // the list is not added; the operator and its plans stay as they were
    throw OutOfMemory(std::string("SparseOperator::make_plan (kernel ") + kernel_name(kernel) + "): " + e.what());
  }
  // A single vector: the CSR rows of every band, so that bands stored as tiles may run on CSR too. At n = 1 a tile
  // moves its 16 x 32 values to use one column of B, and the tile kernel runs short bands at a fraction of the
  // memory bandwidth; CSR ran block_diagonal:262144 in 28.8 us against tiles' 49.9 (bcsstk16: 7.0 against 9.4;
  // run 65). An optional copy: where it does not fit, the plan is made without it.
  if (every_band_csr) try {
      state.device->add_csr_of_every_band(state.host);
    } catch (const OutOfMemory&) {
    }
  return *state.device;
}

SpmmPlan SparseOperator::make_plan(std::int32_t n, KernelKind kernel, const PlanOptions& options) const {
  return experimental::make_plan(*this, n, kernel, options, {});
}

SpmmPlan experimental::make_plan(const SparseOperator& op, std::int32_t n, KernelKind kernel,
                                 const PlanOptions& options, const PlanKnobs& knobs) {
  if (n < 1) throw InvalidArgument("SparseOperator::make_plan: n must be >= 1, got " + std::to_string(n));
  // paths = vectors reads the narrow vectors of every band (the default upload keeps those of the candidates).
  const bool every_band_vectors = knobs.paths == BandPaths::vectors && kernel == KernelKind::automatic;
  // n = 1 reads the CSR rows of every band (detail::single_vector_reads_every_band).
  const bool every_band_csr = kernel == KernelKind::automatic && detail::single_vector_reads_every_band(n);
  // A measured plan's default budget is a share of what converting the operator took (0 for a .b24 file's).
  return detail::PlanAccess::make(detail::OperatorAccess::device(op, kernel, every_band_vectors, every_band_csr), n,
                                  kernel, options, knobs, &detail::OperatorAccess::tuned(op),
                                  op.layout_report().total_seconds * 1e3);
}

void reference_spmm(const SparseOperator& a, std::int32_t n, const fp16_t* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, double alpha, double beta) {
  reference_spmm(detail::OperatorAccess::host(a), n, b, ldb, c, ldc, alpha, beta);
}

void reference_spmm(const SparseOperator& a, std::int32_t n, const float* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, double alpha, double beta) {
  reference_spmm(detail::OperatorAccess::host(a), n, b, ldb, c, ldc, alpha, beta);
}

}  // namespace bcsr24
