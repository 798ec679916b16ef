// The optimised seed beamformer on the CPU, bit-exact with the seed.
//
// Ideas, each exact:
//  1. Distances depend only on (i, j - 6k): a distance is computed once and shared, so a frame
//     costs a few million square roots instead of 3.7e10.
//  2. order(k, n) == order(n, k) (IEEE addition commutes), so each unordered pair is indexed once
//     and contributes rf[k][order] + rf[n][order].
//  3. AVX-512, lateral runs (the default where the CPU has it): for one depth i, laterals
//     j = 6q + r of one residue r share their orders: with u = q - k and v = q - n the order
//     depends on (i, r, u, v) only. So it is computed once per (u, v) for up to 128 laterals, and
//     with the channels transposed (rows[s][k]) the samples rf[q - u][o] of consecutive q are
//     consecutive: one masked vector load adds 32 laterals' terms (16-bit samples). Partial sums
//     stay in the samples' width only as long as they cannot overflow, then widen.
//  4. AVX2 (CPUs without AVX-512): four consecutive depths are handled together; their
//     orders for one (j, k, n) differ by at most 7 (a distance grows by at most one grid step per
//     depth step, so the order by at most 2 * 0.974 per step, plus 1 for rounding), so they lie in
//     one 8-sample window of each channel: one unaligned load and one permute replace four
//     gathers. Channels are zero-padded, so orders past the end read zeros, which is the seed's
//     `order < samples` test.
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
#include <bit>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/seed_cpu.hpp"

