// The narrow-vector kernel's work schedule (device/vector_schedule.hpp): pieces, steps and the warps' runs.
#include "device/vector_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24::detail {

std::int32_t vector_piece_steps(std::int64_t total_steps, std::int64_t warps) {
  const std::int64_t per_warp = warps > 0 ? (total_steps + warps - 1) / warps : total_steps;
  return static_cast<std::int32_t>(
      std::min<std::int64_t>(std::max<std::int64_t>(kVectorMinPieceSteps, per_warp), kernels::kVectorNoGroup));
}

std::int32_t vector_window_piece_steps(std::int32_t groups, std::int32_t base) {
  const auto balanced = static_cast<std::int32_t>(std::ceil(std::sqrt(kVectorPartToStepCost * std::max(groups, 0))));
  const std::int32_t bound = std::max(base, balanced);
  return groups <= bound + kVectorSplitMinSavedSteps ? std::max(groups, bound) : bound;
}

std::int32_t vector_piece_bound(std::int32_t groups, std::int32_t base, VectorSplit split) {
  return split == VectorSplit::by_window ? vector_window_piece_steps(groups, base) : base;
}

namespace {

/// A piece of window `window` with its epilogue's record.
kernels::VectorPiece make_piece(std::int32_t window, std::int32_t slot, const VectorRowTargets& t) {
  kernels::VectorPiece piece;
  piece.window = window;
  piece.slot = slot;
  for (int r = 0; r < kernels::kVectorWindowRows; ++r) {
    const std::int64_t stored = std::int64_t(window) * kernels::kVectorWindowRows + r;
    if ((t.row_map != nullptr && stored >= std::int64_t(t.row_map->size())) ||
        (t.exponent != nullptr && stored >= std::int64_t(t.exponent->size())))
      throw InvalidArgument("narrow-vector schedule: window " + std::to_string(window) +
                            " has rows past the row map or the row exponents");
    const std::int64_t out = t.row_map != nullptr ? (*t.row_map)[std::size_t(stored)] : stored;
    piece.out_row[r] = out >= 0 && out < t.rows ? static_cast<std::int32_t>(out) : -1;
    piece.exponent[r] = t.exponent != nullptr ? (*t.exponent)[std::size_t(stored)] : std::int16_t(0);
  }
  return piece;
}

}  // namespace

VectorSchedule make_vector_schedule(const std::vector<VectorWindowWork>& windows, const VectorRowTargets& targets,
                                    bool with_empty, std::int32_t max_piece_steps, std::int64_t warps,
                                    VectorSplit split) {
  if (max_piece_steps < 1 || warps < 1)
    throw InvalidArgument("narrow-vector schedule: " + std::to_string(max_piece_steps) + " steps a piece and " +
                          std::to_string(warps) + " warps (both must be at least 1)");
  VectorSchedule s;
  s.max_piece_steps = max_piece_steps;
  // Steps before each piece, for the deal below.
  std::vector<std::int64_t> piece_first_step;
  auto add_step = [&](std::int64_t group, bool last) {
    if (s.steps.size() >= std::size_t(std::numeric_limits<std::int32_t>::max()))
      throw SizeLimitError("narrow-vector schedule: more than 2^31 - 1 K-steps");
    s.steps.push_back(static_cast<std::int32_t>(group | (last ? kernels::kVectorLastStep : 0u)));
  };
  for (const VectorWindowWork& w : windows) {
    if (w.groups == 0) {
      if (!with_empty) continue;
      piece_first_step.push_back(std::int64_t(s.steps.size()));
      s.pieces.push_back(make_piece(w.window, -1, targets));
      add_step(kernels::kVectorNoGroup, true);
      continue;
    }
    const std::int32_t bound = vector_piece_bound(w.groups, max_piece_steps, split);
    const std::int32_t parts = (w.groups + bound - 1) / bound;
    const std::int32_t first_slot = static_cast<std::int32_t>(s.slots.size());
    for (std::int32_t k = 0; k < parts; ++k) {
      // Part k: groups [groups k / parts, groups (k + 1) / parts): lengths differ by at most one.
      const std::int64_t begin = std::int64_t(w.groups) * k / parts, end = std::int64_t(w.groups) * (k + 1) / parts;
      piece_first_step.push_back(std::int64_t(s.steps.size()));
      std::int32_t slot = -1;
      if (parts > 1) {
        slot = static_cast<std::int32_t>(s.slots.size());
        s.slots.push_back(kernels::VectorSlot{first_slot, parts});
      }
      s.pieces.push_back(make_piece(w.window, slot, targets));
      for (std::int64_t g = begin; g < end; ++g) add_step(std::int64_t(w.first_group) + g, g + 1 == end);
    }
  }
  if (s.pieces.empty()) {
    s.warp_steps.assign(1, 0);
    return s;
  }
  const std::int64_t total = std::int64_t(s.steps.size());
  const std::int64_t dealt = std::min<std::int64_t>(warps, std::int64_t(s.pieces.size()));
  s.warp_pieces.assign(std::size_t(dealt), 0);
  s.warp_steps.assign(std::size_t(dealt) + 1, 0);
  // Warp w's run starts at the first piece dealt to a warp >= w (pieces of one warp are contiguous and the warp
  // index never decreases along the pieces); a warp dealt nothing has an empty run.
  std::int64_t next_warp = 0;
  for (std::size_t j = 0; j < s.pieces.size(); ++j) {
    const std::int64_t warp = piece_first_step[j] * dealt / total;
    for (; next_warp <= warp; ++next_warp) {
      s.warp_pieces[std::size_t(next_warp)] = static_cast<std::int32_t>(j);
      s.warp_steps[std::size_t(next_warp)] = static_cast<std::int32_t>(piece_first_step[j]);
    }
  }
  for (; next_warp <= dealt; ++next_warp) {
    if (next_warp < dealt) s.warp_pieces[std::size_t(next_warp)] = static_cast<std::int32_t>(s.pieces.size());
    s.warp_steps[std::size_t(next_warp)] = static_cast<std::int32_t>(total);
  }
  return s;
}

}  // namespace bcsr24::detail
