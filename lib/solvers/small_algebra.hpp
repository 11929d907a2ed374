// The small dense algebra of the block solver (per-column scalars and k x k matrices, k <= 64), written once for
// both sides: the GPU runs each step as one thread block (block_space_kernels.cu), the CPU space calls the same
// functions with a one-thread team, so the CPU tests run the arithmetic the GPU runs. Plain C++, no Eigen, no
// allocation: everything lives in one array of doubles ("the small buffer") at offsets fixed by SmallLayout.
#pragma once

#include <math.h>  // sqrt and HUGE_VAL in host and device code alike

#include <cstdint>

#if defined(__CUDACC__)
#define BCSR24_HD __host__ __device__
// The templates below call the team's sync(), which is device-only for the GPU team: instantiated only there.
#define BCSR24_NO_EXEC_CHECK _Pragma("nv_exec_check_disable")
#else
#define BCSR24_HD
#define BCSR24_NO_EXEC_CHECK
#endif

namespace bcsr24::solver::small {

/// Most right-hand sides of the block solver: one lane per column in the GPU's small steps, and k x k matrices
/// of 32 KiB at most.
inline constexpr int kMaxColumns = 64;
/// Most direction blocks the flexible block CG keeps (each costs two n x k fp64 blocks).
inline constexpr int kMaxMemory = 8;
/// Most Lanczos steps of the spectrum estimate.
inline constexpr int kMaxLanczos = 200;
/// Threads of a small step on the GPU (>= kMaxColumns: one lane per column in the column-parallel loops).
inline constexpr int kTeamThreads = 64;

/// Per-column vectors of the small buffer (k doubles each).
enum Column : int {
  b_norm2,     ///< |b_j|^2
  r_norm2,     ///< |r_j|^2 of the latest residual
  relative,    ///< |r_j| / |b_j|
  scale,       ///< preconditioner input scale: 1 / |r_j| for active columns, 0 for converged ones
  active,      ///< 1: the column has not reached the tolerance
  rho,         ///< PCG: r_j . z_j of the current iteration
  rho_next,    ///< PCG: r_j . z_j after the update
  pq,          ///< PCG: p_j . q_j
  alpha,       ///< PCG: step length per column
  beta,        ///< PCG: direction update per column
  lanczos_inv_beta,  ///< Lanczos: 1 / beta of the latest step (0 once a column's recurrence ended)
  lanczos_length,    ///< Lanczos: steps each column completed
  dots,        ///< scratch: column dot products written by the tall kernels
  kColumns
};

/// k x k matrices of the small buffer (column-major, leading dimension k).
enum Matrix : int {
  gram,        ///< scratch Gram matrix written by the tall kernels (left^T right)
  gram2,       ///< a second one (P^T R next to P^T Q)
  coef_t,      ///< whitening: new directions P = W T
  coef_alpha,  ///< step: X += P alpha
  work,        ///< scratch of the small steps (normalised Gram, Cholesky factor of it)
  work2,       ///< scratch (its triangular inverse)
  kMatrices
};

/// Fields at the start of the status area, which the host reads once per iteration (followed by `relative`).
enum Status : int {
  status_iteration,
  status_max_relative,  ///< max_j |r_j| / |b_j|
  status_active,        ///< columns above the tolerance
  status_breakdown,     ///< 0, or 1: P^T A P not positive definite; 2: p_j^T A p_j <= 0 (PCG); 3: non-finite
  status_breakdown_value,
  status_breakdown_column,
  status_directions,    ///< new search directions kept this iteration
  status_deflated,      ///< candidate directions dropped as (numerically) dependent
  kStatusFields = 12
};

/// Offsets (in doubles) of every named array in the small buffer. Same layout on the host and the device.
struct SmallLayout {
  int k = 0;
  int memory = 1;          ///< ring blocks of the flexible block CG
  int lanczos_steps = 0;
  std::int64_t column[kColumns] = {};
  std::int64_t matrix[kMatrices] = {};
  std::int64_t ring_chol = 0;   ///< memory x (k x k): Cholesky factor of P_t^T Q_t
  std::int64_t ring_gram = 0;   ///< memory x (k x k): Z^T Q_t
  std::int64_t ring_coef = 0;   ///< memory x (k x k): orthogonalisation coefficients (P_t^T Q_t)^-1 Q_t^T Z
  std::int64_t ring_live = 0;   ///< memory: live directions of each stored block
  std::int64_t lanczos_alpha = 0, lanczos_beta = 0;  ///< lanczos_steps x k each, step-major
  std::int64_t scratch = 0;     ///< 8 k + 8 doubles for the small steps' bookkeeping
  std::int64_t status = 0;      ///< kStatusFields + k (the per-column relative residuals)
  std::int64_t total = 0;

