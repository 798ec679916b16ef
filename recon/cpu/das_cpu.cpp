// The optimised general delay-and-sum on the CPU (plane wave, synthetic aperture, diverging and
// focused waves).
//
// Work is split into tiles of one image column x and up to kChunk consecutive depths. Per tile:
//  1. the receive path of every element, as a sample offset rx[e][z] = |(x, z) - x_e| fs / c, and
//     its F-number apodization apod[e][z] are computed once (16 depths per AVX-512 vector, 8 per
//     AVX2 vector) and serve every transmit; blocks of 16 depths where an element's weight is
//     zero are flagged and skipped;
//  2. per transmit, the transmit path tx[z] (plane wave: linear in z; synthetic aperture: the
//     transmitting element's rx row; diverging and focused waves: the signed distance from the
//     virtual source);
//  3. per element, a vector of depths at a time: s = tx + rx, and the analytic samples at
//     floor(s) and floor(s) + 1. Consecutive depths are a fraction of a wavelength apart, so a
//     vector's W positions usually span fewer than 2 W - 1 samples: two W-float loads and a
//     two-register permute per operand (AVX-512: one vpermt2ps; AVX2: two vpermps and a blend)
//     replace a gather (a gather is the fallback when they do not). Indices are clamped to
//     [-2, samples] so that positions off either end read the zero padding of AnalyticData.
// The delay and apodization formulas are those of delay/*.hpp; the scalar kernel calls them
// directly, the vector kernels (das_vector_kernel.inc) compute the same expressions on vectors.
// GCC 12 reports its own AVX-512 intrinsics (_mm512_undefined) as maybe-uninitialized.
#if !defined(__clang__)  // clang has no such warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "instruction_set_region.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/delay/virtual_source.hpp"
#include "usrecon/recon/delay/planewave.hpp"
#include "usrecon/recon/delay/synthetic_aperture.hpp"

