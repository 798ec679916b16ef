// MAT files through matio: a written file reads back column-major with its dims, errors name the
// file and variable, and the real data set (when present) reads as the README describes it.
#include <gtest/gtest.h>

#include <filesystem>

#include "usrecon/io/file.hpp"
#include "usrecon/io/mat.hpp"

namespace fs = std::filesystem;

namespace usrecon::io {
namespace {

class IoMat : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("usrecon-IoMat-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(IoMat, WritesAndReadsBackColumnMajorArrays) {
  MatArray a{"RF", "", {3, 2, 2}, {}};
  for (int k = 0; k < 12; ++k) a.values.push_back(10 + k);
  MatArray b{"other", "", {1, 1}, {42.5}};
  const fs::path file = dir_ / "data.mat";
  write_mat(file, {a, b}, false);
  const auto vars = list_mat_variables(file);
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0].name, "RF");
  EXPECT_EQ(vars[0].dims, (std::vector<std::size_t>{3, 2, 2}));
  const MatArray r = read_mat(file, "RF");
  EXPECT_EQ(r.matlab_class, "double");
  EXPECT_EQ(r.dims, a.dims);
  EXPECT_EQ(r.values, a.values);
  EXPECT_EQ(read_mat(file, "other").values, std::vector<double>{42.5});

  write_mat(dir_ / "u8.mat", {a}, true);
  const MatArray u = read_mat(dir_ / "u8.mat");  // the only numeric variable
  EXPECT_EQ(u.matlab_class, "uint8");
  EXPECT_EQ(u.values, a.values);
}

TEST_F(IoMat, ErrorsNameTheFileAndVariable) {
  write_mat(dir_ / "two.mat", {{"a", "", {1, 2}, {1, 2}}, {"b", "", {1, 1}, {3}}});
  try {
    read_mat(dir_ / "two.mat", "missing");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("two.mat"), std::string::npos);
  }
  try {
    read_mat(dir_ / "two.mat");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a, b"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_mat(dir_ / "nothing.mat", "x"), InputError);
  write_file_atomic(dir_ / "text.mat", "not a mat file at all, just text that is long enough......"
                                       "...............................................................");
  EXPECT_THROW(read_mat(dir_ / "text.mat", "x"), InputError);
}

// Files from SciPy (an independent writer; tests/corpus/valid/mat/make_scipy_mixed.py): the size
// check before matio must accept every kind of variable, compressed or not, and the values must be
// SciPy's (rf = arange(24) - 7 as int16 [2][3][4], C order, which MATLAB order stores transposed).
TEST_F(IoMat, AcceptsEveryKindOfVariableFromAnIndependentWriter) {
  for (const char* name : {"scipy_mixed_plain.mat", "scipy_mixed_zlib.mat"}) {
    SCOPED_TRACE(name);
    const fs::path file = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat" / name;
    std::vector<std::string> listed;
    for (const MatVariableInfo& v : list_mat_variables(file)) listed.push_back(v.name + ":" + v.matlab_class);
    EXPECT_EQ(listed, (std::vector<std::string>{"rf:int16", "params:struct", "cells:cell", "sparse_m:sparse",
                                                "complex_v:double", "label:char", "empty:double",
                                                "structarr:struct"}));
    const MatArray rf = read_mat(file, "rf");
    EXPECT_EQ(rf.matlab_class, "int16");
    ASSERT_EQ(rf.dims, (std::vector<std::size_t>{2, 3, 4}));
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t k = 0; k < 4; ++k)  // MATLAB order: i fastest
          EXPECT_EQ(rf.values[i + 2 * (j + 3 * k)], static_cast<double>(12 * i + 4 * j + k) - 7);
    EXPECT_EQ(read_mat(file, "params.fs").values, std::vector<double>{20e6});
    EXPECT_EQ(read_mat(file, "params.angles").values, (std::vector<double>{-1.5, 0, 1.5}));
    EXPECT_THROW(read_mat(file, "complex_v"), InputError);  // complex: refused by the reader, not the check
  }
}

TEST(IoMatRealData, RFdata1HasTheDocumentedShape) {
  const fs::path file = USRECON_SHARED_DIR "/data/real/RFdata1.mat";
  if (!fs::exists(file)) GTEST_SKIP() << file << " is absent";
  const MatArray rf = read_mat(file, "RF1");
  EXPECT_EQ(rf.matlab_class, "uint8");
  EXPECT_EQ(rf.dims, (std::vector<std::size_t>{2688, 128, 7}));
  const MatArray fs_hz = read_mat(file, "param1.fs");
  ASSERT_EQ(fs_hz.values.size(), 1u);
  EXPECT_DOUBLE_EQ(fs_hz.values[0], 20e6);
}

}  // namespace
}  // namespace usrecon::io
