// Distributed operator, host side: the local/halo split of every rank (shapes, sorted halos, receive slices by
// owner, rows rebuilt exactly), the send plans as the transpose of the receive lists, and a simulated halo exchange
// whose product must match A * B.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "distributed/halo_plan.hpp"
#include "distributed_test_names.hpp"
#include "test_support.hpp"

using namespace bcsr24;

namespace {

constexpr int kMaxRanks = 8;
/// Columns of the dense B in the simulated exchange: odd, so that no row of B is a multiple of a vector width.
constexpr std::int32_t kDenseCols = 5;

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

/// A block-diagonal matrix whose blocks are the ranges of `p`: every entry's column has the row's owner, so
/// there is no halo. Values in [-1, 1), about `per_row` entries per row, some explicit zeros.
CsrMatrix block_diagonal(const RowPartition& p, int per_row, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<std::int32_t> row, col;
  std::vector<double> val;
  for (int r = 0; r < p.ranks(); ++r)
    for (std::int32_t i = p.begin(r); i < p.end(r); ++i)
      for (int k = 0; k < per_row; ++k) {
        row.push_back(i);
        col.push_back(p.begin(r) + std::int32_t(rng() % std::uint64_t(p.count(r))));
        val.push_back(k == 0 && i % 11 == 0 ? 0.0 : value(rng));
      }
  return csr_from_triplets(p.size(), p.size(), row, col, val);
}

/// Sets every 13th stored value to an explicit zero: the split must keep them as entries.
CsrMatrix with_explicit_zeros(CsrMatrix a) {
  for (std::size_t k = 0; k < a.values.size(); k += 13) a.values[k] = 0.0;
  return a;
}

/// Checks one rank's block on its own: shapes, CSR invariants, halo columns sorted and foreign, receive slices
/// owned by their peer, and every row rebuilt exactly (columns and values, explicit zeros included) from the
/// two parts.
void check_block(const CsrMatrix& a, const RankBlock& b, int r, const RowPartition& rp, const RowPartition& cp) {
  CAPTURE(r);
  const int ranks = rp.ranks();
  REQUIRE(b.rank == r);
  REQUIRE(b.row_begin == rp.begin(r));
  REQUIRE(b.col_begin == cp.begin(r));
  REQUIRE(b.col_end == cp.end(r));
  REQUIRE(b.local.rows == rp.count(r));
  REQUIRE(b.local.cols == cp.count(r));
  REQUIRE(b.halo.rows == rp.count(r));
  REQUIRE(b.halo.cols == b.halo_cols());
  CHECK_NOTHROW(validate_csr(b.local));  // sorted, unique, in range
  CHECK_NOTHROW(validate_csr(b.halo));

  // halo_global: strictly ascending, none owned by r, exactly the distinct foreign columns of r's rows.
  std::set<std::int32_t> foreign;
  for (std::int32_t i = rp.begin(r); i < rp.end(r); ++i)
    for (std::int32_t p = a.row_ptr[at(i)]; p < a.row_ptr[at(i) + 1]; ++p) {
      const std::int32_t c = a.col_idx[at(p)];
      if (c < b.col_begin || c >= b.col_end) foreign.insert(c);
    }
  CHECK(b.halo_global == std::vector<std::int32_t>(foreign.begin(), foreign.end()));
  CHECK(std::adjacent_find(b.halo_global.begin(), b.halo_global.end(), std::greater_equal<std::int32_t>()) ==
        b.halo_global.end());

  // Receive slices: ranks + 1 offsets, slice q owned by q, nothing from r itself.
  REQUIRE(b.recv_offsets.size() == at(ranks) + 1);
  CHECK(b.recv_offsets.front() == 0);
  CHECK(b.recv_offsets.back() == b.halo_cols());
  CHECK(b.recv_count(r) == 0);
  int wrong_owner = 0;
  for (int q = 0; q < ranks; ++q) {
    REQUIRE(b.recv_count(q) >= 0);
    for (std::int32_t h = b.recv_offsets[at(q)]; h < b.recv_offsets[at(q) + 1]; ++h)
      if (cp.owner(b.halo_global[at(h)]) != q) ++wrong_owner;
  }
  CHECK(wrong_owner == 0);

  // Rows rebuilt: merge local (shifted) and halo (mapped back) entries and compare with A's row.
  CHECK(b.local.nnz() + b.halo.nnz() == a.row_ptr[at(rp.end(r))] - a.row_ptr[at(rp.begin(r))]);
  int wrong_rows = 0;
  for (std::int32_t i = 0; i < b.local.rows; ++i) {
    std::vector<std::pair<std::int32_t, double>> rebuilt;
    for (std::int32_t p = b.local.row_ptr[at(i)]; p < b.local.row_ptr[at(i) + 1]; ++p)
      rebuilt.emplace_back(b.col_begin + b.local.col_idx[at(p)], b.local.values[at(p)]);
    for (std::int32_t p = b.halo.row_ptr[at(i)]; p < b.halo.row_ptr[at(i) + 1]; ++p)
      rebuilt.emplace_back(b.halo_global[at(b.halo.col_idx[at(p)])], b.halo.values[at(p)]);
    std::sort(rebuilt.begin(), rebuilt.end());
    std::vector<std::pair<std::int32_t, double>> original;
    const std::int32_t g = b.row_begin + i;
    for (std::int32_t p = a.row_ptr[at(g)]; p < a.row_ptr[at(g) + 1]; ++p)
      original.emplace_back(a.col_idx[at(p)], a.values[at(p)]);
    if (rebuilt != original) ++wrong_rows;
  }
  CHECK(wrong_rows == 0);
}

/// Splits `a`, checks every block and the send plans, then simulates the exchange of a random B (cols x n):
/// every owner packs its send buffer by send_rows, every rank fills its halo buffer slice by slice from the
/// peers' buffers, and local * B_owned + halo * B_halo must equal A's rows of A * B.
void check_distributed_product(const CsrMatrix& a, const RowPartition& rp, const RowPartition& cp, std::uint64_t seed) {
  const int ranks = rp.ranks();
  CAPTURE(ranks, rp.offsets, cp.offsets);
  REQUIRE_NOTHROW(validate_partition(rp, a.rows, "rows"));
  REQUIRE_NOTHROW(validate_partition(cp, a.cols, "cols"));

  std::vector<RankBlock> blocks;
  for (int r = 0; r < ranks; ++r) blocks.push_back(split_rank_rows(extract_rows(a, rp.begin(r), rp.end(r)), r, rp, cp));
  for (int r = 0; r < ranks; ++r) check_block(a, blocks[at(r)], r, rp, cp);
  // split_matrix is the same split done on one host.
  const std::vector<RankBlock> same = detail::split_matrix(a, rp, cp);
  REQUIRE(same.size() == blocks.size());
  for (int r = 0; r < ranks; ++r) {
    CHECK(same[at(r)].halo_global == blocks[at(r)].halo_global);
    CHECK(same[at(r)].local.col_idx == blocks[at(r)].local.col_idx);
    CHECK(same[at(r)].halo.col_idx == blocks[at(r)].halo.col_idx);
  }

  // Send plans: what q sends to r is, element by element, what r expects from q.
  const std::vector<HaloSendPlan> plans = detail::build_all_send_plans(blocks, cp);
  REQUIRE(plans.size() == at(ranks));
  std::int64_t sent = 0, received = 0;
  for (int q = 0; q < ranks; ++q) {
    const HaloSendPlan& plan = plans[at(q)];
    REQUIRE(plan.send_offsets.size() == at(ranks) + 1);
    CHECK(plan.send_count(q) == 0);
    CHECK(plan.total() == plan.send_offsets.back());
    sent += plan.total();
    received += blocks[at(q)].halo_cols();
    for (int r = 0; r < ranks; ++r) {
      CAPTURE(q, r);
      const RankBlock& dst = blocks[at(r)];
      REQUIRE(plan.send_count(r) == dst.recv_count(q));
      int mismatches = 0;
      for (std::int32_t k = 0; k < plan.send_count(r); ++k) {
        const std::int32_t local_row = plan.send_rows[at(plan.send_offsets[at(r)] + k)];
        if (local_row < 0 || local_row >= cp.count(q) ||
            cp.begin(q) + local_row != dst.halo_global[at(dst.recv_offsets[at(q)] + k)])
          ++mismatches;
      }
      CHECK(mismatches == 0);
    }
  }
  CHECK(sent == received);
  CHECK(detail::halo_exchange_bytes(blocks, kDenseCols, 8) == received * kDenseCols * 8);

  // The exchange. B is cols x n, row-major; rank q owns B rows [cp.begin(q), cp.end(q)).
  const std::int32_t n = kDenseCols;
  const std::vector<double> b = test::random_dense(a.cols, n, seed);
  std::vector<std::vector<double>> send_buffer(at(ranks));
  for (int q = 0; q < ranks; ++q)
    for (const std::int32_t local_row : plans[at(q)].send_rows)
      for (std::int32_t j = 0; j < n; ++j) send_buffer[at(q)].push_back(b[at(cp.begin(q) + local_row) * at(n) + at(j)]);

  double output_norm = 0.0;
  for (int r = 0; r < ranks; ++r) {
    CAPTURE(r);
    const RankBlock& blk = blocks[at(r)];
    std::vector<double> b_halo(at(blk.halo_cols()) * at(n), std::nan(""));  // NaN: an unfilled row shows
    for (int q = 0; q < ranks; ++q) {
      const HaloSendPlan& plan = plans[at(q)];
      REQUIRE(plan.send_count(r) == blk.recv_count(q));
      std::copy(send_buffer[at(q)].begin() + std::ptrdiff_t(plan.send_offsets[at(r)]) * n,
                send_buffer[at(q)].begin() + std::ptrdiff_t(plan.send_offsets[at(r) + 1]) * n,
                b_halo.begin() + std::ptrdiff_t(blk.recv_offsets[at(q)]) * n);
    }
    const double* b_owned = b.data() + at(blk.col_begin) * at(n);

    int wrong = 0;
    double worst = 0.0;
    for (std::int32_t i = 0; i < blk.local.rows; ++i) {
      std::vector<double> y(at(n), 0.0);
      for (std::int32_t p = blk.local.row_ptr[at(i)]; p < blk.local.row_ptr[at(i) + 1]; ++p)
        for (std::int32_t j = 0; j < n; ++j)
          y[at(j)] += blk.local.values[at(p)] * b_owned[at(blk.local.col_idx[at(p)]) * at(n) + at(j)];
      for (std::int32_t p = blk.halo.row_ptr[at(i)]; p < blk.halo.row_ptr[at(i) + 1]; ++p)
        for (std::int32_t j = 0; j < n; ++j)
          y[at(j)] += blk.halo.values[at(p)] * b_halo[at(blk.halo.col_idx[at(p)]) * at(n) + at(j)];
      // Reference from the global A; the sums differ only in order, so the error is bounded by a few ulps of
      // sum |a_ik b_kj|: 1e-12 of it is far above that and far below any wrong entry.
      const std::int32_t g = blk.row_begin + i;
      for (std::int32_t j = 0; j < n; ++j) {
        double ref = 0.0, scale = 0.0;
        for (std::int32_t p = a.row_ptr[at(g)]; p < a.row_ptr[at(g) + 1]; ++p) {
          const double term = a.values[at(p)] * b[at(a.col_idx[at(p)]) * at(n) + at(j)];
          ref += term;
          scale += std::abs(term);
        }
        const double err = std::abs(y[at(j)] - ref);
        if (!(err <= 1e-12 * scale)) ++wrong;  // also catches NaN from an unfilled halo row
        worst = std::max(worst, scale > 0 ? err / scale : err);
        output_norm += y[at(j)] * y[at(j)];
      }
    }
    CAPTURE(worst);
    CHECK(wrong == 0);
  }
  CHECK(output_norm > 0.0);  // a product of zeros would match anything
}

}  // namespace

