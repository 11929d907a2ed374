// spmm_run's input (load.hpp).
#include "load.hpp"

#include <algorithm>
#include <filesystem>

#include "bcsr24/error.hpp"
#include "bcsr24_testkit/mesh.hpp"
#include "bcsr24_testkit/synthetic.hpp"
#include "text_report.hpp"

namespace bcsr24::spmm_run {

namespace {

using apps::MatrixSource;
using bench::ProgressLine;
using bench::Stopwatch;

/// Runs `step` with a progress line; records its time under `key` of the preprocessing section.
template <typename Step>
void timed(LoadedMatrix& loaded, bool show_progress, const std::string& label, const char* key, const Step& step) {
  ProgressLine progress(show_progress, label);
  Stopwatch watch;
  step();
  loaded.preprocessing_json[key] = watch.seconds();
  progress.done(watch.seconds());
}

/// What only this kind of source knows (file banner, generator parameters), after the common fields.
json source_details(const Options& options, const MatrixMarketInfo& info) {
  const MatrixSource& source = options.source;
  switch (source.kind()) {
    case MatrixSource::Kind::matrix_market:
      return {{"field", info.field}, {"symmetry", info.symmetry}, {"file_entries", info.entries},
              {"path", source.path}};
    case MatrixSource::Kind::b24: return {{"path", source.path}};
    case MatrixSource::Kind::mesh: {
      const MeshSpec spec = parse_mesh_spec(source.mesh);
      return {{"mesh", source.mesh}, {"dofs_per_node", spec.dofs_per_node}, {"stencil", spec.stencil},
              {"node_order", spec.order == NodeOrder::random ? "random" : "lexicographic"}};
    }
    case MatrixSource::Kind::xdys: {
      double dense = 0.0, sparse24 = 0.0;
      parse_xdys_name(source.xdys, dense, sparse24);
      return {{"xdys", source.xdys}, {"dense_percent", dense}, {"sparse24_percent", sparse24}};
    }
    case MatrixSource::Kind::graph: return {{"graph", source.graph}};
    case MatrixSource::Kind::synth: return {{"synth", source.synth}};
    case MatrixSource::Kind::none: break;
  }
  return json::object();
}

}  // namespace

LoadedMatrix load_matrix(const Options& options, bool show_progress, bool convert) {
  const MatrixSource& source = options.source;
  LoadedMatrix loaded;
  loaded.name = source.name();
  MatrixMarketInfo info;
  switch (source.kind()) {
    case MatrixSource::Kind::b24:
      // The library would fail too, but naming the file here gives the same message for .mtx and .b24.
      if (!std::filesystem::exists(source.path)) throw Error(source.path + ": no such file");
      loaded.source = "b24";
      timed(loaded, show_progress, "loading " + source.path, "load_s",
            [&] { loaded.op.emplace(SparseOperator::from_file(source.path)); });
      break;
    case MatrixSource::Kind::matrix_market: {
      loaded.source = "matrix_market";
      MatrixMarketOptions mm_options;
      mm_options.pattern_values = options.pattern_values == "random" ? MatrixMarketOptions::PatternValues::random
                                                                  : MatrixMarketOptions::PatternValues::ones;
      mm_options.seed = options.seed();
      timed(loaded, show_progress, "reading " + source.path, "read_s",
            [&] { loaded.original = source.load(mm_options, &info); });
      loaded.has_original = true;
      break;
    }
    default:
      loaded.source = "synthetic";
      timed(loaded, show_progress, "generating " + loaded.name, "generate_s", [&] { loaded.original = source.load(); });
      loaded.has_original = true;
      break;
  }
  const json details = source_details(options, info);
  if (!convert) return loaded;

  if (!loaded.op) {
    timed(loaded, show_progress, "converting to BCSR-2:4", "convert_s", [&] {
      loaded.op.emplace(SparseOperator::from_csr(loaded.original, options.storage.to_operator_options()));
    });
    loaded.layout_json = reports::layout_json(loaded.op->layout_report(), loaded.op->census());
  } else {
    loaded.layout_json = {{"layout", layout_name(loaded.op->census().layout)},
                          {"reordering", reordering_name(loaded.op->census().reordering)},
                          {"reason", "preprocessed .b24 file"}};
  }
  const SparseOperator& op = *loaded.op;
  if (!options.save_path.empty()) {
    timed(loaded, show_progress, "saving " + options.save_path, "save_s", [&] { op.save(options.save_path); });
    loaded.preprocessing_json["saved_to"] = options.save_path;
  }
  // Common fields first, then what only this kind of source knows (file, banner, generator).
  loaded.matrix_json = {
      {"name", loaded.name},
      {"source", loaded.source},
      {"rows", op.rows()},
      {"cols", op.cols()},
      {"nnz", op.nnz()},
      {"entries_with_explicit_zeros", loaded.has_original ? loaded.original.nnz() : op.nnz()},
      {"density", double(op.nnz()) / std::max(1.0, double(op.rows()) * double(op.cols()))}};
  loaded.matrix_json.update(details);
  return loaded;
}

}  // namespace bcsr24::spmm_run
