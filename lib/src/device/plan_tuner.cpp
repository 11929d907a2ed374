// Measured plans on the GPU (device/plan_tuner.hpp): drafts, scratch operands, round-robin timing with CUDA events
// on a private stream, and the report of what was predicted and measured.
#include "device/plan_tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "device/cuda_check.hpp"
#include "device/cuda_owners.hpp"
#include "device/device_buffer.hpp"
#include "device/device_matrix_impl.hpp"
#include "device/device_memory.hpp"
#include "device/plan_access.hpp"
#include "device/plan_draft.hpp"
#include "device/plan_storage.hpp"
#include "device/spmm_plan_impl.hpp"
#include "device/tuner_support.hpp"
#include "kernels/cache_eviction.hpp"
#include "kernels/spmm_params.hpp"
#include "kernels/stream_hold.hpp"
#include "kernels/vector_params.hpp"

namespace bcsr24::detail {

std::string tuning_device_name(const DeviceMatrix& matrix) { return matrix.impl().device_name; }

namespace {

using Clock = std::chrono::steady_clock;

/// The operands the candidates are timed with and their sizes. B is laid out as a caller would give it: ldb = n where
/// the plan accepts any B (staging included in the times), else the aligned ldb the plan requires. Candidates are
/// built without the staging workspace where B is aligned (it would never be used) so that they take less memory
/// while timed.
struct ScratchOperands {
  bool f32_b = false;
  std::int64_t ldb = 0;
  bool staged = false;
  std::int64_t b_bytes = 0, c_bytes = 0, scratch_bytes = 0;
};

/// Where the candidates' one allocation puts scratch B, the word the stream holds wait on, and C.
struct ArenaLayout {
  unsigned char* b = nullptr;
  unsigned char* c = nullptr;
  std::uint32_t* hold_word = nullptr;
};

/// How the candidates are timed: whether an L2 eviction read precedes every product (and its bytes and assumed
/// time), and how many products one timed run has.
struct TimingSetup {
  bool evict = false;
  std::int64_t eviction_bytes = 0;
  double eviction_us = 0.0;
  int products = 1;
};

/// One measured plan in the making (tune_plan): the model's draft, the clock and budget, the candidates drafted and
/// listed, and the steps from the stored choice to the plan measured fastest.
class PlanTuner {
 public:
  PlanTuner(const DeviceMatrix& matrix, std::int32_t n, const PlanOptions& options, TunedChoices* store,
            double conversion_ms)
      : matrix_(matrix),
        m_(matrix.impl()),
        n_(n),
        options_(options),
        store_(store),
        model_options_(model_options_of(options)),
        // The model's own plan: its draft also checks n and the types, so a bad request fails before anything is
        // timed.
        model_(draft_plan(matrix, n, KernelKind::automatic, model_options_, {}, &cache_)),
        // Tuning time is what measuring adds to the plan: it starts after the model's own draft, which a plan made
        // with Tuning::model pays as well, and the budget bounds all of it, the drafting of the other candidates
        // included.
        start_(Clock::now()),
        budget_(tuning_budget(options.tuning_budget_ms, conversion_ms, model_.report.predicted_us)),
        key_{n, model_.options.input, options.output, tuning_device_name(matrix)},
        deep_exists_(model_.deep_pipeline_exists),
        bands_(model_.to_csr.size()) {}

  SpmmPlan tune() {
    if (std::optional<SpmmPlan> plan = stored_plan()) return std::move(*plan);
    if (m_.rows == 0 || m_.cols == 0) return model_plan({}, "an empty matrix has nothing to measure");
    budget_applies_ = true;
    draft_candidates();
    list_candidates();
    if (selected_.size() < 2)
      return model_plan(listed_, drafting_cut_ ? "drafting the candidates used up half of the tuning budget of " +
                                                     format_us(budget_.ms * 1e3)
                                               : std::string("no other candidate within reach of its prediction"));
    return measure();
  }

 private:
  static PlanOptions model_options_of(const PlanOptions& options) {
    PlanOptions model = options;
    model.tuning = Tuning::model;
    return model;
  }

