// Everything a CPU or CUDA user of usrecon::kernels needs, in one include. No CUDA headers.
#pragma once

#include "usrecon/kernels/array.hpp"
#include "usrecon/kernels/backend.hpp"
#include "usrecon/kernels/common.hpp"
#include "usrecon/kernels/cuda_memory.hpp"
#include "usrecon/kernels/map.hpp"
#include "usrecon/kernels/math.hpp"
#include "usrecon/kernels/matmul.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/kernels/random.hpp"
#include "usrecon/kernels/reduce.hpp"
#include "usrecon/kernels/shape.hpp"
