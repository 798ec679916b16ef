// The optimised general delay-and-sum on the CPU (plane wave, synthetic aperture, diverging and
// focused waves).
//
// Work is split into tiles of one image column x and up to kChunk consecutive depths. Per tile:
//  1. the receive path of every element, as a sample offset rx[e][z] = |(x, z) - x_e| fs / c, and
//     its F-number apodization apod[e][z] are computed once (16 depths per AVX-512 vector) and
//     serve every transmit; blocks of 16 depths where an element's weight is zero are flagged and
//     skipped;
//  2. per transmit, the transmit path tx[z] (plane wave: linear in z; synthetic aperture: the
//     transmitting element's rx row; diverging and focused waves: the signed distance from the
//     virtual source);
//  3. per element, 16 depths at a time: s = tx + rx, and the analytic samples at floor(s) and
//     floor(s) + 1. Consecutive depths are a fraction of a wavelength apart, so the 16 positions
//     usually span fewer than 31 samples: two 16-float loads and one vpermt2ps per operand replace
//     a gather (a gather is the fallback when they do not). Indices are clamped to [-2, samples]
//     so that positions off either end read the zero padding of AnalyticData.
// The delay and apodization formulas are those of delay/*.hpp; the scalar kernel calls them
// directly, the AVX-512 kernel computes the same expressions on vectors.
// GCC 12 reports its own AVX-512 intrinsics (_mm512_undefined) as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

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

// ---------------------------------------------------------------------------------------------
// AVX-512 kernel.
#define USRECON_DAS_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))

// hann_taper of delay/common.hpp on 16 lanes (same polynomial, same operation order).
USRECON_DAS_AVX512 inline __m512 hann_taper_avx512(__m512 u) {
  const __m512 one = _mm512_set1_ps(1.f);
  u = _mm512_min_ps(_mm512_max_ps(u, _mm512_setzero_ps()), one);
  const __mmask16 fold = _mm512_cmp_ps_mask(u, _mm512_set1_ps(0.5f), _CMP_GT_OQ);
  const __m512 v = _mm512_mask_sub_ps(u, fold, one, u);
  const __m512 y = _mm512_mul_ps(_mm512_set1_ps(3.14159265358979323846f), v);
  const __m512 y2 = _mm512_mul_ps(y, y);
  __m512 p = _mm512_set1_ps(float(1.0 / 479001600.0));
  p = _mm512_sub_ps(_mm512_mul_ps(p, y2), _mm512_set1_ps(float(1.0 / 3628800.0)));
  p = _mm512_add_ps(_mm512_mul_ps(p, y2), _mm512_set1_ps(float(1.0 / 40320.0)));
  p = _mm512_sub_ps(_mm512_mul_ps(p, y2), _mm512_set1_ps(float(1.0 / 720.0)));
  p = _mm512_add_ps(_mm512_mul_ps(p, y2), _mm512_set1_ps(float(1.0 / 24.0)));
  p = _mm512_sub_ps(_mm512_mul_ps(p, y2), _mm512_set1_ps(0.5f));
  p = _mm512_add_ps(_mm512_mul_ps(p, y2), one);
  p = _mm512_mask_sub_ps(p, fold, _mm512_setzero_ps(), p);
  return _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_add_ps(one, p));
}

USRECON_DAS_AVX512 void receive_tables_avx512(const Impl& c, float x, int blocks, Scratch& s) {
  const int E = c.p.acquisition.probe.elements;
  const __m512 inv = _mm512_set1_ps(c.inv_c_fs);
  const __m512 one = _mm512_set1_ps(1.f);
  const bool full = !(c.fnumber > 0.f);
  const __m512 two_f = _mm512_set1_ps(2.f * c.fnumber);
  const __m512 alpha = _mm512_set1_ps(c.alpha);
  const __m512 flat = _mm512_set1_ps(1.f - c.alpha);
  for (int e = 0; e < E; ++e) {
    float* rx = s.rx.data() + std::size_t(e) * kChunk;
    float* ap = s.apod.data() + std::size_t(e) * kChunk;
    const float dxs = x - c.tables.ex[e];
    const __m512 dx = _mm512_set1_ps(dxs);
    const __m512 dx2 = _mm512_mul_ps(dx, dx);
    const __m512 adx = _mm512_set1_ps(std::fabs(dxs));
    for (int b = 0; b < blocks; ++b) {
      const int l = b * kLanes;
      const __m512 z = _mm512_loadu_ps(s.zs.data() + l);
      const __m512 r = _mm512_sqrt_ps(_mm512_add_ps(dx2, _mm512_mul_ps(z, z)));
      _mm512_storeu_ps(rx + l, _mm512_mul_ps(r, inv));
      __m512 w = one;
      if (!full) {
        const __m512 half = _mm512_div_ps(z, two_f);
        const __mmask16 positive = _mm512_cmp_ps_mask(half, _mm512_setzero_ps(), _CMP_GT_OQ);
        const __m512 ratio = _mm512_div_ps(adx, half);
        const __mmask16 inside = positive & _mm512_cmp_ps_mask(ratio, one, _CMP_LE_OQ);
        if (c.window == das::kHann) {
          w = hann_taper_avx512(ratio);
        } else if (c.window == das::kTukey) {
          const __mmask16 taper = _mm512_cmp_ps_mask(ratio, flat, _CMP_GT_OQ);
          const __m512 u = _mm512_div_ps(_mm512_sub_ps(ratio, flat), alpha);
          w = _mm512_mask_blend_ps(taper, one, hann_taper_avx512(u));
        }
        w = _mm512_maskz_mov_ps(inside, w);
      }
      _mm512_storeu_ps(ap + l, w);
      s.active[std::size_t(e) * (kChunk / kLanes) + b] =
          _mm512_cmp_ps_mask(w, _mm512_setzero_ps(), _CMP_NEQ_UQ) != 0;
    }
  }
}

