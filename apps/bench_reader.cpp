// bench_reader: Matrix Market parsing speed (MB/s, median of several runs) on a large coordinate file.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/matrix_market.hpp"
#include "bcsr24_testkit/splitmix64.hpp"
#include "cli.hpp"
#include "text_report.hpp"

namespace {

/// Writes a random general real coordinate file of about `target_mb` MB: entries scattered over a square
/// matrix, values with full double precision (the slow case for number parsing).
void generate(const std::string& path, double target_mb, std::uint64_t seed) {
  // ~36 bytes per entry line: two 6-7 digit indices and a 17-20 character shortest round-trip double.
  constexpr double kBytesPerEntry = 36.0;
  const auto nnz = static_cast<std::size_t>(target_mb * 1e6 / kBytesPerEntry);
  const std::int32_t n = 2'000'000;
  bcsr24::SplitMix64 random{seed};
  std::vector<std::int32_t> row(nnz), col(nnz);
  std::vector<double> val(nnz);
  for (std::size_t k = 0; k < nnz; ++k) {
    row[k] = static_cast<std::int32_t>(random.below(n));
    col[k] = static_cast<std::int32_t>(random.below(n));
    val[k] = random.symmetric_unit();
  }
  bcsr24::write_matrix_market(path, bcsr24::csr_from_triplets(n, n, row, col, val));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_reader: time read_matrix_market on a large coordinate .mtx file", "bench_reader"};
  std::string file = "/tmp/bcsr24_bench_reader.mtx";
  double size_mb = 120.0;
  int runs = 5;
  std::uint64_t seed = 1;
  bool regenerate = false;
  return bcsr24::apps::run_main(
      app, argc, argv,
      [&](CLI::App& a) {
        a.add_option("-f,--file", file, "Matrix Market file to read; generated there if it does not exist")
            ->capture_default_str();
        a.add_option("--size-mb", size_mb, "size of the generated file in MB")
            ->capture_default_str()
            ->check(CLI::PositiveNumber);
        a.add_option("-r,--runs", runs, "timed runs (after one untimed warm-up)")
            ->capture_default_str()
            ->check(CLI::PositiveNumber);
        a.add_option("--seed", seed, "seed of the generated matrix")->capture_default_str();
        a.add_flag("--regenerate", regenerate, "write the file even if it exists");
      },
      [&] {
        if (regenerate || !std::filesystem::exists(file)) {
          std::printf("generating %s (~%.0f MB, seed %llu)...\n", file.c_str(), size_mb,
                      static_cast<unsigned long long>(seed));
          generate(file, size_mb, seed);
        }
        const double mb = static_cast<double>(std::filesystem::file_size(file)) / 1e6;
        // Warm-up: brings the file into the page cache, so the runs time parsing rather than the disk.
        bcsr24::MatrixMarketInfo info;
        const bcsr24::CsrMatrix warm = bcsr24::read_matrix_market(file, {}, &info);
        std::printf("file: %s, %.1f MB, %lld x %lld, %lld entries listed, %lld stored\n", file.c_str(), mb,
                    static_cast<long long>(info.rows), static_cast<long long>(info.cols),
                    static_cast<long long>(info.entries), static_cast<long long>(warm.nnz()));
        std::vector<double> milliseconds;
        for (int i = 0; i < runs; ++i) {
          const bcsr24::bench::Stopwatch watch;
          const bcsr24::CsrMatrix a = bcsr24::read_matrix_market(file);
          const double seconds = watch.seconds();
          milliseconds.push_back(seconds * 1e3);
          std::printf("run %d: %.3f s  %.1f MB/s  (nnz %lld)\n", i + 1, seconds, mb / seconds,
                      static_cast<long long>(a.nnz()));
        }
        const bcsr24::bench::Timings t = bcsr24::bench::summarize(milliseconds);
        const double median = t.median_ms * 1e-3, best = t.min_ms * 1e-3;
        std::printf("median %.3f s = %.1f MB/s; best %.3f s = %.1f MB/s (%d runs, file %.1f MB)\n", median,
                    mb / median, best, mb / best, runs, mb);
        return 0;
      });
}
