// The kernel table (lib/src/kernels/kernel_table.hpp, generated from generate_kernel_table.py): every kernel a plan
// can ask for is in it exactly once, and the block slots it gives the plans on an H100 are the ones the kernels'
// register budgets were designed for. Host code only: the entries' kernels are not launched here.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "device/plan_choices.hpp"
#include "format/bcsr24_matrix.hpp"
#include "bcsr24/error.hpp"
#include "kernels/csr_params.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/sm_limits.hpp"
#include "kernels/spmm_params.hpp"

using namespace bcsr24;
using kernels::OperandMode;

namespace {

/// The entries of a kernel's parts of the table, in table order.
template <typename Entry>
std::vector<const Entry*> entries_of(const kernels::KernelTablePart<Entry>* parts, std::size_t part_count) {
  std::vector<const Entry*> out;
  for (std::size_t p = 0; p < part_count; ++p)
    for (std::size_t i = 0; i < parts[p].count; ++i) out.push_back(&parts[p].entries[i]);
  return out;
}

std::vector<const kernels::TileKernel*> tile_entries() {
  return entries_of(kernels::kernel_table().tile_parts, kernels::kernel_table().tile_part_count);
}

std::vector<const kernels::CsrKernel*> csr_entries() {
  return entries_of(kernels::kernel_table().csr_parts, kernels::kernel_table().csr_part_count);
}

const OperandMode kModes[] = {OperandMode::f16, OperandMode::bf16, OperandMode::f16_f32b, OperandMode::bf16_f32b,
                              OperandMode::split_f32b};

/// Output types a plan allows with a mode (SpmmPlan: fp16 C only with fp16 A and fp16 B).
std::vector<ElementType> outputs_of(OperandMode mode) {
  if (mode == OperandMode::f16) return {ElementType::f32, ElementType::f16};
  return {ElementType::f32};
}

}  // namespace

TEST_CASE("the kernel table holds each key once, and lookups find that entry", "[kernel_table]") {
  const auto tiles = tile_entries();
  const auto csrs = csr_entries();
  CHECK(tiles.size() == 108);
  CHECK(csrs.size() == 198);
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    INFO(kernels::describe(tiles[i]->key));
    CHECK(tiles[i]->fn != nullptr);
    CHECK(tiles[i]->stages >= 1);
    CHECK(tiles[i]->shared_bytes > 0);
    CHECK(kernels::find_tile_kernel(tiles[i]->key) == tiles[i]);  // the first match is itself: no duplicate
  }
  for (const kernels::CsrKernel* c : csrs) {
    INFO(kernels::describe(c->key));
    CHECK(c->fn != nullptr);
    CHECK(kernels::find_csr_kernel(c->key) == c);
  }
  kernels::TileKernelKey missing;
  missing.kind = KernelKind::csr_cuda_cores;  // split_pipelined is the one tile kernel
  CHECK(kernels::find_tile_kernel(missing) == nullptr);
  CHECK_THROWS_AS(kernels::tile_kernel(missing), InvalidArgument);
}

TEST_CASE("every tile kernel a plan can ask for is in the table", "[kernel_table]") {
  // The plan's choices, stated here independently of the generator: kind (split_pipelined, the one tile kernel),
  // slice width of every n, output type, B-row index, split bands, and deep where the table says it differs
  // (then at 32 and 64 columns with fp16 or bf16 A and fp32 B only).
  std::set<const kernels::TileKernel*> asked;
  for (const KernelKind kind : {KernelKind::split_pipelined})
    for (const OperandMode mode : kModes) {
      for (std::int32_t n = 1; n <= 256; ++n)
        for (const ElementType out : outputs_of(mode))
          for (const BRowIndex rows : {BRowIndex::implicit, BRowIndex::full})
            for (const bool split : {false, true}) {
              kernels::TileKernelKey key{kind, mode, kernels::slice_width_for(n, mode), TilePipeline::standard, out,
                                         rows, split};
              INFO("n = " << n << ": " << kernels::describe(key));
              const kernels::TileKernel* standard = kernels::find_tile_kernel(key);
              REQUIRE(standard != nullptr);
              asked.insert(standard);
              key.pipeline = TilePipeline::deep;
              const kernels::TileKernel* deep = kernels::find_tile_kernel(key);
              const bool deep_expected = kind == KernelKind::split_pipelined &&
                                         (mode == OperandMode::f16_f32b || mode == OperandMode::bf16_f32b) &&
                                         key.slice_width >= 32;
              CHECK((deep != nullptr) == deep_expected);
              if (deep) {
                CHECK(deep->stages > standard->stages);
                asked.insert(deep);
              }
            }
    }
  CHECK(asked.size() == tile_entries().size());  // and nothing in the table that no plan asks for
}

