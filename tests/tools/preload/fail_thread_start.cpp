// LD_PRELOAD library for the thread-start fault tests (tests/tools/test_cli_thread_faults.cpp):
// pthread_create refuses with EAGAIN, as it does when a user's thread limit (RLIMIT_NPROC) or
// memory is exhausted, by start number counted from 0 in the process:
//   USRECON_TEST_FAIL_THREADS_FROM=N  every start from the Nth on is refused;
//   USRECON_TEST_FAIL_THREAD_AT=N     only the Nth is refused.
// Other starts go to the real pthread_create (the next definition: libc's, or a sanitizer's).
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>

namespace {

std::atomic<long> starts{0};

long setting(const char* name) {
  const char* text = std::getenv(name);
  return text && *text ? std::atol(text) : -1;
}

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const Create real = reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));
  const long n = starts.fetch_add(1);
  const long from = setting("USRECON_TEST_FAIL_THREADS_FROM"), at = setting("USRECON_TEST_FAIL_THREAD_AT");
  if ((from >= 0 && n >= from) || n == at) return EAGAIN;
  return real ? real(thread, attr, start, arg) : ENOSYS;
}
