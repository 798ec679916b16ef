// The installed package works for an outside project: install this build into a temporary prefix,
// configure and build tests/consumer against it with find_package(usrecon), run its programs. Each
// test has a directory of its own under <build>/kernel-consumer-test/ (its consumer.log says what
// failed), so that ctest may run them side by side.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "usrecon/kernels/config.hpp"
#include "usrecon/kernels/math.hpp"

namespace {

namespace fs = std::filesystem;
namespace uk = usrecon::kernels;

// Built by appends: GCC 12 warns of an overlap (-Wrestrict, a false positive) in "\"" + s + "\""
// once it is inlined into longer concatenations.
std::string shell_quoted(const fs::path& p) {
  std::string quoted = "\"";
  quoted += p.string();
  quoted += '"';
  return quoted;
}

// Runs a shell command with its output appended to `log`; true when it exits 0.
bool run(const std::string& command, const fs::path& log) {
  return std::system((command + " >> " + shell_quoted(log) + " 2>&1").c_str()) == 0;
}

class KernelConsumer : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    work_ = fs::path(USRECON_BINARY_DIR) / "kernel-consumer-test" / info->name();
    fs::remove_all(work_);
    fs::create_directories(work_);
    log_ = work_ / "consumer.log";
  }

  // Installs the package of the build in `build_dir` into <work>/prefix.
  ::testing::AssertionResult install(const fs::path& build_dir) {
    if (!run("cmake --install " + shell_quoted(build_dir) + " --component kernels --prefix " +
                 shell_quoted(prefix()),
             log_))
      return ::testing::AssertionFailure() << "cmake --install failed; see " << log_;
    return ::testing::AssertionSuccess();
  }

  // Configures tests/consumer against <work>/prefix with the extra CMake arguments `args`, builds
  // it, runs the programs it made (consumer, and consumer_blas or consumer_cuda where asked for).
  ::testing::AssertionResult build_and_run(const std::string& args = "") {
    const fs::path build = work_ / "build";
    const std::string source = std::string(USRECON_SOURCE_DIR) + "/tests/consumer";
    if (!run("cmake -S " + shell_quoted(source) + " -B " + shell_quoted(build) + " -DCMAKE_PREFIX_PATH=" +
                 shell_quoted(prefix()) + " -DCMAKE_BUILD_TYPE=Release " + args,
             log_))
      return ::testing::AssertionFailure() << "configuring the consumer failed; see " << log_;
    if (!run("cmake --build " + shell_quoted(build) + " -j2", log_))
      return ::testing::AssertionFailure() << "building the consumer failed; see " << log_;
    for (const char* program : {"consumer", "consumer_blas", "consumer_cuda"}) {
      if (fs::exists(build / program) && !run(shell_quoted(build / program), log_))
        return ::testing::AssertionFailure() << program << "'s check failed; see " << log_;
    }
    return ::testing::AssertionSuccess();
  }

  fs::path prefix() const { return work_ / "prefix"; }

  fs::path work_;
  fs::path log_;
};

TEST_F(KernelConsumer, FindPackageBuildsAndRunsAgainstTheInstalledLibrary) {
  ASSERT_TRUE(install(USRECON_BINARY_DIR));
  EXPECT_TRUE(fs::exists(prefix() / "include/usrecon/kernels/map.hpp"));
  EXPECT_TRUE(fs::exists(prefix() / "include/usrecon/kernels/cuda_memory.hpp"));
  EXPECT_TRUE(build_and_run());
}

// The library's exported templates (sum's detail::sum, cpu_sum) once had sum_type_t<T> spelt with
// std::is_integral_v in their signatures, which GCC and clang mangle differently: a clang-built
// program could not link sum() from the g++-built library.
TEST_F(KernelConsumer, AConsumerBuiltByClangLinks) {
  if (std::string(USRECON_TEST_CLANGXX).empty()) GTEST_SKIP() << "no clang++";
  ASSERT_TRUE(install(USRECON_BINARY_DIR));
  EXPECT_TRUE(build_and_run("-DCMAKE_CXX_COMPILER=" USRECON_TEST_CLANGXX));
}

