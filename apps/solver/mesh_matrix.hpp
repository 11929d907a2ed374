// Generated test systems for the solver: a 3D mesh with several unknowns per node, symmetric and strictly
// diagonally dominant with a positive diagonal (hence SPD), plus the checks that prove it.
#pragma once

#include <cstdint>
#include <string>

#include "bcsr24/csr_matrix.hpp"

namespace bcsr24::solver {

struct MeshSpec {
  std::int32_t nx = 40, ny = 40, nz = 40;  ///< nodes along each axis
  std::int32_t dofs_per_node = 3;          ///< unknowns per node, all coupled with each other and with neighbours
  int stencil = 27;                        ///< 7 (faces) or 27 (faces, edges, corners)
  /// Diagonal = (1 + margin) * sum of |off-diagonal| of the row. Small margins give a larger condition
  /// number (about 2 / margin), like a stiffer discretisation; must be > 0 for strict dominance.
  double diagonal_margin = 0.01;
  std::uint64_t seed = 1;
};

/// Nonzeros the mesh will have, computed without building it.
/// @throw InvalidArgument for non-positive sizes, a stencil other than 7 or 27, or margin <= 0.
std::int64_t mesh_nonzeros(const MeshSpec& spec);

/// Builds the mesh matrix. Unknown (node, d) has index node * dofs + d with node = (z * ny + y) * nx + x.
/// Neighbour couplings are dofs x dofs blocks with entries in [-1, -0.1] (block (q, p) is the transpose of
/// block (p, q)); unknowns of one node are coupled by values in [-0.25, 0.25]. Reproducible from the seed.
/// @throw InvalidArgument as mesh_nonzeros; SizeLimitError beyond 32-bit indices.
CsrMatrix generate_mesh_matrix(const MeshSpec& spec);

/// What check_spd_evidence found: exact symmetry and strict diagonal dominance with a positive diagonal
/// together prove the matrix SPD (Gershgorin).
struct SpdEvidence {
  bool square = false;
  bool symmetric = false;            ///< a_ij == a_ji exactly, same pattern
  double max_asymmetry = 0.0;        ///< max |a_ij - a_ji| / max |a|
  bool positive_diagonal = false;    ///< every a_ii > 0 (and present)
  bool diagonally_dominant = false;  ///< every row: a_ii > sum_{j != i} |a_ij|
  double min_dominance_ratio = 0.0;  ///< min over rows of a_ii / sum |a_ij| (inf for diagonal rows)
  bool proves_spd() const noexcept { return square && symmetric && positive_diagonal && diagonally_dominant; }
  std::string summary() const;
};

/// Checks the SPD evidence above (O(nnz log) time, no factorisation).
SpdEvidence check_spd_evidence(const CsrMatrix& a);

}  // namespace bcsr24::solver
