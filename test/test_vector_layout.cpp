// The narrow-vector kernel's stage and fragment maps (lib/src/kernels/vector_layout.hpp), on the CPU: one K-step
// emulated from the maps the kernel uses (the copy of 16 gathered B rows with zero-filled columns past the slice's
// width, the values in B-fragment order, ldmatrix.x4.trans, mma.m16n8k16 with its PTX fragment layouts, the
// accumulators' place in the result) gives exactly the window's 8 x width product, for every width 1..64 in every
// stage width that can hold it (a launch's stages are as wide as its widest slice: n = 100 runs its 36-column
// slice in 64-column stages); every piece is copied once inside its stage, every fragment element defined once,
// the ldmatrix phases are free of bank conflicts, the piece record follows the values, and the epilogue's stores
// of one accumulator register cover 4 rows x 8 consecutive columns.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "format/band_vectors.hpp"
#include "kernels/vector_layout.hpp"
#include "kernels/vector_params.hpp"

using namespace bcsr24;
namespace layout = bcsr24::kernels::vector_layout;

namespace {

constexpr int kLanes = 32;
constexpr long kPoison = 1000003;  // in a piece no copy wrote: any product that reads it is far off

/// The 8x8 matrix of 16-bit elements whose row r starts at byte address addr[r] of the stage.
long matrix_element(const std::vector<long>& stage, const int (&addr)[8], int r, int c) {
  return stage[std::size_t(addr[r] / 2 + c)];
}

/// One slice width in one stage width: the gathered B rows and the window's vector values, the stage as the kernel
/// fills it, and the 8 x width result the kernel's fragments produce.
struct KStep {
  int width = 0, stage_chunks = 0, m_tiles = 0, chunks = 0;
  long b[16][64] = {}, vals[16][8] = {};
  std::vector<long> stage;
  long mma_b[16][8] = {};
  long result[8][64] = {};
  std::set<int> result_defined;
};

/// The copy: 16 rows x `chunks` pieces, each once, inside the B part of the stage; columns past the width are
/// zero-filled (cp.async's source size).
void copy_b_pieces(KStep& s) {
  const int stage_b_bytes = layout::stage_b_bytes(s.stage_chunks);
  std::set<int> pieces;
  for (int i = 0; i < 16 * s.chunks; ++i) {
    const int row = layout::copy_row(i, s.chunks), chunk = layout::copy_chunk(i, s.chunks);
    REQUIRE(row < 16);
    const int offset = layout::piece_offset(row, chunk, s.stage_chunks);
    REQUIRE(offset % 16 == 0);
    REQUIRE(offset + 16 <= stage_b_bytes);
    CHECK(pieces.insert(offset).second);
    for (int e = 0; e < 8; ++e) {
      const int col = 8 * chunk + e;
      s.stage[std::size_t(offset / 2 + e)] = col < s.width ? s.b[row][col] : 0;
    }
  }
}

/// The values: the group in fragment order, 8 bytes per lane, after the B part; the piece record after them.
void place_values(KStep& s) {
  CHECK(layout::piece_record_offset(s.stage_chunks) % 16 == 0);  // 16-byte aligned (cp.async), inside the stage
  CHECK(layout::piece_record_offset(s.stage_chunks) == layout::values_offset(31, s.stage_chunks) + 8);
  CHECK(layout::piece_record_offset(s.stage_chunks) + int(sizeof(kernels::VectorPiece)) ==
        layout::stage_bytes(s.stage_chunks));
  std::vector<long> group(std::size_t(detail::kVectorGroupValues), kPoison);
  for (int k = 0; k < 16; ++k)
    for (int r = 0; r < 8; ++r) group[std::size_t(detail::vector_value_offset(k, r))] = s.vals[k][r];
  for (int lane = 0; lane < kLanes; ++lane)
    for (int q = 0; q < 4; ++q)
      s.stage[std::size_t(layout::values_offset(lane, s.stage_chunks) / 2 + q)] = group[std::size_t(4 * lane + q)];
}

/// B fragment of mma.m16n8k16 (.col), read from the values: b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g], lane 4g + t.
void read_b_fragment(KStep& s) {
  std::set<int> b_defined;
  for (int lane = 0; lane < kLanes; ++lane) {
    REQUIRE(layout::values_offset(lane, s.stage_chunks) >= layout::stage_b_bytes(s.stage_chunks));
    REQUIRE(layout::values_offset(lane, s.stage_chunks) + 8 <= layout::stage_bytes(s.stage_chunks));
    const int g = lane >> 2, t = lane & 3, at = layout::values_offset(lane, s.stage_chunks) / 2;
    const int ks[4] = {2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9};
    for (int q = 0; q < 4; ++q) {
      s.mma_b[ks[q]][g] = s.stage[std::size_t(at + q)];
      CHECK(b_defined.insert(ks[q] * 8 + g).second);
    }
  }
}

/// The A fragment of m-tile mt through ldmatrix.x4.trans from the gathered rows (bank-conflict free phases).
void read_a_fragment(const KStep& s, int mt, long (&mma_a)[16][16]) {
  // ldmatrix.x4.trans: lane 8q + r gives row r of matrix q; lane 4g + t receives [2t][g] and [2t+1][g] of each.
  int addr[4][8];
  for (int lane = 0; lane < kLanes; ++lane)
    addr[lane / 8][lane % 8] =
        layout::piece_offset(layout::fragment_row(lane), layout::fragment_chunk(lane, mt), s.stage_chunks);
  for (int q = 0; q < 4; ++q) {
    std::set<int> bank_groups;  // one phase: the 8 rows of matrix q, 16 bytes each, in distinct bank groups
    for (int r = 0; r < 8; ++r) bank_groups.insert((addr[q][r] % 128) / 16);
    CHECK(bank_groups.size() == 8u);
  }
  // A fragment of mma.m16n8k16 (.row): a0 = A[g][2t, 2t+1], a1 = A[g+8][...], a2 = A[g][2t+8, 2t+9], a3 =
  // A[g+8][2t+8, 2t+9].
  std::set<int> a_defined;
  for (int lane = 0; lane < kLanes; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    for (int q = 0; q < 4; ++q)
      for (int h = 0; h < 2; ++h) {
        const int m = g + 8 * (q % 2), k = 2 * t + h + 8 * (q / 2);
        mma_a[m][k] = matrix_element(s.stage, addr[q], 2 * t + h, g);
        CHECK(a_defined.insert(m * 16 + k).second);
      }
  }
}

/// D = A B (16 x 8) of m-tile mt into the result, through the accumulators' map; each register's store covers
/// 4 rows x 8 consecutive columns.
void multiply_tile(KStep& s, int mt) {
  long mma_a[16][16];
  read_a_fragment(s, mt, mma_a);
  // Lane 4g + t holds d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1].
  for (int e = 0; e < 4; ++e) {
    std::set<std::pair<int, int>> stores;  // (row, column) of the warp's store of register e
    for (int lane = 0; lane < kLanes; ++lane) {
      const int g = lane >> 2, t = lane & 3;
      const int m = g + 8 * (e / 2), n = 2 * t + e % 2;
      long d = 0;
      for (int k = 0; k < 16; ++k) d += mma_a[m][k] * s.mma_b[k][n];
      const int row = layout::acc_row(lane, e), col = layout::acc_column(lane, mt, e);
      REQUIRE(row < 8);
      REQUIRE(col < 16 * s.m_tiles);
      s.result[row][col] = d;
      CHECK(s.result_defined.insert(row * 64 + col).second);
      stores.insert({row, col});
    }
    // One store instruction: 4 rows x 8 consecutive columns (a 32-byte sector of fp32 C per row).
    std::set<int> rows, cols;
    for (const auto& rc : stores) {
      rows.insert(rc.first);
      cols.insert(rc.second);
    }
    CHECK(stores.size() == 32u);
    CHECK(rows.size() == 4u);
    CHECK(cols.size() == 8u);
    CHECK(*cols.rbegin() - *cols.begin() == 7);
  }
}

}  // namespace