// A component the package has not is refused by name (it only said that the config "set
// usrecon_FOUND to FALSE").
TEST_F(KernelConsumer, AComponentThePackageHasNotIsNamed) {
  ASSERT_TRUE(install(USRECON_BINARY_DIR));
  EXPECT_FALSE(build_and_run("'-DCONSUMER_COMPONENTS=kernels;fft'"));
  std::ifstream in(log_);
  std::stringstream text;
  text << in.rdbuf();
  const std::string log = text.str();
  EXPECT_NE(log.find("usrecon has no component 'fft' (its one component is kernels)"), std::string::npos) << log;
}

// A project without C++ (CUDA alone, or no language) is told to enable it: FindThreads, the
// package's first dependency, failed in its own words ("only works if either C or CXX language is
// enabled").
TEST_F(KernelConsumer, AProjectWithoutCxxIsToldToEnableIt) {
  ASSERT_TRUE(install(USRECON_BINARY_DIR));
  const fs::path source = work_ / "no_cxx";
  fs::create_directories(source);
  std::ofstream(source / "CMakeLists.txt") << "cmake_minimum_required(VERSION 3.25)\n"
                                              "project(no_cxx LANGUAGES NONE)\n"
                                              "find_package(usrecon REQUIRED)\n";
  EXPECT_FALSE(run("cmake -S " + shell_quoted(source) + " -B " + shell_quoted(work_ / "no_cxx_build") +
                       " -DCMAKE_PREFIX_PATH=" + shell_quoted(prefix()),
                   log_));
  std::ifstream in(log_);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("usrecon::kernels is a C++20 library: enable CXX in the project that uses it"),
            std::string::npos)
      << text.str();
}

// A consumer's own BLAS (BLAS::BLAS, BLAS_*) is neither used nor changed by find_package(usrecon),
// whether found before it (its BLAS::BLAS once stood in for OpenBLAS: "undefined reference to
// symbol 'openblas_get_num_threads'") or after it (BLAS_FOUND was already set, to OpenBLAS).
TEST_F(KernelConsumer, AConsumerBlasFoundBeforeThePackageIsLeftAlone) {
  ASSERT_TRUE(install(USRECON_BINARY_DIR));
  EXPECT_TRUE(build_and_run("-DCONSUMER_BLAS=before"));
}

TEST_F(KernelConsumer, AConsumerBlasFoundAfterThePackageIsItsOwn) {
  ASSERT_TRUE(install(USRECON_BINARY_DIR));
  EXPECT_TRUE(build_and_run("-DCONSUMER_BLAS=after"));
}

// A .cu file of the consumer's own with its own op on device arrays (cuda/map.cuh): nvcc needs
// -std=c++20 from the package (std::span). Without a device it throws CudaUnavailable, which the
// program accepts.
TEST_F(KernelConsumer, AConsumerCudaOpBuildsAndRuns) {
#if !defined(USRECON_HAVE_CUDA)
  GTEST_SKIP() << "this build has no CUDA (see ACudaOpBuildsAgainstAPackageWithoutCuda)";
#else
  ASSERT_TRUE(install(USRECON_BINARY_DIR));
  EXPECT_TRUE(build_and_run("-DCONSUMER_CUDA=ON -DCMAKE_CUDA_COMPILER=" USRECON_TEST_NVCC));
#endif
}

// The same .cu file against a package built without CUDA (made here as README says: the kernels
// alone, -DUSRECON_KERNELS_ONLY=ON, installed whole) compiles, cuda/map.cuh being map.hpp alone
// there, and its device call throws CudaUnavailable.
TEST_F(KernelConsumer, ACudaOpBuildsAgainstAPackageWithoutCuda) {
  if (std::string(USRECON_TEST_NVCC).empty()) GTEST_SKIP() << "no nvcc";
  const fs::path package = work_ / "package";
  ASSERT_TRUE(run("cmake -S " + shell_quoted(USRECON_SOURCE_DIR) + " -B " + shell_quoted(package) +
                      " -DCMAKE_BUILD_TYPE=Release -DUSRECON_CUDA=OFF -DUSRECON_KERNELS_ONLY=ON"
                      " -DCMAKE_CXX_COMPILER=" USRECON_TEST_CXX,
                  log_))
      << "configuring the package without CUDA failed; see " << log_;
  // Kernels alone: no target of io, recon or the CLI (their libraries were needed to configure).
  EXPECT_FALSE(fs::exists(package / "io")) << "USRECON_KERNELS_ONLY configured io";
  EXPECT_FALSE(fs::exists(package / "tools" / "usrecon")) << "USRECON_KERNELS_ONLY configured the CLI";
  ASSERT_TRUE(run("cmake --build " + shell_quoted(package) + " -j2", log_))
      << "building the kernels library without CUDA failed; see " << log_;
  ASSERT_TRUE(run("cmake --install " + shell_quoted(package) + " --prefix " + shell_quoted(prefix()), log_))
      << "installing the kernels-only build failed; see " << log_;
  EXPECT_TRUE(build_and_run("-DCONSUMER_CUDA=ON -DCMAKE_CUDA_COMPILER=" USRECON_TEST_NVCC));
}

