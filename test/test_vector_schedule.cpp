// The narrow-vector kernel's work schedule (lib/src/device/vector_schedule.hpp) on the CPU: every window's
// groups are stepped exactly once, in order, in pieces no longer than the split bound, each warp's run is whole
// pieces, the runs are balanced; and an emulation of the kernel's walk over a schedule (vector_spmm.cu: the
// producer issuing step i + 2 into a ring of 3 stages, crossing piece boundaries, the stage bits, the consumer's
// epilogue after a piece's last step, split parts publishing partial sums and the last to count adding them in
// part order, the piece's record copied with its last step and naming the C rows), with the warps interleaved in
// random order, gives every row's exact product, each written once to its C row (row map, padding rows, rows past
// C).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "bcsr24/error.hpp"
#include "device/vector_schedule.hpp"
#include "kernels/vector_params.hpp"

using namespace bcsr24;
using detail::VectorSchedule;
using detail::VectorWindowWork;

namespace {

constexpr std::int32_t group_of(std::int32_t entry) {
  return std::int32_t(std::uint32_t(entry) & ~kernels::kVectorLastStep);
}
constexpr bool is_last(std::int32_t entry) { return (std::uint32_t(entry) & kernels::kVectorLastStep) != 0; }

/// Windows as the plan lists them: longest first, groups of each window contiguous in the vector copy but the
/// windows' copies in another order (the copy is in band order). A few long windows, many short, some empty.
std::vector<VectorWindowWork> random_windows(std::mt19937_64& rng, int count, std::vector<std::int32_t> long_lengths) {
  std::uniform_int_distribution<int> short_length(0, 3);
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(count));
  for (std::int32_t& l : lengths) l = short_length(rng);
  for (std::size_t i = 0; i < long_lengths.size() && i < lengths.size(); ++i)
    lengths[i * 7 % lengths.size()] = long_lengths[i];
  std::vector<VectorWindowWork> w(static_cast<std::size_t>(count));
  std::int32_t group = 0;
  for (int i = 0; i < count; ++i) {
    w[std::size_t(i)] = VectorWindowWork{i, group, lengths[std::size_t(i)]};
    group += lengths[std::size_t(i)];
  }
  std::stable_sort(w.begin(), w.end(),
                   [](const VectorWindowWork& x, const VectorWindowWork& y) { return x.groups > y.groups; });
  return w;
}

/// Where `count` windows' rows go: C has 8 count - 3 rows; with `permuted`, a random permutation of the stored
/// rows with every 11th a padding row (-1) and random exponents, otherwise the identity without row scaling.
struct Targets {
  std::vector<std::int32_t> row_map;
  std::vector<std::int16_t> exponent;
  std::int32_t rows = 0;
  detail::VectorRowTargets view() const {
    return detail::VectorRowTargets{row_map.empty() ? nullptr : &row_map, exponent.empty() ? nullptr : &exponent, rows};
  }
  /// The C row of row r of window w (-1: none), as the kernel must write it.
  std::int32_t out_row(std::int32_t w, int r) const {
    const std::int32_t stored = 8 * w + r, out = row_map.empty() ? stored : row_map[std::size_t(stored)];
    return out >= 0 && out < rows ? out : -1;
  }
};

Targets make_targets(std::mt19937_64& rng, int count, bool permuted) {
  Targets t;
  t.rows = 8 * count - 3;
  if (!permuted) return t;
  t.row_map.resize(std::size_t(8 * count));
  std::iota(t.row_map.begin(), t.row_map.end(), 0);
  std::shuffle(t.row_map.begin(), t.row_map.end(), rng);
  for (std::size_t i = 0; i < t.row_map.size(); i += 11) t.row_map[i] = -1;
  t.exponent.resize(t.row_map.size());
  for (std::int16_t& e : t.exponent) e = std::int16_t(int(rng() % 41) - 20);
  return t;
}

