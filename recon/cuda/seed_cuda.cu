// The seed model on a CUDA GPU. The per-thread program (gpu::thread_pixels) and the plan live in
// seed_cuda.hpp, host-device, so CPU tests run exactly what this kernel runs; this file adds the
// launch, the device buffers and the streams.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda_memory.hpp"
#include "usrecon/recon/seed_cuda.hpp"

namespace usrecon::recon::seed {
namespace {

namespace k = usrecon::kernels;

template <int kPixels, int kLanes, int kSplits, int kPairStep, int kLoadsAhead, class Real, class Sample, class Acc>
__global__ void __launch_bounds__(gpu::kBlockDepths* gpu::kBlockColumns)
    seed_kernel(gpu::Args<Real, Sample> a, int groups, int lane_columns, int q_split, int ni, int nj,
                double* out) {
  int ir = 0, c = 0, split = 0;  // ir < ni_pad: the table is padded
  const bool active = gpu::thread_position<kLanes, kSplits>(blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y,
                                                            groups, lane_columns, ir, c, &split);
  if constexpr (kSplits == 1) {
    if (!active) return;
  }
  const int jj = gpu::first_lateral<kPixels>(c, groups);
  Acc acc[kPixels];
  if (active) {
    int q_begin, q_end;
    gpu::split_range<kPixels>(split, kSplits, a.channels, q_split, q_begin, q_end);
    gpu::thread_pixels<kPixels, Real, true, kPairStep, kLoadsAhead>(a, ir, jj, acc, q_begin, q_end);
  }
  if constexpr (kSplits > 1) {
    // The slot's other splits hand their sums to split 0 ([slot][m][lane]: conflict-free). Every
    // thread reaches the barrier, the inactive ones of a last part-filled block too.
    __shared__ Acc partial[gpu::kBlockColumns / kSplits][kSplits - 1][kPixels][gpu::kBlockDepths];
    const int slot = threadIdx.y / kSplits;
    if (active && split > 0) {
#pragma unroll
      for (int m = 0; m < kPixels; ++m) partial[slot][split - 1][m][threadIdx.x] = acc[m];
    }
    __syncthreads();
    if (!active || split > 0) return;
#pragma unroll
    for (int k = 0; k < kSplits - 1; ++k) {
#pragma unroll
      for (int m = 0; m < kPixels; ++m) acc[m] += partial[slot][k][m][threadIdx.x];
    }
  }
  if (ir >= ni) return;
#pragma unroll
  for (int m = 0; m < kPixels; ++m) {
    const int col = jj + Problem::kElementStep * m;
    if (col < nj) out[std::size_t(col) * ni + ir] = double(acc[m]);
  }
}

/// The windowed layout of a frame (seed_cuda.hpp) from its zero-padded int32 channels, as Sample
/// (int16 only for frames whose samples fit: frame_types): n = Plan::windows_size() elements,
/// each gpu::window_element, the rule the host's make_windows follows too.
template <class Sample>
__global__ void make_windows(const std::int32_t* padded, int channels, int stride, int pixels,
                             Sample* windows, std::int64_t n) {
  for (std::int64_t e = k::cuda::global_index_1d(); e < n; e += k::cuda::grid_stride_1d())
    windows[e] = static_cast<Sample>(gpu::window_element(padded, channels, stride, pixels, e));
}
constexpr int kWindowThreads = 256;

/// The kernel for the plan's pixels per thread, lateral lanes, pair splits and pairs a step (a
/// function pointer: launches and the occupancy calculator take the same one).
template <class Real, class Sample, class Acc>
auto kernel_for(const gpu::Plan& plan) {
  return gpu::with_split(plan.split, [](auto pixels, auto lanes, auto splits, auto step, auto ahead) {
    return &seed_kernel<decltype(pixels)::value, decltype(lanes)::value, decltype(splits)::value,
                        decltype(step)::value, decltype(ahead)::value, Real, Sample, Acc>;
  });
}

template <class Real, class Sample, class Acc>
std::string kernel_name(const gpu::Plan& plan) {
  return "seed_kernel<" + std::to_string(plan.split.pixels) + ", " + std::to_string(plan.split.lateral_lanes) + ", " +
         std::to_string(plan.split.pair_splits) + ", " + std::to_string(plan.split.pair_step) + ", " +
         std::to_string(plan.split.loads_ahead) + ", " +
         (sizeof(Real) == 8 ? "double" : "float") + ", " +
         (sizeof(Sample) == 2 ? "int16" : "int32") + ", " + (sizeof(Acc) == 8 ? "int64" : "int32") +
         ">";
}

template <class Real, class Sample, class Acc>
void launch(const gpu::Plan& plan, const gpu::Args<Real, Sample>& args, double* out,
            cudaStream_t stream) {
  kernel_for<Real, Sample, Acc>(plan)<<<dim3(plan.grid_x, plan.grid_y),
                                        dim3(gpu::kBlockDepths, gpu::kBlockColumns), 0, stream>>>(
      args, plan.groups, plan.lane_columns, plan.q_split, plan.w.ni, plan.w.nj, out);
  const std::string name = kernel_name<Real, Sample, Acc>(plan);
  USRECON_CUDA_CHECK_LAUNCH(name.c_str());
}

template <class Real>
void prefer_l1(const gpu::Plan& plan) {
  // The kernels gather from L1: give it all the unified cache that their shared memory leaves.
  // At one pair split they use none (carveout 0). With pair splits each block holds its splits'
  // sums in shared memory, and a carveout below what the resident blocks need would cap them:
  // ask for what the blocks a multiprocessor can hold by their registers and threads need (the
  // occupancy with the largest carveout, where shared memory does not bind: 5 to 9 blocks at
  // 56 to 108 registers, not the 2048 / 128 threads = 16 that took 80 KB where 35 KB do), the
  // driver's reserved shared memory a block included.
  int device = 0, per_sm = 0, reserved = 0;
  USRECON_CUDA_CHECK(cudaGetDevice(&device));
  USRECON_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  USRECON_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  const auto carveout = [&](auto kernel) {
    cudaFuncAttributes attributes{};
    USRECON_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    int percent = 0;
    if (attributes.sharedSizeBytes > 0 && per_sm > 0) {
      constexpr int kThreads = gpu::kBlockDepths * gpu::kBlockColumns;
      int blocks = 2048 / kThreads;  // the most a multiprocessor holds, if the calculator says nothing
      USRECON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
      int resident = 0;
      USRECON_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, 0));
      if (resident > 0 && resident < blocks) blocks = resident;
      const long long needed = blocks * (static_cast<long long>(attributes.sharedSizeBytes) + reserved);
      percent = static_cast<int>(std::min<long long>(100, (100 * needed + per_sm - 1) / per_sm));
    }
    USRECON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent));
  };
  carveout(kernel_for<Real, std::int16_t, int>(plan));
  carveout(kernel_for<Real, std::int32_t, int>(plan));
  carveout(kernel_for<Real, std::int32_t, long long>(plan));
}

