// Names of the kernels, as used on command lines and in reports.
#include <string>

#include "bcsr24/error.hpp"
#include "bcsr24/spmm_plan.hpp"
#include "bcsr24_experimental/plan_knobs.hpp"

namespace bcsr24 {

const char* kernel_name(KernelKind kind) noexcept {
  switch (kind) {
    case KernelKind::dense_bt: return "dense_bt";
    case KernelKind::dense_pipelined: return "dense_pipelined";
    case KernelKind::split_pipelined: return "split_pipelined";
    case KernelKind::csr_cuda_cores: return "csr_cuda_cores";
    case KernelKind::automatic: return "auto";
  }
  return "unknown";
}

std::vector<KernelKind> all_kernels() {
  return {KernelKind::dense_bt, KernelKind::dense_pipelined, KernelKind::split_pipelined, KernelKind::csr_cuda_cores,
          KernelKind::automatic};
}

KernelKind kernel_from_name(const std::string& name) {
  for (KernelKind k : all_kernels())
    if (name == kernel_name(k)) return k;
  throw InvalidArgument("unknown kernel '" + name +
                        "' (expected auto, split_pipelined, dense_pipelined, dense_bt or csr_cuda_cores)");
}

const char* tuning_name(Tuning tuning) noexcept {
  switch (tuning) {
    case Tuning::model: return "model";
    case Tuning::measure: return "measure";
  }
  return "?";
}

const char* input_type_name(InputType type) noexcept {
  switch (type) {
    case InputType::automatic: return "auto";
    case InputType::f16: return "fp16";
    case InputType::bf16: return "bf16";
    case InputType::f32: return "fp32";
  }
  return "?";
}

namespace experimental {

const char* tile_pipeline_name(TilePipeline pipeline) noexcept {
  switch (pipeline) {
    case TilePipeline::automatic: return "auto";
    case TilePipeline::standard: return "standard";
    case TilePipeline::deep: return "deep";
  }
  return "?";
}

const char* band_groups_name(BandGroups groups) noexcept {
  switch (groups) {
    case BandGroups::automatic: return "auto";
    case BandGroups::off: return "off";
    case BandGroups::on: return "on";
  }
  return "?";
}

const char* band_paths_name(BandPaths paths) noexcept {
  switch (paths) {
    case BandPaths::automatic: return "auto";
    case BandPaths::tiles: return "tiles";
    case BandPaths::csr: return "csr";
    case BandPaths::hybrid: return "hybrid";
  }
  return "?";
}

bool default_knobs(const PlanKnobs& knobs) noexcept {
  const PlanKnobs defaults;
  return knobs.split_long_bands == defaults.split_long_bands && knobs.tile_pipeline == defaults.tile_pipeline &&
         knobs.band_groups == defaults.band_groups && knobs.paths == defaults.paths;
}

}  // namespace experimental
}  // namespace bcsr24