/// The schedule's invariants (vector_schedule.hpp).
void check_schedule(const VectorSchedule& s, const std::vector<VectorWindowWork>& windows, const Targets& targets,
                    bool with_empty, std::int32_t base_bound, std::int64_t warps,
                    detail::VectorSplit split = detail::VectorSplit::fixed) {
  auto bound_of = [&](const VectorWindowWork& w) {
    return split == detail::VectorSplit::by_window ? detail::vector_window_piece_steps(w.groups, base_bound)
                                                   : base_bound;
  };
  std::int32_t bound = base_bound;  // the longest a piece may be
  for (const VectorWindowWork& w : windows) bound = std::max(bound, bound_of(w));
  CHECK(s.max_piece_steps == base_bound);
  // Each piece's record: its window's C rows and exponents.
  for (const kernels::VectorPiece& piece : s.pieces)
    for (int r = 0; r < 8; ++r) {
      CHECK(piece.out_row[r] == targets.out_row(piece.window, r));
      CHECK(piece.exponent[r] == (targets.exponent.empty() ? 0 : targets.exponent[std::size_t(8 * piece.window + r)]));
    }
  // Pieces and steps, in order: each window's groups once, in order, split into parts of at most `bound`.
  std::size_t piece = 0, step = 0;
  for (const VectorWindowWork& w : windows) {
    if (w.groups == 0 && !with_empty) continue;
    INFO("window " << w.window << ", " << w.groups << " groups");
    if (w.groups == 0) {
      REQUIRE(piece < s.pieces.size());
      CHECK(s.pieces[piece].window == w.window);
      CHECK(s.pieces[piece].slot == -1);
      CHECK(s.steps[step] == std::int32_t(kernels::kVectorNoGroup | kernels::kVectorLastStep));
      ++piece;
      ++step;
      continue;
    }
    const std::int32_t parts = (w.groups + bound_of(w) - 1) / bound_of(w);
    std::int32_t g = 0;
    for (std::int32_t k = 0; k < parts; ++k, ++piece) {
      REQUIRE(piece < s.pieces.size());
      CHECK(s.pieces[piece].window == w.window);
      if (parts == 1) {
        CHECK(s.pieces[piece].slot == -1);
      } else {
        REQUIRE(s.pieces[piece].slot >= 0);
        const kernels::VectorSlot slot = s.slots[std::size_t(s.pieces[piece].slot)];
        CHECK(slot.parts == parts);
        CHECK(s.pieces[piece].slot == slot.first_slot + k);
      }
      std::int32_t length = 0;
      for (;; ++step, ++g, ++length) {
        REQUIRE(step < s.steps.size());
        CHECK(group_of(s.steps[step]) == w.first_group + g);
        if (is_last(s.steps[step])) break;
      }
      ++step;
      ++g;
      ++length;
      CHECK(length <= bound_of(w));
      CHECK(length >= w.groups / parts);  // parts of about equal length
    }
    CHECK(g == w.groups);
  }
  CHECK(piece == s.pieces.size());
  CHECK(step == s.steps.size());
  // The warps' runs: contiguous, whole pieces, balanced.
  if (s.pieces.empty()) return;
  CHECK(s.warps() == std::min<std::int64_t>(warps, std::int64_t(s.pieces.size())));
  REQUIRE(s.warp_steps.size() == std::size_t(s.warps()) + 1);
  CHECK(s.warp_steps.front() == 0);
  CHECK(s.warp_steps.back() == std::int32_t(s.steps.size()));
  CHECK(s.warp_pieces.front() == 0);
  const std::int64_t share = (std::int64_t(s.steps.size()) + s.warps() - 1) / s.warps();
  for (std::int32_t w = 0; w < s.warps(); ++w) {
    const std::int32_t begin = s.warp_steps[std::size_t(w)], end = s.warp_steps[std::size_t(w) + 1];
    REQUIRE(begin <= end);
    CHECK((begin == 0 || is_last(s.steps[std::size_t(begin) - 1])));  // a run starts at a piece's first step
    std::int32_t ends = 0;
    for (std::int32_t i = begin; i < end; ++i) ends += is_last(s.steps[std::size_t(i)]);
    CHECK((begin == end || is_last(s.steps[std::size_t(end) - 1])));
    const std::int32_t next_piece =
        w + 1 < s.warps() ? s.warp_pieces[std::size_t(w) + 1] : std::int32_t(s.pieces.size());
    CHECK(next_piece - s.warp_pieces[std::size_t(w)] == ends);
    CHECK(end - begin <= share + bound);
  }
}

