// The pieces of a measured plan's timing (device/plan_tuner.cpp): the tuner's stream and the holds it queues, the
// events of a timed run, the candidates' identities, scratch B, and where tuning's time went.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "device/cuda_check.hpp"
#include "device/cuda_owners.hpp"
#include "device/plan_choices.hpp"
#include "device/plan_draft.hpp"
#include "device/plan_tuning.hpp"
#include "kernels/stream_hold.hpp"

namespace bcsr24::detail {

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

/// Rate assumed for the L2 eviction read before one has been timed (the H100 read ~70 MiB in ~35 us, run 58): it
/// only sizes the first round's estimate, the rounds after it use their measured durations.
constexpr double kAssumedEvictionBytesPerUs = 2.0e6;

/// Two drafts that build the same plan: same bands on CSR, same grouping and, for a one-band-per-block tile part,
/// the same pipeline and split.
bool same_plan(const PlanDraft& x, const PlanDraft& y);
/// The identity a draft is stored as: its forced knobs, with the paths named by what the draft runs (a hybrid
/// split that puts no band, or every band, on CSR is a pure plan; a plan with bands on vectors is named by its
/// forced path, and counts its bands on CSR or vectors).
Drafted identify(PlanDraft draft, bool split_long_bands);
/// Fills `count` elements at `b` with random values of the plan's B type: a block of 4096 random values is copied
/// up once, then doubled on the device (the kernels' speed does not depend on the values repeating). The copy is
/// queued on `stream` from `block`, which the caller keeps until the stream has run it.
void fill_scratch_b(void* b, std::size_t count, bool f32, bool bf16, std::vector<unsigned char>& block,
                    cudaStream_t stream);
/// Rounds up to the alignment of a plan's device lists.
std::int64_t list_aligned(std::int64_t bytes);
/// Bytes of A a plan reads per product (PlanDiagnostics' counts).
std::int64_t a_bytes_of(const PlanReport& r);
std::string format_us(double us);

}  // namespace bcsr24::detail
