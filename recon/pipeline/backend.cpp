// Backend selection: the CPU beamformer, and CUDA when it is there.
#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "usrecon/kernels/cuda_memory.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/pipeline.hpp"
#include "usrecon/recon/seed_cpu.hpp"

namespace usrecon::recon {
namespace {

class CpuSeedBackend final : public SeedBackend {
 public:
  CpuSeedBackend(const seed::Problem& problem, int threads)
      : beamformer_(problem, seed::full_window(problem)),
        threads_(threads > 0 ? threads : kernels::hardware_threads()),
        frame_values_(std::size_t(problem.channels) * std::size_t(problem.samples)) {}

  void beamform(std::span<const std::int32_t> rf, std::span<double> out) override {
    beamformer_.beamform(rf, out, threads_);
  }
  nlohmann::json describe() const override {
    return {{"name", "cpu"}, {"kernel", seed::to_string(beamformer_.kernel())}, {"threads", threads_}};
  }
  // Three slots: the next frame is parsed while one is beamformed and one waits for it.
  int slots() const override { return int(inputs_.size()); }
  // Allocated at first use, not with the backend: a batch of one frame needs one slot, and a
  // --samples far larger than the files hold is refused by the reader before it asks for one.
  // Left uninitialised: the parser writes every value before the frame is used.
  std::span<std::int32_t> input(int slot) override {
    std::unique_ptr<std::int32_t[]>& buffer = inputs_.at(std::size_t(slot));
    if (!buffer) buffer = std::make_unique_for_overwrite<std::int32_t[]>(frame_values_);
    return {buffer.get(), frame_values_};
  }
  void submit(int) override {}
  void collect(int slot, std::span<double> out) override { beamform(input(slot), out); }
  void discard(int) override {}

 private:
  seed::SeedCpuBeamformer beamformer_;
  int threads_;
  std::size_t frame_values_;  // channels x samples
  std::array<std::unique_ptr<std::int32_t[]>, 3> inputs_;  // rf[ch * samples + s] each
};

// The seed model on the GPU (seed_cuda.hpp). Double precision is bit-exact with the CPU.
class CudaSeedBackend final : public SeedBackend {
 public:
  CudaSeedBackend(const seed::Problem& problem, seed::Precision precision)
      : beamformer_(problem, seed::full_window(problem), precision) {
    // One page-locked input buffer per stream, allocated once for the whole batch.
    for (int slot = 0; slot < beamformer_.streams(); ++slot)
      inputs_.emplace_back(std::size_t(problem.channels) * problem.samples);
  }

  void beamform(std::span<const std::int32_t> rf, std::span<double> out) override {
    last_ = beamformer_.beamform(rf, out);
  }
  nlohmann::json describe() const override {
    return {{"name", "cuda"},
            {"device", beamformer_.device_name()},
            {"precision", seed::to_string(beamformer_.precision())},
            {"exact", true}};
  }
  nlohmann::json last_timing_s() const override {
    return {{"h2d", last_.h2d_ms * 1e-3}, {"kernel", last_.kernel_ms * 1e-3}, {"d2h", last_.d2h_ms * 1e-3}};
  }
  int slots() const override { return beamformer_.streams(); }
  std::span<std::int32_t> input(int slot) override {
    auto& buffer = inputs_.at(std::size_t(slot));
    return {buffer.data(), buffer.size()};
  }
  void submit(int slot) override { beamformer_.enqueue(slot, input(slot)); }
  void collect(int slot, std::span<double> out) override {
    const std::span<const double> image = beamformer_.finish(slot, &last_);
    if (image.size() != out.size()) throw Error("seed model (CUDA): collected image has the wrong size");
    std::copy(image.begin(), image.end(), out.begin());
  }
  void discard(int slot) override {
    if (beamformer_.pending(slot)) (void)beamformer_.finish(slot);
  }

 private:
  // Declared first, so freed last: the beamformer's destructor waits for copies still reading
  // from these page-locked inputs.
  std::vector<kernels::PinnedBuffer<std::int32_t>> inputs_;
  seed::SeedCudaBeamformer beamformer_;
  seed::GpuTiming last_;
};

}  // namespace

BackendKind parse_backend(std::string_view name) {
  if (name == "auto") return BackendKind::Auto;
  if (name == "cpu") return BackendKind::Cpu;
  if (name == "cuda") return BackendKind::Cuda;
  throw Error("unknown backend '" + std::string(name) + "' (expected auto, cpu or cuda)");
}

std::unique_ptr<SeedBackend> make_seed_backend(BackendKind kind, const seed::Problem& problem,
                                               int threads, std::string* notice,
                                               seed::Precision precision) {
  if (notice) notice->clear();
  if (kind == BackendKind::Cuda) return std::make_unique<CudaSeedBackend>(problem, precision);
  if (kind == BackendKind::Auto) {
    // CudaUnavailable (no build support, driver, device or memory) falls back; any other CUDA
    // error is a real failure and propagates.
    std::string why;
    if (cuda_device_count() == 0) {
      why = built_with_cuda() ? "none found" : "built without CUDA";
    } else {
      try {
        return std::make_unique<CudaSeedBackend>(problem, precision);
      } catch (const CudaUnavailable& e) {
        why = e.what();
      }
    }
    if (notice) *notice = "no CUDA device (" + why + "); using the CPU";
  }
  return std::make_unique<CpuSeedBackend>(problem, threads);
}

}  // namespace usrecon::recon