namespace usrecon::recon {
namespace {

constexpr int kLanes = 16;   // depths per vector
constexpr int kChunk = 256;  // depths per tile (a multiple of kLanes)
static_assert(AnalyticData::kFront >= 2 && AnalyticData::kBack >= 2 * kLanes + 2);

}  // namespace

struct DasCpuBeamformer::Impl {
  DasProblem p;
  DasCpuKernel kernel = DasCpuKernel::Scalar;
  int threads = 1;
  int chunks = 0;             // depth tiles per column
  bool monotone = false;      // sample positions grow with depth (z0 >= 0): lane 0 is the minimum
  float inv_c_fs = 0, t0_fs = 0, fnumber = 0, alpha = 0, tx_fnumber = 0;
  int window = das::kRect;
  DasTables tables;           // per-transmit geometry (make_das_tables)
};

namespace {

using Impl = DasCpuBeamformer::Impl;

// Per-thread buffers of one tile.
struct Scratch {
  std::vector<float> zs, tx, rx, apod, acc_i, acc_q;
  std::vector<float> tx_weight, sum_i, sum_q;  // transmit F-number: the weight and one transmit's sum
  std::vector<std::uint8_t> active;  // active[e * blocks + b]: element e has weight in block b
  void size_for(int elements) {
    const std::size_t n = std::size_t(elements) * kChunk;
    if (rx.size() == n) return;
    zs.assign(kChunk, 0.f);
    tx.assign(kChunk, 0.f);
    tx_weight.assign(kChunk, 0.f);
    sum_i.assign(kChunk, 0.f);
    sum_q.assign(kChunk, 0.f);
    acc_i.assign(kChunk, 0.f);
    acc_q.assign(kChunk, 0.f);
    rx.assign(n, 0.f);
    apod.assign(n, 0.f);
    active.assign(std::size_t(elements) * (kChunk / kLanes), 0);
  }
};

// ---------------------------------------------------------------------------------------------
// Portable kernel: the USRECON_HD functions, one depth at a time.
void receive_tables_scalar(const Impl& c, float x, int blocks, Scratch& s) {
  const int E = c.p.acquisition.probe.elements;
  for (int e = 0; e < E; ++e) {
    float* rx = s.rx.data() + std::size_t(e) * kChunk;
    float* ap = s.apod.data() + std::size_t(e) * kChunk;
    for (int b = 0; b < blocks; ++b) {
      bool any = false;
      for (int l = b * kLanes; l < (b + 1) * kLanes; ++l) {
        rx[l] = das::receive_distance(x, s.zs[l], c.tables.ex[e]) * c.inv_c_fs;
        ap[l] = das::receive_apodization(x, s.zs[l], c.tables.ex[e], c.fnumber, c.window, c.alpha);
        any = any || ap[l] != 0.f;
      }
      s.active[std::size_t(e) * (kChunk / kLanes) + b] = any;
    }
  }
}

void accumulate_scalar(const Impl& c, const float* I, const float* Q, const float* tx,
                       const float* rx, const float* ap, const std::uint8_t* active, int blocks,
                       float* ai, float* aq) {
  const int S = c.p.samples;
  const bool linear = c.p.options.interp == Interp::Linear;
  for (int b = 0; b < blocks; ++b) {
    if (!active[b]) continue;
    for (int l = b * kLanes; l < (b + 1) * kLanes; ++l) {
      const float pos = tx[l] + rx[l];
      const float vi = linear ? das::interp_linear(I, S, pos) : das::interp_nearest(I, S, pos);
      const float vq = linear ? das::interp_linear(Q, S, pos) : das::interp_nearest(Q, S, pos);
      ai[l] += ap[l] * vi;
      aq[l] += ap[l] * vq;
    }
  }
}

using AccumulateFn = void (*)(const Impl&, const float*, const float*, const float*, const float*,
                              const float*, const std::uint8_t*, int, float*, float*);

// ---------------------------------------------------------------------------------------------
// Vector kernels: das_vector_kernel.inc, compiled once per instruction set with that set's
// primitives under USRECON_ISA_BEGIN (instruction_set_region.hpp), so one binary runs on every
// x86-64 CPU (chosen at run time: cpu_has_avx512, cpu_has_avx2).
USRECON_ISA_BEGIN("avx512f,avx512dq,avx512vl,avx512bw")
namespace avx512 {
constexpr int kWidth = 16;
using FloatVec = __m512;
using IntVec = __m512i;
using LaneMask = __mmask16;
inline FloatVec set1(float x) { return _mm512_set1_ps(x); }
inline FloatVec loadu(const float* p) { return _mm512_loadu_ps(p); }
inline void storeu(float* p, FloatVec v) { _mm512_storeu_ps(p, v); }
inline FloatVec add(FloatVec a, FloatVec b) { return _mm512_add_ps(a, b); }
inline FloatVec sub(FloatVec a, FloatVec b) { return _mm512_sub_ps(a, b); }
inline FloatVec mul(FloatVec a, FloatVec b) { return _mm512_mul_ps(a, b); }
inline FloatVec div(FloatVec a, FloatVec b) { return _mm512_div_ps(a, b); }
inline FloatVec fmadd(FloatVec a, FloatVec b, FloatVec c) { return _mm512_fmadd_ps(a, b, c); }
inline FloatVec sqrt(FloatVec a) { return _mm512_sqrt_ps(a); }
inline FloatVec min(FloatVec a, FloatVec b) { return _mm512_min_ps(a, b); }
inline FloatVec max(FloatVec a, FloatVec b) { return _mm512_max_ps(a, b); }
inline FloatVec floor(FloatVec a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
inline LaneMask greater(FloatVec a, FloatVec b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
inline LaneMask at_most(FloatVec a, FloatVec b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
inline LaneMask not_zero(FloatVec a) { return _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_NEQ_UQ); }
inline LaneMask both(LaneMask a, LaneMask b) { return LaneMask(a & b); }
inline bool any(LaneMask m) { return m != 0; }
inline FloatVec blend(LaneMask m, FloatVec a, FloatVec b) { return _mm512_mask_blend_ps(m, a, b); }
inline FloatVec keep(LaneMask m, FloatVec v) { return _mm512_maskz_mov_ps(m, v); }
inline IntVec set1i(int x) { return _mm512_set1_epi32(x); }
inline IntVec addi(IntVec a, IntVec b) { return _mm512_add_epi32(a, b); }
inline IntVec subi(IntVec a, IntVec b) { return _mm512_sub_epi32(a, b); }
inline IntVec truncate(FloatVec a) { return _mm512_cvttps_epi32(a); }
inline IntVec clamp(IntVec v, int lo, int hi) {
  return _mm512_min_epi32(_mm512_max_epi32(v, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi));
}
inline int first(IntVec v) { return _mm_cvtsi128_si32(_mm512_castsi512_si128(v)); }
inline int last(IntVec v) { return _mm_extract_epi32(_mm512_extracti32x4_epi32(v, 3), 3); }
inline int smallest(IntVec v) { return _mm512_reduce_min_epi32(v); }
inline int largest(IntVec v) { return _mm512_reduce_max_epi32(v); }
// Lane j: (a, b)[rel_j], rel_j in [0, 32).
inline FloatVec permute2(FloatVec a, IntVec rel, FloatVec b) { return _mm512_permutex2var_ps(a, rel, b); }
inline FloatVec gather(const float* base, IntVec idx) { return _mm512_i32gather_ps(idx, base, 4); }
#include "das_vector_kernel.inc"
}  // namespace avx512
USRECON_ISA_END

USRECON_ISA_BEGIN("avx2,fma")
namespace avx2 {
constexpr int kWidth = 8;
using FloatVec = __m256;
using IntVec = __m256i;
using LaneMask = __m256;  // all ones or all zeros a lane
inline FloatVec set1(float x) { return _mm256_set1_ps(x); }
inline FloatVec loadu(const float* p) { return _mm256_loadu_ps(p); }
inline void storeu(float* p, FloatVec v) { _mm256_storeu_ps(p, v); }
inline FloatVec add(FloatVec a, FloatVec b) { return _mm256_add_ps(a, b); }
inline FloatVec sub(FloatVec a, FloatVec b) { return _mm256_sub_ps(a, b); }
inline FloatVec mul(FloatVec a, FloatVec b) { return _mm256_mul_ps(a, b); }
inline FloatVec div(FloatVec a, FloatVec b) { return _mm256_div_ps(a, b); }
inline FloatVec fmadd(FloatVec a, FloatVec b, FloatVec c) { return _mm256_fmadd_ps(a, b, c); }
inline FloatVec sqrt(FloatVec a) { return _mm256_sqrt_ps(a); }
inline FloatVec min(FloatVec a, FloatVec b) { return _mm256_min_ps(a, b); }
inline FloatVec max(FloatVec a, FloatVec b) { return _mm256_max_ps(a, b); }
inline FloatVec floor(FloatVec a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
inline LaneMask greater(FloatVec a, FloatVec b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
inline LaneMask at_most(FloatVec a, FloatVec b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
inline LaneMask not_zero(FloatVec a) { return _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_NEQ_UQ); }
inline LaneMask both(LaneMask a, LaneMask b) { return _mm256_and_ps(a, b); }
inline bool any(LaneMask m) { return _mm256_movemask_ps(m) != 0; }
inline FloatVec blend(LaneMask m, FloatVec a, FloatVec b) { return _mm256_blendv_ps(a, b, m); }
inline FloatVec keep(LaneMask m, FloatVec v) { return _mm256_and_ps(m, v); }
inline IntVec set1i(int x) { return _mm256_set1_epi32(x); }
inline IntVec addi(IntVec a, IntVec b) { return _mm256_add_epi32(a, b); }
inline IntVec subi(IntVec a, IntVec b) { return _mm256_sub_epi32(a, b); }
inline IntVec truncate(FloatVec a) { return _mm256_cvttps_epi32(a); }
inline IntVec clamp(IntVec v, int lo, int hi) {
  return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
}
inline int first(IntVec v) { return _mm256_cvtsi256_si32(v); }
inline int last(IntVec v) { return _mm256_extract_epi32(v, 7); }
inline __m128i halves_min(IntVec v) {
  const __m128i m = _mm_min_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i m2 = _mm_min_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_min_epi32(m2, _mm_shuffle_epi32(m2, _MM_SHUFFLE(2, 3, 0, 1)));
}
inline __m128i halves_max(IntVec v) {
  const __m128i m = _mm_max_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i m2 = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_max_epi32(m2, _mm_shuffle_epi32(m2, _MM_SHUFFLE(2, 3, 0, 1)));
}
inline int smallest(IntVec v) { return _mm_cvtsi128_si32(halves_min(v)); }
inline int largest(IntVec v) { return _mm_cvtsi128_si32(halves_max(v)); }
// Lane j: (a, b)[rel_j], rel_j in [0, 16): vpermps reads the low 3 bits of each index, so each
// register is permuted by them and the lanes with rel_j >= 8 take b's.
inline FloatVec permute2(FloatVec a, IntVec rel, FloatVec b) {
  const __m256 from_b = _mm256_castsi256_ps(_mm256_cmpgt_epi32(rel, _mm256_set1_epi32(7)));
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(a, rel), _mm256_permutevar8x32_ps(b, rel), from_b);
}
inline FloatVec gather(const float* base, IntVec idx) { return _mm256_i32gather_ps(base, idx, 4); }
#include "das_vector_kernel.inc"
}  // namespace avx2
USRECON_ISA_END

AccumulateFn pick_accumulate(const Impl& c) {
  switch (c.kernel) {
    case DasCpuKernel::Avx512: return avx512::pick_accumulate(c);
    case DasCpuKernel::Avx2: return avx2::pick_accumulate(c);
    default: return accumulate_scalar;
  }
}

void receive_tables(const Impl& c, float x, int blocks, Scratch& s) {
  switch (c.kernel) {
    case DasCpuKernel::Avx512: return avx512::receive_tables(c, x, blocks, s);
    case DasCpuKernel::Avx2: return avx2::receive_tables(c, x, blocks, s);
    default: return receive_tables_scalar(c, x, blocks, s);
  }
}

// One tile: column ix, depths [chunk * kChunk, ...).
void beamform_tile(const Impl& c, const AnalyticData& d, int ix, int chunk, Scratch& s,
                   std::complex<float>* out) {
  const Grid& g = c.p.grid;
  const Acquisition& acq = c.p.acquisition;
  const int E = acq.probe.elements;
  const int z_begin = chunk * kChunk;
  const int nzc = std::min(kChunk, g.nz - z_begin);
  const int blocks = (nzc + kLanes - 1) / kLanes;
  const int padded = blocks * kLanes;
  const float x = static_cast<float>(g.x(ix));
  for (int l = 0; l < padded; ++l) s.zs[l] = static_cast<float>(g.z(z_begin + l));
  receive_tables(c, x, blocks, s);
  std::fill_n(s.acc_i.begin(), padded, 0.f);
  std::fill_n(s.acc_q.begin(), padded, 0.f);
  const AccumulateFn accumulate = pick_accumulate(c);
  const int T = acq.transmits();
  for (int t = 0; t < T; ++t) {
    if (!c.tables.column_transmit.empty() && t != c.tables.column_transmit[std::size_t(ix)]) continue;
    if (acq.model == Model::PlaneWave) {
      for (int l = 0; l < padded; ++l)
        s.tx[l] = das::sample_position(
            das::planewave_transmit_distance(x, s.zs[l], c.tables.cos_a[t], c.tables.sin_a[t], c.tables.x_reference[t]),
            c.inv_c_fs, c.t0_fs);
    } else if (has_virtual_sources(acq.model)) {
      for (int l = 0; l < padded; ++l)
        s.tx[l] = das::sample_position(
            das::virtual_source_transmit_distance(x, s.zs[l], c.tables.src_x[t], c.tables.src_z[t], c.tables.src_r0[t]), c.inv_c_fs,
            c.t0_fs);
    } else {
      const float* row = s.rx.data() + std::size_t(c.tables.tx_element[t]) * kChunk;
      for (int l = 0; l < padded; ++l) s.tx[l] = row[l] - c.t0_fs;
    }
    // A transmit F-number weighs the transmit's whole sum at each depth: sum into sum_i/sum_q,
    // then add it weighted (and skip a transmit that weighs nothing in this tile).
    const bool weighted = c.tx_fnumber > 0.f;
    if (weighted) {
      bool any = false;
      for (int l = 0; l < padded; ++l) {
        s.tx_weight[l] = das::virtual_source_apodization(x, s.zs[l], c.tables.src_x[t], c.tables.src_z[t], c.tx_fnumber,
                                                         c.tables.src_waist[t], c.window, c.alpha);
        any = any || s.tx_weight[l] != 0.f;
      }
      if (!any) continue;
      std::fill_n(s.sum_i.begin(), padded, 0.f);
      std::fill_n(s.sum_q.begin(), padded, 0.f);
    }
    float* into_i = weighted ? s.sum_i.data() : s.acc_i.data();
    float* into_q = weighted ? s.sum_q.data() : s.acc_q.data();
    for (int e = 0; e < E; ++e)
      accumulate(c, d.i_channel(t, e), d.q_channel(t, e), s.tx.data(),
                 s.rx.data() + std::size_t(e) * kChunk, s.apod.data() + std::size_t(e) * kChunk,
                 s.active.data() + std::size_t(e) * (kChunk / kLanes), blocks, into_i, into_q);
    if (weighted)
      for (int l = 0; l < padded; ++l) {
        s.acc_i[l] += s.tx_weight[l] * s.sum_i[l];
        s.acc_q[l] += s.tx_weight[l] * s.sum_q[l];
      }
  }
  std::complex<float>* column = out + std::size_t(ix) * g.nz + z_begin;
  for (int l = 0; l < nzc; ++l) column[l] = {s.acc_i[l], s.acc_q[l]};
}

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

}  // namespace

bool das_cpu_supports(DasCpuKernel kernel) {
  switch (kernel) {
    case DasCpuKernel::Avx512: return cpu_has_avx512();
    case DasCpuKernel::Avx2: return cpu_has_avx2();
    default: return true;
  }
}

std::string to_string(DasCpuKernel kernel) {
  switch (kernel) {
    case DasCpuKernel::Auto: return "auto";
    case DasCpuKernel::Avx512: return "avx512";
    case DasCpuKernel::Avx2: return "avx2";
    case DasCpuKernel::Scalar: return "scalar";
  }
  return "?";
}

DasCpuBeamformer::DasCpuBeamformer(const DasProblem& problem, int threads, DasCpuKernel kernel)
    : impl_(std::make_unique<Impl>()) {
  problem.validate();
  Impl& c = *impl_;
  c.p = problem;
  c.threads = threads > 0 ? threads : kernels::hardware_threads();
  if (!das_cpu_supports(kernel))
    throw Error("the " + to_string(kernel) + " DAS kernel was asked for but this CPU lacks its instruction set");
  c.kernel = kernel == DasCpuKernel::Auto ? (cpu_has_avx512() ? DasCpuKernel::Avx512
                                             : cpu_has_avx2() ? DasCpuKernel::Avx2
                                                              : DasCpuKernel::Scalar)
                                          : kernel;
  const Acquisition& acq = problem.acquisition;
  c.chunks = (problem.grid.nz + kChunk - 1) / kChunk;
  c.inv_c_fs = static_cast<float>(acq.fs / acq.sound_speed);
  c.t0_fs = static_cast<float>(acq.t0 * acq.fs);
  c.fnumber = static_cast<float>(problem.options.fnumber);
  c.tx_fnumber = static_cast<float>(problem.options.tx_fnumber);
  c.alpha = static_cast<float>(problem.options.tukey_alpha);
  c.window = static_cast<int>(problem.options.window);
  c.tables = make_das_tables(problem);
  bool steep = false;  // a plane wave that does not travel down
  for (double a : acq.angles) steep = steep || !(std::cos(a) > 0.0);
  // Both paths grow with depth when every depth is >= 0 and no plane wave travels sideways (a
  // diverging wave's source lies at z <= 0, so its path grows with depth too; a focused wave's
  // path -|p - f| before its focal depth and +|p - f| after it grows with depth on both sides
  // and jumps up at that depth).
  c.monotone = problem.grid.z0 >= 0.0 && !steep;
}

DasCpuBeamformer::~DasCpuBeamformer() = default;
DasCpuBeamformer::DasCpuBeamformer(DasCpuBeamformer&&) noexcept = default;
DasCpuBeamformer& DasCpuBeamformer::operator=(DasCpuBeamformer&&) noexcept = default;

const DasProblem& DasCpuBeamformer::problem() const { return impl_->p; }
DasCpuKernel DasCpuBeamformer::kernel() const { return impl_->kernel; }
int DasCpuBeamformer::threads() const { return impl_->threads; }

void DasCpuBeamformer::beamform(const AnalyticData& data, std::complex<float>* out) const {
  const Impl& c = *impl_;
  const Acquisition& acq = c.p.acquisition;
  if (data.samples != c.p.samples || data.elements != acq.probe.elements ||
      data.transmits != acq.transmits())
    throw Error("DAS: the data are " + std::to_string(data.samples) + " samples x " +
                std::to_string(data.elements) + " elements x " + std::to_string(data.transmits) +
                " transmits, the beamformer was set up for " + std::to_string(c.p.samples) + " x " +
                std::to_string(acq.probe.elements) + " x " + std::to_string(acq.transmits()));
  data.check_layout("DAS");
  const std::size_t tiles = std::size_t(c.p.grid.nx) * c.chunks;
  kernels::parallel_for(tiles, 1, c.threads, [&](std::size_t begin, std::size_t end) {
    thread_local Scratch scratch;
    scratch.size_for(acq.probe.elements);
    for (std::size_t tile = begin; tile < end; ++tile)
      beamform_tile(c, data, static_cast<int>(tile / c.chunks), static_cast<int>(tile % c.chunks),
                    scratch, out);
  });
}

Image DasCpuBeamformer::beamform(const AnalyticData& data) const {
  Image image;
  image.grid = impl_->p.grid;
  image.data.resize(image.grid.pixels());
  beamform(data, image.data.data());
  return image;
}

}  // namespace usrecon::recon
