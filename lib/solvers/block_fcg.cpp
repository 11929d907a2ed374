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

}  // namespace

BlockFcgResult block_fcg(BlockSpace& space, const ChebyshevPolynomial* chebyshev, const BlockFcgOptions& options,
                         const BlockObserver& observer) {
  using S = BlockSlots;
  const small::SmallLayout& l = space.layout();
  const int k = space.k();
  if (options.memory < 1 || options.memory > l.memory)
    throw InvalidArgument("block_fcg: memory " + std::to_string(options.memory) + " outside 1 .. " +
                          std::to_string(l.memory) + " (the space's)");
  if (options.replace_every < 1) throw InvalidArgument("block_fcg: replace_every must be >= 1");
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const SpaceCounters before = space.counters();
  BlockFcgResult result;

  // A fresh status area, then r = b - A x (a product, but it also gives the norms in one pass).
  space.write_small(l.status, std::vector<double>(std::size_t(l.status_count()), 0.0));
  if (!options.initial_guess) space.zero_slot(S::x);
  space.column_norms(S::b, l.column[small::b_norm2]);
  space.residual(S::r, S::b, S::x);
  small::SmallStep status_step;
  status_step.kind = small::StepKind::status;
  status_step.tolerance = options.tolerance;
  status_step.absolute_tolerance = options.absolute_tolerance;
  space.small_step(status_step);
  StatusView status = read_status(space);
  result.initial_relative = status.relative(k);

  const ChebyshevPolynomial* preconditioner = chebyshev;
  int stored = 0, next = 0;
  bool residual_is_true = true;
  double best = status.field(small::status_max_relative);
  std::vector<double> best_history{best};
  int mode_start = 0;

  const auto finish = [&](BlockStop why, const std::string& message) {
    result.stop = why;
    result.message = message;
  };

  int it = 0;  // completed iterations
  for (;;) {
    const int active = static_cast<int>(status.field(small::status_active));
    const double worst = status.field(small::status_max_relative);
    if (status.field(small::status_breakdown) != 0.0) {
      const int code = static_cast<int>(status.field(small::status_breakdown));
      finish(BlockStop::breakdown,
             code == 1 ? "stopped: breakdown: P^T A P is not positive definite in fp64 (pivot " +
                             sci(status.field(small::status_breakdown_value)) + "): the matrix is not SPD"
                       : "stopped: breakdown: non-finite residual (overflow or NaN in the iteration)");
      break;
    }
    if (active == 0) {
      if (!residual_is_true) {
        // The recursion claims convergence: the true residual decides (one more synchronisation, once).
        space.residual(S::r, S::b, S::x);
        status_step.iteration = it;
        space.small_step(status_step);
        status = read_status(space);
        residual_is_true = true;
        continue;
      }
      finish(BlockStop::converged,
             "converged: max true relative residual " + sci(worst) + " (tolerance " + sci(options.tolerance) +
                 (options.absolute_tolerance > 0.0 ? ", absolute " + sci(options.absolute_tolerance) : "") +
                 ") after " + std::to_string(it) + " iterations");
      break;
    }
    if (it >= options.max_iterations) {
      finish(BlockStop::max_iterations, "stopped: reached the limit of " + std::to_string(options.max_iterations) +
                                            " iterations with max relative residual " + sci(worst));
      break;
    }
    if (options.time_limit_seconds > 0.0 && elapsed() > options.time_limit_seconds) {
      finish(BlockStop::time_limit, "stopped: wall-clock limit of " + std::to_string(options.time_limit_seconds) +
                                        " s reached after " + std::to_string(it) +
                                        " iterations with max relative residual " + sci(worst));
      break;
    }

    ++it;
    // z = M(r), then A-orthogonal to the stored direction blocks: z -= P_t (P_t^T Q_t)^-1 Q_t^T z.
    if (preconditioner)
      space.precondition_chebyshev(S::z, S::r, *preconditioner);
    else if (options.identity_base)
      space.precondition_identity(S::z, S::r);
    else
      space.precondition_jacobi(S::z, S::r);
    if (stored > 0) {
      small::SmallStep orthogonalize;
      orthogonalize.kind = small::StepKind::bfcg_orthogonalize;
      std::vector<CombineTerm> terms;
      std::vector<GramTarget> grams;
      for (int i = 0; i < stored; ++i) {
        const int t = (next - 1 - i + options.memory) % options.memory;
        grams.push_back({S::q(t), l.ring(l.ring_gram, t)});
        orthogonalize.slots[orthogonalize.count++] = t;
        terms.push_back({S::p(t), l.ring(l.ring_coef, t), -1.0});
      }
      space.gram(S::z, grams);
      space.small_step(orthogonalize);
      space.combine(S::z, true, terms);
    }
    // Whitening (with deflation of dependent columns) gives the new block P with orthonormal columns.
    space.gram(S::z, {{S::z, l.matrix[small::gram]}});
    small::SmallStep whiten;
    whiten.kind = small::StepKind::bfcg_whiten;
    whiten.slot = next;
    whiten.drop_tolerance = options.drop_tolerance;
    space.small_step(whiten);
    space.combine(S::p(next), false, {{S::z, l.matrix[small::coef_t], 1.0}});
    space.multiply(S::q(next), S::p(next));
    // X += P (P^T Q)^-1 P^T R: the Galerkin step on the new block for every column.
    space.gram(S::p(next), {{S::q(next), l.matrix[small::gram]}, {S::r, l.matrix[small::gram2]}});
    small::SmallStep step;
    step.kind = small::StepKind::bfcg_step;
    step.slot = next;
    space.small_step(step);
    space.combine(S::x, true, {{S::p(next), l.matrix[small::coef_alpha], 1.0}});
    const bool replace = it % options.replace_every == 0;
    if (replace) {
      space.residual(S::r, S::b, S::x);
    } else {
      space.combine(S::r, true, {{S::q(next), l.matrix[small::coef_alpha], -1.0}});
      space.column_norms(S::r, l.column[small::r_norm2]);
    }
    residual_is_true = replace;
    status_step.iteration = it;
    space.small_step(status_step);
    status = read_status(space);
    stored = std::min(stored + 1, options.memory);
    next = (next + 1) % options.memory;

    BlockIterationRecord record;
    record.iteration = it;
    record.max_relative = status.field(small::status_max_relative);
    record.active = static_cast<int>(status.field(small::status_active));
    record.directions = static_cast<int>(status.field(small::status_directions));
    record.deflated = static_cast<int>(status.field(small::status_deflated));
    record.chebyshev = preconditioner != nullptr;
    record.true_residual = replace;
    record.seconds = elapsed();
    record.relative = status.relative(k);
    result.deflated += record.deflated;
    result.iterations = it;
    if (!record.chebyshev) ++result.jacobi_iterations;
    if (observer) observer(record);
    result.history.push_back(std::move(record));

    // Progress over a window of iterations in the current mode, on the best residual so far.
    best = std::min(best, status.field(small::status_max_relative));
    best_history.push_back(best);
    const int done_in_mode = it - mode_start;
    const bool restarts_left = int(result.restart_iterations.size()) < options.stall_restarts;
    const int window = !preconditioner || (!restarts_left && !options.fallback_jacobi)
                           ? options.jacobi_stall_window
                           : (restarts_left ? options.stall_window : options.fallback_window);
    if (window > 0 && done_in_mode >= window && status.field(small::status_active) > 0) {
      const double before_window = best_history[std::size_t(it - window)];
      if (!(best <= options.stall_factor * before_window)) {
        const std::string what = "the best residual went only from " + sci(before_window) + " to " + sci(best) +
                                 " over the last " + std::to_string(window) + " iterations";
        if (preconditioner && restarts_left) {
          stored = 0;  // the next block is whitened only; the window starts again
          mode_start = it;
          result.restart_iterations.push_back(it);
        } else if (preconditioner && options.fallback_jacobi) {
          preconditioner = nullptr;
          mode_start = it;
          result.fallback_iteration = it;
          result.fallback_reason = "Chebyshev preconditioner not helping: " + what +
                                   "; continuing with the Jacobi preconditioner (fp64)";
        } else {
          finish(BlockStop::stagnation, "stopped: stagnation: " + what);
          break;
        }
      }
    }
  }

  result.final_relative = status.relative(k);
  result.max_final_relative = status.field(small::status_max_relative);
  const SpaceCounters after = space.counters();
  result.synchronizations = after.synchronizations - before.synchronizations - 1;  // the initial status is setup
  result.inner_products = after.inner_products - before.inner_products;
  result.outer_products = after.outer_products - before.outer_products;
  return result;
}

}  // namespace bcsr24::solver
