// The rules of measured plans (Tuning::measure), host logic only so that they are tested without a GPU: which
// candidate plans exist, which of them are measured, the time budget, the rounds of timed runs (when to stop,
// which candidates to drop, which to keep) and the choices an operator stores. device/plan_tuner.cpp applies them
// on the GPU; docs/KERNELS.md, "Measured plans", explains them.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bcsr24/spmm_plan.hpp"
#include "device/plan_choices.hpp"

namespace bcsr24::detail {

/// A candidate plan's identity: the knobs that rebuild exactly that plan through the cost model (Tuning::model)
/// on the same matrix, n, B and output types and device. This, not a timing, is what an operator stores.
struct TunedChoice {
  BandPaths paths = BandPaths::tiles;                   ///< tiles, csr, hybrid, vectors or hybrid_vectors (never automatic)
  bool split_long_bands = true;
  TilePipeline tile_pipeline = TilePipeline::standard;  ///< standard or deep (never automatic)
  bool band_groups = false;

  PlanKnobs knobs() const;
  bool operator==(const TunedChoice& o) const {
    return paths == o.paths && split_long_bands == o.split_long_bands && tile_pipeline == o.tile_pipeline &&
           band_groups == o.band_groups;
  }
};

/// What decides which combinations a plan has to choose from.
struct CandidateSpace {
  bool csr_only = false;       ///< every band has a CSR copy, so CSR only can run
  bool deep_pipeline = false;  ///< the plan's width and operand mode have a deep tile pipeline
  bool band_groups = false;    ///< band groups can run here (device, operand mode, layout) at this n
  bool vectors = false;        ///< narrow vectors can run (16-bit A and B) and some band has a vector copy
  bool vectors_only = false;   ///< ... and every band has one, so vectors only can run
};

/// Fewest columns at which band groups are a candidate: their kernel works on 64-column slices, and its model
/// (cost_model.hpp, band_groups_ns) was fitted from 64 columns on.
inline constexpr std::int32_t kTuneGroupMinColumns = 64;

/// Every combination of forced choices worth drafting, in a fixed order: per path (tiles, hybrid, CSR only), the
/// tile bands one per block (long bands split, then whole; standard pipeline, then deep where it exists) and then
/// in band groups where they can run; then, where narrow vectors can run, the hybrid with vectors for the
/// low-reuse bands (its tile bands one per block, long bands split, standard pipeline) and vectors only. Drafts that come out the same plan are merged by the tuner (the first kept).
std::vector<TunedChoice> candidate_choices(const CandidateSpace& space);

/// Most candidates measured, the model's own choice included.
inline constexpr std::size_t kMaxCandidates = 6;
/// Candidates predicted slower than this many times the best prediction are not measured. The model's largest
/// known miss was a factor of ~4 between two candidates (an arrowhead at n = 128: CSR predicted 0.44x the tile
/// plan's time, measured 1.86x; issue 33), so a factor of 4 keeps every candidate it could have ranked wrongly
/// by that much.
inline constexpr double kMaxPredictedRatio = 4.0;
/// The same for the narrow-vector paths (hybrid with vectors, vectors only), whose model is fitted to their own
/// measurements (cost_model.cpp: all but 3 of 355 timed plans within 0.67-1.5x of the prediction): a vector plan
/// predicted 1.5 times the best prediction is not measured. Vectors were never the fastest plan on a shared matrix
/// or generated class (H200, 2026-11-29), and each costs a build (on circuit:1600000, 16-31 ms against 6-8 ms for
/// CSR or tiles).
inline constexpr double kMaxVectorPredictedRatio = 1.5;
/// kMaxVectorPredictedRatio for the vector paths, kMaxPredictedRatio for the others.
double max_predicted_ratio(BandPaths paths);

/// A distinct drafted candidate as the selection sees it.
struct CandidateRank {
  BandPaths paths = BandPaths::tiles;
  double predicted_us = 0.0;
};

/// Which candidates are measured (indices into `drafts`, in measuring order): drafts[0], the model's own choice,
/// always; then the best-predicted candidate of each other path (tiles only, hybrid, CSR only, hybrid with vectors,
/// vectors only), then the rest by
/// prediction (ties in draft order), skipping any predicted slower than kMaxPredictedRatio x the best
/// prediction (kMaxVectorPredictedRatio for the vector paths), up to kMaxCandidates. Deterministic: it depends on the predictions only.
std::vector<std::size_t> select_candidates(const std::vector<CandidateRank>& drafts);

/// The default budget (PlanOptions::tuning_budget_ms = 0) is relative to what the operator already cost: a share of
/// its conversion time (LayoutReport::total_seconds), seconds on a matrix of a million rows, so that large matrices,
/// whose drafts and builds take milliseconds each, are measured (a fixed 40 products, the rule before, left a 1.6M-row
/// circuit at n = 32 with the model's hybrid at 1.43x the time of CSR only; issue 56). An operator without a
/// conversion (a .b24 file, a host matrix) has kBudgetProducts products of the model's plan instead. Either way at
/// least kBudgetFloorMs: drafting and building three candidates, the setup and a few rounds of batched runs on a
/// matrix of up to ~250,000 rows (a draft takes 0.1 to 1.5 ms and a build 0.2 to 2 ms on the H100 machine, runs 51
/// to 54; a round of batches with an L2 eviction before each product takes about 1 ms); and at most kBudgetCapMs.
/// The share is 8%, not the 10% that tuning may cost: the budget is charged what measuring adds less the loading of
/// kernels new to the process, and a round, once started, finishes; with a 10% budget the reported tuning time of
/// the 1.6M-row circuit-like matrix at n = 32 was 10.8% of its conversion (one H200, 2026-11-28).
inline constexpr double kBudgetConversionShare = 0.08;
inline constexpr double kBudgetProducts = 500.0;
inline constexpr double kBudgetFloorMs = 20.0;
inline constexpr double kBudgetCapMs = 1000.0;

/// A budget and where it came from (PlanReport::tuning_budget_ms, tuning_budget_source).
struct TuningBudget {
  double ms = 0.0;
  std::string source;  ///< e.g. "8% of the conversion's 2412.0 ms"
};
/// The budget of a measured plan: `requested_ms` where positive (PlanOptions::tuning_budget_ms), else the default
/// from `conversion_ms` (0 or less: unknown) and the model's predicted time of its own plan.
TuningBudget tuning_budget(double requested_ms, double conversion_ms, double model_predicted_us);

/// Products per timed run: a run is a batch of back-to-back products of one candidate between two events, so that
/// a product of a few microseconds is timed over at least kBatchProductsUs of GPU work (one event pair resolves
/// ~0.5 us, a tenth of a 5 us product) and the ranking of 5-10 us products does not rest on single events. At most
/// kMaxBatch: where A, B and C fit in L2, each product of the batch follows an eviction read of ~25-35 us, so a batch
/// of 8 products of 5 us already takes ~300 us.
inline constexpr double kBatchProductsUs = 40.0;
inline constexpr int kMaxBatch = 8;
/// The batch for candidates whose best prediction is `best_predicted_us`: ceil(kBatchProductsUs / it), 1 to kMaxBatch.
int products_per_batch(double best_predicted_us);
/// One product's time from a batch (milliseconds): the batch's time less that of the same number of eviction reads
/// alone (`eviction_batch_ms`, 0 without them), over the batch's products; never below a nanosecond, so that noise
/// in the subtraction cannot give a time of zero or less.
double product_ms(double batch_ms, double eviction_batch_ms, int batch);

/// What a plan's build parts scale with (BuildEstimate): the tiles of its bands on tiles (a band's tile work grows
/// with its tiles where it is split, and bands differ by thousands of tiles), and its bands on CSR and on vectors.
/// Per tile, not per band: on dense_rows:200000 at n = 32 the model's hybrid put one band of thousands of tiles on
/// tiles, and that band's build time, taken per band for the 12,500 bands of the tiles-only plan, left no room to
/// build it: the model's plan was kept untimed, 1.11x the tiles-only plan (H200, session 57).
struct PlanParts {
  std::int64_t tiles = 0, csr_bands = 0, vector_bands = 0;
};
/// Host time of one plan's build (less kernel loading), by part: the tile, CSR and vector parts' lists, and the rest
/// (storage, upload).
struct PartBuildTimes {
  double tile_ms = 0.0, csr_ms = 0.0, vector_ms = 0.0, other_ms = 0.0;
};
/// A candidate's build time estimated from the builds before it, part by part. Candidates differ in which part
/// holds the bands, and the parts cost differently per band: on circuit:1600000 at n = 8 the CSR plan took 5.7 ms,
/// the tiles 7.0 and the hybrid with vectors 16.4 (H200, 2026-11-29). The rule before, the last build alone,
/// underestimated the next, and the builds overran the budget that the timing needed. Per part: the largest time
/// per band recorded so far. A part with bands that no recorded build had costs the largest whole build recorded,
/// and a vector part no less than kVectorBuildToCsr times the CSR part's time per band where a CSR part was built
/// (on circuit:1600000 a vector band took 2.9-4.1x a CSR band to build at n = 8 and 16).
inline constexpr double kVectorBuildToCsr = 4.0;
class BuildEstimate {
 public:
  void record(const PlanParts& parts, const PartBuildTimes& times);
  /// 0 before any record.
  double estimate_ms(const PlanParts& parts) const;

