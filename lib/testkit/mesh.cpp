// 3-D mesh matrices: several unknowns per node, 7- or 27-point stencil, symmetric and strictly diagonally
// dominant with a positive diagonal (hence SPD), in lexicographic or seeded random node order.
#include "bcsr24_testkit/mesh.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24_testkit/splitmix64.hpp"

namespace bcsr24 {

namespace {

constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int32_t>::max();

void check_spec(const MeshSpec& s) {
  if (s.nx < 1 || s.ny < 1 || s.nz < 1 || s.dofs_per_node < 1)
    throw InvalidArgument("mesh: sizes and dofs per node must be >= 1, got " + std::to_string(s.nx) + "x" +
                          std::to_string(s.ny) + "x" + std::to_string(s.nz) + " with " +
                          std::to_string(s.dofs_per_node) + " dofs per node");
  if (s.stencil != 7 && s.stencil != 27)
    throw InvalidArgument("mesh: stencil must be 7 or 27, got " + std::to_string(s.stencil));
  if (!(s.diagonal_margin > 0.0) || !std::isfinite(s.diagonal_margin))
    throw InvalidArgument("mesh: diagonal margin must be finite and > 0");
  if (s.order != NodeOrder::lexicographic && s.order != NodeOrder::random)
    throw InvalidArgument("mesh: unknown node order");
}

/// Neighbour offsets of the stencil, the node itself included, sorted by lexicographic node index offset
/// (z, then y, then x), so that in lexicographic order the columns of a row come out sorted.
std::vector<std::array<int, 3>> stencil_offsets(int stencil) {
  std::vector<std::array<int, 3>> out;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int distance = std::abs(dx) + std::abs(dy) + std::abs(dz);
        if (stencil == 27 || distance <= 1) out.push_back({dx, dy, dz});
      }
  return out;
}

/// A reproducible uniform [0, 1) from a key (SplitMix64 finaliser): symmetric couplings are computed from
/// the unordered pair without storing them.
double hash_uniform(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return splitmix64_unit(
      splitmix64_mix(seed ^ (a * kSplitMix64Increment) ^ (b * 0xBF58476D1CE4E5B9ULL) ^ (c * 0x94D049BB133111EBULL)));
}

/// new_of_old[old node] = new node: identity (lexicographic) or a seeded Fisher-Yates permutation.
std::vector<std::int32_t> node_numbering(const MeshSpec& s, std::int32_t nodes) {
  std::vector<std::int32_t> new_of_old(static_cast<std::size_t>(nodes));
  for (std::int32_t i = 0; i < nodes; ++i) new_of_old[static_cast<std::size_t>(i)] = i;
  if (s.order == NodeOrder::random) {
    // A stream of its own (seed mixed with a constant), unrelated to the value hash.
    SplitMix64 random{s.seed ^ 0x6A09E667F3BCC909ULL};
    for (std::int32_t i = nodes - 1; i > 0; --i) {
      const auto j = static_cast<std::int32_t>(random.below(std::uint64_t(i) + 1));
      std::swap(new_of_old[static_cast<std::size_t>(i)], new_of_old[static_cast<std::size_t>(j)]);
    }
  }
  return new_of_old;
}

// ---- parsing helpers ----

std::int64_t parse_count(const std::string& text, const std::string& what, const std::string& whole) {
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("mesh spec \"" + whole + "\": " + what + " \"" + text + "\" " + why);
  };
  if (text.empty()) throw bad("is empty");
  for (char c : text)
    if (c < '0' || c > '9') throw bad("is not a positive integer");
  if (text.size() > 18) throw bad("is too large");
  const std::int64_t value = std::stoll(text);
  if (value < 1) throw bad("must be >= 1");
  return value;
}

std::string margin_text(double margin) {
  std::ostringstream out;
  out << margin;
  return out.str();
}

}  // namespace

