// gen_xdys: writes a synthetic XdYs matrix (X% dense 16x32 tiles, Y% 2:4 tiles) as a Matrix Market file.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "bcsr24/matrix_market.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "cli.hpp"

int main(int argc, char** argv) {
  using namespace bcsr24;
  CLI::App app{"gen_xdys: write a synthetic XdYs matrix (X% dense tiles, Y% 2:4 tiles, 16x32 tiles) as .mtx",
               "gen_xdys"};
  XdYsSpec spec;
  std::string name;
  std::string output;
  int decimals = -1;
  bool quiet = false;
  return apps::run_main(
      app, argc, argv,
      [&](CLI::App& a) {
        a.add_option("--rows", spec.rows, "number of rows")->required()->check(CLI::NonNegativeNumber);
        a.add_option("--cols", spec.cols, "number of columns")->required()->check(CLI::NonNegativeNumber);
        a.add_option("--name", name, "tile mix, e.g. 10d5s = 10% dense and 5% 2:4 tiles")->required();
        a.add_option("--seed", spec.seed, "seed of the std::mt19937_64 generator")->capture_default_str();
        a.add_option("-o,--output", output, "Matrix Market file to write")->required();
        a.add_option("--decimals", decimals,
                     "round values to this many decimal places (smaller files; a value that would round to 0 "
                     "becomes +-10^-decimals so the tile pattern is kept); default: full double precision")
            ->check(CLI::Range(1, 15));
        a.add_flag("-q,--quiet", quiet, "print nothing on success");
      },
      [&] {
        parse_xdys_name(name, spec.dense_percent, spec.sparse24_percent);
        CsrMatrix a = generate_xdys(spec);
        if (decimals > 0) {
          const double unit = std::pow(10.0, decimals);
          for (double& v : a.values) {
            const double rounded = std::round(v * unit) / unit;
            v = rounded != 0.0 ? rounded : std::copysign(1.0 / unit, v);
          }
        }
        write_matrix_market(output, a);
        if (quiet) return apps::kExitOk;
        // The census after conversion is what a kernel will see (cut edge tiles may change kind).
        const TileCensus c = SparseOperator::from_csr(a).census();
        std::printf("%s: %d x %d, %s (seed %llu): %lld nonzeros; tiles %lld x %lld: %lld dense, %lld 2:4, %lld zero\n",
                    output.c_str(), spec.rows, spec.cols, name.c_str(), static_cast<unsigned long long>(spec.seed),
                    static_cast<long long>(a.nnz()), static_cast<long long>(c.tile_rows),
                    static_cast<long long>(c.tile_cols), static_cast<long long>(c.dense_tiles),
                    static_cast<long long>(c.sparse24_tiles), static_cast<long long>(c.zero_tiles));
        return apps::kExitOk;
      });
}
