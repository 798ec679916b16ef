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

SeedCudaBeamformer::SeedCudaBeamformer(const Problem&, const Window&, Precision, int, int) {
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
