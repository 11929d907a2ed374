// The rules of measured plans (lib/src/device/plan_tuning.hpp), without a GPU: which candidates exist and in
// which order, which are measured, the budget, the rounds of timed runs fed with made-up times (round-robin order,
// dropping, stopping, the choice and its reason), stored choices and the descriptions the report shows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "device/plan_tuning.hpp"

using namespace bcsr24;
using detail::CandidateRank;
using detail::TunedChoice;
using detail::TuningRounds;

namespace {

std::string text(const TunedChoice& c) {
  return std::string(experimental::band_paths_name(c.paths)) + (c.split_long_bands ? "/split" : "/whole") + "/" +
         experimental::tile_pipeline_name(c.tile_pipeline) + (c.band_groups ? "/groups" : "");
}

/// Runs `rounds` to the end with candidate c taking `ms[c]` milliseconds per run (times[c] overrides run by run
/// where given) and the clock advancing by each round's runs plus `overhead_ms`; returns every run in order.
std::vector<std::size_t> drive(TuningRounds& rounds, const std::vector<double>& ms, double overhead_ms = 0.0,
                               double start_ms = 0.0) {
  std::vector<std::size_t> runs;
  double clock = start_ms;
  for (int guard = 0; guard < 100; ++guard) {
    const std::vector<std::size_t> round = rounds.next_round(clock);
    if (round.empty()) break;
    std::vector<double> times;
    for (const std::size_t c : round) {
      times.push_back(ms[c]);
      clock += ms[c];
      runs.push_back(c);
    }
    clock += overhead_ms;
    rounds.record(times);
  }
  return runs;
}

}  // namespace

TEST_CASE("tuning: the candidate combinations are fixed by the plan's shape, in a fixed order", "[tuning]") {
  detail::CandidateSpace space;
  const std::vector<TunedChoice> plain = detail::candidate_choices(space);
  std::vector<std::string> names;
  for (const TunedChoice& c : plain) names.push_back(text(c));
  CHECK(names == std::vector<std::string>{"tiles/split/standard", "tiles/whole/standard", "hybrid/split/standard",
                                          "hybrid/whole/standard"});
  space.csr_only = space.deep_pipeline = space.band_groups = true;
  const std::vector<TunedChoice> all = detail::candidate_choices(space);
  names.clear();
  for (const TunedChoice& c : all) names.push_back(text(c));
  CHECK(names == std::vector<std::string>{
                     "tiles/split/standard", "tiles/split/deep", "tiles/whole/standard", "tiles/whole/deep",
                     "tiles/split/standard/groups", "hybrid/split/standard", "hybrid/split/deep",
                     "hybrid/whole/standard", "hybrid/whole/deep", "hybrid/split/standard/groups",
                     "csr/split/standard"});
  // The same space gives the same list, and every entry is a forced choice that rebuilds as it is.
  CHECK(detail::candidate_choices(space) == all);
  for (const TunedChoice& c : all) {
    INFO(text(c));
    CHECK(c.paths != experimental::BandPaths::automatic);
    CHECK(c.tile_pipeline != experimental::TilePipeline::automatic);
    const experimental::PlanKnobs k = c.knobs();
    CHECK(k.paths == c.paths);
    CHECK(k.split_long_bands == c.split_long_bands);
    CHECK(k.tile_pipeline == c.tile_pipeline);
    CHECK(k.band_groups == (c.band_groups ? experimental::BandGroups::on : experimental::BandGroups::off));
    CHECK_FALSE(experimental::default_knobs(k));
  }
  CHECK(experimental::default_knobs(experimental::PlanKnobs{}));
}

