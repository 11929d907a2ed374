// The pieces of a measured plan's timing (device/tuner_support.hpp).
#include "device/tuner_support.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

#include "bcsr24/half.hpp"
#include "device/plan_storage.hpp"

namespace bcsr24::detail {

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

std::string format_us(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", us);
  return text;
}

}  // namespace bcsr24::detail