// A consumer compiled without CMake (c++ -I<prefix>/include, no -D) sees the library as it was
// built (usrecon/kernels/config.hpp). USRECON_HAVE_CUDA once came only through the CMake target:
// without it, a file calling a ufunc on device memory defined an inline stand-in for the
// library's CUDA map under the same name (nm: W), which the linker could keep in place of the
// real kernels, so that on a GPU the call would have done nothing.
TEST_F(KernelConsumer, APlainCompilerSeesHowTheLibraryWasBuilt) {
  ASSERT_TRUE(install(USRECON_BINARY_DIR));
  const fs::path object = work_ / "plain_device_add.o";
  ASSERT_TRUE(run(std::string(USRECON_TEST_CXX) + " -std=c++20 -O1 -c -I" + shell_quoted(prefix() / "include") + " " +
                      shell_quoted(fs::path(USRECON_SOURCE_DIR) / "tests" / "consumer" / "plain_device_add.cpp") +
                      " -o " + shell_quoted(object),
                  log_))
      << "compiling without CMake failed; see " << log_;
  const fs::path symbols = work_ / "cuda_map_symbols.txt";
  ASSERT_TRUE(run("(nm -C " + shell_quoted(object) + " | grep 'cuda_map<' > " + shell_quoted(symbols) + ")", log_))
      << "the object names no cuda_map; see " << log_;
  std::ifstream in(symbols);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    std::istringstream fields(line);
    std::string first, second;
    fields >> first >> second;
    const std::string type = first.size() == 1 ? first : second;  // "U name" or "ADDR W name"
#if defined(USRECON_HAVE_CUDA)
    EXPECT_EQ(type, "U") << "the library has CUDA, so its map must come from it: " << line;
#else
    EXPECT_EQ(type, "W") << "the library has no CUDA: the header's map that says so is used: " << line;
#endif
  }
  EXPECT_GT(lines, 0);
}

// hypot is compiled in the consumer's own file, with its flags: where they let the compiler fuse
// multiplies and adds (-mfma with GCC's default -ffp-contract=fast in GNU mode), Dekker's split
// was fused too and 8 % of the doubles were misrounded, unlike the library's and the GPU's. Built
// with fusion and without, tests/consumer/hypot_bits.cpp gives this build's hypot bit for bit.
TEST_F(KernelConsumer, HypotIsTheLibrarysWhateverTheConsumersFlags) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("fma")) GTEST_SKIP() << "this CPU has no FMA instructions to test with";
  const fs::path source = fs::path(USRECON_SOURCE_DIR) / "tests" / "consumer" / "hypot_bits.cpp";
  const std::string include = " -I" + shell_quoted(fs::path(USRECON_SOURCE_DIR) / "kernels" / "include") + " -I" +
                              shell_quoted(fs::path(USRECON_BINARY_DIR) / "kernels" / "include") + " ";
  int built = 0;
  for (const char* flags : {"-O2 -std=gnu++20 -mfma -mavx2 -ffp-contract=fast", "-O2 -std=c++20 -ffp-contract=off"}) {
    SCOPED_TRACE(flags);
    const fs::path exe = work_ / ("hypot_bits_" + std::to_string(built++));
    ASSERT_TRUE(run(std::string(USRECON_TEST_CXX) + " " + flags + include + shell_quoted(source) + " -o " +
                        shell_quoted(exe),
                    log_))
        << "see " << log_;
    const fs::path out = work_ / "hypot_bits.txt";
    ASSERT_EQ(std::system((shell_quoted(exe) + " > " + shell_quoted(out)).c_str()), 0);
    std::ifstream lines(out);
    std::string line;
    int count = 0, differ = 0;
    std::string first_difference;
    while (std::getline(lines, line)) {
      unsigned long long xb = 0, yb = 0, hb = 0;
      unsigned fb = 0;
      ASSERT_EQ(std::sscanf(line.c_str(), "%llx %llx %llx %x", &xb, &yb, &hb, &fb), 4) << line;
      double x = 0, y = 0;
      std::memcpy(&x, &xb, sizeof x);
      std::memcpy(&y, &yb, sizeof y);
      const double h = uk::math::hypot(x, y);
      const float f = uk::math::hypot(static_cast<float>(x), static_cast<float>(y));
      unsigned long long want_h = 0;
      unsigned want_f = 0;
      std::memcpy(&want_h, &h, sizeof h);
      std::memcpy(&want_f, &f, sizeof f);
      if (want_h != hb || want_f != fb) {
        if (differ++ == 0) first_difference = line;
      }
      ++count;
    }
    EXPECT_EQ(count, 20000 + 741 + 3);
    EXPECT_EQ(differ, 0) << "first: " << first_difference;
  }
