// k Jacobi-preconditioned CG solves in fp64 advanced together, scalars on the device.
#include "jacobi_pcg.hpp"

#include <chrono>
#include <cstdio>

#include "bcsr24/error.hpp"
#include "sci_text.hpp"

namespace bcsr24::solver {

PcgResult jacobi_pcg(BlockSpace& space, const PcgOptions& options, const PcgObserver& observer) {
  using S = BlockSlots;
  const small::SmallLayout& l = space.layout();
  const int k = space.k();
  if (options.check_every < 1) throw InvalidArgument("jacobi_pcg: check_every must be >= 1");
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const SpaceCounters before = space.counters();
  PcgResult result;
  std::vector<double> status(std::size_t(l.status_count()));
  const auto read = [&] { space.read_small(l.status, l.status_count(), status.data()); };

  small::SmallStep status_step;
  status_step.kind = small::StepKind::status;
  status_step.tolerance = options.tolerance;
  small::SmallStep beta_step = status_step;
  beta_step.kind = small::StepKind::pcg_beta;
  small::SmallStep alpha_step;
  alpha_step.kind = small::StepKind::pcg_alpha;

  space.write_small(l.status, std::vector<double>(status.size(), 0.0));
  space.zero_slot(S::x);
  space.column_norms(S::b, l.column[small::b_norm2]);
  space.residual(S::r, S::b, S::x);
  space.small_step(status_step);
  space.pcg_direction(S::p(0), S::r, true);
  read();
  const std::int64_t setup_syncs = 1;

  int it = 0;
  for (;;) {
    if (status[small::status_breakdown] != 0.0) {
      result.stop = BlockStop::breakdown;
      result.message = status[small::status_breakdown] == 2.0
                           ? "stopped: breakdown: p^T A p = " + sci(status[small::status_breakdown_value]) +
                                 " for column " + std::to_string(int(status[small::status_breakdown_column])) +
                                 " in fp64: the matrix is not positive definite"
                           : "stopped: breakdown: non-finite residual";
      break;
    }
    if (status[small::status_active] == 0.0) {
      // The recursion says every column converged: the true residual decides.
      space.residual(S::r, S::b, S::x);
      space.small_step(status_step);
      read();
      result.history.push_back({it, status[small::status_max_relative], int(status[small::status_active]), true,
                                elapsed()});
      if (observer) observer(result.history.back());
      if (result.converged_iteration < 0) result.converged_iteration = it;
      if (status[small::status_active] == 0.0) {
        result.stop = BlockStop::converged;
        result.message = "converged: max true relative residual " + sci(status[small::status_max_relative]) +
                         " <= " + sci(options.tolerance) + " after " + std::to_string(it) + " iterations";
        break;
      }
      // Drift between the recursion and the truth: restart the columns still above the tolerance from r.
      ++result.restarts;
      space.pcg_direction(S::p(0), S::r, true);
    }
    if (it >= options.max_iterations) {
      result.stop = BlockStop::max_iterations;
      result.message = "stopped: reached the limit of " + std::to_string(options.max_iterations) +
                       " iterations with max relative residual " + sci(status[small::status_max_relative]);
      break;
    }
    if (options.time_limit_seconds > 0.0 && elapsed() > options.time_limit_seconds) {
      result.stop = BlockStop::time_limit;
      result.message = "stopped: wall-clock limit of " + std::to_string(options.time_limit_seconds) +
                       " s reached after " + std::to_string(it) + " iterations with max relative residual " +
                       sci(status[small::status_max_relative]);
      break;
    }
    const int batch = std::min(options.check_every, options.max_iterations - it);
    for (int i = 0; i < batch; ++i) {
      ++it;
      space.multiply(S::q(0), S::p(0));
      space.column_dots(S::p(0), S::q(0), l.column[small::pq]);
      space.small_step(alpha_step);
      space.pcg_update(S::x, S::p(0), S::r, S::q(0));
      beta_step.iteration = it;
      space.small_step(beta_step);
      space.pcg_direction(S::p(0), S::r, false);
    }
    read();
    result.history.push_back({it, status[small::status_max_relative], int(status[small::status_active]), false,
                              elapsed()});
    if (observer) observer(result.history.back());
  }
  result.iterations = it;
  result.final_relative.assign(status.begin() + small::kStatusFields, status.begin() + small::kStatusFields + k);
  result.max_final_relative = status[small::status_max_relative];
  const SpaceCounters after = space.counters();
  result.synchronizations = after.synchronizations - before.synchronizations - setup_syncs;
  result.products = after.outer_products - before.outer_products;
  return result;
}

}  // namespace bcsr24::solver
