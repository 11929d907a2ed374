// spmm_run's fp64 reference on the checked rows (check_reference.hpp).
//
// The worst-case bound on each output element is
//   |alpha| sum_k (|s_ik - a_ik| + (gamma(k_i) + u_B) |s_ik|) |b_kj| + |beta| |c0_ij| u32 + (3 u32 + u_out) |cref_ij|
// where s_ik is the stored value the kernels multiply by exactly (op.stored_rows) and a_ik the original (so the
// first term is the storage error, taken exactly; 0 when the reference is the stored matrix itself), gamma(k) =
// k u / (1 - k u) with u = 2^-23 covers fp32 accumulation over the k_i entries of row i (tensor cores truncate
// rather than round, hence 2^-23), u_B = 2^-8 (1 + 2^-8) the rounding of B to bf16 while staged (bf16 matrices;
// 0 otherwise), 3 u32 the final scalings and u_out the output rounding. The typical error takes the storage error
// exactly and the other roundings as independent:
//   (alpha ((S - A) B)_ij)^2 + alpha^2 sum_k k_i u32^2 s_ik^2 b_kj^2 + (u_out^2 / 3) cref_ij^2.
// Each checked row costs one pass over its entries, reading the rows of B they name from the fp16 B.
#include "check_reference.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include "process_memory.hpp"
#include "text_report.hpp"

namespace bcsr24::spmm_run {

namespace {

constexpr double kUnitRoundoffFp16 = 0x1p-11;
constexpr double kUnitRoundoffFp32 = 0x1p-24;
constexpr double kAccumulationRoundoff = 0x1p-23;
/// Host threads of the check: its rows are independent.
constexpr unsigned kMaxThreads = 16;

/// Every fp16 value widened, indexed by its bits: B and C0 are read element by element, and a table lookup
/// is cheaper than the conversion (and exact).
std::vector<float> fp16_table() {
  std::vector<float> table(1 << 16);
  for (std::uint32_t bits = 0; bits < table.size(); ++bits) table[bits] = fp16_to_float(static_cast<fp16_t>(bits));
  return table;
}

/// Sums of squares over the checked elements, per thread, then added.
struct Sums {
  double norm = 0.0, bound_f32 = 0.0, bound_f16 = 0.0, typical_f32 = 0.0, typical_f16 = 0.0;
  void add(const Sums& o) {
    norm += o.norm;
    bound_f32 += o.bound_f32;
    bound_f16 += o.bound_f16;
    typical_f32 += o.typical_f32;
    typical_f16 += o.typical_f16;
  }
};

/// One row's entries: columns ascending, values.
struct RowView {
  const std::int32_t* cols = nullptr;
  const double* values = nullptr;
  std::int32_t count = 0;
};
RowView row_of(const CsrMatrix& a, std::int32_t i) {
  const std::int32_t begin = a.row_ptr[static_cast<std::size_t>(i)], end = a.row_ptr[static_cast<std::size_t>(i) + 1];
  return {a.col_idx.data() + begin, a.values.data() + begin, end - begin};
}

/// What every row's computation reads.
struct RowContext {
  const CheckProduct* product = nullptr;
  const std::vector<float>* table = nullptr;
  double b_roundoff = 0.0;  ///< u_B
};

/// Row `row` of the reference into `out` (n values), and its elements' terms into `sums`. `original` is the
/// row as read (null: the stored row is the reference). scratch: 3 n doubles.
void reference_row(const RowContext& ctx, std::int32_t row, const RowView* original, const RowView& stored,
                   double* out, std::vector<double>& scratch, Sums& sums) {
  const CheckProduct& p = *ctx.product;
  const std::size_t n = static_cast<std::size_t>(p.n);
  const float* table = ctx.table->data();
  double* bound = scratch.data();
  double* delta = bound + n;
  double* variance = delta + n;
  std::fill(out, out + n, 0.0);
  std::fill(scratch.begin(), scratch.end(), 0.0);
  const double k = double(original ? original->count : stored.count);
  const double gamma = k * kAccumulationRoundoff / (1.0 - k * kAccumulationRoundoff);
  const double product_weight = gamma + ctx.b_roundoff * (1.0 + 0x1p-8);
  const auto add_entry = [&](std::int32_t col, double a, double s) {
    const double bound_weight = std::abs(s - a) + product_weight * std::abs(s);
    const double d = s - a;
    const double variance_weight = k * kUnitRoundoffFp32 * kUnitRoundoffFp32 * s * s;
    const fp16_t* b_row = p.b + static_cast<std::size_t>(col) * n;
    for (std::size_t j = 0; j < n; ++j) {
      const double b = table[b_row[j]];
      out[j] += a * b;
      bound[j] += bound_weight * std::abs(b);
      delta[j] += d * b;
      variance[j] += variance_weight * b * b;
    }
  };
  if (!original) {
    for (std::int32_t e = 0; e < stored.count; ++e) add_entry(stored.cols[e], stored.values[e], stored.values[e]);
  } else {
    // Both rows ascend by column; an entry flushed to zero is absent from the stored row (s = 0).
    std::int32_t i = 0, q = 0;
    while (i < original->count || q < stored.count) {
      if (q >= stored.count || (i < original->count && original->cols[i] < stored.cols[q])) {
        add_entry(original->cols[i], original->values[i], 0.0);
        ++i;
      } else if (i >= original->count || stored.cols[q] < original->cols[i]) {
        add_entry(stored.cols[q], 0.0, stored.values[q]);
        ++q;
      } else {
        add_entry(original->cols[i], original->values[i], stored.values[q]);
        ++i;
        ++q;
      }
    }
  }
  const std::size_t c_row = static_cast<std::size_t>(row) * n;
  for (std::size_t j = 0; j < n; ++j) {
    const double c0 = p.beta != 0.0 ? double(table[p.c0[c_row + j]]) : 0.0;
    const double value = p.alpha * out[j] + p.beta * c0;
    out[j] = value;
    const double magnitude = std::abs(value);
    const double common = std::abs(p.alpha) * bound[j] + std::abs(p.beta) * std::abs(c0) * kUnitRoundoffFp32 +
                          3.0 * kUnitRoundoffFp32 * magnitude;
    const double bound_f32 = common + kUnitRoundoffFp32 * magnitude;
    const double bound_f16 = common + kUnitRoundoffFp16 * magnitude;
    const double storage = p.alpha * delta[j];
    const double spread = storage * storage + p.alpha * p.alpha * variance[j];
    sums.norm += value * value;
    sums.bound_f32 += bound_f32 * bound_f32;
    sums.bound_f16 += bound_f16 * bound_f16;
    sums.typical_f32 += spread + kUnitRoundoffFp32 * kUnitRoundoffFp32 / 3.0 * value * value;
    sums.typical_f16 += spread + kUnitRoundoffFp16 * kUnitRoundoffFp16 / 3.0 * value * value;
  }
}

unsigned thread_count(std::size_t rows) {
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>({hardware, kMaxThreads, rows / 64 + 1})));
}

}  // namespace

