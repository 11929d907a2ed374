// The outer iteration: flexible conjugate gradient (Notay 2000) in fp64 for k right-hand sides at once,
// preconditioned by the fp32 block-CG inner solve, written against an abstract space (GPU or CPU).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "block_cg.hpp"

namespace bcsr24::solver {

/// n x k fp64 blocks ("slots") and the operations the outer iteration needs. Slot numbers are fixed by
/// flexible_cg (see OuterSlots); the space must provide outer_slot_count(memory) of them.
class OuterSpace {
 public:
  virtual ~OuterSpace() = default;
  virtual int k() const = 0;
  /// r = b - A x in fp64 (the true residual).
  virtual void residual(int r, int b, int x) = 0;
  /// q = A p in fp64.
  virtual void multiply(int q, int p) = 0;
  /// For each pair (x, y): k column dot products x_j . y_j, appended to `out` (pair-major). Synchronises.
  virtual void dots(const std::vector<std::pair<int, int>>& pairs, std::vector<double>& out) = 0;
  /// dst_j = z_j - sum_t coef[t * k + j] * p_t,j (dst differs from z and from every p_t).
  virtual void combine(int dst, int z, const std::vector<int>& p, const std::vector<double>& coef) = 0;
  /// x_j += alpha_j p_j and r_j -= alpha_j q_j.
  virtual void update(int x, int p, int r, int q, const std::vector<double>& alpha) = 0;
  /// z = the inner solve applied to r: column j is solved with right-hand side r_j * column_scale_j (0 skips
  /// the column: z_j = 0), then divided by column_scale_j.
  virtual InnerStats precondition_inner(int z, int r, const std::vector<double>& column_scale,
                                        const InnerOptions& options) = 0;
  /// z_j = D^{-1} r_j (Jacobi, fp64) for columns with column_mask_j != 0, else 0.
  virtual void precondition_jacobi(int z, int r, const std::vector<double>& column_mask) = 0;
};

/// The operations above as the GPU and the CPU space declare them (in the public part of each): one list, so the
/// two implementations cannot drift apart from the interface or from each other.
#define BCSR24_OUTER_SPACE_OPERATIONS                                                                 \
  void residual(int r, int b, int x) override;                                                        \
  void multiply(int q, int p) override;                                                               \
  void dots(const std::vector<std::pair<int, int>>& pairs, std::vector<double>& out) override;        \
  void combine(int dst, int z, const std::vector<int>& p, const std::vector<double>& coef) override;  \
  void update(int x, int p, int r, int q, const std::vector<double>& alpha) override;                 \
  InnerStats precondition_inner(int z, int r, const std::vector<double>& column_scale,                \
                                const InnerOptions& options) override;                                \
  void precondition_jacobi(int z, int r, const std::vector<double>& column_mask) override;

/// Slots used by flexible_cg: x, r, b, z, then memory + 1 pairs (p_t, q_t).
struct OuterSlots {
  static constexpr int x = 0, r = 1, b = 2, z = 3, first_direction = 4;
  static int p(int t) { return first_direction + 2 * t; }
  static int q(int t) { return first_direction + 2 * t + 1; }
};
inline int outer_slot_count(int memory) { return OuterSlots::first_direction + 2 * (memory + 1); }

enum class Fallback { jacobi, none };

struct OuterOptions {
  double tolerance = 1e-10;  ///< on max_j |b_j - A x_j| / |b_j|, checked with the true fp64 residual
  int max_outer = 40000;
  int memory = 8;            ///< previous directions each new one is A-orthogonalised against (truncated FCG)
  /// "Inner solve not helping": over the last stall_window outer iterations with the inner solve, the best
  /// residual so far fell by less than 1 / stall_factor.
  int stall_window = 5;
  double stall_factor = 0.5;
  /// What to do then: continue with a Jacobi-preconditioned fp64 outer iteration, or stop.
  Fallback fallback = Fallback::jacobi;
  /// Stagnation in the Jacobi phase: less than 1 / stall_factor reduction over this many iterations. CG on
  /// ill-conditioned matrices has long plateaus (bcsstk20 with Jacobi: ~2000 iterations), so the window is long.
  int fallback_window = 4000;
  /// Recompute the true residual every this many iterations (limits drift of the recursive one).
  int replace_every = 50;
  bool use_inner = true;     ///< false: Jacobi-preconditioned fp64 FCG from the start (a reference)
};

enum class StopReason { converged, max_iterations, stagnation, inner_not_helping, breakdown };
const char* stop_reason_name(StopReason reason);

/// One outer iteration, for reports.
struct OuterIterationRecord {
  int iteration = 0;
  double max_relative_residual = 0.0;  ///< after the iteration (recursive residual)
  bool inner = false;                  ///< preconditioned by the inner solve (else Jacobi)
  InnerStats inner_stats;
};

struct OuterResult {
  StopReason stop = StopReason::max_iterations;
  std::string message;                       ///< why it stopped, in words
  int outer_iterations = 0;
  int inner_products = 0;                    ///< A * P products over all inner solves
  int inner_solves = 0;
  int inner_breakdowns = 0;
  int jacobi_iterations = 0;                 ///< outer iterations preconditioned by Jacobi
  int fallback_iteration = -1;               ///< where the inner solve was given up, or -1
  std::string fallback_reason;
  int residual_replacements = 0;
  std::vector<double> initial_relative_residual;  ///< per column (x0 = 0 gives 1)
  std::vector<double> final_relative_residual;    ///< per column, true fp64 residual
  double max_final_relative_residual = 0.0;
  std::vector<OuterIterationRecord> history;
};

/// Observer called after every outer iteration (progress printing).
using OuterObserver = std::function<void(const OuterIterationRecord&)>;

/// Solves A X = B for the k columns of slot b, starting from slot x (usually zero). Stops when every column
/// reaches the tolerance in the true fp64 residual, or with a stated reason. Throws only what the space throws.
OuterResult flexible_cg(OuterSpace& space, const OuterOptions& options, const InnerOptions& inner,
                        const OuterObserver& observer = {});

}  // namespace bcsr24::solver
