// The cache-blocked CPU GEMM (Goto/BLIS structure), included by one .cpp per instruction set.
//
// Loops: column panels of NC (packed B, L3) > KC slices of the inner dimension > row blocks of MC
// (packed A, L2) > NR-wide micro-panels of B (L1) > MR-tall strips of A > the micro-kernel, which
// keeps an MR × NR block of c in vector registers and does rank-1 updates from the packed panels.
// Vectors are GCC vector extensions, so each including file gets code for its own -m flags.
//
// Everything here has internal linkage and uses no std:: templates, so code compiled for AVX-512
// can never be picked by the linker for a caller on a machine without it.
#pragma once

#include <cstdint>
#include <new>

#include "../internal/gemm_cpu.hpp"

namespace {

using std::int64_t;

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// Aligned scratch memory for the packed panels.
template <class T>
struct Scratch {
  explicit Scratch(int64_t n)
      : p(static_cast<T*>(::operator new(static_cast<std::size_t>(n) * sizeof(T),
                                         std::align_val_t{64}))) {}
  ~Scratch() { ::operator delete(p, std::align_val_t{64}); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* p;
};

template <class T, int VB, int MR, int NV>
struct BlockedGemm {
  typedef T V __attribute__((vector_size(VB)));
  static constexpr int VL = VB / static_cast<int>(sizeof(T));
  static constexpr int NR = VL * NV;
  static constexpr int64_t KC = 256;
  static constexpr int64_t MC = MR * (sizeof(T) == 4 ? 24 : 16);
  static constexpr int64_t NC = 2048;

  static V loadu(const T* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void storeu(T* p, V v) { __builtin_memcpy(p, &v, sizeof v); }

  // c[0:mr, 0:nr] (+)= ap (kc × MR, packed) · bp (kc × NR, packed).
  static void micro(int64_t kc, const T* __restrict ap, const T* __restrict bp, T* c, int64_t ldc,
                    bool accumulate, int64_t mr, int64_t nr) {
    V s[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) s[i][v] = V{};
    for (int64_t p = 0; p < kc; ++p) {
      V b[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) b[v] = *reinterpret_cast<const V*>(bp + p * NR + v * VL);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const T a = ap[p * MR + i];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) s[i][v] += a * b[v];
      }
    }
    if (mr == MR && nr == NR) {
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          T* q = c + i * ldc + v * VL;
          storeu(q, accumulate ? loadu(q) + s[i][v] : s[i][v]);
        }
      return;
    }
    alignas(64) T tmp[MR][NR];
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) storeu(&tmp[i][v * VL], s[i][v]);
    for (int64_t i = 0; i < mr; ++i)
      for (int64_t j = 0; j < nr; ++j)
        c[i * ldc + j] = accumulate ? c[i * ldc + j] + tmp[i][j] : tmp[i][j];
  }

  // MR-tall strips of a[0:mc, 0:kc], each stored k-major (MR values per k), zero-padded.
  static void pack_a(const T* a, int64_t lda, int64_t mc, int64_t kc, T* ap) {
    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
      const int64_t mr = imin(MR, mc - i0);
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t i = 0; i < MR; ++i) *ap++ = i < mr ? a[(i0 + i) * lda + p] : T(0);
    }
  }

  // NR-wide strips of b[0:kc, 0:nc], each stored k-major (NR values per k), zero-padded.
  static void pack_b(const T* b, int64_t ldb, int64_t kc, int64_t nc, T* bp) {
    for (int64_t j0 = 0; j0 < nc; j0 += NR) {
      const int64_t nr = imin(NR, nc - j0);
      for (int64_t p = 0; p < kc; ++p) {
        const T* src = b + p * ldb + j0;
        for (int64_t j = 0; j < NR; ++j) *bp++ = j < nr ? src[j] : T(0);
      }
    }
  }

  static void run(const usrecon::kernels::detail::GemmTile<T>& t) {
    if (t.i1 <= t.i0 || t.j1 <= t.j0) return;
    if (t.k == 0) {
      for (int64_t i = t.i0; i < t.i1; ++i)
        for (int64_t j = t.j0; j < t.j1; ++j) t.c[i * t.ldc + j] = T(0);
      return;
    }
    const int64_t ncols = imin(NC, t.j1 - t.j0);
    Scratch<T> bp(KC * ((ncols + NR - 1) / NR) * NR);
    Scratch<T> ap(KC * MC);
    for (int64_t jc = t.j0; jc < t.j1; jc += NC) {
      const int64_t nc = imin(NC, t.j1 - jc);
      for (int64_t pc = 0; pc < t.k; pc += KC) {
        const int64_t kc = imin(KC, t.k - pc);
        pack_b(t.b + pc * t.ldb + jc, t.ldb, kc, nc, bp.p);
        for (int64_t ic = t.i0; ic < t.i1; ic += MC) {
          const int64_t mc = imin(MC, t.i1 - ic);
          pack_a(t.a + ic * t.lda + pc, t.lda, mc, kc, ap.p);
          for (int64_t jr = 0; jr < nc; jr += NR)
            for (int64_t ir = 0; ir < mc; ir += MR)
              micro(kc, ap.p + ir * kc, bp.p + jr * kc, t.c + (ic + ir) * t.ldc + jc + jr, t.ldc,
                    pc > 0, imin(MR, mc - ir), imin(NR, nc - jr));
        }
      }
    }
  }
};

}  // namespace
