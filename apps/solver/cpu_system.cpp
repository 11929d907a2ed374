// CPU solver spaces: Eigen fp64 outer blocks, Eigen fp32 inner blocks, fp16 products through reference_spmm.
#include "cpu_system.hpp"

#include <algorithm>
#include <cmath>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/reference.hpp"

namespace bcsr24::solver {

namespace {

Eigen::SparseMatrix<double, Eigen::RowMajor, int> to_eigen(const CsrMatrix& a) {
  return Eigen::Map<const Eigen::SparseMatrix<double, Eigen::RowMajor, int>>(
      a.rows, a.cols, a.nnz(), a.row_ptr.data(), a.col_idx.data(), a.values.data());
}

}  // namespace

/// The inner [X P R Q] blocks in fp32 and the product under test.
class CpuSystem::Inner final : public InnerBlockSpace {
 public:
  using FloatBlock = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  Inner(const InnerMatrix& matrix, std::int32_t n, int k) : matrix_(matrix), k_(k) {
    current_ = FloatBlock::Zero(n, 4 * k);
    next_ = FloatBlock::Zero(n, 4 * k);
    if (matrix.backend == InnerBackend::cusparse_csr_f32)
      a32_ = to_eigen(matrix.csr).cast<float>();
  }
  int k() const override { return k_; }
  void gram(Eigen::MatrixXd& g) override {
    // fp32 products, as cuBLAS computes them on the GPU.
    const FloatBlock prq = current_.rightCols(3 * k_);
    g = (prq.transpose() * prq).cast<double>();
  }
  void update(const Eigen::MatrixXd& m) override {
    next_.leftCols(3 * k_) = current_ * m.cast<float>();
    std::swap(current_, next_);
  }
  void product() override {
    const auto n = current_.rows();
    if (matrix_.backend == InnerBackend::cusparse_csr_f32) {
      current_.middleCols(3 * k_, k_) = a32_ * current_.middleCols(k_, k_);
      return;
    }
    // As on the GPU, P goes in as fp32 with the stored A (the CPU product keeps B exact: the GPU's rounding of B
    // while staging is not emulated).
    std::vector<float> b32(static_cast<std::size_t>(n) * k_);
    for (Eigen::Index i = 0; i < n; ++i)
      for (int j = 0; j < k_; ++j) b32[static_cast<std::size_t>(i) * k_ + j] = current_(i, k_ + j);
    std::vector<float> c(static_cast<std::size_t>(n) * k_);
    reference_spmm(*matrix_.op, k_, b32.data(), k_, c.data(), k_, 1.0, 0.0);
    for (Eigen::Index i = 0; i < n; ++i)
      for (int j = 0; j < k_; ++j) current_(i, 3 * k_ + j) = c[static_cast<std::size_t>(i) * k_ + j];
  }

  void reset() {
    current_.setZero();
    next_.setZero();
  }
  FloatBlock& current() { return current_; }

 private:
  const InnerMatrix& matrix_;
  int k_;
  FloatBlock current_, next_;
  Eigen::SparseMatrix<float, Eigen::RowMajor, int> a32_;
};

CpuSystem::CpuSystem(const CsrMatrix& a, const InnerMatrix& inner, int k, int slots) : k_(k), a_(to_eigen(a)) {
  if (k < 1) throw InvalidArgument("CpuSystem: k must be >= 1");
  const std::vector<double> inverse = inverse_diagonal(a);
  inverse_diagonal_ = Eigen::Map<const Eigen::VectorXd>(inverse.data(), a.rows);
  inner_row_scale_ = inner.row_scale.empty()
                         ? Eigen::VectorXd::Ones(a.rows)
                         : Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(inner.row_scale.data(), a.rows));
  slots_.assign(static_cast<std::size_t>(slots), Block::Zero(a.rows, k));
  inner_ = std::make_unique<Inner>(inner, a.rows, k);
}

CpuSystem::~CpuSystem() = default;

void CpuSystem::set_slot(int slot, const std::vector<double>& values) {
  slots_[static_cast<std::size_t>(slot)] = Eigen::Map<const Block>(values.data(), a_.rows(), k_);
}

std::vector<double> CpuSystem::slot(int slot) const {
  const Block& s = slots_[static_cast<std::size_t>(slot)];
  return std::vector<double>(s.data(), s.data() + s.size());
}

void CpuSystem::residual(int r, int b, int x) {
  slots_[std::size_t(r)] = slots_[std::size_t(b)] - a_ * slots_[std::size_t(x)];
}

void CpuSystem::multiply(int q, int p) { slots_[std::size_t(q)] = a_ * slots_[std::size_t(p)]; }

void CpuSystem::dots(const std::vector<std::pair<int, int>>& pairs, std::vector<double>& out) {
  out.clear();
  for (const auto& [x, y] : pairs) {
    const Eigen::RowVectorXd d = slots_[std::size_t(x)].cwiseProduct(slots_[std::size_t(y)]).colwise().sum();
    out.insert(out.end(), d.data(), d.data() + k_);
  }
}

void CpuSystem::combine(int dst, int z, const std::vector<int>& p, const std::vector<double>& coef) {
  Block result = slots_[std::size_t(z)];
  for (std::size_t t = 0; t < p.size(); ++t)
    for (int j = 0; j < k_; ++j) result.col(j) -= coef[t * k_ + j] * slots_[std::size_t(p[t])].col(j);
  slots_[std::size_t(dst)] = std::move(result);
}

void CpuSystem::update(int x, int p, int r, int q, const std::vector<double>& alpha) {
  for (int j = 0; j < k_; ++j) {
    slots_[std::size_t(x)].col(j) += alpha[std::size_t(j)] * slots_[std::size_t(p)].col(j);
    slots_[std::size_t(r)].col(j) -= alpha[std::size_t(j)] * slots_[std::size_t(q)].col(j);
  }
}

InnerStats CpuSystem::precondition_inner(int z, int r, const std::vector<double>& column_scale,
                                         const InnerOptions& options) {
  inner_->reset();
  const Block& rr = slots_[std::size_t(r)];
  auto& block = inner_->current();
  for (int j = 0; j < k_; ++j)
    block.col(2 * k_ + j) = (rr.col(j).cwiseProduct(inner_row_scale_) * column_scale[std::size_t(j)]).cast<float>();
  const InnerStats stats = block_cg(*inner_, options);
  Block& zz = slots_[std::size_t(z)];
  for (int j = 0; j < k_; ++j) {
    const double s = column_scale[std::size_t(j)];
    if (s == 0.0)
      zz.col(j).setZero();
    else
      zz.col(j) = inner_->current().col(j).cast<double>().cwiseProduct(inner_row_scale_) / s;
  }
  return stats;
}

void CpuSystem::precondition_jacobi(int z, int r, const std::vector<double>& column_mask) {
  for (int j = 0; j < k_; ++j)
    slots_[std::size_t(z)].col(j) =
        slots_[std::size_t(r)].col(j).cwiseProduct(inverse_diagonal_) * column_mask[std::size_t(j)];
}

}  // namespace bcsr24::solver