USRECON_DAS_AVX512 inline int lane(__m512i v, int which) {
  alignas(64) int tmp[kLanes];
  _mm512_store_si512(tmp, v);
  return tmp[which];
}

template <bool kLinear, bool kMonotone>
USRECON_DAS_AVX512 void accumulate_avx512(const Impl& c, const float* I, const float* Q,
                                          const float* tx, const float* rx, const float* ap,
                                          const std::uint8_t* active, int blocks, float* ai,
                                          float* aq) {
  const int S = c.p.samples;
  const __m512i lo_clamp = _mm512_set1_epi32(-2);
  const __m512i hi_clamp = _mm512_set1_epi32(S);
  const __m512i one_i = _mm512_set1_epi32(1);
  const __m512 half = _mm512_set1_ps(0.5f);
  for (int b = 0; b < blocks; ++b) {
    if (!active[b]) continue;
    const int l = b * kLanes;
    const __m512 pos = _mm512_add_ps(_mm512_loadu_ps(tx + l), _mm512_loadu_ps(rx + l));
    __m512 f, w;
    if constexpr (kLinear) {
      f = _mm512_roundscale_ps(pos, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
      w = _mm512_sub_ps(pos, f);
    } else {
      f = _mm512_roundscale_ps(_mm512_add_ps(pos, half), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    }
    // Out-of-range floats convert to INT_MIN, which the clamp sends to the zero padding.
    __m512i idx = _mm512_cvttps_epi32(f);
    idx = _mm512_min_epi32(_mm512_max_epi32(idx, lo_clamp), hi_clamp);
    int lo, hi;
    if constexpr (kMonotone) {
      lo = _mm_cvtsi128_si32(_mm512_castsi512_si128(idx));
      hi = _mm_extract_epi32(_mm512_extracti32x4_epi32(idx, 3), 3);
    } else {
      lo = _mm512_reduce_min_epi32(idx);
      hi = _mm512_reduce_max_epi32(idx);
    }
    __m512 vi, vq;
    if (hi - lo <= 2 * kLanes - 2) {
      const __m512i rel = _mm512_sub_epi32(idx, _mm512_set1_epi32(lo));
      const __m512 ia = _mm512_loadu_ps(I + lo), ib = _mm512_loadu_ps(I + lo + kLanes);
      const __m512 qa = _mm512_loadu_ps(Q + lo), qb = _mm512_loadu_ps(Q + lo + kLanes);
      vi = _mm512_permutex2var_ps(ia, rel, ib);
      vq = _mm512_permutex2var_ps(qa, rel, qb);
      if constexpr (kLinear) {
        const __m512i rel1 = _mm512_add_epi32(rel, one_i);
        const __m512 vi1 = _mm512_permutex2var_ps(ia, rel1, ib);
        const __m512 vq1 = _mm512_permutex2var_ps(qa, rel1, qb);
        vi = _mm512_fmadd_ps(w, _mm512_sub_ps(vi1, vi), vi);
        vq = _mm512_fmadd_ps(w, _mm512_sub_ps(vq1, vq), vq);
      }
    } else {
      vi = _mm512_i32gather_ps(idx, I, 4);
      vq = _mm512_i32gather_ps(idx, Q, 4);
      if constexpr (kLinear) {
        const __m512i idx1 = _mm512_add_epi32(idx, one_i);
        const __m512 vi1 = _mm512_i32gather_ps(idx1, I, 4);
        const __m512 vq1 = _mm512_i32gather_ps(idx1, Q, 4);
        vi = _mm512_fmadd_ps(w, _mm512_sub_ps(vi1, vi), vi);
        vq = _mm512_fmadd_ps(w, _mm512_sub_ps(vq1, vq), vq);
      }
    }
    const __m512 a = _mm512_loadu_ps(ap + l);
    _mm512_storeu_ps(ai + l, _mm512_fmadd_ps(a, vi, _mm512_loadu_ps(ai + l)));
    _mm512_storeu_ps(aq + l, _mm512_fmadd_ps(a, vq, _mm512_loadu_ps(aq + l)));
  }
}

using AccumulateFn = void (*)(const Impl&, const float*, const float*, const float*, const float*,
                              const float*, const std::uint8_t*, int, float*, float*);

AccumulateFn pick_accumulate(const Impl& c) {
  if (c.kernel == DasCpuKernel::Scalar) return accumulate_scalar;
  const bool linear = c.p.options.interp == Interp::Linear;
  if (linear) return c.monotone ? accumulate_avx512<true, true> : accumulate_avx512<true, false>;
  return c.monotone ? accumulate_avx512<false, true> : accumulate_avx512<false, false>;
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
  if (c.kernel == DasCpuKernel::Avx512) receive_tables_avx512(c, x, blocks, s);
  else receive_tables_scalar(c, x, blocks, s);
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

}  // namespace

std::string to_string(DasCpuKernel kernel) {
  switch (kernel) {
    case DasCpuKernel::Auto: return "auto";
    case DasCpuKernel::Avx512: return "avx512";
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
  if (kernel == DasCpuKernel::Avx512 && !cpu_has_avx512())
    throw Error("the AVX-512 DAS kernel was asked for but this CPU lacks AVX-512");
  c.kernel = kernel == DasCpuKernel::Auto ? (cpu_has_avx512() ? DasCpuKernel::Avx512
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
