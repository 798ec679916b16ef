// A check the io tests share: a reader's refusal names the file first and says why.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "usrecon/io/file.hpp"

namespace usrecon::io::testing {

/// Expects `call` to throw InputError starting with "<path>: " and containing `fragment`.
template <class Call>
void expect_refused(const std::filesystem::path& path, const std::string& fragment, Call call) {
  try {
    call();
    ADD_FAILURE() << path << " accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path.string() + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

}  // namespace usrecon::io::testing