TEST_CASE("split, send plans and a simulated halo exchange reproduce A * B for P = 1..8", "[distributed]") {
  const std::uint64_t seed = test::test_seed(20240611);
  CAPTURE(seed);

  MeshSpec mesh;
  mesh.nx = 7;
  mesh.ny = 6;
  mesh.nz = 5;
  mesh.dofs_per_node = 2;
  MeshSpec shuffled = mesh;
  shuffled.nx = 5;
  shuffled.order = NodeOrder::random;
  shuffled.stencil = 7;
  shuffled.seed = seed;

  struct Case {
    const char* name;
    CsrMatrix a;
  };
  const std::vector<Case> cases{
      {"random 1000 x 1000 with empty rows and columns", with_explicit_zeros(test::scattered_csr(1000, 1000, 8, seed))},
      {"3-D mesh 7x6x5, 2 dofs, 27-point, lexicographic", generate_mesh_matrix(mesh)},
      {"3-D mesh 5x6x5, 7-point, random node order", generate_mesh_matrix(shuffled)},
      {"rectangular 611 x 1237, power-law rows", with_explicit_zeros(test::power_law_graph(611, 1237, 5, seed + 3))},
      {"rectangular 1237 x 389", test::scattered_csr(1237, 389, 4, seed + 5)},
      {"5 x 7 (ranks > rows)", test::scattered_csr(5, 7, 3, seed + 6)}};

  for (const Case& c : cases)
    for (int ranks = 1; ranks <= kMaxRanks; ++ranks) {
      CAPTURE(c.name, ranks);
      const RowPartition by_bytes = partition_rows_by_bytes(c.a, ranks);
      const RowPartition uniform_rows = uniform_partition(c.a.rows, ranks);
      const bool square = c.a.rows == c.a.cols;
      // Square: B is distributed like the rows of A. Rectangular: B's rows get their own partition.
      const RowPartition uniform_cols = uniform_partition(c.a.cols, ranks);
      check_distributed_product(c.a, by_bytes, square ? by_bytes : uniform_cols, seed + std::uint64_t(ranks));
      check_distributed_product(c.a, uniform_rows, uniform_cols, seed + 100 + std::uint64_t(ranks));
    }
}

