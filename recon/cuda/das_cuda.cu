// The general DAS on CUDA: one thread per pixel (depth fastest across a warp, so neighbouring
// threads read neighbouring samples) with the same USRECON_HD delay, apodization and
// interpolation functions as the CPU kernels, in the same operation order per sample (receive and
// transmit paths scaled to samples separately, then added), so that the two backends agree to
// float rounding (the order of the sum over transmits and elements may differ).
//
// Two kernels (DasCudaKernel): das_kernel loops transmits, then elements, for any model;
// das_planewave_kernel loops elements, then transmits, so that each element's receive distance
// (a square root) and apodization are computed once per pixel, not once per transmit, and reads
// I and Q interleaved ([t][e][stride] float2, made on the device by interleave_kernel).
#include <cuda_runtime.h>

#include <cmath>
#include <string>
#include <vector>

#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/delay/virtual_source.hpp"
#include "usrecon/recon/delay/planewave.hpp"
#include "usrecon/recon/delay/synthetic_aperture.hpp"

namespace usrecon::recon {
namespace {

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
template <class T>
using DevicePtr = std::unique_ptr<T, DeviceFree>;

template <class T>
DevicePtr<T> device_alloc(std::size_t n) {
  void* p = nullptr;
  USRECON_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)));
  return DevicePtr<T>(static_cast<T*>(p));
}

enum ModelCode : int { kPlaneWave = 0, kSyntheticAperture = 1, kVirtualSource = 2 };  // kVirtualSource: dw, fw

struct Params {
  int nx, nz, elements, transmits, samples, stride, model, window, linear;
  double x0, dx, z0, dz;
  float inv_c_fs, t0_fs, fnumber, alpha, tx_fnumber;  // tx_fnumber: virtual sources only, 0 = off
};

/// The pixel of this thread: depth index fastest across the block, one image column per block
/// row. x and z are computed in double from the grid, then rounded, as on the CPU. False when the
/// thread is past the grid's edge.
__device__ inline bool thread_pixel(const Params& p, int& ix, int& iz, float& x, float& z) {
  iz = blockIdx.x * blockDim.x + threadIdx.x;
  ix = blockIdx.y;
  if (iz >= p.nz || ix >= p.nx) return false;
  x = static_cast<float>(p.x0 + ix * p.dx);
  z = static_cast<float>(p.z0 + iz * p.dz);
  return true;
}

/// Per-transmit geometry of every model (only the arrays of the problem's model are filled).
struct TransmitArrays {
  const float* cos_a;        // plane wave
  const float* sin_a;        // plane wave
  const float* x_reference;  // plane wave
  const int* tx_element;     // synthetic aperture
  const float* src_x;        // diverging and focused waves: virtual source x (m)
  const float* src_z;        // diverging and focused waves: virtual source z (m)
  const float* src_r0;       // diverging and focused waves: reference distance (m)
  const int* column_transmit;  // scanline transmit apodization: column ix takes transmit [ix] only; nullptr: all
  const float* src_waist;      // diverging and focused waves: the transmit cone's smallest half-width (m)
};

