// spmm_run's check and kernel choice, tested directly (apps/spmm_run: check_rows, check_reference,
// kernel_choice), through the public accessor the check stands on (SparseOperator::stored_rows) and end to end:
// which rows it draws, that its reference equals an exact fp64 product on them, that its error figures hold for
// the CPU product, what memory and time it takes, and what --kernel all runs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "bcsr24/error.hpp"
#include "bcsr24/reference.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "check_reference.hpp"
#include "check_rows.hpp"
#include "cli.hpp"
#include "kernel_choice.hpp"
#include "random_fill.hpp"
#include "spmm_run_harness.hpp"

namespace {

using namespace bcsr24;
using namespace bcsr24::spmm_run;
using namespace spmm_run_test;

/// Row pointers of a matrix whose row i has length_of(i) entries (the columns do not matter to the row choice).
template <typename LengthOf>
std::vector<std::int32_t> row_pointers(std::int32_t rows, LengthOf length_of) {
  std::vector<std::int32_t> ptr(static_cast<std::size_t>(rows) + 1, 0);
  for (std::int32_t i = 0; i < rows; ++i) ptr[std::size_t(i) + 1] = ptr[std::size_t(i)] + length_of(i);
  return ptr;
}

}  // namespace

TEST_CASE("draw_distinct draws distinct rows uniformly, reproducibly from the seed", "[app][check]") {
  const std::vector<std::int32_t> a = draw_distinct(1000, 300, 7), b = draw_distinct(1000, 300, 7);
  CHECK(a == b);
  CHECK(a != draw_distinct(1000, 300, 8));
  REQUIRE(a.size() == 300);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(std::adjacent_find(a.begin(), a.end()) == a.end());
  CHECK(a.front() >= 0);
  CHECK(a.back() < 1000);
  CHECK(draw_distinct(50, 50, 1).size() == 50);  // the whole population
  // Uniform: over many draws every tenth of the population is drawn about a tenth of the time.
  std::vector<int> decile(10, 0);
  for (std::uint64_t seed = 0; seed < 200; ++seed)
    for (const std::int32_t row : draw_distinct(100000, 100, seed)) ++decile[std::size_t(row / 10000)];
  for (const int count : decile) CHECK(std::abs(count - 2000) < 250);  // 2000 expected, sd ~42
}

TEST_CASE("choose_check_rows: every row where it is cheap, else a sample with the longest rows and both ends",
          "[app][check]") {
  SECTION("small products are checked in full") {
    const std::vector<std::int32_t> ptr = row_pointers(1000, [](std::int32_t) { return 30; });
    const CheckRows rows = choose_check_rows(1000, 128, 30000, ptr.data(), 4096, 1);
    CHECK(rows.full);
    CHECK(rows.rows.size() == 1000);
    CHECK(rows.description == "all 1000 rows");
  }
  SECTION("large products: uniform draw, the 16 longest rows, the first and last 8") {
    const std::int32_t n_rows = 500000;
    // Rows 1000, 2000, ..., 20000 are long, 1000 being the longest; the rest have 10 entries.
    const auto length_of = [](std::int32_t i) { return i % 1000 == 0 && i > 0 && i <= 20000 ? 200000 - i : 10; };
    const std::vector<std::int32_t> ptr = row_pointers(n_rows, length_of);
    const CheckRows rows = choose_check_rows(n_rows, 64, ptr.back(), ptr.data(), 4096, 3);
    REQUIRE_FALSE(rows.full);
    CHECK(rows.uniform == 4096);
    CHECK(rows.longest == kLongestRows);
    CHECK(rows.ends == 2 * kEndRows);
    const std::set<std::int32_t> chosen(rows.rows.begin(), rows.rows.end());
    CHECK(chosen.size() == rows.rows.size());
    CHECK(rows.rows.size() >= 4096);
    CHECK(rows.rows.size() <= 4096 + kLongestRows + 2 * kEndRows);
    for (std::int32_t i = 1000; i <= 16000; i += 1000) CHECK(chosen.count(i) == 1);  // the 16 longest
    for (std::int32_t i = 0; i < kEndRows; ++i) {
      CHECK(chosen.count(i) == 1);
      CHECK(chosen.count(n_rows - 1 - i) == 1);
    }
    CHECK(rows.description.find("4096 rows drawn uniformly (seed 3)") != std::string::npos);
    CHECK(rows.description.find("16 longest") != std::string::npos);
  }
  SECTION("without row lengths (a .b24 input) there are no longest rows, and the description says why") {
    const CheckRows rows = choose_check_rows(1 << 20, 128, std::int64_t{1} << 27, nullptr, 100, 1);
    REQUIRE_FALSE(rows.full);
    CHECK(rows.longest == 0);
    CHECK(rows.rows.size() == 100 + 2 * kEndRows);
    CHECK(rows.description.find("not known for a .b24 input") != std::string::npos);
  }
  SECTION("rows too long to decode within the memory limit are left out, and said to be") {
    const std::int32_t n_rows = 200000;
    const auto huge = static_cast<std::int32_t>(kMaxCheckedRowNnz + 1);
    const std::vector<std::int32_t> ptr = row_pointers(n_rows, [&](std::int32_t i) { return i == 500 ? huge : 4; });
    const CheckRows rows = choose_check_rows(n_rows, 128, ptr.back(), ptr.data(), 4096, 1);
    CHECK(rows.too_long == 1);
    CHECK(std::find(rows.rows.begin(), rows.rows.end(), 500) == rows.rows.end());
    CHECK(rows.description.find("left out") != std::string::npos);
  }
  SECTION("a wide product draws fewer rows, so that their reference stays within the memory limit") {
    const CheckRows rows = choose_check_rows(1 << 30, 1 << 16, std::int64_t{1} << 31, nullptr, 4096, 1);
    CHECK(rows.uniform < 4096);
    CHECK(std::int64_t(rows.rows.size()) * (std::int64_t{1} << 16) * 12 <= kCheckMemoryLimit / 4);
    CHECK(rows.description.find("cut from 4096") != std::string::npos);
  }
}