TEST_CASE("every CSR kernel a plan can ask for is in the table", "[kernel_table]") {
  std::set<const kernels::CsrKernel*> asked;
  const double means[] = {0.0, 1.0, 3.9, 4.0, 7.9, 8.0, 15.0, 16.0, 31.0, 32.0, 64.0, 127.0, 128.0, 1000.0};
  for (const OperandMode mode : kModes)
    for (const ElementType out : outputs_of(mode))
      for (std::int32_t n = 1; n <= 300; ++n)
        for (const double mean : means)
          for (const std::int64_t rows : {std::int64_t(1), std::int64_t(100000), std::int64_t(1) << 31}) {
            const kernels::CsrKernelKey key{mode, out, kernels::csr_shape_for(n, mean, rows, 132)};
            INFO("n = " << n << ", " << rows << " rows of " << mean << " entries: " << kernels::describe(key));
            const kernels::CsrKernel* k = kernels::find_csr_kernel(key);
            REQUIRE(k != nullptr);
            asked.insert(k);
          }
  CHECK(asked.size() == csr_entries().size());
}

TEST_CASE("block slots per SM: the H100 budgets, and the A100's own shared memory", "[kernel_table]") {
  CHECK(kernels::sm_limits(90).shared_bytes == 228 * 1024);
  CHECK(kernels::sm_limits(80).shared_bytes == 164 * 1024);
  CHECK(kernels::sm_limits(89).shared_bytes == 100 * 1024);
  auto blocks = [](KernelKind kind, OperandMode mode, int width, TilePipeline pipeline, int cc) {
    const kernels::TileKernelKey key{kind, mode, width, pipeline, ElementType::f32, BRowIndex::implicit, false};
    return kernels::tile_blocks_per_sm(kernels::tile_kernel(key), kernels::sm_limits(cc));
  };
  const auto split = KernelKind::split_pipelined;
  const auto standard = TilePipeline::standard, deep = TilePipeline::deep;
  // fp16 and bf16: 9 blocks up to 32 columns, 5 at 64 on the H100 (docs/KERNELS.md, "Occupancy").
  for (const OperandMode mode : {OperandMode::f16, OperandMode::bf16}) {
    for (const int width : {8, 16, 32}) CHECK(blocks(split, mode, width, standard, 90) == 9);
    CHECK(blocks(split, mode, 64, standard, 90) == 5);
  }
  // The deep fp32-B pipelines: 5 blocks at 32 columns, 3 at 64 (shared memory).
  CHECK(blocks(split, OperandMode::f16_f32b, 32, deep, 90) == 5);
  CHECK(blocks(split, OperandMode::f16_f32b, 64, deep, 90) == 3);
  // Budgets lowered to remove spills (tile_geometry.hpp, register_blocks_per_sm).
  CHECK(blocks(split, OperandMode::f16_f32b, 32, standard, 90) == 7);
  CHECK(blocks(split, OperandMode::bf16_f32b, 32, standard, 90) == 8);
  CHECK(blocks(split, OperandMode::split_f32b, 32, standard, 90) == 5);
  // The A100's 164 KiB hold 6 blocks of the fp16 kernel's ~24 KiB, not 9.
  CHECK(blocks(split, OperandMode::f16, 32, standard, 80) == 6);
  CHECK(blocks(split, OperandMode::f16, 64, standard, 80) == 4);
}
