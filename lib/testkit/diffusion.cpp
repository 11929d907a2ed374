// Finite-volume diffusion matrices with hard coefficient fields (see bcsr24_testkit/diffusion.hpp).
#include "bcsr24_testkit/diffusion.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "bcsr24/error.hpp"

namespace bcsr24 {

const char* coefficient_field_name(CoefficientField field) noexcept {
  switch (field) {
    case CoefficientField::constant: return "constant";
    case CoefficientField::inclusions: return "inclusions";
    case CoefficientField::layers: return "layers";
    case CoefficientField::lognormal: return "lognormal";
  }
  return "unknown";
}

CoefficientField coefficient_field_from_name(const std::string& name) {
  for (CoefficientField f : {CoefficientField::constant, CoefficientField::inclusions, CoefficientField::layers,
                             CoefficientField::lognormal})
    if (name == coefficient_field_name(f)) return f;
  throw InvalidArgument("unknown coefficient field '" + name + "' (constant, inclusions, layers, lognormal)");
}

namespace {

void validate(const DiffusionSpec& s) {
  if (s.nx < 1 || s.ny < 1 || s.nz < 1) throw InvalidArgument("diffusion: cell counts must be >= 1");
  const std::int64_t cells = std::int64_t(s.nx) * s.ny * s.nz;
  if (cells * 7 > std::numeric_limits<std::int32_t>::max())
    throw SizeLimitError("diffusion: " + std::to_string(cells) + " cells exceed 32-bit nonzero indices");
  if (!(s.contrast > 0.0) || !std::isfinite(s.contrast)) throw InvalidArgument("diffusion: contrast must be > 0");
  if (!(s.fill >= 0.0 && s.fill <= 1.0)) throw InvalidArgument("diffusion: fill must be in [0, 1]");
  if (s.inclusion_size < 1 || s.layer_thickness < 1 || s.correlation < 0)
    throw InvalidArgument("diffusion: inclusion size and layer thickness must be >= 1, correlation >= 0");
  if (!(s.sigma >= 0.0) || !std::isfinite(s.sigma)) throw InvalidArgument("diffusion: sigma must be >= 0");
  for (double a : s.anisotropy)
    if (!(a > 0.0) || !std::isfinite(a)) throw InvalidArgument("diffusion: anisotropy factors must be > 0");
}

/// Uniform in [0, 1) from the generator's raw bits (the same sequence with every standard library).
double uniform01(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

/// Standard normal numbers by Box-Muller from uniform01 (std::normal_distribution differs between libraries).
void fill_gaussian(std::vector<double>& g, std::mt19937_64& rng) {
  constexpr double two_pi = 6.283185307179586;
  for (std::size_t i = 0; i < g.size(); i += 2) {
    const double u1 = 1.0 - uniform01(rng);  // (0, 1]: log is finite
    const double u2 = uniform01(rng);
    const double radius = std::sqrt(-2.0 * std::log(u1));
    g[i] = radius * std::cos(two_pi * u2);
    if (i + 1 < g.size()) g[i + 1] = radius * std::sin(two_pi * u2);
  }
}

/// One box-filter pass of half width w along an axis (stride between neighbours, n points per line), with the
/// field continued by its edge values. Three passes approximate a Gaussian kernel of standard deviation
/// sqrt(w (w + 1)) cells.
void box_filter_axis(std::vector<double>& f, const DiffusionSpec& s, int axis, int w) {
  const std::int64_t n[3] = {s.nx, s.ny, s.nz};
  const std::int64_t stride[3] = {1, s.nx, std::int64_t(s.nx) * s.ny};
  const std::int64_t len = n[axis];
  if (len == 1 || w == 0) return;
  const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
  std::vector<double> line(static_cast<std::size_t>(len)), out(static_cast<std::size_t>(len));
  for (std::int64_t i2 = 0; i2 < n[a2]; ++i2)
    for (std::int64_t i1 = 0; i1 < n[a1]; ++i1) {
      const std::int64_t base = i1 * stride[a1] + i2 * stride[a2];
      for (std::int64_t t = 0; t < len; ++t) line[std::size_t(t)] = f[std::size_t(base + t * stride[axis])];
      const auto at = [&](std::int64_t t) { return line[std::size_t(std::clamp<std::int64_t>(t, 0, len - 1))]; };
      double sum = 0.0;
      for (std::int64_t t = -w; t <= w; ++t) sum += at(t);
      for (std::int64_t t = 0; t < len; ++t) {
        out[std::size_t(t)] = sum / double(2 * w + 1);
        sum += at(t + w + 1) - at(t - w);
      }
      for (std::int64_t t = 0; t < len; ++t) f[std::size_t(base + t * stride[axis])] = out[std::size_t(t)];
    }
}

}  // namespace

std::vector<double> diffusion_coefficients(const DiffusionSpec& s) {
  validate(s);
  const std::size_t cells = std::size_t(s.nx) * std::size_t(s.ny) * std::size_t(s.nz);
  std::vector<double> k(cells, 1.0);
  std::mt19937_64 rng(s.seed);
  switch (s.field) {
    case CoefficientField::constant: break;
    case CoefficientField::inclusions: {
      const std::int32_t size[3] = {std::min(s.inclusion_size, s.nx), std::min(s.inclusion_size, s.ny),
                                    std::min(s.inclusion_size, s.nz)};
      const double volume = double(size[0]) * size[1] * size[2];
      const auto count = static_cast<std::int64_t>(std::llround(s.fill * double(cells) / volume));
      for (std::int64_t c = 0; c < count; ++c) {
        std::int32_t corner[3];
        const std::int32_t n[3] = {s.nx, s.ny, s.nz};
        for (int d = 0; d < 3; ++d)
          corner[d] = static_cast<std::int32_t>(uniform01(rng) * double(n[d] - size[d] + 1));
        for (std::int32_t z = corner[2]; z < corner[2] + size[2]; ++z)
          for (std::int32_t y = corner[1]; y < corner[1] + size[1]; ++y)
            for (std::int32_t x = corner[0]; x < corner[0] + size[0]; ++x)
              k[(std::size_t(z) * s.ny + y) * s.nx + x] = s.contrast;
      }
      break;
    }
    case CoefficientField::layers: {
      const std::int32_t layers = (s.nz + s.layer_thickness - 1) / s.layer_thickness;
      std::vector<double> value(static_cast<std::size_t>(layers));
      for (double& v : value) v = std::pow(s.contrast, uniform01(rng));
      for (std::int32_t z = 0; z < s.nz; ++z)
        std::fill_n(k.begin() + std::ptrdiff_t(std::size_t(z) * s.ny * s.nx), std::size_t(s.ny) * s.nx,
                    value[std::size_t(z / s.layer_thickness)]);
      break;
    }
    case CoefficientField::lognormal: {
      std::vector<double> g(cells);
      fill_gaussian(g, rng);
      for (int pass = 0; pass < 3; ++pass)
        for (int axis = 0; axis < 3; ++axis) box_filter_axis(g, s, axis, s.correlation);
      double mean = 0.0, square = 0.0;
      for (double v : g) mean += v;
      mean /= double(cells);
      for (double v : g) square += (v - mean) * (v - mean);
      const double deviation = std::sqrt(square / double(cells));
      for (std::size_t i = 0; i < cells; ++i)
        k[i] = std::exp(s.sigma * (deviation > 0.0 ? (g[i] - mean) / deviation : 0.0));
      break;
    }
  }
  return k;
}

CsrMatrix generate_diffusion_matrix(const DiffusionSpec& s) {
  const std::vector<double> k = diffusion_coefficients(s);
  const std::int32_t n[3] = {s.nx, s.ny, s.nz};
  const double h[3] = {1.0 / s.nx, 1.0 / s.ny, 1.0 / s.nz};
  // Face area over the distance between cell centres, per axis, times the anisotropy factor.
  double geometry[3];
  for (int d = 0; d < 3; ++d) geometry[d] = s.anisotropy[std::size_t(d)] * h[(d + 1) % 3] * h[(d + 2) % 3] / h[d];
  const std::int64_t stride[3] = {1, s.nx, std::int64_t(s.nx) * s.ny};
  const std::int64_t cells = std::int64_t(s.nx) * s.ny * s.nz;

  CsrMatrix a;
  a.rows = a.cols = static_cast<std::int32_t>(cells);
  a.row_ptr.assign(static_cast<std::size_t>(cells) + 1, 0);
  a.col_idx.reserve(static_cast<std::size_t>(cells) * 7);
  a.values.reserve(static_cast<std::size_t>(cells) * 7);
  for (std::int32_t z = 0; z < s.nz; ++z)
    for (std::int32_t y = 0; y < s.ny; ++y)
      for (std::int32_t x = 0; x < s.nx; ++x) {
        const std::int64_t i = (std::int64_t(z) * s.ny + y) * s.nx + x;
        const std::int32_t position[3] = {x, y, z};
        const double ki = k[std::size_t(i)];
        double diagonal = 0.0;
        double off[3][2] = {};  // per axis: the lower and the upper neighbour's coupling (0: none)
        for (int d = 0; d < 3; ++d) {
          if (n[d] == 1) continue;  // a flat axis has no faces: nz = 1 is the 2-D problem
          for (int side = 0; side < 2; ++side) {
            const bool boundary = side == 0 ? position[d] == 0 : position[d] == n[d] - 1;
            double t;
            if (boundary) {
              t = 2.0 * geometry[d] * ki;  // Dirichlet u = 0 half a cell away
            } else {
              const double kj = k[std::size_t(i + (side == 0 ? -stride[d] : stride[d]))];
              t = geometry[d] * (2.0 * (ki * kj) / (ki + kj));  // the same rounding from both cells: symmetric
              off[d][side] = -t;
            }
            diagonal += t;
          }
        }
        // Columns in increasing order: z-1, y-1, x-1, self, x+1, y+1, z+1.
        const auto push = [&](std::int64_t column, double value) {
          a.col_idx.push_back(static_cast<std::int32_t>(column));
          a.values.push_back(value);
        };
        for (int d = 2; d >= 0; --d)
          if (off[d][0] != 0.0) push(i - stride[d], off[d][0]);
        push(i, diagonal);
        for (int d = 0; d < 3; ++d)
          if (off[d][1] != 0.0) push(i + stride[d], off[d][1]);
        a.row_ptr[std::size_t(i) + 1] = static_cast<std::int32_t>(a.col_idx.size());
      }
  return a;
}

std::string diffusion_name(const DiffusionSpec& s) {
  char buffer[160];
  std::string name = std::string("diffusion_") + coefficient_field_name(s.field) + "_" + std::to_string(s.nx) + "x" +
                     std::to_string(s.ny) + "x" + std::to_string(s.nz);
  if (s.field == CoefficientField::inclusions || s.field == CoefficientField::layers) {
    std::snprintf(buffer, sizeof buffer, "_c%.0e", s.contrast);
    name += buffer;
  } else if (s.field == CoefficientField::lognormal) {
    std::snprintf(buffer, sizeof buffer, "_s%g", s.sigma);
    name += buffer;
  }
  if (s.anisotropy != std::array<double, 3>{1.0, 1.0, 1.0}) {
    std::snprintf(buffer, sizeof buffer, "_a%gx%gx%g", s.anisotropy[0], s.anisotropy[1], s.anisotropy[2]);
    name += buffer;
  }
  return name;
}

}  // namespace bcsr24
