// The general DAS on a CUDA GPU: the plan (sizes, launch grid and per-transmit tables, computed on
// the host) and the kernels' per-thread programs (pixel_every_transmit, pixel_element_outer,
// pixel_transmit_blocked), host-device, so that CPU tests run exactly what the kernels run
// (ReconDasCudaProgram in tests/recon/test_das_cuda.cpp walks the launch grid on the host).
// recon/cuda/das_cuda.cu adds the device buffers and the launches.
//
// Work split: one thread per pixel. A warp is 32 / L consecutive depths of L neighbouring image
// columns (L = Plan::lateral_lanes, lateral fastest), a block of kBlockThreads four such warps
// stacked in depth: 128 / L depths x L columns. Neighbouring threads read neighbouring samples:
// one depth step moves a channel's sample position by about 2 dz fs / c (1.3 samples at 0.05 mm,
// 20 MHz), one lateral step by (sin(angle) + sin(receive angle)) dx fs / c (0.1 on average), so
// a warp of fewer depths and more columns spans fewer samples (thread_pixel).
// The programs use the same USRECON_HD delay, apodization and interpolation functions as the CPU
// kernels, in the same operation order per sample position (receive and transmit paths scaled to
// samples separately, then added), so the backends agree to float rounding. What differs: the
// order of the sum over transmits and elements, and, in the plane-wave programs, two fused
// multiply-adds (hd_fma, explicit, as the build has no contraction): the linear blend of two
// samples (interp_linear_pair_padded_fma) and the weighted accumulation, a rounding fewer each,
// not a different sample position.
//
// Device memory layouts (the host's AnalyticData storage, copied as it is):
//   I[(t * elements + e) * stride + kFront + s], Q likewise: sample s of element e, transmit t;
//   iq[(t * elements + e) * stride + kFront + s] = (I, Q) interleaved (plane-wave kernels);
//   out[ix * nz + iz] = (I, Q) of pixel (ix, iz), lateral-major like every image of the project.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "usrecon/kernels/common.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/delay/planewave.hpp"
#include "usrecon/recon/delay/synthetic_aperture.hpp"
#include "usrecon/recon/delay/virtual_source.hpp"

