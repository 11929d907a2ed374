// The GPU space against the CPU space, operation by operation and solve by solve (space_check.hpp).
#include "space_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "block_reports.hpp"
#include "cusparse_support.hpp"
#include "solve_json.hpp"
#include "solve_text.hpp"

namespace bcsr24::solver {

using json = nlohmann::json;

namespace {

/// Largest |a - b| over max(|b|) (a relative difference that ignores entries near zero).
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  if (a.size() != b.size()) return HUGE_VAL;
  return scale > 0 ? diff / scale : diff;
}

struct CheckLog {
  json entries = json::array();
  bool ok = true;
  void add(const std::string& what, double difference, double tolerance) {
    const bool pass = difference <= tolerance && std::isfinite(difference);
    std::printf("  %-58s difference %s (tolerance %s) %s\n", what.c_str(), sci(difference).c_str(),
                sci(tolerance).c_str(), pass ? "ok" : "MISMATCH");
    entries.push_back({{"check", what}, {"difference", difference}, {"tolerance", tolerance}, {"ok", pass}});
    ok = ok && pass;
  }
};

std::vector<double> small_buffer(BlockSpace& space, std::int64_t offset, std::int64_t count) {
  std::vector<double> out(static_cast<std::size_t>(count));
  space.read_small(offset, count, out.data());
  return out;
}

/// `count` values uniform in [-1, 1): the same inputs for both spaces.
std::vector<double> uniform_values(std::mt19937_64& rng, std::size_t count) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(count);
  for (double& x : v) x = u(rng);
  return v;
}

/// Whole solves on both spaces with the same settings (the same stop reason, similar histories and iteration
/// counts) and the PCG baseline on both: the checks into `log`, the four reports returned.
json compare_solves(const Problem& problem, const BlockRunSettings& settings, bool exact_b, CheckLog& log) {
  std::printf("== solves (GPU space against CPU space, same settings)\n");
  BlockRunSettings gpu_settings = settings;
  gpu_settings.device = "gpu";
  gpu_settings.timing = false;
  gpu_settings.warm_up = false;
  gpu_settings.verbose = false;
  BlockRunSettings cpu_settings = gpu_settings;
  cpu_settings.device = "cpu";
  cpu_settings.cpu_rounding = exact_b ? BRounding::exact : BRounding::tiles;
  const BlockRunReport on_gpu = run_block_solver(problem, gpu_settings);
  const BlockRunReport on_cpu = run_block_solver(problem, cpu_settings);
  std::printf("  GPU: %s\n  CPU: %s\n", on_gpu.result.message.c_str(), on_cpu.result.message.c_str());
  const std::size_t rows = std::max(on_gpu.result.history.size(), on_cpu.result.history.size());
  for (std::size_t i = 0; i < rows; ++i)
    std::printf("  iteration %3zu: GPU %s  CPU %s\n", i + 1,
                i < on_gpu.result.history.size() ? sci(on_gpu.result.history[i].max_relative).c_str() : "        -",
                i < on_cpu.result.history.size() ? sci(on_cpu.result.history[i].max_relative).c_str() : "        -");
  log.add("block solve: same stop reason (0 = same)", on_gpu.result.stop == on_cpu.result.stop ? 0.0 : 1.0, 0.0);
  const double iterations = std::fabs(double(on_gpu.result.iterations - on_cpu.result.iterations)) /
                            std::max(1.0, double(on_cpu.result.iterations));
  log.add("block solve: iteration counts (relative difference)", iterations, exact_b ? 0.2 : 0.5);
  log.add("block solve: host check of the GPU solution / tolerance", on_gpu.host.residual / settings.fcg.tolerance,
          on_cpu.host.residual <= settings.fcg.tolerance ? 1.0 : HUGE_VAL);
  if (on_gpu.chebyshev && on_cpu.chebyshev)
    log.add("Chebyshev interval top b", std::fabs(on_gpu.chebyshev->polynomial.b / on_cpu.chebyshev->polynomial.b - 1.0),
            exact_b ? 1e-3 : 2e-2);
  PcgOptions pcg;
  pcg.tolerance = settings.fcg.tolerance;
  const PcgRunReport pcg_gpu = run_pcg_baseline(problem, "gpu", pcg, false, false);
  const PcgRunReport pcg_cpu = run_pcg_baseline(problem, "cpu", pcg, false, false);
  std::printf("  PCG GPU: %s\n  PCG CPU: %s\n", pcg_gpu.result.message.c_str(), pcg_cpu.result.message.c_str());
  log.add("PCG: iteration counts (difference in status reads)",
          std::fabs(double(pcg_gpu.result.iterations - pcg_cpu.result.iterations)) / pcg.check_every, 1.0);
  return {{"gpu_block", block_report_json(on_gpu)}, {"cpu_block", block_report_json(on_cpu)},
          {"gpu_pcg", pcg_report_json(pcg_gpu)}, {"cpu_pcg", pcg_report_json(pcg_cpu)}};
}

}  // namespace

