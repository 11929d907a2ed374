// Where a program's matrix comes from: a Matrix Market file, a preprocessed .b24 file, or one of the testkit's
// generators (XdYs, 3-D mesh, random graph, the structure classes of issue 33), chosen by the same options in every
// program.
#pragma once

#include <cstdint>
#include <string>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/matrix_market.hpp"
#include "cli.hpp"

namespace bcsr24::apps {

struct MatrixSource {
  enum class Kind { none, matrix_market, b24, xdys, mesh, graph, synth };
  /// How the file is named on the command line: spmm_run takes it as its positional argument, the
  /// benchmarks as --matrix FILE.
  enum class FileOption { positional, named };

  std::string path;        ///< .mtx, .mtx.gz (or .b24 where the program takes it)
  std::string xdys;        ///< --xdys NAME, e.g. 10d5s
  std::string mesh;        ///< --mesh SPEC (bcsr24_testkit/mesh.hpp)
  std::string graph;       ///< --graph SPEC (bcsr24_testkit/synthetic.hpp)
  std::string synth;       ///< --synth CLASS:ROWS[,...] (bcsr24_testkit/structure_classes.hpp)
  std::int32_t size = 16384;  ///< rows = cols of an XdYs matrix
  std::uint64_t seed = 1;     ///< seed of an XdYs matrix (and whatever else the program seeds with --seed)

  /// Adds the file option, --xdys, --mesh, --graph, --synth, --size and --seed (with `seed_help`) to `app`. The
  /// generators exclude each other; whether exactly one source was given is validate()'s to say.
  void add_options(CLI::App& app, FileOption file, const std::string& seed_help);
  /// @throw UsageError unless exactly one source was given, or when a --mesh/--graph/--synth spec or an --xdys name
  /// does not parse.
  void validate() const;

  Kind kind() const;
  /// The matrix's label: the file name without .mtx/.gz/.b24, or the generator's name.
  std::string name() const;

  /// Reads the Matrix Market file or runs the generator. `info` (may be null) receives a file's banner.
  /// @throw InvalidArgument for a .b24 file (the caller loads it as an operator) or no source; what the reader or
  ///        the generator throws.
  CsrMatrix load(const MatrixMarketOptions& mm_options = {}, MatrixMarketInfo* info = nullptr) const;
};

}  // namespace bcsr24::apps
