#include "usrecon/kernels/parallel.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace usrecon::kernels {

int hardware_threads() noexcept {
  // The CPUs this process may run on (taskset, a container's cpuset), not the machine's: a
  // process limited to one CPU started a thread for each of the host's.
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    const int n = CPU_COUNT(&allowed);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void parallel_for(std::size_t n, std::size_t chunk, int threads,
                  const std::function<void(std::size_t, std::size_t)>& body) {
  if (n == 0) return;
  chunk = std::max<std::size_t>(chunk, 1);
  const std::size_t n_chunks = n / chunk + (n % chunk != 0);  // (n + chunk - 1) / chunk could wrap
  std::size_t workers = threads <= 0 ? static_cast<std::size_t>(hardware_threads())
                                     : static_cast<std::size_t>(threads);
  workers = std::min(workers, n_chunks);

  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (;;) {
        if (failed.load(std::memory_order_relaxed)) return;
        const std::size_t c = next.fetch_add(1, std::memory_order_relaxed);
        if (c >= n_chunks) return;
        const std::size_t begin = c * chunk;
        body(begin, begin + std::min(n - begin, chunk));
      }
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    pool.reserve(workers - 1);
    // A thread the system will not start (EAGAIN: out of threads or memory) costs speed, not the
    // result: chunks are claimed as they are free, so the threads that did start, and this one,
    // do them all.
    try {
      for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work);
    } catch (const std::system_error&) {
    }
    work();
  }  // jthreads join here
  if (error) std::rethrow_exception(error);
}

}  // namespace usrecon::kernels
