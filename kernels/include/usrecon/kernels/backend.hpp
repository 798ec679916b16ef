// Where and how an operation runs.
#pragma once

#include "usrecon/kernels/cuda_memory.hpp"

namespace usrecon::kernels {

/// CPU threads or CUDA. Operations on arrays run where their arrays live (host arrays: CPU, device
/// arrays: CUDA); operations without arrays (monte_carlo_pi) take a Backend.
enum class Backend { cpu, cuda };

/// Execution options every operation accepts as its last, optional argument.
struct Exec {
  /// CPU: number of threads (0, or any number below 1: one for each CPU this process may run on,
  /// hardware_threads(): its affinity, as taskset or a container sets it).
  int threads = 0;
  /// CUDA: the stream the work is enqueued on (default: the legacy default stream).
  StreamView stream = {};
};

}  // namespace usrecon::kernels
