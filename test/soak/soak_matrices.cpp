// The soak program's random matrices (soak_matrices.hpp).
#include "soak_matrices.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24_testkit/synthetic.hpp"

namespace bcsr24::soak {

std::int64_t uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

double uniform_real(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * double(rng() >> 11) * 0x1p-53;
}

namespace {

double unit_nonzero(std::mt19937_64& rng) {
  for (;;) {
    const double v = uniform_real(rng, -1.0, 1.0);
    if (v != 0.0) return v;
  }
}

/// Rows and columns of a matrix that is usually mid-sized and sometimes small.
std::int32_t size_up_to(std::mt19937_64& rng, std::int32_t max_rows) {
  return static_cast<std::int32_t>(rng() % 4 == 0 ? uniform(rng, 1, 100) : uniform(rng, 16, max_rows));
}

CsrMatrix from_entries(std::int32_t rows, std::int32_t cols, const std::vector<std::int32_t>& ri,
                       const std::vector<std::int32_t>& ci, std::mt19937_64& rng) {
  std::vector<double> vi(ri.size());
  for (double& v : vi) v = unit_nonzero(rng);
  return csr_from_triplets(rows, cols, ri, ci, vi);
}

/// Diagonal, the first k rows and columns dense, sometimes the last row too.
CsrMatrix arrowhead(std::int32_t n, int k, bool last_row, std::mt19937_64& rng) {
  std::vector<std::int32_t> ri, ci;
  for (std::int32_t i = 0; i < n; ++i) {
    ri.push_back(i);
    ci.push_back(i);
    for (int q = 0; q < k && q < n; ++q) {
      ri.push_back(q);
      ci.push_back(i);
      ri.push_back(i);
      ci.push_back(q);
    }
    if (last_row) {
      ri.push_back(n - 1);
      ci.push_back(i);
    }
  }
  return from_entries(n, n, ri, ci, rng);
}

/// A random graph with `dense` rows that hold every column.
CsrMatrix graph_with_dense_rows(std::int32_t rows, std::int32_t cols, int dense, std::mt19937_64& rng) {
  std::vector<std::int32_t> ri, ci;
  std::vector<std::int32_t> full;
  for (int d = 0; d < dense; ++d) full.push_back(static_cast<std::int32_t>(uniform(rng, 0, rows - 1)));
  for (std::int32_t r = 0; r < rows; ++r) {
    const bool is_full = std::find(full.begin(), full.end(), r) != full.end();
    const std::int64_t entries = is_full ? cols : uniform(rng, 0, std::min<std::int64_t>(cols, 6));
    for (std::int64_t e = 0; e < entries; ++e) {
      ri.push_back(r);
      ci.push_back(is_full ? static_cast<std::int32_t>(e) : static_cast<std::int32_t>(uniform(rng, 0, cols - 1)));
    }
  }
  return from_entries(rows, cols, ri, ci, rng);
}

/// `a` without the entries of some row ranges (whole 16-row bands and ragged ones) and of some columns.
CsrMatrix thinned(const CsrMatrix& a, std::mt19937_64& rng) {
  std::vector<std::uint8_t> drop_row(std::size_t(a.rows), 0), drop_col(std::size_t(a.cols), 0);
  const int ranges = static_cast<int>(uniform(rng, 1, 6));
  for (int q = 0; q < ranges; ++q) {
    const bool band = rng() % 2 == 0;
    const std::int32_t begin = band ? std::int32_t(uniform(rng, 0, (a.rows - 1) / 16) * 16)
                                    : std::int32_t(uniform(rng, 0, a.rows - 1));
    const std::int32_t length = band ? 16 * std::int32_t(uniform(rng, 1, 3)) : std::int32_t(uniform(rng, 1, 40));
    for (std::int32_t r = begin; r < std::min(a.rows, begin + length); ++r) drop_row[std::size_t(r)] = 1;
  }
  for (std::int32_t c = 0; c < a.cols; ++c) drop_col[std::size_t(c)] = rng() % 7 == 0;
  CsrMatrix out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.assign(std::size_t(a.rows) + 1, 0);
  for (std::int32_t r = 0; r < a.rows; ++r) {
    if (!drop_row[std::size_t(r)])
      for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p)
        if (!drop_col[std::size_t(a.col_idx[std::size_t(p)])]) {
          out.col_idx.push_back(a.col_idx[std::size_t(p)]);
          out.values.push_back(a.values[std::size_t(p)]);
        }
    out.row_ptr[std::size_t(r) + 1] = static_cast<std::int32_t>(out.col_idx.size());
  }
  return out;
}

CsrMatrix random_xdys(std::mt19937_64& rng, std::int32_t max_rows, std::string& name) {
  XdYsSpec spec;
  spec.rows = size_up_to(rng, max_rows);
  spec.cols = size_up_to(rng, max_rows);
  spec.dense_percent = double(uniform(rng, 0, 20));
  spec.sparse24_percent = double(uniform(rng, 0, 25));
  spec.seed = rng();
  name = "xdys " + std::to_string(spec.rows) + "x" + std::to_string(spec.cols) + " " +
         std::to_string(int(spec.dense_percent)) + "d" + std::to_string(int(spec.sparse24_percent)) + "s";
  return generate_xdys(spec);
}

CsrMatrix random_graph(std::mt19937_64& rng, std::int32_t max_rows, bool power_law, std::string& name) {
  RandomGraphSpec spec;
  spec.rows = size_up_to(rng, max_rows);
  spec.cols = size_up_to(rng, max_rows);
  spec.degree = static_cast<std::int32_t>(uniform(rng, 1, std::min<std::int64_t>(spec.cols, power_law ? 12 : 30)));
  spec.power_law = power_law;
  spec.seed = rng();
  name = random_graph_name(spec) + "_c" + std::to_string(spec.cols);
  return generate_random_graph(spec);
}

CsrMatrix random_mesh(std::mt19937_64& rng, std::int32_t max_rows, std::string& name) {
  MeshSpec spec;
  spec.dofs_per_node = static_cast<std::int32_t>(uniform(rng, 1, 3));
  const auto side = static_cast<std::int64_t>(std::cbrt(double(max_rows) / spec.dofs_per_node));
  spec.nx = static_cast<std::int32_t>(uniform(rng, 1, std::max<std::int64_t>(2, side)));
  spec.ny = static_cast<std::int32_t>(uniform(rng, 1, std::max<std::int64_t>(2, side)));
  spec.nz = static_cast<std::int32_t>(uniform(rng, 1, std::max<std::int64_t>(2, side)));
  spec.stencil = rng() % 2 == 0 ? 7 : 27;
  spec.order = rng() % 2 == 0 ? NodeOrder::lexicographic : NodeOrder::random;
  spec.seed = rng();
  name = mesh_name(spec);
  return generate_mesh_matrix(spec);
}

CsrMatrix tiny(std::mt19937_64& rng, std::string& name) {
  std::int32_t rows = static_cast<std::int32_t>(uniform(rng, 1, 40)), cols = static_cast<std::int32_t>(uniform(rng, 1, 40));
  if (rng() % 3 == 0) rows = 1;
  else if (rng() % 2 == 0) cols = 1;
  const double fill = uniform_real(rng, 0.0, 1.0);
  std::vector<std::int32_t> ri, ci;
  for (std::int32_t r = 0; r < rows; ++r)
    for (std::int32_t c = 0; c < cols; ++c)
      if (uniform_real(rng, 0.0, 1.0) < fill) {
        ri.push_back(r);
        ci.push_back(c);
      }
  name = "tiny " + std::to_string(rows) + "x" + std::to_string(cols);
  return from_entries(rows, cols, ri, ci, rng);
}

/// Values in place of the generator's [-1, 1): small integers, rows of scales 10^-8 .. 10^8, or entries spread
/// over up to 10^12 inside a row times row scales up to 10^6 each way.
std::string draw_values(CsrMatrix& a, std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0: return "unit";
    case 1:
      for (double& v : a.values) {
        const std::int64_t k = uniform(rng, 1, 8);
        v = rng() % 2 == 0 ? double(k) : -double(k);
      }
      return "integers";
    case 2: {
      const double span = uniform_real(rng, 0.0, 8.0);
      for (std::int32_t r = 0; r < a.rows; ++r) {
        const double scale = std::pow(10.0, uniform_real(rng, -span, span));
        for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p)
          a.values[std::size_t(p)] *= scale;
      }
      return "row_scales 1e" + std::to_string(int(span));
    }
    default: {
      const double inside = uniform_real(rng, 0.0, 6.0), across = uniform_real(rng, 0.0, 6.0);
      for (std::int32_t r = 0; r < a.rows; ++r) {
        const double scale = std::pow(10.0, uniform_real(rng, -across, across));
        for (std::int32_t p = a.row_ptr[std::size_t(r)]; p < a.row_ptr[std::size_t(r) + 1]; ++p)
          a.values[std::size_t(p)] *= scale * std::pow(10.0, uniform_real(rng, -inside, inside));
      }
      return "wide 1e" + std::to_string(int(inside)) + " x 1e" + std::to_string(int(across));
    }
  }
}

}  // namespace

