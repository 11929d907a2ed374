// CPU BlockSpace: the GPU space's operations in Eigen, element for element where the GPU's kernels are
// element-wise (conversions and the Chebyshev update compute in double and round once, as the kernels do).
#include "cpu_block_space.hpp"

#include <algorithm>
#include <cmath>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/precision.hpp"
#include "bcsr24/reference.hpp"

namespace bcsr24::solver {

namespace {

Eigen::SparseMatrix<double, Eigen::RowMajor, int> to_eigen(const CsrMatrix& a) {
  return Eigen::Map<const Eigen::SparseMatrix<double, Eigen::RowMajor, int>>(
      a.rows, a.cols, a.nnz(), a.row_ptr.data(), a.col_idx.data(), a.values.data());
}

int round_up_8(int k) { return (k + 7) / 8 * 8; }

}  // namespace

std::vector<float> round_b_like_tiles(const float* b, std::int64_t rows, int width, Precision precision) {
  std::vector<float> out(b, b + rows * width);
  if (precision == Precision::split) return out;
  if (precision == Precision::bf16) {
    for (float& v : out) v = bf16_to_float(double_to_bf16(v));
    return out;
  }
  // The tile kernel stages B in blocks of 32 rows (one tile's columns) and scales each column of a block so that its
  // largest magnitude lies in [2^14, 2^15) before rounding to fp16.
  constexpr std::int64_t kBlockRows = 32;
  for (std::int64_t first = 0; first < rows; first += kBlockRows) {
    const std::int64_t last = std::min(rows, first + kBlockRows);
    for (int c = 0; c < width; ++c) {
      float largest = 0.0f;
      for (std::int64_t i = first; i < last; ++i) largest = std::max(largest, std::fabs(out[std::size_t(i * width + c)]));
      if (largest == 0.0f || !std::isfinite(largest)) continue;
      const int exponent = std::ilogb(largest) - 14;
      for (std::int64_t i = first; i < last; ++i) {
        float& v = out[std::size_t(i * width + c)];
        v = std::ldexp(fp16_to_float(double_to_fp16(std::ldexp(double(v), -exponent))), exponent);
      }
    }
  }
  return out;
}

CpuBlockSpace::CpuBlockSpace(const CsrMatrix& a, const InnerMatrix& inner, int k, int memory, int lanczos_steps,
                             BRounding b_rounding)
    : k_(k), kp_(round_up_8(k)), n_(a.rows), inner_(inner), b_rounding_(b_rounding), a_(to_eigen(a)) {
  check_space_sizes(k, memory, lanczos_steps);
  if (inner.backend == InnerBackend::bcsr24 && !inner.op)
    throw InvalidArgument("block solver: bcsr24 backend without operator");
  layout_ = small::make_layout(k, memory, lanczos_steps);
  const std::vector<double> inverse = inverse_positive_diagonal(a);
  inverse_diagonal_ = Eigen::Map<const Eigen::VectorXd>(inverse.data(), n_);
  row_scale_ = inner.row_scale.empty()
                   ? Eigen::VectorXd::Ones(n_)
                   : Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(inner.row_scale.data(), n_));
  if (inner.backend == InnerBackend::cusparse_csr_f32) a32_ = to_eigen(inner.csr.rows > 0 ? inner.csr : a).cast<float>();
  slots_.assign(std::size_t(BlockSlots::count(memory)), Block::Zero(n_, k));
  small_.assign(std::size_t(layout_.total), 0.0);
  for (FloatBlock& b : work_) b = FloatBlock::Zero(n_, kp_);
}

CpuBlockSpace::~CpuBlockSpace() = default;

CpuBlockSpace::Block& CpuBlockSpace::at(int slot) {
  if (slot < 0 || slot >= static_cast<int>(slots_.size()))
    throw InvalidArgument("CpuBlockSpace: slot " + std::to_string(slot) + " out of range");
  return slots_[std::size_t(slot)];
}

void CpuBlockSpace::set_slot(int slot, const std::vector<double>& values) {
  if (values.size() != std::size_t(n_) * k_) throw InvalidArgument("CpuBlockSpace::set_slot: expected n x k values");
  at(slot) = Eigen::Map<const Block>(values.data(), n_, k_);
}

std::vector<double> CpuBlockSpace::slot(int slot) {
  const Block& s = at(slot);
  ++counters_.synchronizations;
  return std::vector<double>(s.data(), s.data() + s.size());
}

void CpuBlockSpace::zero_slot(int slot) { at(slot).setZero(); }

void CpuBlockSpace::multiply(int q, int p) {
  at(q) = a_ * at(p);
  ++counters_.outer_products;
}