TEST_CASE("a block-diagonal matrix aligned to the partition has no halo", "[distributed]") {
  const std::uint64_t seed = test::test_seed(99);
  CAPTURE(seed);
  const CsrMatrix shape_source = test::scattered_csr(1001, 1001, 6, seed);
  for (int ranks = 1; ranks <= kMaxRanks; ++ranks)
    for (const RowPartition& p : {uniform_partition(1001, ranks), partition_rows_by_bytes(shape_source, ranks)}) {
      CAPTURE(ranks, p.offsets);
      const CsrMatrix a = block_diagonal(p, 4, seed + std::uint64_t(ranks));
      const std::vector<RankBlock> blocks = detail::split_matrix(a, p, p);
      for (const RankBlock& b : blocks) {
        CHECK(b.halo_cols() == 0);
        CHECK(b.halo.cols == 0);
        CHECK(b.halo.nnz() == 0);
        CHECK(b.halo.row_ptr == std::vector<std::int32_t>(at(b.halo.rows) + 1, 0));
        CHECK(b.recv_offsets == std::vector<std::int32_t>(at(ranks) + 1, 0));
        CHECK(b.local.nnz() == a.row_ptr[at(p.end(b.rank))] - a.row_ptr[at(p.begin(b.rank))]);
      }
      for (const HaloSendPlan& plan : detail::build_all_send_plans(blocks, p)) {
        CHECK(plan.total() == 0);
        CHECK(plan.send_offsets == std::vector<std::int32_t>(at(ranks) + 1, 0));
      }
      CHECK(detail::halo_exchange_bytes(blocks, kDenseCols, 2) == 0);
      check_distributed_product(a, p, p, seed + 7);
    }
}

