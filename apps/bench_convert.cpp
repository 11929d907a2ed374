// bench_convert: CSR -> BCSR-2:4 conversion speed (nonzeros/s, median and best of several runs) on an XdYs matrix.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "bcsr24/convert.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/synthetic.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_convert: time convert_to_bcsr24 on a synthetic XdYs matrix held in memory"};
  bcsr24::XdYsSpec spec;
  spec.rows = 16384;
  spec.cols = 16384;
  spec.seed = 1;
  std::string name = "5d5s";  // 16384^2, 5% dense + 5% 2:4 tiles: about 20.1 million nonzeros
  int repetitions = 5;
  int warmup = 1;
  int threads = 0;
  app.add_option("--rows", spec.rows, "rows")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--cols", spec.cols, "columns")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--name", name, "XdYs tile mix")->capture_default_str();
  app.add_option("--seed", spec.seed, "generator seed")->capture_default_str();
  app.add_option("--repetitions", repetitions, "timed conversions")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--warmup", warmup, "untimed conversions first")->capture_default_str()->check(CLI::Range(0, 100));
  app.add_option("--threads", threads, "conversion threads (0 = all hardware threads)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    bcsr24::parse_xdys_name(name, spec.dense_percent, spec.sparse24_percent);
    const auto t_gen = Clock::now();
    const bcsr24::CsrMatrix a = bcsr24::generate_xdys(spec);
    const double gen_s = seconds_since(t_gen);
    std::printf("matrix   %d x %d %s seed %llu: %lld nonzeros (generated in %.2f s)\n", spec.rows, spec.cols,
                name.c_str(), static_cast<unsigned long long>(spec.seed), static_cast<long long>(a.nnz()), gen_s);

    bcsr24::ConvertOptions options;
    options.threads = threads;
    const unsigned used_threads = threads > 0 ? static_cast<unsigned>(threads) : std::max(1u, std::thread::hardware_concurrency());
    for (int i = 0; i < warmup; ++i) bcsr24::convert_to_bcsr24(a, options);
    std::vector<double> times;
    bcsr24::TileCensus census;
    for (int i = 0; i < repetitions; ++i) {
      const auto t = Clock::now();
      const bcsr24::Bcsr24Matrix b = bcsr24::convert_to_bcsr24(a, options);
      times.push_back(seconds_since(t));
      census = b.census();
    }
    const double med = median(times), best = *std::min_element(times.begin(), times.end());
    std::printf("tiles    %lld dense, %lld 2:4, %lld zero; %.1f MB stored\n", static_cast<long long>(census.dense_tiles),
                static_cast<long long>(census.sparse24_tiles), static_cast<long long>(census.zero_tiles),
                double(census.dense_bytes + census.sparse24_bytes) / 1e6);
    std::printf("convert  %u thread(s), %d runs: median %.3f s, best %.3f s\n", used_threads, repetitions, med, best);
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
