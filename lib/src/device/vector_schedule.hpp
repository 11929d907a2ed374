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
  std::int32_t max_piece_steps = 0;       ///< the (base) split bound the schedule was made with

  std::int32_t warps() const noexcept { return static_cast<std::int32_t>(warp_pieces.size()); }
};

/// Pieces never split below this many K-steps.
inline constexpr std::int32_t kVectorMinPieceSteps = 2;
/// The cost of one more part of a split window against one K-step of a warp's chain. A warp's K-steps follow each
/// other at about one memory round trip over the pipeline's depth (~0.45 us a step on a cold L2), and the part that
/// finishes a window reads every part's partial sums (~0.08 us a part at n = 8, ~0.24 at n = 128): arrowhead:46500
/// with its ~2,900-step windows cut into parts of 2, 4, 8, 16 steps took 131.5, 74.9, 45.5, 36.1 us at n = 8 (H200,
/// 2026-11-29, run 41). A window of G steps in parts of S ends after about 0.45 S + 0.08 G / S us, least at
/// S = sqrt(0.18 G).
inline constexpr double kVectorPartToStepCost = 0.18;

/// The base split bound for `total_steps` K-steps over `warps` warps (per column slice): the larger of
/// kVectorMinPieceSteps and the steps per warp, so that a matrix with enough work for every warp splits no window
/// shorter than a warp's share (a split would add partial sums without shortening any warp's run).
std::int32_t vector_piece_steps(std::int64_t total_steps, std::int64_t warps);

/// A split costs the window's chain a fixed ~1.4 us besides the parts' reads (a part's partial sums are stored and
/// fenced, then counted with an atomic, before the last part reads them: round trips to L2), about as much as one or
/// two K-steps: a window is split only where that saves more than this many of its steps. Measured on one H200
/// (2026-11-29) at n = 1 to 256: with every saving taken (run 42), windows of 4 steps cut into parts of 2 took up to
/// 1.14x their time whole (delaunay_n14, bcspwr10 at n = 8); with savings of up to 3 steps refused (run 43), G51 and
/// bcsstk13, whose windows of 4-5 steps then stayed whole, took up to 1.27x the time of parts of 2.
inline constexpr std::int32_t kVectorSplitMinSavedSteps = 1;

/// The bound of one window of `groups` K-steps over the base bound `base` (vector_piece_steps): the larger of
/// `base` and sqrt(kVectorPartToStepCost * groups), so that a long window is not cut into so many parts that
/// reading their partial sums takes longer than the steps the split saves; `groups` itself (one piece) where the
/// split would save at most kVectorSplitMinSavedSteps steps.
std::int32_t vector_window_piece_steps(std::int32_t groups, std::int32_t base);

/// How make_vector_schedule bounds the pieces: one bound for every window (a plan knob, the tests), or the base
/// bound grown per window (vector_window_piece_steps; automatic plans).
enum class VectorSplit { fixed, by_window };

/// The bound of a window of `groups` K-steps: `base` itself with VectorSplit::fixed, vector_window_piece_steps
/// with VectorSplit::by_window. The schedule and the cost model (vector_part_ns) both cut windows by it.
std::int32_t vector_piece_bound(std::int32_t groups, std::int32_t base, VectorSplit split);

/// The schedule of `windows` (in that order) over at most `warps` warps, each piece with its window's C rows and
/// exponents from `targets`: each window of more than its bound (`max_piece_steps`, or with VectorSplit::by_window
/// vector_window_piece_steps(groups, max_piece_steps)) becomes ceil(groups / bound) parts of about equal length
/// (consecutive slots), the others one piece; with `with_empty`, an empty window is one step without a group (its epilogue
/// writes beta C and the addends), otherwise it is left out (run() with beta == 1 and no addends). Pieces go to
/// warps in order, piece j (s steps before it of T) to warp floor(s * warps' / T), warps' = min(warps, pieces).
/// @throw InvalidArgument for max_piece_steps or warps < 1, or a row map or exponent list shorter than a window's
///        rows; SizeLimitError beyond 2^31 - 1 steps.
VectorSchedule make_vector_schedule(const std::vector<VectorWindowWork>& windows, const VectorRowTargets& targets,
                                    bool with_empty, std::int32_t max_piece_steps, std::int64_t warps,
                                    VectorSplit split = VectorSplit::fixed);

}  // namespace bcsr24::detail
