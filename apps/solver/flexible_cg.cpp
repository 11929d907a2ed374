// Truncated flexible CG per column in fp64, all columns advanced together so that each product is a block
// product; the preconditioner is the inner block CG, replaced by Jacobi when it stops helping.
#include "flexible_cg.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace bcsr24::solver {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::converged: return "converged";
    case StopReason::max_iterations: return "max_iterations";
    case StopReason::stagnation: return "stagnation";
    case StopReason::inner_not_helping: return "inner_not_helping";
    case StopReason::breakdown: return "breakdown";
  }
  return "unknown";
}

namespace {

double max_of(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::isnan(x) ? std::numeric_limits<double>::infinity() : x);
  return m;
}

std::string sci(double v) {
  std::ostringstream out;
  out.precision(3);
  out << std::scientific << v;
  return out.str();
}

}  // namespace

OuterResult flexible_cg(OuterSpace& space, const OuterOptions& options, const InnerOptions& inner,
                        const OuterObserver& observer) {
  using S = OuterSlots;
  const int k = space.k();
  const auto uk = static_cast<std::size_t>(k);
  OuterResult result;
  std::vector<double> d;

  std::vector<double> b_norm(uk), r_norm(uk), relative(uk);
  const auto set_relative = [&](const double* squared_norms) {
    for (std::size_t j = 0; j < uk; ++j) {
      r_norm[j] = std::sqrt(std::max(squared_norms[j], 0.0));
      relative[j] = b_norm[j] > 0.0 ? r_norm[j] / b_norm[j] : r_norm[j];
    }
  };
  const auto true_residual = [&] {
    space.residual(S::r, S::b, S::x);
    space.dots({{S::r, S::r}}, d);
    set_relative(d.data());
  };

  space.residual(S::r, S::b, S::x);
  space.dots({{S::b, S::b}, {S::r, S::r}}, d);
  for (std::size_t j = 0; j < uk; ++j) b_norm[j] = std::sqrt(d[j]);
  set_relative(d.data() + k);
  result.initial_relative_residual = relative;

  const int ring = options.memory + 1;  // one spare slot: the new direction never overwrites one it is built from
  std::vector<std::vector<double>> pq(static_cast<std::size_t>(ring), std::vector<double>(uk, 0.0));
  int stored = 0, next = 0;
  bool use_inner = options.use_inner;
  int mode_start = 0;
  std::vector<double> best_history{max_of(relative)};  // best max relative residual up to each iteration
  int replacements_in_a_row = 0;
  double last_replacement_worst = std::numeric_limits<double>::infinity();

  const auto stop = [&](StopReason why, const std::string& message) {
    result.stop = why;
    result.message = message;
  };

  for (int it = 0;; ++it) {
    // Convergence: the recursive residual says so, the true fp64 residual must agree.
    if (std::all_of(relative.begin(), relative.end(), [&](double r) { return r <= options.tolerance; })) {
      true_residual();
      ++result.residual_replacements;
      const double worst = max_of(relative);
      if (worst <= options.tolerance) {
        stop(StopReason::converged, "converged: max true relative residual " + sci(worst) + " <= " +
                                        sci(options.tolerance) + " after " + std::to_string(it) + " outer iterations");
        break;
      }
      // The recursion drifted from the truth; go on from the true residual, unless that keeps happening
      // without progress (the tolerance is below what fp64 can attain for this matrix and right-hand side).
      if (++replacements_in_a_row >= 3 && worst > 0.5 * last_replacement_worst) {
        stop(StopReason::stagnation, "stopped: stagnation: the recursive residual reached the tolerance " +
                                         std::to_string(replacements_in_a_row) +
                                         " times but the true fp64 residual stays at " + sci(worst) +
                                         " (attainable accuracy of fp64 for this system?)");
        break;
      }
      last_replacement_worst = worst;
    } else if (options.replace_every > 0 && it > 0 && it % options.replace_every == 0) {
      true_residual();
      ++result.residual_replacements;
    } else {
      replacements_in_a_row = 0;
    }
    if (it >= options.max_outer) {
      stop(StopReason::max_iterations, "stopped: reached the limit of " + std::to_string(options.max_outer) +
                                           " outer iterations with max relative residual " + sci(max_of(relative)));
      break;
    }

    std::vector<double> mask(uk);
    for (std::size_t j = 0; j < uk; ++j) mask[j] = relative[j] > options.tolerance ? 1.0 : 0.0;
    OuterIterationRecord record;
    record.iteration = it + 1;
    bool jacobi_now = !use_inner;
    if (use_inner) {
      // The inner solve sees each residual column normalised to 1: well inside fp32 (and, after whitening,
      // fp16) range whatever the scale of the system.
      std::vector<double> scale(uk);
      for (std::size_t j = 0; j < uk; ++j) scale[j] = mask[j] != 0.0 && r_norm[j] > 0.0 ? 1.0 / r_norm[j] : 0.0;
      record.inner = true;
      record.inner_stats = space.precondition_inner(S::z, S::r, scale, inner);
      result.inner_products += record.inner_stats.products;
      ++result.inner_solves;
      if (record.inner_stats.breakdown) {
        ++result.inner_breakdowns;
        // Broke down before its first update: z is zero, use Jacobi for this iteration instead.
        if (record.inner_stats.products <= 1) jacobi_now = true;
      }
    }
    if (jacobi_now) {
      space.precondition_jacobi(S::z, S::r, mask);
      ++result.jacobi_iterations;
    }

    // p = z minus its A-projections on the stored directions (q_t = A p_t is known, so no extra product).
    std::vector<int> old_p;
    std::vector<std::pair<int, int>> pairs;
    std::vector<int> ring_index;
    for (int t = 0; t < stored; ++t) {
      const int slot = (next - 1 - t + ring) % ring;
      ring_index.push_back(slot);
      old_p.push_back(S::p(slot));
      pairs.emplace_back(S::z, S::q(slot));
    }
    std::vector<double> coef;
    if (!pairs.empty()) {
      space.dots(pairs, d);
      coef.assign(d.size(), 0.0);
      for (int t = 0; t < stored; ++t)
        for (std::size_t j = 0; j < uk; ++j) {
          const double ptq = pq[static_cast<std::size_t>(ring_index[static_cast<std::size_t>(t)])][j];
          coef[std::size_t(t) * uk + j] = ptq > 0.0 ? d[std::size_t(t) * uk + j] / ptq : 0.0;
        }
    }
    const int p_new = S::p(next), q_new = S::q(next);
    space.combine(p_new, S::z, old_p, coef);
    space.multiply(q_new, p_new);
    space.dots({{p_new, q_new}, {p_new, S::r}}, d);
    std::vector<double> alpha(uk, 0.0);
    bool broke_down = false;
    for (std::size_t j = 0; j < uk && !broke_down; ++j) {
      if (mask[j] == 0.0) continue;
      const double ptq = d[j], ptr = d[uk + j];
      if (!std::isfinite(ptq) || !std::isfinite(ptr) || ptq < 0.0) {
        stop(StopReason::breakdown, "stopped: breakdown: p^T A p = " + sci(ptq) + " for column " + std::to_string(j) +
                                        " in fp64: the matrix is not positive definite (or values overflowed)");
        broke_down = true;
      } else if (ptq > 0.0) {
        alpha[j] = ptr / ptq;
      }
    }
    if (broke_down) break;
    space.update(S::x, p_new, S::r, q_new, alpha);
    pq[static_cast<std::size_t>(next)].assign(d.begin(), d.begin() + k);
    next = (next + 1) % ring;
    stored = std::min(stored + 1, options.memory);

    space.dots({{S::r, S::r}}, d);
    set_relative(d.data());
    result.outer_iterations = it + 1;
    record.max_relative_residual = max_of(relative);
    result.history.push_back(record);
    if (observer) observer(record);

    // Progress check over a window of iterations in the current mode, on the best residual so far: CG
    // residuals oscillate, so "the best value improved by 1 / stall_factor over the window" is the test.
    best_history.push_back(std::min(best_history.back(), record.max_relative_residual));
    const int window = use_inner ? options.stall_window : options.fallback_window;
    const int done_in_mode = it + 1 - mode_start;
    if (window > 0 && done_in_mode >= window) {
      const double now = best_history[static_cast<std::size_t>(it + 1)];
      const double before = best_history[static_cast<std::size_t>(it + 1 - window)];
      if (!(now <= options.stall_factor * before)) {
        const std::string what = "the best residual went only from " + sci(before) + " to " + sci(now) +
                                 " over the last " + std::to_string(window) + " outer iterations";
        if (use_inner && options.fallback == Fallback::jacobi) {
          use_inner = false;
          mode_start = it + 1;
          result.fallback_iteration = it + 1;
          result.fallback_reason = "inner solve not helping: " + what +
                                   "; continuing with a Jacobi-preconditioned fp64 outer iteration";
        } else if (use_inner) {
          stop(StopReason::inner_not_helping, "stopped: the inner solve is not helping: " + what);
          break;
        } else {
          stop(StopReason::stagnation, "stopped: stagnation: " + what);
          break;
        }
      }
    }
  }

  if (result.stop != StopReason::converged) true_residual();
  result.final_relative_residual = relative;
  result.max_final_relative_residual = max_of(relative);
  return result;
}

}  // namespace bcsr24::solver