TEST_CASE("narrow vectors: one K-step through the kernel's maps is the window's product", "[vectors][layout]") {
  std::mt19937_64 rng(20261126);
  std::uniform_int_distribution<int> small(-3, 3);
  CHECK(layout::stage_chunks(1) == 2);
  CHECK(layout::stage_chunks(16) == 2);
  CHECK(layout::stage_chunks(17) == 4);
  CHECK(layout::stage_chunks(33) == 8);
  CHECK(layout::stage_chunks(64) == 8);
  // A 16-column slice's gathered rows take a quarter of a 64-column slice's.
  CHECK(layout::stage_b_bytes(layout::stage_chunks(16)) * 4 == layout::stage_b_bytes(layout::stage_chunks(64)));
  CHECK(layout::shared_bytes(8) < layout::shared_bytes(40));
  for (int width = 1; width <= kernels::kVectorSliceColumns; ++width)
  for (int launch_width = width; launch_width <= kernels::kVectorSliceColumns; ++launch_width) {
    const int stage_chunks = layout::stage_chunks(launch_width);
    if (launch_width > width && stage_chunks == layout::stage_chunks(launch_width - 1)) continue;  // same stage
    INFO("slice width " << width << " in stages of " << stage_chunks << " pieces a row");
    auto s = std::make_unique<KStep>();
    s->width = width;
    s->stage_chunks = stage_chunks;
    s->m_tiles = (width + 15) / 16;
    s->chunks = 2 * s->m_tiles;
    REQUIRE(s->chunks <= stage_chunks);
    for (auto& row : s->b)
      for (long& x : row) x = small(rng);
    for (auto& v : s->vals)
      for (long& x : v) x = small(rng);
    s->stage.assign(std::size_t(layout::stage_bytes(stage_chunks) / 2), kPoison);
    copy_b_pieces(*s);
    place_values(*s);
    read_b_fragment(*s);
    for (int mt = 0; mt < s->m_tiles; ++mt) multiply_tile(*s, mt);
    CHECK(s->result_defined.size() == std::size_t(8 * 16 * s->m_tiles));
    // C^T(window, slice) = B^T(gathered rows) x A^T(vectors): row r, column j = sum_k vals[k][r] b[k][j].
    for (int r = 0; r < 8; ++r)
      for (int j = 0; j < 16 * s->m_tiles; ++j) {
        long expected = 0;
        if (j < width)
          for (int k = 0; k < 16; ++k) expected += s->vals[k][r] * s->b[k][j];
        CHECK(s->result[r][j] == expected);
      }
  }
}
