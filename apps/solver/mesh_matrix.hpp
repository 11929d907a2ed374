// Generated test systems for the solver: the library's 3D mesh (bcsr24_testkit/mesh.hpp: several unknowns per node,
// symmetric and strictly diagonally dominant with a positive diagonal, hence SPD), plus the checks that prove it.
#pragma once

#include <cstdint>
#include <string>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24_testkit/mesh.hpp"

namespace bcsr24::solver {

// The generator lives in the library (bcsr24_testkit/mesh.hpp); these names keep the solver's code unchanged.
// Unknown (node, d) has index node * dofs + d with node = (z * ny + y) * nx + x in lexicographic order.
// Neighbour couplings are dofs x dofs blocks with entries in [-1, -0.1] (block (q, p) is the transpose of
// block (p, q)); unknowns of one node are coupled by values in [-0.25, 0.25]. Reproducible from the seed.
using bcsr24::generate_mesh_matrix;
using bcsr24::mesh_name;
using bcsr24::mesh_nonzeros;
using bcsr24::MeshSpec;
using bcsr24::NodeOrder;
using bcsr24::parse_mesh_spec;

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
