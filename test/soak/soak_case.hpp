// The pieces of one soak case that the GPU products (bcsr24_soak.cpp) and the CPU emulation (soak_emulate.cpp)
// share: what a run tallies, the operator options and B a case draws, the rows' exponents the bounds are relative
// to, and the explanation printed with a failing output.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/bcsr24.hpp"

namespace bcsr24::soak {

/// Additions per output beyond the row's 2 k_i that the accumulation bound charges (per-tile rescales, the
/// block reduction, split-band part sums): the value the GPU precision tests use.
constexpr int kExtraTerms = 16;

/// What the run covered and found.
struct Tally {
  std::int64_t cases = 0, products = 0, outputs = 0, nonzero_outputs = 0, plans = 0, failures = 0;
  double max_ratio = 0.0;
  std::map<std::string, std::int64_t> covered, refused;
  void cover(const std::string& what) { ++covered[what]; }
  void refuse(const std::string& what) { ++refused[what]; }
};

/// One product (or emulated product) outside its bound, or an unexpected exception, as printed.
struct Failure {
  std::string what;
};

/// The seed of case `index` of a run (splitmix64 of the pair): `--seed S --case K` replays one case.
std::uint64_t case_seed(std::uint64_t seed, std::int64_t index);

/// The bound the soak holds one output to: the mode's bound (product_bound) plus the reference's own rounding to
/// float (2^-24), an fp32 result below fp32's normal range (2^-126, subnormal or flushed), and for fp16 output its
/// rounding (2^-11 relative, 2^-25 absolute for subnormals).
double output_bound(double mode_bound, double want, bool fp16_output);

/// Random operator options: precision, layout, reordering, scaling and conversion threads.
OperatorOptions random_options(std::mt19937_64& rng);

/// B (cols x n, ld n): columns of different scales for fp32 B; 16-bit B in the matrix's 16-bit type, times
/// 2^-4 .. 2^4. b_exact holds the values the kernels are given, b32 them as floats, b16 the 16-bit bits.
void draw_b(std::mt19937_64& rng, std::int32_t cols, std::int32_t n, bool f32_b, Precision precision,
            std::vector<double>& b_exact, std::vector<float>& b32, std::vector<fp16_t>& b16);

/// Each row's power of two (the matrix's and its own): what the bound's absolute terms are relative to.
std::vector<std::int32_t> row_exponents(const SparseOperator& op);

/// What the bound model sees of one output (the worst violation of a product), in units of fp32's 2^-23 times
/// sum_p |a_ip b_pj|: the accumulation term charges 2 k_i + kExtraTerms of them; the row's nonzeros, the 32-column
/// tiles they fall in, its largest product and the output's magnitude say which part of the arithmetic the error
/// outgrew.
std::string explain_output(const CsrMatrix& a, std::int32_t n, const std::vector<double>& b_exact, double alpha,
                           std::int32_t i, std::int64_t j, double error, double ratio);

/// --emulate: the case's matrix and options, then instead of GPU products the tile kernel's arithmetic emulated on
/// the CPU (tile_emulation.hpp) for B of the soak's kinds at n = 36, against the same reference and bound. Prints one
/// line per B kind; a product outside its bound here is the algorithm's, not the GPU's.
void emulate_case(std::uint64_t seed, std::int32_t max_rows, std::int64_t index, Tally& tally,
                  std::vector<Failure>& failures);

/// One case on the GPU: a matrix, an operator, a few plans with a few products each (soak_products.cpp).
void run_case(std::uint64_t seed, std::int32_t max_rows, cudaStream_t stream, Tally& tally,
              std::vector<Failure>& failures, bool verbose);

}  // namespace bcsr24::soak
