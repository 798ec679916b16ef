// The optimised seed beamformer on the CPU, bit-exact with the seed.
//
// Ideas, each exact:
//  1. Distances depend only on (i, j - 6k): a distance is computed once and shared, so a frame
//     costs a few million square roots instead of 3.7e10.
//  2. order(k, n) == order(n, k) (IEEE addition commutes), so each unordered pair is indexed once
//     and contributes rf[k][order] + rf[n][order].
//  3. Lateral runs (AVX-512, and AVX2 where the CPU lacks it): for one depth i, laterals
//     j = 6q + r of one residue r share their orders: with u = q - k and v = q - n the order
//     depends on (i, r, u, v) only. So it is computed once per (u, v) for a tile of laterals, and
//     with the channels transposed (rows[s][k]) the samples rf[q - u][o] of consecutive q are
//     consecutive: one vector load adds 32 laterals' terms (AVX-512, 16-bit samples). Partial
//     sums stay in the samples' width only as long as they cannot overflow, then widen. The
//     scalar kernel is the plain loop with ideas 1 and 2, for CPUs with neither.
//
// The index itself is computed fast and checked: t' = e_k + e_n with e = dist * (0.05 / 1.54 * 30)
// differs from the seed's t = ((d_k + d_n) * 0.05) / 1.54 * 30 by at most ~8 ulp (< 4e-12 for
// t < 4000). round(t') can differ from round(t) only when t' lies that close to a half-integer,
// so any lane within kMargin of one is recomputed with the seed's exact expression.
#include <immintrin.h>

// GCC 12 reports its own _mm512_undefined_*() placeholders inside the AVX-512 intrinsics as
// "may be used uninitialized" (a known false positive); nothing of ours is uninitialised.
#if !defined(__clang__)  // clang has no such warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "instruction_set_region.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/seed_cpu.hpp"

namespace usrecon::recon::seed {
namespace {

constexpr int kDepthBlock = 16;  // depths per task of the scalar kernel
// Approximate seconds-to-sample factor for t'; only ever used together with the margin test.
constexpr double kScale = Problem::kGridStepMm / Problem::kSoundSpeedMmPerUs * Problem::kSamplingMhz;
// x + 1.5 * 2^52 rounds x (|x| < 2^51) to an integer, ties to even, held in the low mantissa bits.
constexpr double kMagic = 6755399441055744.0;
// Lanes whose t' is within kMargin of a half-integer are recomputed exactly. The approximation
// error is < 4e-12, so 1e-7 is a wide safety factor at a cost of ~1 fallback per 5 million.
constexpr double kMargin = 1e-7;

}  // namespace

struct SeedCpuBeamformer::Impl {
  Problem p;
  Window w;
  CpuKernel kernel = CpuKernel::Scalar;
  // The scalar kernel's distance table (the vector kernels compute a task's few hundred).
  int ni_pad = 0;  // depths per table row: window depth rounded up to whole blocks
  int dj_min = 0;  // smallest j - 6k in the window
  int n_dj = 0;    // table rows
  std::vector<double> dist;  // dist[(dj - dj_min) * ni_pad + (i - w.i0)] = distance(i, dj)