/// The windows of the frame in `padded`, then the kernel for its types (frame_types): int16
/// samples, or int32 with int32 or int64 sums.
template <class Real>
void launch_for(const gpu::Plan& plan, const Real* table, const std::int32_t* padded,
                std::int32_t* windows32, const gpu::FrameTypes& types, double* out,
                cudaStream_t stream) {
  const Problem& p = plan.p;
  // A 16-bit frame's windows take the first half of the same (cudaMalloc-aligned) buffer.
  std::int16_t* const windows16 = reinterpret_cast<std::int16_t*>(windows32);
  const std::int64_t n = std::int64_t(plan.windows_size());
  const unsigned blocks = k::cuda::grid_1d(n, kWindowThreads);
  if (types.int16_samples) {
    make_windows<<<blocks, kWindowThreads, 0, stream>>>(padded, p.channels, plan.stride,
                                                        plan.split.pixels, windows16, n);
    USRECON_CUDA_CHECK_LAUNCH("make_windows<int16>");
    const gpu::Args<Real, std::int16_t> args{table,        windows16,   plan.ni_pad, plan.dj_min,
                                             plan.stride,  p.channels,  plan.w.i0,   plan.w.j0};
    launch<Real, std::int16_t, int>(plan, args, out, stream);
    return;
  }
  make_windows<<<blocks, kWindowThreads, 0, stream>>>(padded, p.channels, plan.stride, plan.split.pixels,
                                                      windows32, n);
  USRECON_CUDA_CHECK_LAUNCH("make_windows<int32>");
  const gpu::Args<Real, std::int32_t> args{table,       windows32,  plan.ni_pad, plan.dj_min,
                                           plan.stride, p.channels, plan.w.i0,   plan.w.j0};
  if (types.int32_sums) launch<Real, std::int32_t, int>(plan, args, out, stream);
  else launch<Real, std::int32_t, long long>(plan, args, out, stream);
}

}  // namespace