  BCSR24_HD std::int64_t kk() const { return std::int64_t(k) * k; }
  BCSR24_HD std::int64_t ring(std::int64_t base, int t) const { return base + t * kk(); }
  BCSR24_HD std::int64_t status_count() const { return kStatusFields + k; }
};

/// The layout for k columns, `memory` ring blocks and `lanczos_steps` steps (all within the limits above).
inline SmallLayout make_layout(int k, int memory, int lanczos_steps) {
  SmallLayout l;
  l.k = k;
  l.memory = memory;
  l.lanczos_steps = lanczos_steps;
  std::int64_t at = 0;
  for (int c = 0; c < kColumns; ++c, at += k) l.column[c] = at;
  for (int m = 0; m < kMatrices; ++m, at += l.kk()) l.matrix[m] = at;
  l.ring_chol = at;
  at += memory * l.kk();
  l.ring_gram = at;
  at += memory * l.kk();
  l.ring_coef = at;
  at += memory * l.kk();
  l.ring_live = at;
  at += memory;
  l.lanczos_alpha = at;
  at += std::int64_t(lanczos_steps) * k;
  l.lanczos_beta = at;
  at += std::int64_t(lanczos_steps) * k;
  l.scratch = at;
  at += 8 * k + 8;
  l.status = at;
  at += l.status_count();
  l.total = at;
  return l;
}

/// The steps, each one launch on the GPU. Arguments in SmallStep.
enum class StepKind : int {
  bfcg_orthogonalize,  ///< ring_coef[t] = (P_t^T Q_t)^-1 (Z^T Q_t)^T for the `count` slots in `slots`
  bfcg_whiten,         ///< coef_t from gram = W^T W of the active columns; live count into ring_live[slot]
  bfcg_step,           ///< Cholesky of gram = P^T Q into ring_chol[slot]; coef_alpha = (P^T Q)^-1 gram2 (= P^T R)
  status,              ///< relative, active, scale and the status fields from r_norm2 and b_norm2
  pcg_alpha,           ///< alpha_j = rho_j / pq_j for active columns, else 0
  pcg_beta,            ///< beta_j = rho_next_j / rho_j, rho = rho_next, then status
  lanczos_start,       ///< lanczos_inv_beta = 1 / sqrt(dots) (normalises the start vectors), lengths 0
  lanczos_alpha,       ///< lanczos_alpha[step] = dots
  lanczos_beta         ///< lanczos_beta[step] = sqrt(dots); inverse (or 0 when the recurrence ended)
};

struct SmallStep {
  StepKind kind = StepKind::status;
  int slot = 0;                      ///< ring slot (whiten, step) or Lanczos step
  int count = 0;                     ///< orthogonalize: stored blocks
  int slots[kMaxMemory] = {};        ///< orthogonalize: their ring slots
  int iteration = 0;                 ///< status: written into status_iteration
  double tolerance = 0.0;            ///< status: on |r_j| / |b_j|
  double absolute_tolerance = 0.0;   ///< status: a column is also done once |r_j| <= this
  double drop_tolerance = 1e-10;     ///< whiten: pivot threshold of the normalised Gram
};

/// A team of one: the CPU side.
struct SerialTeam {
  BCSR24_HD int rank() const { return 0; }
  BCSR24_HD int size() const { return 1; }
  BCSR24_HD void sync() const {}
};

namespace detail {

BCSR24_HD inline bool finite(double v) { return v == v && v - v == 0.0; }

/// L L^T = A for the leading s x s block of the symmetric part of `a` (k x k, column-major); L into `l` (k x k,
/// zero outside the lower s x s triangle). Returns false when a pivot is not positive (A not positive definite),
/// with the failing pivot in *bad_value and its index in *bad_index.
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD bool cholesky(const Team& team, int k, int s, const double* a, double* l, double* flag, double* bad_value,
                        double* bad_index) {
  for (int e = team.rank(); e < k * k; e += team.size()) l[e] = 0.0;
  if (team.rank() == 0) *flag = 0.0;
  team.sync();
  for (int j = 0; j < s; ++j) {
    if (team.rank() == 0) {
      double d = a[j + j * k];
      for (int t = 0; t < j; ++t) d -= l[j + t * k] * l[j + t * k];
      if (!(d > 0.0) || !finite(d)) {
        *flag = 1.0;
        *bad_value = d;
        *bad_index = j;
      } else {
        l[j + j * k] = sqrt(d);
      }
    }
    team.sync();
    if (*flag != 0.0) return false;
    const double pivot = l[j + j * k];
    for (int i = j + 1 + team.rank(); i < s; i += team.size()) {
      double v = 0.5 * (a[i + j * k] + a[j + i * k]);
      for (int t = 0; t < j; ++t) v -= l[i + t * k] * l[j + t * k];
      l[i + j * k] = v / pivot;
    }
    team.sync();
  }
  return true;
}

/// x = (L L^T)^-1 b for the leading s rows, one column per lane: b(row, c) = b[row * b_row + c * b_col]; x is k x k
/// column-major with rows s.. set to 0. `columns` columns are solved.
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void cholesky_solve(const Team& team, int k, int s, const double* l, const double* b, int b_row, int b_col,
                              int columns, double* x) {
  for (int c = team.rank(); c < columns; c += team.size()) {
    double* xc = x + std::int64_t(c) * k;
    for (int i = 0; i < s; ++i) {
      double v = b[i * b_row + c * b_col];
      for (int t = 0; t < i; ++t) v -= l[i + t * k] * xc[t];
      xc[i] = v / l[i + i * k];
    }
    for (int i = s - 1; i >= 0; --i) {
      double v = xc[i];
      for (int t = i + 1; t < s; ++t) v -= l[t + i * k] * xc[t];
      xc[i] = v / l[i + i * k];
    }
    for (int i = s; i < k; ++i) xc[i] = 0.0;
  }
  team.sync();
}

}  // namespace detail

/// The flexible block CG's coefficients of the new block against stored block t:
/// ring_coef[t] = (P_t^T Q_t)^-1 Q_t^T Z, rows beyond block t's live directions zero.
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void bfcg_orthogonalize(const Team& team, double* base, const SmallLayout& l, const SmallStep& step) {
  for (int i = 0; i < step.count; ++i) {
    const int t = step.slots[i];
    const int s = static_cast<int>(base[l.ring_live + t]);
    // Q_t^T Z (row: direction of block t, column: right-hand side) is the transpose of the stored Z^T Q_t.
    const double* zq = base + l.ring(l.ring_gram, t);
    detail::cholesky_solve(team, l.k, s, base + l.ring(l.ring_chol, t), zq, l.k, 1, l.k, base + l.ring(l.ring_coef, t));
  }
}

/// Breakdown-free whitening: T with (W T)^T (W T) = I on the active columns of W, from gram = W^T W. Columns are
/// normalised first (a nearly converged column is not mistaken for a dependent one); a pivoted Cholesky of the
/// normalised Gram keeps a column while its part orthogonal to the kept ones has squared norm >= drop_tolerance
/// and drops the rest (deflation). T's columns beyond the kept count s are zero; s goes to ring_live[slot].
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void bfcg_whiten(const Team& team, double* base, const SmallLayout& l, const SmallStep& step) {
  const int k = l.k;
  const double* g = base + l.matrix[gram];
  const double* act = base + l.column[active];
  double* t = base + l.matrix[coef_t];
  double* c = base + l.matrix[work];     // normalised Gram of the included columns (m x m, leading dim k)
  double* lf = base + l.matrix[work2];   // its pivoted Cholesky factor (m x m, leading dim k)
  double* sc = base + l.scratch;         // index[k] inv_norm[k] d[k] used[k] pivot[k] + counters
  double* index = sc, *inv_norm = sc + k, *d = sc + 2 * k, *used = sc + 3 * k, *pivot = sc + 4 * k;
  double* counters = sc + 5 * k;         // [0] included m, [1] kept s, [2] stop flag
  double* status = base + l.status;
  if (team.rank() == 0) {
    int m = 0;
    for (int j = 0; j < k; ++j)
      if (act[j] != 0.0 && g[j + j * k] > 0.0 && detail::finite(g[j + j * k])) index[m++] = j;
    counters[0] = m;
    counters[1] = 0;
    counters[2] = 0;
  }
  for (int e = team.rank(); e < k * k; e += team.size()) t[e] = 0.0;
  team.sync();
  const int m = static_cast<int>(counters[0]);
  for (int a = team.rank(); a < m; a += team.size()) {
    const int ja = static_cast<int>(index[a]);
    inv_norm[a] = 1.0 / sqrt(g[ja + ja * k]);
    used[a] = 0.0;
  }
  team.sync();
  for (int e = team.rank(); e < m * m; e += team.size()) {
    const int a = e % m, b = e / m;
    const int ja = static_cast<int>(index[a]), jb = static_cast<int>(index[b]);
    c[a + b * k] = 0.5 * (g[ja + jb * k] + g[jb + ja * k]) * inv_norm[a] * inv_norm[b];
    lf[a + b * k] = 0.0;
  }
  team.sync();
  for (int a = team.rank(); a < m; a += team.size()) d[a] = c[a + a * k];
  team.sync();
  for (int r = 0; r < m; ++r) {
    if (team.rank() == 0) {
      // The largest remaining pivot; among pivots within 1e-6 of it the first, so that rounding differences (GPU
      // against CPU, or two runs with sums in another order) do not change the choice between near-equal columns.
      double largest = 0.0;
      for (int a = 0; a < m; ++a)
        if (used[a] == 0.0 && d[a] > largest) largest = d[a];
      int best = -1;
      for (int a = 0; a < m && best < 0; ++a)
        if (used[a] == 0.0 && d[a] >= largest * (1.0 - 1e-6) && d[a] > 0.0) best = a;
      const double value = best >= 0 ? d[best] : 0.0;
      if (best < 0 || !(value >= step.drop_tolerance)) {
        counters[2] = 1.0;
      } else {
        used[best] = 1.0;
        pivot[r] = best;
        lf[best + r * k] = sqrt(value);
        counters[1] = r + 1;
      }
    }
    team.sync();
    if (counters[2] != 0.0) break;
    const int best = static_cast<int>(pivot[r]);
    const double diagonal = lf[best + r * k];
    for (int a = team.rank(); a < m; a += team.size()) {
      if (used[a] != 0.0) continue;
      double v = c[a + best * k];
      for (int q = 0; q < r; ++q) v -= lf[a + q * k] * lf[best + q * k];
      v /= diagonal;
      lf[a + r * k] = v;
      d[a] -= v * v;
    }
    team.sync();
  }
  const int s = static_cast<int>(counters[1]);
  // Column cc of the inverse of the kept factor Ls (row i = pivot i): forward substitution, one column per lane;
  // stored into `c` (no longer needed) as inv(i, cc).
  team.sync();
  for (int cc = team.rank(); cc < s; cc += team.size()) {
    for (int i = 0; i < s; ++i) {
      double v = i == cc ? 1.0 : 0.0;
      const int pi = static_cast<int>(pivot[i]);
      for (int q = cc; q < i; ++q) v -= lf[pi + q * k] * c[q + cc * k];
      c[i + cc * k] = v / lf[pi + i * k];
    }
  }
  team.sync();
  // P = W_included N^-1 Pivot Ls^-T: T(index[pivot[i]], cc) = inv_norm[pivot[i]] * inv(cc, i).
  for (int e = team.rank(); e < s * s; e += team.size()) {
    const int i = e % s, cc = e / s;
    const int pi = static_cast<int>(pivot[i]);
    t[static_cast<int>(index[pi]) + cc * k] = cc >= i ? inv_norm[pi] * c[cc + i * k] : 0.0;
  }
  if (team.rank() == 0) {
    base[l.ring_live + step.slot] = s;
    status[status_directions] = s;
    status[status_deflated] = m - s;
  }
  team.sync();
}

/// The step along the new block: Cholesky of P^T Q (gram) kept for later orthogonalisations, and
/// coef_alpha = (P^T Q)^-1 P^T R (gram2). P^T A P not positive definite in fp64 means A is not SPD: breakdown.
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void bfcg_step(const Team& team, double* base, const SmallLayout& l, const SmallStep& step) {
  const int k = l.k;
  const int s = static_cast<int>(base[l.ring_live + step.slot]);
  double* chol = base + l.ring(l.ring_chol, step.slot);
  double* status = base + l.status;
  double* flag = base + l.scratch + 5 * k + 3;
  const bool ok = detail::cholesky(team, k, s, base + l.matrix[gram], chol, flag, status + status_breakdown_value,
                                   status + status_breakdown_column);
  if (!ok) {
    for (int e = team.rank(); e < k * k; e += team.size()) base[l.matrix[coef_alpha] + e] = 0.0;
    if (team.rank() == 0) status[status_breakdown] = 1.0;
    team.sync();
    return;
  }
  detail::cholesky_solve(team, k, s, chol, base + l.matrix[gram2], 1, k, k, base + l.matrix[coef_alpha]);
}

/// Residual bookkeeping after a residual's column norms landed in r_norm2 (b_norm2 set before the first call).
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void update_status(const Team& team, double* base, const SmallLayout& l, const SmallStep& step) {
  const int k = l.k;
  const double* bb = base + l.column[b_norm2];
  const double* rr = base + l.column[r_norm2];
  double* rel = base + l.column[relative];
  double* act = base + l.column[active];
  double* sc = base + l.column[scale];
  double* status = base + l.status;
  for (int j = team.rank(); j < k; j += team.size()) {
    const double rn = sqrt(rr[j] > 0.0 ? rr[j] : 0.0);
    const double bn = sqrt(bb[j] > 0.0 ? bb[j] : 0.0);
    const double v = detail::finite(rr[j]) ? (bn > 0.0 ? rn / bn : rn) : HUGE_VAL;
    // |r_j| <= max(tolerance |b_j|, absolute_tolerance), in the relative measure v.
    const double relative_floor = bn > 0.0 ? step.absolute_tolerance / bn : step.absolute_tolerance;
    const double threshold = step.tolerance > relative_floor ? step.tolerance : relative_floor;
    rel[j] = v;
    act[j] = v > threshold ? 1.0 : 0.0;
    sc[j] = v > threshold && rn > 0.0 && detail::finite(rn) ? 1.0 / rn : 0.0;
    status[kStatusFields + j] = v;
  }
  team.sync();
  if (team.rank() == 0) {
    double worst = 0.0;
    int count = 0;
    bool nonfinite = false;
    for (int j = 0; j < k; ++j) {
      worst = rel[j] > worst ? rel[j] : worst;
      count += act[j] != 0.0 ? 1 : 0;
      nonfinite = nonfinite || !detail::finite(rel[j]);
    }
    status[status_iteration] = step.iteration;
    status[status_max_relative] = worst;
    status[status_active] = count;
    if (nonfinite && status[status_breakdown] == 0.0) status[status_breakdown] = 3.0;
  }
  team.sync();
}

/// PCG: alpha_j = rho_j / (p_j . q_j) for active columns; p_j . q_j <= 0 (A not SPD) is a breakdown, reported for
/// the first such column.
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void pcg_alpha(const Team& team, double* base, const SmallLayout& l) {
  for (int j = team.rank(); j < l.k; j += team.size()) {
    const double pq_j = base[l.column[pq] + j];
    const bool ok = pq_j > 0.0 && detail::finite(pq_j);
    base[l.column[alpha] + j] = base[l.column[active] + j] != 0.0 && ok ? base[l.column[rho] + j] / pq_j : 0.0;
  }
  team.sync();
  if (team.rank() == 0) {
    double* status = base + l.status;
    for (int j = 0; j < l.k && status[status_breakdown] == 0.0; ++j) {
      const double pq_j = base[l.column[pq] + j];
      if (base[l.column[active] + j] != 0.0 && !(pq_j > 0.0 && detail::finite(pq_j))) {
        status[status_breakdown] = 2.0;
        status[status_breakdown_value] = pq_j;
        status[status_breakdown_column] = j;
      }
    }
  }
  team.sync();
}

/// PCG: beta_j = rho_next_j / rho_j (0 for columns that reached the tolerance), then the status.
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void pcg_beta(const Team& team, double* base, const SmallLayout& l, const SmallStep& step) {
  for (int j = team.rank(); j < l.k; j += team.size()) {
    const double old = base[l.column[rho] + j], now = base[l.column[rho_next] + j];
    base[l.column[beta] + j] = old > 0.0 ? now / old : 0.0;
    base[l.column[rho] + j] = now;
  }
  team.sync();
  update_status(team, base, l, step);
  for (int j = team.rank(); j < l.k; j += team.size())
    if (base[l.column[active] + j] == 0.0) base[l.column[beta] + j] = 0.0;
  team.sync();
}

/// Lanczos: the start vectors' norms from dots; a zero column never starts.
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void lanczos_start_step(const Team& team, double* base, const SmallLayout& l) {
  for (int j = team.rank(); j < l.k; j += team.size()) {
    const double b = sqrt(base[l.column[dots] + j] > 0.0 ? base[l.column[dots] + j] : 0.0);
    base[l.column[lanczos_inv_beta] + j] = b > 0.0 && detail::finite(b) ? 1.0 / b : 0.0;
    base[l.column[lanczos_length] + j] = 0.0;
  }
  team.sync();
}

/// Lanczos: alpha of step `slot` from the column dots V . A V.
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void lanczos_alpha_step(const Team& team, double* base, const SmallLayout& l, const SmallStep& step) {
  for (int j = team.rank(); j < l.k; j += team.size())
    base[l.lanczos_alpha + std::int64_t(step.slot) * l.k + j] =
        base[l.column[lanczos_inv_beta] + j] != 0.0 ? base[l.column[dots] + j] : 0.0;
  team.sync();
}

/// Lanczos: beta of step `slot` from the column norms of the new vector; a column whose beta fell below 1e-10 of
/// the scale of its tridiagonal (or is not finite) has found an invariant subspace and stops (inverse 0).
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void lanczos_beta_step(const Team& team, double* base, const SmallLayout& l, const SmallStep& step) {
  for (int j = team.rank(); j < l.k; j += team.size()) {
    double* inv = base + l.column[lanczos_inv_beta] + j;
    const double b = sqrt(base[l.column[dots] + j] > 0.0 ? base[l.column[dots] + j] : 0.0);
    const double a = base[l.lanczos_alpha + std::int64_t(step.slot) * l.k + j];
    const bool alive = *inv != 0.0;
    const bool going = alive && detail::finite(b) && b > 1e-10 * (a < 0 ? -a : a) && b > 0.0;
    base[l.lanczos_beta + std::int64_t(step.slot) * l.k + j] = going ? b : 0.0;
    if (alive) base[l.column[lanczos_length] + j] = step.slot + 1;
    *inv = going ? 1.0 / b : 0.0;
  }
  team.sync();
}

/// One step, dispatched by kind: what a GPU small-step launch and a CPU call both run.
BCSR24_NO_EXEC_CHECK
template <class Team>
BCSR24_HD void run_step(const Team& team, double* base, const SmallLayout& l, const SmallStep& step) {
  switch (step.kind) {
    case StepKind::bfcg_orthogonalize: bfcg_orthogonalize(team, base, l, step); break;
    case StepKind::bfcg_whiten: bfcg_whiten(team, base, l, step); break;
    case StepKind::bfcg_step: bfcg_step(team, base, l, step); break;
    case StepKind::status: update_status(team, base, l, step); break;
    case StepKind::pcg_alpha: pcg_alpha(team, base, l); break;
    case StepKind::pcg_beta: pcg_beta(team, base, l, step); break;
    case StepKind::lanczos_start: lanczos_start_step(team, base, l); break;
    case StepKind::lanczos_alpha: lanczos_alpha_step(team, base, l, step); break;
    case StepKind::lanczos_beta: lanczos_beta_step(team, base, l, step); break;
  }
}

/// Deterministic start vectors of the Lanczos estimate: uniform in [-1, 1) from a hash of (row, column, seed), the
/// same on both sides without a random-number state.
BCSR24_HD inline float lanczos_start(std::int64_t row, int column, std::uint64_t seed) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (std::uint64_t(row) * 131u + std::uint64_t(column) + 1u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(double(z >> 11) * 0x1.0p-52 - 1.0);
}

}  // namespace bcsr24::solver::small
