// The optimised seed beamformer on the CPU, bit-exact with the seed.
//
// Three ideas, each exact:
//  1. Distances depend only on (i, j - 6k): one table dist[dj][i] (depth contiguous) serves every
//     element, so a frame costs ~1.8 M square roots instead of 3.7e10.
//  2. order(k, n) == order(n, k) (IEEE addition commutes), so each unordered pair is indexed once
//     and contributes rf[k][order] + rf[n][order].
//  3. Sixteen consecutive depths are handled together (AVX-512; four with AVX2). Their orders for
//     one (j, k, n) differ by at most 30 (a distance grows by at most one grid step per depth
//     step, so the order by at most 2 * 0.974 per step, plus 1 for rounding), so the sixteen
//     samples lie in one 32-sample window of each channel: two unaligned loads and one
//     two-register permute replace sixteen gathers, and since order(k, n) == order(n, k) the
//     windows of channels k and n are summed before that single permute. Channels are
//     zero-padded, so orders past the end read zeros, which is the seed's `order < samples` test.
//
// The index itself is computed fast and checked: t' = e_k + e_n with e = dist * (0.05 / 1.54 * 30)
// differs from the seed's t = ((d_k + d_n) * 0.05) / 1.54 * 30 by at most ~8 ulp (< 4e-12 for
// t < 4000). round(t') can differ from round(t) only when t' lies that close to a half-integer,
// so any lane within kMargin of one is recomputed with the seed's exact expression.
#include <immintrin.h>

// GCC 12 reports its own _mm512_undefined_*() placeholders inside the AVX-512 intrinsics as
// "may be used uninitialized" (a known false positive); nothing of ours is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/seed_cpu.hpp"

namespace usrecon::recon::seed {
namespace {

constexpr int kLanes = 16;  // depths per block (two AVX-512 vectors of doubles)
// Approximate seconds-to-sample factor for t'; only ever used together with the margin test.
constexpr double kScale = Problem::kGridStepMm / Problem::kSoundSpeedMmPerUs * Problem::kSamplingMhz;
// x + 1.5 * 2^52 rounds x (|x| < 2^51) to an integer, ties to even, held in the low mantissa bits.
constexpr double kMagic = 6755399441055744.0;
// Lanes whose t' is within kMargin of a half-integer are recomputed exactly. The approximation
// error is < 4e-12, so 1e-7 is a wide safety factor at a cost of ~1 fallback per 5 million.
constexpr double kMargin = 1e-7;
constexpr int kPad = 48;  // zero samples after each channel (> the 32-sample window)

}  // namespace

struct SeedCpuBeamformer::Impl {
  Problem p;
  Window w;
  CpuKernel kernel = CpuKernel::Scalar;
  int ni_pad = 0;       // depths per table row: window depth rounded up to whole blocks
  int dj_min = 0;       // smallest j - 6k in the window
  int n_dj = 0;         // table rows
  int stride = 0;       // samples per zero-padded channel
  std::vector<double> dist;    // dist[(dj - dj_min) * ni_pad + (i - w.i0)] = distance(i, dj)
  std::vector<double> scaled;  // scaled[...] = dist[...] * kScale

