// The 0.2 name of block_reduce.hpp, whose programs were sum's alone then: block_sum::partials_program
// and final_program still sum (their Op defaults to Sum).
#pragma once

#include "usrecon/kernels/block_reduce.hpp"

namespace usrecon::kernels {
namespace block_sum = block_reduce;
}  // namespace usrecon::kernels
