// Private to the kernels library: the ISA-specific entry points of the CPU blocked GEMM.
#pragma once

#include <cstdint>

namespace usrecon::kernels::detail {

/// One task of the blocked GEMM: rows [i0, i1) and columns [j0, j1) of c = a · b (row-major,
/// leading dimensions lda, ldb, ldc; inner dimension k). c is overwritten.
template <class T>
struct GemmTile {
  const T* a;
  const T* b;
  T* c;
  std::int64_t k, lda, ldb, ldc;
  std::int64_t i0, i1, j0, j1;
};

// One per instruction set, each compiled in its own file with its own -m flags
// (gemm_generic.cpp, gemm_avx2.cpp, gemm_avx512.cpp from gemm_blocked_impl.hpp).
void gemm_tile_generic(const GemmTile<float>& t);
void gemm_tile_generic(const GemmTile<double>& t);
void gemm_tile_avx2(const GemmTile<float>& t);
void gemm_tile_avx2(const GemmTile<double>& t);
void gemm_tile_avx512(const GemmTile<float>& t);
void gemm_tile_avx512(const GemmTile<double>& t);

}  // namespace usrecon::kernels::detail
