// The 3D mesh generator and the symmetry / diagonal-dominance checks.
#include "mesh_matrix.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "bcsr24/error.hpp"

namespace bcsr24::solver {

namespace {

void check_spec(const MeshSpec& s) {
  if (s.nx < 1 || s.ny < 1 || s.nz < 1 || s.dofs_per_node < 1)
    throw InvalidArgument("mesh: sizes and dofs per node must be >= 1");
  if (s.stencil != 7 && s.stencil != 27) throw InvalidArgument("mesh: stencil must be 7 or 27, got " + std::to_string(s.stencil));
  if (!(s.diagonal_margin > 0.0)) throw InvalidArgument("mesh: diagonal margin must be > 0");
}

/// Neighbour offsets of the stencil, the node itself included.
std::vector<std::array<int, 3>> stencil_offsets(int stencil) {
  std::vector<std::array<int, 3>> out;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int distance = std::abs(dx) + std::abs(dy) + std::abs(dz);
        if (stencil == 27 || distance <= 1) out.push_back({dx, dy, dz});
      }
  return out;  // sorted by node index offset (z, then y, then x), so columns come out sorted
}

/// A reproducible uniform [0, 1) from a key (SplitMix64 finaliser): symmetric couplings are computed from
/// the unordered pair without storing them.
double hash_uniform(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t z = seed ^ (a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xBF58476D1CE4E5B9ULL) ^ (c * 0x94D049BB133111EBULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

}  // namespace

std::int64_t mesh_nonzeros(const MeshSpec& s) {
  check_spec(s);
  // Per axis, the number of (node, neighbour) pairs with offset d: n for d = 0, n - 1 for d = +-1.
  const auto pairs = [](std::int64_t n, int d) { return d == 0 ? n : std::max<std::int64_t>(n - 1, 0); };
  std::int64_t node_pairs = 0;
  for (const auto& o : stencil_offsets(s.stencil)) node_pairs += pairs(s.nx, o[0]) * pairs(s.ny, o[1]) * pairs(s.nz, o[2]);
  return node_pairs * s.dofs_per_node * s.dofs_per_node;
}

CsrMatrix generate_mesh_matrix(const MeshSpec& s) {
  const std::int64_t nnz = mesh_nonzeros(s);
  const std::int64_t nodes = std::int64_t(s.nx) * s.ny * s.nz;
  const std::int64_t n = nodes * s.dofs_per_node;
  if (n > std::numeric_limits<std::int32_t>::max() || nnz > std::numeric_limits<std::int32_t>::max())
    throw SizeLimitError("mesh: " + std::to_string(n) + " unknowns / " + std::to_string(nnz) +
                         " nonzeros exceed 32-bit indices");
  const int dofs = s.dofs_per_node;
  const auto offsets = stencil_offsets(s.stencil);
  CsrMatrix a;
  a.rows = a.cols = static_cast<std::int32_t>(n);
  a.row_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  a.col_idx.resize(static_cast<std::size_t>(nnz));
  a.values.resize(static_cast<std::size_t>(nnz));
  std::int64_t write = 0;
  for (std::int32_t z = 0; z < s.nz; ++z)
    for (std::int32_t y = 0; y < s.ny; ++y)
      for (std::int32_t x = 0; x < s.nx; ++x) {
        const std::int64_t node = (std::int64_t(z) * s.ny + y) * s.nx + x;
        for (int d = 0; d < dofs; ++d) {
          const std::int64_t row = node * dofs + d;
          std::int64_t diagonal_at = -1;
          double off_sum = 0.0;
          for (const auto& o : offsets) {
            const std::int64_t xx = x + o[0], yy = y + o[1], zz = z + o[2];
            if (xx < 0 || yy < 0 || zz < 0 || xx >= s.nx || yy >= s.ny || zz >= s.nz) continue;
            const std::int64_t other = (zz * s.ny + yy) * s.nx + xx;
            for (int e = 0; e < dofs; ++e) {
              const std::int64_t col = other * dofs + e;
              double v;
              if (other == node) {
                if (e == d) {
                  diagonal_at = write;
                  v = 0.0;  // set below, once the row's off-diagonal sum is known
                } else {
                  // Keyed by the unordered dof pair: symmetric.
                  v = 0.5 * (hash_uniform(s.seed, std::uint64_t(node), std::uint64_t(std::min(d, e)),
                                          std::uint64_t(std::max(d, e)) + 0x100000000ULL) - 0.5);
                }
              } else {
                // Block (node, other) entry (d, e) equals block (other, node) entry (e, d): key by the ordered
                // pair (lower node, its dof) and (higher node, its dof).
                const bool node_first = node < other;
                const std::uint64_t lo = std::uint64_t(node_first ? node : other);
                const std::uint64_t hi = std::uint64_t(node_first ? other : node);
                const int lo_dof = node_first ? d : e, hi_dof = node_first ? e : d;
                v = -(0.1 + 0.9 * hash_uniform(s.seed, lo, hi, std::uint64_t(lo_dof) * 65536 + std::uint64_t(hi_dof)));
              }
              a.col_idx[static_cast<std::size_t>(write)] = static_cast<std::int32_t>(col);
              a.values[static_cast<std::size_t>(write)] = v;
              if (col != row) off_sum += std::fabs(v);
              ++write;
            }
          }
          a.values[static_cast<std::size_t>(diagonal_at)] =
              off_sum > 0.0 ? (1.0 + s.diagonal_margin) * off_sum : 1.0;
          a.row_ptr[static_cast<std::size_t>(row) + 1] = static_cast<std::int32_t>(write);
        }
      }
  return a;
}

std::string SpdEvidence::summary() const {
  std::ostringstream out;
  out << (square ? "" : "not square, ") << (symmetric ? "symmetric" : "NOT symmetric")
      << " (max asymmetry " << max_asymmetry << "), " << (positive_diagonal ? "positive diagonal" : "diagonal NOT positive")
      << ", " << (diagonally_dominant ? "strictly diagonally dominant" : "not diagonally dominant")
      << " (min a_ii / sum|a_ij| = " << min_dominance_ratio << ")";
  return out.str();
}

SpdEvidence check_spd_evidence(const CsrMatrix& a) {
  SpdEvidence ev;
  ev.square = a.rows == a.cols;
  if (!ev.square) return ev;
  double max_abs = 0.0;
  for (double v : a.values) max_abs = std::max(max_abs, std::fabs(v));
  // Symmetry: every (i, j, v) must find (j, i, v); columns are sorted, so a binary search per entry.
  ev.symmetric = true;
  double asym = 0.0;
  for (std::int32_t i = 0; i < a.rows; ++i)
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const std::int32_t j = a.col_idx[p];
      const auto begin = a.col_idx.begin() + a.row_ptr[j], end = a.col_idx.begin() + a.row_ptr[j + 1];
      const auto it = std::lower_bound(begin, end, i);
      const double mirror = (it != end && *it == i) ? a.values[static_cast<std::size_t>(it - a.col_idx.begin())] : 0.0;
      if (it == end || *it != i || mirror != a.values[p]) ev.symmetric = false;
      asym = std::max(asym, std::fabs(mirror - a.values[p]));
    }
  ev.max_asymmetry = max_abs > 0.0 ? asym / max_abs : 0.0;
  ev.positive_diagonal = true;
  ev.diagonally_dominant = true;
  ev.min_dominance_ratio = std::numeric_limits<double>::infinity();
  for (std::int32_t i = 0; i < a.rows; ++i) {
    double diagonal = 0.0, off = 0.0;
    for (std::int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      if (a.col_idx[p] == i)
        diagonal = a.values[p];
      else
        off += std::fabs(a.values[p]);
    }
    if (!(diagonal > 0.0)) ev.positive_diagonal = false;
    if (!(diagonal > off)) ev.diagonally_dominant = false;
    if (off > 0.0) ev.min_dominance_ratio = std::min(ev.min_dominance_ratio, diagonal / off);
  }
  return ev;
}

}  // namespace bcsr24::solver