__global__ void das_kernel(Params p, const float* __restrict__ I, const float* __restrict__ Q,
                           TransmitArrays tr, const float* __restrict__ ex, float2* __restrict__ out) {
  int ix, iz;
  float x, z;
  if (!thread_pixel(p, ix, iz, x, z)) return;
  float acc_i = 0.f, acc_q = 0.f;
  for (int t = 0; t < p.transmits; ++t) {
    if (tr.column_transmit && t != tr.column_transmit[ix]) continue;
    float tx, tx_weight = 1.f;  // tx_weight: the transmit F-number's (1 when there is none)
    float sum_i = 0.f, sum_q = 0.f;
    if (p.model == kPlaneWave) {
      tx = das::sample_position(
          das::planewave_transmit_distance(x, z, tr.cos_a[t], tr.sin_a[t], tr.x_reference[t]), p.inv_c_fs,
          p.t0_fs);
    } else if (p.model == kVirtualSource) {
      tx = das::sample_position(das::virtual_source_transmit_distance(x, z, tr.src_x[t], tr.src_z[t], tr.src_r0[t]),
                                p.inv_c_fs, p.t0_fs);
      tx_weight = das::virtual_source_apodization(x, z, tr.src_x[t], tr.src_z[t], p.tx_fnumber, tr.src_waist[t],
                                                  p.window, p.alpha);
      if (tx_weight == 0.f) continue;
    } else {
      tx = das::receive_distance(x, z, ex[tr.tx_element[t]]) * p.inv_c_fs - p.t0_fs;
    }
    // The transmit's sum, weighted as a whole (by 1 without a transmit F-number).
    for (int e = 0; e < p.elements; ++e) {
      const float xe = ex[e];
      const float w = das::receive_apodization(x, z, xe, p.fnumber, p.window, p.alpha);
      if (w == 0.f) continue;
      const float pos = tx + das::receive_distance(x, z, xe) * p.inv_c_fs;
      const std::size_t off = (std::size_t(t) * p.elements + e) * p.stride + AnalyticData::kFront;
      const float vi = p.linear ? das::interp_linear(I + off, p.samples, pos)
                                : das::interp_nearest(I + off, p.samples, pos);
      const float vq = p.linear ? das::interp_linear(Q + off, p.samples, pos)
                                : das::interp_nearest(Q + off, p.samples, pos);
      sum_i += w * vi;
      sum_q += w * vq;
    }
    acc_i += tx_weight * sum_i;
    acc_q += tx_weight * sum_q;
  }
  out[std::size_t(ix) * p.nz + iz] = make_float2(acc_i, acc_q);
}

/// iq[k] = (I[k], Q[k]) over the padded [t][e][stride] storage.
__global__ void interleave_kernel(const float* __restrict__ I, const float* __restrict__ Q,
                                  float2* __restrict__ iq, std::size_t n) {
  const std::size_t k = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < n) iq[k] = make_float2(I[k], Q[k]);
}

template <bool kLinear>
__global__ void das_planewave_kernel(Params p, const float2* __restrict__ iq,
                                     const float* __restrict__ cos_a, const float* __restrict__ sin_a,
                                     const float* __restrict__ x_reference,
                                     const float* __restrict__ ex, float2* __restrict__ out) {
  int ix, iz;
  float x, z;
  if (!thread_pixel(p, ix, iz, x, z)) return;
  const std::size_t transmit_step = std::size_t(p.elements) * p.stride;  // float2s from (t, e) to (t + 1, e)
  float acc_i = 0.f, acc_q = 0.f;
  for (int e = 0; e < p.elements; ++e) {
    const float xe = ex[e];
    const float w = das::receive_apodization(x, z, xe, p.fnumber, p.window, p.alpha);
    if (w == 0.f) continue;
    const float rx = das::receive_distance(x, z, xe) * p.inv_c_fs;
    const float2* channel = iq + std::size_t(e) * p.stride + AnalyticData::kFront;
    for (int t = 0; t < p.transmits; ++t, channel += transmit_step) {
      const float tx = das::sample_position(
          das::planewave_transmit_distance(x, z, cos_a[t], sin_a[t], x_reference[t]), p.inv_c_fs, p.t0_fs);
      const float pos = tx + rx;
      float vi, vq;
      if constexpr (kLinear)
        das::interp_linear_pair(channel, p.samples, pos, vi, vq);
      else
        das::interp_nearest_pair(channel, p.samples, pos, vi, vq);
      acc_i += w * vi;
      acc_q += w * vq;
    }
  }
  out[std::size_t(ix) * p.nz + iz] = make_float2(acc_i, acc_q);
}

}  // namespace