 private:
  double tile_ms_per_tile_ = -1.0, csr_ms_per_band_ = -1.0, vector_ms_per_band_ = -1.0;  // -1: no build had any there
  double other_ms_ = 0.0, largest_ms_ = 0.0;
};

/// Timed runs per candidate at most (the median of up to 7), and at least before one is dropped as slower.
inline constexpr int kMaxTimedRounds = 7;
inline constexpr int kRoundsBeforePruning = 2;
/// A candidate whose fastest run is slower than this many times the best median is dropped: it cannot end within
/// 10% of the fastest.
inline constexpr double kPruneRatio = 1.3;
/// The model's own choice is kept unless another candidate's median is faster by more than this share: within
/// it, the two are the same speed to the precision of a handful of runs, and the model's choice is the stable one.
inline constexpr double kKeepModelMargin = 0.02;

/// The rounds of timed runs. Each round runs every candidate still measured once, in a fixed order, so that every
/// run follows a run of another candidate (no candidate is timed on caches only it warmed). A timed run is a batch
/// of products (products_per_batch); its time per product is what record() takes. Round 0 is a warm-up of one
/// product per candidate (first launches load the kernels); its times are not kept. The caller asks next_round()
/// which candidates to run, runs them and record()s their times, until next_round() returns none.
class TuningRounds {
 public:
  /// `predicted_us` per candidate (index 0: the model's own choice), `budget_ms` of wall clock from the start of
  /// tuning (plan construction included), `batch` products per timed run, and `overhead_us` of GPU time each
  /// product brings besides its own (an L2 eviction read before it: the round also times `batch` reads alone to
  /// subtract them), used only to estimate rounds before one has been timed.
  TuningRounds(std::vector<double> predicted_us, double budget_ms, int batch = 1, double overhead_us = 0.0);

