// Names of the kernels, as used on command lines and in reports.
#include <string>

#include "bcsr24/spmm_plan.hpp"
#include "bcsr24_experimental/plan_knobs.hpp"
#include "format/name_table.hpp"

namespace bcsr24 {

namespace {

/// In the order kernel_from_name's error lists them.
constexpr detail::Named<KernelKind> kKernels[] = {{KernelKind::automatic, "auto"},
                                                  {KernelKind::split_pipelined, "split_pipelined"},
                                                  {KernelKind::csr_cuda_cores, "csr_cuda_cores"}};
constexpr detail::Named<Tuning> kTunings[] = {{Tuning::model, "model"}, {Tuning::measure, "measure"}};
constexpr detail::Named<ElementType> kElementTypes[] = {{ElementType::automatic, "auto"},
                                                        {ElementType::f16, "fp16"},
                                                        {ElementType::bf16, "bf16"},
                                                        {ElementType::f32, "fp32"}};

}  // namespace

const char* kernel_name(KernelKind kind) noexcept { return detail::name_in(kKernels, kind, "unknown"); }

std::vector<KernelKind> all_kernels() {
  return {KernelKind::split_pipelined, KernelKind::csr_cuda_cores, KernelKind::automatic};
}

KernelKind kernel_from_name(const std::string& name) { return detail::value_in(kKernels, name, "kernel"); }

const char* tuning_name(Tuning tuning) noexcept { return detail::name_in(kTunings, tuning); }

const char* element_type_name(ElementType type) noexcept { return detail::name_in(kElementTypes, type); }
ElementType element_type_from_name(const std::string& name) {
  return detail::value_in(kElementTypes, name, "element type");
}

namespace experimental {

namespace {

constexpr detail::Named<TilePipeline> kTilePipelines[] = {
    {TilePipeline::automatic, "auto"}, {TilePipeline::standard, "standard"}, {TilePipeline::deep, "deep"}};
constexpr detail::Named<BandGroups> kBandGroups[] = {
    {BandGroups::automatic, "auto"}, {BandGroups::off, "off"}, {BandGroups::on, "on"}};
constexpr detail::Named<BandPaths> kBandPaths[] = {{BandPaths::automatic, "auto"},
                                                   {BandPaths::tiles, "tiles"},
                                                   {BandPaths::csr, "csr"},
                                                   {BandPaths::hybrid, "hybrid"},
                                                   {BandPaths::vectors, "vectors"},
                                                   {BandPaths::hybrid_vectors, "hybrid_vectors"}};

}  // namespace

const char* tile_pipeline_name(TilePipeline pipeline) noexcept { return detail::name_in(kTilePipelines, pipeline); }
const char* band_groups_name(BandGroups groups) noexcept { return detail::name_in(kBandGroups, groups); }
const char* band_paths_name(BandPaths paths) noexcept { return detail::name_in(kBandPaths, paths); }

bool default_knobs(const PlanKnobs& knobs) noexcept {
  const PlanKnobs defaults;
  return knobs.split_long_bands == defaults.split_long_bands && knobs.tile_pipeline == defaults.tile_pipeline &&
         knobs.band_groups == defaults.band_groups && knobs.paths == defaults.paths &&
         knobs.vector_warps == defaults.vector_warps && knobs.vector_piece_steps == defaults.vector_piece_steps &&
         knobs.csr_short_pairs == defaults.csr_short_pairs && knobs.csr_short_run_rows == defaults.csr_short_run_rows;
}

}  // namespace experimental
}  // namespace bcsr24