TEST_CASE("tuning: which candidates are measured depends on the predictions only", "[tuning]") {
  using experimental::BandPaths;
  SECTION("the arrowhead of issue 33: the model prefers CSR 2.3x, both are measured") {
    // Drafts of an arrowhead at n = 128 (the model's predictions from the issue): CSR only 22.6 us, tiles 51.6 us.
    const std::vector<CandidateRank> drafts = {{BandPaths::csr, 22.6}, {BandPaths::tiles, 51.6},
                                               {BandPaths::tiles, 53.0}, {BandPaths::hybrid, 40.0}};
    const std::vector<std::size_t> chosen = detail::select_candidates(drafts);
    CHECK(chosen == std::vector<std::size_t>{0, 1, 3, 2});
  }
  SECTION("far slower predictions are not measured, and at most kMaxCandidates are") {
    std::vector<CandidateRank> drafts = {{BandPaths::tiles, 10.0}};
    for (int i = 0; i < 10; ++i) drafts.push_back({BandPaths::tiles, 11.0 + i});
    drafts.push_back({BandPaths::csr, 41.0});    // over 4x the best: not measured even as the only CSR plan
    drafts.push_back({BandPaths::hybrid, 39.0});  // the best hybrid comes before the remaining tile plans
    const std::vector<std::size_t> chosen = detail::select_candidates(drafts);
    REQUIRE(chosen.size() == detail::kMaxCandidates);
    CHECK(chosen[0] == 0);
    CHECK(chosen[1] == 12);
    CHECK(std::find(chosen.begin(), chosen.end(), 11) == chosen.end());
    CHECK(std::vector<std::size_t>(chosen.begin() + 2, chosen.end()) == std::vector<std::size_t>{1, 2, 3, 4});
  }
  SECTION("the best prediction sets the limit even where it is not the model's choice") {
    // A grouped variant predicted faster than the model's own plan (automatic grouping declined it).
    const std::vector<CandidateRank> drafts = {{BandPaths::tiles, 100.0}, {BandPaths::tiles, 20.0},
                                               {BandPaths::csr, 90.0}};
    CHECK(detail::select_candidates(drafts) == std::vector<std::size_t>{0, 1});
  }
  SECTION("equal predictions keep draft order, and one draft is one candidate") {
    const std::vector<CandidateRank> drafts = {{BandPaths::tiles, 5.0}, {BandPaths::tiles, 5.0},
                                               {BandPaths::tiles, 5.0}};
    CHECK(detail::select_candidates(drafts) == std::vector<std::size_t>{0, 1, 2});
    CHECK(detail::select_candidates({{BandPaths::hybrid, 5.0}}) == std::vector<std::size_t>{0});
    CHECK(detail::select_candidates({}).empty());
  }
}

TEST_CASE("tuning: the default budget is 8% of the conversion time, 20 ms to 1 s", "[tuning]") {
  using detail::tuning_budget;
  SECTION("a share of the conversion where it is known") {
    // The 1.6M-row circuit converts in seconds: a few hundred milliseconds of tuning.
    const detail::TuningBudget large = tuning_budget(0.0, 2412.0, 243.0);
    CHECK(large.ms == Approx(192.96));
    CHECK(large.source == "8% of the conversion's 2412.0 ms");
    // The model's prediction does not matter where the conversion time is known.
    CHECK(tuning_budget(0.0, 2412.0, 5.0).ms == Approx(192.96));
    CHECK(tuning_budget(0.0, 500.0, 1e6).ms == Approx(40.0));
  }
  SECTION("small matrices still time their candidates: the floor") {
    const detail::TuningBudget small = tuning_budget(0.0, 4.0, 6.0);
    CHECK(small.ms == Approx(detail::kBudgetFloorMs));
    CHECK(small.ms == Approx(20.0));
    CHECK(small.source == "the floor of 20 ms (8% of the conversion's 4.0 ms is less)");
  }
  SECTION("and a cap") {
    const detail::TuningBudget huge = tuning_budget(0.0, 60000.0, 3000.0);
    CHECK(huge.ms == Approx(detail::kBudgetCapMs));
    CHECK(huge.source == "the cap of 1000 ms (8% of the conversion's 60000.0 ms is more)");
  }
  SECTION("without a conversion time (a .b24 file): 500 products of the model's plan") {
    const detail::TuningBudget loaded = tuning_budget(0.0, 0.0, 200.0);
    CHECK(loaded.ms == Approx(100.0));
    CHECK(loaded.source.find("500 products of the model's 200.0 us") == 0);
    CHECK(tuning_budget(0.0, -1.0, 10.0).ms == Approx(detail::kBudgetFloorMs));
    CHECK(tuning_budget(0.0, 0.0, 1e5).ms == Approx(detail::kBudgetCapMs));
  }
  SECTION("a requested budget is taken as it is, below the floor and above the cap too") {
    CHECK(tuning_budget(3.0, 2412.0, 243.0).ms == 3.0);
    CHECK(tuning_budget(5000.0, 0.0, 1.0).ms == 5000.0);
    CHECK(tuning_budget(300.0, 10.0, 1.0).source == "requested (PlanOptions::tuning_budget_ms)");
  }
  SECTION("every default lies between the floor and the cap") {
    for (double conversion = 0.0; conversion < 1e6; conversion = conversion * 3.1 + 0.7)
      for (double us = 0.5; us < 1e5; us *= 4.3) {
        const double ms = tuning_budget(0.0, conversion, us).ms;
        INFO(conversion << " ms conversion, " << us << " us product");
        CHECK(ms >= detail::kBudgetFloorMs);
        CHECK(ms <= detail::kBudgetCapMs);
      }
  }
}

