// The blocked GEMM compiled for AVX-512 (built with -mavx512f -mfma; called only when the CPU has
// AVX-512F). Micro-kernel 12 × 2 zmm vectors: 24 accumulators.
#include "gemm_blocked_impl.hpp"

namespace usrecon::kernels::detail {
void gemm_tile_avx512(const GemmTile<float>& t) { BlockedGemm<float, 64, 12, 2>::run(t); }
void gemm_tile_avx512(const GemmTile<double>& t) { BlockedGemm<double, 64, 12, 2>::run(t); }
}  // namespace usrecon::kernels::detail