struct SeedCudaBeamformer::Impl {
  gpu::Plan plan;
  Precision precision = Precision::Double;
  std::string device;
  k::DeviceBuffer<double> table64;
  k::DeviceBuffer<float> table32;
  struct Slot {
    k::Stream stream;
    k::DeviceBuffer<std::int32_t> rf;   // zero-padded channels, stride plan.stride
    // rf's windows: int32 for the frames that need it, else int16 in the first half (one buffer,
    // as a frame uses one layout or the other).
    k::DeviceBuffer<std::int32_t> windows;
    k::DeviceBuffer<double> out;        // the image
    k::PinnedBuffer<double> host_out;   // where the image comes back
    k::PinnedBuffer<std::int32_t> staging;  // beamform(): pageable input copied here first
    k::Event start, h2d_done, kernel_done, d2h_done;
    bool pending = false;
  };
  std::vector<Slot> slots;

  // The slots' buffers must outlive the work enqueued on them, whether the beamformer is
  // destroyed or assigned over (the members are freed after this body); errors cannot be
  // reported from here.
  ~Impl() {
    for (Slot& s : slots)
      if (s.pending) cudaStreamSynchronize(s.stream.get());
  }

  Slot& slot(int s) {
    if (s < 0 || s >= int(slots.size()))
      throw Error("seed CUDA backend: slot " + std::to_string(s) + " out of range");
    return slots[std::size_t(s)];
  }
};

SeedCudaBeamformer::SeedCudaBeamformer(const Problem& problem, const Window& window,
                                       Precision precision, int streams, const gpu::WorkSplit& split)
    : impl_(std::make_unique<Impl>()) {
  // The arguments first, as DasCudaBeamformer does: a wrong problem, split or stream count is an
  // Error with or without a device, never CudaUnavailable (whose callers fall back to the CPU).
  if (streams < 1 || streams > 16) throw Error("seed CUDA backend: streams must be in [1, 16]");
  Impl& c = *impl_;
  c.plan = gpu::make_plan(problem, window, split);
  require_cuda("--backend cuda (the seed model's CUDA backend)");
  c.precision = precision;
  int device = 0;
  USRECON_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  USRECON_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  c.device = prop.name;

  // The distance table depends on the geometry alone: computed and uploaded once.
  if (precision == Precision::Double) {
    const std::vector<double> table = gpu::make_table<double>(c.plan);
    c.table64 = k::DeviceBuffer<double>(table.size());
    k::copy(c.table64.span(), std::span<const double>(table));
    prefer_l1<double>(c.plan);
  } else {
    const std::vector<float> table = gpu::make_table<float>(c.plan);
    c.table32 = k::DeviceBuffer<float>(table.size());
    k::copy(c.table32.span(), std::span<const float>(table));
    prefer_l1<float>(c.plan);
  }
  const std::size_t pixels = std::size_t(window.ni) * window.nj;
  c.slots.reserve(std::size_t(streams));
  for (int s = 0; s < streams; ++s) {
    Impl::Slot slot{k::Stream(),
                    k::DeviceBuffer<std::int32_t>(c.plan.rf_size()),
                    k::DeviceBuffer<std::int32_t>(c.plan.windows_size()),
                    k::DeviceBuffer<double>(pixels),
                    k::PinnedBuffer<double>(pixels),
                    k::PinnedBuffer<std::int32_t>(std::size_t(problem.channels) * problem.samples),
                    k::Event(), k::Event(), k::Event(), k::Event()};
    slot.rf.zero();  // the padding stays zero: frames overwrite only the first `samples` per channel
    c.slots.push_back(std::move(slot));
  }
  // The table's upload (pageable memory: cudaMemcpy may return before its DMA ends) and the
  // zeroing went to the legacy stream, which the slots' non-blocking streams do not wait for.
  USRECON_CUDA_CHECK(cudaDeviceSynchronize());
}

SeedCudaBeamformer::~SeedCudaBeamformer() = default;  // Impl waits for pending slots
SeedCudaBeamformer::SeedCudaBeamformer(SeedCudaBeamformer&&) noexcept = default;
SeedCudaBeamformer& SeedCudaBeamformer::operator=(SeedCudaBeamformer&&) noexcept = default;

