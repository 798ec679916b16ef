// Private to the kernels library: the shape of a batched row-major GEMM.
#pragma once

#include <cstdint>

namespace usrecon::kernels::detail {

/// c[b] = a[b] · b[b] for b < batch; a[b] is m×k (row stride k), b[b] k×n, c[b] m×n. The batch
/// strides are in elements; 0 repeats one matrix for every batch entry.
struct GemmShape {
  std::int64_t batch, m, n, k;
  std::int64_t stride_a, stride_b, stride_c;
};

}  // namespace usrecon::kernels::detail