void CpuBlockSpace::set_mass(const CsrMatrix* m) {
  if (m && (m->rows != n_ || m->cols != n_))
    throw InvalidArgument("CpuBlockSpace::set_mass: M is " + std::to_string(m->rows) + " x " +
                          std::to_string(m->cols) + ", the space has " + std::to_string(n_) + " rows");
  mass_ = m ? to_eigen(*m) : Eigen::SparseMatrix<double, Eigen::RowMajor, int>();
  has_mass_ = m != nullptr;
}

void CpuBlockSpace::multiply_mass(int q, int p) {
  if (!has_mass_) throw InvalidArgument("CpuBlockSpace::multiply_mass: no mass matrix was set");
  at(q) = mass_ * at(p);
  ++counters_.outer_products;
}

void CpuBlockSpace::residual(int r, int b, int x) {
  at(r) = at(b) - a_ * at(x);
  ++counters_.outer_products;
  column_norms(r, layout_.column[small::r_norm2]);
}

void CpuBlockSpace::column_norms(int slot, std::int64_t offset) { column_dots(slot, slot, offset); }

void CpuBlockSpace::column_dots(int x, int y, std::int64_t offset) {
  const Eigen::RowVectorXd d = at(x).cwiseProduct(at(y)).colwise().sum();
  std::copy(d.data(), d.data() + k_, small(offset));
}

void CpuBlockSpace::gram(int left, const std::vector<GramTarget>& rights) {
  for (const GramTarget& t : rights)
    Eigen::Map<Eigen::MatrixXd>(small(t.offset), k_, k_) = at(left).transpose() * at(t.slot);
}

void CpuBlockSpace::combine(int dst, bool accumulate, const std::vector<CombineTerm>& terms) {
  Block result = accumulate ? at(dst) : Block::Zero(n_, k_);
  for (const CombineTerm& t : terms) {
    if (t.slot == dst) throw InvalidArgument("CpuBlockSpace::combine: a term reads the destination");
    result.noalias() += t.factor * (at(t.slot) * Eigen::Map<const Eigen::MatrixXd>(small(t.matrix), k_, k_));
  }
  at(dst) = std::move(result);
}

void CpuBlockSpace::small_step(const small::SmallStep& step) {
  small::run_step(small::SerialTeam{}, small_.data(), layout_, step);
}

void CpuBlockSpace::read_small(std::int64_t offset, std::int64_t count, double* out) {
  std::copy(small(offset), small(offset) + count, out);
  ++counters_.synchronizations;
}

void CpuBlockSpace::write_small(std::int64_t offset, const std::vector<double>& values) {
  std::copy(values.begin(), values.end(), small(offset));
}

void CpuBlockSpace::inner_product(const FloatBlock& b, FloatBlock& c, float alpha, float beta) {
  if (inner_.backend == InnerBackend::none) throw InvalidArgument("CpuBlockSpace: no inner operator (backend none)");
  ++counters_.inner_products;
  if (inner_.backend == InnerBackend::cusparse_csr_f32) {
    const FloatBlock product = a32_ * b;
    c = beta == 0.0f ? FloatBlock(alpha * product) : FloatBlock(alpha * product + beta * c);
    return;
  }
  const Precision precision = inner_.op->precision();
  const bool round = b_rounding_ == BRounding::tiles && precision != Precision::split;
  if (round) {
    const std::vector<float> rounded = round_b_like_tiles(b.data(), n_, kp_, precision);
    reference_spmm(*inner_.op, kp_, rounded.data(), kp_, c.data(), kp_, alpha, beta);
  } else {
    reference_spmm(*inner_.op, kp_, b.data(), kp_, c.data(), kp_, alpha, beta);
  }
}

void CpuBlockSpace::float_dots(const FloatBlock& x, const FloatBlock& y) {
  double* d = small(layout_.column[small::dots]);
  for (int c = 0; c < k_; ++c) {
    double sum = 0.0;
    for (std::int32_t i = 0; i < n_; ++i) sum += double(x(i, c)) * double(y(i, c));
    d[c] = sum;
  }
}

void CpuBlockSpace::precondition_chebyshev(int z, int r, const ChebyshevPolynomial& p) {
  const double* scale = small(layout_.column[small::scale]);
  FloatBlock& f = work_[0];
  FloatBlock* current = &work_[1];
  FloatBlock* previous = &work_[2];
  const Block& rr = at(r);
  for (std::int32_t i = 0; i < n_; ++i)
    for (int c = 0; c < kp_; ++c) {
      const float v = c < k_ ? static_cast<float>(row_scale_(i) * rr(i, c) * scale[c]) : 0.0f;
      f(i, c) = v;
      (*current)(i, c) = static_cast<float>(double(v) / p.theta);
    }
  for (std::size_t j = 0; j < p.omega.size(); ++j) {
    const double omega = p.omega[j];
    // previous <- -(omega / theta) A current + (1 - omega) previous (previous = z_0 = 0 at the first product).
    inner_product(*current, *previous, static_cast<float>(-omega / p.theta),
                  j == 0 ? 0.0f : static_cast<float>(1.0 - omega));
    for (std::int32_t i = 0; i < n_; ++i)
      for (int c = 0; c < kp_; ++c)
        (*previous)(i, c) = static_cast<float>(double((*previous)(i, c)) + omega * double((*current)(i, c)) +
                                               omega / p.theta * double(f(i, c)));
    std::swap(current, previous);
  }
  Block& zz = at(z);
  for (std::int32_t i = 0; i < n_; ++i)
    for (int c = 0; c < k_; ++c)
      zz(i, c) = scale[c] != 0.0 ? double((*current)(i, c)) * row_scale_(i) / scale[c] : 0.0;
}

