// Generated hard SPD systems for the solver: cell-centred finite volumes for -div(K grad u) = f on the unit cube
// (7-point stencil, Dirichlet boundary), with coefficient fields that make the matrix ill-conditioned: high-contrast
// inclusions, layers, log-normal random fields, and an axis anisotropy on top of any of them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24 {

/// The scalar coefficient field k(x) (the anisotropy multiplies it per axis).
enum class CoefficientField {
  constant,    ///< k = 1: the Laplacian (kappa grows like h^-2 only)
  inclusions,  ///< k = 1, and `contrast` inside random cubes of `inclusion_size` cells filling `fill` of the volume
  layers,      ///< k constant per z-layer of `layer_thickness` cells, log-uniform in [1, contrast] (seeded)
  lognormal    ///< k = exp(sigma g), g a smoothed Gaussian field (correlation ~ `correlation` cells), mean 0, std 1
};
const char* coefficient_field_name(CoefficientField field) noexcept;
/// @throw InvalidArgument for an unknown name.
CoefficientField coefficient_field_from_name(const std::string& name);

struct DiffusionSpec {
  std::int32_t nx = 100, ny = 100, nz = 100;  ///< cells per axis (nz = 1 gives the 2-D 5-point problem)
  CoefficientField field = CoefficientField::inclusions;
  double contrast = 1e6;          ///< inclusions: k inside; layers: the range of k
  double fill = 0.1;              ///< inclusions: volume fraction (overlaps allowed, so the actual fill is smaller)
  std::int32_t inclusion_size = 4;
  std::int32_t layer_thickness = 2;
  double sigma = 2.5;             ///< lognormal: standard deviation of ln k (2.5 spans about 1e-4 .. 1e4 in k)
  std::int32_t correlation = 4;   ///< lognormal: box-filter half width in cells (three passes per axis)
  std::array<double, 3> anisotropy{1.0, 1.0, 1.0};  ///< K = k diag(ax, ay, az)
  std::uint64_t seed = 1;
};

/// Builds the matrix: unknown (x, y, z) has index (z * ny + y) * nx + x; the flux through a face between two cells
/// uses the harmonic mean of their coefficients, a boundary face the cell's own coefficient over half a cell. The
/// result is symmetric, has non-positive off-diagonals and a diagonal equal to the off-diagonal row sum plus the
/// boundary terms: an irreducibly diagonally dominant M-matrix, hence SPD. Reproducible from the seed.
/// @throw InvalidArgument for non-positive sizes or parameters; SizeLimitError beyond 32-bit indices.
CsrMatrix generate_diffusion_matrix(const DiffusionSpec& spec);

/// The coefficient field alone (nx * ny * nz values, same indexing), for tests and reports.
/// @throw InvalidArgument as generate_diffusion_matrix.
std::vector<double> diffusion_coefficients(const DiffusionSpec& spec);

/// "diffusion_inclusions_100x100x100_c1e+06" style name for reports and file names.
std::string diffusion_name(const DiffusionSpec& spec);

}  // namespace bcsr24
