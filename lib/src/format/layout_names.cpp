// Names of the layout and reordering choices, as spmm_run and the JSON reports spell them.
#include "bcsr24/bcsr24_matrix.hpp"

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

}  // namespace bcsr24