TEST_CASE("tuning: short products are timed in batches; a batch's time less its evictions, per product",
          "[tuning]") {
  using detail::products_per_batch;
  // At least kBatchProductsUs (40 us) of products between two events, at most 8 products.
  CHECK(products_per_batch(5.0) == 8);
  CHECK(products_per_batch(6.0) == 7);
  CHECK(products_per_batch(10.0) == 4);
  CHECK(products_per_batch(13.0) == 4);
  CHECK(products_per_batch(20.0) == 2);
  CHECK(products_per_batch(40.0) == 1);
  CHECK(products_per_batch(243.0) == 1);
  CHECK(products_per_batch(0.0) == detail::kMaxBatch);  // no prediction: as short as can be
  CHECK(products_per_batch(0.01) == detail::kMaxBatch);
  // 4 products of 6 us, each after an eviction of 30 us: 144 us; the 4 evictions alone 120 us.
  CHECK(detail::product_ms(0.144, 0.120, 4) == Approx(0.006));
  CHECK(detail::product_ms(0.040, 0.0, 8) == Approx(0.005));  // no evictions
  CHECK(detail::product_ms(0.010, 0.0, 1) == Approx(0.010));
  // Noise larger than the product never gives zero or a negative time.
  CHECK(detail::product_ms(0.100, 0.120, 4) > 0.0);
  CHECK(detail::product_ms(0.100, 0.120, 4) < 1e-5);
}

TEST_CASE("tuning: a candidate's build is estimated part by part from the builds before it", "[tuning]") {
  detail::BuildEstimate estimate;
  CHECK(estimate.estimate_ms({100, 0, 0}) == 0.0);  // nothing built yet: nothing to go by
  // Whole builds as on circuit:1600000 at n = 8 (H200, 2026-11-29: CSR 5.7 ms, tiles 7.0, the hybrid with vectors
  // 16.4); their split into parts here is made up.
  estimate.record({0, 100000, 0}, {0.0, 5.2, 0.0, 0.5});
  CHECK(estimate.estimate_ms({0, 100000, 0}) == Approx(5.7));
  CHECK(estimate.estimate_ms({0, 50000, 0}) == Approx(0.5 + 2.6));  // half the CSR bands, the same overhead
  // Tiles were never built: the largest whole build so far stands in for them.
  CHECK(estimate.estimate_ms({100000, 0, 0}) == Approx(5.7));
  estimate.record({100000, 0, 0}, {6.4, 0.0, 0.0, 0.6});
  CHECK(estimate.estimate_ms({60000, 40000, 0}) == Approx(0.6 + 6.4 * 0.6 + 5.2 * 0.4));
  // A hybrid with vectors: its vector part is new, so kVectorBuildToCsr times the CSR rate per band stands in for it
  // (12.8 ms in all; it then took 16.4; the largest build so far, 7.0, would have let it overrun the budget).
  CHECK(estimate.estimate_ms({60000, 0, 40000}) ==
        Approx(0.6 + 6.4 * 0.6 + detail::kVectorBuildToCsr * 5.2 * 0.4));
  estimate.record({60000, 0, 40000}, {3.8, 0.0, 11.9, 0.7});
  CHECK(estimate.estimate_ms({60000, 0, 40000}) == Approx(0.7 + 6.4 * 0.6 + 11.9));  // tiles at their dearest rate
  CHECK(estimate.estimate_ms({0, 0, 0}) == Approx(0.7));
  // Without a CSR build to scale from, a new vector part costs at least the largest build so far.
  detail::BuildEstimate tiles_first;
  tiles_first.record({100000, 0, 0}, {6.4, 0.0, 0.0, 0.6});
  CHECK(tiles_first.estimate_ms({0, 0, 100000}) == Approx(7.0));
}