std::int64_t mesh_nonzeros(const MeshSpec& s) {
  check_spec(s);
  // Guard the 64-bit arithmetic below against absurd sizes (at most 27 node pairs per node).
  const double estimate = double(s.nx) * double(s.ny) * double(s.nz) * 27.0 * double(s.dofs_per_node) *
                          double(s.dofs_per_node);
  if (estimate > 4e18)
    throw SizeLimitError("mesh: " + std::to_string(s.nx) + "x" + std::to_string(s.ny) + "x" + std::to_string(s.nz) +
                         " with " + std::to_string(s.dofs_per_node) + " dofs per node is far beyond 32-bit indices");
  // Per axis, the number of (node, neighbour) pairs with offset d: n for d = 0, n - 1 for d = +-1.
  const auto pairs = [](std::int64_t n, int d) { return d == 0 ? n : std::max<std::int64_t>(n - 1, 0); };
  std::int64_t node_pairs = 0;
  for (const auto& o : stencil_offsets(s.stencil)) node_pairs += pairs(s.nx, o[0]) * pairs(s.ny, o[1]) * pairs(s.nz, o[2]);
  return node_pairs * s.dofs_per_node * s.dofs_per_node;
}

namespace {

/// The node at (x, y, z), numbered lexicographically (x fastest).
std::int64_t mesh_node(const MeshSpec& s, std::int64_t x, std::int64_t y, std::int64_t z) {
  return (z * s.ny + y) * s.nx + x;
}

/// Nodes in the stencil of the node at (x, y, z), itself included.
int stencil_neighbours(const MeshSpec& s, std::int32_t x, std::int32_t y, std::int32_t z) {
  const auto in = [](std::int32_t c, std::int32_t len) { return 1 + (c > 0) + (c + 1 < len); };
  const int px = in(x, s.nx), py = in(y, s.ny), pz = in(z, s.nz);
  if (s.stencil == 27) return px * py * pz;
  return 1 + (px - 1) + (py - 1) + (pz - 1);
}

/// a.row_ptr for the numbering new_of_old: every row of a node has neighbours * dofs entries.
void fill_row_pointers(const MeshSpec& s, const std::vector<std::int32_t>& new_of_old, CsrMatrix& a) {
  const int dofs = s.dofs_per_node;
  for (std::int32_t z = 0; z < s.nz; ++z)
    for (std::int32_t y = 0; y < s.ny; ++y)
      for (std::int32_t x = 0; x < s.nx; ++x) {
        const std::int64_t row0 = std::int64_t(new_of_old[static_cast<std::size_t>(mesh_node(s, x, y, z))]) * dofs;
        const std::int32_t length = stencil_neighbours(s, x, y, z) * dofs;
        for (int d = 0; d < dofs; ++d) a.row_ptr[static_cast<std::size_t>(row0 + d) + 1] = length;
      }
  for (std::int64_t r = 0; r < std::int64_t(a.rows); ++r)
    a.row_ptr[static_cast<std::size_t>(r) + 1] += a.row_ptr[static_cast<std::size_t>(r)];
}

/// Entry (d, e) of the block (node, other), every entry but the diagonal: symmetric by construction, the keys of
/// its hash being the same for (node, d, other, e) and (other, e, node, d).
double off_diagonal_entry(const MeshSpec& s, std::int64_t node, std::int64_t other, int d, int e) {
  if (other == node) {
    // Keyed by the unordered dof pair: symmetric.
    return 0.5 * (hash_uniform(s.seed, std::uint64_t(node), std::uint64_t(std::min(d, e)),
                               std::uint64_t(std::max(d, e)) + 0x100000000ULL) -
                  0.5);
  }
  // Block (node, other) entry (d, e) equals block (other, node) entry (e, d): key by the ordered pair (lower node,
  // its dof) and (higher node, its dof).
  const bool node_first = node < other;
  const std::uint64_t lo = std::uint64_t(node_first ? node : other);
  const std::uint64_t hi = std::uint64_t(node_first ? other : node);
  const int lo_dof = node_first ? d : e, hi_dof = node_first ? e : d;
  return -(0.1 + 0.9 * hash_uniform(s.seed, lo, hi, std::uint64_t(lo_dof) * 65536 + std::uint64_t(hi_dof)));
}

}  // namespace

