// Tests of the 3-D mesh generator (bcsr24/mesh.hpp): sizes, sorted columns, the random
// node order as a symmetric permutation of the lexicographic one, reproducibility, spec parsing and names.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "test_support.hpp"

using bcsr24::CsrMatrix;
using bcsr24::MeshSpec;
using bcsr24::NodeOrder;
using bcsr24::test::small_mesh_spec;

namespace {

/// a(i, j), or NaN when (i, j) is not stored (columns are sorted).
double entry(const CsrMatrix& a, std::int32_t i, std::int32_t j) {
  const auto begin = a.col_idx.begin() + a.row_ptr[i], end = a.col_idx.begin() + a.row_ptr[i + 1];
  const auto it = std::lower_bound(begin, end, j);
  return (it != end && *it == j) ? a.values[static_cast<std::size_t>(it - a.col_idx.begin())] : std::nan("");
}

std::vector<double> diagonal(const CsrMatrix& a) {
  std::vector<double> d(static_cast<std::size_t>(a.rows));
  for (std::int32_t i = 0; i < a.rows; ++i) d[static_cast<std::size_t>(i)] = entry(a, i, i);
  return d;
}

}  // namespace

TEST_CASE("mesh matrices have the predicted size and sorted columns", "[mesh]") {
  for (const MeshSpec& spec : bcsr24::test::small_mesh_specs()) {
    INFO("stencil " << spec.stencil << ", dofs " << spec.dofs_per_node << ", order " << bcsr24::mesh_name(spec));
    const CsrMatrix a = bcsr24::generate_mesh_matrix(spec);
    CHECK(a.rows == 60 * spec.dofs_per_node);
    CHECK(a.cols == a.rows);
    CHECK(a.nnz() == bcsr24::mesh_nonzeros(spec));
    REQUIRE_NOTHROW(bcsr24::validate_csr(a));  // sorted, unique, in-range columns
    // Symmetry and diagonal dominance (the SPD evidence): test_solver.cpp, with check_spd_evidence.
  }
  // Closed forms: per axis 3n - 2 node pairs for 27 points; 7 points: n^3 + 2 * (faces between neighbours).
  MeshSpec spec = small_mesh_spec(27, 3, NodeOrder::lexicographic);
  CHECK(bcsr24::mesh_nonzeros(spec) == (3 * 5 - 2) * (3 * 4 - 2) * (3 * 3 - 2) * 9);
  spec.stencil = 7;
  CHECK(bcsr24::mesh_nonzeros(spec) == (60 + 2 * (4 * 4 * 3 + 5 * 3 * 3 + 5 * 4 * 2)) * 9);
  // An interior row of the 27-point stencil with 3 dofs has 81 entries, a corner row 8 * 3.
  spec = MeshSpec{};
  spec.nx = spec.ny = spec.nz = 3;
  const CsrMatrix a = bcsr24::generate_mesh_matrix(spec);
  const std::int32_t centre = 13;
  CHECK(a.row_ptr[centre * 3 + 1] - a.row_ptr[centre * 3] == 81);
  CHECK(a.row_ptr[1] - a.row_ptr[0] == 24);
  // One node, one unknown: no couplings, diagonal 1.
  spec.nx = spec.ny = spec.nz = 1;
  spec.dofs_per_node = 1;
  const CsrMatrix one = bcsr24::generate_mesh_matrix(spec);
  CHECK(one.rows == 1);
  CHECK(one.values == std::vector<double>{1.0});
}