namespace usrecon::recon::seed {
namespace {

constexpr int kDepthBlock = 16;  // depths per task of the scalar and AVX2 kernels
// Approximate seconds-to-sample factor for t'; only ever used together with the margin test.
constexpr double kScale = Problem::kGridStepMm / Problem::kSoundSpeedMmPerUs * Problem::kSamplingMhz;
// x + 1.5 * 2^52 rounds x (|x| < 2^51) to an integer, ties to even, held in the low mantissa bits.
constexpr double kMagic = 6755399441055744.0;
// Lanes whose t' is within kMargin of a half-integer are recomputed exactly. The approximation
// error is < 4e-12, so 1e-7 is a wide safety factor at a cost of ~1 fallback per 5 million.
constexpr double kMargin = 1e-7;
constexpr int kPad = 48;  // zero samples after each channel (> the AVX2 kernel's 8-sample window)

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
  const int ir0 = block * kDepthBlock;
  const int lanes = std::min(kDepthBlock, c.w.ni - ir0);
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
// AVX-512: lateral runs. For one depth i and one lateral residue r (laterals j = 6q + r), a pixel
// q, channel k and element n have offsets u = q - k and v = q - n, and distances
// dist(i, 6u + r) and dist(i, 6v + r): the order o(u, v) is the same for every lateral q of the
// residue. With the channels transposed, rows[s * channels + k] = rf[k][s], the terms that
// consecutive q add for one (u, v), rf[q - u][o] + rf[q - v][o], are consecutive in memory: two
// masked vector loads serve 32 laterals (int16 samples) or 16 (int32), and the order is computed
// once per (u, v) and tile of 128 laterals, not once per pixel. A lane q takes the pair when both
// indices are channels: v <= q <= u + channels - 1 (u <= v by the symmetry), which the masks say.
// Row `samples` is zeros, and every order at or past it reads that row: the seed's
// `order < samples` test. Orders are t' = e_u + e_v with the margin fallback, as in the AVX2
// kernel.
//
// Sums: a lane's terms are first added in the samples' own width (int16 or int32), at most
// `term_capacity` = max / max|rf| of them, then widened into int32 (int16 samples) or int64
// accumulators: exact, and the int16 path moves 32 lanes per instruction.
#define USRECON_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))

constexpr int kTileLaterals = 128;  // laterals of one residue a task takes (the accumulators)

// Lanes of one sample type: 32 int16 or 16 int32 samples a vector. Partial sums in the samples'
// width, widened into accumulators twice as wide (int32 for int16 samples, int64 for int32).
template <class SampleType>
struct NarrowLanes {
  using Sample = SampleType;
  static constexpr bool kShort = sizeof(Sample) == 2;
  using Mask = std::conditional_t<kShort, __mmask32, __mmask16>;
  using Total = std::conditional_t<kShort, std::int32_t, std::int64_t>;
  static constexpr int kLanes = 64 / int(sizeof(Sample));
  static constexpr std::int64_t kPartialMax = std::numeric_limits<Sample>::max();
  struct Partial { __m512i s; };
  struct Acc { __m512i lo, hi; };  // the lower and upper half of the lanes, as Total
  USRECON_AVX512 static Mask all() { return Mask(~Mask{0}); }
  USRECON_AVX512 static __m512i load(Mask m, const Sample* p) {
    if constexpr (kShort) return _mm512_maskz_loadu_epi16(m, p);
    else return _mm512_maskz_loadu_epi32(m, p);
  }
  USRECON_AVX512 static __m512i add_samples(__m512i a, __m512i b) {
    if constexpr (kShort) return _mm512_add_epi16(a, b);
    else return _mm512_add_epi32(a, b);
  }
  // Half of the lanes (a 256-bit half) widened to Total, added to a Total vector.
  USRECON_AVX512 static __m512i add_widened(__m512i total, __m256i half) {
    if constexpr (kShort) return _mm512_add_epi32(total, _mm512_cvtepi16_epi32(half));
    else return _mm512_add_epi64(total, _mm512_cvtepi32_epi64(half));
  }
  USRECON_AVX512 static Partial zero() { return {_mm512_setzero_si512()}; }
  USRECON_AVX512 static void add(Partial& p, __m512i a) { p.s = add_samples(p.s, a); }
  USRECON_AVX512 static void add(Partial& p, __m512i a, __m512i b) { p.s = add_samples(p.s, add_samples(a, b)); }
  USRECON_AVX512 static void flush(Partial& p, Acc& acc) {
    acc.lo = add_widened(acc.lo, _mm512_castsi512_si256(p.s));
    acc.hi = add_widened(acc.hi, _mm512_extracti64x4_epi64(p.s, 1));
    p = zero();
  }
  USRECON_AVX512 static void store(const Acc& acc, Total* out) {
    _mm512_storeu_si512(out, acc.lo);
    _mm512_storeu_si512(out + kLanes / 2, acc.hi);
  }
};
using Int16Lanes = NarrowLanes<std::int16_t>;
using Int32Lanes = NarrowLanes<std::int32_t>;

// 32-bit samples beyond +-2^30 (no ADC's, but int32 allows them): two of them can overflow an
// int32 sum, so every term is widened to int64 as it is loaded.
struct Int32WideLanes : Int32Lanes {
  static constexpr std::int64_t kPartialMax = std::numeric_limits<std::int64_t>::max();
  struct Partial { __m512i lo, hi; };  // int64
  USRECON_AVX512 static Partial zero() { return {_mm512_setzero_si512(), _mm512_setzero_si512()}; }
  USRECON_AVX512 static void add(Partial& p, __m512i a) {
    p.lo = add_widened(p.lo, _mm512_castsi512_si256(a));
    p.hi = add_widened(p.hi, _mm512_extracti64x4_epi64(a, 1));
  }
  USRECON_AVX512 static void add(Partial& p, __m512i a, __m512i b) {
    add(p, a);
    add(p, b);
  }
  USRECON_AVX512 static void flush(Partial& p, Acc& acc) {
    acc.lo = _mm512_add_epi64(acc.lo, p.lo);
    acc.hi = _mm512_add_epi64(acc.hi, p.hi);
    p = zero();
  }
};

// Per-task scratch: distances and scaled distances of a tile's offsets u, and one u's row offsets.
struct RunScratch {
  std::vector<double> dist, scaled;
  std::vector<std::int32_t> row_offset;
  explicit RunScratch(int channels)
      : dist(std::size_t(channels + kTileLaterals + 8)),
        scaled(dist.size()),
        row_offset(std::size_t(channels + 8)) {}
};

// One task: depth index ii of the window, residue r, tile `tile` of that residue's laterals.
// rows: the transposed, zero-padded channels (rows[s * channels + k]; row `samples` is zeros).
template <class Lanes>
USRECON_AVX512 void lateral_runs_avx512(const Impl& c, const typename Lanes::Sample* rows, int ii,
                                        int r, int tile, std::int64_t term_capacity,
                                        RunScratch& scratch, double* out) {
  using Mask = typename Lanes::Mask;
  constexpr int kLanes = Lanes::kLanes;
  constexpr int kBlocks = kTileLaterals / kLanes;
  constexpr int step = Problem::kElementStep;
  const int channels = c.p.channels, samples = c.p.samples;
  // Laterals j = step q + r of the window, j0 <= j < j0 + nj (j0 >= 0, so the divisions floor).
  const int j_last = c.w.j0 + c.w.nj - 1;
  if (j_last < r) return;
  const int q_first = (c.w.j0 - r + step - 1) / step, q_last = (j_last - r) / step;
  const int qt = q_first + tile * kTileLaterals;  // the tile's first lateral
  if (qt > q_last) return;
  const int qe = std::min(q_last, qt + kTileLaterals - 1);
  const int i = c.w.i0 + ii;

  // Offsets u = q - k of the tile: [qt - channels + 1, qe].
  const int u_min = qt - channels + 1, u_max = qe;
  double* dist = scratch.dist.data();
  double* scaled = scratch.scaled.data();
  for (int u = u_min; u <= u_max; ++u) {
    dist[u - u_min] = distance(i, step * u + r);
    scaled[u - u_min] = dist[u - u_min] * kScale;
  }
  // Past u_max (read by the last vector of orders, whose lanes are masked): far beyond any row.
  for (int t = u_max - u_min + 1; t < u_max - u_min + 9; ++t) dist[t] = scaled[t] = 1e6;

  typename Lanes::Acc acc[kBlocks];
  for (auto& a : acc) a = {_mm512_setzero_si512(), _mm512_setzero_si512()};
  const __m512d magic = _mm512_set1_pd(kMagic);
  const __m512d limit = _mm512_set1_pd(0.5 - kMargin);
  const __m256i zero_row = _mm256_set1_epi32(samples), row_step = _mm256_set1_epi32(channels);
  std::int32_t* offset = scratch.row_offset.data();  // offset[v - u]: row start of o(u, v)

  for (int u = u_min; u <= u_max; ++u) {
    const int v_max = std::min(u + channels - 1, u_max);
    const double* dist_v = dist - u_min;  // dist_v[v]
    const __m512d e_u = _mm512_set1_pd(scaled[u - u_min]);
    int v_first = v_max + 1, v_last = u - 1;  // the v whose order is < samples
    for (int v0 = u; v0 <= v_max; v0 += 8) {
      const __m512d t = _mm512_add_pd(e_u, _mm512_loadu_pd(scaled + (v0 - u_min)));
      const __m512d y = _mm512_add_pd(t, magic);
      const __m512d off = _mm512_abs_pd(_mm512_sub_pd(t, _mm512_sub_pd(y, magic)));
      __m256i o = _mm512_cvtepi64_epi32(_mm512_castpd_si512(y));
      const int count = std::min(8, v_max - v0 + 1);
      if (_mm512_cmp_pd_mask(off, limit, _CMP_GT_OQ)) [[unlikely]] {
        alignas(32) std::int32_t exact[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(exact), o);
        for (int l = 0; l < count; ++l) exact[l] = sample_index(dist_v[u], dist_v[v0 + l]);
        o = _mm256_load_si256(reinterpret_cast<const __m256i*>(exact));
      }
      const unsigned in_range = _mm256_cmplt_epi32_mask(o, zero_row) & ((1u << count) - 1);
      if (in_range) {
        v_first = std::min(v_first, v0 + std::countr_zero(in_range));
        v_last = std::max(v_last, v0 + 31 - std::countl_zero(in_range));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(offset + (v0 - u)),
                          _mm256_mullo_epi32(_mm256_min_epi32(o, zero_row), row_step));
    }
    if (v_first > v_last) continue;
    const std::int32_t* offset_v = offset - u;  // offset_v[v]
    const int hi = std::min(u + channels - 1, qe) - qt;  // last lane (tile coordinates) k allows

#pragma GCC unroll 8
    for (int b = 0; b < kBlocks; ++b) {
      const int fb = b * kLanes;  // the block's first lane
      if (hi < fb || v_first > qt + fb + kLanes - 1) continue;
      const Mask hi_mask = hi >= fb + kLanes - 1 ? Lanes::all() : Mask(Lanes::all() >> (kLanes - 1 - (hi - fb)));
      const typename Lanes::Sample* pa = rows + (qt + fb - u);  // + row: rf[q - u][o] of lane 0
      const typename Lanes::Sample* pb = rows + (qt + fb);      // - v + row: rf[q - v][o]
      auto partial = Lanes::zero();
      std::int64_t room = term_capacity;
      int v = v_first;
      if (v == u) {  // k == n: the diagonal, once
        const int lo = u - qt - fb;
        if (lo < kLanes) {
          const Mask m = lo <= 0 ? hi_mask : Mask(hi_mask & (Lanes::all() << lo));
          Lanes::add(partial, Lanes::load(m, pa + offset_v[v]));
          --room;
        }
        ++v;
      }
      // The pairs v..v_stop, their lanes' mask mask_of(v), in stretches that fit the partial sum.
      const auto add_pairs = [&](int v_stop, auto mask_of) USRECON_AVX512 {
        while (v <= v_stop) {
          if (room < 2) { Lanes::flush(partial, acc[b]); room = term_capacity; }
          const int e = int(std::min<std::int64_t>(v_stop, v + room / 2 - 1));
          room -= 2 * (e - v + 1);
          for (; v <= e; ++v) {
            const int row = offset_v[v];
            const Mask m = mask_of(v);
            Lanes::add(partial, Lanes::load(m, pa + row), Lanes::load(m, pb - v + row));
          }
        }
      };
      // Lanes q >= v: all of the block while v <= its first lateral, then fewer.
      add_pairs(std::min(v_last, qt + fb), [&](int) USRECON_AVX512 { return hi_mask; });
      add_pairs(std::min(v_last, qt + fb + kLanes - 1),
                [&](int vv) USRECON_AVX512 { return Mask(hi_mask & (Lanes::all() << (vv - qt - fb))); });
      Lanes::flush(partial, acc[b]);
    }
  }

  alignas(64) typename Lanes::Total totals[kTileLaterals];
  for (int b = 0; b < kBlocks; ++b) Lanes::store(acc[b], totals + b * kLanes);
  for (int q = qt; q <= qe; ++q)
    out[std::size_t(step * q + r - c.w.j0) * c.w.ni + ii] = static_cast<double>(totals[q - qt]);
}

// ---------------------------------------------------------------------------------------------
// AVX2: four depths per vector (two per block); four orders differ by at most 7, so an 8-sample
// window and one vpermd suffice.
#define USRECON_AVX2 __attribute__((target("avx2,fma")))

template <bool kWide>
USRECON_AVX2 void block_avx2(const Impl& c, const std::int32_t* rfp, int block, int jj_begin,
                             int jj_end, double* out) {
  constexpr int kQuad = 4;
  const int ir_block = block * kDepthBlock;
  const __m256d magic = _mm256_set1_pd(kMagic);
  const __m256d limit = _mm256_set1_pd(0.5 - kMargin);
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256i low_halves = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const int samples = c.p.samples;
  const std::size_t row_step = std::size_t(Problem::kElementStep) * c.ni_pad;

  for (int jj = jj_begin; jj < jj_end; ++jj) {
    const int j = c.w.j0 + jj;
    for (int half = 0; half < kDepthBlock / kQuad; ++half) {
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
  return kernel == CpuKernel::Avx2 ? (wide ? block_avx2<true> : block_avx2<false>) : block_scalar;
}

// The AVX-512 kernel over a frame: the channels transposed into Lanes' sample type, then one task
// per (depth, residue, tile of 128 laterals).
template <class Lanes>
void beamform_lateral_runs(const Impl& c, std::span<const std::int32_t> rf, std::int64_t max_abs,
                           double* out, int threads) {
  using Sample = typename Lanes::Sample;
  const int channels = c.p.channels, samples = c.p.samples;
  // rows[s * channels + k] = rf[k][s] for s < samples; row `samples` and the pads are zeros. A
  // load's lanes reach at most a tile before a row and a tile plus a row past it (masked there).
  const std::size_t pad = std::size_t(kTileLaterals + channels);
  std::vector<Sample> buffer(pad + std::size_t(samples + 1) * channels + pad, Sample{0});
  Sample* rows = buffer.data() + pad;
  for (int k = 0; k < channels; ++k)
    for (int s = 0; s < samples; ++s)
      rows[std::size_t(s) * channels + k] = static_cast<Sample>(rf[std::size_t(k) * samples + s]);
  const std::int64_t term_capacity = Lanes::kPartialMax / std::max<std::int64_t>(max_abs, 1);

  constexpr int step = Problem::kElementStep;
  const int laterals_per_residue = (c.w.nj + step - 1) / step;
  const int tiles = (laterals_per_residue + kTileLaterals - 1) / kTileLaterals;
  const std::size_t per_depth = std::size_t(step) * tiles;
  kernels::parallel_for(std::size_t(c.w.ni) * per_depth, 1, threads, [&](std::size_t begin, std::size_t end) {
    RunScratch scratch(channels);
    for (std::size_t task = begin; task < end; ++task) {
      const int ii = int(task / per_depth), rest = int(task % per_depth);
      lateral_runs_avx512<Lanes>(c, rows, ii, rest % step, rest / step, term_capacity, scratch, out);
    }
  });
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
  if (kernel == CpuKernel::Avx512) return;  // it computes a task's few distances itself
  c.ni_pad = (window.ni + kDepthBlock - 1) / kDepthBlock * kDepthBlock;
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

  std::int64_t max_abs = 0;
  for (const std::int32_t value : rf) max_abs = std::max<std::int64_t>(max_abs, std::llabs(value));
  const std::int64_t terms = std::int64_t(c.p.channels) * c.p.channels;
  if (c.kernel == CpuKernel::Avx512) {
    // 16-bit lanes while a pair's sum fits int16 and a pixel's total int32; 32-bit lanes while a
    // pair's sum fits int32; past that (|rf| >= 2^30) every term widened to int64.
    if (max_abs <= std::numeric_limits<std::int16_t>::max() / 2 &&
        max_abs <= std::numeric_limits<std::int32_t>::max() / terms)
      beamform_lateral_runs<Int16Lanes>(c, rf, max_abs, out.data(), threads);
    else if (max_abs <= std::numeric_limits<std::int32_t>::max() / 2)
      beamform_lateral_runs<Int32Lanes>(c, rf, max_abs, out.data(), threads);
    else
      beamform_lateral_runs<Int32WideLanes>(c, rf, max_abs, out.data(), threads);
    return;
  }

  // Zero-padded copy, rfp[k * stride + s]: windows may reach past a channel's last sample.
  std::vector<std::int32_t> rfp(std::size_t(c.p.channels) * c.stride, 0);
  for (int k = 0; k < c.p.channels; ++k) {
    const std::int32_t* src = rf.data() + std::size_t(k) * c.p.samples;
    std::copy(src, src + c.p.samples, rfp.begin() + std::ptrdiff_t(k) * c.stride);
  }
  // int32 sums are safe when channels^2 terms of |value| <= max_abs cannot reach 2^31.
  const bool wide = max_abs > std::numeric_limits<std::int32_t>::max() / terms;
  const BlockFn block_fn = select_block(c.kernel, wide);

  // Tasks: (depth block, run of columns). Within a depth block, neighbouring columns reuse the
  // same table rows, so a task's working set stays in cache.
  constexpr int kColumnsPerTask = 32;
  const int n_blocks = c.ni_pad / kDepthBlock;
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
