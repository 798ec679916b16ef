// The general DAS on CUDA: device buffers (the kernel library's RAII), uploads and launches. The
// plan and the per-thread programs are host-device, in usrecon/recon/das_cuda.hpp, so that CPU
// tests run what these kernels run; the kernels here only find their pixel and call them.
//
// Three programs (DasCudaKernel): das_kernel runs pixel_every_transmit (transmits, then elements;
// any model); das_planewave_kernel runs pixel_element_outer (elements, then transmits) or
// pixel_transmit_blocked (blocks of 8 transmits, elements, the block's transmits), which read I
// and Q interleaved ([t][e][stride] float2, made on the device by interleave_kernel).
#include <cuda_runtime.h>

#include <algorithm>
#include <complex>
#include <span>
#include <string>
#include <vector>

#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/cuda_memory.hpp"
#include "usrecon/recon/das_cuda.hpp"

namespace usrecon::recon {
namespace {

namespace k = usrecon::kernels;
namespace g = das::gpu;


/// out's index of this thread's pixel (out[ix * nz + iz]), found again with thread_pixel after
/// the pixel's program instead of kept from the kernel's start. Why (ptxas, sm_90, CUDA 13.0):
/// kept, ix and iz held registers through the programs' loops: das_kernel took 37 registers
/// instead of 32 once the lateral lanes' shift was a runtime value, and the linear
/// transmit-blocked kernel 48 with 8 bytes of spills instead of 40 once it read the image the
/// launches before it left (4f318bb, never run on a GPU). Found again, every kernel has the
/// registers it had when the H200 measured it, with no spills.
__device__ __forceinline__ std::size_t output_index(const g::Params& p) {
  unsigned block_x, block_y, thread_x;  // read anew (volatile: not reused from the kernel's start)
  asm volatile("mov.u32 %0, %%ctaid.x; mov.u32 %1, %%ctaid.y; mov.u32 %2, %%tid.x;"
               : "=r"(block_x), "=r"(block_y), "=r"(thread_x));
  int ix, iz;
  float x, z;
  (void)g::thread_pixel(p, block_x, block_y, thread_x, ix, iz, x, z);
  return std::size_t(ix) * p.nz + iz;
}

__global__ void __launch_bounds__(g::kBlockThreads)
    das_kernel(g::Params p, const float* __restrict__ I, const float* __restrict__ Q, g::TransmitArrays tr,
               const float* __restrict__ ex, float2* __restrict__ out) {
  int ix, iz;
  float x, z;
  if (!g::thread_pixel(p, blockIdx.x, blockIdx.y, threadIdx.x, ix, iz, x, z)) return;
  float2 v;
  g::pixel_every_transmit(p, I, Q, tr, ex, ix, x, z, v.x, v.y);
  out[output_index(p)] = v;
}

/// iq[k] = (I[k], Q[k]) over the padded [t][e][stride] storage.
__global__ void interleave_kernel(const float* __restrict__ I, const float* __restrict__ Q,
                                  float2* __restrict__ iq, std::size_t n) {
  const std::size_t k = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < n) iq[k] = make_float2(I[k], Q[k]);
}

/// The plane-wave kernels: pixel_element_outer, or pixel_transmit_blocked when kBlocked over
/// transmits [first, end), added to the image the launches before left when first > 0.
template <bool kLinear, bool kBlocked>
__global__ void __launch_bounds__(g::kBlockThreads)
    das_planewave_kernel(g::Params p, const float2* __restrict__ iq, const float* __restrict__ cos_a,
                         const float* __restrict__ sin_a, const float* __restrict__ x_reference,
                         const float* __restrict__ ex, int first, int end, float2* __restrict__ out) {
  int ix, iz;
  float x, z;
  if (!g::thread_pixel(p, blockIdx.x, blockIdx.y, threadIdx.x, ix, iz, x, z)) return;
  float2 v = make_float2(0.f, 0.f);
  if constexpr (kBlocked) {
    if (first > 0) v = out[std::size_t(ix) * p.nz + iz];  // what the launches before left
    g::pixel_transmit_blocked<kLinear>(p, iq, cos_a, sin_a, x_reference, ex, x, z, first, end, v.x, v.y);
  } else {
    g::pixel_element_outer<kLinear>(p, iq, cos_a, sin_a, x_reference, ex, x, z, v.x, v.y);
  }
  out[output_index(p)] = v;
}

template <class T>
k::DeviceBuffer<T> upload(const std::vector<T>& host) {
  k::DeviceBuffer<T> device(host.size());
  k::copy(device.span(), std::span<const T>(host));
  return device;
}

}  // namespace

