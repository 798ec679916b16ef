// CPU threading: a parallel loop with dynamic load balancing.
#pragma once

#include <cstddef>
#include <functional>

namespace usrecon::kernels {

/// Number of CPUs this process may run on (its affinity, as taskset or a container's cpuset sets
/// it; at least 1).
int hardware_threads() noexcept;

/// Runs body(begin, end) over [0, n) in chunks of `chunk` items on `threads` threads (0 or any
/// number below 1: hardware_threads()), at most one a chunk. Chunks are handed out dynamically, so uneven work still balances. The first
/// exception thrown by a body is rethrown on the caller's thread after all threads stop.
void parallel_for(std::size_t n, std::size_t chunk, int threads,
                  const std::function<void(std::size_t begin, std::size_t end)>& body);

}  // namespace usrecon::kernels
