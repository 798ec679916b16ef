// CUDA instantiations of the ready-made ufuncs, so C++ files can call them on device arrays.
#include <cstdint>

#include "usrecon/kernels/cuda/map.cuh"

namespace usrecon::kernels {

// Listed once in map.hpp, which also declares them extern.
#define USRECON_INSTANTIATE_MAP(Op, T, NOut, NIn) USRECON_CUDA_MAP_INSTANTIATION(, Op, T, NOut, NIn)
USRECON_LIBRARY_CUDA_MAPS(USRECON_INSTANTIATE_MAP)
#undef USRECON_INSTANTIATE_MAP

}  // namespace usrecon::kernels
