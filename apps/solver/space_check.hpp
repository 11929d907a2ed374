// bcsr24_solve --check-spaces: the GPU space against the CPU space with the same inputs, a debugging aid for a new
// GPU or build.
#pragma once

#include <nlohmann/json.hpp>

#include "block_runs.hpp"
#include "problem.hpp"

namespace bcsr24::solver {

/// Runs the block solver (and the baseline) on the GPU space and on the CPU space with the same settings and
/// compares what they report iteration by iteration; prints the differences. Returns true when they agree within
/// what the rounding of the GPU's B (tiles) and of summation order explains.
bool check_spaces(const Problem& problem, const BlockRunSettings& settings, nlohmann::json& out);

}  // namespace bcsr24::solver
