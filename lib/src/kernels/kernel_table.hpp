// The kernel table: every instantiation of the tile kernel and of the CSR kernel that a plan may choose, each with
// the key the plan looks it up by. The table is declared in generate_kernel_table.py, which writes the translation
// units that compile it into the build tree (BUILD/lib/kernels_generated/); a plan finds its kernels here once and
// launches them directly.
#pragma once

#include <cstddef>
#include <string>

#include "device/plan_choices.hpp"
#include "format/bcsr24_matrix.hpp"
#include "kernels/csr_params.hpp"
#include "kernels/sm_limits.hpp"
#include "kernels/spmm_params.hpp"

namespace bcsr24::kernels {

/// What a plan asks of the tile kernel.
struct TileKernelKey {
  KernelKind kind = KernelKind::split_pipelined;   ///< split_pipelined (the one tile kernel)
  OperandMode mode = OperandMode::f16;
  int slice_width = 8;                              ///< 8, 16, 32 or 64 (slice_width_for)
  TilePipeline pipeline = TilePipeline::standard;   ///< standard or deep (resolved by the plan)
  ElementType output = ElementType::f32;
  BRowIndex b_rows = BRowIndex::implicit;
  bool split_bands = false;                         ///< the schedule has parts of split bands
};

/// One tile-kernel instantiation: its key, the kernel, and the geometry the plan needs.
struct TileKernel {
  TileKernelKey key;
  void (*fn)(SpmmParams) = nullptr;
  int shared_bytes = 0;     ///< dynamic shared memory per block
  int stages = 0;           ///< pipeline stages per warp of the dense loop (1: no pipelining)
  /// Blocks per SM its register budget allows on compute capability cc (tile_geometry.hpp)
  int (*register_blocks)(int cc) = nullptr;
};

/// What a plan asks of the CSR kernel.
struct CsrKernelKey {
  OperandMode mode = OperandMode::f16;
  ElementType output = ElementType::f32;
  CsrShape shape;
};

struct CsrKernel {
  CsrKernelKey key;
  void (*fn)(CsrSpmmParams) = nullptr;
};

bool operator==(const TileKernelKey& a, const TileKernelKey& b) noexcept;
bool operator==(const CsrKernelKey& a, const CsrKernelKey& b) noexcept;
/// One line naming every field, for error messages and test output.
std::string describe(const TileKernelKey& key);
std::string describe(const CsrKernelKey& key);

/// A run of consecutive table entries (one generated translation unit's).
template <typename Entry>
struct KernelTablePart {
  const Entry* entries;
  std::size_t count;
};

/// Every entry of the table, part by part (kernel_table_parts.cpp, generated into the build tree).
struct KernelTable {
  const KernelTablePart<TileKernel>* tile_parts;
  std::size_t tile_part_count;
  const KernelTablePart<CsrKernel>* csr_parts;
  std::size_t csr_part_count;
};
const KernelTable& kernel_table() noexcept;

/// The entry of `key`, or null where the table has none.
const TileKernel* find_tile_kernel(const TileKernelKey& key) noexcept;
const CsrKernel* find_csr_kernel(const CsrKernelKey& key) noexcept;
/// The same, or InvalidArgument naming the key (a plan asked for a kernel the table does not hold).
const TileKernel& tile_kernel(const TileKernelKey& key);
const CsrKernel& csr_kernel(const CsrKernelKey& key);

/// Blocks of `kernel` one SM of `sm` holds at once: its register budget, or fewer where shared memory admits fewer.
int tile_blocks_per_sm(const TileKernel& kernel, SmLimits sm) noexcept;

/// Sets the kernel's dynamic shared-memory attribute (once per plan). Loads the kernel where it is not loaded yet
/// (CUDA loads a kernel at its first use in a process).
void configure_tile_kernel(const TileKernel& kernel);
/// Loads the CSR kernel where it is not loaded yet (what its first launch would otherwise do).
void load_csr_kernel(const CsrKernel& kernel);
/// Enqueues the kernel over params.tile_rows x params.n_slices blocks; checks the launch with cudaGetLastError.
void launch_tile_kernel(const TileKernel& kernel, const SpmmParams& params, cudaStream_t stream);
/// Enqueues the CSR kernel (nothing when there are no rows); checks the launch without synchronising.
void launch_csr_kernel(const CsrKernel& kernel, const CsrSpmmParams& params, cudaStream_t stream);

}  // namespace bcsr24::kernels
