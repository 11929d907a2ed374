// Tests of the SparseOperator facade and the Eigen adapter (CPU only): every way in gives the same matrix,
// bad CSR arrays are refused with InvalidArgument, census and scaling are exposed, and no-GPU is reported.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Sparse>

#include "bcsr24/bcsr24.hpp"
#include "bcsr24/eigen.hpp"
#include "device/plan_access.hpp"
#include "device/plan_tuning.hpp"
#include "format/convert.hpp"
#include "format/serialize.hpp"
#include "test_eigen.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using bcsr24::CsrMatrix;
using bcsr24::SparseOperator;

namespace {

/// The host format behind an operator (white-box: the library's own access).
const bcsr24::Bcsr24Matrix& host_of(const SparseOperator& op) { return bcsr24::detail::OperatorAccess::host(op); }

/// A random rows x cols CSR with about `per_row` entries per row, mixing 2:4-friendly and dense-ish rows, so
/// that both tile lists are populated. Values in [-4, 4) without exact zeros.
CsrMatrix random_csr(std::int32_t rows, std::int32_t cols, int per_row, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int32_t> col(0, cols - 1);
  std::uniform_real_distribution<double> value(-4.0, 4.0);
  std::vector<std::int32_t> r, c;
  std::vector<double> v;
  for (std::int32_t i = 0; i < rows; ++i) {
    const int count = (i % 5 == 0) ? per_row * 4 : per_row;  // every 5th row is crowded: dense tiles
    for (int k = 0; k < count; ++k) {
      double x = value(rng);
      if (x == 0.0) x = 1.0;
      r.push_back(i);
      c.push_back(col(rng));
      v.push_back(x);
    }
  }
  return bcsr24::csr_from_triplets(rows, cols, r, c, v);
}

void require_same_host(const bcsr24::Bcsr24Matrix& a, const bcsr24::Bcsr24Matrix& b) {
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.cols == b.cols);
  CHECK(a.nnz == b.nnz);
  CHECK(a.sparse24.row_ptr == b.sparse24.row_ptr);
  CHECK(a.sparse24.col_idx == b.sparse24.col_idx);
  CHECK(a.sparse24.values == b.sparse24.values);
  CHECK(a.sparse24.metadata == b.sparse24.metadata);
  CHECK(a.dense.row_ptr == b.dense.row_ptr);
  CHECK(a.dense.col_idx == b.dense.col_idx);
  CHECK(a.dense.values == b.dense.values);
  CHECK(a.sparse24.b_rows == b.sparse24.b_rows);
  CHECK(a.dense.b_rows == b.dense.b_rows);
  CHECK(a.row_order == b.row_order);
  CHECK(a.layout == b.layout);
  CHECK(a.reordering == b.reordering);
  CHECK(a.scaling.exponent == b.scaling.exponent);
}

void require_same_census(const bcsr24::TileCensus& a, const bcsr24::TileCensus& b) {
  using Census = bcsr24::TileCensus;
  const std::pair<const char*, std::int64_t Census::*> counts[] = {
      {"tile_rows", &Census::tile_rows},       {"tile_cols", &Census::tile_cols},
      {"zero_tiles", &Census::zero_tiles},     {"sparse24_tiles", &Census::sparse24_tiles},
      {"dense_tiles", &Census::dense_tiles},   {"nnz", &Census::nnz},
      {"sparse24_nnz", &Census::sparse24_nnz}, {"dense_nnz", &Census::dense_nnz}};
  for (const auto& [name, count] : counts) {
    INFO(name);
    CHECK(a.*count == b.*count);
  }
}

/// A temporary file path removed at scope exit.
struct TempPath {
  fs::path path;
  explicit TempPath(const std::string& name) {
    std::random_device rd;
    path = fs::temp_directory_path() / ("bcsr24_api_" + std::to_string(rd()) + "_" + name);
  }
  ~TempPath() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

}  // namespace

