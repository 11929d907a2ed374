// The matrix a benchmark runs on: a Matrix Market file or one of the library's generators (XdYs, 3-D mesh, random
// graph, the structure classes of issue 33), chosen by the same command-line options in bench_spmm and bench_floor.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/matrix_market.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24_testkit/structure_classes.hpp"
#include "bcsr24_testkit/synthetic.hpp"

namespace bcsr24::bench {

struct MatrixSource {
  std::string matrix_path, xdys_name, mesh_text, graph_text, synth_text;
  std::int32_t size = 16384;  ///< rows = cols of an XdYs matrix
  std::uint64_t seed = 1;     ///< seed of an XdYs matrix

  /// Adds --matrix, --xdys, --mesh, --graph and --synth (at most one of them), --size and --seed to `app`.
  void add_options(CLI::App& app, const std::string& seed_help = "seed for the synthetic matrix") {
    auto* file = app.add_option("--matrix", matrix_path, "Matrix Market file");
    auto* xdys = app.add_option("--xdys", xdys_name, "synthetic matrix, e.g. 10d0s (X% dense, Y% 2:4 tiles)")
                     ->excludes(file);
    auto* mesh = app.add_option("--mesh", mesh_text,
                                "3-D mesh matrix, NXxNYxNZ[,dofs=D][,stencil=7|27][,order=lex|random][,seed=S]")
                     ->excludes(file)
                     ->excludes(xdys);
    auto* graph =
        app.add_option("--graph", graph_text,
                       "random-graph matrix (scattered, no block structure): ROWS[,cols=C][,degree=D][,power][,seed=S]")
            ->excludes(file)
            ->excludes(xdys)
            ->excludes(mesh);
    app.add_option("--synth", synth_text,
                   "structure-class matrix: CLASS:ROWS[,cols=C][,degree=D][,count=K][,block=B][,width=W][,seed=S], "
                   "CLASS one of arrowhead, dense_rows, dense_cols, block_diagonal, power_law, short_rows, long_rows, "
                   "least_squares, circuit (e.g. arrowhead:46500)")
        ->excludes(file)
        ->excludes(xdys)
        ->excludes(mesh)
        ->excludes(graph);
    app.add_option("--size", size, "rows = cols of the synthetic matrix")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--seed", seed, seed_help)->capture_default_str();
  }

  /// Reads or generates the matrix; sets `name` to its label (file stem, generator name) unless already set.
  /// @throw InvalidArgument when no source was given; what the reader or the generator throws.
  CsrMatrix load(std::string& name) const {
    if (!matrix_path.empty()) {
      if (name.empty()) name = std::filesystem::path(matrix_path).stem().string();
      return read_matrix_market(matrix_path);
    }
    if (!synth_text.empty()) {
      const StructureSpec spec = parse_structure_spec(synth_text);
      if (name.empty()) name = structure_name(spec);
      return generate_structure(spec);
    }
    if (!graph_text.empty()) {
      const RandomGraphSpec spec = parse_random_graph_spec(graph_text);
      if (name.empty()) name = random_graph_name(spec);
      return generate_random_graph(spec);
    }
    if (!mesh_text.empty()) {
      const MeshSpec spec = parse_mesh_spec(mesh_text);
      if (name.empty()) name = mesh_name(spec);
      return generate_mesh_matrix(spec);
    }
    if (!xdys_name.empty()) {
      XdYsSpec spec;
      parse_xdys_name(xdys_name, spec.dense_percent, spec.sparse24_percent);
      spec.rows = spec.cols = size;
      spec.seed = seed;
      if (name.empty()) name = xdys_name + "_" + std::to_string(size);
      return generate_xdys(spec);
    }
    throw InvalidArgument("give --matrix FILE, --xdys NAME, --mesh SPEC, --graph SPEC or --synth SPEC");
  }
};

}  // namespace bcsr24::bench
