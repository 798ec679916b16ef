// Shared helpers for the io tests: a fresh temporary directory per test, and file helpers.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace usrecon::io::testing {

/// Base fixture: each test gets an empty directory of its own under the system temp directory,
/// removed again afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("usrecon-") + info->test_suite_name() + "-" + info->name() +
                       "-" + std::to_string(::getpid());
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterized test names contain '/'
    }
    dir_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(dir_, ignored);
  }

  /// Writes text to a file in the test directory with plain streams (independent of the code
  /// under test) and returns its path.
  std::filesystem::path make_file(const std::string& file_name, std::string_view contents) const {
    const std::filesystem::path path = dir_ / file_name;
    std::ofstream(path, std::ios::binary).write(contents.data(),
                                                static_cast<std::streamsize>(contents.size()));
    return path;
  }

  /// File names in the test directory, sorted.
  std::vector<std::string> directory_listing() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::filesystem::path dir_;
};

/// For EXPECT_TRUE(contains(message, "detail")): on failure prints both strings.
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

/// Runs `action`, expects an exception of type E (or derived) and returns its message.
template <class E, class Action>
std::string message_of(Action&& action) {
  try {
    action();
  } catch (const E& error) {
    return error.what();
  }
  ADD_FAILURE() << "no exception was thrown";
  return {};
}

/// Reads a file with plain streams (independent of read_file).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace usrecon::io::testing
