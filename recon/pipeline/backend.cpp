// Backend selection: the CPU beamformer, and CUDA when it is there.
#include <string>

#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/pipeline.hpp"
#include "usrecon/recon/seed_cpu.hpp"

namespace usrecon::recon {
namespace {

class CpuSeedBackend final : public SeedBackend {
 public:
  CpuSeedBackend(const seed::Problem& problem, int threads)
      : beamformer_(problem, seed::full_window(problem)),
        threads_(threads > 0 ? threads : kernels::hardware_threads()) {}

  void beamform(std::span<const std::int32_t> rf, std::span<double> out) override {
    beamformer_.beamform(rf, out, threads_);
  }
  nlohmann::json describe() const override {
    return {{"name", "cpu"}, {"kernel", seed::to_string(beamformer_.kernel())}, {"threads", threads_}};
  }

 private:
  seed::SeedCpuBeamformer beamformer_;
  int threads_;
};

}  // namespace

BackendKind parse_backend(std::string_view name) {
  if (name == "auto") return BackendKind::Auto;
  if (name == "cpu") return BackendKind::Cpu;
  if (name == "cuda") return BackendKind::Cuda;
  throw Error("unknown backend '" + std::string(name) + "' (expected auto, cpu or cuda)");
}

std::unique_ptr<SeedBackend> make_seed_backend(BackendKind kind, const seed::Problem& problem,
                                               int threads, std::string* notice) {
  if (kind == BackendKind::Cuda)
    throw CudaUnavailable("--backend cuda: the CUDA backend of the seed model is not available yet "
                          "in this version; use --backend cpu or auto");
  if (kind == BackendKind::Auto && notice) *notice = "";
  return std::make_unique<CpuSeedBackend>(problem, threads);
}

}  // namespace usrecon::recon
