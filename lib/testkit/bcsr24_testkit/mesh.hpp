// 3-D mesh matrices (FEM-like: several unknowns per node, 7- or 27-point stencil) for benchmarks, tests and the
// solver, in lexicographic or random node order.
#pragma once

#include <cstdint>
#include <string>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24 {

enum class NodeOrder { lexicographic, random };

struct MeshSpec {
  std::int32_t nx = 40, ny = 40, nz = 40;  ///< nodes along each axis
  std::int32_t dofs_per_node = 3;          ///< unknowns per node, all coupled with each other and with neighbours
  int stencil = 27;                        ///< 7 (faces) or 27 (faces, edges, corners)
  NodeOrder order = NodeOrder::lexicographic;  ///< random: nodes numbered by a seeded random permutation
  /// Diagonal = (1 + margin) * sum of |off-diagonal| of the row (strictly diagonally dominant, hence SPD).
  double diagonal_margin = 0.01;
  std::uint64_t seed = 1;
};

/// Nonzeros the mesh will have, computed without building it.
/// @throw InvalidArgument for non-positive sizes, a stencil other than 7 or 27, or margin <= 0.
std::int64_t mesh_nonzeros(const MeshSpec& spec);

/// Builds the mesh matrix (symmetric, SPD). Reproducible from the seed.
/// @throw InvalidArgument as mesh_nonzeros; SizeLimitError beyond 32-bit indices.
CsrMatrix generate_mesh_matrix(const MeshSpec& spec);

/// Parses "NXxNYxNZ[,dofs=D][,stencil=7|27][,order=lex|random][,seed=S]" (e.g. "40x40x40,dofs=3,order=random").
/// @throw InvalidArgument naming the bad part.
MeshSpec parse_mesh_spec(const std::string& text);
/// A short name for reports and file names: "mesh40x40x40_d3_s27_lex".
std::string mesh_name(const MeshSpec& spec);

}  // namespace bcsr24