void SeedCudaBeamformer::enqueue(int s, std::span<const std::int32_t> rf) {
  Impl& c = *impl_;
  Impl::Slot& slot = c.slot(s);
  const Problem& p = c.plan.p;
  if (slot.pending) throw Error("seed CUDA backend: slot " + std::to_string(s) + " is still busy");
  if (rf.size() != std::size_t(p.channels) * p.samples)
    throw Error("seed model: channel data has " + std::to_string(rf.size()) + " values, expected " +
                std::to_string(std::size_t(p.channels) * p.samples));
  const gpu::FrameTypes types = gpu::frame_types(p.channels, rf);
  cudaStream_t stream = slot.stream.get();

  try {
    slot.start.record(slot.stream);
    // Host -> device into the padded layout: one strided copy, the padding is left as it is.
    USRECON_CUDA_CHECK(cudaMemcpy2DAsync(slot.rf.data(), sizeof(std::int32_t) * c.plan.stride,
                                         rf.data(), sizeof(std::int32_t) * p.samples,
                                         sizeof(std::int32_t) * p.samples, p.channels,
                                         cudaMemcpyHostToDevice, stream));
    slot.h2d_done.record(slot.stream);
    if (c.precision == Precision::Double)
      launch_for<double>(c.plan, c.table64.data(), slot.rf.data(), slot.windows.data(), types,
                         slot.out.data(), stream);
    else
      launch_for<float>(c.plan, c.table32.data(), slot.rf.data(), slot.windows.data(), types,
                        slot.out.data(), stream);
    slot.kernel_done.record(slot.stream);
    k::copy_async(slot.host_out.span(), slot.out.cspan(), slot.stream);
    slot.d2h_done.record(slot.stream);
  } catch (...) {
    // The slot stays free, so the caller may refill `rf` (pinned) at once: the copy queued
    // before the failure must not read it any more. The error thrown is the one that counts.
    (void)cudaStreamSynchronize(stream);
    throw;
  }
  slot.pending = true;
}

std::span<const double> SeedCudaBeamformer::finish(int s, GpuTiming* timing) {
  Impl::Slot& slot = impl_->slot(s);
  if (!slot.pending) throw Error("seed CUDA backend: slot " + std::to_string(s) + " has no frame");
  slot.pending = false;  // whatever happens next, the slot is free again
  slot.d2h_done.synchronize();
  if (timing) {
    timing->h2d_ms = k::Event::elapsed_ms(slot.start, slot.h2d_done);
    timing->kernel_ms = k::Event::elapsed_ms(slot.h2d_done, slot.kernel_done);
    timing->d2h_ms = k::Event::elapsed_ms(slot.kernel_done, slot.d2h_done);
  }
  return slot.host_out.cspan();
}

bool SeedCudaBeamformer::pending(int s) const {
  return const_cast<Impl&>(*impl_).slot(s).pending;
}

GpuTiming SeedCudaBeamformer::beamform(std::span<const std::int32_t> rf, std::span<double> out) {
  Impl& c = *impl_;
  if (out.size() != std::size_t(c.plan.w.ni) * c.plan.w.nj)
    throw Error("seed model: output has " + std::to_string(out.size()) + " values, expected " +
                std::to_string(std::size_t(c.plan.w.ni) * c.plan.w.nj));
  Impl::Slot& slot = c.slot(0);
  if (slot.pending) finish(0);
  if (rf.size() != slot.staging.size())
    throw Error("seed model: channel data has " + std::to_string(rf.size()) + " values, expected " +
                std::to_string(slot.staging.size()));
  std::memcpy(slot.staging.data(), rf.data(), rf.size_bytes());
  enqueue(0, slot.staging.cspan());
  GpuTiming timing;
  const std::span<const double> image = finish(0, &timing);
  std::memcpy(out.data(), image.data(), image.size_bytes());
  return timing;
}

int SeedCudaBeamformer::streams() const { return int(impl_->slots.size()); }
const gpu::Plan& SeedCudaBeamformer::plan() const { return impl_->plan; }
Precision SeedCudaBeamformer::precision() const { return impl_->precision; }
const std::string& SeedCudaBeamformer::device_name() const { return impl_->device; }

double SeedCudaBeamformer::waves() const {
  const Impl& c = *impl_;
  constexpr int kThreads = gpu::kBlockDepths * gpu::kBlockColumns;
  int per_sm = 0, device = 0, sms = 0;
  if (c.precision == Precision::Double)
    USRECON_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, kernel_for<double, std::int16_t, int>(c.plan), kThreads, 0));
  else
    USRECON_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, kernel_for<float, std::int16_t, int>(c.plan), kThreads, 0));
  USRECON_CUDA_CHECK(cudaGetDevice(&device));
  USRECON_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (per_sm <= 0 || sms <= 0)
    throw Error("seed CUDA backend: the kernel cannot be resident on this device");
  return double(c.plan.grid_x) * c.plan.grid_y / (double(per_sm) * sms);
}

}  // namespace usrecon::recon::seed