void CpuBlockSpace::precondition_jacobi(int z, int r) {
  const double* act = small(layout_.column[small::active]);
  Block& zz = at(z);
  const Block& rr = at(r);
  for (int c = 0; c < k_; ++c) zz.col(c) = rr.col(c).cwiseProduct(inverse_diagonal_) * (act[c] != 0.0 ? 1.0 : 0.0);
}

void CpuBlockSpace::precondition_identity(int z, int r) {
  const double* act = small(layout_.column[small::active]);
  Block& zz = at(z);
  const Block& rr = at(r);
  for (int c = 0; c < k_; ++c) zz.col(c) = rr.col(c) * (act[c] != 0.0 ? 1.0 : 0.0);
}

void CpuBlockSpace::lanczos(int steps, std::uint64_t seed) {
  if (steps > layout_.lanczos_steps) throw InvalidArgument("CpuBlockSpace::lanczos: more steps than the layout holds");
  FloatBlock* previous = &work_[0];
  FloatBlock* current = &work_[1];
  FloatBlock* next = &work_[2];
  previous->setZero();
  for (std::int32_t i = 0; i < n_; ++i)
    for (int c = 0; c < kp_; ++c) (*current)(i, c) = c < k_ ? small::lanczos_start(i, c, seed) : 0.0f;
  const double* inv_beta = small(layout_.column[small::lanczos_inv_beta]);
  const auto scale_by_inverse_beta = [&](FloatBlock& v) {
    for (std::int32_t i = 0; i < n_; ++i)
      for (int c = 0; c < kp_; ++c) v(i, c) = c < k_ ? static_cast<float>(double(v(i, c)) * inv_beta[c]) : 0.0f;
  };
  float_dots(*current, *current);
  small::SmallStep step;
  step.kind = small::StepKind::lanczos_start;
  small_step(step);
  scale_by_inverse_beta(*current);
  for (int j = 0; j < steps; ++j) {
    inner_product(*current, *next, 1.0f, 0.0f);
    float_dots(*current, *next);
    step.kind = small::StepKind::lanczos_alpha;
    step.slot = j;
    small_step(step);
    const double* alpha = small(layout_.lanczos_alpha + std::int64_t(j) * k_);
    const double* beta = j > 0 ? small(layout_.lanczos_beta + std::int64_t(j - 1) * k_) : nullptr;
    for (std::int32_t i = 0; i < n_; ++i)
      for (int c = 0; c < k_; ++c)
        (*next)(i, c) = static_cast<float>(double((*next)(i, c)) - alpha[c] * double((*current)(i, c)) -
                                           (beta ? beta[c] * double((*previous)(i, c)) : 0.0));
    float_dots(*next, *next);
    step.kind = small::StepKind::lanczos_beta;
    small_step(step);
    scale_by_inverse_beta(*next);
    FloatBlock* spare = previous;
    previous = current;
    current = next;
    next = spare;
  }
}

void CpuBlockSpace::pcg_direction(int p, int r, bool first) {
  Block& pp = at(p);
  const Block& rr = at(r);
  const double* beta = small(layout_.column[small::beta]);
  double* rho = small(layout_.column[small::rho]);
  for (int c = 0; c < k_; ++c) {
    const Eigen::VectorXd z = rr.col(c).cwiseProduct(inverse_diagonal_);
    if (first) {
      pp.col(c) = z;
      rho[c] = rr.col(c).dot(z);
    } else {
      pp.col(c) = z + beta[c] * pp.col(c);
    }
  }
}

void CpuBlockSpace::pcg_update(int x, int p, int r, int q) {
  const double* alpha = small(layout_.column[small::alpha]);
  double* rho_next = small(layout_.column[small::rho_next]);
  double* rr2 = small(layout_.column[small::r_norm2]);
  Block& xx = at(x);
  Block& rr = at(r);
  for (int c = 0; c < k_; ++c) {
    xx.col(c) += alpha[c] * at(p).col(c);
    rr.col(c) -= alpha[c] * at(q).col(c);
    rho_next[c] = rr.col(c).dot(rr.col(c).cwiseProduct(inverse_diagonal_));
    rr2[c] = rr.col(c).squaredNorm();
  }
}

}  // namespace bcsr24::solver