TEST_CASE("from_csr, from_eigen (both orders, float) and from_file build the same matrix", "[api]") {
  const std::uint64_t seed = bcsr24::test::test_seed(11);
  INFO("seed " << seed);
  const CsrMatrix a = random_csr(101, 77, 3, seed);
  const SparseOperator from_arrays =
      SparseOperator::from_csr(a.rows, a.cols, a.row_ptr.data(), a.col_idx.data(), a.values.data());
  const bcsr24::Bcsr24Matrix reference = bcsr24::convert_to_bcsr24(a);
  require_same_host(host_of(from_arrays), reference);
  CHECK(from_arrays.rows() == 101);
  CHECK(from_arrays.cols() == 77);
  CHECK(from_arrays.nnz() == a.nnz());
  const bcsr24::TileCensus& census = from_arrays.census();
  CHECK(census.sparse24_tiles + census.dense_tiles > 0);
  CHECK(census.nnz == a.nnz());
  {
    // Aligned tiles in file order hold both tile kinds here (condensing packs this matrix into 2:4 tiles only).
    bcsr24::OperatorOptions aligned;
    aligned.layout = bcsr24::TileLayout::aligned;
    aligned.reorder = bcsr24::Reordering::none;
    const SparseOperator op =
        SparseOperator::from_csr(a.rows, a.cols, a.row_ptr.data(), a.col_idx.data(), a.values.data(), aligned);
    CHECK(op.census().sparse24_tiles > 0);
    CHECK(op.census().dense_tiles > 0);
    CHECK(op.layout_report().baseline_stored_tiles == op.census().stored_tiles());
    CHECK(op.layout_report().reason == "requested");
  }

  SECTION("CsrMatrix overload") { require_same_host(host_of(SparseOperator::from_csr(a)), reference); }
  SECTION("Eigen row-major and column-major, double") {
    const Eigen::SparseMatrix<double, Eigen::RowMajor> row_major = bcsr24::test::to_eigen(a);
    const Eigen::SparseMatrix<double, Eigen::ColMajor> col_major = row_major;
    require_same_host(host_of(bcsr24::from_eigen(row_major)), reference);
    require_same_host(host_of(bcsr24::from_eigen(col_major)), reference);
    require_same_census(bcsr24::from_eigen(col_major).census(), census);
  }
  SECTION("Eigen uncompressed (reserved room left between rows)") {
    Eigen::SparseMatrix<double, Eigen::RowMajor> m(a.rows, a.cols);
    m.reserve(Eigen::VectorXi::Constant(a.rows, 40));
    for (std::int32_t i = 0; i < a.rows; ++i)
      for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) m.insert(i, a.col_idx[p]) = a.values[p];
    REQUIRE_FALSE(m.isCompressed());
    require_same_host(host_of(bcsr24::from_eigen(m)), reference);
  }
  SECTION("float values, from arrays and from Eigen") {
    // Values exactly representable in float so both paths see the same doubles.
    CsrMatrix af = a;
    for (double& v : af.values) v = static_cast<float>(v);
    std::vector<float> values(af.values.begin(), af.values.end());
    const auto expected = bcsr24::convert_to_bcsr24(af);
    require_same_host(
        host_of(SparseOperator::from_csr(af.rows, af.cols, af.row_ptr.data(), af.col_idx.data(), values.data())),
        expected);
    const Eigen::SparseMatrix<float, Eigen::ColMajor> mf = bcsr24::test::to_eigen(af).cast<float>();
    require_same_host(host_of(bcsr24::from_eigen(mf)), expected);
  }
  SECTION("Matrix Market and .b24 files") {
    TempPath mtx("a.mtx"), b24("a.b24");
    bcsr24::write_matrix_market(mtx.path.string(), a);
    const SparseOperator from_mtx = SparseOperator::from_file(mtx.path.string());
    require_same_host(host_of(from_mtx), reference);
    require_same_census(from_mtx.census(), census);
    bcsr24::save_bcsr24(b24.path.string(), reference);
    require_same_host(host_of(SparseOperator::from_file(b24.path.string())), reference);
  }
}

