// Compiled alone by KernelConsumer.APlainCompilerSeesHowTheLibraryWasBuilt, as a project without
// CMake would (c++ -std=c++20 -I<prefix>/include -c, no -D): a ufunc on device memory, whose CUDA
// map must be the library's own when the library has CUDA.
#include <cstdint>

#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;

// data: n floats in device memory, incremented in place.
void add_one_on_device(float* data, std::int64_t n) {
  uk::add(uk::In<float>::device(data, {n}), 1.0f, uk::Out<float>::device(data, {n}));
}