TEST_CASE("split_rank_rows: empty ranks, empty matrices, a hand-checked halo", "[distributed]") {
  SECTION("a rank with no rows gets 0-row matrices with row_ptr = {0}") {
    const CsrMatrix a = test::scattered_csr(3, 3, 2, 5);
    const RowPartition p = uniform_partition(3, 5);  // ranks 3 and 4 own nothing
    const RankBlock b = split_rank_rows(extract_rows(a, 3, 3), 4, p, p);
    CHECK(b.local.rows == 0);
    CHECK(b.local.cols == 0);
    CHECK(b.local.row_ptr == std::vector<std::int32_t>{0});
    CHECK(b.halo.row_ptr == std::vector<std::int32_t>{0});
    CHECK(b.halo.cols == 0);
    CHECK(b.recv_offsets == std::vector<std::int32_t>(6, 0));
    check_distributed_product(a, p, p, 11);
  }
  SECTION("0 x 0 matrix on 3 ranks") {
    const CsrMatrix a;
    const RowPartition p = uniform_partition(0, 3);
    const std::vector<RankBlock> blocks = detail::split_matrix(a, p, p);
    REQUIRE(blocks.size() == 3);
    for (const RankBlock& b : blocks) {
      CHECK_NOTHROW(validate_csr(b.local));
      CHECK_NOTHROW(validate_csr(b.halo));
    }
    for (const HaloSendPlan& plan : detail::build_all_send_plans(blocks, p)) CHECK(plan.total() == 0);
  }
  SECTION("4 x 6 by hand on 2 ranks") {
    // Rank 0 owns rows 0-1 and columns 0-2, rank 1 rows 2-3 and columns 3-5.
    //   row 0: (0, 1.0) (4, 2.0) (5, 0.0)     row 2: (1, 5.0) (3, 6.0)
    //   row 1: (2, 3.0) (4, 4.0)              row 3: (1, 7.0) (2, 8.0) (5, 9.0)
    const CsrMatrix a = csr_from_triplets(4, 6, {0, 0, 0, 1, 1, 2, 2, 3, 3, 3}, {0, 4, 5, 2, 4, 1, 3, 1, 2, 5},
                                          {1.0, 2.0, 0.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0});
    const RowPartition rows{{0, 2, 4}};
    const RowPartition cols{{0, 3, 6}};
    const std::vector<RankBlock> blocks = detail::split_matrix(a, rows, cols);
    const RankBlock& b0 = blocks[0];
    CHECK(b0.local.row_ptr == std::vector<std::int32_t>{0, 1, 2});
    CHECK(b0.local.col_idx == std::vector<std::int32_t>{0, 2});
    CHECK(b0.halo_global == std::vector<std::int32_t>{4, 5});
    CHECK(b0.halo.row_ptr == std::vector<std::int32_t>{0, 2, 3});
    CHECK(b0.halo.col_idx == std::vector<std::int32_t>{0, 1, 0});
    CHECK(b0.halo.values == std::vector<double>{2.0, 0.0, 4.0});  // the explicit zero stays
    CHECK(b0.recv_offsets == std::vector<std::int32_t>{0, 0, 2});
    const RankBlock& b1 = blocks[1];
    CHECK(b1.local.col_idx == std::vector<std::int32_t>{0, 2});  // global 3 and 5
    CHECK(b1.local.values == std::vector<double>{6.0, 9.0});
    CHECK(b1.halo_global == std::vector<std::int32_t>{1, 2});
    CHECK(b1.halo.col_idx == std::vector<std::int32_t>{0, 0, 1});
    CHECK(b1.recv_offsets == std::vector<std::int32_t>{0, 2, 2});
    const std::vector<HaloSendPlan> plans = detail::build_all_send_plans(blocks, cols);
    CHECK(plans[0].send_offsets == std::vector<std::int32_t>{0, 0, 2});
    CHECK(plans[0].send_rows == std::vector<std::int32_t>{1, 2});  // global columns 1 and 2 to rank 1
    CHECK(plans[1].send_offsets == std::vector<std::int32_t>{0, 2, 2});
    CHECK(plans[1].send_rows == std::vector<std::int32_t>{1, 2});  // global columns 4 and 5 to rank 0
    CHECK(detail::halo_exchange_bytes(blocks, 3, 2) == 4 * 3 * 2);
  }
}

