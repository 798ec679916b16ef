// LD_PRELOAD library for the tests of a file usrecon cannot remove (tests/tools/
// test_cli_reconstruct.cpp): remove, unlink and unlinkat fail with EACCES, as on a file whose
// directory forbids it, for a path whose name ends with
//   USRECON_TEST_FAIL_REMOVE_SUFFIX (e.g. ".npy")
// and does not start with '.' (usrecon's own hidden staged files are removed as usual). Other
// calls go to the next definition (libc's, or a sanitizer's).
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

bool refused(const char* path) {
  const char* suffix = std::getenv("USRECON_TEST_FAIL_REMOVE_SUFFIX");
  if (!path || !suffix || !*suffix) return false;
  const char* slash = std::strrchr(path, '/');
  const char* name = slash ? slash + 1 : path;
  const std::size_t n = std::strlen(name), s = std::strlen(suffix);
  return name[0] != '.' && n >= s && std::strcmp(name + n - s, suffix) == 0;
}

template <class F>
F next(const char* symbol) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, symbol));
}

}  // namespace

extern "C" int remove(const char* path) {
  static const auto real = next<int (*)(const char*)>("remove");
  if (refused(path)) return errno = EACCES, -1;
  return real ? real(path) : (errno = ENOSYS, -1);
}

extern "C" int unlink(const char* path) {
  static const auto real = next<int (*)(const char*)>("unlink");
  if (refused(path)) return errno = EACCES, -1;
  return real ? real(path) : (errno = ENOSYS, -1);
}

extern "C" int unlinkat(int dir, const char* path, int flags) {
  static const auto real = next<int (*)(int, const char*, int)>("unlinkat");
  if (refused(path)) return errno = EACCES, -1;
  return real ? real(dir, path, flags) : (errno = ENOSYS, -1);
}