  const double* dist_row(int dj) const { return dist.data() + std::size_t(dj - dj_min) * ni_pad; }
  const double* scaled_row(int dj) const {
    return scaled.data() + std::size_t(dj - dj_min) * ni_pad;
  }
  int exact_order(int dj_k, int dj_n, int ir) const {
    return sample_index(dist_row(dj_k)[ir], dist_row(dj_n)[ir]);
  }
};

namespace {

using Impl = SeedCpuBeamformer::Impl;

// ---------------------------------------------------------------------------------------------
// Scalar kernel: the exact index for every pair, with the distance table and the symmetry.
// Acc is int64: sums of channels^2 int32 values fit, and converting the total to double is exact.
void block_scalar(const Impl& c, const std::int32_t* rfp, int block, int jj_begin, int jj_end,
                  double* out) {
  const int ir0 = block * kLanes;
  const int lanes = std::min(kLanes, c.w.ni - ir0);
  for (int jj = jj_begin; jj < jj_end; ++jj) {
    const int j = c.w.j0 + jj;
    for (int l = 0; l < lanes; ++l) {
      const int ir = ir0 + l;
      std::int64_t acc = 0;
      for (int k = 0; k < c.p.channels; ++k) {
        const double dk = c.dist_row(j - Problem::kElementStep * k)[ir];
        const std::int32_t* rk = rfp + std::size_t(k) * c.stride;
        const int diag = sample_index(dk, dk);
        if (diag < c.p.samples) acc += rk[diag];
        for (int n = k + 1; n < c.p.channels; ++n) {
          const int order = sample_index(dk, c.dist_row(j - Problem::kElementStep * n)[ir]);
          if (order < c.p.samples) acc += std::int64_t{rk[order]} + rfp[std::size_t(n) * c.stride + order];
        }
      }
      out[std::size_t(jj) * c.w.ni + ir] = static_cast<double>(acc);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// AVX-512: eight depths per vector. kWide selects int64 accumulation; otherwise the frame's
// values are small enough (checked by the caller) that int32 sums cannot overflow.
#define USRECON_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))

// Orders of one (k, n) pair for eight depths from ir0, in the low 32 bits of each 64-bit lane.
USRECON_AVX512 inline __m512i orders_avx512(const Impl& c, __m512d ek, __m512d en, int dj_k,
                                            int dj_n, int ir0) {
  const __m512d magic = _mm512_set1_pd(kMagic);
  const __m512d t = _mm512_add_pd(ek, en);
  const __m512d y = _mm512_add_pd(t, magic);
  const __m512d off = _mm512_abs_pd(_mm512_sub_pd(t, _mm512_sub_pd(y, magic)));
  if (_mm512_cmp_pd_mask(off, _mm512_set1_pd(0.5 - kMargin), _CMP_GT_OQ)) [[unlikely]] {
    alignas(64) std::int64_t exact[8];
    for (int l = 0; l < 8; ++l) exact[l] = c.exact_order(dj_k, dj_n, ir0 + l);
    return _mm512_load_si512(exact);
  }
  return _mm512_castpd_si512(y);
}

template <bool kWide>
USRECON_AVX512 void block_avx512(const Impl& c, const std::int32_t* rfp, int block, int jj_begin,
                                 int jj_end, double* out) {
  const int ir0 = block * kLanes;
  const int lanes = std::min(kLanes, c.w.ni - ir0);
  const int samples = c.p.samples;
  const std::size_t row_step = std::size_t(Problem::kElementStep) * c.ni_pad;

  for (int jj = jj_begin; jj < jj_end; ++jj) {
    const int j = c.w.j0 + jj;
    const double* e0 = c.scaled_row(j) + ir0;  // element 0; element k is k * row_step lower
    __m512i acc32 = _mm512_setzero_si512();
    __m512i acc64_lo = _mm512_setzero_si512(), acc64_hi = _mm512_setzero_si512();
    for (int k = 0; k < c.p.channels; ++k) {
      const int dj_k = j - Problem::kElementStep * k;
      const double* ek_row = e0 - k * row_step;
      const __m512d ek_lo = _mm512_loadu_pd(ek_row), ek_hi = _mm512_loadu_pd(ek_row + 8);
      const std::int32_t* rk = rfp + std::size_t(k) * c.stride;
      for (int n = k; n < c.p.channels; ++n) {
        const int dj_n = j - Problem::kElementStep * n;
        const double* en_row = e0 - n * row_step;
        const __m512i o_lo = orders_avx512(c, ek_lo, _mm512_loadu_pd(en_row), dj_k, dj_n, ir0);
        // Lane 0 is the shallowest depth and so the smallest order of the block.
        const int base = _mm_cvtsi128_si32(_mm512_castsi512_si128(o_lo));
        if (base >= samples) continue;
        const __m512i o_hi = orders_avx512(c, ek_hi, _mm512_loadu_pd(en_row + 8), dj_k, dj_n, ir0 + 8);
        // Sixteen orders within 30 of the base: indices into a 32-sample window (two registers).
        const __m512i orders16 = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm512_cvtepi64_epi32(o_lo)), _mm512_cvtepi64_epi32(o_hi), 1);
        const __m512i rel = _mm512_sub_epi32(orders16, _mm512_set1_epi32(base));
        const __m512i wk0 = _mm512_loadu_si512(rk + base), wk1 = _mm512_loadu_si512(rk + base + 16);
        if (n == k) {
          const __m512i v = _mm512_permutex2var_epi32(wk0, rel, wk1);
          if constexpr (kWide) {
            acc64_lo = _mm512_add_epi64(acc64_lo, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)));
            acc64_hi = _mm512_add_epi64(acc64_hi, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1)));
          } else {
            acc32 = _mm512_add_epi32(acc32, v);
          }
          continue;
        }
        const std::int32_t* rn = rfp + std::size_t(n) * c.stride + base;
        const __m512i wn0 = _mm512_loadu_si512(rn), wn1 = _mm512_loadu_si512(rn + 16);
        if constexpr (kWide) {
          const __m512i vk = _mm512_permutex2var_epi32(wk0, rel, wk1);
          const __m512i vn = _mm512_permutex2var_epi32(wn0, rel, wn1);
          acc64_lo = _mm512_add_epi64(acc64_lo, _mm512_add_epi64(
              _mm512_cvtepi32_epi64(_mm512_castsi512_si256(vk)), _mm512_cvtepi32_epi64(_mm512_castsi512_si256(vn))));
          acc64_hi = _mm512_add_epi64(acc64_hi, _mm512_add_epi64(
              _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(vk, 1)),
              _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(vn, 1))));
        } else {
          acc32 = _mm512_add_epi32(acc32, _mm512_permutex2var_epi32(_mm512_add_epi32(wk0, wn0), rel,
                                                                    _mm512_add_epi32(wk1, wn1)));
        }
      }
    }
    alignas(64) double result[kLanes];
    if constexpr (kWide) {
      _mm512_store_pd(result, _mm512_cvtepi64_pd(acc64_lo));
      _mm512_store_pd(result + 8, _mm512_cvtepi64_pd(acc64_hi));
    } else {
      _mm512_store_pd(result, _mm512_cvtepi32_pd(_mm512_castsi512_si256(acc32)));
      _mm512_store_pd(result + 8, _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(acc32, 1)));
    }
    std::memcpy(out + std::size_t(jj) * c.w.ni + ir0, result, sizeof(double) * lanes);
  }
}