namespace usrecon::recon::das::gpu {

constexpr int kBlockThreads = 128;       ///< threads per block of the pixel kernels
constexpr int kInterleaveThreads = 256;  ///< threads per block of the I/Q interleave
constexpr int kMaxBlockRows = 65535;     ///< gridDim.y's limit: block rows of lateral_lanes columns
/// Plan::lateral_lanes a plan may take (DasCudaTuning::lateral_lanes): powers of two up to a warp.
constexpr int kLateralLaneChoices[] = {1, 2, 4, 8, 16, 32};
constexpr int kTransmitBlock = 8;        ///< transmits per block of the transmit-blocked kernel
// The programs interpolate without bounds checks (interp_*_padded), which AnalyticData's padding
// allows: the same layout on the device.
static_assert(AnalyticData::kFront >= kPaddedFront && AnalyticData::kBack >= kPaddedBack);

enum ModelCode : int { kPlaneWave = 0, kSyntheticAperture = 1, kVirtualSource = 2 };  // kVirtualSource: dw, fw

/// Scalars of one problem, passed to the kernels by value.
struct Params {
  int nx = 0, nz = 0, elements = 0, transmits = 0, samples = 0;
  int stride = 0;  ///< floats between channels (AnalyticData::stride_for(samples))
  int model = kPlaneWave, window = 0, linear = 1;
  int lateral_shift = 0;  ///< log2 of Plan::lateral_lanes(): how thread_pixel places a block's threads
  double x0 = 0, dx = 0, z0 = 0, dz = 0;  ///< grid (m), in double as on the CPU
  float inv_c_fs = 0, t0_fs = 0;         ///< fs / c (samples per metre), t0 * fs (samples)
  float fnumber = 0, alpha = 0;          ///< receive F-number (0: full aperture), Tukey alpha
  float tx_fnumber = 0;                  ///< virtual sources only; 0 = every pixel takes every transmit
};

/// Per-transmit tables of every model, as pointers (device pointers in the kernels, host pointers
/// in the CPU tests); only the arrays of the problem's model are read.
struct TransmitArrays {
  const float* cos_a = nullptr;        ///< plane wave: cos(angle)
  const float* sin_a = nullptr;        ///< plane wave: sin(angle)
  const float* x_reference = nullptr;  ///< plane wave: x (m) of the wavefront's time zero
  const int* tx_element = nullptr;     ///< synthetic aperture: the firing element
  const float* src_x = nullptr;        ///< diverging and focused waves: virtual source x (m)
  const float* src_z = nullptr;        ///< diverging and focused waves: virtual source z (m)
  const float* src_r0 = nullptr;       ///< diverging and focused waves: reference distance (m)
  const float* src_waist = nullptr;    ///< diverging and focused waves: the cone's smallest half-width (m)
  const int* column_transmit = nullptr;  ///< scanline: column ix takes transmit [ix] only; nullptr: all
};

/// Everything the host computes once per problem: the scalars, the host copies of the tables the
/// device receives, and the launch sizes.
struct Plan {
  Params params;
  DasCudaKernel kernel = DasCudaKernel::PixelPerThread;  ///< never Auto
  DasTables tables;                  ///< what the device receives (make_das_tables)
  std::size_t data_floats = 0;       ///< floats of I (and of Q): stride * elements * transmits
  /// Bytes of (I, Q) interleaved, 2 floats a sample: what the plane-wave kernels read.
  std::size_t interleaved_bytes() const { return 2 * sizeof(float) * data_floats; }
  /// Transmit-blocked only: transmits a launch takes, a multiple of kTransmitBlock; 0 = all in
  /// one launch. With several, launch k beamforms transmits [k n, (k + 1) n) and adds them to
  /// what the launches before it left in the image (transmit_blocked_launch_size).
  int transmits_per_launch = 0;
  /// The pixel kernel's launches: several only for a transmit-blocked plan split by transmits.
  int launches() const { return (params.transmits + transmits_a_launch() - 1) / transmits_a_launch(); }
  /// Transmits each launch takes (the last: what is left): all of them unless split.
  int transmits_a_launch() const {
    return kernel == DasCudaKernel::TransmitBlocked && transmits_per_launch > 0 ? transmits_per_launch
                                                                                  : params.transmits;
  }
  /// Image columns a warp spans (a power of two, 1 to 32): a block is kBlockThreads / lateral_lanes()
  /// depths x lateral_lanes() columns (thread_pixel).
  int lateral_lanes() const { return 1 << params.lateral_shift; }
  int block_depths() const { return kBlockThreads / lateral_lanes(); }
  unsigned grid_x = 0, grid_y = 0;   ///< pixel kernels' grid: depth blocks x column blocks
  unsigned interleave_blocks = 0;    ///< interleave kernel's grid (element-outer, transmit-blocked)
  /// Whether the kernel reads I and Q interleaved (made on the device by the interleave kernel).
  bool interleaved() const { return kernel == DasCudaKernel::ElementOuter || kernel == DasCudaKernel::TransmitBlocked; }
  std::size_t pixels() const { return std::size_t(params.nx) * std::size_t(params.nz); }
};

/// The plane-wave kernel for Auto: transmit-blocked while the interleaved (I, Q) channel data fit
/// in 1.25 times the device's L2 cache (or when its size is not known, l2_bytes = 0), else
/// element-outer. Measured on an H200 (50 MiB of L2; tools/gpu-check.sh, 2026-12-04, PICMUS's
/// grid and geometry, points/s of transmit-blocked over element-outer): 1.39 at 20 MB of padded
/// (I, Q) data (7 transmits), 1.18-1.19 at 28 MB (8), 1.05 at 56 MB (16), 0.86 at 111 MB (32), 0.76 at 260 MB
/// (75). Transmit-blocked reads 8 transmits of every element before moving on, element-outer
/// every transmit of one element; past the cache, the first's working set misses and the second's
/// does not, which outweighs its recomputed transmit delays.
inline DasCudaKernel plane_wave_kernel(std::size_t data_bytes, std::size_t l2_bytes) {
  return l2_bytes == 0 || data_bytes <= l2_bytes + l2_bytes / 4 ? DasCudaKernel::TransmitBlocked
                                                                : DasCudaKernel::ElementOuter;
}

/// Transmits a launch of the transmit-blocked kernel takes (Plan::transmits_per_launch): 0 (one
/// launch) while all the (I, Q) data fit where plane_wave_kernel takes that kernel (1.25 times
/// the L2 cache, or the L2's size is unknown, l2_bytes = 0); past that, the most whole blocks of
/// kTransmitBlock transmits whose data fill at most 0.6 times the L2, and at least one block.
/// Why: one launch over all the transmits lets its resident blocks work on transmits far apart,
/// so that their working set outgrows the cache (0.76 times element-outer's points/s at PICMUS's
/// 260 MB on an H200), while launches of a few transmits each read data that stay in it (8
/// transmits of PICMUS's geometry, 28 MB: 1.18-1.19 times element-outer). The split's cost: each
/// launch after the first reads and writes the image once more (11 MB at PICMUS's 801 x 1701
/// pixels) and ends with a partly filled wave. Not yet timed on a GPU (tools/gpu-check.sh times
/// it beside the single launch).
inline int transmit_blocked_launch_size(std::size_t data_bytes, int transmits, std::size_t l2_bytes) {
  if (l2_bytes == 0 || transmits <= 0 || data_bytes <= l2_bytes + l2_bytes / 4) return 0;
  const std::size_t per_transmit = data_bytes / std::size_t(transmits);
  const std::size_t fit = per_transmit == 0 ? std::size_t(transmits) : (l2_bytes * 3 / 5) / per_transmit;
  const int blocks = std::max<int>(1, int(std::min<std::size_t>(fit, std::size_t(transmits)) / kTransmitBlock));
  const int size = blocks * kTransmitBlock;
  return size >= transmits ? 0 : size;
}

/// The plan of a problem for a kernel (Auto: plane_wave_kernel for plane waves, given the device's
/// L2 size in bytes, 0 if unknown; else pixel-per-thread). tuning.transmits_per_launch, for the
/// transmit-blocked kernel: -1 = transmit_blocked_launch_size for l2_bytes, else 0 (one launch) or
/// a multiple of kTransmitBlock; tuning.lateral_lanes: one of kLateralLaneChoices (a plan with a
/// scanline transmit apodization takes 1: each column takes its own transmit, and a warp over
/// several columns would run their transmits one after another). Throws usrecon::Error for an
/// invalid problem, the element-outer or transmit-blocked kernel on another model, a grid of more
/// block rows than one launch can have, a launch size that is not whole transmit blocks, or
/// lateral lanes that are not a choice.
inline Plan make_plan(const DasProblem& problem, DasCudaKernel kernel, std::size_t l2_bytes = 0,
                      const DasCudaTuning& tuning = {}) {
  problem.validate();
  const Acquisition& acq = problem.acquisition;
  const bool plane_wave = acq.model == Model::PlaneWave;
  if ((kernel == DasCudaKernel::ElementOuter || kernel == DasCudaKernel::TransmitBlocked) && !plane_wave)
    throw Error("CUDA DAS: the " + to_string(kernel) + " kernel is for plane waves only");
  if (std::find(std::begin(kLateralLaneChoices), std::end(kLateralLaneChoices), tuning.lateral_lanes) ==
      std::end(kLateralLaneChoices)) {
    std::string choices;
    for (const int l : kLateralLaneChoices) choices += (choices.empty() ? "" : ", ") + std::to_string(l);
    throw Error("CUDA DAS: lateral lanes must be one of " + choices + ", not " + std::to_string(tuning.lateral_lanes));
  }
  // Before any size arithmetic (AnalyticData::stride_for): the kernels clamp positions to the
  // channel's length in float, exact up to 2^24 samples.
  if (problem.samples > (1 << 24))
    throw Error("CUDA DAS: " + std::to_string(problem.samples) + " samples a channel are more than the kernels take (2^24)");
  Plan plan;
  Params& p = plan.params;
  p.nx = problem.grid.nx;
  p.nz = problem.grid.nz;
  p.elements = acq.probe.elements;
  p.transmits = acq.transmits();
  p.samples = problem.samples;
  p.stride = AnalyticData::stride_for(problem.samples);
  p.model = plane_wave ? kPlaneWave : has_virtual_sources(acq.model) ? kVirtualSource : kSyntheticAperture;
  p.window = static_cast<int>(problem.options.window);
  p.linear = problem.options.interp == Interp::Linear;
  p.x0 = problem.grid.x0;
  p.dx = problem.grid.dx;
  p.z0 = problem.grid.z0;
  p.dz = problem.grid.dz;
  p.inv_c_fs = static_cast<float>(acq.fs / acq.sound_speed);
  p.t0_fs = static_cast<float>(acq.t0 * acq.fs);
  p.fnumber = static_cast<float>(problem.options.fnumber);
  p.alpha = static_cast<float>(problem.options.tukey_alpha);
  p.tx_fnumber = static_cast<float>(problem.options.tx_fnumber);

  plan.tables = make_das_tables(problem);
  const int lanes = plan.tables.column_transmit.empty() ? tuning.lateral_lanes : 1;
  if ((std::int64_t(problem.grid.nx) + lanes - 1) / lanes > kMaxBlockRows)
    throw Error("CUDA DAS: at most " + std::to_string(std::size_t(kMaxBlockRows) * lanes) + " image columns at " +
                std::to_string(lanes) + " lateral lanes (nx = " + std::to_string(problem.grid.nx) + ")");
  p.lateral_shift = std::countr_zero(unsigned(lanes));

  plan.data_floats = std::size_t(p.stride) * p.elements * p.transmits;
  plan.kernel = kernel != DasCudaKernel::Auto ? kernel
                : plane_wave ? plane_wave_kernel(plan.interleaved_bytes(), l2_bytes)
                             : DasCudaKernel::PixelPerThread;
  // The programs index samples with 32-bit ints (one integer add and one address per sample):
  // at most 2^31 - 1 values per I/Q array, 8 GiB each, with room for one transmit more (the
  // element-outer program forms the index after its last transmit's).
  if (plan.data_floats + std::size_t(p.elements) * p.stride > std::size_t(INT32_MAX))
    throw Error("CUDA DAS: " + std::to_string(plan.data_floats) +
                " channel-data values per I/Q array (transmits x elements x padded samples) are more than "
                "the kernels' 32-bit sample index reaches (2^31 - 1); beamform fewer transmits at a time");
  const int per_launch = tuning.transmits_per_launch;
  if (per_launch < -1 || (per_launch > 0 && per_launch % kTransmitBlock != 0))
    throw Error("CUDA DAS: transmits a launch must be whole blocks of " + std::to_string(kTransmitBlock) +
                " (or 0, all of them; -1, chosen from the L2 cache), not " + std::to_string(per_launch));
  if (plan.kernel == DasCudaKernel::TransmitBlocked)
    plan.transmits_per_launch = per_launch >= 0 ? (per_launch >= p.transmits ? 0 : per_launch)
                                                : transmit_blocked_launch_size(plan.interleaved_bytes(), p.transmits, l2_bytes);
  plan.grid_x = static_cast<unsigned>((p.nz + plan.block_depths() - 1) / plan.block_depths());
  plan.grid_y = static_cast<unsigned>((p.nx + lanes - 1) / lanes);
  plan.interleave_blocks = static_cast<unsigned>((plan.data_floats + kInterleaveThreads - 1) / kInterleaveThreads);
  return plan;
}

/// The pixel of thread (block_x, block_y, thread_x) of a pixel kernel, its x and z (m) computed in
/// double from the grid and then rounded, as on the CPU. False for a thread past the grid's edge.
/// With L = 2^p.lateral_shift lateral lanes, thread t of a block takes depth t / L and column
/// t % L of the block's (kBlockThreads / L) x L tile: a warp (32 consecutive t) is 32 / L depths
/// of L neighbouring columns, lateral fastest.
USRECON_HD inline bool thread_pixel(const Params& p, unsigned block_x, unsigned block_y, unsigned thread_x, int& ix,
                                    int& iz, float& x, float& z) {
  const unsigned shift = static_cast<unsigned>(p.lateral_shift);
  iz = static_cast<int>(block_x * (unsigned(kBlockThreads) >> shift) + (thread_x >> shift));
  ix = static_cast<int>((block_y << shift) | (thread_x & ((1u << shift) - 1u)));
  if (iz >= p.nz || ix >= p.nx) return false;
  x = static_cast<float>(p.x0 + ix * p.dx);
  z = static_cast<float>(p.z0 + iz * p.dz);
  return true;
}

/// The pixel-per-thread program (any model): transmits outer, elements inner. Each transmit's sum
/// is weighted as a whole by its transmit apodization (1 without a transmit F-number).
USRECON_HD inline void pixel_every_transmit(const Params& p, const float* I, const float* Q, const TransmitArrays& tr,
                                            const float* ex, int ix, float x, float z, float& out_i, float& out_q) {
  float acc_i = 0.f, acc_q = 0.f;
  for (int t = 0; t < p.transmits; ++t) {
    if (tr.column_transmit && t != tr.column_transmit[ix]) continue;
    float tx, tx_weight = 1.f;
    if (p.model == kPlaneWave) {
      tx = sample_position(planewave_transmit_distance(x, z, tr.cos_a[t], tr.sin_a[t], tr.x_reference[t]), p.inv_c_fs,
                           p.t0_fs);
    } else if (p.model == kVirtualSource) {
      tx = sample_position(virtual_source_transmit_distance(x, z, tr.src_x[t], tr.src_z[t], tr.src_r0[t]), p.inv_c_fs,
                           p.t0_fs);
      tx_weight = virtual_source_apodization(x, z, tr.src_x[t], tr.src_z[t], p.tx_fnumber, tr.src_waist[t], p.window,
                                             p.alpha);
      if (tx_weight == 0.f) continue;
    } else {
      tx = receive_distance(x, z, ex[tr.tx_element[t]]) * p.inv_c_fs - p.t0_fs;
    }
    float sum_i = 0.f, sum_q = 0.f;
    for (int e = 0; e < p.elements; ++e) {
      const float xe = ex[e];
      const float w = receive_apodization(x, z, xe, p.fnumber, p.window, p.alpha);
      if (w == 0.f) continue;
      const float pos = tx + receive_distance(x, z, xe) * p.inv_c_fs;
      const int channel = (t * p.elements + e) * p.stride + AnalyticData::kFront;  // < 2^31: make_plan
      // Unfused, as on the CPU: with a fused blend and accumulation (hd_fma) this kernel needed
      // a 33rd register, and ptxas kept 32 and spilled 16 bytes in the loop (sm_90, 2026-12-04).
      const float vi =
          p.linear ? interp_linear_padded(I, channel, p.samples, pos) : interp_nearest_padded(I, channel, p.samples, pos);
      const float vq =
          p.linear ? interp_linear_padded(Q, channel, p.samples, pos) : interp_nearest_padded(Q, channel, p.samples, pos);
      sum_i += w * vi;
      sum_q += w * vq;
    }
    acc_i += tx_weight * sum_i;
    acc_q += tx_weight * sum_q;
  }
  out_i = acc_i;
  out_q = acc_q;
}

/// One point of the plane-wave programs: the (I, Q) pair at sample position pos of the channel
/// starting at iq[channel] (interp_linear_pair_padded_fma or interp_nearest_pair_padded), weighted
/// by w and added into acc_i, acc_q with fused multiply-adds.
template <bool kLinear, class Pair>
USRECON_HD inline void accumulate_point(const Pair* iq, int channel, int samples, float pos, float w, float& acc_i,
                                        float& acc_q) {
  float vi, vq;
  if constexpr (kLinear)
    interp_linear_pair_padded_fma(iq, channel, samples, pos, vi, vq);
  else
    interp_nearest_pair_padded(iq, channel, samples, pos, vi, vq);
  acc_i = hd_fma(w, vi, acc_i);
  acc_q = hd_fma(w, vq, acc_q);
}

/// The element-outer program (plane waves): elements outer, transmits inner, so that each
/// element's receive distance (a square root) and apodization serve every transmit. iq holds
/// (I, Q) interleaved; Pair is CUDA's float2 on the device, any struct with float x, y on the host.
template <bool kLinear, class Pair>
USRECON_HD inline void pixel_element_outer(const Params& p, const Pair* iq, const float* cos_a, const float* sin_a,
                                           const float* x_reference, const float* ex, float x, float z, float& out_i,
                                           float& out_q) {
  const int transmit_step = p.elements * p.stride;  // pairs from (t, e) to (t + 1, e); all < 2^31: make_plan
  float acc_i = 0.f, acc_q = 0.f;
  for (int e = 0; e < p.elements; ++e) {
    const float xe = ex[e];
    const float w = receive_apodization(x, z, xe, p.fnumber, p.window, p.alpha);
    if (w == 0.f) continue;
    const float rx = receive_distance(x, z, xe) * p.inv_c_fs;
    // The index after the last transmit's is formed too: make_plan leaves room for it.
    int channel = e * p.stride + AnalyticData::kFront;
    for (int t = 0; t < p.transmits; ++t, channel += transmit_step) {
      const float tx =
          sample_position(planewave_transmit_distance(x, z, cos_a[t], sin_a[t], x_reference[t]), p.inv_c_fs, p.t0_fs);
      accumulate_point<kLinear>(iq, channel, p.samples, tx + rx, w, acc_i, acc_q);
    }
  }
  out_i = acc_i;
  out_q = acc_q;
}

/// One block of kCount transmits (first, first + 1, ...) of the transmit-blocked program, added
/// into acc_i, acc_q: the block's transmit sample positions in registers (every index is a
/// constant after unrolling), then elements outer (receive distance and apodization once per
/// element), the block's transmits inner. kCount is a template argument so that no point tests
/// whether its transmit exists: the loop over the block is straight code.
template <int kCount, bool kLinear, class Pair>
USRECON_HD inline void transmit_block(const Params& p, const Pair* iq, const float* cos_a, const float* sin_a,
                                      const float* x_reference, const float* ex, float x, float z, int first,
                                      float& acc_i, float& acc_q) {
  const int transmit_step = p.elements * p.stride;  // pairs from (t, e) to (t + 1, e); all < 2^31: make_plan
  // Each transmit's sample position of the transmit path, and where its element 0's samples start
  // in iq, so that a sample's index is one add away (element offset, plus the sample's own).
  float tx[kCount];
  int first_channel[kCount];
  USRECON_UNROLL
  for (int j = 0; j < kCount; ++j) {
    const int t = first + j;
    tx[j] = sample_position(planewave_transmit_distance(x, z, cos_a[t], sin_a[t], x_reference[t]), p.inv_c_fs,
                            p.t0_fs);
    first_channel[j] = t * transmit_step + AnalyticData::kFront;
  }
  for (int e = 0, element = 0; e < p.elements; ++e, element += p.stride) {
    const float xe = ex[e];
    const float w = receive_apodization(x, z, xe, p.fnumber, p.window, p.alpha);
    if (w == 0.f) continue;
    const float rx = receive_distance(x, z, xe) * p.inv_c_fs;
    USRECON_UNROLL
    for (int j = 0; j < kCount; ++j) {
      accumulate_point<kLinear>(iq, first_channel[j] + element, p.samples, tx[j] + rx, w, acc_i, acc_q);
    }
  }
}

/// The transmit-blocked program (plane waves): transmits [first, end) in blocks of
/// kTransmitBlock, each block's sample positions of the transmit path kept in registers, and the
/// receive distance and apodization computed once per element and block (transmit_block); the
/// last block holds the transmits left over. Adds into acc_i, acc_q (what the launches before
/// left: Plan::transmits_per_launch; zero for the first), so that a plan split at multiples of
/// kTransmitBlock computes the one launch's sums in its order, bit for bit. Reads iq as
/// pixel_element_outer does.
template <bool kLinear, class Pair>
USRECON_HD inline void pixel_transmit_blocked(const Params& p, const Pair* iq, const float* cos_a, const float* sin_a,
                                              const float* x_reference, const float* ex, float x, float z, int first,
                                              int end, float& acc_i, float& acc_q) {
  static_assert(kTransmitBlock == 8, "the switch below names every size of the last block");
  for (; end - first >= kTransmitBlock; first += kTransmitBlock)
    transmit_block<kTransmitBlock, kLinear>(p, iq, cos_a, sin_a, x_reference, ex, x, z, first, acc_i, acc_q);
  const auto tail = [&]<int kCount>() {
    transmit_block<kCount, kLinear>(p, iq, cos_a, sin_a, x_reference, ex, x, z, first, acc_i, acc_q);
  };
  switch (end - first) {
    case 1: tail.template operator()<1>(); break;
    case 2: tail.template operator()<2>(); break;
    case 3: tail.template operator()<3>(); break;
    case 4: tail.template operator()<4>(); break;
    case 5: tail.template operator()<5>(); break;
    case 6: tail.template operator()<6>(); break;
    case 7: tail.template operator()<7>(); break;
    default: break;  // 0: the blocks were full
  }
}

}  // namespace usrecon::recon::das::gpu