TEST_CASE("the check's host memory stays under 1 GiB for a 100M-nonzero matrix at n = 128", "[app][check]") {
  // --mesh 80x80x80,dofs=3 (gpu_check.sh's check step): 1.5M rows of at most 81 entries, 121M nonzeros. Its
  // memory is computed from the rows the check takes, without building the matrix (every row given 81 entries).
  const MeshSpec mesh = parse_mesh_spec("80x80x80,dofs=3");
  const std::int64_t nnz = mesh_nonzeros(mesh);
  const std::int32_t n_rows = 80 * 80 * 80 * 3;
  REQUIRE(nnz >= 100000000);
  const std::vector<std::int32_t> ptr = row_pointers(n_rows, [](std::int32_t) { return 81; });
  const CheckRows rows = choose_check_rows(n_rows, 128, nnz, ptr.data(), 4096, 1);
  REQUIRE_FALSE(rows.full);
  std::int64_t largest_chunk = 0;
  for (const auto& [first, last] : check_chunks(rows.rows, ptr.data())) {
    std::int64_t entries = 0;
    for (std::size_t k = first; k < last; ++k) entries += ptr[std::size_t(rows.rows[k]) + 1] - ptr[std::size_t(rows.rows[k])];
    largest_chunk = std::max(largest_chunk, entries);
  }
  const std::int64_t bytes = check_host_bytes(rows.rows.size(), largest_chunk, 128, n_rows, 16);
  INFO("check host bytes " << bytes);
  CHECK(bytes < std::int64_t{64} << 20);  // about 20 MiB: far under the 1 GiB limit
  // The old check held the fp64 product of every row and B in fp64: 1.5M x 128 x 8 bytes alone is 1.5 GiB.
  CHECK(bytes * 50 < std::int64_t(n_rows) * 128 * 8);
  // The worst the limits allow (2^31 rows, the widest n the cut allows, the longest row decoded) stays under it.
  const CheckRows wide = choose_check_rows(std::numeric_limits<std::int32_t>::max(), 4096, std::int64_t{1} << 31,
                                           nullptr, 1 << 20, 1);
  CHECK(check_host_bytes(wide.rows.size(), kMaxCheckedRowNnz, 4096, std::numeric_limits<std::int32_t>::max(), 16) <
        kCheckMemoryLimit);
}