// ---------------------------------------------------------------------------------------------
// AVX2: four depths per vector (two per block); four orders differ by at most 7, so an 8-sample
// window and one vpermd suffice.
#define USRECON_AVX2 __attribute__((target("avx2,fma")))

template <bool kWide>
USRECON_AVX2 void block_avx2(const Impl& c, const std::int32_t* rfp, int block, int jj_begin,
                             int jj_end, double* out) {
  constexpr int kQuad = 4;
  const int ir_block = block * kLanes;
  const __m256d magic = _mm256_set1_pd(kMagic);
  const __m256d limit = _mm256_set1_pd(0.5 - kMargin);
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256i low_halves = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const int samples = c.p.samples;
  const std::size_t row_step = std::size_t(Problem::kElementStep) * c.ni_pad;

  for (int jj = jj_begin; jj < jj_end; ++jj) {
    const int j = c.w.j0 + jj;
    for (int half = 0; half < kLanes / kQuad; ++half) {
      const int ir0 = ir_block + half * kQuad;
      if (ir0 >= c.w.ni) break;
      const double* e0 = c.scaled_row(j) + ir0;
      __m128i acc32 = _mm_setzero_si128();
      __m256i acc64 = _mm256_setzero_si256();
      for (int k = 0; k < c.p.channels; ++k) {
        const int dj_k = j - Problem::kElementStep * k;
        const __m256d ek = _mm256_loadu_pd(e0 - k * row_step);
        const std::int32_t* rk = rfp + std::size_t(k) * c.stride;
        for (int n = k; n < c.p.channels; ++n) {
          const __m256d t = _mm256_add_pd(ek, _mm256_loadu_pd(e0 - n * row_step));
          const __m256d y = _mm256_add_pd(t, magic);
          const __m256d off = _mm256_andnot_pd(sign, _mm256_sub_pd(t, _mm256_sub_pd(y, magic)));
          // Low 32 bits of each 64-bit lane, compacted into the low four 32-bit lanes.
          __m256i o = _mm256_permutevar8x32_epi32(_mm256_castpd_si256(y), low_halves);
          if (_mm256_movemask_pd(_mm256_cmp_pd(off, limit, _CMP_GT_OQ))) [[unlikely]] {
            const int dj_n = j - Problem::kElementStep * n;
            alignas(32) std::int32_t exact[8] = {};
            for (int l = 0; l < kQuad; ++l) exact[l] = c.exact_order(dj_k, dj_n, ir0 + l);
            o = _mm256_load_si256(reinterpret_cast<const __m256i*>(exact));
          }
          const int base = _mm256_cvtsi256_si32(o);
          if (base >= samples) continue;
          const __m256i rel = _mm256_sub_epi32(o, _mm256_set1_epi32(base));
          const __m256i wk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rk + base));
          __m256i w = wk;
          if (n != k) {
            const __m256i wn = _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(rfp + std::size_t(n) * c.stride + base));
            if constexpr (kWide) {
              acc64 = _mm256_add_epi64(acc64, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(
                                                  _mm256_permutevar8x32_epi32(wn, rel))));
            } else {
              w = _mm256_add_epi32(wk, wn);
            }
          }
          const __m128i v = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(w, rel));
          if constexpr (kWide) acc64 = _mm256_add_epi64(acc64, _mm256_cvtepi32_epi64(v));
          else acc32 = _mm_add_epi32(acc32, v);
        }
      }
      alignas(32) double result[kQuad];
      if constexpr (kWide) {
        alignas(32) std::int64_t sums[kQuad];
        _mm256_store_si256(reinterpret_cast<__m256i*>(sums), acc64);
        for (int l = 0; l < kQuad; ++l) result[l] = static_cast<double>(sums[l]);
      } else {
        _mm256_store_pd(result, _mm256_cvtepi32_pd(acc32));
      }
      const int lanes = std::min(kQuad, c.w.ni - ir0);
      std::memcpy(out + std::size_t(jj) * c.w.ni + ir0, result, sizeof(double) * lanes);
    }
  }
}

