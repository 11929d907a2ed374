// Flexible block CG: the host only enqueues; the coefficients come from small steps on the device, and the status
// read at the end of each iteration is the single synchronisation.
#include "block_fcg.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "bcsr24/error.hpp"
#include "sci_text.hpp"

namespace bcsr24::solver {

const char* block_stop_name(BlockStop stop) noexcept {
  switch (stop) {
    case BlockStop::converged: return "converged";
    case BlockStop::max_iterations: return "max_iterations";
    case BlockStop::stagnation: return "stagnation";
    case BlockStop::breakdown: return "breakdown";
    case BlockStop::time_limit: return "time_limit";
  }
  return "unknown";
}

namespace {

/// The status area: header fields, then the per-column relative residuals.
struct StatusView {
  std::vector<double> values;
  double field(small::Status s) const { return values[std::size_t(s)]; }
  std::vector<double> relative(int k) const {
    return std::vector<double>(values.begin() + small::kStatusFields, values.begin() + small::kStatusFields + k);
  }
};

StatusView read_status(BlockSpace& space) {
  const small::SmallLayout& l = space.layout();
  StatusView s;
  s.values.resize(std::size_t(l.status_count()));
  space.read_small(l.status, l.status_count(), s.values.data());
  return s;
}

/// One block FCG run: the ring of stored directions, the status of the last read, the progress record, and one
/// member per step of an iteration.
class BlockFcg {
 public:
  BlockFcg(BlockSpace& space, const ChebyshevPolynomial* chebyshev, const BlockFcgOptions& options,
           const BlockObserver& observer)
      : space_(space), l_(space.layout()), k_(space.k()), options_(options), observer_(observer),
        preconditioner_(chebyshev), before_(space.counters()) {
    if (options.memory < 1 || options.memory > l_.memory)
      throw InvalidArgument("block_fcg: memory " + std::to_string(options.memory) + " outside 1 .. " +
                            std::to_string(l_.memory) + " (the space's)");
    if (options.replace_every < 1) throw InvalidArgument("block_fcg: replace_every must be >= 1");
    status_step_.kind = small::StepKind::status;
    status_step_.tolerance = options.tolerance;
    status_step_.absolute_tolerance = options.absolute_tolerance;
  }

  BlockFcgResult run() {
    // A fresh status area, then r = b - A x (a product, but it also gives the norms in one pass).
    space_.write_small(l_.status, std::vector<double>(std::size_t(l_.status_count()), 0.0));
    if (!options_.initial_guess) space_.zero_slot(S::x);
    space_.column_norms(S::b, l_.column[small::b_norm2]);
    space_.residual(S::r, S::b, S::x);
    space_.small_step(status_step_);
    status_ = read_status(space_);
    result_.initial_relative = status_.relative(k_);
    best_ = status_.field(small::status_max_relative);
    best_history_.push_back(best_);
    while (!stopped()) {
      ++it_;
      next_direction();
      const bool replaced = galerkin_step();
      record_iteration(replaced);
      if (!keeps_progressing()) break;
    }
    result_.final_relative = status_.relative(k_);
    result_.max_final_relative = status_.field(small::status_max_relative);
    const SpaceCounters after = space_.counters();
    result_.synchronizations = after.synchronizations - before_.synchronizations - 1;  // the initial status is setup
    result_.inner_products = after.inner_products - before_.inner_products;
    result_.outer_products = after.outer_products - before_.outer_products;
    return result_;
  }

 private:
  using S = BlockSlots;

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void finish(BlockStop why, const std::string& message) {
    result_.stop = why;
    result_.message = message;
  }