TEST_CASE("SparseOperator::stored_rows equals the rows of stored_csr in every layout and order", "[app][check]") {
  const CsrMatrix a = generate_mesh_matrix(parse_mesh_spec("9x7x5,dofs=2,order=random"));
  for (const TileLayout layout : {TileLayout::aligned, TileLayout::condensed})
    for (const Reordering reorder : {Reordering::none, Reordering::rcm}) {
      OperatorOptions options;
      options.layout = layout;
      options.reorder = reorder;
      options.precision = reorder == Reordering::rcm ? Precision::split : Precision::fp16;
      const SparseOperator op = SparseOperator::from_csr(a, options);
      const CsrMatrix whole = op.stored_csr();
      const std::vector<std::int32_t> rows = {0, 1, 17, 100, 101, 102, 333, op.rows() - 1};
      const CsrMatrix some = op.stored_rows(rows);
      CAPTURE(layout_name(layout), reordering_name(reorder));
      REQUIRE(some.rows == std::int32_t(rows.size()));
      CHECK(some.cols == whole.cols);
      for (std::size_t k = 0; k < rows.size(); ++k) {
        const auto begin = whole.row_ptr[std::size_t(rows[k])], end = whole.row_ptr[std::size_t(rows[k]) + 1];
        CHECK(std::vector<std::int32_t>(some.col_idx.begin() + some.row_ptr[k], some.col_idx.begin() + some.row_ptr[k + 1]) ==
              std::vector<std::int32_t>(whole.col_idx.begin() + begin, whole.col_idx.begin() + end));
        CHECK(std::vector<double>(some.values.begin() + some.row_ptr[k], some.values.begin() + some.row_ptr[k + 1]) ==
              std::vector<double>(whole.values.begin() + begin, whole.values.begin() + end));
      }
      CHECK(op.stored_rows({}).rows == 0);
      CHECK_THROWS_AS(op.stored_rows({5, 5}), InvalidArgument);
      CHECK_THROWS_AS(op.stored_rows({op.rows()}), InvalidArgument);
    }
}

TEST_CASE("the sampled reference is the exact fp64 product on its rows, and its figures hold for the CPU product",
          "[app][check]") {
  // 24000 rows, 1.7M nonzeros: at n = 64 the full check would exceed kFullCheckWork, so 500 rows are sampled.
  const CsrMatrix a = generate_mesh_matrix(parse_mesh_spec("20x20x20,dofs=3,order=random"));
  const SparseOperator op = SparseOperator::from_csr(a, {});
  const std::int32_t n = 64;
  const double alpha = -1.5, beta = 0.25;
  const std::vector<fp16_t> b = apps::random_fp16(std::int64_t(a.cols) * n, 11);
  const std::vector<fp16_t> c0 = apps::random_fp16(std::int64_t(a.rows) * n, 12);
  const CheckProduct product{n, b.data(), c0.data(), alpha, beta};
  const Reference reference = compute_reference(op, &a, product, 500, 5, false);
  REQUIRE_FALSE(reference.checked.full);
  REQUIRE(reference.checked.rows.size() >= 500);
  CHECK(reference.host_bytes > 0);
  CHECK(reference.host_bytes < std::int64_t{16} << 20);

  // Exact: the same sums in fp64 from the CSR as read.
  double worst = 0.0;
  for (std::size_t k = 0; k < reference.checked.rows.size(); ++k) {
    const std::int32_t row = reference.checked.rows[k];
    for (std::int32_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::int32_t e = a.row_ptr[std::size_t(row)]; e < a.row_ptr[std::size_t(row) + 1]; ++e)
        sum += a.values[std::size_t(e)] * fp16_to_float(b[std::size_t(a.col_idx[std::size_t(e)]) * n + j]);
      const double want = alpha * sum + beta * fp16_to_float(c0[std::size_t(row) * n + j]);
      worst = std::max(worst, std::abs(reference.c[k * n + j] - want) / std::max(1.0, std::abs(want)));
    }
  }
  CHECK(worst < 1e-13);

  // The CPU product multiplies the stored A in double: its error is the storage error, which the typical figure
  // takes exactly; it stays within the bound, and the bound is far under the failure threshold.
  std::vector<float> c(std::size_t(a.rows) * n);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = fp16_to_float(c0[i]);
  reference_spmm(op, n, b.data(), n, c.data(), n, alpha, beta);
  const double error = relative_error(reference, [&](std::size_t k, std::size_t j) {
    return double(c[std::size_t(reference.checked.rows[k]) * n + j]);
  });
  CHECK(error > 0.0);
  CHECK(error <= reference.f32_output.bound);
  CHECK(error == Approx(reference.f32_output.typical).epsilon(0.05));
  CHECK(reference.f32_output.bound < 1e-2);
  // A wrong product is caught: one checked row off by 1% of the norm fails the threshold.
  std::vector<float> wrong = c;
  const std::size_t bad_row = std::size_t(reference.checked.rows[reference.checked.rows.size() / 2]);
  wrong[bad_row * n] += float(0.02 * reference.norm);
  CHECK(relative_error(reference, [&](std::size_t k, std::size_t j) {
          return double(wrong[std::size_t(reference.checked.rows[k]) * n + j]);
        }) > 1e-2);
}