  double elapsed_ms() const { return std::chrono::duration<double, std::milli>(Clock::now() - start_).count(); }
  /// What measuring added: PlanReport::tuning_ms. The build of the model's own plan, the first one timed, is not
  /// part of it: a plan made by the model alone pays it too (on power_law:1000000 at n = 32 it was a third of the
  /// budget, and charged, it left no room for a second candidate).
  double added_ms() const { return elapsed_ms() - model_build_ms_; }
  /// What the budget is charged: what measuring adds, less the loading of kernels new to the process, a cost paid
  /// once per process and kernel (the plan kept would pay it at its first run) that a first plan would otherwise
  /// spend its whole budget on.
  double charged_ms() const { return added_ms() - times_.loading_ms; }

  /// Marks a plan as chosen by measurement (or by the model, where nothing could be measured). tuning_ms is taken
  /// when the choice is made: building the plan that is returned is a cost every plan pays, tuned or not, so it is
  /// not counted (where candidates were timed, their builds are).
  SpmmPlan finish(SpmmPlan plan, Tuning tuning, std::vector<PlanCandidate> candidates, std::string reason,
                  double tuning_ms) {
    PlanReport& r = PlanAccess::report(plan);
    PlanDiagnostics& d = r.diagnostics;
    d.tuning_drafting_ms = times_.drafting_ms;
    d.tuning_building_ms = times_.building_ms;
    d.tuning_loading_ms = times_.loading_ms;
    d.tuning_setup_ms = times_.setup_ms;
    d.tuning_warmup_ms = times_.warmup_ms;
    d.tuning_timing_ms = times_.timing_ms;
    r.tuning = tuning;
    d.candidates = std::move(candidates);
    r.tuning_reason = std::move(reason);
    r.tuning_ms = tuning_ms;
    r.tuning_budget_ms = budget_applies_ ? budget_.ms : 0.0;
    r.tuning_budget_source = budget_applies_ ? budget_.source : std::string();
    d.tuning_batch = batch_;
    return plan;
  }

  SpmmPlan model_plan(std::vector<PlanCandidate> candidates, const std::string& why) {
    const double decided_ms = elapsed_ms();
    return finish(PlanAccess::build(matrix_, model_), Tuning::model, std::move(candidates),
                  why + ": the model's choice", decided_ms);
  }

  /// A choice stored for this key, rebuilt as it was measured. One that cannot be built here any more (a forced
  /// choice the matrix's device copy no longer allows) is forgotten, and nothing is returned: it is measured again.
  std::optional<SpmmPlan> stored_plan() {
    if (store_ == nullptr) return std::nullopt;
    const std::optional<StoredChoice> stored = store_->find(key_);
    if (!stored) return std::nullopt;
    try {
      const PlanDraft draft =
          draft_plan(matrix_, n_, KernelKind::automatic, model_options_, stored->choice.knobs(), &cache_);
      const double decided_ms = elapsed_ms();
      SpmmPlan plan = PlanAccess::build(matrix_, draft);
      PlanCandidate c;
      c.description = describe_choice(stored->choice,
                                      std::size_t(std::count(draft.to_csr.begin(), draft.to_csr.end(), 1)), bands_,
                                      draft.splits_bands, deep_exists_);
      c.predicted_us = draft.report.predicted_us;
      c.measured_us = stored->measured_us;
      c.chosen = true;
      c.note = "stored with the matrix";
      return finish(std::move(plan), Tuning::measure, {c},
                    "the choice stored for n = " + std::to_string(n_) + " on " + key_.device + " (" +
                        (stored->measured_us >= 0 ? format_us(stored->measured_us) : std::string("not timed")) +
                        " when measured): nothing measured again",
                    decided_ms);
    } catch (const InvalidArgument&) {
      store_->forget(key_);
      return std::nullopt;
    }
  }