TEST_CASE("from_csr sorts columns within rows and sums duplicates", "[api]") {
  // Row 0: columns 5, 1, 5 (duplicate) ; row 1 empty ; row 2: 3, 0.
  const std::vector<std::int32_t> row_ptr{0, 3, 3, 5};
  const std::vector<std::int32_t> col_idx{5, 1, 5, 3, 0};
  const std::vector<double> values{1.0, 2.0, 0.5, -1.0, 4.0};
  const SparseOperator op = SparseOperator::from_csr(3, 6, row_ptr.data(), col_idx.data(), values.data());
  const CsrMatrix sorted =
      bcsr24::csr_from_triplets(3, 6, {0, 0, 2, 2}, {1, 5, 0, 3}, {2.0, 1.5, 4.0, -1.0});
  require_same_host(host_of(op), bcsr24::convert_to_bcsr24(sorted));
  const std::vector<double> dense = bcsr24::decode_to_dense(host_of(op));
  CHECK(dense[0 * 6 + 5] == 1.5);
  CHECK(dense[0 * 6 + 1] == 2.0);
  CHECK(dense[2 * 6 + 0] == 4.0);
  CHECK(dense[2 * 6 + 3] == -1.0);
  CHECK(op.nnz() == 4);
}

TEST_CASE("invalid CSR arrays throw InvalidArgument naming the problem", "[api][errors]") {
  const std::vector<std::int32_t> row_ptr{0, 2, 3};
  const std::vector<std::int32_t> col_idx{0, 2, 1};
  const std::vector<double> values{1.0, 2.0, 3.0};
  const auto build = [](std::int32_t rows, std::int32_t cols, const std::int32_t* rp, const std::int32_t* ci,
                        const double* v) { return SparseOperator::from_csr(rows, cols, rp, ci, v); };
  CHECK_NOTHROW(build(2, 3, row_ptr.data(), col_idx.data(), values.data()));
  CHECK_THROWS_AS(build(-1, 3, row_ptr.data(), col_idx.data(), values.data()), bcsr24::InvalidArgument);
  CHECK_THROWS_WITH(build(2, -3, row_ptr.data(), col_idx.data(), values.data()), Catch::Contains("negative"));
  CHECK_THROWS_WITH(build(2, 3, nullptr, col_idx.data(), values.data()), Catch::Contains("row_ptr is null"));
  CHECK_THROWS_WITH(build(2, 3, row_ptr.data(), nullptr, values.data()), Catch::Contains("col_idx is null"));
  CHECK_THROWS_WITH(build(2, 3, row_ptr.data(), col_idx.data(), nullptr), Catch::Contains("values is null"));
  const std::vector<std::int32_t> bad_start{1, 2, 3};
  CHECK_THROWS_WITH(build(2, 3, bad_start.data(), col_idx.data(), values.data()), Catch::Contains("row_ptr[0]"));
  const std::vector<std::int32_t> decreasing{0, 3, 2};
  CHECK_THROWS_WITH(build(2, 3, decreasing.data(), col_idx.data(), values.data()),
                    Catch::Contains("decreases at row 1"));
  const std::vector<std::int32_t> out_of_range{0, 2, 7};
  CHECK_THROWS_WITH(build(2, 3, row_ptr.data(), out_of_range.data(), values.data()),
                    Catch::Contains("row 1 has column index 7"));
  const std::vector<std::int32_t> negative{0, -1, 1};
  CHECK_THROWS_AS(build(2, 3, row_ptr.data(), negative.data(), values.data()), bcsr24::InvalidArgument);
  // Every error is also a bcsr24::Error.
  CHECK_THROWS_AS(build(2, 3, nullptr, nullptr, nullptr), bcsr24::Error);

  // CsrMatrix whose arrays disagree.
  CsrMatrix broken;
  broken.rows = 2;
  broken.cols = 3;
  broken.row_ptr = {0, 2};
  CHECK_THROWS_AS(SparseOperator::from_csr(broken), bcsr24::InvalidArgument);
  broken.row_ptr = {0, 1, 2};
  broken.col_idx = {0, 1};
  broken.values = {1.0};
  CHECK_THROWS_AS(SparseOperator::from_csr(broken), bcsr24::InvalidArgument);

  // A host matrix with inconsistent lists.
  bcsr24::Bcsr24Matrix host = bcsr24::convert_to_bcsr24(random_csr(40, 40, 2, 3));
  bcsr24::TileList& list = host.dense.tiles() > 0 ? host.dense : host.sparse24;
  REQUIRE(list.tiles() > 0);
  list.values.pop_back();
  CHECK_THROWS_AS(bcsr24::detail::OperatorAccess::from_host(host), bcsr24::InvalidArgument);
}

