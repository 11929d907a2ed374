// The rules of measured plans (device/plan_tuning.hpp): candidates, selection, budget, rounds, stored choices.
#include "device/plan_tuning.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace bcsr24::detail {

PlanKnobs TunedChoice::knobs() const {
  PlanKnobs k;
  k.paths = paths;
  k.split_long_bands = split_long_bands;
  k.tile_pipeline = tile_pipeline;
  k.band_groups = band_groups ? BandGroups::on : BandGroups::off;
  return k;
}

std::vector<TunedChoice> candidate_choices(const CandidateSpace& space) {
  std::vector<TunedChoice> out;
  for (const BandPaths paths : {BandPaths::tiles, BandPaths::hybrid, BandPaths::csr}) {
    if (paths == BandPaths::csr) {
      // No tile bands: the tile part's choices do not exist.
      if (space.csr_only) out.push_back({BandPaths::csr, true, TilePipeline::standard, false});
      continue;
    }
    for (const bool split : {true, false}) {
      out.push_back({paths, split, TilePipeline::standard, false});
      if (space.deep_pipeline) out.push_back({paths, split, TilePipeline::deep, false});
    }
    // A group runs its bands whole on its own pipeline: neither choice applies.
    if (space.band_groups) out.push_back({paths, true, TilePipeline::standard, true});
  }
  // Narrow vectors (uncalibrated in the model, so measured rather than predicted into or out of a plan): one draft
  // per vector path; the tile part of the hybrid keeps the defaults.
  if (space.vectors) out.push_back({BandPaths::hybrid_vectors, true, TilePipeline::standard, false});
  if (space.vectors_only) out.push_back({BandPaths::vectors, true, TilePipeline::standard, false});
  return out;
}

double max_predicted_ratio(BandPaths paths) {
  const bool vectors = paths == BandPaths::hybrid_vectors || paths == BandPaths::vectors;
  return vectors ? kMaxVectorPredictedRatio : kMaxPredictedRatio;
}

std::vector<std::size_t> select_candidates(const std::vector<CandidateRank>& drafts) {
  std::vector<std::size_t> chosen;
  if (drafts.empty()) return chosen;
  chosen.push_back(0);
  double best = drafts[0].predicted_us;
  for (const CandidateRank& d : drafts) best = std::min(best, d.predicted_us);
  auto limit_of = [&](BandPaths paths) { return max_predicted_ratio(paths) * std::max(best, 0.0); };
  auto taken = [&](std::size_t i) { return std::find(chosen.begin(), chosen.end(), i) != chosen.end(); };
  std::vector<std::size_t> order(drafts.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return drafts[x].predicted_us < drafts[y].predicted_us; });
  // The best of each path the model's choice is not, so that tiles only, the hybrid and CSR only are all timed
  // where the model ranks them within reach.
  for (const BandPaths paths :
       {BandPaths::tiles, BandPaths::hybrid, BandPaths::csr, BandPaths::hybrid_vectors, BandPaths::vectors}) {
    if (paths == drafts[0].paths) continue;
    for (const std::size_t i : order)
      if (drafts[i].paths == paths) {
        if (drafts[i].predicted_us <= limit_of(paths) && chosen.size() < kMaxCandidates && !taken(i))
          chosen.push_back(i);
        break;
      }
  }
  for (const std::size_t i : order)
    if (chosen.size() < kMaxCandidates && !taken(i) && drafts[i].predicted_us <= limit_of(drafts[i].paths))
      chosen.push_back(i);
  return chosen;
}

