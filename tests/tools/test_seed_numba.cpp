// The strongest independent reference: the seed's own Numba code (../shared/bench/
// seed_numba_cpu.py, loop body unchanged) on the bundled example, compared bit for bit with
// `usrecon reconstruct --save-raw`. Takes about a minute and a half (Numba runs the seed's
// four-deep loop on one core). Skips when python3-numba or the shared bench folder is missing.
#include <gtest/gtest.h>

#include <cstring>

#include "../test_support.hpp"
#include "usrecon/io/npy.hpp"

namespace fs = std::filesystem;
using usrecon::testing::quote;
using usrecon::testing::run_command;

class CliSeedNumba : public usrecon::testing::TempDir {};

TEST_F(CliSeedNumba, ReconstructEqualsTheSeedsNumbaOutputBitForBit) {
  const fs::path script = fs::path(USRECON_SHARED_DIR) / "bench" / "seed_numba_cpu.py";
  if (!fs::exists(script)) GTEST_SKIP() << "no " << script << " (the shared folder is absent)";
  if (run_command("/usr/bin/python3 -c 'import numba, numpy'").exit_code != 0)
    GTEST_SKIP() << "/usr/bin/python3 has no numba (Debian's python3-numba)";
  const fs::path input = fs::path(USRECON_SOURCE_DIR) / "data" / "example.txt";

  const auto ours = run_command(usrecon::testing::usrecon_exe() + " reconstruct " + quote(input) +
                                " -o " + quote(dir_) + " --save-raw --backend cpu");
  ASSERT_EQ(ours.exit_code, 0) << ours.output;
  // The seed's reader (split on " ") must read our file too: the script uses it.
  const auto numba = run_command("/usr/bin/python3 " + quote(script) + " " + quote(input) + " " +
                                 quote(dir_ / "numba.npy"));
  ASSERT_EQ(numba.exit_code, 0) << numba.output;

  const auto expected = usrecon::io::read_npy(dir_ / "numba.npy");
  const auto actual = usrecon::io::read_npy(dir_ / "example.npy");
  ASSERT_EQ(expected.shape, (std::vector<std::size_t>{762, 1200}));
  ASSERT_EQ(actual.shape, expected.shape);
  const auto a = expected.as<double>();
  const auto b = actual.as<double>();
  std::size_t differ = 0;
  for (std::size_t idx = 0; idx < a.size(); ++idx)
    differ += std::memcmp(&a[idx], &b[idx], sizeof(double)) != 0;
  EXPECT_EQ(differ, 0u) << "pixels that differ from the seed's Numba output";
  // Not a trivially empty image: the targets make large sums.
  double peak = 0;
  for (double v : a) peak = std::max(peak, std::abs(v));
  EXPECT_GT(peak, 1e5);
}
