// parallel_for: every index once, for chunks from 1 to far past n, on any number of threads;
// a body's exception reaches the caller.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

#include "usrecon/kernels/parallel.hpp"

namespace {

namespace uk = usrecon::kernels;

// The threads are those the process may run on (its CPU affinity: taskset, a container's cpuset),
// not the machine's (it took std::thread::hardware_concurrency).
TEST(KernelParallel, HardwareThreadsAreTheCpusThisProcessMayRunOn) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  EXPECT_EQ(uk::hardware_threads(), CPU_COUNT(&allowed));
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) {
      CPU_SET(cpu, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int limited = uk::hardware_threads();
  ASSERT_EQ(sched_setaffinity(0, sizeof allowed, &allowed), 0);
  EXPECT_EQ(limited, 1);
}

TEST(KernelParallel, EveryIndexOnceForAnyChunkAndThreads) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  for (std::size_t n : {std::size_t{1}, std::size_t{10}, std::size_t{1001}})
    for (std::size_t chunk : {std::size_t{0}, std::size_t{1}, std::size_t{3}, n, n + 1, kMax / 2, kMax - 5, kMax})
      for (int threads : {0, 1, 2, 7}) {
        SCOPED_TRACE(testing::Message() << "n " << n << " chunk " << chunk << " threads " << threads);
        std::vector<std::atomic<int>> seen(n);
        uk::parallel_for(n, chunk, threads, [&](std::size_t begin, std::size_t end) {
          ASSERT_LE(begin, end);
          ASSERT_LE(end, n);
          for (std::size_t i = begin; i < end; ++i) seen[i].fetch_add(1);
        });
        std::size_t once = 0;
        for (const auto& s : seen) once += s.load() == 1;
        EXPECT_EQ(once, n);  // a chunk of SIZE_MAX once covered none of them
      }
}

TEST(KernelParallel, ABodysExceptionReachesTheCaller) {
  EXPECT_THROW(uk::parallel_for(100, 1, 4,
                                [](std::size_t begin, std::size_t) {
                                  if (begin == 37) throw std::runtime_error("boom");
                                }),
               std::runtime_error);
}

}  // namespace
