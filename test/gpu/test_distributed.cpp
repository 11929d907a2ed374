// The distributed operator on the GPUs of this machine (one thread per GPU, communicators from ncclCommInitAll):
// for P = 1 and, where there are several GPUs, P = 2 .. #GPUs, the product gathered from every rank is checked
// against Eigen-free float64 references with bounds from each part's arithmetic, and against the single-GPU
// product of the whole matrix. Awkward sizes, poisoned C, empty ranks and a matrix without halo included.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bcsr24/distributed_operator.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24/precision.hpp"
#include "distributed/halo_exchange.hpp"
#include "distributed/halo_plan.hpp"
#include "distributed_test_names.hpp"
#include "gpu/gpu_harness.hpp"
#include "rank_threads.hpp"
#include "test_skip.hpp"
#include "test_support.hpp"

using namespace bcsr24;
using bcsr24::detail::DistributedAccess;
using bcsr24::detail::halo_element_bytes;
using bcsr24::detail::HaloElement;
using bcsr24::detail::HaloExchange;
using bcsr24::detail::HaloExchangePlan;

namespace {

using test::Communicators;
using test::device_count;
using test::on_every_rank;

struct Product {
  std::vector<float> c;            // rows x n, gathered from every rank
  std::vector<std::int32_t> exponent;  // per global row: the largest row exponent of the parts that hold it
  std::vector<std::int32_t> halo_rows, local_rows;
};

struct Case {
  Precision precision = Precision::fp16;
  std::int32_t n = 13;
  double alpha = 1.0, beta = 0.0;
  std::uint64_t seed = 1;
};

/// B (global, cols x n): fp16 values for fp16 mode, floats for split mode; returned as the exact doubles given.
std::vector<double> make_b(std::int32_t k, const Case& cfg, std::vector<fp16_t>& b16, std::vector<float>& b32) {
  std::vector<double> exact(std::size_t(k) * cfg.n);
  std::mt19937_64 rng(cfg.seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  if (cfg.precision == Precision::split) {
    b32.resize(exact.size());
    for (std::size_t i = 0; i < exact.size(); ++i) exact[i] = b32[i] = dist(rng) * (1.0f + float(i % 7));
  } else {
    b16.resize(exact.size());
    for (std::size_t i = 0; i < exact.size(); ++i) {
      b16[i] = float_to_fp16(dist(rng));
      exact[i] = fp16_to_float(b16[i]);
    }
  }
  return exact;
}

std::vector<float> make_c0(std::int32_t rows, const Case& cfg) {
  std::vector<float> c0(std::size_t(rows) * cfg.n);
  std::mt19937_64 rng(cfg.seed + 99);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : c0) v = cfg.beta == 0.0 ? std::nanf("") : dist(rng);
  return c0;
}

/// The distributed product over P ranks (rows split by `rows`; columns likewise for square A), gathered.
Product distributed_product(const CsrMatrix& a, int ranks, const RowPartition* rows, const Case& cfg,
                            const std::vector<fp16_t>& b16, const std::vector<float>& b32,
                            const std::vector<float>& c0) {
  Communicators comms(ranks);
  DistributedOptions options;
  options.part.precision = cfg.precision;
  const RowPartition row_partition = rows ? *rows : partition_rows_by_bytes(a, ranks, options.cost);
  const RowPartition col_partition = row_partition;
  Product out;
  out.c.assign(std::size_t(a.rows) * cfg.n, std::nanf(""));
  out.exponent.assign(std::size_t(a.rows), 0);
  out.halo_rows.assign(std::size_t(ranks), 0);
  out.local_rows.assign(std::size_t(ranks), 0);
  const bool f32 = cfg.precision == Precision::split;
  on_every_rank(ranks, [&](int r) {
    const CsrMatrix mine = extract_rows(a, row_partition.begin(r), row_partition.end(r));
    const DistributedOperator op =
        DistributedOperator::from_rank_rows(mine, row_partition, col_partition, comms.of(r), options);
    const DistributedPlan plan = op.make_plan(cfg.n);
    const std::int32_t m = op.local_rows(), k = op.owned_cols(), n = cfg.n;
    const std::int32_t row0 = row_partition.begin(r), col0 = col_partition.begin(r);
    out.local_rows[std::size_t(r)] = m;
    out.halo_rows[std::size_t(r)] = op.halo_rows();
    if (DistributedAccess::halo_exchange(op).halo_rows() != op.halo_rows())  // the operator's own exchange
      throw std::runtime_error("the operator's halo exchange receives other rows than the operator reports");
    // B with a padded leading dimension (ldb = n + 3), C with ldc = n + 1: the leading dimensions are honoured.
    const std::int64_t ldb = n + 3, ldc = n + 1;
    const std::size_t elem = f32 ? 4 : 2;
    void* d_b = nullptr;
    float* d_c = nullptr;
    if (cudaMalloc(&d_b, std::max<std::size_t>(1, std::size_t(k) * ldb * elem)) != cudaSuccess ||
        cudaMalloc(reinterpret_cast<void**>(&d_c), std::max<std::size_t>(1, std::size_t(m) * ldc * 4)) != cudaSuccess)
      throw std::runtime_error("cudaMalloc failed");
    const unsigned char* b_rows = f32 ? reinterpret_cast<const unsigned char*>(b32.data()) + std::size_t(col0) * n * 4
                                      : reinterpret_cast<const unsigned char*>(b16.data()) + std::size_t(col0) * n * 2;
    if (k > 0 &&
        cudaMemcpy2D(d_b, ldb * elem, b_rows, n * elem, n * elem, std::size_t(k), cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("B upload failed");
    std::vector<float> c_rows(std::size_t(m) * ldc, std::nanf(""));
    for (std::int32_t i = 0; i < m; ++i)
      for (std::int32_t j = 0; j < n; ++j) c_rows[std::size_t(i) * ldc + j] = c0[std::size_t(row0 + i) * n + j];
    if (m > 0 && cudaMemcpy(d_c, c_rows.data(), c_rows.size() * 4, cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("C upload failed");
    // Twice: the second run reuses the plan's buffers (C poisoned again in between for beta == 0).
    for (int run = 0; run < 2; ++run) {
      if (run == 1 && m > 0 && cudaMemcpy(d_c, c_rows.data(), c_rows.size() * 4, cudaMemcpyHostToDevice) != cudaSuccess)
        throw std::runtime_error("C upload failed");
      if (f32)
        plan.run(static_cast<const float*>(d_b), ldb, d_c, ldc, float(cfg.alpha), float(cfg.beta));
      else
        plan.run(static_cast<const fp16_t*>(d_b), ldb, d_c, ldc, float(cfg.alpha), float(cfg.beta));
      if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("distributed run failed");
    }
    if (m > 0 && cudaMemcpy(c_rows.data(), d_c, c_rows.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
      throw std::runtime_error("C download failed");
    cudaFree(d_b);
    cudaFree(d_c);
    for (std::int32_t i = 0; i < m; ++i) {
      for (std::int32_t j = 0; j < n; ++j) out.c[std::size_t(row0 + i) * n + j] = c_rows[std::size_t(i) * ldc + j];
      std::int32_t e = 0;
      if (op.local_part()) e = std::max(e, detail::OperatorAccess::host(*op.local_part()).exponent_of_row(i));
      if (op.halo_part()) e = std::max(e, detail::OperatorAccess::host(*op.halo_part()).exponent_of_row(i));
      out.exponent[std::size_t(row0 + i)] = e;
    }
  });
  return out;
}

/// The single-GPU product of the whole matrix on device 0, and its rows' exponents.
Product single_product(const CsrMatrix& a, const Case& cfg, const std::vector<fp16_t>& b16,
                       const std::vector<float>& b32, const std::vector<float>& c0) {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  OperatorOptions options;
  options.precision = cfg.precision;
  const SparseOperator op = SparseOperator::from_csr(a, options);
  const SpmmPlan plan = op.make_plan(cfg.n);
  const bool f32 = cfg.precision == Precision::split;
  void* d_b = nullptr;
  float* d_c = nullptr;
  REQUIRE(cudaMalloc(&d_b, std::size_t(a.cols) * cfg.n * (f32 ? 4 : 2)) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d_c), std::size_t(a.rows) * cfg.n * 4) == cudaSuccess);
  REQUIRE(cudaMemcpy(d_b, f32 ? static_cast<const void*>(b32.data()) : static_cast<const void*>(b16.data()),
                     std::size_t(a.cols) * cfg.n * (f32 ? 4 : 2), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(d_c, c0.data(), c0.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  if (f32)
    plan.run(static_cast<const float*>(d_b), cfg.n, d_c, cfg.n, float(cfg.alpha), float(cfg.beta));
  else
    plan.run(static_cast<const fp16_t*>(d_b), cfg.n, d_c, cfg.n, float(cfg.alpha), float(cfg.beta));
  Product out;
  out.c.resize(c0.size());
  REQUIRE(cudaMemcpy(out.c.data(), d_c, out.c.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(d_b);
  cudaFree(d_c);
  out.exponent.resize(std::size_t(a.rows));
  for (std::int32_t i = 0; i < a.rows; ++i) out.exponent[std::size_t(i)] = detail::OperatorAccess::host(op).exponent_of_row(i);
  return out;
}

/// Rows P = 1, and 2 .. #GPUs where the machine has them.
std::vector<int> rank_counts() {
  std::vector<int> counts{1};
  for (int p = 2; p <= device_count(); ++p) counts.push_back(p);
  return counts;
}

CsrMatrix random_mesh(std::int32_t nx, std::int32_t ny, std::int32_t nz, int dofs, std::uint64_t seed) {
  return generate_mesh_matrix(test::randomly_numbered_mesh(nx, ny, nz, dofs, seed));
}

void check_case(const CsrMatrix& a, int ranks, const RowPartition* rows, const Case& cfg) {
  std::vector<fp16_t> b16;
  std::vector<float> b32;
  const std::vector<double> b = make_b(a.cols, cfg, b16, b32);
  const std::vector<float> c0 = make_c0(a.rows, cfg);
  const Product dist = distributed_product(a, ranks, rows, cfg, b16, b32, c0);
  const Product single = single_product(a, cfg, b16, b32, c0);
  // 16-bit B is given exactly; split takes fp32 B. Two more additions than one operator's product: the halo part's
  // sum added to the local part's.
  const test::ModeArithmetic m =
      test::mode_arithmetic(cfg.precision, cfg.precision == Precision::split ? ElementType::f32 : ElementType::f16);
  const test::ModeCheck d = test::check_mode_product(a, cfg.n, b, c0, cfg.alpha, cfg.beta, dist.c, dist.exponent, m, 18);
  const test::ModeCheck s = test::check_mode_product(a, cfg.n, b, c0, cfg.alpha, cfg.beta, single.c, single.exponent, m, 18);
  INFO("P = " << ranks << ", " << precision_name(cfg.precision) << ", n = " << cfg.n << ", beta = " << cfg.beta
              << ": distributed max error/bound " << d.max_ratio << ", single " << s.max_ratio);
  CHECK(d.checked == std::int64_t(a.rows) * cfg.n);
  CHECK(d.violations == 0);
  CHECK(s.violations == 0);
  CHECK(d.output_norm > 0.0);
  // Against the single-GPU product: both lie within their bounds of the same float64 value, so they differ by
  // less than the sum of the two; the relative difference is printed for the record.
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < dist.c.size(); ++i) {
    diff += (double(dist.c[i]) - single.c[i]) * (double(dist.c[i]) - single.c[i]);
    norm += double(single.c[i]) * single.c[i];
  }
  const double relative = std::sqrt(diff / std::max(norm, 1e-300));
  INFO("relative difference to the single-GPU product " << relative);
  CHECK(relative < (cfg.precision == Precision::split ? 1e-6 : 2e-3));
}

}  // namespace

TEST_CASE("distributed product matches float64 and the single-GPU product", "[distributed]") {
  const CsrMatrix mesh = random_mesh(11, 9, 7, 2, 5);              // 1386 rows: not a multiple of 16
  const CsrMatrix scattered = test::scattered_csr(1237, 1237, 9, 3);  // random columns: large halos
  for (const int ranks : rank_counts()) {
    for (const Precision precision : {Precision::fp16, Precision::split}) {
      for (const CsrMatrix* a : {&mesh, &scattered}) {
        Case cfg;
        cfg.precision = precision;
        cfg.n = 13;
        cfg.seed = 11 + std::uint64_t(ranks);
        check_case(*a, ranks, nullptr, cfg);
        cfg.n = 40;
        cfg.alpha = -1.5;
        cfg.beta = 0.75;
        check_case(*a, ranks, nullptr, cfg);
      }
    }
  }
}

TEST_CASE("distributed product with an empty rank and without halo", "[distributed][.needs_2gpus]") {
  const int ranks = std::min(device_count(), 3);
  if (ranks < 2) BCSR24_SKIP("one GPU: the empty-rank and no-halo cases need two");
  // Rank 0 owns no rows (and no B rows); the others split the rest.
  const CsrMatrix a = random_mesh(9, 8, 7, 1, 9);
  RowPartition rows;
  rows.offsets.assign(std::size_t(ranks) + 1, 0);
  for (int r = 1; r <= ranks; ++r) rows.offsets[std::size_t(r)] = std::int32_t(std::int64_t(a.rows) * (r - 1) / (ranks - 1));
  rows.offsets.back() = a.rows;
  Case cfg;
  cfg.n = 9;
  cfg.beta = 0.5;
  check_case(a, ranks, &rows, cfg);

  // Block diagonal, blocks aligned to the ranks: no halo anywhere, and a rank whose rows have no local entries
  // would still scale C by beta (covered by the empty-rank case above).
  std::vector<std::int32_t> ri, ci;
  std::vector<double> vi;
  const std::int32_t per = 333;
  std::mt19937_64 rng(4);
  for (int r = 0; r < ranks; ++r)
    for (std::int32_t i = 0; i < per; ++i)
      for (int q = 0; q < 7; ++q) {
        ri.push_back(r * per + i);
        ci.push_back(r * per + std::int32_t(rng() % per));
        vi.push_back(double(int(rng() % 2001) - 1000) / 1000.0);
      }
  const CsrMatrix block = csr_from_triplets(ranks * per, ranks * per, ri, ci, vi);
  RowPartition aligned;
  for (int r = 1; r <= ranks; ++r) aligned.offsets.push_back(r * per);
  check_case(block, ranks, &aligned, cfg);
}

TEST_CASE("distributed plans refuse what they cannot do", "[distributed]") {
  Communicators comms(1);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const CsrMatrix a = random_mesh(5, 5, 5, 1, 1);
  const DistributedOperator op = DistributedOperator::from_global(a, comms.of(0));
  CHECK(op.halo_rows() == 0);
  CHECK(op.send_rows() == 0);
  CHECK_FALSE(DistributedAccess::halo_exchange(op).moves_data());
  PlanOptions half_out;
  half_out.output = ElementType::f16;
  CHECK_THROWS_AS(op.make_plan(8, half_out), InvalidArgument);
  CHECK_THROWS_AS(op.make_plan(0), InvalidArgument);
  const DistributedPlan plan = op.make_plan(8);
  CHECK(plan.input() == ElementType::f16);
  float* c = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&c), std::size_t(a.rows) * 8 * 4) == cudaSuccess);
  CHECK_THROWS_AS(plan.run(static_cast<const float*>(c), 8, c, 8, 1.0f, 0.0f), InvalidArgument);  // fp32 B to fp16
  CHECK_THROWS_AS(plan.run(static_cast<const fp16_t*>(nullptr), 8, c, 8, 1.0f, 0.0f), InvalidArgument);
  cudaFree(c);
  // A communicator that does not match the rank passed.
  CHECK_THROWS_AS(DistributedOperator::from_global(a, NcclCommunicator{comms.comms[0], 1, 2}), InvalidArgument);
}

TEST_CASE("halo exchange moves exactly the requested rows, for every element type", "[distributed][halo]") {
  const CsrMatrix a = random_mesh(9, 7, 6, 2, 3);  // 756 rows, random node order: every rank needs many rows
  const std::int32_t n = 5;                       // not a multiple of 8: ld pads the halo rows
  const std::int64_t ldb = n + 3;
  // B's entry (i, j) as a bit pattern that no element type alters on the way (the exchange copies bits).
  const auto pattern = [](std::int64_t i, std::int64_t j) { return std::uint64_t(i * 64 + j + 1); };
  for (const int ranks : rank_counts()) {
    const RowPartition rows = partition_rows_by_bytes(a, ranks);
    Communicators comms(ranks);
    std::vector<std::int64_t> mismatches(std::size_t(ranks), 0), expected(std::size_t(ranks), 0),
        received_bytes(std::size_t(ranks), 0), sent_bytes(std::size_t(ranks), 0);
    on_every_rank(ranks, [&](int r) {
      const RankBlock block = split_rank_rows(extract_rows(a, rows.begin(r), rows.end(r)), r, rows, rows);
      const HaloExchange exchange(block, rows, comms.of(r));
      if (exchange.halo_rows() != block.halo_cols()) ++mismatches[std::size_t(r)];
      cudaStream_t stream = nullptr;
      if (cudaStreamCreate(&stream) != cudaSuccess) throw std::runtime_error("cudaStreamCreate failed");
      for (const HaloElement element : {HaloElement::f64, HaloElement::f32, HaloElement::f16}) {
        const int bytes = halo_element_bytes(element);
        const HaloExchangePlan plan = exchange.make_plan(n, element);
        std::vector<unsigned char> owned(std::size_t(rows.count(r) * ldb * bytes), 0);
        for (std::int64_t i = 0; i < rows.count(r); ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            const std::uint64_t v = pattern(rows.begin(r) + i, j);
            std::memcpy(&owned[std::size_t((i * ldb + j) * bytes)], &v, std::size_t(bytes));
          }
        void* b = nullptr;
        if (cudaMalloc(&b, std::max<std::size_t>(owned.size(), 1)) != cudaSuccess ||
            cudaMemcpy(b, owned.data(), owned.size(), cudaMemcpyHostToDevice) != cudaSuccess)
          throw std::runtime_error("upload failed");
        plan.start(b, ldb, stream);
        plan.wait(stream);
        std::vector<unsigned char> halo(std::size_t(exchange.halo_rows() * plan.ld() * bytes));
        if (!halo.empty() && cudaMemcpyAsync(halo.data(), plan.halo(), halo.size(), cudaMemcpyDeviceToHost,
                                             stream) != cudaSuccess)
          throw std::runtime_error("download failed");
        if (cudaStreamSynchronize(stream) != cudaSuccess) throw std::runtime_error("exchange failed");
        cudaFree(b);
        for (std::int32_t h = 0; h < exchange.halo_rows(); ++h)
          for (std::int64_t j = 0; j < n; ++j) {
            const std::uint64_t want = pattern(block.halo_global[std::size_t(h)], j);
            std::uint64_t got = 0;
            std::memcpy(&got, &halo[std::size_t((h * plan.ld() + j) * bytes)], std::size_t(bytes));
            const std::uint64_t mask = bytes == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * bytes)) - 1;
            if (got != (want & mask)) ++mismatches[std::size_t(r)];
            ++expected[std::size_t(r)];
          }
        received_bytes[std::size_t(r)] += plan.bytes_received();
        sent_bytes[std::size_t(r)] += plan.bytes_sent();
      }
      cudaStreamDestroy(stream);
    });
    INFO("ranks " << ranks);
    std::int64_t total_expected = 0, total_sent = 0, total_received = 0;
    for (int r = 0; r < ranks; ++r) {
      CHECK(mismatches[std::size_t(r)] == 0);
      total_expected += expected[std::size_t(r)];
      total_sent += sent_bytes[std::size_t(r)];
      total_received += received_bytes[std::size_t(r)];
    }
    CHECK(total_sent == total_received);  // every row sent is received once
    if (ranks == 1) CHECK(total_expected == 0);
    if (ranks > 1) CHECK(total_expected > 0);  // a randomly numbered mesh has a halo on every split
  }
}

namespace {

/// The fp16 product through from_global with `method`, every rank taking its B rows from the caller-numbered B and
/// putting its C rows back into the caller-numbered C: what a program does with a renumbered operator.
struct GlobalProduct {
  std::vector<float> c;
  std::int64_t halo_rows = 0, nnz = 0;
  PartitionMethod used = PartitionMethod::automatic;
};

GlobalProduct global_product(const CsrMatrix& a, int ranks, PartitionMethod method, std::int32_t n,
                             const std::vector<fp16_t>& b16) {
  Communicators comms(ranks);
  DistributedOptions options;
  options.partition = method;
  GlobalProduct out;
  out.c.assign(std::size_t(a.rows) * n, std::nanf(""));
  std::vector<PartitionMethod> used(static_cast<std::size_t>(ranks));
  std::vector<std::int64_t> halo(static_cast<std::size_t>(ranks)), nnz(static_cast<std::size_t>(ranks));
  on_every_rank(ranks, [&](int r) {
    const DistributedOperator op = DistributedOperator::from_global(a, comms.of(r), options);
    const DistributedPlan plan = op.make_plan(n);
    const std::int32_t m = op.local_rows();
    std::vector<fp16_t> b_mine(std::size_t(m) * n);
    take_rank_rows(b16.data(), n, n, op.row_partition(), op.row_order(), r, b_mine.data(), n);
    void* d_b = nullptr;
    float* d_c = nullptr;
    if (cudaMalloc(&d_b, std::max<std::size_t>(1, b_mine.size() * 2)) != cudaSuccess ||
        cudaMalloc(reinterpret_cast<void**>(&d_c), std::max<std::size_t>(1, std::size_t(m) * n * 4)) != cudaSuccess)
      throw std::runtime_error("cudaMalloc failed");
    if (m > 0 && cudaMemcpy(d_b, b_mine.data(), b_mine.size() * 2, cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("B upload failed");
    plan.run(static_cast<const fp16_t*>(d_b), n, d_c, n, 1.0f, 0.0f);
    std::vector<float> c_mine(std::size_t(m) * n);
    if (cudaDeviceSynchronize() != cudaSuccess ||
        (m > 0 && cudaMemcpy(c_mine.data(), d_c, c_mine.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess))
      throw std::runtime_error("distributed run failed");
    cudaFree(d_b);
    cudaFree(d_c);
    put_rank_rows(c_mine.data(), n, n, op.row_partition(), op.row_order(), r, out.c.data(), n);
    used[std::size_t(r)] = op.partition_method();
    halo[std::size_t(r)] = op.halo_rows();
    nnz[std::size_t(r)] = op.local_nnz() + op.halo_nnz();
    // Every rank learnt every rank's figures.
    if (r == 0)
      for (int q = 0; q < ranks; ++q) {
        out.halo_rows += op.rank_halo_rows(q);
        out.nnz += op.rank_nnz(q);
      }
  });
  for (int r = 0; r < ranks; ++r) {
    CHECK(used[std::size_t(r)] == used[0]);
    CHECK(halo[std::size_t(r)] >= 0);
  }
  std::int64_t halo_sum = 0, nnz_sum = 0;
  for (int r = 0; r < ranks; ++r) {
    halo_sum += halo[std::size_t(r)];
    nnz_sum += nnz[std::size_t(r)];
  }
  CHECK(out.halo_rows == halo_sum);
  CHECK(out.nnz == nnz_sum);
  out.used = used[0];
  return out;
}

double relative_difference(const std::vector<float>& x, const std::vector<float>& y) {
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    norm += double(y[i]) * y[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

}  // namespace

TEST_CASE("from_global with a METIS partition: the caller's numbering in and out, a smaller halo", "[distributed][metis]") {
  const CsrMatrix a = random_mesh(14, 12, 10, 1, 21);  // randomly numbered: contiguous ranges cut everywhere
  const std::int32_t n = 16;
  Case cfg;
  cfg.n = n;
  std::vector<fp16_t> b16;
  std::vector<float> b32;
  make_b(a.cols, cfg, b16, b32);
  const std::vector<float> zeros(std::size_t(a.rows) * n, 0.0f);
  const Product single = single_product(a, cfg, b16, b32, zeros);
  for (const int ranks : rank_counts()) {
    INFO("P = " << ranks);
    const GlobalProduct contiguous = global_product(a, ranks, PartitionMethod::contiguous, n, b16);
    CHECK(contiguous.used == PartitionMethod::contiguous);
    CHECK(contiguous.nnz == a.nnz());
    CHECK(relative_difference(contiguous.c, single.c) < 2e-3);
    if (!metis_available()) continue;
    const GlobalProduct metis = global_product(a, ranks, PartitionMethod::metis, n, b16);
    CHECK(metis.used == (ranks > 1 ? PartitionMethod::metis : PartitionMethod::contiguous));
    CHECK(metis.nnz == a.nnz());
    INFO("halo rows: contiguous " << contiguous.halo_rows << ", metis " << metis.halo_rows);
    CHECK(relative_difference(metis.c, single.c) < 2e-3);
    if (ranks > 1) CHECK(metis.halo_rows * 3 < contiguous.halo_rows);
  }
}

TEST_CASE("from_global with fewer rows than ranks: empty ranks and a correct product", "[distributed][.needs_2gpus]") {
  const int ranks = std::min(device_count(), 4);
  if (ranks < 2) BCSR24_SKIP("one GPU: fewer rows than ranks needs two");
  const std::int32_t n = 8;
  // ranks - 1 rows: at least one rank owns nothing, whatever the method.
  std::vector<std::int32_t> ri, ci;
  std::vector<double> vi;
  for (std::int32_t i = 0; i < ranks - 1; ++i)
    for (std::int32_t j = 0; j < ranks - 1; ++j) {
      ri.push_back(i);
      ci.push_back(j);
      vi.push_back(i == j ? 4.0 : -1.0);
    }
  const CsrMatrix a = csr_from_triplets(ranks - 1, ranks - 1, ri, ci, vi);
  Case cfg;
  cfg.n = n;
  std::vector<fp16_t> b16;
  std::vector<float> b32;
  make_b(a.cols, cfg, b16, b32);
  const Product single = single_product(a, cfg, b16, b32, std::vector<float>(std::size_t(a.rows) * n, 0.0f));
  for (const PartitionMethod method : {PartitionMethod::automatic, PartitionMethod::contiguous}) {
    const GlobalProduct product = global_product(a, ranks, method, n, b16);
    CHECK(product.used == PartitionMethod::contiguous);
    CHECK(relative_difference(product.c, single.c) < 2e-3);
  }
}

TEST_CASE("DistributedPlan::run with addends: the terms in the local pass equal a second pass on the host",
          "[distributed]") {
  const CsrMatrix a = random_mesh(10, 9, 8, 2, 31);  // square: B rows follow A's rows
  const std::int32_t n = 16;
  for (const int ranks : rank_counts()) {
    INFO("P = " << ranks);
    Communicators comms(ranks);
    DistributedOptions options;
    options.part.precision = Precision::split;
    options.partition = PartitionMethod::contiguous;
    std::vector<double> worst(static_cast<std::size_t>(ranks), 0.0), norm(static_cast<std::size_t>(ranks), 0.0);
    on_every_rank(ranks, [&](int r) {
      const DistributedOperator op = DistributedOperator::from_global(a, comms.of(r), options);
      PlanOptions plan_options;
      plan_options.input = ElementType::f32;
      const DistributedPlan plan = op.make_plan(n, plan_options);
      const std::size_t count = std::size_t(op.local_rows()) * n;
      std::mt19937_64 rng(77 + std::uint64_t(r));
      std::uniform_real_distribution<float> value(-1.0f, 1.0f);
      std::vector<float> b(count), d(count), c0(count);
      for (std::size_t i = 0; i < count; ++i) {
        b[i] = value(rng);
        d[i] = value(rng);
        c0[i] = value(rng);
      }
      float *d_b = nullptr, *d_d = nullptr, *d_c = nullptr, *d_plain = nullptr;
      const std::size_t bytes = std::max<std::size_t>(1, count * 4);
      if (cudaMalloc(reinterpret_cast<void**>(&d_b), bytes) != cudaSuccess ||
          cudaMalloc(reinterpret_cast<void**>(&d_d), bytes) != cudaSuccess ||
          cudaMalloc(reinterpret_cast<void**>(&d_c), bytes) != cudaSuccess ||
          cudaMalloc(reinterpret_cast<void**>(&d_plain), bytes) != cudaSuccess)
        throw std::runtime_error("cudaMalloc failed");
      if (count > 0 && (cudaMemcpy(d_b, b.data(), count * 4, cudaMemcpyHostToDevice) != cudaSuccess ||
                        cudaMemcpy(d_d, d.data(), count * 4, cudaMemcpyHostToDevice) != cudaSuccess ||
                        cudaMemcpy(d_c, c0.data(), count * 4, cudaMemcpyHostToDevice) != cudaSuccess ||
                        cudaMemcpy(d_plain, c0.data(), count * 4, cudaMemcpyHostToDevice) != cudaSuccess))
        throw std::runtime_error("upload failed");
      // B itself as one addend (as the Chebyshev recurrence does), a separate block as the other.
      const OutputAddend terms[2] = {{d_b, n, 0.5f}, {d_d, n, -2.0f}};
      plan.run(d_b, n, d_c, n, 1.5f, 0.25f, terms, 2);
      plan.run(d_b, n, d_plain, n, 1.5f, 0.25f);
      std::vector<float> fused(count), plain(count);
      if (cudaDeviceSynchronize() != cudaSuccess ||
          (count > 0 && (cudaMemcpy(fused.data(), d_c, count * 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
                         cudaMemcpy(plain.data(), d_plain, count * 4, cudaMemcpyDeviceToHost) != cudaSuccess)))
        throw std::runtime_error("run failed");
      for (std::size_t i = 0; i < count; ++i) {
        const double expected = double(plain[i]) + 0.5 * b[i] - 2.0 * d[i];
        worst[std::size_t(r)] = std::max(worst[std::size_t(r)], std::abs(double(fused[i]) - expected));
        norm[std::size_t(r)] = std::max(norm[std::size_t(r)], std::abs(expected));
      }
      cudaFree(d_b);
      cudaFree(d_d);
      cudaFree(d_c);
      cudaFree(d_plain);
    });
    for (int r = 0; r < ranks; ++r) {
      CHECK(norm[std::size_t(r)] > 0.0);
      CHECK(worst[std::size_t(r)] <= 1e-5 * norm[std::size_t(r)]);
    }
  }
}
