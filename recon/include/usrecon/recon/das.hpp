// General delay-and-sum: plane-wave compounding and synthetic aperture, on the CPU and CUDA.
//
// Input is RF channel data (ChannelData). It is first turned into its analytic signal I + jQ per
// channel (Hilbert transform along time), so that beamforming sums complex samples and the
// envelope of the image is simply |image|. Then, for every pixel (x, z):
//
//   image(x, z) = sum over transmits t, receive elements e of
//                 apod_e(x, z) * interp(analytic[t][e], sample_t,e(x, z))
//
// with the sample positions of delay/planewave.hpp or delay/synthetic_aperture.hpp and the
// F-number apodization of delay/common.hpp. Every backend calls those same USRECON_HD functions.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "usrecon/recon/geometry.hpp"

namespace usrecon::recon {

/// Everything that fixes a beamforming job except the data.
struct DasProblem {
  Acquisition acquisition;
  Grid grid;
  DasOptions options;
  int samples = 0;  ///< samples per channel of the data
  /// Throws Error naming the first invalid parameter.
  void validate() const;
  /// Points of the job: pixels x receive elements x transmits summed at each pixel (all of them,
  /// or one with a scanline transmit apodization; a transmit F-number's zero weights, which the
  /// backends skip, still count): the benchmark unit.
  double points() const;
  /// The points whose weight is not zero: the (pixel, receive element, transmit) triples that a
  /// receive F-number, a transmit F-number or a scanline leaves in the sum, as the reference
  /// beamformer decides the weights (in float). The work the backends must do (the CPU kernels
  /// skip 16 depths of an element at once only where all their weights are zero; CUDA skips each
  /// zero weight); points() is the unit of the and mach's figures. A pass over every
  /// pixel and element: 0.1 to 0.3 s on a PICMUS-sized grid.
  double weighted_points() const;
  /// Scanline transmit apodization: the one transmit each image column takes (column_transmits()[ix],
  /// the nearest focal point laterally, the first of equally near ones); empty without one. Every
  /// backend uses this table, so they agree on columns midway between two focal points.
  std::vector<int> column_transmits() const;
  /// Same job: a beamformer built for one serves the other.
  bool operator==(const DasProblem&) const = default;
};

/// The per-transmit geometry the fast backends (CPU kernels, CUDA) read, in float, their
/// precision: made once per problem, by one function, so that the backends cannot differ in it.
/// Only the problem's own model's tables are filled; the others stay empty.
struct DasTables {
  std::vector<float> ex;                               ///< element x (m)
  std::vector<float> cos_a, sin_a, x_reference;        ///< plane waves: per transmit
  std::vector<int> tx_element;                         ///< synthetic aperture: the firing element
  std::vector<float> src_x, src_z, src_r0, src_waist;  ///< diverging and focused waves: per transmit
  std::vector<int> column_transmit;                    ///< scanline: column_transmits(), else empty
};
DasTables make_das_tables(const DasProblem& problem);

/// Analytic signal of every channel, stored the way the kernels read it: each channel is padded
/// with kFront zeros before and at least kBack zeros after its samples (so that a kernel may read
/// a small window past either end without a bounds check), channels `stride` floats apart.
struct AnalyticData {
  static constexpr int kFront = 16;
  static constexpr int kBack = 48;
  int samples = 0, elements = 0, transmits = 0, stride = 0;
  std::vector<float> i, q;
  const float* i_channel(int t, int e) const {
    return i.data() + (std::size_t(t) * elements + e) * stride + kFront;
  }
  const float* q_channel(int t, int e) const {
    return q.data() + (std::size_t(t) * elements + e) * stride + kFront;
  }
  /// Floats from one channel's start to the next's: the padded channel rounded up to 16 floats
  /// (64 bytes), so that every channel starts on a cache line.
  static constexpr int stride_for(int samples) { return (kFront + samples + kBack + 15) / 16 * 16; }
  /// Zeroed storage for the given sizes.
  static AnalyticData zeros(int samples, int elements, int transmits);
  /// Throws Error, prefixed with `who`, unless the storage is this layout: stride ==
  /// stride_for(samples), I and Q each stride x elements x transmits floats, and every float
  /// outside a channel's samples +0.0f, as zeros() leaves it. The beamformers call it first: the
  /// AVX-512 and CUDA kernels read the padding (kFront before a channel, kBack or more after it)
  /// in place of testing each position. Reads only the padding (64 floats a channel and more).
  void check_layout(const std::string& who) const;
};

/// The analytic signal of each channel of RF data (FFT, negative frequencies removed: scipy's
/// hilbert). threads = 0 uses every hardware thread. With upsample = k > 1 it is formed at k times
/// the rate by zero-padding the spectrum (band-limited interpolation: I at every k-th sample is the
/// data, to float rounding): linear interpolation between samples a quarter cycle apart (RF at 4
/// samples a cycle) dips the envelope by up to 3 dB midway (|1 + i| / 2), at k = 2 by 0.7 dB, at
/// k = 4 by 0.17 dB. At most 64.
AnalyticData analytic_signal(const ChannelData& rf, int threads = 0, int upsample = 1);

/// The mean phase step of analytic data between consecutive samples (radians, in [0, pi]), each
/// step weighted by the square of its first sample's power (the echoes', not the noise's): 2 pi /
/// it is the samples a cycle of the echoes' centre frequency, from at most 64 channels spread over
/// the data. 0 for data of zeros.
double mean_phase_step(const AnalyticData& data);

/// What interpolating the analytic signal at `samples_per_cycle` (of the echoes' centre
/// frequency, as beamformed: 2 pi / mean_phase_step) costs the image, when it costs more than at 8
/// samples a cycle: linear interpolation dips each channel's envelope midway between samples by
/// cos(pi / samples_per_cycle) (3 dB at 4, 0.7 dB at 8); nearest rounds each delay by up to half a
/// sample, 180 / samples_per_cycle degrees of phase (45 at 4, 22.5 at 8). 8 is met within 5 %,
/// the estimate's spread (noise at a tenth of the echoes' peak took 8 to 7.7).
struct InterpolationLoss {
  std::string what;  ///< "linear interpolation at about 4 samples a cycle dips ... by up to 3 dB ...",
                     ///< for the nearest whole number of samples a cycle (3 to 7): the same words
                     ///< for estimates a few percent apart
  int upsample = 1;  ///< the --upsample that gives at least 8 samples a cycle, from `upsample` now
};
/// The loss, or nothing where it is at least 8 samples a cycle (or unknown: 2 or fewer, data of
/// zeros). `upsample` is the --upsample the data were beamformed at.
std::optional<InterpolationLoss> interpolation_loss(Interp interp, double samples_per_cycle, int upsample);

/// Baseband IQ data: the sampling-rate multiple at which their analytic signal is beamformed, the
/// smallest k >= 1 with fs k >= 4 modulation_frequency (RF is sampled at 4x its centre frequency
/// for linear interpolation; the remodulated signal needs the same).
int iq_upsampling(double modulation_frequency, double fs);

/// The analytic signal of baseband IQ data (iq.is_iq()) sampled at fs, at fs * upsample: each
/// channel is interpolated by FFT zero-padding (exact for a band-limited, periodic channel), then
/// modulated back, s_analytic(t) = s_bb(t) exp(+j 2 pi f_mod t), at t = iq_time0 + k / (fs
/// upsample). Beamforming that signal equals USTB's baseband beamforming (interpolate, then
/// rotate by exp(j 2 pi f_mod tau)) with a band-limited interpolator in place of a linear one.
AnalyticData analytic_from_baseband(const ChannelData& iq, double fs, int upsample, int threads = 0);

/// Delays every channel of transmit t by delay_samples[t] samples (0 <= delay <= extra;
/// fractional, by a phase ramp on each channel's spectrum: exact for a band-limited channel),
/// into channels `extra` samples longer, so that transmits recorded from different moments share
/// one t0 (USTB's synthetic-aperture files time each element's shot differently).
AnalyticData delay_transmits(const AnalyticData& data, const std::vector<double>& delay_samples, int extra,
                             int threads = 0);

/// The plain reference: four nested loops over pixels, transmits and elements in double
/// precision, straight from the delay functions. Slow; the fast backends are tested against it.
Image das_reference(const AnalyticData& data, const DasProblem& problem);

/// CPU kernels: Auto picks AVX-512 when the CPU has it, else AVX2 (with FMA), else the portable
/// scalar loop. One binary holds all three.
enum class DasCpuKernel { Auto, Avx512, Avx2, Scalar };
std::string to_string(DasCpuKernel kernel);
/// Whether this CPU can run the kernel (Auto and Scalar: always).
bool das_cpu_supports(DasCpuKernel kernel);

/// The optimised CPU beamformer: threads over (column, depth chunk) tiles; per tile the receive
/// delays and apodization of every element are computed once for all transmits, and the inner
/// loop runs over consecutive depths, 16 per AVX-512 vector (8 per AVX2 vector), reading each
/// channel's samples through a window of two vectors and an in-register permute instead of
/// gathers.
class DasCpuBeamformer {
 public:
  DasCpuBeamformer(const DasProblem& problem, int threads = 0,
                   DasCpuKernel kernel = DasCpuKernel::Auto);
  ~DasCpuBeamformer();
  DasCpuBeamformer(DasCpuBeamformer&&) noexcept;
  DasCpuBeamformer& operator=(DasCpuBeamformer&&) noexcept;