using BlockFn = void (*)(const Impl&, const std::int32_t*, int, int, int, double*);

BlockFn select_block(CpuKernel kernel, bool wide) {
  switch (kernel) {
    case CpuKernel::Avx512: return wide ? block_avx512<true> : block_avx512<false>;
    case CpuKernel::Avx2: return wide ? block_avx2<true> : block_avx2<false>;
    default: return block_scalar;
  }
}

}  // namespace

std::string to_string(CpuKernel kernel) {
  switch (kernel) {
    case CpuKernel::Auto: return "auto";
    case CpuKernel::Avx512: return "avx512";
    case CpuKernel::Avx2: return "avx2";
    case CpuKernel::Scalar: return "scalar";
  }
  return "?";
}

bool cpu_supports(CpuKernel kernel) {
  __builtin_cpu_init();
  switch (kernel) {
    case CpuKernel::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
    case CpuKernel::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default: return true;
  }
}

SeedCpuBeamformer::SeedCpuBeamformer(const Problem& problem, const Window& window, CpuKernel kernel)
    : impl_(std::make_unique<Impl>()) {
  check_arguments(problem, window, std::size_t(problem.channels) * problem.samples,
                  std::size_t(window.ni) * window.nj);
  Impl& c = *impl_;
  c.p = problem;
  c.w = window;
  if (kernel == CpuKernel::Auto) {
    kernel = cpu_supports(CpuKernel::Avx512) ? CpuKernel::Avx512
             : cpu_supports(CpuKernel::Avx2) ? CpuKernel::Avx2
                                             : CpuKernel::Scalar;
  } else if (!cpu_supports(kernel)) {
    throw Error("seed CPU kernel '" + to_string(kernel) + "' is not supported by this CPU");
  }
  c.kernel = kernel;
  c.ni_pad = (window.ni + kLanes - 1) / kLanes * kLanes;
  c.dj_min = window.j0 - Problem::kElementStep * (problem.channels - 1);
  c.n_dj = window.j0 + window.nj - c.dj_min;
  c.stride = (problem.samples + kPad + 15) / 16 * 16;
  c.dist.resize(std::size_t(c.n_dj) * c.ni_pad);
  c.scaled.resize(c.dist.size());
  for (int r = 0; r < c.n_dj; ++r) {
    for (int ir = 0; ir < c.ni_pad; ++ir) {
      // Rows past the window's depth (padding) hold real distances too; their results are dropped.
      const double d = distance(window.i0 + ir, c.dj_min + r);
      c.dist[std::size_t(r) * c.ni_pad + ir] = d;
      c.scaled[std::size_t(r) * c.ni_pad + ir] = d * kScale;
    }
  }
}