#else
  GTEST_SKIP() << "the fused build is tested on x86-64";
#endif
}

// A consumer that builds with strict warnings as errors and plain -I (the headers are then not
// SYSTEM includes) gets none from ours: tests/consumer/strict_warnings.cpp instantiates every
// public template with this build's C++ compiler and clang++ (-Wconversion -Wsign-conversion among
// them), and with a CUDA package nvcc compiles it as CUDA (map.cuh's kernels for its ops,
// launch.cuh) under the same flags for the host pass, less -Wpedantic, which nvcc's own line
// directives fail. The headers once gave 70 sign-conversion warnings with g++, 26 with clang, and
// clang 35 of -Wundefined-func-template (0.2.3).
TEST_F(KernelConsumer, HeadersCompileCleanUnderAConsumersStrictWarnings) {
  ASSERT_TRUE(install(USRECON_BINARY_DIR));
  const std::string include = " -I" + shell_quoted(prefix() / "include") + " ";
  const fs::path source = fs::path(USRECON_SOURCE_DIR) / "tests" / "consumer" / "strict_warnings.cpp";
  const std::string strict = " -Wall -Wextra -Wshadow -Wconversion -Wsign-conversion -Werror";
  std::vector<std::string> compilers = {USRECON_TEST_CXX};
  if (std::string(USRECON_TEST_CLANGXX).empty())
    std::printf("[ NOTE     ] no clang++: the headers were compiled by %s alone\n", USRECON_TEST_CXX);
  else
    compilers.push_back(USRECON_TEST_CLANGXX);
  for (const std::string& cxx : compilers) {
    // With clang, also what its -Weverything adds that headers owe a consumer: the library's
    // explicit instantiations declared (extern template), Error's vtable in the library, no float
    // == (clang's -Wfloat-equal spares x != x, the NaN test; GCC's does not, and is left out).
    const bool clang = cxx.find("clang") != std::string::npos;
    const std::string more = clang ? " -Wfloat-equal -Wundefined-func-template -Wweak-vtables" : "";
    EXPECT_TRUE(run(cxx + " -std=c++20 -fsyntax-only -Wpedantic" + strict + more + include + shell_quoted(source), log_))
        << cxx << " warned about the installed headers; see " << log_;
  }
#if defined(USRECON_HAVE_CUDA)
  if (std::string(USRECON_TEST_NVCC).empty()) GTEST_SKIP() << "no nvcc: the .cu headers were not compiled";
  std::string xcompiler = strict.substr(1);
  std::replace(xcompiler.begin(), xcompiler.end(), ' ', ',');
  EXPECT_TRUE(run(std::string(USRECON_TEST_NVCC) + " -std=c++20 -x cu -c -ccbin " + USRECON_TEST_CXX + include +
                      " -Xcompiler " + xcompiler + " " + shell_quoted(source) + " -o " +
                      shell_quoted(work_ / "strict_warnings.o"),
                  log_))
      << "nvcc's host pass warned about the installed .cu headers; see " << log_;
#endif
}

}  // namespace