TEST_CASE("non-finite values and fp16 overflow follow the scaling policy", "[api][scaling]") {
  const std::vector<std::int32_t> row_ptr{0, 1, 2};
  const std::vector<std::int32_t> col_idx{0, 1};
  const std::vector<double> nan_values{1.0, std::nan("")};
  CHECK_THROWS_AS(SparseOperator::from_csr(2, 2, row_ptr.data(), col_idx.data(), nan_values.data()),
                  bcsr24::RangeError);

  const std::vector<double> huge{1.0e9, 3.0e8};
  bcsr24::OperatorOptions matrix_wide;
  matrix_wide.scaling = bcsr24::ScalingPolicy::automatic;
  const SparseOperator scaled = SparseOperator::from_csr(2, 2, row_ptr.data(), col_idx.data(), huge.data(), matrix_wide);
  const bcsr24::Fp16Scaling& s = scaled.scaling();
  CHECK(s.exponent > 0);
  CHECK(s.max_abs == 1.0e9);
  CHECK(s.min_abs_nonzero == 3.0e8);
  CHECK(s.overflow_count == 2);
  CHECK(s.flushed_count == 0);
  // Stored values times 2^exponent give the matrix back to fp16 precision.
  const std::vector<double> dense = bcsr24::decode_to_dense(host_of(scaled));
  CHECK(std::fabs(dense[0] - 1.0e9) <= 1.0e9 * 0x1p-11);
  CHECK(std::fabs(dense[3] - 3.0e8) <= 3.0e8 * 0x1p-11);
  // The default scales each row on its own: no matrix-wide exponent, one per row.
  const SparseOperator per_row = SparseOperator::from_csr(2, 2, row_ptr.data(), col_idx.data(), huge.data());
  CHECK(per_row.scaling().per_row);
  CHECK(per_row.scaling().exponent == 0);
  CHECK(per_row.scaling().overflow_count == 2);
  CHECK(host_of(per_row).row_exponent ==
        std::vector<std::int16_t>{std::int16_t(std::ilogb(1.0e9) - 14), std::int16_t(std::ilogb(3.0e8) - 14)});
  const std::vector<double> per_row_dense = bcsr24::decode_to_dense(host_of(per_row));
  CHECK(std::fabs(per_row_dense[0] - 1.0e9) <= 1.0e9 * 0x1p-11);
  CHECK(std::fabs(per_row_dense[3] - 3.0e8) <= 3.0e8 * 0x1p-11);

  bcsr24::OperatorOptions no_scaling;
  no_scaling.scaling = bcsr24::ScalingPolicy::none;
  CHECK_THROWS_AS(SparseOperator::from_csr(2, 2, row_ptr.data(), col_idx.data(), huge.data(), no_scaling),
                  bcsr24::RangeError);
  const std::vector<double> fine{1.0, -2.0};
  CHECK(SparseOperator::from_csr(2, 2, row_ptr.data(), col_idx.data(), fine.data(), no_scaling).scaling().exponent ==
        0);
}

TEST_CASE("empty matrices and moves", "[api]") {
  const std::int32_t zero = 0;
  const SparseOperator empty = SparseOperator::from_csr(0, 0, &zero, nullptr, static_cast<const double*>(nullptr));
  CHECK(empty.rows() == 0);
  CHECK(empty.nnz() == 0);
  CHECK(empty.census().stored_tiles() == 0);
  const std::vector<std::int32_t> row_ptr(6, 0);
  const SparseOperator no_entries =
      SparseOperator::from_csr(5, 9, row_ptr.data(), nullptr, static_cast<const float*>(nullptr));
  CHECK(no_entries.census().zero_tiles == 1);
  CHECK(bcsr24::from_eigen(Eigen::SparseMatrix<double>(0, 4)).cols() == 4);
  CHECK(bcsr24::from_eigen(Eigen::SparseMatrix<double>(7, 0)).rows() == 7);

  SparseOperator moved = SparseOperator::from_csr(random_csr(33, 65, 2, 5));
  const std::int64_t tiles = moved.census().stored_tiles();
  SparseOperator target = std::move(moved);
  CHECK(target.census().stored_tiles() == tiles);
  CHECK(target.rows() == 33);
}