TEST_CASE("tuning: the tile part's build is estimated per tile, not per band", "[tuning]") {
  // As dense_rows:200000 at n = 32: the model's hybrid has one band of 6,250 tiles (split) on tiles and 12,499 bands
  // on CSR; the tiles-only plan has 12,500 bands of 56,246 tiles. Times made up, of the measured order.
  detail::BuildEstimate estimate;
  estimate.record({6250, 12499, 0}, {0.3, 3.0, 0.0, 0.5});
  const double tiles_only_ms = estimate.estimate_ms({56246, 0, 0});
  CHECK(tiles_only_ms == Approx(0.5 + 0.3 * 56246.0 / 6250.0));
  CHECK(tiles_only_ms < 5.0);  // per band it would have been 0.3 ms x 12,500: 3.75 s, past any budget
}

TEST_CASE("tuning rounds: a warm-up, then round-robin runs; the fastest median is kept", "[tuning]") {
  TuningRounds rounds({20.0, 30.0, 25.0}, 1000.0);
  const std::vector<std::size_t> runs = drive(rounds, {0.024, 0.020, 0.025});
  // Warm-up (3 runs) + kMaxTimedRounds rounds, none of the three dropped (all within 1.3x of the best).
  REQUIRE(runs.size() == 3u * (1 + detail::kMaxTimedRounds));
  for (std::size_t i = 1; i < runs.size(); ++i) CHECK(runs[i] != runs[i - 1]);  // every run follows another candidate
  for (std::size_t c = 0; c < 3; ++c) CHECK(rounds.samples(c).size() == std::size_t(detail::kMaxTimedRounds));
  CHECK(rounds.median_us(1) == Approx(20.0));
  CHECK(rounds.chosen() == 1);
  CHECK(rounds.reason().find("candidate 2 measured fastest: 20.0 us against the model's choice 24.0 us") !=
        std::string::npos);
  CHECK(rounds.reason().find("7 timed runs each") != std::string::npos);
}

TEST_CASE("tuning rounds: slow candidates are dropped, and the model's choice is kept within 2%", "[tuning]") {
  SECTION("a candidate twice as slow stops after two timed runs; the model's choice wins outright") {
    TuningRounds rounds({10.0, 12.0, 11.0}, 1000.0);
    drive(rounds, {0.010, 0.020, 0.0125});
    CHECK(rounds.samples(1).size() == std::size_t(detail::kRoundsBeforePruning));
    CHECK(rounds.note(1).find("dropped after 2 runs") != std::string::npos);
    CHECK(rounds.samples(0).size() == std::size_t(detail::kMaxTimedRounds));
    CHECK(rounds.chosen() == 0);
    CHECK(rounds.reason().find("the model's choice measured fastest: 10.0 us") != std::string::npos);
  }
  SECTION("every other candidate clearly slower: measuring stops as soon as they are dropped") {
    TuningRounds rounds({10.0, 12.0}, 1000.0);
    const std::vector<std::size_t> runs = drive(rounds, {0.010, 0.014});
    CHECK(runs.size() == 2u * (1 + detail::kRoundsBeforePruning));
    CHECK(rounds.chosen() == 0);
    CHECK(rounds.reason().find("dropped as slower") != std::string::npos);
  }
  SECTION("another candidate 1% faster: the model's choice stays") {
    TuningRounds rounds({10.0, 10.0}, 1000.0);
    drive(rounds, {0.0100, 0.0099});
    CHECK(rounds.chosen() == 0);
    CHECK(rounds.reason().find("within 2% of candidate 2's 9.9 us") != std::string::npos);
    CHECK(rounds.reason().find("kept: 10.0 us (median of 7 runs)") != std::string::npos);
  }
  SECTION("kept within 2%, timed in batches: the reason names the batch (run 27's failure: it did not)") {
    TuningRounds rounds({10.0, 10.0}, 1000.0, 4);
    drive(rounds, {0.0100, 0.0099});
    CHECK(rounds.chosen() == 0);
    CHECK(rounds.reason().find("(median of 7 runs of 4 products), within 2%") != std::string::npos);
  }
}