  /// Every distinct combination of forced choices, the model's own plan first.
  void draft_candidates() {
    drafts_.push_back(identify(model_, true));
    CandidateSpace space;
    space.csr_only = model_.report.diagnostics.csr_only_us >= 0.0;
    space.deep_pipeline = deep_exists_;
    space.band_groups = n_ >= kTuneGroupMinColumns;  // where the device, mode or layout refuse them, drafting fails
    space.vectors = kernels::vectors_supported(model_.mode) && m_.vectors.bands > 0;
    // The candidate copy only (never the copy of every band, which another thread may be adding).
    space.vectors_only = kernels::vectors_supported(model_.mode) && m_.vectors.bands == m_.tile_rows;
    for (const TunedChoice& choice : candidate_choices(space)) {
      // Drafting a candidate costs host time (the band split, band-group schedules); at most half the budget goes
      // to it, the rest is left for measuring.
      if (elapsed_ms() > 0.5 * budget_.ms) {
        drafting_cut_ = true;
        break;
      }
      PlanDraft draft;
      try {
        draft = draft_plan(matrix_, n_, KernelKind::automatic, model_options_, choice.knobs(), &cache_);
      } catch (const InvalidArgument&) {
        continue;  // a choice this matrix, device or mode cannot run (band groups on a gathered layout, ...)
      }
      const bool known = std::any_of(drafts_.begin(), drafts_.end(),
                                     [&](const Drafted& d) { return same_plan(d.draft, draft); });
      if (!known) drafts_.push_back(identify(std::move(draft), choice.split_long_bands));
    }
    times_.drafting_ms = elapsed_ms();
  }

  /// The candidates to measure (selected_), and the report's list: the measured candidates in measuring order (the
  /// model's first), then the others with why they were not measured.
  void list_candidates() {
    std::vector<CandidateRank> ranks;
    for (const Drafted& d : drafts_) ranks.push_back({d.choice.paths, d.draft.report.predicted_us});
    selected_ = select_candidates(ranks);
    std::vector<std::size_t> order = selected_;
    for (std::size_t i = 0; i < drafts_.size(); ++i)
      if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
    double best_predicted = ranks[0].predicted_us;
    for (const CandidateRank& r : ranks) best_predicted = std::min(best_predicted, r.predicted_us);
    for (std::size_t k = 0; k < order.size(); ++k) {
      const Drafted& d = drafts_[order[k]];
      PlanCandidate c;
      c.description = describe_choice(d.choice, d.bands_on_csr, bands_, d.draft.splits_bands, deep_exists_);
      if (order[k] == 0) c.description += " (the model's choice)";
      c.predicted_us = d.draft.report.predicted_us;
      if (k >= selected_.size()) {
        char line[120];
        if (c.predicted_us > max_predicted_ratio(d.choice.paths) * best_predicted)
          std::snprintf(line, sizeof line, "not measured: predicted %.1fx the best prediction",
                        best_predicted > 0 ? c.predicted_us / best_predicted : 0.0);
        else
          std::snprintf(line, sizeof line, "not measured: %zu candidates at most", kMaxCandidates);
        c.note = line;
      }
      listed_.push_back(std::move(c));
    }
  }

  ScratchOperands scratch_operands() const {
    ScratchOperands s;
    s.f32_b = model_.options.input == ElementType::f32;
    const int per_chunk = s.f32_b ? 4 : 8;
    s.ldb = options_.allow_unaligned_b ? n_ : (std::int64_t(n_) + per_chunk - 1) / per_chunk * per_chunk;
    s.staged = s.ldb % per_chunk != 0;
    const std::int64_t b_element = s.f32_b ? 4 : 2, c_element = options_.output == ElementType::f16 ? 2 : 4;
    s.b_bytes = std::max<std::int64_t>(16, std::int64_t(m_.cols) * s.ldb * b_element);
    s.c_bytes = std::max<std::int64_t>(16, std::int64_t(m_.rows) * n_ * c_element);
    const std::int64_t staging_bytes =
        s.staged ? std::int64_t(m_.cols) * ((std::int64_t(n_) + per_chunk - 1) / per_chunk * per_chunk) * b_element
                 : 0;
    s.scratch_bytes = s.b_bytes + s.c_bytes + std::int64_t(selected_.size()) * staging_bytes;
    return s;
  }