RandomMatrix random_matrix(std::mt19937_64& rng, std::int32_t max_rows) {
  RandomMatrix m;
  switch (rng() % 10) {
    case 0: case 1: m.family = "xdys"; m.a = random_xdys(rng, max_rows, m.name); break;
    case 2: m.family = "mesh"; m.a = random_mesh(rng, max_rows, m.name); break;
    case 3: m.family = "graph"; m.a = random_graph(rng, max_rows, false, m.name); break;
    case 4: m.family = "power_graph"; m.a = random_graph(rng, max_rows, true, m.name); break;
    case 5: {
      const std::int32_t n = size_up_to(rng, max_rows);
      const int k = static_cast<int>(uniform(rng, 1, 3));
      const bool last = rng() % 2 == 0;
      m.family = "arrowhead";
      m.name = "arrowhead " + std::to_string(n) + " k " + std::to_string(k) + (last ? " + last row" : "");
      m.a = arrowhead(n, k, last, rng);
      break;
    }
    case 6: {
      const std::int32_t rows = size_up_to(rng, max_rows), cols = size_up_to(rng, max_rows);
      const int dense = static_cast<int>(uniform(rng, 1, 4));
      m.family = "dense_rows";
      m.name = "graph " + std::to_string(rows) + "x" + std::to_string(cols) + " with " + std::to_string(dense) +
               " dense rows";
      m.a = graph_with_dense_rows(rows, cols, dense, rng);
      break;
    }
    case 7: {
      std::string base;
      const CsrMatrix a = rng() % 2 == 0 ? random_xdys(rng, max_rows, base) : random_mesh(rng, max_rows, base);
      m.family = "empty_bands";
      m.name = base + " with empty bands and columns";
      m.a = thinned(a, rng);
      break;
    }
    case 8: m.family = "tiny"; m.a = tiny(rng, m.name); break;
    default: {
      if (rng() % 4 == 0) {  // no entries at all
        m.family = "empty";
        m.a.rows = static_cast<std::int32_t>(uniform(rng, 1, 300));
        m.a.cols = static_cast<std::int32_t>(uniform(rng, 1, 300));
        m.a.row_ptr.assign(std::size_t(m.a.rows) + 1, 0);
        m.name = "empty " + std::to_string(m.a.rows) + "x" + std::to_string(m.a.cols);
      } else {
        m.family = "xdys";
        m.a = random_xdys(rng, max_rows, m.name);
      }
      break;
    }
  }
  m.values = draw_values(m.a, rng);
  for (const double v : m.a.values) m.max_abs = std::max(m.max_abs, std::fabs(v));
  return m;
}

}  // namespace bcsr24::soak
