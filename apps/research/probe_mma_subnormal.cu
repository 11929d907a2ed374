// probe_mma_subnormal: how exactly one mma.sync.m16n8k16 (fp16 A and B, fp32 accumulator: the dense tiles'
// instruction, kernels/ptx_sm80.cuh) multiplies and adds when A holds fp16 subnormals.
//
// Why: the soak (issue 35) found fp16 products outside their error bound on the H100 only in rows whose stored
// values are fp16 subnormals, while a CPU emulation of the kernel's arithmetic with exact products stays inside it
// (docs/PRECISION.md, "Elements stored below fp16's normal range"). This program measures the instruction alone.
// Each trial is one 16 x 16 A, one 16 x 8 B and one mma, with C = 0 or a random accumulator. A's rows come in
// four classes (row % 4):
//   0: normal values only; 1: normal values and one subnormal; 2: four subnormals; 3: one or two of the smallest
//   subnormals (1 to 7 times 2^-24).
// For each class it prints the largest |d - exact| in units of 2^-23 (sum |a b| + |c|), the largest relative
// error of the outputs, and how many outputs differ from the exact value rounded once to fp32.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bcsr24/half.hpp"
#include "kernels/ptx_sm80.cuh"

namespace {

using bcsr24::fp16_t;

constexpr int kM = 16, kN = 8, kK = 16;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "probe_mma_subnormal: %s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

/// One warp per trial: A row-major 16 x 16, B column-major (k fastest) 16 x 8, C and D row-major 16 x 8.
__global__ void mma_trials(const std::uint16_t* a, const std::uint16_t* b, const float* c, float* d) {
  const int trial = blockIdx.x, lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const std::uint16_t* at = a + std::size_t(trial) * kM * kK;
  const std::uint16_t* bt = b + std::size_t(trial) * kK * kN;
  auto pair = [](std::uint16_t lo, std::uint16_t hi) { return std::uint32_t(lo) | (std::uint32_t(hi) << 16); };
  // PTX ISA fragment layouts of m16n8k16 (.row A, .col B).
  uint4 frag;
  frag.x = pair(at[g * kK + 2 * t], at[g * kK + 2 * t + 1]);
  frag.y = pair(at[(g + 8) * kK + 2 * t], at[(g + 8) * kK + 2 * t + 1]);
  frag.z = pair(at[g * kK + 2 * t + 8], at[g * kK + 2 * t + 9]);
  frag.w = pair(at[(g + 8) * kK + 2 * t + 8], at[(g + 8) * kK + 2 * t + 9]);
  const std::uint32_t b0 = pair(bt[g * kK + 2 * t], bt[g * kK + 2 * t + 1]);
  const std::uint32_t b1 = pair(bt[g * kK + 2 * t + 8], bt[g * kK + 2 * t + 9]);
  const float* ct = c + std::size_t(trial) * kM * kN;
  float acc[4] = {ct[g * kN + 2 * t], ct[g * kN + 2 * t + 1], ct[(g + 8) * kN + 2 * t], ct[(g + 8) * kN + 2 * t + 1]};
  bcsr24::kernels::ptx::mma_m16n8k16_f32<false>(acc, frag, b0, b1);
  float* dt = d + std::size_t(trial) * kM * kN;
  dt[g * kN + 2 * t] = acc[0];
  dt[g * kN + 2 * t + 1] = acc[1];
  dt[(g + 8) * kN + 2 * t] = acc[2];
  dt[(g + 8) * kN + 2 * t + 1] = acc[3];
}

struct ClassStats {
  double max_units = 0.0, max_relative = 0.0;
  long long outputs = 0, not_rounded_once = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"probe_mma_subnormal: mma.sync m16n8k16 (fp16, fp32 accumulation) with subnormal fp16 operands"};
  int trials = 20000;
  std::uint64_t seed = 1;
  app.add_option("--trials", trials, "trials (one 16 x 16 x 8 mma each) per accumulator kind")->capture_default_str();
  app.add_option("--seed", seed)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  auto normal_fp16 = [&](double lo_exp, double hi_exp) {
    std::uniform_real_distribution<double> e(lo_exp, hi_exp);
    const double v = std::copysign(std::exp2(e(rng)), unit(rng));
    return bcsr24::double_to_fp16(v);
  };
  auto subnormal_fp16 = [&](int max_units) {  // k * 2^-24, k = 1 .. max_units, random sign
    const int k = std::uniform_int_distribution<int>(1, max_units)(rng);
    return static_cast<fp16_t>((rng() % 2 ? 0x8000u : 0u) | unsigned(k));
  };