TEST_CASE("build_send_plan transposes the requests and checks them", "[distributed]") {
  const RowPartition cols{{0, 4, 4, 10}};  // rank 1 owns no columns
  const HaloSendPlan plan = build_send_plan(2, cols, {{4, 7, 9}, {}, {}});
  CHECK(plan.send_offsets == std::vector<std::int32_t>{0, 3, 3, 3});
  CHECK(plan.send_rows == std::vector<std::int32_t>{0, 3, 5});
  CHECK(plan.total() == 3);

  BCSR24_CHECK_INVALID(build_send_plan(2, cols, {{3}, {}, {}}),
                "peer 0 requests column 3, which is owned by rank 0, not by rank 2");
  BCSR24_CHECK_INVALID(build_send_plan(2, cols, {{10}, {}, {}}), "no rank (outside 0 .. 10 - 1)");
  BCSR24_CHECK_INVALID(build_send_plan(2, cols, {{-1}, {}, {}}), "requests column -1");
  BCSR24_CHECK_INVALID(build_send_plan(2, cols, {{5, 5}, {}, {}}), "not strictly ascending (5 then 5)");
  BCSR24_CHECK_INVALID(build_send_plan(2, cols, {{6, 5}, {}, {}}), "not strictly ascending");
  BCSR24_CHECK_INVALID(build_send_plan(2, cols, {{}, {}, {5}}), "from itself");
  BCSR24_CHECK_INVALID(build_send_plan(2, cols, {{}, {}}), "2 request lists for 3 ranks");
  BCSR24_CHECK_INVALID(build_send_plan(3, cols, {{}, {}, {}}), "rank 3 is outside 0 .. 2");
  BCSR24_CHECK_INVALID(build_send_plan(0, RowPartition{{0, 5, 3}}, {{}, {}}), "offsets decrease at rank 1");
}