  const double* dist_row(int dj) const { return dist.data() + std::size_t(dj - dj_min) * ni_pad; }
};

namespace {

using Impl = SeedCpuBeamformer::Impl;

// ---------------------------------------------------------------------------------------------
// Scalar kernel: the exact index for every pair, with the distance table and the symmetry.
// Acc is int64: sums of channels^2 int32 values fit, and converting the total to double is exact.
// rf[k * samples + s], the frame as given.
void block_scalar(const Impl& c, const std::int32_t* rf, int block, int jj_begin, int jj_end,
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
        const std::int32_t* rk = rf + std::size_t(k) * c.p.samples;
        const int diag = sample_index(dk, dk);
        if (diag < c.p.samples) acc += rk[diag];
        for (int n = k + 1; n < c.p.channels; ++n) {
          const int order = sample_index(dk, c.dist_row(j - Problem::kElementStep * n)[ir]);
          if (order < c.p.samples) acc += std::int64_t{rk[order]} + rf[std::size_t(n) * c.p.samples + order];
        }
      }
      out[std::size_t(jj) * c.w.ni + ir] = static_cast<double>(acc);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Lateral runs (AVX-512 and AVX2). For one depth i and one lateral residue r (laterals
// j = 6q + r), a pixel q, channel k and element n have offsets u = q - k and v = q - n, and
// distances dist(i, 6u + r) and dist(i, 6v + r): the order o(u, v) is the same for every lateral
// q of the residue. With the channels transposed, rows[s * channels + k] = rf[k][s], the terms
// that consecutive q add for one (u, v), rf[q - u][o] + rf[q - v][o], are consecutive in memory:
// two vector loads serve 32 laterals (AVX-512, int16 samples), and the order is computed once per
// (u, v) and tile of laterals, not once per pixel. A lane q takes the pair when both indices are
// channels: v <= q <= u + channels - 1 (u <= v by the symmetry), which the lane masks say. Row
// `samples` is zeros, and every order at or past it reads that row: the seed's
// `order < samples` test. Orders are t' = e_u + e_v with the margin fallback.
//
// Sums: a lane's terms are first added in the samples' own width (int16 or int32), at most
// `term_capacity` = max / max|rf| of them, then widened into int32 (int16 samples) or int64
// accumulators: exact, and 16-bit samples double the lanes an instruction moves.
//
// The task (seed_lateral_runs.inc) is compiled once per instruction set, each in its namespace
// with that set's vector policies, under USRECON_ISA_BEGIN (instruction_set_region.hpp), so one
// binary runs everywhere.

// Per-task scratch: distances and scaled distances of a tile's offsets u, and one u's row offsets.
struct RunScratch {
  static constexpr int kSlack = 8;  // entries past the last that a vector of orders may read
  std::vector<double> dist, scaled;
  std::vector<std::int32_t> row_offset;
  RunScratch(int channels, int tile_laterals)
      : dist(std::size_t(channels + tile_laterals + kSlack)),
        scaled(dist.size()),
        row_offset(std::size_t(channels + kSlack)) {}
};

USRECON_ISA_BEGIN("avx512f,avx512dq,avx512vl,avx512bw")
namespace avx512 {

constexpr int kTileLaterals = 128;  // 8 vectors of 16 int32 or 4 of 32 int16: the accumulators
constexpr int kOrderWidth = 8;

// Orders o(u, v) for v = v0 .. v0 + count - 1 (e_v, d_v point at v0's scaled and plain distance):
// row_offset[l] = min(o, samples) * channels; returns the bits l whose o < samples.
inline unsigned orders(double e_u, const double* e_v, double d_u, const double* d_v, int count,
                       int samples, int channels, std::int32_t* row_offset) {
  const __m512d magic = _mm512_set1_pd(kMagic);
  const __m512d t = _mm512_add_pd(_mm512_set1_pd(e_u), _mm512_loadu_pd(e_v));
  const __m512d y = _mm512_add_pd(t, magic);
  const __m512d off = _mm512_abs_pd(_mm512_sub_pd(t, _mm512_sub_pd(y, magic)));
  __m256i o = _mm512_cvtepi64_epi32(_mm512_castpd_si512(y));
  if (_mm512_cmp_pd_mask(off, _mm512_set1_pd(0.5 - kMargin), _CMP_GT_OQ)) [[unlikely]] {
    alignas(32) std::int32_t exact[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(exact), o);
    for (int l = 0; l < count; ++l) exact[l] = sample_index(d_u, d_v[l]);
    o = _mm256_load_si256(reinterpret_cast<const __m256i*>(exact));
  }
  const __m256i zero_row = _mm256_set1_epi32(samples);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(row_offset),
                      _mm256_mullo_epi32(_mm256_min_epi32(o, zero_row), _mm256_set1_epi32(channels)));
  return _mm256_cmplt_epi32_mask(o, zero_row) & ((1u << count) - 1);
}

// One sample type's vector primitives (seed_lateral_runs.inc builds the lanes on them): 32 int16
// or 16 int32 samples a vector, lane masks in mask registers (masked-off lanes load zeros).
template <class SampleType>
struct Primitives {
  using Sample = SampleType;
  using Vector = __m512i;
  static constexpr bool kShort = sizeof(Sample) == 2;
  using Mask = std::conditional_t<kShort, __mmask32, __mmask16>;
  static constexpr int kLanes = 64 / int(sizeof(Sample));

  static Mask all() { return Mask(~Mask{0}); }
  static Mask lanes_from(int first) { return Mask(all() << first); }             // 0 < first < kLanes
  static Mask lanes_to(int last) { return Mask(all() >> (kLanes - 1 - last)); }  // 0 <= last < kLanes - 1
  static Mask both(Mask a, Mask b) { return Mask(a & b); }
  static Vector load(Mask m, const Sample* p) {
    if constexpr (kShort) return _mm512_maskz_loadu_epi16(m, p);
    else return _mm512_maskz_loadu_epi32(m, p);
  }
  static Vector add_samples(Vector a, Vector b) {
    if constexpr (kShort) return _mm512_add_epi16(a, b);
    else return _mm512_add_epi32(a, b);
  }
  static Vector pair_sum(Mask m, const Sample* a, const Sample* b) { return add_samples(load(m, a), load(m, b)); }
  static __m256i lower(Vector v) { return _mm512_castsi512_si256(v); }
  static __m256i upper(Vector v) { return _mm512_extracti64x4_epi64(v, 1); }
  // Half of the lanes widened (int16 to int32, int32 to int64), added to a vector of totals.
  static Vector add_widened(Vector totals, __m256i half) {
    if constexpr (kShort) return _mm512_add_epi32(totals, _mm512_cvtepi16_epi32(half));
    else return _mm512_add_epi64(totals, _mm512_cvtepi32_epi64(half));
  }
  static Vector add_int64(Vector a, Vector b) { return _mm512_add_epi64(a, b); }
  static Vector zero_vector() { return _mm512_setzero_si512(); }
  static void store(Vector v, void* out) { _mm512_storeu_si512(out, v); }
};

#include "seed_lateral_runs.inc"

}  // namespace avx512
USRECON_ISA_END

USRECON_ISA_BEGIN("avx2,fma")
namespace avx2 {

constexpr int kTileLaterals = 64;  // 4 vectors of 16 int16 or 8 of 8 int32: AVX2 has 16 registers
constexpr int kOrderWidth = 4;

// As avx512::orders, four v at a time.
inline unsigned orders(double e_u, const double* e_v, double d_u, const double* d_v, int count,
                       int samples, int channels, std::int32_t* row_offset) {
  const __m256d magic = _mm256_set1_pd(kMagic);
  const __m256d t = _mm256_add_pd(_mm256_set1_pd(e_u), _mm256_loadu_pd(e_v));
  const __m256d y = _mm256_add_pd(t, magic);
  const __m256d off = _mm256_andnot_pd(_mm256_set1_pd(-0.0), _mm256_sub_pd(t, _mm256_sub_pd(y, magic)));
  // The low 32 bits of each 64-bit lane (the rounded order), compacted into four 32-bit lanes.
  __m128i o = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
      _mm256_castpd_si256(y), _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
  if (_mm256_movemask_pd(_mm256_cmp_pd(off, _mm256_set1_pd(0.5 - kMargin), _CMP_GT_OQ))) [[unlikely]] {
    alignas(16) std::int32_t exact[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(exact), o);
    for (int l = 0; l < count; ++l) exact[l] = sample_index(d_u, d_v[l]);
    o = _mm_load_si128(reinterpret_cast<const __m128i*>(exact));
  }
  const __m128i zero_row = _mm_set1_epi32(samples);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(row_offset),
                   _mm_mullo_epi32(_mm_min_epi32(o, zero_row), _mm_set1_epi32(channels)));
  return unsigned(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(o, zero_row)))) & ((1u << count) - 1);
}