  /// Beamforms one frame into out (problem.grid.pixels() values, lateral-major). Throws Error for
  /// data of another problem or not in AnalyticData's layout (AnalyticData::check_layout).
  void beamform(const AnalyticData& data, std::complex<float>* out) const;
  Image beamform(const AnalyticData& data) const;

  const DasProblem& problem() const;
  DasCpuKernel kernel() const;
  int threads() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// CUDA kernels. PixelPerThread: one thread per pixel looping over transmits, then elements
/// (any model). ElementOuter (plane waves): one thread per pixel looping over elements, then
/// transmits, so that each element's receive distance and apodization are computed once per
/// pixel rather than once per transmit, reading I and Q interleaved (one 8-byte load per sample).
/// TransmitBlocked (plane waves): transmits in blocks of 8 whose transmit delays are computed
/// once per pixel and kept in registers, elements inside a block, then the block's transmits:
/// a point costs an add, the interpolation and the accumulation, and a receive distance serves
/// 8 transmits. Auto, for plane waves: TransmitBlocked while the (I, Q) data fit in 1.25 times the
/// device's L2 cache, ElementOuter past that (gpu::plane_wave_kernel: on an H200, 1.39 times
/// faster with the 7 transmits of RFdata1, 0.76 times with PICMUS's 75); PixelPerThread for
/// synthetic aperture, diverging and focused waves. TransmitBlocked on data past 1.25 times the
/// L2 runs in launches of whole transmit blocks whose data fit in the cache
/// (gpu::transmit_blocked_launch_size), the same image bit for bit.
enum class DasCudaKernel { Auto, PixelPerThread, ElementOuter, TransmitBlocked };
std::string to_string(DasCudaKernel kernel);  // "auto", "pixel-per-thread", "element-outer", "transmit-blocked"
DasCudaKernel parse_das_cuda_kernel(std::string_view name);  // those names, else throws Error

/// How the CUDA DAS kernels divide their work, beyond the kernel itself. The defaults are the
/// layout measured on an H200; the image is the same bit for bit for every choice.
struct DasCudaTuning {
  /// The transmit-blocked kernel only: -1 = chosen from the device's L2 cache
  /// (gpu::transmit_blocked_launch_size), 0 = all in one launch, else a multiple of 8.
  int transmits_per_launch = -1;
  /// Image columns a warp spans (gpu::kLateralLaneChoices: 1, 2, 4, 8, 16 or 32): a warp is
  /// 32 / lateral_lanes consecutive depths of that many neighbouring columns, a block four such
  /// warps stacked in depth. 1 (32 depths of one column) is the measured layout. Plans with a
  /// scanline transmit apodization keep 1: each column takes its own transmit.
  int lateral_lanes = 1;
};

/// The CUDA beamformer: the same delay functions in a kernel, one thread per pixel. Construction
/// throws CudaUnavailable when no device can be used (always, in a build without CUDA), after
/// checking the problem and the tuning (an invalid one is an Error, device or not).
class DasCudaBeamformer {
 public:
  explicit DasCudaBeamformer(const DasProblem& problem, DasCudaKernel kernel = DasCudaKernel::Auto,
                             DasCudaTuning tuning = {});
  ~DasCudaBeamformer();
  DasCudaBeamformer(DasCudaBeamformer&&) noexcept;
  DasCudaBeamformer& operator=(DasCudaBeamformer&&) noexcept;

  /// Copies data to the device, beamforms, copies the image back into out. Throws Error for data
  /// of another problem or not in AnalyticData's layout (AnalyticData::check_layout).
  void beamform(const AnalyticData& data, std::complex<float>* out);
  /// Kernel time of the last beamform (seconds, CUDA events), excluding the copies.
  double last_kernel_seconds() const;
  /// Device name.
  std::string device() const;
  /// The kernel in use (never Auto).
  DasCudaKernel kernel() const;
  /// Transmits per launch of the transmit-blocked kernel (0: one launch; other kernels: 0).
  int transmits_per_launch() const;
  /// Image columns a warp spans (DasCudaTuning::lateral_lanes, as the plan took it).
  int lateral_lanes() const;
  /// The job it was built for.
  const DasProblem& problem() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace usrecon::recon