CsrMatrix generate_mesh_matrix(const MeshSpec& s) {
  const std::int64_t nnz = mesh_nonzeros(s);
  const std::int64_t nodes64 = std::int64_t(s.nx) * s.ny * s.nz;
  const std::int64_t n = nodes64 * s.dofs_per_node;
  if (n > kMaxIndex || nnz > kMaxIndex)
    throw SizeLimitError("mesh: " + std::to_string(n) + " unknowns / " + std::to_string(nnz) +
                         " nonzeros exceed 32-bit indices");
  const auto nodes = static_cast<std::int32_t>(nodes64);
  const int dofs = s.dofs_per_node;
  const auto offsets = stencil_offsets(s.stencil);
  const std::vector<std::int32_t> new_of_old = node_numbering(s, nodes);
  const bool lexicographic = s.order == NodeOrder::lexicographic;

  const auto node_of = [&](std::int64_t x, std::int64_t y, std::int64_t z) { return mesh_node(s, x, y, z); };

  CsrMatrix a;
  a.rows = a.cols = static_cast<std::int32_t>(n);
  a.row_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  a.col_idx.resize(static_cast<std::size_t>(nnz));
  a.values.resize(static_cast<std::size_t>(nnz));

  // Row lengths in the new numbering, then the prefix sum (lexicographic rows are written in order instead).
  if (!lexicographic) fill_row_pointers(s, new_of_old, a);

  // Per node: the neighbours in lexicographic offset order (the order the values and the off-diagonal sum are
  // computed in, so that both orders give bit-identical values), and the order of their new numbers.
  struct Neighbour {
    std::int64_t old_node;
    std::int32_t new_node;
  };
  std::vector<Neighbour> near;
  std::vector<int> sorted;  // positions into `near`, by new node number
  std::vector<double> row_values;
  near.reserve(offsets.size());
  sorted.reserve(offsets.size());
  row_values.reserve(offsets.size() * static_cast<std::size_t>(dofs));

  std::int64_t write = 0;  // lexicographic: rows are produced in order
  for (std::int32_t z = 0; z < s.nz; ++z)
    for (std::int32_t y = 0; y < s.ny; ++y)
      for (std::int32_t x = 0; x < s.nx; ++x) {
        const std::int64_t node = node_of(x, y, z);
        near.clear();
        for (const auto& o : offsets) {
          const std::int64_t xx = x + o[0], yy = y + o[1], zz = z + o[2];
          if (xx < 0 || yy < 0 || zz < 0 || xx >= s.nx || yy >= s.ny || zz >= s.nz) continue;
          const std::int64_t other = node_of(xx, yy, zz);
          near.push_back({other, new_of_old[static_cast<std::size_t>(other)]});
        }
        sorted.resize(near.size());
        for (std::size_t i = 0; i < near.size(); ++i) sorted[i] = static_cast<int>(i);
        if (!lexicographic)
          std::sort(sorted.begin(), sorted.end(), [&](int p, int q) { return near[p].new_node < near[q].new_node; });
        const std::int64_t new_node = new_of_old[static_cast<std::size_t>(node)];

        for (int d = 0; d < dofs; ++d) {
          // Values in lexicographic order: row_values[k * dofs + e] for neighbour k, its dof e.
          row_values.resize(near.size() * static_cast<std::size_t>(dofs));
          std::size_t diagonal_at = 0;
          double off_sum = 0.0;
          for (std::size_t k = 0; k < near.size(); ++k) {
            const std::int64_t other = near[k].old_node;
            for (int e = 0; e < dofs; ++e) {
              double v;
              if (other == node && e == d) {
                diagonal_at = k * static_cast<std::size_t>(dofs) + static_cast<std::size_t>(e);
                v = 0.0;  // set below, once the row's off-diagonal sum is known
              } else {
                v = off_diagonal_entry(s, node, other, d, e);
              }
              row_values[k * static_cast<std::size_t>(dofs) + static_cast<std::size_t>(e)] = v;
              if (!(other == node && e == d)) off_sum += std::fabs(v);
            }
          }
          row_values[diagonal_at] = off_sum > 0.0 ? (1.0 + s.diagonal_margin) * off_sum : 1.0;

          const std::int64_t row = new_node * dofs + d;
          std::int64_t out = lexicographic ? write : a.row_ptr[static_cast<std::size_t>(row)];
          for (int k : sorted) {
            const std::int64_t col0 = std::int64_t(near[static_cast<std::size_t>(k)].new_node) * dofs;
            const double* v = row_values.data() + static_cast<std::size_t>(k) * static_cast<std::size_t>(dofs);
            for (int e = 0; e < dofs; ++e, ++out) {
              a.col_idx[static_cast<std::size_t>(out)] = static_cast<std::int32_t>(col0 + e);
              a.values[static_cast<std::size_t>(out)] = v[e];
            }
          }
          if (lexicographic) {
            write = out;
            a.row_ptr[static_cast<std::size_t>(row) + 1] = static_cast<std::int32_t>(write);
          }
        }
      }
  return a;
}