  /// Where A, B and C could stay in L2 from one run to the next, every timed product follows a read that evicts
  /// them, as bench_spmm times every product: warm, a 6 us product ranked the candidates differently from the same
  /// products timed cold (Pd and watt_2 at n = 8: CSR 5.0 against tiles 5.1 us in the tuner, 6.6 against 6.0 us
  /// in bench_spmm, run 58). Above 4 times L2 a read cannot keep much of them there, and is not worth its time.
  /// Products of a few microseconds are timed in batches of back-to-back products (products_per_batch).
  TimingSetup timing_setup(const ScratchOperands& s) const {
    std::int64_t a_bytes = 0;
    double fastest_predicted_us = drafts_[selected_[0]].draft.report.predicted_us;
    for (const std::size_t i : selected_) {
      a_bytes = std::max(a_bytes, a_bytes_of(drafts_[i].draft.report));
      fastest_predicted_us = std::min(fastest_predicted_us, drafts_[i].draft.report.predicted_us);
    }
    TimingSetup t;
    t.eviction_bytes = (2 * m_.l2_bytes + 15) / 16 * 16;
    t.evict = m_.l2_bytes > 0 && a_bytes + s.b_bytes + s.c_bytes < 4 * m_.l2_bytes;
    t.eviction_us = t.evict ? double(t.eviction_bytes) / kAssumedEvictionBytesPerUs + 3.0 : 0.0;
    t.products = products_per_batch(fastest_predicted_us);
    return t;
  }

  /// What a draft's build parts scale with (BuildEstimate): the tiles of its bands on tiles, its bands on CSR and on
  /// vectors (a band is on one of the three).
  PlanParts parts_of(const Drafted& d) const {
    PlanParts parts;
    parts.csr_bands = std::int64_t(d.bands_on_csr);
    parts.vector_bands = std::count(d.draft.to_vectors.begin(), d.draft.to_vectors.end(), 1);
    for (std::size_t b = 0; b < d.draft.to_csr.size() && b < m_.band_stats.size(); ++b) {
      const bool on_vectors = b < d.draft.to_vectors.size() && d.draft.to_vectors[b] != 0;
      if (d.draft.to_csr[b] == 0 && !on_vectors) parts.tiles += m_.band_stats[b].tiles();
    }
    return parts;
  }

  /// Builds the candidates in measuring order (the model's first) while the budget holds the next build (estimated
  /// part by part from the builds before it: BuildEstimate) and a warm-up plus one timed round of every candidate
  /// built so far: on a large matrix the builds, not the runs, are what a small budget cannot afford. Their lists get
  /// no device memory of their own: place_candidates puts all of them in one allocation.
  void build_candidates(const ScratchOperands& s, const TimingSetup& t, std::vector<SpmmPlan>& plans,
                        std::vector<PlanCandidate>& measured) {
    plans.reserve(selected_.size());
    BuildEstimate estimate;
    double round_us = 0.0;
    for (const std::size_t i : selected_) {
      // The warm-up (one product each, an eviction before it) and a timed round (a batch each, and the evictions
      // alone) of the candidates built so far and this one.
      const double next_round_us =
          round_us + (drafts_[i].draft.report.predicted_us + t.eviction_us) * (1 + t.products);
      const PlanParts parts = parts_of(drafts_[i]);
      if (!plans.empty() &&
          charged_ms() + estimate.estimate_ms(parts) + (next_round_us + t.eviction_us * t.products) / 1e3 > budget_.ms)
        break;
      PlanDraft draft = drafts_[i].draft;
      draft.options.allow_unaligned_b = options_.allow_unaligned_b && s.staged;
      const double before_ms = elapsed_ms();
      double loading_ms = 0.0;
      plans.push_back(PlanAccess::build(matrix_, draft, &loading_ms, true));
      times_.loading_ms += loading_ms;
      const double last_build_ms = elapsed_ms() - before_ms - loading_ms;
      const auto& part_ms = PlanAccess::impl(plans.back()).build_times;
      estimate.record(parts, {part_ms.tile_ms, part_ms.csr_ms, part_ms.vector_ms,
                              last_build_ms - part_ms.tile_ms - part_ms.csr_ms - part_ms.vector_ms});
      measured[plans.size() - 1].build_ms = last_build_ms;
      if (plans.size() == 1)
        model_build_ms_ = last_build_ms;
      else
        times_.building_ms += last_build_ms;
      round_us = next_round_us;
    }
    for (std::size_t k = plans.size(); k < selected_.size(); ++k)
      measured[k].note = "not measured: not built within the budget";
  }