struct DasCudaBeamformer::Impl {
  DasProblem problem;
  g::Plan plan;
  // The plan's tables on the device (empty, and so null, where the model has none).
  k::DeviceBuffer<float> ex, cos_a, sin_a, x_reference, src_x, src_z, src_r0, src_waist;
  k::DeviceBuffer<int> tx_element, column_transmit;
  k::DeviceBuffer<float> i, q;       // the frame's analytic signal, [t][e][stride]
  k::DeviceBuffer<float2> iq, out;   // iq: interleaved I/Q (plane-wave kernels); out: the image
  k::Event start, stop;
  double kernel_s = 0.0;
  std::string device;
};

DasCudaBeamformer::DasCudaBeamformer(const DasProblem& problem, DasCudaKernel kernel, DasCudaTuning tuning) {
  // The plan first: an invalid problem or tuning is an Error with or without a device. Then the
  // device check, before Impl's events and buffers (which would need one) are made.
  g::Plan plan = g::make_plan(problem, kernel, 0, tuning);
  require_cuda("the CUDA DAS beamformer");
  if (problem.acquisition.model == Model::PlaneWave) {
    // Auto's plane-wave kernel, and how many launches the transmit-blocked one takes, depend on
    // how the data compare with this device's L2 cache.
    int device = 0, l2 = 0;
    USRECON_CUDA_CHECK(cudaGetDevice(&device));
    USRECON_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    const std::size_t l2_bytes = std::size_t(std::max(l2, 0));
    if (kernel == DasCudaKernel::Auto) plan.kernel = g::plane_wave_kernel(plan.interleaved_bytes(), l2_bytes);
    if (plan.kernel != DasCudaKernel::TransmitBlocked)
      plan.transmits_per_launch = 0;  // auto took element-outer: one launch
    else if (tuning.transmits_per_launch < 0)
      plan.transmits_per_launch =
          g::transmit_blocked_launch_size(plan.interleaved_bytes(), plan.params.transmits, l2_bytes);
  }
  impl_ = std::make_unique<Impl>();
  Impl& c = *impl_;
  c.ex = upload(plan.tables.ex);
  c.cos_a = upload(plan.tables.cos_a);
  c.sin_a = upload(plan.tables.sin_a);
  c.x_reference = upload(plan.tables.x_reference);
  c.tx_element = upload(plan.tables.tx_element);
  c.src_x = upload(plan.tables.src_x);
  c.src_z = upload(plan.tables.src_z);
  c.src_r0 = upload(plan.tables.src_r0);
  c.src_waist = upload(plan.tables.src_waist);
  c.column_transmit = upload(plan.tables.column_transmit);
  c.i = k::DeviceBuffer<float>(plan.data_floats);
  c.q = k::DeviceBuffer<float>(plan.data_floats);
  c.out = k::DeviceBuffer<float2>(plan.pixels());
  if (plan.interleaved()) c.iq = k::DeviceBuffer<float2>(plan.data_floats);
  int dev = 0;
  cudaDeviceProp prop{};
  USRECON_CUDA_CHECK(cudaGetDevice(&dev));
  USRECON_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  c.device = prop.name;
  c.plan = std::move(plan);
  c.problem = problem;
}