  /// The candidates to run next, in order; empty when measuring is over. A round starts only where the elapsed time
  /// plus its estimate fits the budget: the larger of its products and overheads (medians so far, else the
  /// predictions) and the last timed round's duration on the caller's clock, scaled to the candidates left. Before
  /// the warm-up, candidates are dropped from the last until the warm-up and one timed round fit.
  std::vector<std::size_t> next_round(double elapsed_ms);
  /// The times of the round next_round() returned, in its order (milliseconds).
  void record(const std::vector<double>& ms);

  std::size_t candidates() const { return predicted_us_.size(); }
  int batch() const { return batch_; }
  /// Timed runs of candidate c (warm-up excluded), each the time per product of one batch.
  const std::vector<double>& samples(std::size_t c) const { return samples_[c]; }
  /// Median of candidate c's timed runs (per product) in microseconds, -1 without any.
  double median_us(std::size_t c) const;
  /// Why candidate c stopped being measured before the others ("" where it was not).
  const std::string& note(std::size_t c) const { return notes_[c]; }
  /// The candidate kept: the fastest median, or the model's (0) within kKeepModelMargin of it, or the model's when
  /// nothing was timed.
  std::size_t chosen() const;
  /// One line: which was kept and why.
  std::string reason() const;

 private:
  void drop(std::size_t c, const std::string& why);
  /// Milliseconds of GPU work a round of `list` takes: the warm-up (one product each) or a timed round (a batch
  /// each, and the eviction reads alone), overheads included.
  double estimate_ms(const std::vector<std::size_t>& list, bool timed) const;
  std::vector<double> predicted_us_;
  double budget_ms_;
  int batch_ = 1;
  double overhead_us_ = 0.0;
  int round_ = 0;  // rounds recorded, the warm-up included
  // The last timed round handed out: when (the caller's clock) and how many candidates it ran; its duration is
  // known at the next call of next_round().
  double last_start_ms_ = -1.0;
  std::size_t last_count_ = 0;
  std::vector<std::vector<double>> samples_;
  std::vector<std::string> notes_;
  std::vector<std::uint8_t> active_;
  std::vector<std::size_t> pending_;  // the round handed out and not yet recorded
  std::string stop_reason_;
};

/// What a stored choice is for: the operator's matrix (implied), n, B and output types (the matrix's precision is
/// the operator's), and the device by name.
struct TunedKey {
  std::int32_t n = 0;
  ElementType input = ElementType::f16;  ///< resolved (never automatic)
  ElementType output = ElementType::f32;
  std::string device;
  bool operator==(const TunedKey& o) const {
    return n == o.n && input == o.input && output == o.output && device == o.device;
  }
};

struct StoredChoice {
  TunedKey key;
  TunedChoice choice;
  double measured_us = -1.0;  ///< its median when it was chosen (for reports)
};

/// The tuned choices an operator keeps (and writes into its .b24 file). Safe for concurrent use.
class TunedChoices {
 public:
  TunedChoices() = default;
  TunedChoices(const TunedChoices& o) : entries_(o.all()) {}
  TunedChoices& operator=(const TunedChoices& o);

  std::optional<StoredChoice> find(const TunedKey& key) const;
  /// Adds the choice for `key`, replacing an earlier one.
  void store(const StoredChoice& entry);
  void forget(const TunedKey& key);
  std::vector<StoredChoice> all() const;
  void assign(std::vector<StoredChoice> entries);

 private:
  mutable std::mutex mutex_;
  std::vector<StoredChoice> entries_;
};

/// A candidate's description for reports, e.g. "hybrid (312 bands on CSR), long bands split, deep pipeline".
/// `bands_on_csr` of `bands`; `splits_bands`: the plan splits some long band; `deep_exists`: the pipeline depth is
/// a choice at this width and mode.
std::string describe_choice(const TunedChoice& choice, std::size_t bands_on_csr, std::size_t bands, bool splits_bands,
                            bool deep_exists);

}  // namespace bcsr24::detail