TEST_CASE("random node order is a symmetric permutation of the lexicographic matrix", "[mesh]") {
  for (int stencil : {7, 27})
    for (int dofs : {1, 2, 3}) {
      INFO("stencil " << stencil << ", dofs " << dofs);
      const CsrMatrix lex = bcsr24::generate_mesh_matrix(small_mesh_spec(stencil, dofs, NodeOrder::lexicographic));
      const CsrMatrix rnd = bcsr24::generate_mesh_matrix(small_mesh_spec(stencil, dofs, NodeOrder::random));
      REQUIRE(rnd.rows == lex.rows);
      REQUIRE(rnd.nnz() == lex.nnz());
      CHECK(rnd.col_idx != lex.col_idx);
      // Same multiset of values.
      std::vector<double> v_lex = lex.values, v_rnd = rnd.values;
      std::sort(v_lex.begin(), v_lex.end());
      std::sort(v_rnd.begin(), v_rnd.end());
      CHECK(v_lex == v_rnd);
      // Recover the permutation from the diagonal (random sums: distinct values), then check every entry:
      // rnd(p(i), p(j)) == lex(i, j), and the dofs of a node stay consecutive under p.
      const std::vector<double> d_lex = diagonal(lex), d_rnd = diagonal(rnd);
      std::map<double, std::int32_t> row_of_diagonal;
      for (std::int32_t i = 0; i < rnd.rows; ++i) row_of_diagonal[d_rnd[static_cast<std::size_t>(i)]] = i;
      REQUIRE(row_of_diagonal.size() == static_cast<std::size_t>(rnd.rows));
      std::vector<std::int32_t> p(static_cast<std::size_t>(lex.rows), -1);
      for (std::int32_t i = 0; i < lex.rows; ++i) {
        const auto it = row_of_diagonal.find(d_lex[static_cast<std::size_t>(i)]);
        REQUIRE(it != row_of_diagonal.end());
        p[static_cast<std::size_t>(i)] = it->second;
      }
      bool dofs_consecutive = true, rows_match = true, entries_match = true;
      for (std::int32_t i = 0; i < lex.rows; ++i) {
        const std::int32_t pi = p[static_cast<std::size_t>(i)];
        if (pi % dofs != i % dofs || pi - i % dofs != p[static_cast<std::size_t>(i - i % dofs)]) dofs_consecutive = false;
        if (rnd.row_ptr[pi + 1] - rnd.row_ptr[pi] != lex.row_ptr[i + 1] - lex.row_ptr[i]) rows_match = false;
        for (std::int32_t q = lex.row_ptr[i]; q < lex.row_ptr[i + 1]; ++q)
          if (!(entry(rnd, pi, p[static_cast<std::size_t>(lex.col_idx[q])]) == lex.values[q])) entries_match = false;
      }
      CHECK(dofs_consecutive);
      CHECK(rows_match);
      CHECK(entries_match);
    }
}

TEST_CASE("mesh matrices are reproducible from the seed", "[mesh]") {
  for (NodeOrder order : {NodeOrder::lexicographic, NodeOrder::random}) {
    const CsrMatrix a = bcsr24::generate_mesh_matrix(small_mesh_spec(27, 3, order, 5));
    const CsrMatrix b = bcsr24::generate_mesh_matrix(small_mesh_spec(27, 3, order, 5));
    CHECK(a.row_ptr == b.row_ptr);
    CHECK(a.col_idx == b.col_idx);
    CHECK(a.values == b.values);
    const CsrMatrix c = bcsr24::generate_mesh_matrix(small_mesh_spec(27, 3, order, 6));
    CHECK(c.values != a.values);
    if (order == NodeOrder::random) CHECK(c.col_idx != a.col_idx);  // another permutation too
  }
}

TEST_CASE("mesh sizes and options are checked before anything is allocated", "[mesh]") {
  MeshSpec spec;
  spec.stencil = 9;
  CHECK_THROWS_AS(bcsr24::mesh_nonzeros(spec), bcsr24::InvalidArgument);
  CHECK_THROWS_AS(bcsr24::generate_mesh_matrix(spec), bcsr24::InvalidArgument);
  spec = MeshSpec{};
  spec.nz = 0;
  CHECK_THROWS_AS(bcsr24::generate_mesh_matrix(spec), bcsr24::InvalidArgument);
  spec = MeshSpec{};
  spec.dofs_per_node = 0;
  CHECK_THROWS_AS(bcsr24::generate_mesh_matrix(spec), bcsr24::InvalidArgument);
  spec = MeshSpec{};
  spec.diagonal_margin = 0.0;
  CHECK_THROWS_AS(bcsr24::generate_mesh_matrix(spec), bcsr24::InvalidArgument);
  // Rows beyond int32.
  spec = MeshSpec{};
  spec.nx = spec.ny = spec.nz = 1300;
  spec.dofs_per_node = 1;
  CHECK_THROWS_AS(bcsr24::generate_mesh_matrix(spec), bcsr24::SizeLimitError);
  // Rows fit, nonzeros do not (512M rows, about 13.8G nonzeros).
  spec.nx = spec.ny = spec.nz = 800;
  CHECK(bcsr24::mesh_nonzeros(spec) > std::numeric_limits<std::int32_t>::max());
  CHECK_THROWS_AS(bcsr24::generate_mesh_matrix(spec), bcsr24::SizeLimitError);
  // Far beyond: even the count does not fit 64 bits.
  spec.nx = spec.ny = spec.nz = std::numeric_limits<std::int32_t>::max();
  spec.dofs_per_node = std::numeric_limits<std::int32_t>::max();
  CHECK_THROWS_AS(bcsr24::mesh_nonzeros(spec), bcsr24::SizeLimitError);
  CHECK_THROWS_AS(bcsr24::generate_mesh_matrix(spec), bcsr24::SizeLimitError);
}

