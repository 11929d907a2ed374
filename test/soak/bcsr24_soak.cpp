// bcsr24_soak: for a given time, random matrices (soak_matrices.hpp), random operator options and random plans
// through the public API only, every product checked against the CPU reference (reference_spmm) under the
// error bound of its precision mode (bcsr24_testkit/product_bounds.hpp). Exits 1 on any result outside its bound,
// any exception other than a documented refusal, or device memory not back to its starting value; 77 without a
// usable GPU. Every case has its own seed: `--seed S --case K` replays case K of a run. `--emulate` needs no GPU:
// the cases' fp16 and split matrices go through a CPU emulation of the tile kernel's arithmetic
// (tile_emulation.hpp) against the same bounds, which tells the algorithm's errors from the GPU's.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/bcsr24.hpp"
#include "cuda_memory.hpp"
#include "device/device_memory.hpp"
#include "soak_case.hpp"

using namespace bcsr24;
using bcsr24::test::cuda_ok;
using namespace bcsr24::soak;

namespace {

struct Settings {
  double seconds = 600.0;
  std::uint64_t seed = 0;
  std::int64_t only_case = -1, max_cases = 0;
  std::int32_t max_rows = 2000;
  bool verbose = false, emulate = false;
};

void add_options(CLI::App& app, Settings& s) {
  app.add_option("--seconds", s.seconds, "how long to run")->capture_default_str();
  app.add_option("--seed", s.seed, "seed of the run (default: from the clock, printed)");
  app.add_option("--case", s.only_case, "run only this case of the seed's sequence (replays a failure)");
  app.add_option("--cases", s.max_cases, "stop after this many cases (0: run for --seconds)")->capture_default_str();
  app.add_option("--max-rows", s.max_rows, "largest matrix dimension")->capture_default_str();
  app.add_flag("-v,--verbose", s.verbose, "one line per case");
  app.add_flag("--emulate", s.emulate,
               "no GPU: the cases' fp16 and split matrices through a CPU emulation of the tile kernel's arithmetic "
               "(tile_emulation.hpp), against the same bounds; with --case, that case; else --cases of them");
}

/// --emulate: the cases' fp16 and split matrices through the CPU emulation of the tile kernel; no GPU.
int emulate_cases(const Settings& s) {
  Tally tally;
  std::vector<Failure> failures;
  const std::int64_t first = s.only_case >= 0 ? s.only_case : 0;
  const std::int64_t last = s.only_case >= 0 ? s.only_case : std::max<std::int64_t>(s.max_cases, 1) - 1;
  for (std::int64_t index = first; index <= last; ++index)
    emulate_case(case_seed(s.seed, index), s.max_rows, index, tally, failures);
  for (const Failure& f : failures) std::printf("FAIL %s\n", f.what.c_str());
  std::printf("emulated cases %lld, outputs %lld, largest |error| / bound %.3g, failures %zu\n",
              static_cast<long long>(tally.cases), static_cast<long long>(tally.outputs), tally.max_ratio,
              failures.size());
  return failures.empty() ? 0 : 1;
}

/// Device memory over the run: free bytes at the start, after the warm-up cases and at the end, the runtime's stack
/// limit at the start and the end, and what the end checks found.
struct MemoryWatch {
  std::size_t free_start = 0, free_warm = 0, free_end = 0, total = 0, stack_start = 0, stack_end = 0;
  std::int64_t warmup_cases = 20;
  std::size_t runtime_reserve = 0;
  std::int64_t live = -1;
  bool back = false;
};

/// The run's cases (only --case when given), every product checked; returns the seconds they took. Free memory is
/// read again after the warm-up cases.
double run_cases(const Settings& s, cudaStream_t stream, MemoryWatch& memory, Tally& tally,
                 std::vector<Failure>& failures) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (std::int64_t index = s.only_case >= 0 ? s.only_case : 0;; ++index) {
    if (s.only_case >= 0 && index > s.only_case) break;
    if (s.only_case < 0 && (elapsed() >= s.seconds || (s.max_cases > 0 && index >= s.max_cases))) break;
    const std::uint64_t seed = case_seed(s.seed, index);
    const std::size_t failures_before = failures.size();
    try {
      run_case(seed, s.max_rows, stream, tally, failures, s.verbose);
    } catch (const std::exception& e) {
      failures.push_back({std::string("exception: ") + e.what()});
    }
    // The first cases load what the driver keeps for the process (2 MiB on the H100 after the first cases, with
    // the library's own allocations all given back): free memory is compared with its value after them, so that a
    // leak is memory that keeps going as the cases go on.
    if (index + 1 == memory.warmup_cases && s.only_case < 0) try {
        cuda_ok(cudaDeviceSynchronize(), "after the warm-up cases");
        cuda_ok(cudaMemGetInfo(&memory.free_warm, &memory.total), "cudaMemGetInfo");
      } catch (const std::exception& e) {
        failures.push_back({std::string("after the warm-up cases: ") + e.what()});
      }
    for (std::size_t f = failures_before; f < failures.size(); ++f) {
      std::printf("FAIL case %lld (replay: bcsr24_soak --seed %llu --case %lld): %s\n", static_cast<long long>(index),
                  static_cast<unsigned long long>(s.seed), static_cast<long long>(index), failures[f].what.c_str());
      std::fflush(stdout);
    }
  }
  return elapsed();
}