/// The kernel's walk (vector_spmm.cu), one warp's state, stepped one loop iteration at a time.
struct EmulatedWarp {
  std::int32_t step_begin = 0, step_count = 0, issue_piece = 0, i = 0;
  std::int32_t entry0 = 0, entry1 = 0;  // the entries of steps i + 2 and i + 3
  unsigned stage_bits = 0;
  std::int32_t stage_group[kernels::kVectorStages];
  kernels::VectorPiece stage_record[kernels::kVectorStages];  // the record copied with a piece's last step
  std::vector<long> acc;
};

struct Emulation {
  const VectorSchedule& s;
  const std::vector<std::vector<long>>& group_values;  // per group: 16 vectors x 8 rows
  const std::vector<std::vector<std::int32_t>>& group_cols;
  const std::vector<std::vector<long>>& b;  // per B row: n values
  int n;
  std::map<std::int32_t, std::vector<long>> c;  // per C row: n values, written once
  std::vector<std::vector<long>> partials;
  std::vector<unsigned> counters;

  std::int32_t load_step(const EmulatedWarp& w, std::int32_t i) const {
    return i < w.step_count ? s.steps[std::size_t(w.step_begin + i)] : kernels::kVectorNoGroup;
  }
  void issue(EmulatedWarp& w, std::int32_t entry, int stage) const {
    const std::int32_t g = group_of(entry);
    w.stage_bits &= ~(0x101u << stage);
    w.stage_bits |= (is_last(entry) ? 1u : 0u) << stage;
    w.stage_bits |= (g == kernels::kVectorNoGroup ? 0x100u : 0u) << stage;
    // The kernel leaves a stage's parts that a step does not copy stale: poison them here.
    w.stage_record[stage] = kernels::VectorPiece{};
    w.stage_record[stage].slot = -2;
    if (is_last(entry)) {
      REQUIRE(w.issue_piece < std::int32_t(s.pieces.size()));
      w.stage_record[stage] = s.pieces[std::size_t(w.issue_piece++)];
    }
    w.stage_group[stage] = g == kernels::kVectorNoGroup ? -1 : g;
  }
  EmulatedWarp start(std::int32_t warp) const {
    EmulatedWarp w;
    w.step_begin = s.warp_steps[std::size_t(warp)];
    w.step_count = s.warp_steps[std::size_t(warp) + 1] - w.step_begin;
    w.issue_piece = s.warp_pieces[std::size_t(warp)];
    std::fill(std::begin(w.stage_group), std::end(w.stage_group), -1);
    for (int st = 0; st < kernels::kVectorStages - 1; ++st) issue(w, load_step(w, st), st);
    w.entry0 = load_step(w, kernels::kVectorStages - 1);
    w.entry1 = load_step(w, kernels::kVectorStages);
    w.acc.assign(std::size_t(8 * n), 0);
    return w;
  }
  void iterate(EmulatedWarp& w) {
    issue(w, w.entry0, (w.i + kernels::kVectorStages - 1) % kernels::kVectorStages);
    w.entry0 = w.entry1;
    w.entry1 = load_step(w, w.i + kernels::kVectorStages + 1);
    const int stage = w.i % kernels::kVectorStages;
    const std::int32_t expected = group_of(s.steps[std::size_t(w.step_begin + w.i)]);
    if (((w.stage_bits >> (8 + stage)) & 1u) == 0) {
      REQUIRE(w.stage_group[stage] == expected);  // the stage holds this step's copy
      const std::int32_t g = w.stage_group[stage];
      for (int k = 0; k < 16; ++k)
        for (int r = 0; r < 8; ++r)
          for (int j = 0; j < n; ++j)
            w.acc[std::size_t(r * n + j)] += group_values[std::size_t(g)][std::size_t(k * 8 + r)] *
                                            b[std::size_t(group_cols[std::size_t(g)][std::size_t(k)])][std::size_t(j)];
    } else {
      REQUIRE(expected == kernels::kVectorNoGroup);
    }
    if (((w.stage_bits >> stage) & 1u) != 0) {
      REQUIRE(is_last(s.steps[std::size_t(w.step_begin + w.i)]));
      const kernels::VectorPiece& record = w.stage_record[stage];
      REQUIRE(record.slot >= -1);  // a record was copied with this step
      const std::int32_t own_slot = record.slot;
      bool write = own_slot < 0;
      if (!write) {
        const kernels::VectorSlot slot = s.slots[std::size_t(own_slot)];
        partials[std::size_t(own_slot)] = w.acc;
        unsigned& counter = counters[std::size_t(slot.first_slot)];
        write = counter++ == unsigned(slot.parts - 1);
        if (write) {
          counter = 0;
          std::fill(w.acc.begin(), w.acc.end(), 0);
          for (std::int32_t part = 0; part < slot.parts; ++part)
            for (std::size_t e = 0; e < w.acc.size(); ++e) w.acc[e] += partials[std::size_t(slot.first_slot + part)][e];
        }
      }
      if (write) {
        for (int r = 0; r < 8; ++r) {
          if (record.out_row[r] < 0) continue;
          INFO("window " << record.window << ", row " << r << " to C row " << record.out_row[r]);
          CHECK(c.count(record.out_row[r]) == 0);
          c[record.out_row[r]] = std::vector<long>(w.acc.begin() + r * n, w.acc.begin() + (r + 1) * n);
        }
      }
      std::fill(w.acc.begin(), w.acc.end(), 0);
    }
    ++w.i;
  }
};

}  // namespace