// As avx512::Primitives: 16 int16 or 8 int32 samples a vector. AVX2 has no masked loads of
// 16-bit lanes, so a mask is a vector of all-ones lanes, and a pair's sum is masked once after
// plain loads (the buffer's pads keep every lane's address inside it).
template <class SampleType>
struct Primitives {
  using Sample = SampleType;
  using Vector = __m256i;
  static constexpr bool kShort = sizeof(Sample) == 2;
  using Mask = __m256i;
  static constexpr int kLanes = 32 / int(sizeof(Sample));

  static Vector lane_index() {
    if constexpr (kShort) return _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    else return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  }
  static Vector greater(Vector a, Vector b) {
    if constexpr (kShort) return _mm256_cmpgt_epi16(a, b);
    else return _mm256_cmpgt_epi32(a, b);
  }
  static Vector broadcast(int x) {
    if constexpr (kShort) return _mm256_set1_epi16(static_cast<short>(x));
    else return _mm256_set1_epi32(x);
  }
  static Mask all() { return _mm256_set1_epi32(-1); }
  static Mask lanes_from(int first) { return greater(lane_index(), broadcast(first - 1)); }
  static Mask lanes_to(int last) { return greater(broadcast(last + 1), lane_index()); }
  static Mask both(Mask a, Mask b) { return _mm256_and_si256(a, b); }
  static Vector load(Mask m, const Sample* p) {
    return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), m);
  }
  static Vector add_samples(Vector a, Vector b) {
    if constexpr (kShort) return _mm256_add_epi16(a, b);
    else return _mm256_add_epi32(a, b);
  }
  static Vector pair_sum(Mask m, const Sample* a, const Sample* b) {
    return _mm256_and_si256(add_samples(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)),
                                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b))),
                            m);
  }
  static __m128i lower(Vector v) { return _mm256_castsi256_si128(v); }
  static __m128i upper(Vector v) { return _mm256_extracti128_si256(v, 1); }
  static Vector add_widened(Vector totals, __m128i half) {
    if constexpr (kShort) return _mm256_add_epi32(totals, _mm256_cvtepi16_epi32(half));
    else return _mm256_add_epi64(totals, _mm256_cvtepi32_epi64(half));
  }
  static Vector add_int64(Vector a, Vector b) { return _mm256_add_epi64(a, b); }
  static Vector zero_vector() { return _mm256_setzero_si256(); }
  static void store(Vector v, void* out) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), v); }
};

