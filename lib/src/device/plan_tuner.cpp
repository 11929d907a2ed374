// Measured plans on the GPU (device/plan_tuner.hpp): drafts, scratch operands, round-robin timing with CUDA events
// on a private stream, and the report of what was predicted and measured.
#include "device/plan_tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
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
#include "kernels/cache_eviction.hpp"
#include "kernels/spmm_params.hpp"
#include "kernels/stream_hold.hpp"
#include "kernels/vector_params.hpp"

namespace bcsr24::detail {

namespace {

using Clock = std::chrono::steady_clock;

/// A stream of the tuner's own, so that its runs neither wait for nor delay the caller's work in other streams;
/// its work is finished before it goes.
struct TuningStream {
  OwnedStream stream = make_stream();
  ~TuningStream() { cudaStreamSynchronize(stream.get()); }
  cudaStream_t get() const { return stream.get(); }
};

/// The holds (kernels/stream_hold.hpp) the tuner queues on its stream, and their release: a word of device memory
/// that a memset on a second stream sets while the hold spins on it. (Pinned host memory would do as well, but
/// pinning costs milliseconds.) Going, it releases any hold still waiting and lets it end.
class StreamHolds {
 public:
  /// `word`: 4 bytes of device memory, the holds' own.
  StreamHolds(cudaStream_t held, std::uint32_t* word) : held_(held), word_(word) {}
  ~StreamHolds() {
    if (pending_) cudaMemsetAsync(word_, 1, sizeof(std::uint32_t), releaser_.get());
    cudaStreamSynchronize(held_);
  }
  StreamHolds(const StreamHolds&) = delete;
  StreamHolds& operator=(const StreamHolds&) = delete;

  /// Queues a hold: the work queued after it waits for release().
  void hold() {
    BCSR24_CUDA_CHECK(cudaMemsetAsync(word_, 0, sizeof(std::uint32_t), held_));
    kernels::enqueue_stream_hold(word_, kHoldLimitNs, held_);
    pending_ = true;
  }
  void release() {
    BCSR24_CUDA_CHECK(cudaMemsetAsync(word_, 1, sizeof(std::uint32_t), releaser_.get()));
    pending_ = false;
  }

