// model_predict (CPU only): the cost model's predicted time of each bcsr24 method on one matrix, per n, for
// scripts/fit_cost_model.py to set beside measured times that were recorded without a prediction (the sweep, the
// earlier benchmark steps). It repeats the decisions an automatic plan drafts (device/plan_draft.hpp) for fp16 A
// and B on an assumed device (--sms, --l2-mib, --band-groups): where a plan differs on the GPU (another device, the
// tuner), the plan's own report is the authority, and bench_spmm writes that one into its CSV.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bcsr24/error.hpp"
#include "device/band_groups.hpp"
#include "device/cost_model.hpp"
#include "device/tile_schedule.hpp"
#include "format/band_csr.hpp"
#include "format/band_vectors.hpp"
#include "format/convert.hpp"
#include "cli.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/sm_limits.hpp"
#include "kernels/spmm_params.hpp"
#include "matrix_source.hpp"

namespace {

using namespace bcsr24;

/// The device the predictions are for: an H100 SXM unless the command line says otherwise (there is no device to
/// ask: this program runs on the CPU).
struct Assumed {
  int multiprocessors = 132;
  /// major * 10 + minor: the SM's shared memory and the kernels' register budgets (kernels/sm_limits.hpp), which
  /// decide the tile kernel's blocks per SM as on the device itself
  int compute_capability = 90;
  std::int64_t l2_bytes = std::int64_t(50) << 20;
  bool band_groups = true;  ///< compute capability 9.0
  bool csr_every_band = true;
};

/// The tile part's prediction for the bands `to_csr` leaves on tiles: one band per block (`one_band_ns`, the
/// model's throughput and latency), or the band-group kernel's where an automatic plan would group them.
double tile_part_ns(const Bcsr24Matrix& host, const std::vector<std::uint8_t>& to_csr, std::int32_t n,
                    const Assumed& device, double one_band_plus_csr_ns, double csr_part_ns, bool& grouped) {
  grouped = false;
  if (!device.band_groups || host.gathered() || n < detail::kGroupMinColumns) return one_band_plus_csr_ns;
  std::vector<std::int32_t> tile_rows;
  for (std::size_t b = 0; b < to_csr.size(); ++b)
    if (!to_csr[b]) tile_rows.push_back(static_cast<std::int32_t>(b));
  if (tile_rows.empty()) return one_band_plus_csr_ns;
  const detail::HostTileIndex sparse24{host.sparse24.row_ptr, host.sparse24.col_idx};
  const detail::HostTileIndex dense{host.dense.row_ptr, host.dense.col_idx};
  const detail::BandGroupSchedule schedule = detail::build_band_groups(tile_rows, sparse24, dense);
  if (!detail::band_groups_pay(schedule, n, device.multiprocessors)) return one_band_plus_csr_ns;
  grouped = true;
  return detail::band_groups_ns(schedule, n, device.multiprocessors) + csr_part_ns;
}

/// What the command line chose, beyond the matrix.
struct PredictOptions {
  std::string name, widths = "1,8,16,32,64,128,256", layout_text = "auto", reorder_text = "auto", csv_path;
  std::string csr_text = "all";
  std::string vector_bands_path;  ///< where to write each band's narrow-vector counts (for fitting their model)
  Assumed device;
  double l2_mib = 50.0;
};

int predict(const apps::MatrixSource& source, PredictOptions& o) {
  source.validate();
  Assumed& device = o.device;
  device.l2_bytes = static_cast<std::int64_t>(o.l2_mib * double(1 << 20));
  device.csr_every_band = o.csr_text == "all";
  const std::string name = o.name.empty() ? source.name() : o.name;
  const CsrMatrix csr = source.load();
  ConvertOptions options;
  options.layout = layout_from_name(o.layout_text);
  options.reorder = reordering_from_name(o.reorder_text);
  const Bcsr24Matrix host = convert_to_bcsr24(csr, options);
  const std::vector<detail::BandStats> stats = detail::band_stats(host);
  const std::vector<std::uint8_t> has_csr =
      device.csr_every_band ? std::vector<std::uint8_t>(stats.size(), 1)
                            : detail::csr_candidate_bands(stats, host.gathered(), host.cols, device.l2_bytes);
  // Narrow vectors: the upload's candidate copy for the hybrid, every band for vectors only (what
  // bench_spmm's auto_hybrid_vectors and auto_vectors run); none for split precision.
  const bool vectors = host.precision != Precision::split;
  const std::vector<detail::BandVectorCounts> vector_counts =
      vectors ? detail::band_vector_counts(host) : std::vector<detail::BandVectorCounts>{};
  const std::vector<std::uint8_t> has_vectors =
      vectors ? detail::vector_candidate_bands(stats, vector_counts, host.gathered(), host.cols, device.l2_bytes)
              : std::vector<std::uint8_t>{};

  if (!o.vector_bands_path.empty()) {
    std::ofstream bands(o.vector_bands_path);
    if (!bands) throw Error("cannot open " + o.vector_bands_path);
    bands << "# " << name << ' ' << layout_name(host.layout) << '/' << reordering_name(host.reordering) << ' '
          << host.tile_rows << " bands: groups, longest window's groups\n";
    for (const detail::BandVectorCounts& v : vector_counts) bands << v.groups << ' ' << v.longest_window_groups << '\n';
  }
  const bool new_csv = !o.csv_path.empty() && !std::filesystem::exists(o.csv_path);
  std::ofstream csv;
  if (!o.csv_path.empty()) {
    csv.open(o.csv_path, std::ios::app);
    if (!csv) throw Error("cannot open " + o.csv_path);
    if (new_csv) csv << "matrix,n,method,predicted_us\n";
  }
  auto emit = [&](std::int32_t n, const char* method, double ns, const char* note) {
    if (ns < 0) return;
    std::printf("%s,%d,%s,%.3f%s%s\n", name.c_str(), n, method, ns / 1e3, *note ? "  # " : "", note);
    if (csv.is_open()) csv << name << ',' << n << ',' << method << ',' << ns / 1e3 << '\n';
  };
  for (const std::int32_t n : apps::parse_int_list(o.widths)) {
    if (n < 1) throw apps::UsageError("--n values must be >= 1");
    const kernels::OperandMode mode = kernels::OperandMode::f16;
    const int width = kernels::slice_width_for(n, mode);
    // The tile kernel as an automatic plan looks it up (split_pipelined, fp32 C, the layout's B rows), its depth
    // and long-band split from the kernel table's blocks per SM on the assumed device.
    const kernels::TileKernelKey key{KernelKind::split_pipelined, mode, width, TilePipeline::standard,
                                     ElementType::f32, host.b_row_index(), false};
    const std::int32_t tiles_per_part =
        detail::tile_launch_for(stats, n, key, device.multiprocessors, kernels::sm_limits(device.compute_capability),
                                TilePipeline::automatic, true)
            .tiles_per_part;
    const detail::CostContext ctx{n, host.gathered(), host.cols, device.l2_bytes, tiles_per_part};
    const detail::PathChoice c = detail::choose_paths(stats, has_csr, ctx);
    bool grouped = false;
    const std::vector<std::uint8_t> none(stats.size(), 0);
    emit(n, "split_pipelined", c.tiles_only_ns, "");
    if (device.csr_every_band) emit(n, "csr_cuda_cores", c.csr_only_ns, "");
    emit(n, "auto_model", tile_part_ns(host, c.to_csr, n, device, c.chosen_ns, c.chosen_csr_ns, grouped),
         grouped ? "band groups" : "");
    emit(n, "auto_tiles", tile_part_ns(host, none, n, device, c.tiles_only_ns, 0.0, grouped),
         grouped ? "band groups" : "");
    emit(n, "auto_hybrid", tile_part_ns(host, c.hybrid_to_csr, n, device, c.hybrid_ns, c.hybrid_csr_ns, grouped),
         grouped ? "band groups" : "");
    emit(n, "auto_csr", c.csr_only_ns, "");
    if (vectors) {
      const std::vector<std::uint8_t> every(stats.size(), 1);
      emit(n, "auto_vectors", detail::choose_vector_paths(stats, vector_counts, c.hybrid_to_csr, every, ctx).vectors_only_ns,
           "");
      emit(n, "auto_hybrid_vectors", detail::choose_vector_paths(stats, vector_counts, c.hybrid_to_csr, has_vectors, ctx).hybrid_ns,
           "tile part one band per block");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"model_predict: the cost model's predictions for one matrix (CPU only), as CSV rows", "model_predict"};
  apps::MatrixSource source;
  PredictOptions o;
  return apps::run_main(
      app, argc, argv,
      [&](CLI::App& a) {
        source.add_options(a, apps::MatrixSource::FileOption::named, "seed for the synthetic matrix");
        a.add_option("--name", o.name, "label in the output (default: as bench_spmm names it)");
        a.add_option("--n", o.widths, "comma-separated widths of B")->capture_default_str();
        a.add_option("--layout", o.layout_text, "tile layout: aligned, condensed or auto (as bench_spmm)")
            ->capture_default_str()
            ->check(CLI::IsMember({"aligned", "condensed", "auto"}));
        a.add_option("--reorder", o.reorder_text, "row order: none, rcm or auto (as bench_spmm)")
            ->capture_default_str()
            ->check(CLI::IsMember({"none", "rcm", "auto"}));
        a.add_option("--csr", o.csr_text,
                     "bands with a CSR copy: all (bench_spmm when its methods include csr_cuda_cores) or candidates "
                     "(the library's default)")
            ->capture_default_str()
            ->check(CLI::IsMember({"all", "candidates"}));
        a.add_option("--sms", o.device.multiprocessors, "multiprocessors of the assumed device")->capture_default_str();
        a.add_option("--cc", o.device.compute_capability,
                     "compute capability of the assumed device, major * 10 + minor (its SM's shared memory and the "
                     "kernels' register budgets)")
            ->capture_default_str();
        a.add_option("--l2-mib", o.l2_mib, "L2 of the assumed device in MiB")->capture_default_str();
        a.add_option("--band-groups", o.device.band_groups, "whether the assumed device runs band groups (sm_90)")
            ->capture_default_str();
        a.add_option("--vector-bands", o.vector_bands_path,
                     "write each band's narrow-vector groups and its longer window's groups to this file (one line a "
                     "band, after a header line naming the matrix and layout)");
        a.add_option("--csv", o.csv_path, "append the rows to this CSV file (header matrix,n,method,predicted_us)");
      },
      [&] { return predict(source, o); });
}
