// bench_convert: CSR -> BCSR-2:4 conversion speed (nonzeros/s, median and best of several runs) on an XdYs or 3-D
// mesh matrix held in memory, through SparseOperator::from_csr.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bcsr24/sparse_operator.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "cli.hpp"
#include "process_memory.hpp"
#include "text_report.hpp"

namespace {

using namespace bcsr24;

struct Settings {
  XdYsSpec spec{16384, 16384, 0.0, 0.0, 1};
  std::string name = "5d5s";  // 16384^2, 5% dense + 5% 2:4 tiles: about 20.1 million nonzeros
  int repetitions = 5;
  int warmup = 1;
  apps::StorageOptions storage;
  int threads = 0;
  std::string mesh_text;
};

int run(Settings& s) {
  const bench::Stopwatch generate_watch;
  CsrMatrix a;
  if (!s.mesh_text.empty()) {
    const MeshSpec mesh = parse_mesh_spec(s.mesh_text);
    a = generate_mesh_matrix(mesh);
    s.name = mesh_name(mesh);
  } else {
    parse_xdys_name(s.name, s.spec.dense_percent, s.spec.sparse24_percent);
    a = generate_xdys(s.spec);
  }
  std::printf("matrix   %d x %d %s: %lld nonzeros (generated in %.2f s)\n", a.rows, a.cols, s.name.c_str(),
              static_cast<long long>(a.nnz()), generate_watch.seconds());
  OperatorOptions options = s.storage.to_operator_options();
  options.threads = s.threads;
  // CSR bytes: row pointers, column indices and double values.
  const double csr_bytes = double(a.row_ptr.size()) * 4 + double(a.nnz()) * 12;
  const double rss_before = apps::proc_status_bytes("VmRSS");
  apps::reset_peak_rss();
  const unsigned used_threads =
      s.threads > 0 ? static_cast<unsigned>(s.threads) : std::max(1u, std::thread::hardware_concurrency());
  for (int i = 0; i < s.warmup; ++i) SparseOperator::from_csr(a, options);
  // Wall time of from_csr (it checks and copies the CSR first) and the conversion's own time (LayoutReport).
  std::vector<double> call_ms, convert_ms, reorder_ms, baseline_ms, pack_ms;
  std::optional<SparseOperator> op;
  for (int i = 0; i < s.repetitions; ++i) {
    const bench::Stopwatch watch;
    op.emplace(SparseOperator::from_csr(a, options));
    call_ms.push_back(watch.seconds() * 1e3);
    const LayoutReport& report = op->layout_report();
    convert_ms.push_back(report.total_seconds * 1e3);
    reorder_ms.push_back(report.reorder_seconds * 1e3);
    baseline_ms.push_back(report.baseline_seconds * 1e3);
    pack_ms.push_back(report.pack_seconds * 1e3);
  }
  const double rss_peak = apps::proc_status_bytes("VmHWM");
  const TileCensus& census = op->census();
  const bench::Timings convert = bench::summarize(convert_ms);
  const double median = convert.median_ms * 1e-3, best = convert.min_ms * 1e-3;
  const auto median_s = [](const std::vector<double>& ms) { return bench::summarize(ms).median_ms * 1e-3; };
  std::printf("tiles    %lld dense, %lld 2:4, %lld zero; %.1f MB stored\n", static_cast<long long>(census.dense_tiles),
              static_cast<long long>(census.sparse24_tiles), static_cast<long long>(census.zero_tiles),
              double(census.dense_bytes + census.sparse24_bytes) / 1e6);
  std::printf("layout   %s, %s (%s); %.1f%% 2:4, index bytes %.1f%% of %.1f MB\n", layout_name(census.layout),
              reordering_name(census.reordering), op->layout_report().reason.c_str(), 100.0 * census.sparse24_share(),
              census.total_bytes() > 0 ? 100.0 * double(census.index_bytes) / double(census.total_bytes()) : 0.0,
              double(census.total_bytes()) / 1e6);
  std::printf("convert  %u thread(s), %d runs: median %.3f s, best %.3f s (medians: reorder %.3f s, baseline count "
              "%.3f s, build %.3f s; from_csr with its CSR check and copy %.3f s)\n",
              used_threads, s.repetitions, median, best, median_s(reorder_ms), median_s(baseline_ms),
              median_s(pack_ms), median_s(call_ms));
  std::printf("memory   resident %.0f MB before converting (CSR %.0f MB); peak while converting %.0f MB: from_csr "
              "added %.2f x the CSR's bytes (its copy of the CSR included)\n",
              rss_before / 1e6, csr_bytes / 1e6, rss_peak / 1e6, (rss_peak - rss_before) / csr_bytes);
  std::printf("speed    %.1f M nonzeros/s (median), %.1f M nonzeros/s (best)\n", double(a.nnz()) / median / 1e6,
              double(a.nnz()) / best / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_convert: time SparseOperator::from_csr (reordering, layout choice, packing, fp16) on a "
               "synthetic XdYs or 3-D mesh matrix held in memory",
               "bench_convert"};
  Settings s;
  return apps::run_main(
      app, argc, argv,
      [&](CLI::App& a) {
        a.add_option("--rows", s.spec.rows, "rows")->capture_default_str()->check(CLI::PositiveNumber);
        a.add_option("--cols", s.spec.cols, "columns")->capture_default_str()->check(CLI::PositiveNumber);
        a.add_option("--name", s.name, "XdYs tile mix")->capture_default_str();
        a.add_option("--seed", s.spec.seed, "generator seed")->capture_default_str();
        a.add_option("--repetitions", s.repetitions, "timed conversions")
            ->capture_default_str()
            ->check(CLI::Range(1, 1000));
        a.add_option("--warmup", s.warmup, "untimed conversions first")->capture_default_str()->check(CLI::Range(0, 100));
        a.add_option("--threads", s.threads, "conversion threads (0 = all hardware threads)")->capture_default_str();
        a.add_option("--mesh", s.mesh_text,
                     "3-D mesh matrix instead of XdYs: NXxNYxNZ[,dofs=D][,stencil=7|27][,order=lex|random]");
        s.storage.add_to(a, false);
      },
      [&] { return run(s); });
}
