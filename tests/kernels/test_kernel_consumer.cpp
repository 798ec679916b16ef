// The installed package works for an outside project: install this build into a temporary prefix,
// configure and build tests/consumer against it with find_package(usrecon), run the program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

int run(const std::string& command) {
  const int status = std::system((command + " > consumer.log 2>&1").c_str());
  return status;
}

TEST(KernelConsumer, FindPackageBuildsAndRunsAgainstTheInstalledLibrary) {
  namespace fs = std::filesystem;
  const fs::path work = fs::path(USRECON_BINARY_DIR) / "kernel-consumer-test";
  fs::remove_all(work);
  fs::create_directories(work);
  fs::current_path(work);
  const std::string prefix = (work / "prefix").string();
  const std::string build = (work / "build").string();
  const std::string source = std::string(USRECON_SOURCE_DIR) + "/tests/consumer";

  ASSERT_EQ(run("cmake --install \"" USRECON_BINARY_DIR "\" --component kernels --prefix \"" +
                prefix + "\""),
            0)
      << "cmake --install failed; see " << (work / "consumer.log");
  EXPECT_TRUE(fs::exists(fs::path(prefix) / "include/usrecon/kernels/map.hpp"));
  EXPECT_TRUE(fs::exists(fs::path(prefix) / "include/usrecon/kernels/cuda_memory.hpp"));
  ASSERT_EQ(run("cmake -S \"" + source + "\" -B \"" + build + "\" -DCMAKE_PREFIX_PATH=\"" +
                prefix + "\" -DCMAKE_BUILD_TYPE=Release"),
            0)
      << "configuring the consumer failed; see " << (work / "consumer.log");
  ASSERT_EQ(run("cmake --build \"" + build + "\" -j2"), 0)
      << "building the consumer failed; see " << (work / "consumer.log");
  EXPECT_EQ(run("\"" + build + "/consumer\""), 0)
      << "the consumer's check failed; see " << (work / "consumer.log");
}

}  // namespace