TEST_CASE("invalid arguments are rejected with a message that says what is wrong", "[distributed]") {
  const CsrMatrix a = test::scattered_csr(20, 30, 3, 7);
  const RowPartition rows = uniform_partition(20, 2);
  const RowPartition cols = uniform_partition(30, 2);

  SECTION("partitions") {
    BCSR24_CHECK_INVALID(partition_rows_by_bytes(a, 0), "ranks is 0, needs at least 1");
    BCSR24_CHECK_INVALID(partition_rows_by_bytes(a, -3), "ranks is -3");
    BCSR24_CHECK_INVALID(uniform_partition(10, 0), "ranks is 0");
    BCSR24_CHECK_INVALID(uniform_partition(-1, 2), "n is -1, negative");
    BCSR24_CHECK_INVALID(partition_rows_by_bytes(a, 2, {-1, 4}), "bytes_per_entry is -1");
    BCSR24_CHECK_INVALID(partition_rows_by_bytes(a, 2, {12, kMaxPartitionCost + 1}), "bytes_per_row is 16777217");
    BCSR24_CHECK_INVALID(partition_rows_by_bytes(a, 2, {0, 0}), "both 0");
    BCSR24_CHECK_INVALID(partition_rows_by_bytes(2, nullptr, 2), "row_ptr is null for 2 rows");
    const std::vector<std::int32_t> decreasing{0, 5, 3};
    BCSR24_CHECK_INVALID(partition_rows_by_bytes(2, decreasing.data(), 2), "row_ptr decreases at row 1 (5 then 3)");
    BCSR24_CHECK_INVALID(partition_rows_by_bytes(-1, decreasing.data(), 2), "rows is -1");
    CsrMatrix short_ptr = a;
    short_ptr.row_ptr.pop_back();
    BCSR24_CHECK_INVALID(partition_rows_by_bytes(short_ptr, 2), "row_ptr has 20 entries for 20 rows");

    BCSR24_CHECK_INVALID(validate_partition(RowPartition{{0}}, 0, "rows"), "rows: 1 offsets, needs ranks + 1");
    BCSR24_CHECK_INVALID(validate_partition(RowPartition{{}}, 0, "rows"), "rows: 0 offsets");
    BCSR24_CHECK_INVALID(validate_partition(RowPartition{{1, 4}}, 4, "rows"), "offsets[0] is 1, expected 0");
    BCSR24_CHECK_INVALID(validate_partition(RowPartition{{0, 4, 3}}, 3, "rows"), "offsets decrease at rank 1 (4 then 3)");
    BCSR24_CHECK_INVALID(validate_partition(RowPartition{{0, 4, 8}}, 9, "rows"), "rows covers 8 indices, expected 9");
  }
  SECTION("split_rank_rows and split_matrix") {
    const CsrMatrix top = extract_rows(a, 0, 10);
    CHECK_NOTHROW(split_rank_rows(top, 0, rows, cols));
    BCSR24_CHECK_INVALID(split_rank_rows(top, 2, rows, cols), "rank 2 is outside 0 .. 1");
    BCSR24_CHECK_INVALID(split_rank_rows(extract_rows(a, 0, 9), 0, rows, cols), "rank 0 owns 10 rows but rows_of_rank has 9");
    BCSR24_CHECK_INVALID(split_rank_rows(top, 0, rows, uniform_partition(31, 2)),
                  "rows_of_rank has 30 columns but the column partition covers 31");
    BCSR24_CHECK_INVALID(split_rank_rows(top, 0, rows, uniform_partition(30, 3)),
                  "the row partition has 2 ranks but the column partition has 3");
    BCSR24_CHECK_INVALID(split_rank_rows(top, 0, RowPartition{{0, 12, 10}}, cols), "row partition: offsets decrease");
    CsrMatrix unsorted = top;
    REQUIRE(unsorted.row_ptr[1] - unsorted.row_ptr[0] >= 2);
    std::swap(unsorted.col_idx[0], unsorted.col_idx[1]);
    BCSR24_CHECK_INVALID(split_rank_rows(unsorted, 0, rows, cols), "rows_of_rank: CSR: columns of row 0 are not sorted");
    BCSR24_CHECK_INVALID(detail::split_matrix(a, uniform_partition(21, 2), cols), "row partition covers 21 indices, expected 20");
    BCSR24_CHECK_INVALID(detail::split_matrix(a, rows, uniform_partition(29, 2)), "column partition covers 29 indices, expected 30");
  }
  SECTION("extract_rows") {
    BCSR24_CHECK_INVALID(extract_rows(a, 5, 4), "rows [5, 4) are not a range of the 20 rows");
    BCSR24_CHECK_INVALID(extract_rows(a, 0, 21), "rows [0, 21)");
    BCSR24_CHECK_INVALID(extract_rows(a, -1, 3), "rows [-1, 3)");
    CsrMatrix truncated = a;
    truncated.col_idx.resize(truncated.col_idx.size() / 2);
    truncated.values.resize(truncated.values.size() / 2);
    BCSR24_CHECK_INVALID(extract_rows(truncated, 0, 20), "are not inside the");
    CHECK(extract_rows(a, 4, 4).row_ptr == std::vector<std::int32_t>{0});
  }
  SECTION("build_all_send_plans and halo_exchange_bytes") {
    std::vector<RankBlock> blocks = detail::split_matrix(a, rows, cols);
    BCSR24_CHECK_INVALID(detail::build_all_send_plans(std::vector<RankBlock>(blocks.begin(), blocks.begin() + 1), cols),
                  "1 blocks for 2 ranks");
    std::vector<RankBlock> swapped{blocks[1], blocks[0]};
    BCSR24_CHECK_INVALID(detail::build_all_send_plans(swapped, cols), "block 0 is rank 1's");
    BCSR24_CHECK_INVALID(detail::build_all_send_plans(blocks, uniform_partition(30, 3)), "2 blocks for 3 ranks");
    BCSR24_CHECK_INVALID(detail::build_all_send_plans(blocks, RowPartition{{0, 14, 30}}), "block 0 owns columns [0, 15)");
    std::vector<RankBlock> bad_offsets = blocks;
    REQUIRE(bad_offsets[0].halo_cols() > 0);
    bad_offsets[0].recv_offsets[1] = bad_offsets[0].halo_cols();  // claims its halo comes from itself
    BCSR24_CHECK_INVALID(detail::build_all_send_plans(bad_offsets, cols), "from itself");
    bad_offsets[0].recv_offsets.pop_back();
    BCSR24_CHECK_INVALID(detail::build_all_send_plans(bad_offsets, cols), "recv_offsets has 2 entries, expected ranks + 1 = 3");
    BCSR24_CHECK_INVALID(detail::halo_exchange_bytes(blocks, -1, 2), "n is -1");
    BCSR24_CHECK_INVALID(detail::halo_exchange_bytes(blocks, 4, 0), "element_bytes is 0");
  }
}
