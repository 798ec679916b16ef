// Wall-clock stage timing shared by the pipeline's sources (internal header).
#pragma once

#include <chrono>

namespace usrecon::recon::detail {

using Clock = std::chrono::steady_clock;

/// Seconds elapsed since `start`.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace usrecon::recon::detail