MeshSpec parse_mesh_spec(const std::string& text) {
  MeshSpec spec;
  const std::string prefix = "mesh spec \"" + text + "\": ";
  if (text.empty()) throw InvalidArgument("mesh spec is empty (expected NXxNYxNZ[,dofs=D][,stencil=7|27]"
                                          "[,order=lex|random][,seed=S], e.g. 40x40x40,dofs=3)");
  std::vector<std::string> parts;
  {
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, ',')) parts.push_back(part);
    if (text.back() == ',') parts.emplace_back();
  }
  // Sizes: NXxNYxNZ.
  {
    const std::string& dims = parts[0];
    std::vector<std::string> axes;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= dims.size(); ++i)
      if (i == dims.size() || dims[i] == 'x' || dims[i] == 'X') {
        axes.push_back(dims.substr(start, i - start));
        start = i + 1;
      }
    if (axes.size() != 3)
      throw InvalidArgument(prefix + "sizes \"" + dims + "\" must be NXxNYxNZ (three positive integers, e.g. 40x40x40)");
    const char* names[3] = {"NX", "NY", "NZ"};
    std::int32_t* targets[3] = {&spec.nx, &spec.ny, &spec.nz};
    for (int i = 0; i < 3; ++i) {
      const std::int64_t v = parse_count(axes[static_cast<std::size_t>(i)], names[i], text);
      if (v > kMaxIndex) throw InvalidArgument(prefix + names[i] + " " + axes[static_cast<std::size_t>(i)] + " is too large");
      *targets[i] = static_cast<std::int32_t>(v);
    }
  }
  std::vector<std::string> seen;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InvalidArgument(prefix + "\"" + part + "\" is not KEY=VALUE (keys: dofs, stencil, order, seed, margin)");
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw InvalidArgument(prefix + "key \"" + key + "\" given twice");
    seen.push_back(key);
    if (key == "dofs") {
      const std::int64_t v = parse_count(value, "dofs", text);
      if (v > kMaxIndex) throw InvalidArgument(prefix + "dofs " + value + " is too large");
      spec.dofs_per_node = static_cast<std::int32_t>(v);
    } else if (key == "stencil") {
      if (value == "7")
        spec.stencil = 7;
      else if (value == "27")
        spec.stencil = 27;
      else
        throw InvalidArgument(prefix + "stencil \"" + value + "\" must be 7 or 27");
    } else if (key == "order") {
      if (value == "lex" || value == "lexicographic")
        spec.order = NodeOrder::lexicographic;
      else if (value == "random")
        spec.order = NodeOrder::random;
      else
        throw InvalidArgument(prefix + "order \"" + value + "\" must be lex or random");
    } else if (key == "seed") {
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
        throw InvalidArgument(prefix + "seed \"" + value + "\" is not a non-negative integer");
      errno = 0;
      const unsigned long long v = std::strtoull(value.c_str(), nullptr, 10);
      if (errno == ERANGE)
        throw InvalidArgument(prefix + "seed \"" + value + "\" is too large");
      spec.seed = static_cast<std::uint64_t>(v);
    } else if (key == "margin") {
      char* end = nullptr;
      errno = 0;
      const double v = value.empty() ? 0.0 : std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE || !std::isfinite(v) || !(v > 0.0))
        throw InvalidArgument(prefix + "margin \"" + value + "\" must be a number > 0");
      spec.diagonal_margin = v;
    } else {
      throw InvalidArgument(prefix + "unknown key \"" + key + "\" (keys: dofs, stencil, order, seed, margin)");
    }
  }
  return spec;
}

std::string mesh_name(const MeshSpec& spec) {
  std::string name = "mesh" + std::to_string(spec.nx) + "x" + std::to_string(spec.ny) + "x" + std::to_string(spec.nz) +
                     "_d" + std::to_string(spec.dofs_per_node) + "_s" + std::to_string(spec.stencil) +
                     (spec.order == NodeOrder::random ? "_random" : "_lex");
  // Only what differs from the defaults, so that the usual names stay short.
  if (spec.seed != MeshSpec{}.seed) name += "_seed" + std::to_string(spec.seed);
  if (spec.diagonal_margin != MeshSpec{}.diagonal_margin) name += "_m" + margin_text(spec.diagonal_margin);
  return name;
}

}  // namespace bcsr24
