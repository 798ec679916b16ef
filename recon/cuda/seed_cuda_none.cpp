// CPU-only builds: the seed model's CUDA backend cannot be constructed.
#include "usrecon/recon/seed_cuda.hpp"

namespace usrecon::recon::seed {

struct SeedCudaBeamformer::Impl {
  gpu::Plan plan;
  Precision precision = Precision::Double;
  std::string device;
};

namespace {
[[noreturn]] void unavailable() {
  throw CudaUnavailable(
      "--backend cuda (the seed model's CUDA backend): usrecon was built without CUDA");
}
}  // namespace

SeedCudaBeamformer::SeedCudaBeamformer(const Problem& problem, const Window& window, Precision,
                                       int streams, const gpu::WorkSplit& split) {
  // Wrong arguments are an Error here too, as in the CUDA build (seed_cuda.cu).
  if (streams < 1 || streams > 16) throw Error("seed CUDA backend: streams must be in [1, 16]");
  (void)gpu::make_plan(problem, window, split);
  unavailable();
}
SeedCudaBeamformer::~SeedCudaBeamformer() = default;
SeedCudaBeamformer::SeedCudaBeamformer(SeedCudaBeamformer&&) noexcept = default;
SeedCudaBeamformer& SeedCudaBeamformer::operator=(SeedCudaBeamformer&&) noexcept = default;
GpuTiming SeedCudaBeamformer::beamform(std::span<const std::int32_t>, std::span<double>) {
  unavailable();
}
void SeedCudaBeamformer::enqueue(int, std::span<const std::int32_t>) { unavailable(); }
std::span<const double> SeedCudaBeamformer::finish(int, GpuTiming*) { unavailable(); }
bool SeedCudaBeamformer::pending(int) const { unavailable(); }
int SeedCudaBeamformer::streams() const { unavailable(); }
const gpu::Plan& SeedCudaBeamformer::plan() const { unavailable(); }
Precision SeedCudaBeamformer::precision() const { unavailable(); }
const std::string& SeedCudaBeamformer::device_name() const { unavailable(); }
double SeedCudaBeamformer::waves() const { unavailable(); }

}  // namespace usrecon::recon::seed