  /// The one allocation: B (and after it the word the stream holds wait on), C, then the candidates' lists, their
  /// initialised parts side by side so that one copy fills them all, then their workspaces. Starts the tuner's
  /// stream and queues the copies of the lists and of scratch B on it; `lists_image` and `b_block` are what those
  /// copies read, which the caller keeps until the stream has run them.
  ArenaLayout place_candidates(const ScratchOperands& s, std::vector<SpmmPlan>& plans,
                               DeviceBuffer<unsigned char>& arena, std::vector<unsigned char>& lists_image,
                               std::vector<unsigned char>& b_block, std::optional<TuningStream>& stream) {
    const std::int64_t hold_word_at = (s.b_bytes + 15) / 16 * 16;
    const std::int64_t c_at = list_aligned(hold_word_at + 16);
    const std::int64_t images_at = list_aligned(c_at + s.c_bytes);
    std::int64_t image_total = 0, workspace_total = 0;
    for (SpmmPlan& plan : plans) {
      image_total += static_cast<std::int64_t>(PlanAccess::storage(plan).image_bytes());
      workspace_total += static_cast<std::int64_t>(PlanAccess::storage(plan).workspace_bytes());
    }
    arena = DeviceBuffer<unsigned char>(static_cast<std::size_t>(images_at + image_total + workspace_total));
    lists_image.reserve(static_cast<std::size_t>(image_total));
    std::int64_t workspace_at = images_at + image_total;
    for (SpmmPlan& plan : plans) {
      PlanStorage& storage = PlanAccess::storage(plan);
      unsigned char* image_at = arena.get() + images_at + std::int64_t(lists_image.size());
      lists_image.insert(lists_image.end(), storage.image().begin(), storage.image().end());
      storage.place(image_at, arena.get() + workspace_at);
      workspace_at += static_cast<std::int64_t>(storage.workspace_bytes());
    }
    // The draft of a candidate may have added lists to the matrix's device copy, uploaded on the legacy default
    // stream, which the tuner's non-blocking stream does not wait for: wait for them once.
    wait_for_device_writes();
    stream.emplace();
    if (!lists_image.empty())
      BCSR24_CUDA_CHECK(cudaMemcpyAsync(arena.get() + images_at, lists_image.data(), lists_image.size(),
                                        cudaMemcpyHostToDevice, stream->get()));
    fill_scratch_b(arena.get(), static_cast<std::size_t>(std::int64_t(m_.cols) * s.ldb), s.f32_b,
                   model_.options.input == ElementType::bf16, b_block, stream->get());
    return {arena.get(), arena.get() + c_at, reinterpret_cast<std::uint32_t*>(arena.get() + hold_word_at)};
  }

  /// What timing the candidates found: the fastest, why, and whether anything was timed at all.
  struct Timed {
    std::size_t chosen = 0;
    std::string reason;
    bool timed = false;
  };