DasCudaBeamformer::~DasCudaBeamformer() = default;
DasCudaBeamformer::DasCudaBeamformer(DasCudaBeamformer&&) noexcept = default;
DasCudaBeamformer& DasCudaBeamformer::operator=(DasCudaBeamformer&&) noexcept = default;

void DasCudaBeamformer::beamform(const AnalyticData& data, std::complex<float>* out) {
  Impl& c = *impl_;
  const g::Plan& plan = c.plan;
  const g::Params& p = plan.params;
  if (data.samples != p.samples || data.elements != p.elements || data.transmits != p.transmits)
    throw Error("CUDA DAS: the data do not match the beamformer's problem");
  // Stride and sizes (so the copies below fill the device buffers exactly), and the zero padding
  // the kernels read instead of bounds-checking.
  data.check_layout("CUDA DAS");
  k::copy(c.i.span(), std::span<const float>(data.i));
  k::copy(c.q.span(), std::span<const float>(data.q));
  const dim3 grid(plan.grid_x, plan.grid_y);
  // The events time everything on the device after the copies in: the interleave too.
  c.start.record();
  if (plan.interleaved()) {  // the plane-wave kernels: I and Q interleaved first
    interleave_kernel<<<plan.interleave_blocks, g::kInterleaveThreads>>>(c.i.data(), c.q.data(), c.iq.data(),
                                                                        plan.data_floats);
    USRECON_CUDA_CHECK_LAUNCH("interleave_kernel");
    const bool blocked = plan.kernel == DasCudaKernel::TransmitBlocked;
    const auto kernel = blocked ? (p.linear ? das_planewave_kernel<true, true> : das_planewave_kernel<false, true>)
                                : (p.linear ? das_planewave_kernel<true, false> : das_planewave_kernel<false, false>);
    // Transmit-blocked plans may split the transmits over launches (Plan::transmits_per_launch),
    // each adding its share to the image; in order, on one stream.
    const int per_launch = plan.transmits_a_launch();
    for (int first = 0; first < p.transmits; first += per_launch) {
      kernel<<<grid, g::kBlockThreads>>>(p, c.iq.data(), c.cos_a.data(), c.sin_a.data(), c.x_reference.data(),
                                        c.ex.data(), first, std::min(first + per_launch, p.transmits), c.out.data());
      USRECON_CUDA_CHECK_LAUNCH(blocked ? "das_planewave_kernel (transmit-blocked)"
                                        : "das_planewave_kernel (element-outer)");
    }
  } else {
    g::TransmitArrays tr;
    tr.cos_a = c.cos_a.data();
    tr.sin_a = c.sin_a.data();
    tr.x_reference = c.x_reference.data();
    tr.tx_element = c.tx_element.data();
    tr.src_x = c.src_x.data();
    tr.src_z = c.src_z.data();
    tr.src_r0 = c.src_r0.data();
    tr.src_waist = c.src_waist.data();
    tr.column_transmit = c.column_transmit.data();  // null without a scanline apodization: every transmit
    das_kernel<<<grid, g::kBlockThreads>>>(p, c.i.data(), c.q.data(), tr, c.ex.data(), c.out.data());
    USRECON_CUDA_CHECK_LAUNCH("das_kernel");
  }
  c.stop.record();
  c.stop.synchronize();
  c.kernel_s = k::Event::elapsed_ms(c.start, c.stop) * 1e-3;
  k::copy(std::span<float2>(reinterpret_cast<float2*>(out), plan.pixels()), c.out.cspan());
}

double DasCudaBeamformer::last_kernel_seconds() const { return impl_->kernel_s; }
std::string DasCudaBeamformer::device() const { return impl_->device; }
DasCudaKernel DasCudaBeamformer::kernel() const { return impl_->plan.kernel; }
int DasCudaBeamformer::transmits_per_launch() const { return impl_->plan.transmits_per_launch; }
int DasCudaBeamformer::lateral_lanes() const { return impl_->plan.lateral_lanes(); }
const DasProblem& DasCudaBeamformer::problem() const { return impl_->problem; }

}  // namespace usrecon::recon