TEST_CASE("the device side reports a missing GPU as NotSupported, and checks n first", "[api][device]") {
  const SparseOperator op = SparseOperator::from_csr(random_csr(50, 50, 2, 9));
  CHECK_FALSE(op.uploaded());
  CHECK_THROWS_AS(op.make_plan(0), bcsr24::InvalidArgument);
  if (bcsr24::query_device().available) {
    WARN("a usable GPU is present: checking the upload instead of the NotSupported path");
    op.upload();
    CHECK(op.uploaded());
    CHECK(op.device_bytes() > 0);
    CHECK(op.make_plan(8).n() == 8);
    // The CSR rows of every band that csr_cuda_cores reads are made on its first plan, and kept.
    const std::int64_t before = op.device_bytes();
    CHECK(op.make_plan(8, bcsr24::KernelKind::csr_cuda_cores).n() == 8);
    CHECK(op.device_bytes() >= before);
  } else {
    CHECK_THROWS_AS(op.upload(), bcsr24::NotSupported);
    CHECK_THROWS_AS(op.make_plan(8), bcsr24::NotSupported);
    CHECK_FALSE(op.uploaded());
  }
}

TEST_CASE("tuned choices are saved with the matrix and restored by from_file", "[api][tuning]") {
  using bcsr24::detail::StoredChoice;
  using bcsr24::detail::TunedChoice;
  using bcsr24::detail::TunedKey;
  using bcsr24::experimental::BandPaths;
  using bcsr24::experimental::TilePipeline;
  const SparseOperator op = SparseOperator::from_csr(random_csr(300, 200, 4, 3));
  TempPath plain("plain.b24"), tuned("tuned.b24");
  op.save(plain.path.string());
  CHECK(bcsr24::detail::OperatorAccess::tuned(SparseOperator::from_file(plain.path.string())).all().empty());

  const std::vector<StoredChoice> stored = {
      {TunedKey{128, bcsr24::ElementType::f16, bcsr24::ElementType::f32, "NVIDIA H100 80GB HBM3"},
       TunedChoice{BandPaths::tiles, true, TilePipeline::standard, true}, 29.5},
      {TunedKey{1, bcsr24::ElementType::f32, bcsr24::ElementType::f32, "NVIDIA H100 80GB HBM3"},
       TunedChoice{BandPaths::hybrid, false, TilePipeline::deep, false}, 3.25},
      {TunedKey{16, bcsr24::ElementType::f16, bcsr24::ElementType::f16, "NVIDIA H200"},
       TunedChoice{BandPaths::csr, true, TilePipeline::standard, false}, -1.0}};
  for (const StoredChoice& s : stored) bcsr24::detail::OperatorAccess::tuned(op).store(s);
  op.save(tuned.path.string());
  const SparseOperator back = SparseOperator::from_file(tuned.path.string());
  require_same_host(host_of(op), host_of(back));
  const std::vector<StoredChoice> restored = bcsr24::detail::OperatorAccess::tuned(back).all();
  REQUIRE(restored.size() == stored.size());
  for (std::size_t i = 0; i < stored.size(); ++i) {
    INFO("choice " << i);
    CHECK(restored[i].key == stored[i].key);
    CHECK(restored[i].choice == stored[i].choice);
    CHECK(restored[i].measured_us == stored[i].measured_us);
  }
  // What a measured plan would find for its key, and nothing for another device.
  CHECK(bcsr24::detail::OperatorAccess::tuned(back).find(stored[0].key));
  TunedKey other = stored[0].key;
  other.device = "NVIDIA A100-SXM4-80GB";
  CHECK_FALSE(bcsr24::detail::OperatorAccess::tuned(back).find(other));
  // Saving the loaded operator again writes the same file.
  TempPath again("again.b24");
  back.save(again.path.string());
  CHECK(fs::file_size(again.path) == fs::file_size(tuned.path));
}
