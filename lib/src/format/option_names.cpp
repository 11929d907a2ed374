// Names of the operator options (scaling policy, layout, reordering), as spmm_run, the Python package and the
// JSON reports spell them.
#include <string>

#include "bcsr24/error.hpp"
#include "bcsr24/operator_options.hpp"

namespace bcsr24 {

const char* scaling_policy_name(ScalingPolicy policy) noexcept {
  switch (policy) {
    case ScalingPolicy::per_row: return "per_row";
    case ScalingPolicy::automatic: return "auto";
    case ScalingPolicy::none: return "none";
  }
  return "?";
}

ScalingPolicy scaling_policy_from_name(const std::string& name) {
  for (ScalingPolicy p : {ScalingPolicy::per_row, ScalingPolicy::automatic, ScalingPolicy::none})
    if (name == scaling_policy_name(p)) return p;
  throw InvalidArgument("unknown scaling policy '" + name + "' (expected per_row, auto or none)");
}

const char* layout_name(TileLayout layout) noexcept {
  switch (layout) {
    case TileLayout::aligned: return "aligned";
    case TileLayout::condensed: return "condensed";
    case TileLayout::automatic: return "auto";
  }
  return "?";
}

const char* reordering_name(Reordering reordering) noexcept {
  switch (reordering) {
    case Reordering::none: return "none";
    case Reordering::rcm: return "rcm";
    case Reordering::automatic: return "auto";
  }
  return "?";
}

TileLayout layout_from_name(const std::string& name) {
  for (TileLayout l : {TileLayout::aligned, TileLayout::condensed, TileLayout::automatic})
    if (name == layout_name(l)) return l;
  throw InvalidArgument("unknown tile layout '" + name + "' (expected aligned, condensed or auto)");
}

Reordering reordering_from_name(const std::string& name) {
  for (Reordering r : {Reordering::none, Reordering::rcm, Reordering::automatic})
    if (name == reordering_name(r)) return r;
  throw InvalidArgument("unknown reordering '" + name + "' (expected none, rcm or auto)");
}

}  // namespace bcsr24
