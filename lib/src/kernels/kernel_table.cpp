// Lookups in the kernel table (kernel_table.hpp) and the device limits plans size the tile kernel's grid by.
#include "kernels/kernel_table.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "bcsr24/error.hpp"
#include "device/cuda_check.hpp"
#include "kernels/tile_geometry.hpp"

namespace bcsr24::kernels {

namespace {

const char* output_name(ElementType out) { return out == ElementType::f16 ? "fp16" : "fp32"; }

template <typename Entry, typename Key>
const Entry* find(const KernelTablePart<Entry>* parts, std::size_t part_count, const Key& key) noexcept {
  for (std::size_t p = 0; p < part_count; ++p)
    for (std::size_t i = 0; i < parts[p].count; ++i)
      if (parts[p].entries[i].key == key) return &parts[p].entries[i];
  return nullptr;
}

}  // namespace

bool operator==(const TileKernelKey& a, const TileKernelKey& b) noexcept {
  return a.kind == b.kind && a.mode == b.mode && a.slice_width == b.slice_width && a.pipeline == b.pipeline &&
         a.output == b.output && a.b_rows == b.b_rows && a.split_bands == b.split_bands;
}

bool operator==(const CsrKernelKey& a, const CsrKernelKey& b) noexcept {
  return a.mode == b.mode && a.output == b.output && a.shape.chunks == b.shape.chunks &&
         a.shape.nz_lanes == b.shape.nz_lanes && a.shape.scalar_b == b.shape.scalar_b &&
         a.shape.one_column == b.shape.one_column;
}

std::string describe(const TileKernelKey& key) {
  return std::string(kernel_name(key.kind)) + ", " + operand_mode_name(key.mode) + ", " +
         std::to_string(key.slice_width) + " columns, " + tile_pipeline_name(key.pipeline) + " pipeline, " +
         output_name(key.output) + " C, " + (key.b_rows == BRowIndex::implicit ? "implicit" : "full") +
         " B rows" + (key.split_bands ? ", split bands" : "");
}

std::string describe(const CsrKernelKey& key) {
  const char* read = key.shape.one_column ? "one column" : key.shape.scalar_b ? "B element by element" : "B chunks";
  return std::string("CSR, ") + operand_mode_name(key.mode) + ", " + output_name(key.output) + " C, " + read +
         ", " + std::to_string(key.shape.chunks) + " chunks x " + std::to_string(key.shape.nz_lanes) + " lanes";
}

const TileKernel* find_tile_kernel(const TileKernelKey& key) noexcept {
  const KernelTable& t = kernel_table();
  return find(t.tile_parts, t.tile_part_count, key);
}

const CsrKernel* find_csr_kernel(const CsrKernelKey& key) noexcept {
  const KernelTable& t = kernel_table();
  return find(t.csr_parts, t.csr_part_count, key);
}

const TileKernel& tile_kernel(const TileKernelKey& key) {
  if (const TileKernel* k = find_tile_kernel(key)) return *k;
  throw InvalidArgument("no tile kernel in the kernel table for " + describe(key) +
                        " (lib/src/kernels/generate_kernel_table.py lists the ones a plan may choose)");
}

const CsrKernel& csr_kernel(const CsrKernelKey& key) {
  if (const CsrKernel* k = find_csr_kernel(key)) return *k;
  throw InvalidArgument("no CSR kernel in the kernel table for " + describe(key) +
                        " (lib/src/kernels/generate_kernel_table.py lists the ones a plan may choose)");
}

int tile_blocks_per_sm(const TileKernel& kernel, SmLimits sm) noexcept {
  return blocks_per_sm(kernel.register_blocks(sm.compute_capability), kernel.shared_bytes, sm);
}

SmLimits device_sm_limits(int device) {
  SmLimits sm{};
  int major = 0, minor = 0;
  BCSR24_CUDA_CHECK(cudaDeviceGetAttribute(&sm.shared_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  BCSR24_CUDA_CHECK(cudaDeviceGetAttribute(&sm.reserved_per_block, cudaDevAttrReservedSharedMemoryPerBlock, device));
  BCSR24_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  BCSR24_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  sm.compute_capability = major * 10 + minor;
  return sm;
}

}  // namespace bcsr24::kernels