TEST_CASE("kernel choice: --kernel all runs what applies to the precision and names why the rest does not",
          "[app][kernels]") {
  const KernelChoice fp16 = choose_kernels("all", Precision::fp16, true);
  CHECK(fp16.applicable.size() == all_kernels().size());
  CHECK(fp16.not_applicable.empty());
  for (const Precision precision : {Precision::bf16, Precision::split}) {
    const KernelChoice choice = choose_kernels("all", precision, false);
    CHECK(choice.applicable ==
          std::vector<KernelKind>{KernelKind::split_pipelined, KernelKind::csr_cuda_cores, KernelKind::automatic});
    CHECK(choice.not_applicable.empty());
    CHECK_THROWS_AS(choose_kernels("split_pipelined", precision, true), apps::UsageError);
    CHECK(choose_kernels("split_pipelined", precision, false).applicable.size() == 1);
    // fp16 output needs fp16 A: nothing applies.
    CHECK_THROWS_WITH(choose_kernels("all", precision, true), Catch::Contains("fp16 output"));
  }
}

// ---- end to end ----

TEST_CASE("spmm_run checks every row of a small product, and a sample of rows of a large one", "[app][check]") {
  TempDir dir;
  const std::string matrix = std::string(BCSR24_TEST_DATA_DIR) + "/xdys_1000x1000_2d3s.mtx";
  const json full = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 13 --beta 0.5"));
  CHECK(full.at("check").at("rows") == "all");
  CHECK(full.at("check").at("checked_rows") == 1000);
  CHECK_FALSE(full.at("check").contains("sampled_rows"));
  check_cpu_result(full);
  // At n = 500 the work is over kFullCheckWork: a sample; but --check-rows at least the row count (as the default
  // 4096 is here) checks every row.
  CHECK(parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 500 --check-rows 100")).at("check").at("rows") ==
        "sampled");
  CHECK(parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 500 --check-rows 1000")).at("check").at("rows") ==
        "all");
  // A mesh of 24000 rows at n = 64 is over kFullCheckWork: 100 rows drawn uniformly plus the 16 longest and the
  // first and last 8, with beta != 0 so that C0 has to be taken from the sampled rows too.
  const json sampled =
      parse_json(run_spmm(dir, "--mesh 20x20x20,dofs=3,order=random --cpu-only --json --n 64 --beta 0.5 --check-rows 100"));
  const json& check = sampled.at("check");
  CHECK(check.at("rows") == "sampled");
  CHECK(check.at("sample").at("uniform") == 100);
  CHECK(check.at("sample").at("longest") == 16);
  CHECK(check.at("sample").at("ends") == 16);
  CHECK(check.at("sampled_rows").get<int>() >= 100);
  CHECK(check.at("sampled_rows").get<int>() <= 132);
  CHECK(check.at("checked_rows") == check.at("sampled_rows"));
  CHECK(check.at("description").get<std::string>().find("100 rows drawn uniformly (seed 1)") != std::string::npos);
  CHECK(check.at("host_bytes").get<double>() < 16.0 * 1024 * 1024);
  check_cpu_result(sampled);
  // The same product checked in full (--check-rows covering every row) gives an error of the same size (the sample
  // is of the same population).
  const json everything =
      parse_json(run_spmm(dir, "--mesh 20x20x20,dofs=3,order=random --cpu-only --json --n 64 --beta 0.5 --check-rows 24000"));
  CHECK(everything.at("check").at("rows") == "all");
  const double sampled_error = sampled.at("results").at(0).at("rel_error").get<double>();
  const double full_error = everything.at("results").at(0).at("rel_error").get<double>();
  CHECK(sampled_error < 3.0 * full_error);
  CHECK(sampled_error > full_error / 3.0);
  // The text report says how the rows were drawn.
  const AppRun human = run_spmm(dir, "--mesh 20x20x20,dofs=3 --cpu-only --n 64 --check-rows 100");
  REQUIRE(human.exit_code == 0);
  CHECK(human.out.find("100 rows drawn uniformly (seed 1), the 16 longest rows and the first and last 8 rows") !=
        std::string::npos);
  // The old memory limit is gone: nothing skips the check.
  CHECK(run_spmm(dir, "'" + matrix + "' --cpu-only --check-limit-gib 4").exit_code == 2);
}