TuningBudget tuning_budget(double requested_ms, double conversion_ms, double model_predicted_us) {
  char line[200];
  if (requested_ms > 0.0) return {requested_ms, "requested (PlanOptions::tuning_budget_ms)"};
  double ms = 0.0;
  if (conversion_ms > 0.0) {
    ms = kBudgetConversionShare * conversion_ms;
    std::snprintf(line, sizeof line, "%.0f%% of the conversion's %.1f ms", kBudgetConversionShare * 100.0,
                  conversion_ms);
  } else {
    ms = kBudgetProducts * std::max(model_predicted_us, 0.0) / 1e3;
    std::snprintf(line, sizeof line, "%.0f products of the model's %.1f us (no conversion time: a preprocessed matrix)",
                  kBudgetProducts, model_predicted_us);
  }
  std::string source = line;
  if (ms < kBudgetFloorMs) {
    std::snprintf(line, sizeof line, "the floor of %.0f ms (", kBudgetFloorMs);
    return {kBudgetFloorMs, line + source + " is less)"};
  }
  if (ms > kBudgetCapMs) {
    std::snprintf(line, sizeof line, "the cap of %.0f ms (", kBudgetCapMs);
    return {kBudgetCapMs, line + source + " is more)"};
  }
  return {ms, source};
}

int products_per_batch(double best_predicted_us) {
  if (!(best_predicted_us > 0.0)) return kMaxBatch;
  const double products = std::ceil(kBatchProductsUs / best_predicted_us);
  return products >= kMaxBatch ? kMaxBatch : std::max(1, static_cast<int>(products));
}

double product_ms(double batch_ms, double eviction_batch_ms, int batch) {
  constexpr double kLeastMs = 1e-6;
  return std::max(kLeastMs, (batch_ms - std::max(eviction_batch_ms, 0.0)) / double(std::max(batch, 1)));
}

void BuildEstimate::record(const PlanParts& parts, const PartBuildTimes& times) {
  auto rate = [](double& per_unit, double ms, std::int64_t units) {
    if (units > 0) per_unit = std::max(per_unit, std::max(ms, 0.0) / double(units));
  };
  rate(tile_ms_per_tile_, times.tile_ms, parts.tiles);
  rate(csr_ms_per_band_, times.csr_ms, parts.csr_bands);
  rate(vector_ms_per_band_, times.vector_ms, parts.vector_bands);
  other_ms_ = std::max(other_ms_, std::max(times.other_ms, 0.0));
  largest_ms_ = std::max(largest_ms_, std::max(times.tile_ms, 0.0) + std::max(times.csr_ms, 0.0) +
                                          std::max(times.vector_ms, 0.0) + std::max(times.other_ms, 0.0));
}

double BuildEstimate::estimate_ms(const PlanParts& parts) const {
  if (largest_ms_ <= 0.0 && other_ms_ <= 0.0) return 0.0;
  double ms = other_ms_;
  bool unknown = false;
  auto add = [&](double per_unit, std::int64_t units) {
    if (units <= 0) return;
    if (per_unit < 0.0) unknown = true; else ms += per_unit * double(units);
  };
  add(tile_ms_per_tile_, parts.tiles);
  add(csr_ms_per_band_, parts.csr_bands);
  if (vector_ms_per_band_ < 0.0 && csr_ms_per_band_ >= 0.0 && parts.vector_bands > 0)
    ms += kVectorBuildToCsr * csr_ms_per_band_ * double(parts.vector_bands);  // and the guess below
  add(vector_ms_per_band_, parts.vector_bands);
  return unknown ? std::max(ms, largest_ms_) : ms;
}

// ---- rounds ----------------------------------------------------------------------------------------------

TuningRounds::TuningRounds(std::vector<double> predicted_us, double budget_ms, int batch, double overhead_us)
    : predicted_us_(std::move(predicted_us)),
      budget_ms_(budget_ms),
      batch_(std::max(batch, 1)),
      overhead_us_(std::max(overhead_us, 0.0)),
      samples_(predicted_us_.size()),
      notes_(predicted_us_.size()),
      active_(predicted_us_.size(), 1) {}

void TuningRounds::drop(std::size_t c, const std::string& why) {
  active_[c] = 0;
  notes_[c] = why;
}

double TuningRounds::estimate_ms(const std::vector<std::size_t>& list, bool timed) const {
  double us = 0.0;
  for (const std::size_t c : list) us += (samples_[c].empty() ? predicted_us_[c] : median_us(c)) + overhead_us_;
  if (!timed) return us / 1e3;  // the warm-up: one product each
  // A timed round runs a batch of each, and the batch's eviction reads alone.
  return (us + overhead_us_) * batch_ / 1e3;
}