  /// The last status decides: breakdown, converged (in the true residual), or a limit. True to stop.
  bool stopped() {
    for (;;) {
      const int active = static_cast<int>(status_.field(small::status_active));
      const double worst = status_.field(small::status_max_relative);
      if (status_.field(small::status_breakdown) != 0.0) {
        const int code = static_cast<int>(status_.field(small::status_breakdown));
        finish(BlockStop::breakdown,
               code == 1 ? "stopped: breakdown: P^T A P is not positive definite in fp64 (pivot " +
                               sci(status_.field(small::status_breakdown_value)) + "): the matrix is not SPD"
                         : "stopped: breakdown: non-finite residual (overflow or NaN in the iteration)");
        return true;
      }
      if (active == 0) {
        if (!residual_is_true_) {
          // The recursion claims convergence: the true residual decides (one more synchronisation, once).
          space_.residual(S::r, S::b, S::x);
          status_step_.iteration = it_;
          space_.small_step(status_step_);
          status_ = read_status(space_);
          residual_is_true_ = true;
          continue;
        }
        finish(BlockStop::converged,
               "converged: max true relative residual " + sci(worst) + " (tolerance " + sci(options_.tolerance) +
                   (options_.absolute_tolerance > 0.0 ? ", absolute " + sci(options_.absolute_tolerance) : "") +
                   ") after " + std::to_string(it_) + " iterations");
        return true;
      }
      if (it_ >= options_.max_iterations) {
        finish(BlockStop::max_iterations, "stopped: reached the limit of " + std::to_string(options_.max_iterations) +
                                              " iterations with max relative residual " + sci(worst));
        return true;
      }
      if (options_.time_limit_seconds > 0.0 && elapsed() > options_.time_limit_seconds) {
        finish(BlockStop::time_limit, "stopped: wall-clock limit of " + std::to_string(options_.time_limit_seconds) +
                                          " s reached after " + std::to_string(it_) +
                                          " iterations with max relative residual " + sci(worst));
        return true;
      }
      return false;
    }
  }

  /// z = M(r), A-orthogonal to the stored direction blocks (z -= P_t (P_t^T Q_t)^-1 Q_t^T z), then whitened (with
  /// deflation of dependent columns) into the new block P with orthonormal columns, and Q = A P.
  void next_direction() {
    if (preconditioner_)
      space_.precondition_chebyshev(S::z, S::r, *preconditioner_);
    else if (options_.identity_base)
      space_.precondition_identity(S::z, S::r);
    else
      space_.precondition_jacobi(S::z, S::r);
    if (stored_ > 0) {
      small::SmallStep orthogonalize;
      orthogonalize.kind = small::StepKind::bfcg_orthogonalize;
      std::vector<CombineTerm> terms;
      std::vector<GramTarget> grams;
      for (int i = 0; i < stored_; ++i) {
        const int t = (next_ - 1 - i + options_.memory) % options_.memory;
        grams.push_back({S::q(t), l_.ring(l_.ring_gram, t)});
        orthogonalize.slots[orthogonalize.count++] = t;
        terms.push_back({S::p(t), l_.ring(l_.ring_coef, t), -1.0});
      }
      space_.gram(S::z, grams);
      space_.small_step(orthogonalize);
      space_.combine(S::z, true, terms);
    }
    space_.gram(S::z, {{S::z, l_.matrix[small::gram]}});
    small::SmallStep whiten;
    whiten.kind = small::StepKind::bfcg_whiten;
    whiten.slot = next_;
    whiten.drop_tolerance = options_.drop_tolerance;
    space_.small_step(whiten);
    space_.combine(S::p(next_), false, {{S::z, l_.matrix[small::coef_t], 1.0}});
    space_.multiply(S::q(next_), S::p(next_));
  }

