// Names of the layout and reordering choices, as spmm_run and the JSON reports spell them.
#include "bcsr24/bcsr24_matrix.hpp"

#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24 {

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
