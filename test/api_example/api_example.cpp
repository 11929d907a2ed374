// The complete example of docs/API.md (kept identical to the doc by the api_example_doc test): build a
// matrix from CSR arrays, inspect its census and fp16 scaling, upload once, multiply many times on a stream.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_runtime_api.h>

#include <bcsr24/bcsr24.hpp>

#define CUDA_OK(call)                                                                      \
  do {                                                                                     \
    const cudaError_t status = (call);                                                     \
    if (status != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(status));          \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int main() {
  // A: the 5-point Laplacian of a 100 x 100 grid (10,000 rows), in CSR with 32-bit indices.
  const std::int32_t grid = 100, rows = grid * grid;
  std::vector<std::int32_t> row_ptr{0}, col_idx;
  std::vector<double> values;
  for (std::int32_t i = 0; i < grid; ++i)
    for (std::int32_t j = 0; j < grid; ++j) {
      const std::int32_t r = i * grid + j;
      const std::int32_t neighbours[5] = {r - grid, r - 1, r, r + 1, r + grid};
      const bool keep[5] = {i > 0, j > 0, true, j + 1 < grid, i + 1 < grid};
      for (int k = 0; k < 5; ++k)
        if (keep[k]) {
          col_idx.push_back(neighbours[k]);
          values.push_back(neighbours[k] == r ? 4.0 : -1.0);
        }
      row_ptr.push_back(static_cast<std::int32_t>(col_idx.size()));
    }

  try {
    // Preprocess once: tiling, 2:4 classification, fp16 conversion (with a power-of-two scale if needed).
    const bcsr24::SparseOperator a =
        bcsr24::SparseOperator::from_csr(rows, rows, row_ptr.data(), col_idx.data(), values.data());
    const bcsr24::TileCensus& census = a.census();
    std::printf("A: %d x %d, %lld nonzeros; tiles: %lld 2:4, %lld dense (2:4 share %.2f); fp16 scale 2^%d\n",
                a.rows(), a.cols(), static_cast<long long>(a.nnz()), static_cast<long long>(census.sparse24_tiles),
                static_cast<long long>(census.dense_tiles), census.sparse24_share(), a.scaling().exponent);

    const bcsr24::DeviceInfo device = bcsr24::query_device();
    if (!device.available) {
      std::printf("no usable GPU (%s): stopping before the multiply\n", device.reason.c_str());
      return 0;
    }

    // Upload once and make a plan for B and C of n columns (the plan owns any workspace).
    const std::int32_t n = 16;
    const bcsr24::SpmmPlan plan = a.make_plan(n);

    // B: fp16, rows x n, row-major; C: float, rows x n, row-major. Both live on the device.
    std::vector<bcsr24::fp16_t> b_host(static_cast<std::size_t>(rows) * n);
    for (std::size_t i = 0; i < b_host.size(); ++i) b_host[i] = bcsr24::float_to_fp16(float(i % 7) - 3.0f);
    void* b = nullptr;
    void* c = nullptr;
    cudaStream_t stream = nullptr;
    CUDA_OK(cudaMalloc(&b, b_host.size() * sizeof(bcsr24::fp16_t)));
    CUDA_OK(cudaMalloc(&c, b_host.size() * sizeof(float)));
    CUDA_OK(cudaStreamCreate(&stream));
    CUDA_OK(cudaMemcpyAsync(b, b_host.data(), b_host.size() * sizeof(bcsr24::fp16_t), cudaMemcpyHostToDevice,
                            stream));

    // Multiply many times: C = 1 * A * B + 0 * C, enqueued on the stream without host synchronisation.
    for (int repetition = 0; repetition < 10; ++repetition) plan.run(static_cast<const bcsr24::fp16_t*>(b), n, c, n, 1.0f, 0.0f, stream);

    std::vector<float> c_host(b_host.size());
    CUDA_OK(cudaMemcpyAsync(c_host.data(), c, c_host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaFree(b));
    CUDA_OK(cudaFree(c));
    CUDA_OK(cudaStreamDestroy(stream));

    // Check against a double-precision product on the host (this A and B are exact in fp16).
    double max_error = 0.0;
    for (std::int32_t r = 0; r < rows; ++r)
      for (std::int32_t j = 0; j < n; ++j) {
        double expected = 0.0;
        for (std::int32_t p = row_ptr[r]; p < row_ptr[r + 1]; ++p)
          expected += values[p] * bcsr24::fp16_to_float(b_host[std::size_t(col_idx[p]) * n + j]);
        max_error = std::fmax(max_error, std::fabs(expected - c_host[std::size_t(r) * n + j]));
      }
    std::printf("C = A * B on %s: max abs error %.3g\n", device.name.c_str(), max_error);
    return max_error == 0.0 ? 0 : 1;
  } catch (const bcsr24::Error& e) {  // every bcsr24 exception derives from bcsr24::Error
    std::fprintf(stderr, "bcsr24 error: %s\n", e.what());
    return 1;
  }
}
