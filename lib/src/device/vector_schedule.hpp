// The narrow-vector kernel's work schedule (docs/KERNELS.md, "The narrow-vector path"), built on the host by the
// plan: windows cut into pieces of at most a given number of K-steps, and the pieces dealt to warps in
// contiguous runs of about equal K-steps. Plain C++ (tested on the CPU: test/test_vector_schedule.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/vector_params.hpp"

namespace bcsr24::detail {

/// A window of the vector part, in the order the plan wants them run (longest first).
struct VectorWindowWork {
  std::int32_t window = 0;       ///< stored rows 8 window .. 8 window + 7
  std::int32_t first_group = 0;  ///< its first group in the vector copy
  std::int32_t groups = 0;       ///< its K-steps (0: an empty window)
};

/// Where a window's rows go, for the pieces' epilogue records (kernels::VectorPiece).
struct VectorRowTargets {
  const std::vector<std::int32_t>* row_map = nullptr;   ///< C row per stored row (-1: padding); null: identity
  const std::vector<std::int16_t>* exponent = nullptr;  ///< per stored row; null: no row scaling
  std::int32_t rows = 0;                                ///< rows of C: stored rows at or past it have none
};

/// What the kernel walks (kernels::VectorSpmmParams): warp w takes steps [warp_steps[w], warp_steps[w + 1]) and
/// the pieces from warp_pieces[w] on, which those steps end one by one (kVectorLastStep).
struct VectorSchedule {
  std::vector<std::int32_t> steps;  ///< group | kVectorLastStep on a piece's last step; kVectorNoGroup: empty window
  std::vector<kernels::VectorPiece> pieces;
  std::vector<std::int32_t> warp_steps;   ///< warps + 1
  std::vector<std::int32_t> warp_pieces;  ///< warps
  std::vector<kernels::VectorSlot> slots;  ///< per partial-sum slot (the parts of split windows)
  std::int32_t max_piece_steps = 0;       ///< the split bound the schedule was made with

  std::int32_t warps() const noexcept { return static_cast<std::int32_t>(warp_pieces.size()); }
};

/// Pieces never split below this many K-steps: a part's partial sum costs a 2 KiB write and, in the part that
/// finishes last, a 2 KiB read per part, worth it only against a good many K-steps of one warp.
inline constexpr std::int32_t kVectorMinPieceSteps = 32;

/// The split bound for `total_steps` K-steps over `warps` warps (per column slice): the larger of
/// kVectorMinPieceSteps and the steps per warp, so that a long window's parts are no longer than one warp's share
/// and a matrix with enough work for every warp splits nothing.
std::int32_t vector_piece_steps(std::int64_t total_steps, std::int64_t warps);

/// The schedule of `windows` (in that order) over at most `warps` warps, each piece with its window's C rows and
/// exponents from `targets`: each window of more than
/// `max_piece_steps` groups becomes ceil(groups / max_piece_steps) parts of about equal length (consecutive
/// slots), the others one piece; with `with_empty`, an empty window is one step without a group (its epilogue
/// writes beta C and the addends), otherwise it is left out (run() with beta == 1 and no addends). Pieces go to
/// warps in order, piece j (s steps before it of T) to warp floor(s * warps' / T), warps' = min(warps, pieces).
/// @throw InvalidArgument for max_piece_steps or warps < 1, or a row map or exponent list shorter than a window's
///        rows; SizeLimitError beyond 2^31 - 1 steps.
VectorSchedule make_vector_schedule(const std::vector<VectorWindowWork>& windows, const VectorRowTargets& targets,
                                    bool with_empty, std::int32_t max_piece_steps, std::int64_t warps);

}  // namespace bcsr24::detail
