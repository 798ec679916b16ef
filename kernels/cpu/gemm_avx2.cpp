// The blocked GEMM compiled for AVX2 + FMA (built with -mavx2 -mfma). Micro-kernel 6 × 2 ymm
// vectors: 12 accumulators of the 16 registers.
#include "gemm_blocked_impl.hpp"

namespace usrecon::kernels::detail {
void gemm_tile_avx2(const GemmTile<float>& t) { BlockedGemm<float, 32, 6, 2>::run(t); }
void gemm_tile_avx2(const GemmTile<double>& t) { BlockedGemm<double, 32, 6, 2>::run(t); }
}  // namespace usrecon::kernels::detail