TEST_CASE("narrow-vector schedule: pieces, steps and the warps' runs", "[vectors][schedule]") {
  std::mt19937_64 rng(20261127);
  CHECK(detail::vector_piece_steps(100, 4224) == detail::kVectorMinPieceSteps);
  CHECK(detail::vector_piece_steps(200000, 1000) == 200);
  CHECK(detail::vector_piece_steps(200001, 1000) == 201);
  // Per window: the base bound, or sqrt(0.18 G) for a window of G steps where that is more.
  CHECK(detail::vector_window_piece_steps(0, 2) == 2);
  CHECK(detail::vector_window_piece_steps(36, 2) == 3);      // sqrt(6.48) = 2.55
  CHECK(detail::vector_window_piece_steps(2900, 2) == 23);   // sqrt(522) = 22.8
  CHECK(detail::vector_window_piece_steps(2900, 40) == 40);  // a warp's share is more
  CHECK(detail::vector_window_piece_steps(12500, 1) == 48);  // sqrt(2250) = 47.4
  // A split that would save at most kVectorSplitMinSavedSteps (1) step is not made: the window is one piece.
  CHECK(detail::vector_window_piece_steps(3, 2) == 3);
  CHECK(detail::vector_window_piece_steps(4, 2) == 2);
  CHECK(detail::vector_window_piece_steps(41, 40) == 41);
  CHECK(detail::vector_window_piece_steps(42, 40) == 40);
  CHECK_THROWS_AS(detail::make_vector_schedule({}, {}, true, 0, 4), InvalidArgument);
  CHECK_THROWS_AS(detail::make_vector_schedule({}, {}, true, 4, 0), InvalidArgument);
  const std::vector<std::int32_t> short_map(12, 0);
  CHECK_THROWS_AS(detail::make_vector_schedule({{1, 0, 1}}, {&short_map, nullptr, 16}, true, 4, 4), InvalidArgument);
  const VectorSchedule none = detail::make_vector_schedule({}, {}, true, 4, 4);
  CHECK(none.warps() == 0);
  CHECK(none.steps.empty());
  for (const int count : {1, 5, 300})
    for (const std::int64_t warps : {1, 3, 64, 1000})
      for (const std::int32_t bound : {1, 4, 32})
        for (const bool with_empty : {true, false})
          for (const detail::VectorSplit split : {detail::VectorSplit::fixed, detail::VectorSplit::by_window}) {
            INFO(count << " windows, " << warps << " warps, bound " << bound << (with_empty ? ", with empty" : "")
                       << (split == detail::VectorSplit::by_window ? ", bound by window" : ""));
            const std::vector<VectorWindowWork> windows = random_windows(rng, count, {150, 33, 64, 7});
            const Targets targets = make_targets(rng, count, warps % 2 == 1);
            const VectorSchedule s =
                detail::make_vector_schedule(windows, targets.view(), with_empty, bound, warps, split);
            check_schedule(s, windows, targets, with_empty, bound, warps, split);
            // Both schedules of a plan split the same windows into the same slots.
            const VectorSchedule other =
                detail::make_vector_schedule(windows, targets.view(), !with_empty, bound, warps, split);
            CHECK(other.slots.size() == s.slots.size());
          }
}