  for (const bool with_c : {false, true}) {
    std::vector<std::uint16_t> a(std::size_t(trials) * kM * kK, 0), b(std::size_t(trials) * kK * kN);
    std::vector<float> c(std::size_t(trials) * kM * kN, 0.0f), d(c.size());
    for (int tr = 0; tr < trials; ++tr) {
      std::uint16_t* at = a.data() + std::size_t(tr) * kM * kK;
      for (int r = 0; r < kM; ++r) {
        std::uint16_t* row = at + r * kK;
        switch (r % 4) {
          case 0: for (int k = 0; k < kK; ++k) row[k] = normal_fp16(-2.0, 2.0); break;
          case 1:
            for (int k = 0; k < kK; ++k) row[k] = normal_fp16(-2.0, 2.0);
            row[rng() % kK] = subnormal_fp16(1023);
            break;
          case 2: for (int q = 0; q < 4; ++q) row[rng() % kK] = subnormal_fp16(1023); break;
          default: {
            const int count = 1 + int(rng() % 2);
            for (int q = 0; q < count; ++q) row[rng() % kK] = subnormal_fp16(7);
          }
        }
      }
      for (std::size_t e = 0; e < std::size_t(kK) * kN; ++e) b[std::size_t(tr) * kK * kN + e] = normal_fp16(-4.0, 4.0);
      if (with_c)
        for (int e = 0; e < kM * kN; ++e) {
          // An accumulator of the products' own size: as a running sum over earlier tiles would be.
          c[std::size_t(tr) * kM * kN + e] = float(unit(rng)) * (e / kN % 4 >= 2 ? 1e-6f : 1.0f);
        }
    }
    std::uint16_t *da = nullptr, *db = nullptr;
    float *dc = nullptr, *dd = nullptr;
    check(cudaMalloc(&da, a.size() * 2), "cudaMalloc");
    check(cudaMalloc(&db, b.size() * 2), "cudaMalloc");
    check(cudaMalloc(&dc, c.size() * 4), "cudaMalloc");
    check(cudaMalloc(&dd, d.size() * 4), "cudaMalloc");
    check(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice), "copy A");
    check(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice), "copy B");
    check(cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice), "copy C");
    mma_trials<<<trials, 32>>>(da, db, dc, dd);
    check(cudaGetLastError(), "launch");
    check(cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost), "copy D");
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(dd);

    ClassStats stats[4];
    for (int tr = 0; tr < trials; ++tr)
      for (int r = 0; r < kM; ++r)
        for (int j = 0; j < kN; ++j) {
          const double c0 = c[std::size_t(tr) * kM * kN + r * kN + j];
          double exact = c0, abs_sum = std::fabs(c0);
          for (int k = 0; k < kK; ++k) {
            const double av = bcsr24::fp16_to_float(a[std::size_t(tr) * kM * kK + r * kK + k]);
            const double bv = bcsr24::fp16_to_float(b[std::size_t(tr) * kK * kN + j * kK + k]);
            exact += av * bv;
            abs_sum += std::fabs(av * bv);
          }
          if (abs_sum == 0.0) continue;
          const double got = d[std::size_t(tr) * kM * kN + r * kN + j];
          ClassStats& s = stats[r % 4];
          ++s.outputs;
          const double error = std::fabs(got - exact);
          s.max_units = std::max(s.max_units, error / (abs_sum * 0x1p-23));
          if (exact != 0.0) s.max_relative = std::max(s.max_relative, error / std::fabs(exact));
          s.not_rounded_once += got != static_cast<double>(static_cast<float>(exact));
        }
    const char* names[4] = {"normal", "normal + 1 subnormal", "4 subnormals", "1-2 smallest subnormals"};
    std::printf("accumulator %s, %d trials:\n", with_c ? "random (C != 0)" : "zero", trials);
    std::printf("  %-26s %10s %22s %14s %22s\n", "A row class", "outputs", "max |err| / 2^-23 S", "max rel. err",
                "not RN(exact) in fp32");
    for (int k = 0; k < 4; ++k)
      std::printf("  %-26s %10lld %22.3g %14.3g %22lld\n", names[k], stats[k].outputs, stats[k].max_units,
                  stats[k].max_relative, stats[k].not_rounded_once);
  }
  return 0;
}