TEST_CASE("tuning rounds: the budget bounds the time, and a budget too small measures nothing", "[tuning]") {
  SECTION("rounds stop when the next would pass the budget") {
    // 2 candidates of 1 ms, 1 ms of overhead per round, 7.5 ms budget: the warm-up ends at 3 ms, the first timed
    // round at 6 ms; a second would be estimated to end at 8 ms.
    TuningRounds rounds({1000.0, 1000.0}, 7.5);
    const std::vector<std::size_t> runs = drive(rounds, {1.0, 1.0}, 1.0);
    CHECK(runs.size() == 4u);
    CHECK(rounds.samples(0).size() == 1u);
    CHECK(rounds.reason().find("budget of 7.5 ms reached after 1 timed run") != std::string::npos);
  }
  SECTION("before the warm-up, the candidates predicted last are dropped until two rounds fit") {
    TuningRounds rounds({1000.0, 1000.0, 3000.0}, 5.0);
    drive(rounds, {1.0, 1.0, 3.0});
    CHECK(rounds.note(2).find("not measured: the budget of 5.0 ms") != std::string::npos);
    CHECK(rounds.samples(2).empty());
    CHECK_FALSE(rounds.samples(0).empty());
  }
  SECTION("no room for two candidates: nothing is timed and the model's choice stays") {
    TuningRounds rounds({1000.0, 1000.0}, 3.0);
    const std::vector<std::size_t> runs = drive(rounds, {1.0, 1.0}, 0.0, 1.0);
    CHECK(runs.empty());
    CHECK(rounds.chosen() == 0);
    CHECK(rounds.median_us(0) < 0);
    CHECK(rounds.reason() == "not measured (the budget of 3.0 ms leaves no room to compare candidates): the model's choice");
  }
}

TEST_CASE("tuning rounds: batches and evictions count in the estimates; the reason names the batch", "[tuning]") {
  SECTION("a timed round of batches with an eviction before each product must fit after the warm-up") {
    // Two 5 us candidates, 4 products a batch, 30 us of eviction each: the warm-up is 2 x 35 us, a timed round
    // 4 x (2 x 35 + 30) us, 0.47 ms together.
    TuningRounds tight({5.0, 5.0}, 0.45, 4, 30.0);
    CHECK(tight.next_round(0.0).empty());
    CHECK(tight.reason().find("leaves no room to compare candidates") != std::string::npos);
    TuningRounds fits({5.0, 5.0}, 0.5, 4, 30.0);
    CHECK(fits.next_round(0.0).size() == 2u);
    CHECK(fits.batch() == 4);
  }
  SECTION("the next round is estimated from the last one's duration where that is longer") {
    // Rounds of 2 x 10 us that take 5 ms on the clock (host work, event waits): after two timed rounds at 5.02 ms
    // each, a third would end past the 20 ms budget.
    TuningRounds rounds({10.0, 10.0}, 20.0);
    const std::vector<std::size_t> runs = drive(rounds, {0.010, 0.0101}, 5.0);
    CHECK(rounds.samples(0).size() == 2u);
    CHECK(runs.size() == 2u * 3);
    CHECK(rounds.reason().find("budget of 20.0 ms reached after 2 timed runs") != std::string::npos);
  }
  SECTION("times are per product; the reason says how many products a run has") {
    TuningRounds rounds({6.0, 7.0}, 1000.0, 7, 30.0);
    drive(rounds, {0.0061, 0.0052});
    CHECK(rounds.chosen() == 1);
    CHECK(rounds.median_us(1) == Approx(5.2));
    CHECK(rounds.reason().find("(medians of 7 runs of 7 products and 7 runs of 7 products)") != std::string::npos);
  }
}