SeedCpuBeamformer::~SeedCpuBeamformer() = default;
SeedCpuBeamformer::SeedCpuBeamformer(SeedCpuBeamformer&&) noexcept = default;
SeedCpuBeamformer& SeedCpuBeamformer::operator=(SeedCpuBeamformer&&) noexcept = default;
const Problem& SeedCpuBeamformer::problem() const { return impl_->p; }
const Window& SeedCpuBeamformer::window() const { return impl_->w; }
CpuKernel SeedCpuBeamformer::kernel() const { return impl_->kernel; }

void SeedCpuBeamformer::beamform(std::span<const std::int32_t> rf, std::span<double> out,
                                 int threads) const {
  const Impl& c = *impl_;
  check_arguments(c.p, c.w, rf.size(), out.size());

  // Zero-padded copy, rfp[k * stride + s]: windows may reach past a channel's last sample.
  std::vector<std::int32_t> rfp(std::size_t(c.p.channels) * c.stride, 0);
  std::int64_t max_abs = 0;
  for (int k = 0; k < c.p.channels; ++k) {
    const std::int32_t* src = rf.data() + std::size_t(k) * c.p.samples;
    std::copy(src, src + c.p.samples, rfp.begin() + std::ptrdiff_t(k) * c.stride);
    for (int s = 0; s < c.p.samples; ++s) max_abs = std::max<std::int64_t>(max_abs, std::llabs(src[s]));
  }
  // int32 sums are safe when channels^2 terms of |value| <= max_abs cannot reach 2^31.
  const std::int64_t terms = std::int64_t(c.p.channels) * c.p.channels;
  const bool wide = max_abs > std::numeric_limits<std::int32_t>::max() / terms;
  const BlockFn block_fn = select_block(c.kernel, wide);

  // Tasks: (depth block, run of columns). Within a depth block, neighbouring columns reuse the
  // same table rows, so a task's working set stays in cache.
  constexpr int kColumnsPerTask = 32;
  const int n_blocks = c.ni_pad / kLanes;
  const int n_column_runs = (c.w.nj + kColumnsPerTask - 1) / kColumnsPerTask;
  kernels::parallel_for(std::size_t(n_blocks) * n_column_runs, 1, threads,
                        [&](std::size_t begin, std::size_t end) {
                          for (std::size_t task = begin; task < end; ++task) {
                            const int block = int(task / n_column_runs);
                            const int run = int(task % n_column_runs);
                            const int jj_begin = run * kColumnsPerTask;
                            const int jj_end = std::min(c.w.nj, jj_begin + kColumnsPerTask);
                            block_fn(c, rfp.data(), block, jj_begin, jj_end, out.data());
                          }
                        });
}

void beamform_cpu(std::span<const std::int32_t> rf, const Problem& problem, const Window& window,
                  std::span<double> out, int threads, CpuKernel kernel) {
  SeedCpuBeamformer(problem, window, kernel).beamform(rf, out, threads);
}

}  // namespace usrecon::recon::seed