#include "seed_lateral_runs.inc"

}  // namespace avx2
USRECON_ISA_END

// One frame through an instruction set's lateral-runs task: the channels transposed into the
// Lanes' sample type, then one task per (depth, residue, tile of tile_laterals).
template <class Lanes>
using LateralRunsTask = void (*)(const Impl&, const typename Lanes::Sample*, int, int, int,
                                 std::int64_t, RunScratch&, double*);

template <class Lanes>
void beamform_lateral_runs(const Impl& c, std::span<const std::int32_t> rf, std::int64_t max_abs,
                           double* out, int threads, int tile_laterals, LateralRunsTask<Lanes> task) {
  using Sample = typename Lanes::Sample;
  const int channels = c.p.channels, samples = c.p.samples;
  // rows[s * channels + k] = rf[k][s] for s < samples; row `samples` and the pads are zeros. A
  // load's lanes reach at most a tile before a row and a tile plus a row past it.
  const std::size_t pad = std::size_t(tile_laterals + channels);
  std::vector<Sample> buffer(pad + std::size_t(samples + 1) * channels + pad, Sample{0});
  Sample* rows = buffer.data() + pad;
  for (int k = 0; k < channels; ++k)
    for (int s = 0; s < samples; ++s)
      rows[std::size_t(s) * channels + k] = static_cast<Sample>(rf[std::size_t(k) * samples + s]);
  const std::int64_t term_capacity = Lanes::kPartialMax / std::max<std::int64_t>(max_abs, 1);

  constexpr int step = Problem::kElementStep;
  const int laterals_per_residue = (c.w.nj + step - 1) / step;
  const int tiles = (laterals_per_residue + tile_laterals - 1) / tile_laterals;
  const std::size_t per_depth = std::size_t(step) * tiles;
  kernels::parallel_for(std::size_t(c.w.ni) * per_depth, 1, threads, [&](std::size_t begin, std::size_t end) {
    RunScratch scratch(channels, tile_laterals);
    for (std::size_t task_index = begin; task_index < end; ++task_index) {
      const int ii = int(task_index / per_depth), rest = int(task_index % per_depth);
      task(c, rows, ii, rest % step, rest / step, term_capacity, scratch, out);
    }
  });
}