  /// X += P (P^T Q)^-1 P^T R, the Galerkin step on the new block for every column; R updated (or recomputed: true)
  /// and the status read (the iteration's one synchronisation).
  bool galerkin_step() {
    space_.gram(S::p(next_), {{S::q(next_), l_.matrix[small::gram]}, {S::r, l_.matrix[small::gram2]}});
    small::SmallStep step;
    step.kind = small::StepKind::bfcg_step;
    step.slot = next_;
    space_.small_step(step);
    space_.combine(S::x, true, {{S::p(next_), l_.matrix[small::coef_alpha], 1.0}});
    const bool replace = it_ % options_.replace_every == 0;
    if (replace) {
      space_.residual(S::r, S::b, S::x);
    } else {
      space_.combine(S::r, true, {{S::q(next_), l_.matrix[small::coef_alpha], -1.0}});
      space_.column_norms(S::r, l_.column[small::r_norm2]);
    }
    residual_is_true_ = replace;
    status_step_.iteration = it_;
    space_.small_step(status_step_);
    status_ = read_status(space_);
    stored_ = std::min(stored_ + 1, options_.memory);
    next_ = (next_ + 1) % options_.memory;
    return replace;
  }

  void record_iteration(bool true_residual) {
    BlockIterationRecord record;
    record.iteration = it_;
    record.max_relative = status_.field(small::status_max_relative);
    record.active = static_cast<int>(status_.field(small::status_active));
    record.directions = static_cast<int>(status_.field(small::status_directions));
    record.deflated = static_cast<int>(status_.field(small::status_deflated));
    record.chebyshev = preconditioner_ != nullptr;
    record.true_residual = true_residual;
    record.seconds = elapsed();
    record.relative = status_.relative(k_);
    result_.deflated += record.deflated;
    result_.iterations = it_;
    if (!record.chebyshev) ++result_.jacobi_iterations;
    if (observer_) observer_(record);
    result_.history.push_back(std::move(record));
  }

  /// Progress over a window of iterations in the current mode, on the best residual so far: a stall restarts the
  /// ring, then falls back to Jacobi, then stops (false).
  bool keeps_progressing() {
    best_ = std::min(best_, status_.field(small::status_max_relative));
    best_history_.push_back(best_);
    const int done_in_mode = it_ - mode_start_;
    const bool restarts_left = int(result_.restart_iterations.size()) < options_.stall_restarts;
    const int window = !preconditioner_ || (!restarts_left && !options_.fallback_jacobi)
                           ? options_.jacobi_stall_window
                           : (restarts_left ? options_.stall_window : options_.fallback_window);
    if (window <= 0 || done_in_mode < window || !(status_.field(small::status_active) > 0)) return true;
    const double before_window = best_history_[std::size_t(it_ - window)];
    if (best_ <= options_.stall_factor * before_window) return true;
    const std::string what = "the best residual went only from " + sci(before_window) + " to " + sci(best_) +
                             " over the last " + std::to_string(window) + " iterations";
    if (preconditioner_ && restarts_left) {
      stored_ = 0;  // the next block is whitened only; the window starts again
      mode_start_ = it_;
      result_.restart_iterations.push_back(it_);
    } else if (preconditioner_ && options_.fallback_jacobi) {
      preconditioner_ = nullptr;
      mode_start_ = it_;
      result_.fallback_iteration = it_;
      result_.fallback_reason = "Chebyshev preconditioner not helping: " + what +
                                "; continuing with the Jacobi preconditioner (fp64)";
    } else {
      finish(BlockStop::stagnation, "stopped: stagnation: " + what);
      return false;
    }
    return true;
  }

  BlockSpace& space_;
  const small::SmallLayout& l_;
  const int k_;
  const BlockFcgOptions& options_;
  const BlockObserver& observer_;
  const ChebyshevPolynomial* preconditioner_;
  const SpaceCounters before_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  small::SmallStep status_step_;
  StatusView status_;
  BlockFcgResult result_;
  int it_ = 0;  // completed iterations
  int stored_ = 0, next_ = 0, mode_start_ = 0;
  bool residual_is_true_ = true;
  double best_ = 0.0;
  std::vector<double> best_history_;
};

}  // namespace

BlockFcgResult block_fcg(BlockSpace& space, const ChebyshevPolynomial* chebyshev, const BlockFcgOptions& options,
                         const BlockObserver& observer) {
  return BlockFcg(space, chebyshev, options, observer).run();
}

}  // namespace bcsr24::solver
