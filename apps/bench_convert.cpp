// bench_convert: CSR -> BCSR-2:4 conversion speed (nonzeros/s, median and best of several runs) on an XdYs matrix.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "format/convert.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24_testkit/synthetic.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A "VmRSS" / "VmHWM" line of /proc/self/status in bytes (0 where unavailable).
double proc_status_bytes(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::strlen(key) + 1)) * 1024.0;
  return 0.0;
}

/// Restarts the kernel's peak-RSS count (VmHWM) from the current RSS, so the next peak is the conversion's.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_convert: time convert_to_bcsr24 (reordering, layout choice, packing, fp16) on a synthetic XdYs "
               "or 3-D mesh matrix held in memory"};
  bcsr24::XdYsSpec spec;
  spec.rows = 16384;
  spec.cols = 16384;
  spec.seed = 1;
  std::string name = "5d5s";  // 16384^2, 5% dense + 5% 2:4 tiles: about 20.1 million nonzeros
  int repetitions = 5;
  int warmup = 1;
  int threads = 0;
  std::string mesh_text, layout_text = "auto", reorder_text = "auto";
  app.add_option("--rows", spec.rows, "rows")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--cols", spec.cols, "columns")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--name", name, "XdYs tile mix")->capture_default_str();
  app.add_option("--seed", spec.seed, "generator seed")->capture_default_str();
  app.add_option("--repetitions", repetitions, "timed conversions")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--warmup", warmup, "untimed conversions first")->capture_default_str()->check(CLI::Range(0, 100));
  app.add_option("--threads", threads, "conversion threads (0 = all hardware threads)")->capture_default_str();
  app.add_option("--mesh", mesh_text, "3-D mesh matrix instead of XdYs: NXxNYxNZ[,dofs=D][,stencil=7|27][,order=lex|random]");
  app.add_option("--layout", layout_text, "tile layout: aligned, condensed or auto")
      ->capture_default_str()
      ->check(CLI::IsMember({"aligned", "condensed", "auto"}));
  app.add_option("--reorder", reorder_text, "row order: none, rcm or auto")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "rcm", "auto"}));
  CLI11_PARSE(app, argc, argv);

  try {
    const auto t_gen = Clock::now();
    bcsr24::CsrMatrix a;
    if (!mesh_text.empty()) {
      const bcsr24::MeshSpec mesh = bcsr24::parse_mesh_spec(mesh_text);
      a = bcsr24::generate_mesh_matrix(mesh);
      name = bcsr24::mesh_name(mesh);
    } else {
      bcsr24::parse_xdys_name(name, spec.dense_percent, spec.sparse24_percent);
      a = bcsr24::generate_xdys(spec);
    }
    const double gen_s = seconds_since(t_gen);
    std::printf("matrix   %d x %d %s: %lld nonzeros (generated in %.2f s)\n", a.rows, a.cols, name.c_str(),
                static_cast<long long>(a.nnz()), gen_s);

    bcsr24::ConvertOptions options;
    options.threads = threads;
    options.layout = bcsr24::layout_from_name(layout_text);
    options.reorder = bcsr24::reordering_from_name(reorder_text);
    // CSR bytes: row pointers, column indices and double values.
    const double csr_bytes = double(a.row_ptr.size()) * 4 + double(a.nnz()) * 12;
    const double rss_before = proc_status_bytes("VmRSS");
    reset_peak_rss();
    const unsigned used_threads = threads > 0 ? static_cast<unsigned>(threads) : std::max(1u, std::thread::hardware_concurrency());
    for (int i = 0; i < warmup; ++i) bcsr24::convert_to_bcsr24(a, options);
    std::vector<double> times, reorder_s, baseline_s, pack_s;
    bcsr24::TileCensus census;
    bcsr24::LayoutReport report;
    for (int i = 0; i < repetitions; ++i) {
      const auto t = Clock::now();
      const bcsr24::Bcsr24Matrix b = bcsr24::convert_to_bcsr24(a, options, &report);
      times.push_back(seconds_since(t));
      reorder_s.push_back(report.reorder_seconds);
      baseline_s.push_back(report.baseline_seconds);
      pack_s.push_back(report.pack_seconds);
      census = b.census();
    }
    const double rss_peak = proc_status_bytes("VmHWM");
    const double med = median(times), best = *std::min_element(times.begin(), times.end());
    std::printf("tiles    %lld dense, %lld 2:4, %lld zero; %.1f MB stored\n", static_cast<long long>(census.dense_tiles),
                static_cast<long long>(census.sparse24_tiles), static_cast<long long>(census.zero_tiles),
                double(census.dense_bytes + census.sparse24_bytes) / 1e6);
    std::printf("layout   %s, %s (%s); %.1f%% 2:4, index bytes %.1f%% of %.1f MB\n", bcsr24::layout_name(census.layout),
                bcsr24::reordering_name(census.reordering), report.reason.c_str(), 100.0 * census.sparse24_share(),
                census.total_bytes() > 0 ? 100.0 * double(census.index_bytes) / double(census.total_bytes()) : 0.0,
                double(census.total_bytes()) / 1e6);
    std::printf("convert  %u thread(s), %d runs: median %.3f s, best %.3f s (medians: reorder %.3f s, baseline count "
                "%.3f s, build %.3f s)\n",
                used_threads, repetitions, med, best, median(reorder_s), median(baseline_s), median(pack_s));
    std::printf("memory   resident %.0f MB before converting (CSR %.0f MB); peak while converting %.0f MB: the "
                "conversion added %.2f x the CSR's bytes\n",
                rss_before / 1e6, csr_bytes / 1e6, rss_peak / 1e6, (rss_peak - rss_before) / csr_bytes);
    std::printf("speed    %.1f M nonzeros/s (median), %.1f M nonzeros/s (best)\n", double(a.nnz()) / med / 1e6,
                double(a.nnz()) / best / 1e6);
  } catch (const bcsr24::Error& e) {
    std::fprintf(stderr, "bench_convert: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_convert: unexpected error: %s\n", e.what());
    return 1;
  }
  return 0;
}