  /// The warm-up and the timed rounds (TuningRounds) of the candidates built, on `stream`; each candidate's median,
  /// runs and note go to `measured`.
  Timed time_candidates(const ScratchOperands& s, TimingSetup t, std::vector<SpmmPlan>& plans, const ArenaLayout& at,
                        const TuningStream& stream, std::vector<PlanCandidate>& measured) {
    const double setup_start_ms = elapsed_ms();
    // Sized from the plans as built (a split matrix's tiles read their low parts too).
    std::int64_t a_bytes = 0;
    for (const SpmmPlan& plan : plans) a_bytes = std::max(a_bytes, a_bytes_of(plan.report()));
    t.evict = m_.l2_bytes > 0 && a_bytes + s.b_bytes + s.c_bytes < 4 * m_.l2_bytes;
    DeviceBuffer<unsigned char> eviction;
    if (t.evict) {
      try {
        check_device_memory(t.eviction_bytes, "the tuner's L2 eviction buffer");
        eviction = DeviceBuffer<unsigned char>(static_cast<std::size_t>(t.eviction_bytes));
        BCSR24_CUDA_CHECK(cudaMemsetAsync(eviction.get(), 0, eviction.bytes(), stream.get()));
      } catch (const OutOfMemory&) {
        t.evict = false;  // timed warm instead: the choice is still a measured one
      }
    }
    std::vector<EventPair> events(selected_.size());
    const EventPair eviction_events;
    std::vector<double> predicted;
    for (const std::size_t i : selected_) predicted.push_back(drafts_[i].draft.report.predicted_us);
    TuningRounds rounds(predicted, budget_.ms, t.products, t.evict ? t.eviction_us : 0.0);
    // Each timed round is queued behind a hold and released at once: its runs then follow each other on the GPU
    // without waiting for the host's launches, which take longer than a product of a few microseconds (timed one by
    // one as launched, such products measure the host).
    StreamHolds holds(stream.get(), at.hold_word);
    times_.setup_ms += elapsed_ms() - setup_start_ms;
    auto run = [&](std::size_t k) {
      if (s.f32_b)
        plans[k].run(reinterpret_cast<const float*>(at.b), s.ldb, reinterpret_cast<float*>(at.c), n_, 1.0f, 0.0f,
                     stream.get());
      else
        plans[k].run(reinterpret_cast<const fp16_t*>(at.b), s.ldb, at.c, n_, 1.0f, 0.0f, stream.get());
    };
    auto evict_l2 = [&] {
      if (t.evict) kernels::enqueue_l2_eviction(eviction.get(), eviction.bytes(), stream.get());
    };
    for (bool warmup = true;; warmup = false) {
      const double round_start_ms = elapsed_ms();
      const std::vector<std::size_t> round = rounds.next_round(charged_ms());
      if (round.empty()) break;
      // The warm-up runs one product of each; a timed round a batch of each, and where products follow evictions,
      // a batch of evictions alone first, whose time each candidate's batch has in it too.
      const int count = warmup ? 1 : t.products;
      // Not the warm-up: its launches are the plans' first, and anything loaded at a first launch (the builds have
      // loaded the kernels, not necessarily all the runtime touches) waits for the device's running work to end,
      // the hold included (it would wait out its time limit).
      if (!warmup) holds.hold();
      const bool time_evictions = !warmup && t.evict;
      if (time_evictions) {
        BCSR24_CUDA_CHECK(cudaEventRecord(eviction_events.start.get(), stream.get()));
        for (int p = 0; p < count; ++p) evict_l2();
        BCSR24_CUDA_CHECK(cudaEventRecord(eviction_events.stop.get(), stream.get()));
      }
      for (const std::size_t k : round) {
        BCSR24_CUDA_CHECK(cudaEventRecord(events[k].start.get(), stream.get()));
        for (int p = 0; p < count; ++p) {
          // In the warm-up too: its first launch loads the eviction kernel, which must not happen behind a hold.
          evict_l2();
          run(k);
        }
        BCSR24_CUDA_CHECK(cudaEventRecord(events[k].stop.get(), stream.get()));
      }
      if (!warmup) holds.release();
      BCSR24_CUDA_CHECK(cudaEventSynchronize(events[round.back()].stop.get()));
      float eviction_ms = 0.0f;
      if (time_evictions)
        BCSR24_CUDA_CHECK(cudaEventElapsedTime(&eviction_ms, eviction_events.start.get(), eviction_events.stop.get()));
      std::vector<double> ms;
      for (const std::size_t k : round) {
        float elapsed = 0.0f;
        BCSR24_CUDA_CHECK(cudaEventElapsedTime(&elapsed, events[k].start.get(), events[k].stop.get()));
        ms.push_back(product_ms(double(elapsed), double(eviction_ms), count));
      }
      rounds.record(ms);
      const double round_ms = elapsed_ms() - round_start_ms;
      if (warmup) {
        // The first launches' one-time costs (what CUDA loads or sets up at a kernel's first launch in a process
        // beyond what prepare_kernels loaded: 10-20 ms on a process's first plans, run 52) are loading, not
        // charged. Charged: the round as it would take without them, twice the predicted runs plus 50 us a
        // candidate. (The events cannot tell: a launch that loads holds the host between them.)
        double expected_ms = 0.0;
        for (const std::size_t k : round) expected_ms += 2.0 * predicted[k] / 1e3 + (t.evict ? 0.1 : 0.05);
        times_.warmup_ms = std::min(round_ms, expected_ms);
        times_.loading_ms += round_ms - times_.warmup_ms;
      } else {
        times_.timing_ms += round_ms;
      }
    }
    Timed result;
    result.chosen = rounds.chosen();
    result.reason = rounds.reason();
    for (std::size_t k = 0; k < selected_.size(); ++k) {
      measured[k].measured_us = rounds.median_us(k);
      measured[k].runs = static_cast<int>(rounds.samples(k).size());
      measured[k].note = rounds.note(k);
      result.timed = result.timed || !rounds.samples(k).empty();
    }
    return result;
  }

