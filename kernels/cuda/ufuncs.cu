// CUDA instantiations of the ready-made ufuncs, so C++ files can call them on device arrays.
#include <cstdint>

#include "usrecon/kernels/cuda/map.cuh"

namespace usrecon::kernels {

#define USRECON_INSTANTIATE_MAP(Op, T, NOut, NIn) \
  template void cuda_map<ops::Op, T, NOut, NIn>(const ops::Op&, const MapArgs<T, NOut, NIn>&, StreamView);
#define USRECON_INSTANTIATE_MAP_FLOAT(Op, NOut, NIn) \
  USRECON_INSTANTIATE_MAP(Op, float, NOut, NIn)      \
  USRECON_INSTANTIATE_MAP(Op, double, NOut, NIn)

USRECON_INSTANTIATE_MAP_FLOAT(Add, 1, 2)
USRECON_INSTANTIATE_MAP(Add, std::int32_t, 1, 2)
USRECON_INSTANTIATE_MAP(Add, std::int64_t, 1, 2)
USRECON_INSTANTIATE_MAP_FLOAT(Hypot, 1, 2)
USRECON_INSTANTIATE_MAP_FLOAT(Sqrt, 1, 1)
USRECON_INSTANTIATE_MAP_FLOAT(GaussianPdf, 1, 3)
USRECON_INSTANTIATE_MAP_FLOAT(PolarToCartesian, 2, 2)
USRECON_INSTANTIATE_MAP_FLOAT(PolarDistance, 1, 4)

#undef USRECON_INSTANTIATE_MAP_FLOAT
#undef USRECON_INSTANTIATE_MAP

}  // namespace usrecon::kernels