bool check_spaces(const Problem& problem, const BlockRunSettings& settings, json& out) {
  CheckLog log;
  OperatorOptions operator_options;
  operator_options.precision = settings.precision;
  const InnerMatrix inner =
      prepare_inner_matrix(problem.a, settings.backend, settings.jacobi_scaling, operator_options);
  const int k = problem.k, memory = std::max(2, settings.fcg.memory), steps = 12;
  // The CPU space emulates B exactly where the GPU reads it exactly (split precision, the CSR kernel); with fp16 or
  // bf16 on tiles the GPU rounds B per tile, which the CPU emulates only approximately: looser tolerances.
  const bool exact_b = settings.backend != InnerBackend::bcsr24 || settings.precision == Precision::split;
  GpuBlockSpace gpu(problem.a, inner, k, memory, steps, false, OuterProduct::csr_kernel, cusparse_products());
  CpuBlockSpace cpu(problem.a, inner, k, memory, steps, exact_b ? BRounding::exact : BRounding::tiles);
  std::printf("bcsr24 plan: %s\n", gpu.plan_summary().c_str());
  BlockSpace* spaces[2] = {&gpu, &cpu};
  const small::SmallLayout& l = cpu.layout();
  std::mt19937_64 rng(7);
  using S = BlockSlots;
  // Fill x, r, z, p(0), q(0), p(1) with the same random data on both sides, b = the problem's.
  for (int slot : {S::x, S::r, S::z, S::p(0), S::q(0), S::p(1), S::q(1)}) {
    const std::vector<double> v = uniform_values(rng, std::size_t(problem.a.rows) * k);
    for (BlockSpace* s : spaces) s->set_slot(slot, v);
  }
  for (BlockSpace* s : spaces) s->set_slot(S::b, problem.b);
  const auto compare_slot = [&](const std::string& what, int slot, double tolerance) {
    log.add(what, relative_difference(gpu.slot(slot), cpu.slot(slot)), tolerance);
  };
  const auto compare_small = [&](const std::string& what, std::int64_t offset, std::int64_t count, double tolerance) {
    log.add(what, relative_difference(small_buffer(gpu, offset, count), small_buffer(cpu, offset, count)), tolerance);
  };
  std::printf("== primitives (GPU space against CPU space, same inputs)\n");
  for (BlockSpace* s : spaces) s->gram(S::z, {{S::q(0), l.matrix[small::gram]}, {S::z, l.matrix[small::gram2]}});
  compare_small("gram Z^T Q (two targets, one of them Z)", l.matrix[small::gram], 2 * l.kk(), 1e-12);
  for (BlockSpace* s : spaces) s->column_dots(S::x, S::r, l.column[small::dots]);
  compare_small("column dots", l.column[small::dots], k, 1e-12);
  const std::vector<double> coefficients = uniform_values(rng, std::size_t(2) * k * k);
  for (BlockSpace* s : spaces) {
    s->write_small(l.matrix[small::work], std::vector<double>(coefficients.begin(), coefficients.begin() + l.kk()));
    s->write_small(l.matrix[small::work2], std::vector<double>(coefficients.begin() + l.kk(), coefficients.end()));
    s->combine(S::z, true, {{S::p(0), l.matrix[small::work], -1.0}, {S::p(1), l.matrix[small::work2], 0.5}});
  }
  compare_slot("combine (accumulate, two terms)", S::z, 1e-12);
  for (BlockSpace* s : spaces) s->multiply(S::q(1), S::p(0));
  compare_slot("fp64 product A P", S::q(1), 1e-12);
  for (BlockSpace* s : spaces) s->residual(S::r, S::b, S::x);
  compare_slot("fp64 residual B - A X", S::r, 1e-12);
  compare_small("residual column norms", l.column[small::r_norm2], k, 1e-12);
  // Small steps on the same Gram matrices: status, whitening, step, orthogonalisation.
  small::SmallStep status;
  status.kind = small::StepKind::status;
  status.tolerance = 1e-8;
  for (BlockSpace* s : spaces) {
    s->column_norms(S::b, l.column[small::b_norm2]);
    s->small_step(status);
  }
  compare_small("status (relative residuals, scales)", l.column[small::relative], k, 1e-12);
  for (BlockSpace* s : spaces) {
    s->gram(S::z, {{S::z, l.matrix[small::gram]}});
    small::SmallStep whiten;
    whiten.kind = small::StepKind::bfcg_whiten;
    whiten.slot = 0;
    s->small_step(whiten);
    s->combine(S::p(0), false, {{S::z, l.matrix[small::coef_t], 1.0}});
    s->multiply(S::q(0), S::p(0));
    s->gram(S::p(0), {{S::q(0), l.matrix[small::gram]}, {S::r, l.matrix[small::gram2]}});
    small::SmallStep step;
    step.kind = small::StepKind::bfcg_step;
    step.slot = 0;
    s->small_step(step);
    s->gram(S::z, {{S::q(0), l.ring(l.ring_gram, 0)}});
    small::SmallStep orthogonalize;
    orthogonalize.kind = small::StepKind::bfcg_orthogonalize;
    orthogonalize.count = 1;
    orthogonalize.slots[0] = 0;
    s->small_step(orthogonalize);
  }
  compare_small("whitening T", l.matrix[small::coef_t], l.kk(), 1e-9);
  compare_slot("new directions P = W T", S::p(0), 1e-9);
  compare_small("step alpha = (P^T Q)^-1 P^T R", l.matrix[small::coef_alpha], l.kk(), 1e-8);
  compare_small("orthogonalisation coefficients", l.ring(l.ring_coef, 0), l.kk(), 1e-8);
  compare_small("status fields", l.status, l.status_count(), 1e-9);
  for (BlockSpace* s : spaces) s->precondition_jacobi(S::z, S::r);
  compare_slot("Jacobi preconditioner", S::z, 1e-14);
  // The Chebyshev preconditioner with a fixed polynomial, and the Lanczos steps.
  const ChebyshevPolynomial polynomial = make_chebyshev(7, 0.05, 2.0);
  for (BlockSpace* s : spaces) s->precondition_chebyshev(S::z, S::r, polynomial);
  compare_slot("Chebyshev preconditioner (degree 7)", S::z, exact_b ? 1e-4 : 5e-2);
  for (BlockSpace* s : spaces) s->lanczos(steps, 3);
  compare_small("Lanczos alphas", l.lanczos_alpha, std::int64_t(steps) * k, exact_b ? 1e-4 : 2e-2);
  compare_small("Lanczos betas", l.lanczos_beta, std::int64_t(steps) * k, exact_b ? 1e-3 : 5e-2);
  // PCG vector operations.
  for (BlockSpace* s : spaces) {
    s->pcg_direction(S::p(0), S::r, true);
    s->multiply(S::q(0), S::p(0));
    s->column_dots(S::p(0), S::q(0), l.column[small::pq]);
    small::SmallStep alpha;
    alpha.kind = small::StepKind::pcg_alpha;
    s->small_step(alpha);
    s->pcg_update(S::x, S::p(0), S::r, S::q(0));
    small::SmallStep beta = status;
    beta.kind = small::StepKind::pcg_beta;
    s->small_step(beta);
    s->pcg_direction(S::p(0), S::r, false);
  }
  compare_small("PCG rho, alpha, beta", l.column[small::rho], std::int64_t(k) * 5, 1e-10);
  compare_slot("PCG x", S::x, 1e-12);
  compare_slot("PCG r", S::r, 1e-10);
  compare_slot("PCG p", S::p(0), 1e-10);

  json solves = compare_solves(problem, settings, exact_b, log);
  out = {{"checks", log.entries}, {"ok", log.ok}};
  out.update(solves);
  std::printf("== space check: %s\n", log.ok ? "GPU and CPU spaces agree" : "MISMATCHES (see above)");
  return log.ok;
}

}  // namespace bcsr24::solver