TEST_CASE("parse_mesh_spec reads NXxNYxNZ and the optional keys", "[mesh]") {
  const MeshSpec plain = bcsr24::parse_mesh_spec("40x30x20");
  CHECK(plain.nx == 40);
  CHECK(plain.ny == 30);
  CHECK(plain.nz == 20);
  CHECK(plain.dofs_per_node == MeshSpec{}.dofs_per_node);
  CHECK(plain.stencil == 27);
  CHECK(plain.order == NodeOrder::lexicographic);
  CHECK(plain.seed == 1);

  const MeshSpec full = bcsr24::parse_mesh_spec("6x5x4,dofs=2,stencil=7,order=random,seed=9");
  CHECK(full.nx == 6);
  CHECK(full.ny == 5);
  CHECK(full.nz == 4);
  CHECK(full.dofs_per_node == 2);
  CHECK(full.stencil == 7);
  CHECK(full.order == NodeOrder::random);
  CHECK(full.seed == 9);
  // Keys in any order; "lexicographic" spelled out.
  const MeshSpec reordered = bcsr24::parse_mesh_spec("6x5x4,seed=9,order=lexicographic,stencil=27,dofs=1");
  CHECK(reordered.order == NodeOrder::lexicographic);
  CHECK(reordered.dofs_per_node == 1);
  CHECK(reordered.seed == 9);
  CHECK(bcsr24::parse_mesh_spec("3x3x3,margin=0.5").diagonal_margin == 0.5);
}

TEST_CASE("parse_mesh_spec rejects bad specs, naming the bad part", "[mesh]") {
  using Catch::Matchers::Contains;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty"},
      {"40x40", "NXxNYxNZ"},
      {"40x40x40x4", "NXxNYxNZ"},
      {"40xx40", "NY"},
      {"0x4x4", "NX"},
      {"4x-1x4", "NY"},
      {"4x4x4.5", "NZ"},
      {" 4x4x4", "NX"},
      {"99999999999x4x4", "too large"},
      {"4x4x4,dofs=0", "dofs"},
      {"4x4x4,dofs=two", "two"},
      {"4x4x4,dofs=", "dofs"},
      {"4x4x4,stencil=9", "stencil"},
      {"4x4x4,order=sorted", "sorted"},
      {"4x4x4,seed=-1", "seed"},
      {"4x4x4,margin=0", "margin"},
      {"4x4x4,margin=abc", "margin"},
      {"4x4x4,colour=red", "unknown key \"colour\""},
      {"4x4x4,dofs", "KEY=VALUE"},
      {"4x4x4,", "KEY=VALUE"},
      {"4x4x4,dofs=2,dofs=3", "twice"},
  };
  for (const auto& [text, named] : bad) {
    INFO("spec \"" << text << "\"");
    CHECK_THROWS_AS(bcsr24::parse_mesh_spec(text), bcsr24::InvalidArgument);
    CHECK_THROWS_WITH(bcsr24::parse_mesh_spec(text), Contains(named));
  }
}

TEST_CASE("mesh_name names the main fields and follows the spec", "[mesh]") {
  CHECK(bcsr24::mesh_name(MeshSpec{}) == "mesh40x40x40_d3_s27_lex");
  CHECK(bcsr24::mesh_name(bcsr24::parse_mesh_spec("40x40x40,dofs=3,stencil=27,order=lex")) ==
        "mesh40x40x40_d3_s27_lex");
  CHECK(bcsr24::mesh_name(bcsr24::parse_mesh_spec("40x40x40,dofs=3,stencil=27,order=random")) ==
        "mesh40x40x40_d3_s27_random");
  CHECK(bcsr24::mesh_name(bcsr24::parse_mesh_spec("6x5x4,dofs=2,stencil=7")) == "mesh6x5x4_d2_s7_lex");
  CHECK(bcsr24::mesh_name(bcsr24::parse_mesh_spec("6x5x4,seed=9")) == "mesh6x5x4_d3_s27_lex_seed9");
  // Every main field changes the name.
  const MeshSpec base = bcsr24::parse_mesh_spec("6x5x4,dofs=2,stencil=7,order=random,seed=9");
  const std::string base_name = bcsr24::mesh_name(base);
  for (const char* other : {"7x5x4,dofs=2,stencil=7,order=random,seed=9", "6x6x4,dofs=2,stencil=7,order=random,seed=9",
                            "6x5x5,dofs=2,stencil=7,order=random,seed=9", "6x5x4,dofs=3,stencil=7,order=random,seed=9",
                            "6x5x4,dofs=2,stencil=27,order=random,seed=9", "6x5x4,dofs=2,stencil=7,order=lex,seed=9",
                            "6x5x4,dofs=2,stencil=7,order=random,seed=8"}) {
    INFO(other);
    CHECK(bcsr24::mesh_name(bcsr24::parse_mesh_spec(other)) != base_name);
  }
}
