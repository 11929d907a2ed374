// BlockSpace on the CPU: fp64 slots and fp32 inner blocks as Eigen matrices, the small steps run by the same code
// as on the GPU (one-thread team), bcsr24's inner products emulated with reference_spmm on the stored matrix.
// Used by the tests and by bcsr24_solve --device cpu (small matrices: its timings mean nothing).
#pragma once

#include <memory>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include "block_space.hpp"
#include "inner_matrix.hpp"

namespace bcsr24::solver {

/// How the CPU space treats the fp32 B of an emulated bcsr24 product with fp16 or bf16 A.
enum class BRounding {
  tiles,  ///< as the tile kernels: fp16 per 32-row block and column with a power-of-two scale, bf16 plainly
  exact   ///< as the CSR kernel (and split precision): B used as it is
};

class CpuBlockSpace final : public BlockSpace {
 public:
  /// @param a the fp64 system matrix
  /// @param inner the inner operator's matrix (bcsr24 operator or CSR for the fp32 product) and its row scale;
  ///        kept by reference: must outlive the space
  /// @param memory ring blocks (BlockSlots::count(memory) slots), lanczos_steps the most Lanczos steps
  /// @throw InvalidArgument for k outside 1 .. small::kMaxColumns or memory outside 1 .. kMaxMemory (rows of a
  ///        non-positive diagonal get no Jacobi step: inverse_positive_diagonal)
  CpuBlockSpace(const CsrMatrix& a, const InnerMatrix& inner, int k, int memory, int lanczos_steps,
                BRounding b_rounding = BRounding::tiles);
  ~CpuBlockSpace() override;

  int k() const override { return k_; }
  std::int32_t rows() const override { return n_; }
  const small::SmallLayout& layout() const override { return layout_; }
  BCSR24_BLOCK_SPACE_OPERATIONS
  SpaceCounters counters() const override { return counters_; }

 private:
  using Block = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using FloatBlock = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Block& at(int slot);
  double* small(std::int64_t offset) { return small_.data() + offset; }
  /// c = alpha * A_inner * b + beta * c (fp32 blocks of width kp_), as the GPU's inner product computes it.
  void inner_product(const FloatBlock& b, FloatBlock& c, float alpha, float beta);
  /// Column dots of two fp32 blocks (first k columns), accumulated in double, into the small buffer's `dots`.
  void float_dots(const FloatBlock& x, const FloatBlock& y);

  int k_, kp_;
  std::int32_t n_;
  const InnerMatrix& inner_;
  BRounding b_rounding_;
  small::SmallLayout layout_;
  Eigen::SparseMatrix<double, Eigen::RowMajor, int> a_;
  Eigen::SparseMatrix<float, Eigen::RowMajor, int> a32_;  // cuSPARSE fp32 backend
  Eigen::SparseMatrix<double, Eigen::RowMajor, int> mass_;  // M of a generalized eigenproblem (set_mass)
  bool has_mass_ = false;
  Eigen::VectorXd inverse_diagonal_, row_scale_;
  std::vector<Block> slots_;
  std::vector<double> small_;
  FloatBlock work_[3];  // fp32 n x kp blocks of the Chebyshev recurrence and the Lanczos steps
  SpaceCounters counters_;
};

/// fp32 B as the tile kernels see it for a matrix of `precision` (fp16: per 32-row block and column scaled by a
/// power of two that puts the largest magnitude in [2^14, 2^15), then rounded; bf16: rounded; split: unchanged).
/// b is row-major rows x width.
std::vector<float> round_b_like_tiles(const float* b, std::int64_t rows, int width, Precision precision);

}  // namespace bcsr24::solver
