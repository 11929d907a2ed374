// bcsr24_solve: mixed-precision SPD solver for several right-hand sides. The default (--solver block) is a
// flexible block CG in fp64 for all right-hand sides at once, preconditioned by a Chebyshev polynomial of the
// Jacobi-scaled matrix whose products run through bcsr24 (or cuSPARSE CSR fp32 for comparison), with every number
// kept on the GPU; --compare adds the same solver with cuSPARSE fp32 products and k Jacobi-PCG solves in fp64
// (--solver pcg alone). --gpus P / --mpi run the same solver spread over several GPUs (SpdSolver with an NCCL
// communicator). Reports iterations, time to solution and where it goes, and why each run stopped.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bcsr24/device.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "block_reports.hpp"
#include "solve_json.hpp"
#include "block_runs.hpp"
#include "cli.hpp"
#include "bcsr24_testkit/diffusion.hpp"
#include "mesh_matrix.hpp"
#include "problem.hpp"
#include "solve_options.hpp"
#include "solve_text.hpp"
#include "space_check.hpp"
#include "symmetry.hpp"
#include "rank_session.hpp"  // the session type (its code is built with NCCL only; without, mpi is always null)
#if BCSR24_HAS_NCCL
#include "distributed_block_run.hpp"
#endif

namespace {

using json = nlohmann::json;
using namespace bcsr24::solver;
using bcsr24::coefficient_field_from_name;  // the diffusion generator (bcsr24_testkit/diffusion.hpp)
using bcsr24::DiffusionSpec;
using bcsr24::diffusion_name;
using bcsr24::generate_diffusion_matrix;

/// The matrix to solve, read or generated, with its description for the JSON.
bcsr24::CsrMatrix load_matrix(const Options& o, std::string& name, json& matrix_json) {
  if (!o.mesh.empty()) {
    MeshSpec spec = o.mesh_spec;
    spec.nx = o.mesh[0];
    spec.ny = o.mesh[1];
    spec.nz = o.mesh[2];
    name = "mesh_" + std::to_string(spec.nx) + "x" + std::to_string(spec.ny) + "x" + std::to_string(spec.nz) + "_d" +
           std::to_string(spec.dofs_per_node) + "_s" + std::to_string(spec.stencil);
    matrix_json["generator"] = {{"kind", "mesh"}, {"nodes", o.mesh}, {"dofs_per_node", spec.dofs_per_node},
                                {"stencil", spec.stencil}, {"diagonal_margin", spec.diagonal_margin},
                                {"seed", spec.seed}};
    return generate_mesh_matrix(spec);
  }
  if (!o.diffusion.empty()) {
    DiffusionSpec spec = o.diffusion_spec;
    spec.nx = o.diffusion[0];
    spec.ny = o.diffusion[1];
    spec.nz = o.diffusion[2];
    spec.field = coefficient_field_from_name(o.coefficients);
    spec.anisotropy = {o.anisotropy[0], o.anisotropy[1], o.anisotropy[2]};
    name = diffusion_name(spec);
    matrix_json["generator"] = {{"kind", "diffusion"}, {"cells", o.diffusion}, {"coefficients", o.coefficients},
                                {"contrast", spec.contrast}, {"fill", spec.fill},
                                {"inclusion_size", spec.inclusion_size}, {"layer_thickness", spec.layer_thickness},
                                {"sigma", spec.sigma}, {"correlation", spec.correlation},
                                {"anisotropy", o.anisotropy}, {"seed", spec.seed}};
    return generate_diffusion_matrix(spec);
  }
  name = o.matrix_path.substr(o.matrix_path.find_last_of('/') + 1);
  return bcsr24::read_matrix_market(o.matrix_path);
}

#if BCSR24_HAS_NCCL
/// The distributed block run's own lines: the partition, the halo, the balance and the ranks' iteration counts.
json print_distributed_figures(const DistributedBlockFigures& f) {
  std::int64_t halo = 0, largest = 0, entries = 0;
  bool agree = true;
  for (std::size_t r = 0; r < f.nnz.size(); ++r) {
    halo += f.halo_rows[r];
    largest = std::max(largest, f.nnz[r]);
    entries += f.nnz[r];
    agree = agree && f.iterations[r] == f.iterations[0];
  }
  const double imbalance = entries > 0 ? double(largest) * double(f.nnz.size()) / double(entries) : 0.0;
  std::printf("distributed over %d GPU%s (%s, rows by %s): halo rows in all %lld (%lld bytes per column of an fp64 "
              "product), largest rank %.3f x the mean nonzeros%s\n",
              f.ranks, f.ranks == 1 ? "" : "s", std::string(f.launch) == "mpi" ? "one MPI process each" : "one thread each",
              bcsr24::partition_method_name(f.partition), static_cast<long long>(halo), static_cast<long long>(halo * 8),
              imbalance, agree ? "" : "; WARNING: the ranks made different numbers of iterations");
  json ranks = json::array();
  for (std::size_t r = 0; r < f.nnz.size(); ++r) {
    std::printf("  rank %zu: %d rows, %lld nonzeros, %d halo rows, %d iterations\n", r, f.rows[r],
                static_cast<long long>(f.nnz[r]), f.halo_rows[r], f.iterations[r]);
    ranks.push_back({{"rank", r}, {"rows", f.rows[r]}, {"nnz", f.nnz[r]}, {"halo_rows", f.halo_rows[r]},
                     {"iterations", f.iterations[r]}});
  }
  return {{"gpus", f.ranks}, {"launch", f.launch}, {"partition", bcsr24::partition_method_name(f.partition)},
          {"halo_rows", halo}, {"nnz_imbalance", imbalance}, {"ranks_agree", agree}, {"ranks", ranks}};
}
#endif

/// The block solver and its baselines (one GPU, or the CPU space), or the block solver on several GPUs.
int run_block(const Options& o, const Problem& problem, json& matrix_json, const bcsr24::ranks::Session* mpi) {
  static_cast<void>(mpi);  // used by the distributed runs only (builds with NCCL)
  std::vector<BlockRunReport> blocks;
  std::vector<PcgRunReport> baselines;
  std::vector<InnerBackend> backends;
  if (o.solver == "block") {
    if (o.compare)
      backends = {InnerBackend::bcsr24, InnerBackend::cusparse_csr_f32};
    else
      backends = {inner_backend_from_name(o.inner_backend)};
  }
  const bool baseline = o.solver == "pcg" || o.compare;
  std::printf("solving with %d right-hand sides (%s), tolerance %s (true fp64 residual)\n", problem.k,
              o.rhs_kind.c_str(), sci(o.tolerance, 1).c_str());
  for (InnerBackend backend : backends) {
    const BlockRunSettings settings = block_settings(o, backend);
    std::printf("\n== block solver: flexible block CG (fp64), %s preconditioner, products %s%s, memory %d\n",
                settings.chebyshev ? "Chebyshev" : "Jacobi", inner_backend_name(backend),
                backend == InnerBackend::bcsr24 ? (std::string(" ") + o.inner_precision).c_str() : "", o.fcg.memory);
    std::fflush(stdout);
    json distributed;
    if (o.distributed()) {
#if BCSR24_HAS_NCCL
      DistributedBlockFigures figures;
      blocks.push_back(run_block_solver_distributed(problem, settings, o.gpus, mpi,
                                                    bcsr24::partition_method_from_name(o.partition), figures));
      if (mpi && !mpi->is_root()) return blocks.back().result.stop == BlockStop::converged ? 0 : kExitNotConverged;
      print_block_report(blocks.back());
      distributed = print_distributed_figures(figures);
#else
      throw bcsr24::NotSupported("--gpus / --mpi need bcsr24_solve built with NCCL");
#endif
    } else {
      blocks.push_back(run_block_solver(problem, settings));
      print_block_report(blocks.back());
    }
    if (!distributed.is_null()) matrix_json["distributed"] = distributed;
    if (!blocks.back().census.is_null() && !matrix_json.contains("bcsr24")) matrix_json["bcsr24"] = blocks.back().census;
    std::fflush(stdout);
  }
  if (baseline) {
    std::printf("\n== baseline: %d Jacobi-preconditioned CG solves in fp64, cuSPARSE CSR fp64 SpMM for all columns, "
                "status read every %d iterations\n",
                problem.k, o.check_every);
    std::fflush(stdout);
    baselines.push_back(
        run_pcg_baseline(problem, o.device, pcg_options(o), !o.no_timing, o.device == "gpu", o.verbose));
    print_pcg_report(baselines.back());
    std::fflush(stdout);
  }
  print_comparison(blocks, baselines);
  if (!o.json_path.empty()) {
    json runs = json::array();
    for (const BlockRunReport& r : blocks) runs.push_back(block_report_json(r));
    for (const PcgRunReport& r : baselines) runs.push_back(pcg_report_json(r));
    write_json(o, matrix_json, runs, {{"comparison", comparison_json(blocks, baselines)}});
  }
  bool converged = true;
  for (const BlockRunReport& r : blocks) converged = converged && r.result.stop == BlockStop::converged;
  for (const PcgRunReport& r : baselines) converged = converged && r.result.stop == BlockStop::converged;
  return converged ? 0 : kExitNotConverged;
}

/// The whole program after parsing. `mpi`: this process's MPI session (--mpi), else null; under MPI every process
/// runs it on the same matrix (stdout of the others is silenced by the caller) and only the root writes the JSON.
int run(const Options& o, const bcsr24::ranks::Session* mpi) {
  const auto load_start = std::chrono::steady_clock::now();
  std::string name;
  json matrix_json;
  bcsr24::CsrMatrix a = load_matrix(o, name, matrix_json);
  const double load_seconds = seconds_since(load_start);
  std::printf("matrix %s: %d x %d, %lld nonzeros (%s s to %s)\n", name.c_str(), a.rows, a.cols,
              static_cast<long long>(a.nnz()), fixed(load_seconds, 2).c_str(), o.matrix_path.empty() ? "generate" : "read");
  if (!o.write_matrix.empty() && (!mpi || mpi->is_root())) {
    bcsr24::write_matrix_market(o.write_matrix, a);
    std::printf("wrote %s\n", o.write_matrix.c_str());
    if (o.write_only) return 0;
  }
  // Symmetric to rounding (finite element assembly): solved with the symmetric part, as bcsr24::solvers does.
  if (a.rows == a.cols) {
    const Asymmetry asymmetry = measure_asymmetry(a);
    if (asymmetry.ratio > o.symmetry_tolerance)
      throw bcsr24::solvers::NotSymmetricError(
          "the matrix is not symmetric: a(" + std::to_string(asymmetry.row) + ", " + std::to_string(asymmetry.col) +
          ") = " + sci(asymmetry.a_ij) + " but a(" + std::to_string(asymmetry.col) + ", " +
          std::to_string(asymmetry.row) + ") = " + sci(asymmetry.a_ji) + " (relative difference " +
          sci(asymmetry.ratio) + ", above --symmetry-tolerance " + sci(o.symmetry_tolerance) + ")");
    if (asymmetry.ratio > 0.0) {
      std::printf("symmetric to rounding: largest relative asymmetry %s at (%d, %d): solving with (A + A^T) / 2\n",
                  sci(asymmetry.ratio).c_str(), asymmetry.row, asymmetry.col);
      a = symmetric_part(a);
    }
  }
  const SpdEvidence evidence = check_spd_evidence(a);
  std::printf("SPD evidence: %s%s\n", evidence.summary().c_str(),
              evidence.proves_spd() ? " => SPD" : " (SPD not proven; a breakdown would show it)");
  if (!evidence.square || !evidence.symmetric)
    throw bcsr24::InvalidArgument("the matrix is not symmetric: conjugate gradients need an SPD matrix");
  if (!evidence.positive_diagonal) throw bcsr24::InvalidArgument("the diagonal is not positive: the matrix is not SPD");
  matrix_json.update({{"name", name},
                      {"rows", a.rows},
                      {"nnz", a.nnz()},
                      {"symmetric", evidence.symmetric},
                      {"diagonally_dominant", evidence.diagonally_dominant},
                      {"min_dominance_ratio", evidence.min_dominance_ratio}});

  if (o.device == "gpu") {
    const bcsr24::DeviceInfo device = bcsr24::query_device();
    if (!device.available)
      throw bcsr24::NotSupported("no usable GPU (" + device.reason + "); --device cpu runs the same algorithm slowly");
    std::printf("device: %s (sm_%d, %d SMs)\n", device.name.c_str(), device.compute_capability, device.multiprocessors);
    matrix_json["device"] = device.name;
  } else {
    std::printf("device: CPU (bcsr24 products emulated with reference_spmm; timings are not comparable)\n");
    matrix_json["device"] = "cpu";
  }
  const Problem problem = make_problem(name, std::move(a), o.rhs, rhs_kind_from_name(o.rhs_kind), o.seed);
  if (o.check_spaces) {
    json check;
    const bool ok = check_spaces(problem, block_settings(o, inner_backend_from_name(o.inner_backend)), check);
    if (!o.json_path.empty()) write_json(o, matrix_json, json::array(), {{"space_check", check}});
    return ok ? 0 : kExitNotConverged;
  }
  return run_block(o, problem, matrix_json, mpi);
}

#if BCSR24_HAS_NCCL
/// --mpi: MPI_Init, one device per process, the run on every process, the root's exit status on all of them.
int run_mpi(const Options& o) {
  bcsr24::ranks::Session session(bcsr24::ranks::Launch::mpi, 0);  // MPI_Init; a failure is run_main's to report
  try {
    session.select_devices();
    // Every process runs the same program and would print the same report: only rank 0's stdout is kept.
    // Errors still reach stderr from every process.
    if (!session.is_root() && !std::freopen("/dev/null", "w", stdout))
      throw bcsr24::Error("cannot redirect stdout of a non-root rank to /dev/null");
    return session.agree_on_status(run(o, &session));
  } catch (const std::exception& error) {
    const int code = bcsr24::apps::report_error(kProgram, session.error_prefix() + std::string(error.what()), "",
                                                bcsr24::apps::kExitRuntimeError);
    session.abort_all_if_mpi(code);  // the other processes may be waiting for this one in a collective
    return code;
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"", kProgram};
  Options options;
  return bcsr24::apps::run_main(
      app, argc, argv, [&](CLI::App& a) { add_options(a, options); },
      [&] {
        validate(options);
#if BCSR24_HAS_NCCL
        if (options.mpi) return run_mpi(options);
#endif
        return run(options, nullptr);
      });
}
