// CPU-only builds: the CUDA DAS beamformer exists but always reports that CUDA is unavailable
// (after planning the problem, as the CUDA build does: an invalid job is the job's error).
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/das_cuda.hpp"

namespace usrecon::recon {

struct DasCudaBeamformer::Impl {};

DasCudaBeamformer::DasCudaBeamformer(const DasProblem& problem, DasCudaKernel kernel, DasCudaTuning tuning) {
  (void)das::gpu::make_plan(problem, kernel, 0, tuning);
  throw CudaUnavailable("the CUDA DAS beamformer is not available: usrecon was built without CUDA");
}
DasCudaBeamformer::~DasCudaBeamformer() = default;
DasCudaBeamformer::DasCudaBeamformer(DasCudaBeamformer&&) noexcept = default;
DasCudaBeamformer& DasCudaBeamformer::operator=(DasCudaBeamformer&&) noexcept = default;
void DasCudaBeamformer::beamform(const AnalyticData&, std::complex<float>*) {
  throw CudaUnavailable("usrecon was built without CUDA");
}
double DasCudaBeamformer::last_kernel_seconds() const { return 0.0; }
std::string DasCudaBeamformer::device() const { return ""; }
DasCudaKernel DasCudaBeamformer::kernel() const { return DasCudaKernel::Auto; }
int DasCudaBeamformer::transmits_per_launch() const { return 0; }
int DasCudaBeamformer::lateral_lanes() const { return 1; }
const DasProblem& DasCudaBeamformer::problem() const {  // unreachable: no object is ever made
  throw CudaUnavailable("usrecon was built without CUDA");
}

}  // namespace usrecon::recon
