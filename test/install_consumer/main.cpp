// Outside consumer of the installed package: builds an operator from a small CSR and prints its census.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <bcsr24/bcsr24.hpp>

int main() {
  // 40 x 70 band with two nonzeros per row (columns r and r + 2): only 2:4 tiles, no dense ones.
  const std::int32_t rows = 40, cols = 70;
  std::vector<std::int32_t> row_ptr{0}, col_idx;
  std::vector<double> values;
  for (std::int32_t r = 0; r < rows; ++r) {
    for (std::int32_t c : {r, r + 2})
      if (c < cols) {
        col_idx.push_back(c);
        values.push_back(1.0 + r);
      }
    row_ptr.push_back(static_cast<std::int32_t>(col_idx.size()));
  }
  try {
    const bcsr24::SparseOperator a =
        bcsr24::SparseOperator::from_csr(rows, cols, row_ptr.data(), col_idx.data(), values.data());
    const bcsr24::TileCensus& census = a.census();
    std::printf("consumer: %d x %d, nnz %lld, tiles: %lld 2:4, %lld dense, %lld zero; scale 2^%d\n", a.rows(),
                a.cols(), static_cast<long long>(a.nnz()), static_cast<long long>(census.sparse24_tiles),
                static_cast<long long>(census.dense_tiles), static_cast<long long>(census.zero_tiles),
                a.scaling().exponent);
    const bcsr24::DeviceInfo device = bcsr24::query_device();
    std::printf("consumer: device %s\n", device.available ? device.name.c_str() : device.reason.c_str());
    if (census.nnz != rows * 2 || census.dense_tiles != 0 || census.sparse24_tiles == 0) {
      std::printf("consumer: unexpected census\n");
      return 1;
    }
  } catch (const bcsr24::Error& e) {
    std::printf("consumer: bcsr24 error: %s\n", e.what());
    return 1;
  }
  return 0;
}