// The sample width a frame takes: 16-bit lanes while a pair's sum fits int16 and a pixel's total
// int32; 32-bit lanes while a pair's sum fits int32; past that (|rf| >= 2^30) every term widened.
template <class L16, class L32, class LWide>
void beamform_lateral_runs_of_width(const Impl& c, std::span<const std::int32_t> rf, double* out,
                                    int threads, int tile_laterals, LateralRunsTask<L16> task16,
                                    LateralRunsTask<L32> task32, LateralRunsTask<LWide> task_wide) {
  std::int64_t max_abs = 0;
  for (const std::int32_t value : rf) max_abs = std::max<std::int64_t>(max_abs, std::llabs(value));
  const std::int64_t terms = std::int64_t(c.p.channels) * c.p.channels;
  if (max_abs <= std::numeric_limits<std::int16_t>::max() / 2 &&
      max_abs <= std::numeric_limits<std::int32_t>::max() / terms)
    beamform_lateral_runs<L16>(c, rf, max_abs, out, threads, tile_laterals, task16);
  else if (max_abs <= std::numeric_limits<std::int32_t>::max() / 2)
    beamform_lateral_runs<L32>(c, rf, max_abs, out, threads, tile_laterals, task32);
  else
    beamform_lateral_runs<LWide>(c, rf, max_abs, out, threads, tile_laterals, task_wide);
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
  if (kernel != CpuKernel::Scalar) return;  // the vector kernels compute a task's distances
  c.ni_pad = (window.ni + kDepthBlock - 1) / kDepthBlock * kDepthBlock;
  c.dj_min = window.j0 - Problem::kElementStep * (problem.channels - 1);
  c.n_dj = window.j0 + window.nj - c.dj_min;
  c.dist.resize(std::size_t(c.n_dj) * c.ni_pad);
  for (int r = 0; r < c.n_dj; ++r) {
    for (int ir = 0; ir < c.ni_pad; ++ir) {
      // Rows past the window's depth (padding) hold real distances too; their results are dropped.
      c.dist[std::size_t(r) * c.ni_pad + ir] = distance(window.i0 + ir, c.dj_min + r);
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

  if (c.kernel == CpuKernel::Avx512) {
    beamform_lateral_runs_of_width<avx512::Int16Lanes, avx512::Int32Lanes, avx512::Int32WideLanes>(
        c, rf, out.data(), threads, avx512::kTileLaterals,
        avx512::lateral_runs<avx512::Int16Lanes>, avx512::lateral_runs<avx512::Int32Lanes>,
        avx512::lateral_runs<avx512::Int32WideLanes>);
    return;
  }
  if (c.kernel == CpuKernel::Avx2) {
    beamform_lateral_runs_of_width<avx2::Int16Lanes, avx2::Int32Lanes, avx2::Int32WideLanes>(
        c, rf, out.data(), threads, avx2::kTileLaterals, avx2::lateral_runs<avx2::Int16Lanes>,
        avx2::lateral_runs<avx2::Int32Lanes>, avx2::lateral_runs<avx2::Int32WideLanes>);
    return;
  }

  // The scalar kernel. Tasks: (depth block, run of columns). Within a depth block, neighbouring
  // columns reuse the same table rows, so a task's working set stays in cache.
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
                            block_scalar(c, rf.data(), block, jj_begin, jj_end, out.data());
                          }
                        });
}

void beamform_cpu(std::span<const std::int32_t> rf, const Problem& problem, const Window& window,
                  std::span<double> out, int threads, CpuKernel kernel) {
  SeedCpuBeamformer(problem, window, kernel).beamform(rf, out, threads);
}

}  // namespace usrecon::recon::seed