TEST_CASE("narrow-vector schedule: the kernel's walk gives every window's product once", "[vectors][schedule]") {
  const std::uint64_t seed = 20261128;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> small(-3, 3);
  const int n = 3, b_rows = 50;
  for (const int count : {1, 7, 200})
    for (const std::int64_t warps : {1, 2, 5, 64})
      for (const std::int32_t bound : {1, 3, 32})
        for (const bool with_empty : {true, false}) {
          INFO(count << " windows, " << warps << " warps, bound " << bound << (with_empty ? ", with empty" : ""));
          const std::vector<VectorWindowWork> windows = random_windows(rng, count, {90, 40, 5});
          std::int32_t groups = 0;
          for (const VectorWindowWork& w : windows) groups += w.groups;
          std::vector<std::vector<long>> values(static_cast<std::size_t>(groups), std::vector<long>(128));
          std::vector<std::vector<std::int32_t>> cols(static_cast<std::size_t>(groups), std::vector<std::int32_t>(16));
          std::vector<std::vector<long>> b(static_cast<std::size_t>(b_rows),
                                           std::vector<long>(static_cast<std::size_t>(n)));
          for (auto& g : values)
            for (long& x : g) x = small(rng);
          for (auto& g : cols)
            for (std::int32_t& x : g) x = std::int32_t(rng() % b_rows);
          for (auto& row : b)
            for (long& x : row) x = small(rng);
          const Targets targets = make_targets(rng, count, bound != 3);
          const detail::VectorSplit split = warps % 2 == 0 ? detail::VectorSplit::by_window : detail::VectorSplit::fixed;
          const VectorSchedule s =
              detail::make_vector_schedule(windows, targets.view(), with_empty, bound, warps, split);
          Emulation e{s, values, cols, b, n, {}, std::vector<std::vector<long>>(s.slots.size()),
                      std::vector<unsigned>(s.slots.size(), 0u)};
          // The warps interleaved one iteration at a time in random order: the parts of a split window finish in
          // any order.
          std::vector<EmulatedWarp> state;
          std::vector<std::int32_t> live;
          for (std::int32_t w = 0; w < s.warps(); ++w) {
            state.push_back(e.start(w));
            if (state.back().step_count > 0) live.push_back(w);
          }
          while (!live.empty()) {
            const std::size_t at = rng() % live.size();
            EmulatedWarp& w = state[std::size_t(live[at])];
            e.iterate(w);
            if (w.i == w.step_count) live.erase(live.begin() + std::ptrdiff_t(at));
          }
          for (const unsigned counter : e.counters) CHECK(counter == 0u);  // reset for the next run
          std::int64_t written = 0;
          for (const VectorWindowWork& w : windows) {
            for (int r = 0; r < 8; ++r) {
              const std::int32_t row = targets.out_row(w.window, r);
              if (row < 0) continue;
              if (w.groups == 0 && !with_empty) {
                CHECK(e.c.count(row) == 0);
                continue;
              }
              ++written;
              INFO("window " << w.window << " (" << w.groups << " groups), row " << r << ": C row " << row);
              REQUIRE(e.c.count(row) == 1);
              std::vector<long> expected(static_cast<std::size_t>(n), 0);
              for (std::int32_t g = w.first_group; g < w.first_group + w.groups; ++g)
                for (int k = 0; k < 16; ++k)
                  for (int j = 0; j < n; ++j)
                    expected[std::size_t(j)] +=
                        values[std::size_t(g)][std::size_t(k * 8 + r)] *
                        b[std::size_t(cols[std::size_t(g)][std::size_t(k)])][std::size_t(j)];
              CHECK(e.c[row] == expected);
            }
          }
          CHECK(std::int64_t(e.c.size()) == written);
        }
}
