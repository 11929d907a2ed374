// Where a program's matrix comes from (matrix_source.hpp).
#include "matrix_source.hpp"

#include <filesystem>

#include <CLI/CLI.hpp>

#include "bcsr24/error.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24_testkit/structure_classes.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "cli.hpp"

namespace bcsr24::apps {

namespace {

bool has_suffix(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

XdYsSpec xdys_spec(const MatrixSource& source) {
  XdYsSpec spec;
  parse_xdys_name(source.xdys, spec.dense_percent, spec.sparse24_percent);
  spec.rows = spec.cols = source.size;
  spec.seed = source.seed;
  return spec;
}

}  // namespace

void MatrixSource::add_options(CLI::App& app, FileOption file, const std::string& seed_help) {
  if (file == FileOption::positional)
    app.add_option("matrix", path, "Matrix Market file (.mtx, .mtx.gz) or preprocessed matrix (.b24, see --save)");
  else
    app.add_option("--matrix", path, "Matrix Market file (.mtx, .mtx.gz)");
  auto* xdys_option = app.add_option("--xdys", xdys,
                                     "Synthetic thesis matrix instead of a file: XdYs = X% dense tiles, Y% 2:4 tiles "
                                     "(e.g. 10d5s)");
  auto* mesh_option = app.add_option("--mesh", mesh,
                                     "3-D mesh matrix instead of a file: "
                                     "NXxNYxNZ[,dofs=D][,stencil=7|27][,order=lex|random][,seed=S] (e.g. "
                                     "40x40x40,dofs=3,order=random)")
                          ->excludes(xdys_option);
  auto* graph_option = app.add_option("--graph", graph,
                                      "Random-graph matrix instead of a file (scattered, no block structure): "
                                      "ROWS[,cols=C][,degree=D][,power][,seed=S]")
                           ->excludes(xdys_option)
                           ->excludes(mesh_option);
  app.add_option("--synth", synth,
                 "Structure-class matrix instead of a file: "
                 "CLASS:ROWS[,cols=C][,degree=D][,count=K][,block=B][,width=W][,seed=S], CLASS one of arrowhead, "
                 "dense_rows, dense_cols, block_diagonal, power_law, short_rows, long_rows, least_squares, circuit "
                 "(e.g. arrowhead:46500)")
      ->excludes(xdys_option)
      ->excludes(mesh_option)
      ->excludes(graph_option);
  app.add_option("--size", size, "Rows = columns of the --xdys matrix")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->needs(xdys_option);
  app.add_option("--seed", seed, seed_help)->capture_default_str();
}

void MatrixSource::validate() const {
  const int given =
      int(!path.empty()) + int(!xdys.empty()) + int(!mesh.empty()) + int(!graph.empty()) + int(!synth.empty());
  if (given != 1)
    throw UsageError("give exactly one of a matrix file, --xdys NAME, --mesh SPEC, --graph SPEC or --synth SPEC");
  // A spec that does not parse is a usage error, found before anything is read.
  const auto check = [](const char* option, const auto& parse) {
    try {
      parse();
    } catch (const InvalidArgument& error) {
      throw UsageError(std::string(option) + ": " + error.what());
    }
  };
  if (!mesh.empty()) check("--mesh", [&] { mesh_nonzeros(parse_mesh_spec(mesh)); });
  if (!graph.empty()) check("--graph", [&] { parse_random_graph_spec(graph); });
  if (!synth.empty()) check("--synth", [&] { parse_structure_spec(synth); });
  if (!xdys.empty()) check("--xdys", [&] { xdys_spec(*this); });
}

MatrixSource::Kind MatrixSource::kind() const {
  if (!path.empty()) return has_suffix(path, ".b24") ? Kind::b24 : Kind::matrix_market;
  if (!xdys.empty()) return Kind::xdys;
  if (!mesh.empty()) return Kind::mesh;
  if (!graph.empty()) return Kind::graph;
  if (!synth.empty()) return Kind::synth;
  return Kind::none;
}

std::string MatrixSource::name() const {
  switch (kind()) {
    case Kind::matrix_market:
    case Kind::b24: {
      std::string stem = std::filesystem::path(path).filename().string();
      for (const char* suffix : {".gz", ".mtx", ".b24"})
        if (stem.size() > std::string(suffix).size() && has_suffix(stem, suffix))
          stem.erase(stem.size() - std::string(suffix).size());
      return stem;
    }
    case Kind::xdys: return xdys + "_" + std::to_string(size);
    case Kind::mesh: return mesh_name(parse_mesh_spec(mesh));
    case Kind::graph: return random_graph_name(parse_random_graph_spec(graph));
    case Kind::synth: return structure_name(parse_structure_spec(synth));
    case Kind::none: break;
  }
  return "";
}

CsrMatrix MatrixSource::load(const MatrixMarketOptions& mm_options, MatrixMarketInfo* info) const {
  switch (kind()) {
    case Kind::matrix_market:
      // The reader would fail too, but naming the file here gives one message for every kind of file.
      if (!std::filesystem::exists(path)) throw Error(path + ": no such file");
      return read_matrix_market(path, mm_options, info);
    case Kind::xdys: return generate_xdys(xdys_spec(*this));
    case Kind::mesh: return generate_mesh_matrix(parse_mesh_spec(mesh));
    case Kind::graph: return generate_random_graph(parse_random_graph_spec(graph));
    case Kind::synth: return generate_structure(parse_structure_spec(synth));
    case Kind::b24: throw InvalidArgument(path + ": a .b24 file holds a converted matrix, not CSR");
    case Kind::none: break;
  }
  throw InvalidArgument("give a matrix file, --xdys NAME, --mesh SPEC, --graph SPEC or --synth SPEC");
}

}  // namespace bcsr24::apps
