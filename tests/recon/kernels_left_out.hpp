// Kernels this CPU cannot run (AVX-512, AVX2) are compared nowhere. A test that left one out
// ends skipped and says which, after its other comparisons (whose failures still fail it), so
// that a host without AVX-512 does not report the AVX-512 kernels as tested.
#pragma once

#include <gtest/gtest.h>

#include <string>

// `left_out`: the kernels' names, "" when every one ran.
#define SKIP_IF_KERNELS_WERE_LEFT_OUT(left_out)                                                       \
  do {                                                                                                \
    const std::string usrecon_left_out_ = (left_out);                                                 \
    if (!usrecon_left_out_.empty())                                                                   \
      GTEST_SKIP() << "this CPU cannot run the " << usrecon_left_out_ << " kernel(s): not compared"; \
  } while (0)
