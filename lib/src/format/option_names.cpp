// Names of the operator options (scaling policy, layout, reordering), as spmm_run, the Python package and the
// JSON reports spell them.
#include <string>

#include "bcsr24/operator_options.hpp"
#include "format/name_table.hpp"

namespace bcsr24 {

namespace {

constexpr detail::Named<ScalingPolicy> kScalingPolicies[] = {
    {ScalingPolicy::per_row, "per_row"}, {ScalingPolicy::automatic, "auto"}, {ScalingPolicy::none, "none"}};
constexpr detail::Named<TileLayout> kLayouts[] = {
    {TileLayout::aligned, "aligned"}, {TileLayout::condensed, "condensed"}, {TileLayout::automatic, "auto"}};
constexpr detail::Named<Reordering> kReorderings[] = {
    {Reordering::none, "none"}, {Reordering::rcm, "rcm"}, {Reordering::automatic, "auto"}};

}  // namespace

const char* scaling_policy_name(ScalingPolicy policy) noexcept { return detail::name_in(kScalingPolicies, policy); }
const char* layout_name(TileLayout layout) noexcept { return detail::name_in(kLayouts, layout); }
const char* reordering_name(Reordering reordering) noexcept { return detail::name_in(kReorderings, reordering); }

ScalingPolicy scaling_policy_from_name(const std::string& name) {
  return detail::value_in(kScalingPolicies, name, "scaling policy");
}
TileLayout layout_from_name(const std::string& name) { return detail::value_in(kLayouts, name, "tile layout"); }
Reordering reordering_from_name(const std::string& name) { return detail::value_in(kReorderings, name, "reordering"); }

}  // namespace bcsr24
