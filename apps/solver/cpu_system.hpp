// The solver spaces on the CPU: the same algorithm as on the GPU with Eigen blocks. The bcsr24 product is
// emulated exactly by reference_spmm on the stored fp16 tiles, with P rounded to fp16 as on the GPU.
// Used by the tests and by bcsr24_solve --device cpu (small matrices).
#pragma once

#include <memory>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include "flexible_cg.hpp"
#include "problem.hpp"

namespace bcsr24::solver {

class CpuSystem final : public OuterSpace {
 public:
  /// @param a the fp64 system matrix (outer products and true residuals)
  /// @param inner the inner matrix (kept by reference: must outlive the space)
  /// @param k right-hand sides
  /// @param slots outer slots, outer_slot_count(memory)
  CpuSystem(const CsrMatrix& a, const InnerMatrix& inner, int k, int slots);
  ~CpuSystem() override;

  /// Row-major n x k contents of a slot.
  void set_slot(int slot, const std::vector<double>& values);
  std::vector<double> slot(int slot) const;

  int k() const override { return k_; }
  BCSR24_OUTER_SPACE_OPERATIONS

 private:
  using Block = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  class Inner;
  int k_;
  Eigen::SparseMatrix<double, Eigen::RowMajor, int> a_;
  Eigen::VectorXd inverse_diagonal_;
  Eigen::VectorXd inner_row_scale_;  // ones when the inner solve uses A itself
  std::vector<Block> slots_;
  std::unique_ptr<Inner> inner_;
};

}  // namespace bcsr24::solver
