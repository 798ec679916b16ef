// The blocked GEMM for any x86-64 (SSE2) or other CPU: 16-byte vectors, 4 × 2 accumulators.
#include "gemm_blocked_impl.hpp"

namespace usrecon::kernels::detail {
void gemm_tile_generic(const GemmTile<float>& t) { BlockedGemm<float, 16, 4, 2>::run(t); }
void gemm_tile_generic(const GemmTile<double>& t) { BlockedGemm<double, 16, 4, 2>::run(t); }
}  // namespace usrecon::kernels::detail