TEST_CASE("spmm_run checks a large generated matrix with a bounded sample and little memory", "[app][check]") {
  // 14.8M nonzeros: the old full check needed ~420 MB here (the fp64 product, B in fp64 three times, 24 bytes per
  // nonzero); the sampled one a few MiB. The peak resident growth while the reference is computed is measured by
  // spmm_run itself (VmHWM after it, against VmRSS before, with the peak reset first).
  TempDir dir;
  const json report = parse_json(run_spmm(dir, "--mesh 40x40x40,dofs=3 --cpu-only --json --n 8"));
  const json& check = report.at("check");
  CHECK(check.at("rows") == "sampled");
  CHECK(check.at("checked_rows").get<int>() >= 4096);
  const double host_bytes = check.at("host_bytes").get<double>();
  CHECK(host_bytes < 64.0 * 1024 * 1024);
  if (check.at("peak_rss_growth_bytes").is_number()) {
    CHECK(check.at("peak_rss_growth_bytes").get<double>() < 64.0 * 1024 * 1024);
  } else {
    WARN("this kernel does not let a process reset its peak resident size: growth not measured");
  }
  // A small fraction of the conversion time.
  CHECK(check.at("reference_s").get<double>() < 0.5 * report.at("preprocessing").at("convert_s").get<double>());
  check_cpu_result(report);
}

TEST_CASE("spmm_run --kernel all runs the kernels that apply and lists the others with the reason", "[app][kernels]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  bool gpu = false;
  for (const std::string precision : {"split", "bf16"}) {
    CAPTURE(precision);
    const json report = parse_json(run_spmm(dir, "'" + matrix + "' --json --n 8 --reps 2 --warmup 1 --kernel all --precision " + precision));
    const json& kernels = report.at("kernels");
    CHECK(kernels.at("requested") == "all");
    CHECK(kernels.at("applicable") == json({"split_pipelined", "csr_cuda_cores", "auto"}));
    CHECK(kernels.at("not_applicable").empty());
    gpu = report.at("gpu").at("available").get<bool>();
    if (gpu) {
      REQUIRE(report.at("results").size() == 3);  // one result per applicable kernel
      for (const json& result : report.at("results")) CHECK(result.at("rel_error").get<double>() < 1e-2);
    } else {
      check_cpu_result(report);
    }
  }
  // fp16 output needs fp16 A: on a bf16 matrix no kernel applies, and one kernel asked for is a usage error naming
  // the reason. (Without a GPU --fp16-out does not apply: the CPU path writes fp32 C and refuses nothing.)
  if (!gpu) return;
  const AppRun refused =
      run_spmm(dir, "'" + matrix + "' --n 8 --reps 1 --warmup 0 --kernel split_pipelined --fp16-out --precision bf16");
  CHECK(refused.exit_code == 2);
  require_one_error_line(refused);
  CHECK(refused.err.find("--kernel split_pipelined does not apply: fp16 output needs fp16 A and B") !=
        std::string::npos);
}

TEST_CASE("spmm_run --no-check switches the check off", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  const json unchecked = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --no-check"));
  CHECK(unchecked.at("check").at("enabled") == false);
  CHECK_FALSE(unchecked.at("check").contains("rows"));
  CHECK(unchecked.at("results").at(0).at("rel_error").is_null());
  const AppRun human = run_spmm(dir, "'" + matrix + "' --cpu-only --no-check");
  CHECK(human.exit_code == 0);
  CHECK(human.out.find("check       off (--no-check)") != std::string::npos);
}