Reference compute_reference(const SparseOperator& op, const CsrMatrix* original, const CheckProduct& product,
                            std::int32_t uniform_rows, std::uint64_t seed, bool show_progress) {
  const bool peak_reset = apps::reset_peak_rss();
  const double resident_before = apps::proc_status_bytes("VmRSS");
  bench::Stopwatch watch;
  CheckRows checked = choose_check_rows(op.rows(), product.n, op.nnz(), original ? original->row_ptr.data() : nullptr,
                                        uniform_rows, seed);
  bench::ProgressLine progress(show_progress, "fp64 reference on " + std::to_string(checked.rows.size()) + " rows");

  Reference reference;
  reference.n = product.n;
  const std::size_t n = static_cast<std::size_t>(product.n);
  const std::vector<std::int32_t>& rows = checked.rows;
  reference.c.assign(rows.size() * n, 0.0);
  const std::vector<float> table = fp16_table();
  const RowContext ctx{&product, &table, op.precision() == Precision::bf16 ? 0x1p-8 : 0.0};
  const unsigned threads = thread_count(rows.size());
  std::int64_t largest_chunk = 0;

  Sums total;
  for (const auto& [first, last] : check_chunks(rows, original ? original->row_ptr.data() : nullptr)) {
    const CsrMatrix stored = op.stored_rows(std::vector<std::int32_t>(rows.begin() + first, rows.begin() + last));
    largest_chunk = std::max(largest_chunk, stored.nnz());
    std::vector<Sums> sums(threads);
    std::vector<std::thread> workers;
    const std::size_t count = last - first;
    for (unsigned t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        std::vector<double> scratch(3 * n);
        for (std::size_t k = first + count * t / threads; k < first + count * (t + 1) / threads; ++k) {
          const RowView stored_row = row_of(stored, static_cast<std::int32_t>(k - first));
          const RowView original_row = original ? row_of(*original, rows[k]) : RowView{};
          reference_row(ctx, rows[k], original ? &original_row : nullptr, stored_row, reference.c.data() + k * n,
                        scratch, sums[t]);
        }
      });
    for (std::thread& worker : workers) worker.join();
    for (const Sums& s : sums) total.add(s);
    progress.percent(double(last) / double(rows.size()));
  }

  reference.norm = std::sqrt(total.norm);
  const double denominator = reference.norm > 0.0 ? reference.norm : 1.0;
  reference.f32_output = {std::sqrt(total.typical_f32) / denominator, std::sqrt(total.bound_f32) / denominator};
  reference.f16_output = {std::sqrt(total.typical_f16) / denominator, std::sqrt(total.bound_f16) / denominator};
  reference.host_bytes = check_host_bytes(rows.size(), largest_chunk, product.n, op.rows(), threads);
  reference.seconds = watch.seconds();
  if (peak_reset) reference.peak_rss_growth_bytes = std::max(0.0, apps::proc_status_bytes("VmHWM") - resident_before);
  reference.checked = std::move(checked);
  progress.done(reference.seconds);
  return reference;
}

}  // namespace bcsr24::spmm_run
