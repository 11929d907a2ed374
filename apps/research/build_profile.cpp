// build_profile: where the host time of making a plan goes (issue 33: the measured plans' tuner drafts and builds
// several candidate plans within a budget of a few milliseconds). For each n and each forced path (tiles, CSR,
// hybrid, hybrid with vectors), the median over repeats of: the draft, the whole build, and the build's steps (tile,
// CSR and vector lists, the storage's allocation and copy, kernel loading), plus a plan's destruction; and for
// scale, a bare cudaMalloc/cudaFree and a pageable cudaMemcpy of the same bytes as the plan's storage.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/sparse_operator.hpp"
#include "cli.hpp"
#include "device/plan_access.hpp"
#include "device/plan_draft.hpp"
#include "device/spmm_plan_impl.hpp"
#include "matrix_source.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double since_ms(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bcsr24;
  CLI::App app{"Host time of drafting and building plans, step by step (issue 33).", "build_profile"};
  apps::MatrixSource source;
  std::string n_list = "32,128";
  int reps = 7;
  return apps::run_main(
      app, argc, argv,
      [&](CLI::App& a) {
        source.add_options(a, apps::MatrixSource::FileOption::named, "seed of a generated matrix");
        a.add_option("--n", n_list, "widths of B")->capture_default_str();
        a.add_option("--reps", reps, "repeats (medians are printed)")->capture_default_str();
      },
      [&]() {
        source.validate();
        const SparseOperator op = SparseOperator::from_csr(source.load());
        op.upload();
        const DeviceMatrix& m = detail::OperatorAccess::device(op);
        std::printf("%s: %d x %d\n", source.name().c_str(), op.rows(), op.cols());
        std::printf("%-5s %-15s %8s %8s %8s %8s %8s %8s %8s %8s %10s %9s %9s\n", "n", "paths", "draft", "build",
                    "tiles", "csr", "vectors", "upload", "loading", "destroy", "bytes", "malloc", "memcpy");
        const std::pair<const char*, BandPaths> paths[] = {{"tiles", BandPaths::tiles},
                                                           {"csr", BandPaths::csr},
                                                           {"hybrid", BandPaths::hybrid},
                                                           {"hybrid_vectors", BandPaths::hybrid_vectors}};
        for (const std::int32_t n : apps::parse_int_list(n_list)) {
          for (const auto& [name, path] : paths) {
            PlanOptions options;
            options.tuning = Tuning::model;
            PlanKnobs knobs;
            knobs.paths = path;
            std::vector<double> draft_ms, build_ms, tile_ms, csr_ms, vector_ms, upload_ms, loading_ms, destroy_ms,
                malloc_ms, memcpy_ms;
            std::size_t bytes = 0;
            try {
              for (int r = 0; r < reps; ++r) {
                Clock::time_point t = Clock::now();
                const detail::PlanDraft draft = detail::draft_plan(m, n, KernelKind::automatic, options, knobs);
                draft_ms.push_back(since_ms(t));
                t = Clock::now();
                double loading = 0.0;
                auto plan = std::make_unique<SpmmPlan>(detail::PlanAccess::build(m, draft, &loading));
                build_ms.push_back(since_ms(t));
                const auto& times = detail::PlanAccess::impl(*plan).build_times;
                tile_ms.push_back(times.tile_ms);
                csr_ms.push_back(times.csr_ms);
                vector_ms.push_back(times.vector_ms);
                upload_ms.push_back(times.upload_ms);
                loading_ms.push_back(loading);
                bytes = static_cast<std::size_t>(plan->workspace_bytes());
                t = Clock::now();
                plan.reset();
                destroy_ms.push_back(since_ms(t));
                // The same bytes through the bare calls.
                std::vector<unsigned char> host(std::max<std::size_t>(bytes, 16));
                void* d = nullptr;
                t = Clock::now();
                cudaMalloc(&d, host.size());
                cudaFree(d);
                malloc_ms.push_back(since_ms(t));
                cudaMalloc(&d, host.size());
                t = Clock::now();
                cudaMemcpy(d, host.data(), host.size(), cudaMemcpyHostToDevice);
                memcpy_ms.push_back(since_ms(t));
                cudaFree(d);
              }
            } catch (const std::exception& e) {
              std::printf("%-5d %-15s refused: %s\n", n, name, e.what());
              continue;
            }
            std::printf("%-5d %-15s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %10zu %9.3f %9.3f\n", n, name,
                        median(draft_ms), median(build_ms), median(tile_ms), median(csr_ms), median(vector_ms),
                        median(upload_ms), median(loading_ms), median(destroy_ms), bytes, median(malloc_ms),
                        median(memcpy_ms));
          }
        }
        return 0;
      });
}
