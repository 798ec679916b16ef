// Helpers shared by the recon and tools tests: a fresh directory per test and running the CLI.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace usrecon::testing {

/// Each test gets an empty directory of its own, removed afterwards.
class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("usrecon-") + info->test_suite_name() + "-" + info->name() +
                       "-" + std::to_string(::getpid());
    for (char& c : name)
      if (c == '/') c = '_';
    dir_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::filesystem::path dir_;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

/// Runs a shell command line, capturing stdout+stderr.
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// The usrecon executable under test (ctest sets USRECON_EXE).
inline std::string usrecon_exe() {
  const char* exe = std::getenv("USRECON_EXE");
  return exe ? exe : "";
}

/// 'p' for a shell command line. (Built by appending: GCC 12 warns, wrongly, about
/// "'" + std::string&& once inlined: -Wrestrict, its bug 105329.)
inline std::string quote(const std::filesystem::path& p) {
  std::string quoted = "'";
  quoted += p.string();
  quoted += '\'';
  return quoted;
}

/// Environment settings that preload `library` (a fault-injecting LD_PRELOAD module of
/// tests/tools/preload/) into a command: "ASAN_OPTIONS=... LD_PRELOAD='library' ". A sanitizer's
/// runtime must otherwise come first among the libraries; the order is harmless here.
inline std::string preload(const char* library) {
  const char* asan = std::getenv("ASAN_OPTIONS");
  std::string env = "ASAN_OPTIONS=";
  if (asan && *asan) {
    env += asan;
    env += ':';
  }
  env += "verify_asan_link_order=0 LD_PRELOAD=";
  env += quote(library);
  env += ' ';
  return env;
}

/// A TempDir for tests that run the usrecon executable: exe_ is its path (set by ctest).
class CliTempDir : public TempDir {
 protected:
  void SetUp() override {
    TempDir::SetUp();
    exe_ = usrecon_exe();
    ASSERT_FALSE(exe_.empty()) << "USRECON_EXE is not set (run through ctest)";
  }
  std::string exe_;
};

}  // namespace usrecon::testing
