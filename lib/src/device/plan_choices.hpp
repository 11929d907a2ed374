// The plan choices the kernels are instantiated for (internal): the public kernel kinds, output and B types, and
// the choices the plan makes itself: the tile pipeline's depth, band grouping and which bands run on CSR. The
// experimental header only lets a caller force the latter; internal code names them without its namespace.
#pragma once

#include "bcsr24/spmm_plan.hpp"
#include "bcsr24_experimental/plan_knobs.hpp"

namespace bcsr24 {

using experimental::BandGroups;
using experimental::BandPaths;
using experimental::PlanCandidate;
using experimental::PlanDiagnostics;
using experimental::PlanKnobs;
using experimental::TilePipeline;

}  // namespace bcsr24