/// Everything the run made is gone: device memory must be where it started.
/// Two checks. The library's own count of live device allocations must be 0: exact, whatever the driver does.
/// The driver's free memory must be back too, less what the runtime reserved on its own and keeps: when a kernel
/// needs more local memory per thread than the stack limit in force, the runtime raises the limit and keeps a
/// reserve of (new limit x resident threads of the device), in 2 MiB pages.
void check_memory_at_end(cudaStream_t stream, bool sanitizer, MemoryWatch& m, std::vector<Failure>& failures) {
  try {
    cuda_ok(cudaStreamSynchronize(stream), "end");
    cuda_ok(cudaDeviceSynchronize(), "end");
    cuda_ok(cudaMemGetInfo(&m.free_end, &m.total), "cudaMemGetInfo");
    cuda_ok(cudaDeviceGetLimit(&m.stack_end, cudaLimitStackSize), "cudaDeviceGetLimit");
    m.live = detail::live_device_allocations();
    if (m.stack_end > m.stack_start) {
      int sms = 0, threads = 0;
      cuda_ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute");
      cuda_ok(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, 0), "attribute");
      constexpr std::size_t kPage = std::size_t(2) << 20;
      m.runtime_reserve =
          ((m.stack_end - m.stack_start) * std::size_t(sms) * std::size_t(threads) + kPage - 1) / kPage * kPage;
    }
    m.back = m.free_end + m.runtime_reserve >= std::min(m.free_start, m.free_warm);
  } catch (const std::exception& e) {
    failures.push_back({std::string("at the end: ") + e.what()});
  }
  if (m.live != 0)
    failures.push_back({"the library holds " + std::to_string(m.live) + " device allocations at the end (leaked)"});
  // compute-sanitizer (loaded through CUDA_INJECTION64_PATH) keeps device memory of its own as programs allocate;
  // under it leaks are its --leak-check's to report.
  if (!m.back && !sanitizer)
    failures.push_back({"device memory not back: " + std::to_string(m.free_start) + " bytes free at the start, " +
                        std::to_string(m.free_warm) + " after the first " + std::to_string(m.warmup_cases) +
                        " cases, " + std::to_string(m.free_end) + " at the end"});
}

void print_summary(std::uint64_t seed, const Tally& tally, double ran, const MemoryWatch& m, bool sanitizer,
                   const std::vector<Failure>& failures) {
  std::printf("\n== soak summary (seed %llu)\n", static_cast<unsigned long long>(seed));
  std::printf("cases %lld, plans %lld, products %lld, outputs compared %lld (%lld nonzero), %.0f s\n",
              static_cast<long long>(tally.cases), static_cast<long long>(tally.plans),
              static_cast<long long>(tally.products), static_cast<long long>(tally.outputs),
              static_cast<long long>(tally.nonzero_outputs), ran);
  std::printf("largest |error| / bound: %.3g\n", tally.max_ratio);
  std::printf("covered:\n");
  for (const auto& [what, count] : tally.covered) std::printf("  %-60s %lld\n", what.c_str(), static_cast<long long>(count));
  std::printf("documented refusals:\n");
  for (const auto& [what, count] : tally.refused) std::printf("  %-60s %lld\n", what.c_str(), static_cast<long long>(count));
  std::printf("device memory free: %zu bytes at the start, %zu after the first %lld cases, %zu at the end%s\n",
              m.free_start, m.free_warm, static_cast<long long>(m.warmup_cases), m.free_end,
              sanitizer ? " (under compute-sanitizer: not compared)" : "");
  std::printf("runtime stack limit: %zu bytes per thread at the start, %zu at the end (reserve allowed: %zu bytes)\n",
              m.stack_start, m.stack_end, m.runtime_reserve);
  std::printf("library device allocations live at the end: %lld\n", static_cast<long long>(m.live));
  std::printf("failures: %zu\n", failures.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bcsr24_soak: random matrices, options and plans through the public API, every product checked "
               "against reference_spmm"};
  Settings s;
  add_options(app, s);
  CLI11_PARSE(app, argc, argv);
  if (s.seed == 0) s.seed = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  if (s.emulate) return emulate_cases(s);

  // Every kernel is loaded when the context starts: loaded lazily, modules would take device memory during the run
  // and look like a leak at its end.
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  const DeviceInfo device = query_device();
  if (!device.available) {
    std::printf("bcsr24_soak skipped: %s\n", device.reason.c_str());
    return 77;
  }
  cudaStream_t stream = nullptr;
  MemoryWatch memory;
  try {
    cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    cuda_ok(cudaDeviceSynchronize(), "start");
    cuda_ok(cudaMemGetInfo(&memory.free_start, &memory.total), "cudaMemGetInfo");
    cuda_ok(cudaDeviceGetLimit(&memory.stack_start, cudaLimitStackSize), "cudaDeviceGetLimit");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bcsr24_soak: %s\n", e.what());
    return 1;
  }
  std::printf("bcsr24_soak: seed %llu, %.0f s, matrices up to %d rows, on %s (sm_%d)\n",
              static_cast<unsigned long long>(s.seed), s.seconds, s.max_rows, device.name.c_str(),
              device.compute_capability);
  std::fflush(stdout);

  Tally tally;
  std::vector<Failure> failures;
  memory.warmup_cases = s.max_cases > 0 ? std::max<std::int64_t>(1, s.max_cases / 4) : 20;
  memory.free_warm = memory.free_start;
  const double ran = run_cases(s, stream, memory, tally, failures);
  const bool sanitizer = std::getenv("CUDA_INJECTION64_PATH") != nullptr;
  check_memory_at_end(stream, sanitizer, memory, failures);
  if (tally.products > 0 && tally.nonzero_outputs == 0) failures.push_back({"every output was zero"});
  cudaStreamDestroy(stream);
  print_summary(s.seed, tally, ran, memory, sanitizer, failures);
  return failures.empty() ? 0 : 1;
}