  /// Builds and times the selected candidates in scratch operands of their own and returns the fastest, or the
  /// model's plan where they cannot be built or do not fit.
  SpmmPlan measure() {
    const ScratchOperands s = scratch_operands();
    const TimingSetup t = timing_setup(s);
    std::vector<PlanCandidate> measured = listed_;
    Timed timed;
    std::vector<SpmmPlan> plans;
    // What the tuner's stream reads and writes, declared before the stream so that they outlive its work (its
    // destructor waits for it): one allocation holds scratch B, the holds' word, C and every candidate's lists; the
    // host copies those come from stay until the copies have run.
    DeviceBuffer<unsigned char> arena;
    std::vector<unsigned char> lists_image, b_block;
    std::optional<TuningStream> stream;
    try {
      const double setup_start_ms = elapsed_ms();
      check_device_memory(s.scratch_bytes, "the tuner's scratch B and C");
      times_.setup_ms = elapsed_ms() - setup_start_ms;
      build_candidates(s, t, plans, measured);
      if (plans.size() < 2) {
        // The model's plan is returned: its build is paid by every plan, tuned or not; it gets its device memory
        // now.
        const double decided_ms = added_ms();
        char line[200];
        std::snprintf(line, sizeof line,
                      "building the candidates' plans leaves no room to compare them within the tuning budget of "
                      "%.1f ms: the model's choice",
                      budget_.ms);
        SpmmPlan plan = std::move(plans[0]);
        PlanAccess::own_memory(plan, options_.allow_unaligned_b, nullptr);
        return finish(std::move(plan), Tuning::model, std::move(measured), line, decided_ms);
      }
      selected_.resize(plans.size());
      const double place_start_ms = elapsed_ms();
      const ArenaLayout at = place_candidates(s, plans, arena, lists_image, b_block, stream);
      times_.setup_ms += elapsed_ms() - place_start_ms;
      timed = time_candidates(s, t, plans, at, *stream, measured);
      if (timed.timed) batch_ = t.products;
    } catch (const OutOfMemory& e) {
      plans.clear();
      char line[200];
      std::snprintf(line, sizeof line,
                    "the scratch operands and candidate plans (%.1f MiB) do not fit in device memory",
                    double(s.scratch_bytes) / double(1 << 20));
      return model_plan(listed_, line);
    }
    measured[timed.chosen].chosen = true;
    const Drafted& winner = drafts_[selected_[timed.chosen]];
    const double decided_ms = added_ms();
    // The plan measured is the plan returned: its lists move out of the tuner's allocation into one of its own
    // (after the runs queued on the stream, which own_memory waits for), with the staging workspace the caller's
    // options ask for where it was left out for the timing. Its failure is the plan's OutOfMemory.
    SpmmPlan plan = std::move(plans[timed.chosen]);
    plans.clear();
    PlanAccess::own_memory(plan, options_.allow_unaligned_b, stream->get());
    if (store_ != nullptr && timed.timed) store_->store({key_, winner.choice, measured[timed.chosen].measured_us});
    return finish(std::move(plan), timed.timed ? Tuning::measure : Tuning::model, std::move(measured),
                  timed.reason, decided_ms);
  }

  const DeviceMatrix& matrix_;
  const DeviceMatrix::Impl& m_;
  const std::int32_t n_;
  const PlanOptions& options_;
  TunedChoices* const store_;
  const PlanOptions model_options_;
  DraftCache cache_;
  const PlanDraft model_;
  const Clock::time_point start_;
  const TuningBudget budget_;
  const TunedKey key_;
  const bool deep_exists_;
  const std::size_t bands_;
  TuningTimes times_;
  double model_build_ms_ = 0.0;
  bool budget_applies_ = false;  // set once measuring can start (not for a stored choice or an empty matrix)
  int batch_ = 0;                // products per timed run, once something was timed
  std::vector<Drafted> drafts_;
  bool drafting_cut_ = false;
  std::vector<std::size_t> selected_;
  std::vector<PlanCandidate> listed_;
};

}  // namespace

SpmmPlan tune_plan(const DeviceMatrix& matrix, std::int32_t n, const PlanOptions& options, TunedChoices* store,
                   double conversion_ms) {
  return PlanTuner(matrix, n, options, store, conversion_ms).tune();
}

}  // namespace bcsr24::detail