TEST_CASE("tuning: stored choices are found by n, types and device; descriptions name what runs", "[tuning]") {
  using experimental::BandPaths;
  using experimental::TilePipeline;
  detail::TunedChoices store;
  const detail::TunedKey a{128, ElementType::f16, ElementType::f32, "NVIDIA H100 80GB HBM3"};
  detail::TunedKey b = a;
  b.n = 32;
  const TunedChoice tiles{BandPaths::tiles, true, TilePipeline::standard, true};
  const TunedChoice hybrid{BandPaths::hybrid, false, TilePipeline::deep, false};
  store.store({a, tiles, 29.5});
  store.store({b, hybrid, 12.0});
  REQUIRE(store.find(a));
  CHECK(store.find(a)->choice == tiles);
  CHECK(store.find(a)->measured_us == 29.5);
  detail::TunedKey other = a;
  other.device = "NVIDIA A100-SXM4-80GB";
  CHECK_FALSE(store.find(other));
  other = a;
  other.output = ElementType::f16;
  CHECK_FALSE(store.find(other));
  store.store({a, hybrid, 25.0});  // replaces
  CHECK(store.all().size() == 2u);
  CHECK(store.find(a)->choice == hybrid);
  const detail::TunedChoices copy = store;
  store.forget(a);
  CHECK_FALSE(store.find(a));
  CHECK(copy.find(a));

  CHECK(detail::describe_choice(tiles, 0, 100, false, false) == "tiles only, band groups");
  CHECK(detail::describe_choice(hybrid, 12, 100, true, true) == "hybrid (12 of 100 bands on CSR), long bands whole, deep pipeline");
  CHECK(detail::describe_choice({BandPaths::tiles, true, TilePipeline::standard, false}, 0, 100, true, true) ==
        "tiles only, long bands split, standard pipeline");
  CHECK(detail::describe_choice({BandPaths::csr, true, TilePipeline::standard, false}, 100, 100, false, true) ==
        "CSR only");
}

TEST_CASE("tuning: narrow vectors are candidates where they can run, and are measured where within reach",
          "[tuning][vectors]") {
  using experimental::BandPaths;
  detail::CandidateSpace space;
  space.vectors = true;
  std::vector<std::string> names;
  for (const TunedChoice& c : detail::candidate_choices(space)) names.push_back(text(c));
  CHECK(names == std::vector<std::string>{"tiles/split/standard", "tiles/whole/standard", "hybrid/split/standard",
                                          "hybrid/whole/standard", "hybrid_vectors/split/standard"});
  space.vectors_only = true;
  CHECK(detail::candidate_choices(space).back().paths == BandPaths::vectors);
  // The model's tile plan first; the best of each other path follows, a vector plan where predicted within 1.5x of
  // the best prediction (kMaxVectorPredictedRatio), any other within 4x.
  const std::vector<CandidateRank> ranks{{BandPaths::tiles, 30.0},          {BandPaths::tiles, 31.0},
                                         {BandPaths::hybrid, 100.0},        {BandPaths::hybrid, 101.0},
                                         {BandPaths::hybrid_vectors, 44.0}, {BandPaths::vectors, 46.0}};
  const std::vector<std::size_t> chosen = detail::select_candidates(ranks);
  CHECK(chosen == std::vector<std::size_t>{0, 2, 4, 1, 3});
  CHECK(std::find(chosen.begin(), chosen.end(), std::size_t{5}) == chosen.end());
  CHECK(detail::describe_choice({BandPaths::vectors, true, experimental::TilePipeline::standard, false}, 100, 100, false,
                                false) == "narrow vectors only");
  CHECK(detail::describe_choice({BandPaths::hybrid_vectors, true, experimental::TilePipeline::standard, false}, 7, 100,
                                false, false) == "hybrid with vectors (7 of 100 bands on CSR or vectors)");
  CHECK(std::string(experimental::band_paths_name(BandPaths::hybrid_vectors)) == "hybrid_vectors");
}
