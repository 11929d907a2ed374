// bcsr24_solve --solver legacy (and the distributed runs, --gpus, --mpi): flexible CG in fp64 with a block CG in
// fp32 inside, on one GPU, the CPU or several GPUs; its warm-up, reports (text and JSON) and the comparison of its
// two inner backends.
#pragma once

#include <nlohmann/json.hpp>

#include "problem.hpp"
#include "solve_options.hpp"

namespace bcsr24::ranks {
class Session;  // rank_session.hpp (builds with NCCL); only null pointers to it otherwise
}

namespace bcsr24::solver {

/// Runs the legacy solver with each inner backend the options ask for, prints the reports and writes the JSON
/// (`matrix_json` gains the bcsr24 census). `mpi`: this process's MPI session (--mpi), else null; under MPI every
/// process calls it and only the root writes the JSON. Returns 0, or kExitNotConverged when a run did not
/// converge.
int run_legacy(const Options& o, const Problem& problem, nlohmann::json& matrix_json, const ranks::Session* mpi);

}  // namespace bcsr24::solver