 private:
  /// Longest a hold waits for its release: the host queues a round of a few dozen launches in well under it.
  static constexpr std::uint64_t kHoldLimitNs = 5'000'000;
  cudaStream_t held_;
  std::uint32_t* word_;
  OwnedStream releaser_ = make_stream();
  bool pending_ = false;
};

/// Where tuning's time went (PlanDiagnostics::tuning_drafting_ms ...).
struct TuningTimes {
  double drafting_ms = 0.0, building_ms = 0.0, loading_ms = 0.0, setup_ms = 0.0, warmup_ms = 0.0, timing_ms = 0.0;
};

/// A start and a stop event around one timed run of one candidate.
struct EventPair {
  OwnedEvent start = make_event(), stop = make_event();
};

/// A draft that differs from every other one, with the identity it would be stored as.
struct Drafted {
  PlanDraft draft;
  TunedChoice choice;
  std::size_t bands_on_csr = 0;
};

/// Two drafts that build the same plan: same bands on CSR, same grouping and, for a one-band-per-block tile part,
/// the same pipeline and split.
bool same_plan(const PlanDraft& x, const PlanDraft& y) {
  if (x.to_csr != y.to_csr || x.to_vectors != y.to_vectors || (x.groups != nullptr) != (y.groups != nullptr))
    return false;
  if (!x.runs_tiles || x.groups != nullptr) return true;
  return x.tile_pipeline == y.tile_pipeline && x.splits_bands == y.splits_bands &&
         (!x.splits_bands || x.tiles_per_part == y.tiles_per_part);
}

/// The identity a draft is stored as: its forced knobs, with the paths named by what the draft runs (a hybrid
/// split that puts no band, or every band, on CSR is a pure plan; a plan with bands on vectors is named by its
/// forced path, and counts its bands on CSR or vectors).
Drafted identify(PlanDraft draft, bool split_long_bands) {
  Drafted d;
  d.bands_on_csr = static_cast<std::size_t>(std::count(draft.to_csr.begin(), draft.to_csr.end(), 1));
  const auto on_vectors = static_cast<std::size_t>(std::count(draft.to_vectors.begin(), draft.to_vectors.end(), 1));
  d.choice.paths = on_vectors > 0                         ? draft.paths
                   : d.bands_on_csr == 0                    ? BandPaths::tiles
                   : d.bands_on_csr == draft.to_csr.size() ? BandPaths::csr
                                                           : BandPaths::hybrid;
  d.bands_on_csr += on_vectors;
  d.choice.split_long_bands = split_long_bands;
  d.choice.tile_pipeline = draft.tile_pipeline;
  d.choice.band_groups = draft.groups != nullptr;
  d.draft = std::move(draft);
  return d;
}

/// Fills `count` elements at `b` with random values of the plan's B type: a block of 4096 random values is copied
/// up once, then doubled on the device (the kernels' speed does not depend on the values repeating). The copy is
/// queued on `stream` from `block`, which the caller keeps until the stream has run it.
void fill_scratch_b(void* b, std::size_t count, bool f32, bool bf16, std::vector<unsigned char>& block,
                    cudaStream_t stream) {
  constexpr std::size_t kBlock = std::size_t(1) << 12;  // 4 Ki values: a 64 Ki block took ~1 ms to generate
  const std::size_t element = f32 ? 4 : 2;
  const std::size_t first = std::min(count, kBlock);
  std::mt19937_64 rng(20261124);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  block.assign(first * element, 0);
  for (std::size_t i = 0; i < first; ++i) {
    const double v = dist(rng);
    if (f32) {
      const float x = float(v);
      std::memcpy(&block[i * 4], &x, 4);
    } else {
      const fp16_t x = bf16 ? double_to_bf16(v) : double_to_fp16(v);
      std::memcpy(&block[i * 2], &x, 2);
    }
  }
  auto* bytes = static_cast<unsigned char*>(b);
  if (!block.empty())
    BCSR24_CUDA_CHECK(cudaMemcpyAsync(bytes, block.data(), block.size(), cudaMemcpyHostToDevice, stream));
  for (std::size_t done = first; done < count;) {
    const std::size_t copy = std::min(done, count - done);
    BCSR24_CUDA_CHECK(cudaMemcpyAsync(bytes + done * element, bytes, copy * element, cudaMemcpyDeviceToDevice, stream));
    done += copy;
  }
}

/// Rounds up to the alignment of a plan's device lists.
std::int64_t list_aligned(std::int64_t bytes) {
  const auto a = static_cast<std::int64_t>(PlanStorage::kAlignment);
  return (bytes + a - 1) / a * a;
}

/// Bytes of A a plan reads per product (PlanDiagnostics' counts).
std::int64_t a_bytes_of(const PlanReport& r) {
  const PlanDiagnostics& d = r.diagnostics;
  return d.sparse24_bytes + d.dense_bytes + d.csr_bytes + d.vector_bytes;
}

/// Rate assumed for the L2 eviction read before one has been timed (the H100 read ~70 MiB in ~35 us, run 58): it
/// only sizes the first round's estimate, the rounds after it use their measured durations.
constexpr double kAssumedEvictionBytesPerUs = 2.0e6;

std::string format_us(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", us);
  return text;
}

}  // namespace

std::string tuning_device_name(const DeviceMatrix& matrix) { return matrix.impl().device_name; }

SpmmPlan tune_plan(const DeviceMatrix& matrix, std::int32_t n, const PlanOptions& options, TunedChoices* store,
                   double conversion_ms) {
  const DeviceMatrix::Impl& m = matrix.impl();
  PlanOptions model_options = options;
  model_options.tuning = Tuning::model;
  DraftCache cache;
  // The model's own plan: its draft also checks n and the types, so a bad request fails before anything is timed.
  PlanDraft model = draft_plan(matrix, n, KernelKind::automatic, model_options, {}, &cache);
  // Tuning time is what measuring adds to the plan: it starts after the model's own draft, which a plan made with
  // Tuning::model pays as well, and the budget bounds all of it, the drafting of the other candidates included.
  const Clock::time_point start = Clock::now();
  auto elapsed_ms = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); };
  TuningTimes times;
  // The build of the model's own plan, the first one timed: a plan made by the model alone pays it too, so it is
  // no part of what measuring adds (on power_law:1000000 at n = 32 it was a third of the budget, and charged, it left
  // no room for a second candidate).
  double model_build_ms = 0.0;
  auto added_ms = [&] { return elapsed_ms() - model_build_ms; };  // what measuring added: PlanReport::tuning_ms
  // What the budget is charged: what measuring adds, less the loading of kernels new to the process, a cost paid
  // once per process and kernel (the plan kept would pay it at its first run) that a first plan would otherwise
  // spend its whole budget on.
  auto charged_ms = [&] { return added_ms() - times.loading_ms; };
  const TuningBudget budget = tuning_budget(options.tuning_budget_ms, conversion_ms, model.report.predicted_us);
  const double budget_ms = budget.ms;
  bool budget_applies = false;  // set once measuring can start (not for a stored choice or an empty matrix)
  int batch = 0;                // products per timed run, once something was timed
  const TunedKey key{n, model.options.input, options.output, tuning_device_name(matrix)};
  const bool deep_exists = model.deep_pipeline_exists;
  const std::size_t bands = model.to_csr.size();

  // Marks a plan as chosen by measurement (or by the model, where nothing could be measured).
  // tuning_ms is taken when the choice is made: building the plan that is returned is a cost every plan pays,
  // tuned or not, so it is not counted (where candidates were timed, their builds are).
  auto finish = [&](SpmmPlan plan, Tuning tuning, std::vector<PlanCandidate> candidates, std::string reason,
                    double tuning_ms) {
    PlanReport& r = PlanAccess::report(plan);
    r.diagnostics.tuning_drafting_ms = times.drafting_ms;
    r.diagnostics.tuning_building_ms = times.building_ms;
    r.diagnostics.tuning_loading_ms = times.loading_ms;
    r.diagnostics.tuning_setup_ms = times.setup_ms;
    r.diagnostics.tuning_warmup_ms = times.warmup_ms;
    r.diagnostics.tuning_timing_ms = times.timing_ms;
    r.tuning = tuning;
    r.diagnostics.candidates = std::move(candidates);
    r.tuning_reason = std::move(reason);
    r.tuning_ms = tuning_ms;
    r.tuning_budget_ms = budget_applies ? budget_ms : 0.0;
    r.tuning_budget_source = budget_applies ? budget.source : std::string();
    r.diagnostics.tuning_batch = batch;
    return plan;
  };
  auto model_plan = [&](std::vector<PlanCandidate> candidates, const std::string& why) {
    const double decided_ms = elapsed_ms();
    return finish(PlanAccess::build(matrix, model), Tuning::model, std::move(candidates), why + ": the model's choice",
                  decided_ms);
  };

  // A choice stored for this key is rebuilt as it was measured. One that cannot be built here any more (a forced
  // choice the matrix's device copy no longer allows) is forgotten and measured again.
  if (store != nullptr)
    if (const std::optional<StoredChoice> stored = store->find(key)) {
      try {
        const PlanDraft draft = draft_plan(matrix, n, KernelKind::automatic, model_options, stored->choice.knobs(), &cache);
        const double decided_ms = elapsed_ms();
        SpmmPlan plan = PlanAccess::build(matrix, draft);
        PlanCandidate c;
        c.description = describe_choice(stored->choice, std::size_t(std::count(draft.to_csr.begin(), draft.to_csr.end(), 1)),
                                        bands, draft.splits_bands, deep_exists);
        c.predicted_us = draft.report.predicted_us;
        c.measured_us = stored->measured_us;
        c.chosen = true;
        c.note = "stored with the matrix";
        return finish(std::move(plan), Tuning::measure, {c},
                      "the choice stored for n = " + std::to_string(n) + " on " + key.device + " (" +
                          (stored->measured_us >= 0 ? format_us(stored->measured_us) : std::string("not timed")) +
                          " when measured): nothing measured again",
                      decided_ms);
      } catch (const InvalidArgument&) {
        store->forget(key);
      }
    }

  if (m.rows == 0 || m.cols == 0) return model_plan({}, "an empty matrix has nothing to measure");
  budget_applies = true;

  // Every distinct combination of forced choices, the model's own plan first.
  std::vector<Drafted> drafts;
  drafts.push_back(identify(model, true));
  CandidateSpace space;
  space.csr_only = model.report.diagnostics.csr_only_us >= 0.0;
  space.deep_pipeline = deep_exists;
  space.band_groups = n >= kTuneGroupMinColumns;  // where the device, mode or layout refuse them, drafting fails
  space.vectors = kernels::vectors_supported(model.mode) && m.vectors.bands > 0;
  // The candidate copy only (never the copy of every band, which another thread may be adding).
  space.vectors_only = kernels::vectors_supported(model.mode) && m.vectors.bands == m.tile_rows;
  bool drafting_cut = false;
  for (const TunedChoice& choice : candidate_choices(space)) {
    // Drafting a candidate costs host time (the band split, band-group schedules); at most half the budget goes
    // to it, the rest is left for measuring.
    if (elapsed_ms() > 0.5 * budget_ms) {
      drafting_cut = true;
      break;
    }
    PlanDraft draft;
    try {
      draft = draft_plan(matrix, n, KernelKind::automatic, model_options, choice.knobs(), &cache);
    } catch (const InvalidArgument&) {
      continue;  // a choice this matrix, device or mode cannot run (band groups on a gathered layout, ...)
    }
    const bool known = std::any_of(drafts.begin(), drafts.end(),
                                   [&](const Drafted& d) { return same_plan(d.draft, draft); });
    if (!known) drafts.push_back(identify(std::move(draft), choice.split_long_bands));
  }
  times.drafting_ms = elapsed_ms();
  std::vector<CandidateRank> ranks;
  for (const Drafted& d : drafts) ranks.push_back({d.choice.paths, d.draft.report.predicted_us});
  std::vector<std::size_t> selected = select_candidates(ranks);

  // The report's list: the measured candidates in measuring order (the model's first), then the others.
  std::vector<std::size_t> order = selected;
  for (std::size_t i = 0; i < drafts.size(); ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  double best_predicted = ranks[0].predicted_us;
  for (const CandidateRank& r : ranks) best_predicted = std::min(best_predicted, r.predicted_us);
  std::vector<PlanCandidate> listed;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Drafted& d = drafts[order[k]];
    PlanCandidate c;
    c.description = describe_choice(d.choice, d.bands_on_csr, bands, d.draft.splits_bands, deep_exists);
    if (order[k] == 0) c.description += " (the model's choice)";
    c.predicted_us = d.draft.report.predicted_us;
    if (k >= selected.size()) {
      char line[120];
      if (c.predicted_us > kMaxPredictedRatio * best_predicted)
        std::snprintf(line, sizeof line, "not measured: predicted %.1fx the best prediction",
                      best_predicted > 0 ? c.predicted_us / best_predicted : 0.0);
      else
        std::snprintf(line, sizeof line, "not measured: %zu candidates at most", kMaxCandidates);
      c.note = line;
    }
    listed.push_back(std::move(c));
  }
  if (selected.size() < 2)
    return model_plan(listed, drafting_cut ? "drafting the candidates used up half of the tuning budget of " +
                                                 format_us(budget_ms * 1e3)
                                           : std::string("no other candidate within reach of its prediction"));

  // Scratch B of the plan's width and type, laid out as a caller would give it: ldb = n where the plan accepts any
  // B (staging included in the times), else the aligned ldb the plan requires. Candidates are built without the
  // staging workspace where B is aligned (it would never be used) so that they take less memory while timed.
  const bool f32_b = model.options.input == InputType::f32;
  const int per_chunk = f32_b ? 4 : 8;
  const std::int64_t ldb = options.allow_unaligned_b ? n : (std::int64_t(n) + per_chunk - 1) / per_chunk * per_chunk;
  const bool staged = ldb % per_chunk != 0;
  const std::int64_t b_element = f32_b ? 4 : 2, c_element = options.output == OutputType::f16 ? 2 : 4;
  const std::int64_t b_bytes = std::max<std::int64_t>(16, std::int64_t(m.cols) * ldb * b_element);
  const std::int64_t c_bytes = std::max<std::int64_t>(16, std::int64_t(m.rows) * n * c_element);
  const std::int64_t staging_bytes =
      staged ? std::int64_t(m.cols) * ((std::int64_t(n) + per_chunk - 1) / per_chunk * per_chunk) * b_element : 0;
  const std::int64_t scratch_bytes = b_bytes + c_bytes + std::int64_t(selected.size()) * staging_bytes;

  // Where A, B and C could stay in L2 from one run to the next, every timed product follows a read that evicts
  // them, as bench_spmm times every product: warm, a 6 us product ranked the candidates differently from the same
  // products timed cold (Pd and watt_2 at n = 8: CSR 5.0 against tiles 5.1 us in the tuner, 6.6 against 6.0 us
  // in bench_spmm, run 58). Above 4 times L2 a read cannot keep much of them there, and is not worth its time.
  std::int64_t a_bytes = 0;
  double fastest_predicted_us = drafts[selected[0]].draft.report.predicted_us;
  for (const std::size_t i : selected) {
    a_bytes = std::max(a_bytes, a_bytes_of(drafts[i].draft.report));
    fastest_predicted_us = std::min(fastest_predicted_us, drafts[i].draft.report.predicted_us);
  }
  const std::int64_t eviction_bytes = (2 * m.l2_bytes + 15) / 16 * 16;
  bool evict = m.l2_bytes > 0 && a_bytes + b_bytes + c_bytes < 4 * m.l2_bytes;
  const double eviction_us = evict ? double(eviction_bytes) / kAssumedEvictionBytesPerUs + 3.0 : 0.0;
  // Products of a few microseconds are timed in batches of back-to-back products (products_per_batch).
  const int products = products_per_batch(fastest_predicted_us);

  std::size_t chosen = 0;
  std::vector<PlanCandidate> measured = listed;
  std::string reason;
  bool timed = false;
  std::vector<SpmmPlan> plans;
  // What the tuner's stream reads and writes, declared before the stream so that they outlive its work (its
  // destructor waits for it): one allocation holds scratch B, the holds' word, C and every candidate's lists; the
  // host copies those come from stay until the copies have run.
  DeviceBuffer<unsigned char> arena;
  std::vector<unsigned char> lists_image, b_block;
  std::optional<TuningStream> stream;
  try {
    double setup_start_ms = elapsed_ms();
    check_device_memory(scratch_bytes, "the tuner's scratch B and C");
    times.setup_ms = elapsed_ms() - setup_start_ms;
    // Candidates are built in measuring order (the model's first) while the budget holds the next build (as long as
    // the last one took) and a warm-up plus one timed round of every candidate built so far: on a large matrix the
    // builds, not the runs, are what a small budget cannot afford. Their lists get no device memory of their own:
    // all are placed in one allocation below.
    plans.reserve(selected.size());
    double last_build_ms = 0.0, round_us = 0.0;
    for (const std::size_t i : selected) {
      // The warm-up (one product each, an eviction before it) and a timed round (a batch each, and the evictions
      // alone) of the candidates built so far and this one.
      const double next_round_us = round_us + (drafts[i].draft.report.predicted_us + eviction_us) * (1 + products);
      if (!plans.empty() && charged_ms() + last_build_ms + (next_round_us + eviction_us * products) / 1e3 > budget_ms)
        break;
      PlanDraft draft = drafts[i].draft;
      draft.options.allow_unaligned_b = options.allow_unaligned_b && staged;
      const double before_ms = elapsed_ms();
      double loading_ms = 0.0;
      plans.push_back(PlanAccess::build(matrix, draft, &loading_ms, true));
      times.loading_ms += loading_ms;
      last_build_ms = elapsed_ms() - before_ms - loading_ms;
      measured[plans.size() - 1].build_ms = last_build_ms;
      if (plans.size() == 1)
        model_build_ms = last_build_ms;
      else
        times.building_ms += last_build_ms;
      round_us = next_round_us;
    }
    for (std::size_t k = plans.size(); k < selected.size(); ++k)
      measured[k].note = "not measured: not built within the budget";
    if (plans.size() < 2) {
      // The model's plan is returned: its build is paid by every plan, tuned or not; it gets its device memory now.
      const double decided_ms = added_ms();
      char line[200];
      std::snprintf(line, sizeof line,
                    "building the candidates' plans leaves no room to compare them within the tuning budget of %.1f "
                    "ms: the model's choice",
                    budget_ms);
      SpmmPlan plan = std::move(plans[0]);
      PlanAccess::own_memory(plan, options.allow_unaligned_b, nullptr);
      return finish(std::move(plan), Tuning::model, std::move(measured), line, decided_ms);
    }
    selected.resize(plans.size());

    setup_start_ms = elapsed_ms();
    // The one allocation: B (and after it the word the stream holds wait on), C, then the candidates' lists, their
    // initialised parts side by side so that one copy fills them all, then their workspaces.
    const std::int64_t hold_word_at = (b_bytes + 15) / 16 * 16;
    const std::int64_t c_at = list_aligned(hold_word_at + 16);
    const std::int64_t images_at = list_aligned(c_at + c_bytes);
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
    fill_scratch_b(arena.get(), static_cast<std::size_t>(std::int64_t(m.cols) * ldb), f32_b,
                   model.options.input == InputType::bf16, b_block, stream->get());
    unsigned char* const b = arena.get();
    unsigned char* const c = arena.get() + c_at;
    // Sized from the plans as built (a split matrix's tiles read their low parts too).
    a_bytes = 0;
    for (const SpmmPlan& plan : plans) a_bytes = std::max(a_bytes, a_bytes_of(plan.report()));
    evict = m.l2_bytes > 0 && a_bytes + b_bytes + c_bytes < 4 * m.l2_bytes;
    DeviceBuffer<unsigned char> eviction;
    if (evict) {
      try {
        check_device_memory(eviction_bytes, "the tuner's L2 eviction buffer");
        eviction = DeviceBuffer<unsigned char>(static_cast<std::size_t>(eviction_bytes));
        BCSR24_CUDA_CHECK(cudaMemsetAsync(eviction.get(), 0, eviction.bytes(), stream->get()));
      } catch (const OutOfMemory&) {
        evict = false;  // timed warm instead: the choice is still a measured one
      }
    }
    std::vector<EventPair> events(selected.size());
    const EventPair eviction_events;
    std::vector<double> predicted;
    for (const std::size_t i : selected) predicted.push_back(drafts[i].draft.report.predicted_us);
    TuningRounds rounds(predicted, budget_ms, products, evict ? eviction_us : 0.0);
    // Each timed round is queued behind a hold and released at once: its runs then follow each other on the GPU without
    // waiting for the host's launches, which take longer than a product of a few microseconds (timed one by one
    // as launched, such products measure the host).
    StreamHolds holds(stream->get(), reinterpret_cast<std::uint32_t*>(b + hold_word_at));
    times.setup_ms += elapsed_ms() - setup_start_ms;
    auto run = [&](std::size_t k) {
      if (f32_b)
        plans[k].run(reinterpret_cast<const float*>(b), ldb, reinterpret_cast<float*>(c), n, 1.0f, 0.0f,
                     stream->get());
      else
        plans[k].run(reinterpret_cast<const fp16_t*>(b), ldb, c, n, 1.0f, 0.0f, stream->get());
    };
    auto evict_l2 = [&] {
      if (evict) kernels::enqueue_l2_eviction(eviction.get(), eviction.bytes(), stream->get());
    };
    for (bool warmup = true;; warmup = false) {
      const double round_start_ms = elapsed_ms();
      const std::vector<std::size_t> round = rounds.next_round(charged_ms());
      if (round.empty()) break;
      // The warm-up runs one product of each; a timed round a batch of each, and where products follow evictions,
      // a batch of evictions alone first, whose time each candidate's batch has in it too.
      const int count = warmup ? 1 : products;
      // Not the warm-up: its launches are the plans' first, and anything loaded at a first launch (the builds have
      // loaded the kernels, not necessarily all the runtime touches) waits for the device's running work to end,
      // the hold included (it would wait out its time limit).
      if (!warmup) holds.hold();
      const bool time_evictions = !warmup && evict;
      if (time_evictions) {
        BCSR24_CUDA_CHECK(cudaEventRecord(eviction_events.start.get(), stream->get()));
        for (int p = 0; p < count; ++p) evict_l2();
        BCSR24_CUDA_CHECK(cudaEventRecord(eviction_events.stop.get(), stream->get()));
      }
      for (const std::size_t k : round) {
        BCSR24_CUDA_CHECK(cudaEventRecord(events[k].start.get(), stream->get()));
        for (int p = 0; p < count; ++p) {
          // In the warm-up too: its first launch loads the eviction kernel, which must not happen behind a hold.
          evict_l2();
          run(k);
        }
        BCSR24_CUDA_CHECK(cudaEventRecord(events[k].stop.get(), stream->get()));
      }
      if (!warmup) holds.release();
      BCSR24_CUDA_CHECK(cudaEventSynchronize(events[round.back()].stop.get()));
      float eviction_ms = 0.0f;
      if (time_evictions)
        BCSR24_CUDA_CHECK(cudaEventElapsedTime(&eviction_ms, eviction_events.start.get(), eviction_events.stop.get()));
      std::vector<double> ms;
      for (const std::size_t k : round) {
        float t = 0.0f;
        BCSR24_CUDA_CHECK(cudaEventElapsedTime(&t, events[k].start.get(), events[k].stop.get()));
        ms.push_back(product_ms(double(t), double(eviction_ms), count));
      }
      rounds.record(ms);
      const double round_ms = elapsed_ms() - round_start_ms;
      if (warmup) {
        // The first launches' one-time costs (what CUDA loads or sets up at a kernel's first launch in a process
        // beyond what prepare_kernels loaded: 10-20 ms on a process's first plans, run 52) are loading, not
        // charged. Charged: the round as it would take without them, twice the predicted runs plus 50 us a
        // candidate. (The events cannot tell: a launch that loads holds the host between them.)
        double expected_ms = 0.0;
        for (const std::size_t k : round) expected_ms += 2.0 * predicted[k] / 1e3 + (evict ? 0.1 : 0.05);
        times.warmup_ms = std::min(round_ms, expected_ms);
        times.loading_ms += round_ms - times.warmup_ms;
      } else {
        times.timing_ms += round_ms;
      }
    }
    chosen = rounds.chosen();
    reason = rounds.reason();
    for (std::size_t k = 0; k < selected.size(); ++k) {
      measured[k].measured_us = rounds.median_us(k);
      measured[k].runs = static_cast<int>(rounds.samples(k).size());
      measured[k].note = rounds.note(k);
      timed = timed || !rounds.samples(k).empty();
    }
    if (timed) batch = products;
  } catch (const OutOfMemory& e) {
    plans.clear();
    char line[200];
    std::snprintf(line, sizeof line, "the scratch operands and candidate plans (%.1f MiB) do not fit in device memory",
                  double(scratch_bytes) / double(1 << 20));
    return model_plan(listed, line);
  }
  measured[chosen].chosen = true;
  const Drafted& winner = drafts[selected[chosen]];
  const double decided_ms = added_ms();
  // The plan measured is the plan returned: its lists move out of the tuner's allocation into one of its own (after
  // the runs queued on the stream, which own_memory waits for), with the staging workspace the caller's options ask
  // for where it was left out for the timing. Its failure is the plan's OutOfMemory.
  SpmmPlan plan = std::move(plans[chosen]);
  plans.clear();
  PlanAccess::own_memory(plan, options.allow_unaligned_b, stream->get());
  if (store != nullptr && timed) store->store({key, winner.choice, measured[chosen].measured_us});
  return finish(std::move(plan), timed ? Tuning::measure : Tuning::model, std::move(measured), reason, decided_ms);
}

}  // namespace bcsr24::detail