struct DasCudaBeamformer::Impl {
  DasProblem problem;
  Params params{};
  DevicePtr<float> cos_a, sin_a, x_reference, ex, i, q, src_x, src_z, src_r0, src_waist;
  DevicePtr<int> tx_element, column_transmit;
  DevicePtr<float2> out, iq;  // iq: interleaved I/Q for the element-outer kernel
  DasCudaKernel kernel = DasCudaKernel::PixelPerThread;
  std::size_t data_floats = 0;
  cudaEvent_t start = nullptr, stop = nullptr;
  double kernel_s = 0.0;
  std::string device;
  ~Impl() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

DasCudaBeamformer::DasCudaBeamformer(const DasProblem& problem, DasCudaKernel kernel)
    : impl_(std::make_unique<Impl>()) {
  problem.validate();
  const bool plane_wave = problem.acquisition.model == Model::PlaneWave;
  if (kernel == DasCudaKernel::ElementOuter && !plane_wave)
    throw Error("CUDA DAS: the element-outer kernel is for plane waves only");
  if (problem.grid.nx > 65535)  // one block row per image column: gridDim.y <= 65535
    throw Error("CUDA DAS: at most 65535 image columns (nx = " + std::to_string(problem.grid.nx) + ")");
  require_cuda("the CUDA DAS beamformer");
  Impl& c = *impl_;
  c.problem = problem;
  c.kernel = kernel == DasCudaKernel::Auto ? (plane_wave ? DasCudaKernel::ElementOuter : DasCudaKernel::PixelPerThread)
                                           : kernel;
  const Acquisition& acq = problem.acquisition;
  Params& p = c.params;
  p.nx = problem.grid.nx;
  p.nz = problem.grid.nz;
  p.elements = acq.probe.elements;
  p.transmits = acq.transmits();
  p.samples = problem.samples;
  p.stride = (AnalyticData::kFront + problem.samples + AnalyticData::kBack + 15) / 16 * 16;
  p.model = acq.model == Model::PlaneWave ? kPlaneWave
            : has_virtual_sources(acq.model) ? kVirtualSource
                                                : kSyntheticAperture;
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

  std::vector<float> ca, sa, xf, ex;
  for (int e = 0; e < acq.probe.elements; ++e) ex.push_back(static_cast<float>(acq.probe.element_x(e)));
  std::vector<int> te = acq.tx_elements;
  const float x_min = static_cast<float>(acq.probe.element_x(0));
  const float x_max = static_cast<float>(acq.probe.element_x(acq.probe.elements - 1));
  for (double a : acq.angles) {
    ca.push_back(static_cast<float>(std::cos(a)));
    sa.push_back(static_cast<float>(std::sin(a)));
    xf.push_back(das::planewave_x_reference(static_cast<float>(a), x_min, x_max, acq.time_zero));
  }
  if (acq.model == Model::SyntheticAperture && te.empty())
    for (int e = 0; e < acq.probe.elements; ++e) te.push_back(e);
  std::vector<float> sx, sz, sr;
  const std::vector<double> positions = acq.probe.positions();
  for (std::size_t t = 0; t < acq.source_x.size(); ++t) {
    sx.push_back(static_cast<float>(acq.source_x[t]));
    sz.push_back(static_cast<float>(acq.source_z[t]));
    sr.push_back(static_cast<float>(
        das::virtual_source_reference_distance(acq.source_x[t], acq.source_z[t], positions, acq.time_zero)));
  }
  const auto upload = [](DevicePtr<float>& to, const std::vector<float>& from) {
    to = device_alloc<float>(from.size());
    USRECON_CUDA_CHECK(cudaMemcpy(to.get(), from.data(), from.size() * sizeof(float), cudaMemcpyHostToDevice));
  };
  upload(c.src_x, sx);
  upload(c.src_z, sz);
  upload(c.src_r0, sr);
  std::vector<float> waists;
  for (double waist : das::virtual_source_waists(acq.source_x, acq.probe.pitch)) waists.push_back(static_cast<float>(waist));
  upload(c.src_waist, waists);
  c.cos_a = device_alloc<float>(ca.size());
  c.sin_a = device_alloc<float>(sa.size());
  c.x_reference = device_alloc<float>(xf.size());
  c.tx_element = device_alloc<int>(te.size());
  c.ex = device_alloc<float>(ex.size());
  USRECON_CUDA_CHECK(cudaMemcpy(c.ex.get(), ex.data(), ex.size() * sizeof(float), cudaMemcpyHostToDevice));
  USRECON_CUDA_CHECK(cudaMemcpy(c.cos_a.get(), ca.data(), ca.size() * sizeof(float), cudaMemcpyHostToDevice));
  USRECON_CUDA_CHECK(cudaMemcpy(c.sin_a.get(), sa.data(), sa.size() * sizeof(float), cudaMemcpyHostToDevice));
  USRECON_CUDA_CHECK(cudaMemcpy(c.x_reference.get(), xf.data(), xf.size() * sizeof(float), cudaMemcpyHostToDevice));
  USRECON_CUDA_CHECK(cudaMemcpy(c.tx_element.get(), te.data(), te.size() * sizeof(int), cudaMemcpyHostToDevice));
  if (const std::vector<int> lines = problem.column_transmits(); !lines.empty()) {
    c.column_transmit = device_alloc<int>(lines.size());
    USRECON_CUDA_CHECK(
        cudaMemcpy(c.column_transmit.get(), lines.data(), lines.size() * sizeof(int), cudaMemcpyHostToDevice));
  }
  c.data_floats = std::size_t(p.stride) * p.elements * p.transmits;
  c.i = device_alloc<float>(c.data_floats);
  c.q = device_alloc<float>(c.data_floats);
  c.out = device_alloc<float2>(problem.grid.pixels());
  if (c.kernel == DasCudaKernel::ElementOuter) c.iq = device_alloc<float2>(c.data_floats);
  USRECON_CUDA_CHECK(cudaEventCreate(&c.start));
  USRECON_CUDA_CHECK(cudaEventCreate(&c.stop));
  int dev = 0;
  cudaDeviceProp prop{};
  USRECON_CUDA_CHECK(cudaGetDevice(&dev));
  USRECON_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  c.device = prop.name;
}

DasCudaBeamformer::~DasCudaBeamformer() = default;
DasCudaBeamformer::DasCudaBeamformer(DasCudaBeamformer&&) noexcept = default;
DasCudaBeamformer& DasCudaBeamformer::operator=(DasCudaBeamformer&&) noexcept = default;

void DasCudaBeamformer::beamform(const AnalyticData& data, std::complex<float>* out) {
  Impl& c = *impl_;
  const Params& p = c.params;
  if (data.samples != p.samples || data.elements != p.elements || data.transmits != p.transmits ||
      data.stride != p.stride)
    throw Error("CUDA DAS: the data do not match the beamformer's problem");
  USRECON_CUDA_CHECK(cudaMemcpy(c.i.get(), data.i.data(), c.data_floats * sizeof(float), cudaMemcpyHostToDevice));
  USRECON_CUDA_CHECK(cudaMemcpy(c.q.get(), data.q.data(), c.data_floats * sizeof(float), cudaMemcpyHostToDevice));
  constexpr int kThreads = 128;
  const dim3 grid((p.nz + kThreads - 1) / kThreads, p.nx);
  // The events time everything on the device after the copies in: the interleave too.
  USRECON_CUDA_CHECK(cudaEventRecord(c.start));
  if (c.kernel == DasCudaKernel::ElementOuter) {
    const unsigned blocks = static_cast<unsigned>((c.data_floats + 255) / 256);
    interleave_kernel<<<blocks, 256>>>(c.i.get(), c.q.get(), c.iq.get(), c.data_floats);
    USRECON_CUDA_CHECK_LAUNCH(interleave_kernel);
    if (p.linear)
      das_planewave_kernel<true><<<grid, kThreads>>>(p, c.iq.get(), c.cos_a.get(), c.sin_a.get(),
                                                      c.x_reference.get(), c.ex.get(), c.out.get());
    else
      das_planewave_kernel<false><<<grid, kThreads>>>(p, c.iq.get(), c.cos_a.get(), c.sin_a.get(),
                                                       c.x_reference.get(), c.ex.get(), c.out.get());
    USRECON_CUDA_CHECK_LAUNCH(das_planewave_kernel);
  } else {
    const TransmitArrays tr{c.cos_a.get(), c.sin_a.get(),  c.x_reference.get(), c.tx_element.get(),
                            c.src_x.get(), c.src_z.get(),  c.src_r0.get(),      c.column_transmit.get(),
                            c.src_waist.get()};
    das_kernel<<<grid, kThreads>>>(p, c.i.get(), c.q.get(), tr, c.ex.get(), c.out.get());
    USRECON_CUDA_CHECK_LAUNCH(das_kernel);
  }
  USRECON_CUDA_CHECK(cudaEventRecord(c.stop));
  USRECON_CUDA_CHECK(cudaEventSynchronize(c.stop));
  float ms = 0.f;
  USRECON_CUDA_CHECK(cudaEventElapsedTime(&ms, c.start, c.stop));
  c.kernel_s = ms * 1e-3;
  USRECON_CUDA_CHECK(cudaMemcpy(out, c.out.get(), c.problem.grid.pixels() * sizeof(float2),
                                cudaMemcpyDeviceToHost));
}

double DasCudaBeamformer::last_kernel_seconds() const { return impl_->kernel_s; }
std::string DasCudaBeamformer::device() const { return impl_->device; }
DasCudaKernel DasCudaBeamformer::kernel() const { return impl_->kernel; }

}  // namespace usrecon::recon
