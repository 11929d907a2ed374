// bench_reader: Matrix Market parsing speed (MB/s, median of several runs) on a large coordinate file.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"

namespace {

/// Writes a random general real coordinate file of about `target_mb` MB: entries scattered over a square
/// matrix, values with full double precision (the slow case for number parsing).
void generate(const std::string& path, double target_mb, std::uint64_t seed) {
  // ~36 bytes per entry line: two 6-7 digit indices and a 17-20 character shortest round-trip double.
  constexpr double kBytesPerEntry = 36.0;
  const auto nnz = static_cast<std::size_t>(target_mb * 1e6 / kBytesPerEntry);
  const std::int32_t n = 2'000'000;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int32_t> index(0, n - 1);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<std::int32_t> row(nnz), col(nnz);
  std::vector<double> val(nnz);
  for (std::size_t k = 0; k < nnz; ++k) {
    row[k] = index(rng);
    col[k] = index(rng);
    val[k] = value(rng);
  }
  bcsr24::write_matrix_market(path, bcsr24::csr_from_triplets(n, n, row, col, val));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_reader: time read_matrix_market on a large coordinate .mtx file"};
  std::string file = "/tmp/bcsr24_bench_reader.mtx";
  double size_mb = 120.0;
  int runs = 5;
  std::uint64_t seed = 1;
  bool regenerate = false;
  app.add_option("-f,--file", file, "Matrix Market file to read; generated there if it does not exist")
      ->capture_default_str();
  app.add_option("--size-mb", size_mb, "size of the generated file in MB")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("-r,--runs", runs, "timed runs (after one untimed warm-up)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "seed of the generated matrix")->capture_default_str();
  app.add_flag("--regenerate", regenerate, "write the file even if it exists");
  CLI11_PARSE(app, argc, argv);

  try {
    if (regenerate || !std::filesystem::exists(file)) {
      std::printf("generating %s (~%.0f MB, seed %llu)...\n", file.c_str(), size_mb, static_cast<unsigned long long>(seed));
      generate(file, size_mb, seed);
    }
    const double mb = static_cast<double>(std::filesystem::file_size(file)) / 1e6;

    // Warm-up: brings the file into the page cache, so the runs time parsing rather than the disk.
    bcsr24::MatrixMarketInfo info;
    const bcsr24::CsrMatrix warm = bcsr24::read_matrix_market(file, {}, &info);
    std::printf("file: %s, %.1f MB, %lld x %lld, %lld entries listed, %lld stored\n", file.c_str(), mb,
                static_cast<long long>(info.rows), static_cast<long long>(info.cols),
                static_cast<long long>(info.entries), static_cast<long long>(warm.nnz()));

    std::vector<double> seconds;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const bcsr24::CsrMatrix a = bcsr24::read_matrix_market(file);
      const auto t1 = std::chrono::steady_clock::now();
      seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
      std::printf("run %d: %.3f s  %.1f MB/s  (nnz %lld)\n", i + 1, seconds.back(), mb / seconds.back(),
                  static_cast<long long>(a.nnz()));
    }
    const double med = median(seconds);
    const double best = *std::min_element(seconds.begin(), seconds.end());
    std::printf("median %.3f s = %.1f MB/s; best %.3f s = %.1f MB/s (%d runs, file %.1f MB)\n", med, mb / med, best,
                mb / best, runs, mb);
  } catch (const bcsr24::Error& e) {
    std::fprintf(stderr, "bench_reader: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_reader: %s\n", e.what());
    return 1;
  }
  return 0;
}