std::vector<std::size_t> TuningRounds::next_round(double elapsed_ms) {
  pending_.clear();
  if (!stop_reason_.empty()) return pending_;
  auto active = [&] {
    std::vector<std::size_t> out;
    for (std::size_t c = 0; c < active_.size(); ++c)
      if (active_[c]) out.push_back(c);
    return out;
  };
  char line[160];
  std::vector<std::size_t> list = active();
  if (round_ == 0) {
    // The warm-up (one product each) and one timed round (a batch each, and the eviction reads alone) must fit, or
    // the warm-up is wasted: drop the last candidates until they do.
    while (list.size() > 1 && elapsed_ms + estimate_ms(list, false) + estimate_ms(list, true) > budget_ms_) {
      std::snprintf(line, sizeof line, "not measured: the budget of %.1f ms holds fewer candidates", budget_ms_);
      drop(list.back(), line);
      list.pop_back();
    }
    if (list.size() < 2) {
      std::snprintf(line, sizeof line, "the budget of %.1f ms leaves no room to compare candidates", budget_ms_);
      stop_reason_ = line;
      return pending_;
    }
  } else {
    const int timed = round_ - 1;
    if (list.size() < 2) {
      stop_reason_ = "the other candidates dropped as slower";
      return pending_;
    }
    if (timed >= kMaxTimedRounds) {
      std::snprintf(line, sizeof line, "%d timed runs each", timed);
      stop_reason_ = line;
      return pending_;
    }
    double estimate = estimate_ms(list, true);
    if (last_start_ms_ >= 0.0 && last_count_ > 0) {
      // What the last timed round took on the caller's clock (launches, event waits and all), for the candidates
      // left; the eviction reads alone are one more batch whatever the count.
      const double extra = overhead_us_ > 0.0 ? 1.0 : 0.0;
      estimate = std::max(estimate, (elapsed_ms - last_start_ms_) * (double(list.size()) + extra) /
                                        (double(last_count_) + extra));
    }
    if (elapsed_ms + estimate > budget_ms_) {
      std::snprintf(line, sizeof line, "budget of %.1f ms reached after %d timed run%s", budget_ms_, timed,
                    timed == 1 ? "" : "s");
      stop_reason_ = line;
      return pending_;
    }
    last_start_ms_ = elapsed_ms;
    last_count_ = list.size();
  }
  pending_ = list;
  return pending_;
}

void TuningRounds::record(const std::vector<double>& ms) {
  if (round_ > 0)
    for (std::size_t i = 0; i < pending_.size() && i < ms.size(); ++i) samples_[pending_[i]].push_back(ms[i]);
  ++round_;
  pending_.clear();
  const int timed = round_ - 1;
  if (timed < kRoundsBeforePruning) return;
  double best = -1.0;
  for (std::size_t c = 0; c < active_.size(); ++c)
    if (active_[c] && !samples_[c].empty() && (best < 0 || median_us(c) < best)) best = median_us(c);
  if (best < 0) return;
  char line[160];
  for (std::size_t c = 0; c < active_.size(); ++c) {
    if (!active_[c] || samples_[c].empty()) continue;
    const double fastest = *std::min_element(samples_[c].begin(), samples_[c].end()) * 1e3;
    if (fastest > kPruneRatio * best) {
      std::snprintf(line, sizeof line, "dropped after %zu runs: fastest run %.1f us > %.1fx the best median %.1f us",
                    samples_[c].size(), fastest, kPruneRatio, best);
      drop(c, line);
    }
  }
}

double TuningRounds::median_us(std::size_t c) const {
  std::vector<double> s = samples_[c];
  if (s.empty()) return -1.0;
  std::sort(s.begin(), s.end());
  const std::size_t k = s.size();
  return 1e3 * (k % 2 ? s[k / 2] : 0.5 * (s[k / 2 - 1] + s[k / 2]));
}

std::size_t TuningRounds::chosen() const {
  std::size_t best = candidates();
  for (std::size_t c = 0; c < candidates(); ++c)
    if (!samples_[c].empty() && (best == candidates() || median_us(c) < median_us(best))) best = c;
  if (best == candidates()) return 0;
  if (!samples_[0].empty() && median_us(0) <= (1.0 + kKeepModelMargin) * median_us(best)) return 0;
  return best;
}

std::string TuningRounds::reason() const {
  char line[280];
  const std::size_t c = chosen();
  if (samples_[c].empty()) {
    std::snprintf(line, sizeof line, "not measured (%s): the model's choice",
                  stop_reason_.empty() ? "no timed run" : stop_reason_.c_str());
    return line;
  }
  // "7 runs", or "7 runs of 4 products" where a run is a batch.
  auto runs = [&](std::size_t k) {
    std::string text = std::to_string(samples_[k].size()) + (samples_[k].size() == 1 ? " run" : " runs");
    if (batch_ > 1) text += " of " + std::to_string(batch_) + " products";
    return text;
  };
  std::size_t fastest = c;
  for (std::size_t k = 0; k < candidates(); ++k)
    if (!samples_[k].empty() && median_us(k) < median_us(fastest)) fastest = k;
  if (c == 0 && fastest == 0)
    std::snprintf(line, sizeof line, "the model's choice measured fastest: %.1f us (median of %s)", median_us(0),
                  runs(0).c_str());
  else if (c == 0)
    std::snprintf(line, sizeof line, "the model's choice kept: %.1f us (median of %s), within %.0f%% of candidate "
                  "%zu's %.1f us", median_us(0), runs(0).c_str(), kKeepModelMargin * 100.0, fastest + 1,
                  median_us(fastest));
  else if (!samples_[0].empty())
    std::snprintf(line, sizeof line, "candidate %zu measured fastest: %.1f us against the model's choice %.1f us "
                  "(medians of %s and %s)", c + 1, median_us(c), median_us(0), runs(c).c_str(), runs(0).c_str());
  else
    std::snprintf(line, sizeof line, "candidate %zu measured fastest: %.1f us (median of %s; the model's "
                  "choice dropped)", c + 1, median_us(c), runs(c).c_str());
  std::string out = line;
  if (!stop_reason_.empty()) out += "; stopped: " + stop_reason_;
  return out;
}

// ---- stored choices --------------------------------------------------------------------------------------

TunedChoices& TunedChoices::operator=(const TunedChoices& o) {
  if (this != &o) assign(o.all());
  return *this;
}

std::optional<StoredChoice> TunedChoices::find(const TunedKey& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const StoredChoice& e : entries_)
    if (e.key == key) return e;
  return std::nullopt;
}

void TunedChoices::store(const StoredChoice& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (StoredChoice& e : entries_)
    if (e.key == entry.key) {
      e = entry;
      return;
    }
  entries_.push_back(entry);
}

void TunedChoices::forget(const TunedKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [&](const StoredChoice& e) { return e.key == key; }),
                 entries_.end());
}

std::vector<StoredChoice> TunedChoices::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_;
}

void TunedChoices::assign(std::vector<StoredChoice> entries) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_ = std::move(entries);
}

std::string describe_choice(const TunedChoice& choice, std::size_t bands_on_csr, std::size_t bands, bool splits_bands,
                            bool deep_exists) {
  std::string out;
  switch (choice.paths) {
    case BandPaths::csr: return "CSR only";
    case BandPaths::vectors: return "narrow vectors only";
    case BandPaths::hybrid_vectors:
      out = "hybrid with vectors (" + std::to_string(bands_on_csr) + " of " + std::to_string(bands) +
            " bands on CSR or vectors)";
      break;
    case BandPaths::hybrid:
      out = "hybrid (" + std::to_string(bands_on_csr) + " of " + std::to_string(bands) + " bands on CSR)";
      break;
    default: out = "tiles only"; break;
  }
  if (choice.band_groups) return out + ", band groups";
  if (!choice.split_long_bands) out += ", long bands whole";
  else if (splits_bands) out += ", long bands split";
  if (deep_exists) out += choice.tile_pipeline == TilePipeline::deep ? ", deep pipeline" : ", standard pipeline";
  return out;
}

}  // namespace bcsr24::detail
