// MAT files through matio: a written file reads back column-major with its dims, errors name the
// file and variable, and the real data set (when present) reads as the README describes it.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "expect_refused.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/hdf5.hpp"
#include "usrecon/io/mat.hpp"

namespace fs = std::filesystem;

namespace usrecon::io {
namespace {

using testing::expect_refused;


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

// A MAT v7.3 file as MATLAB lays one out: the 128-byte MAT header (version 0x0200) in a 512-byte
// user block, then HDF5 in which each variable is a dataset of MATLAB's dims reversed (its
// column-major values are the dataset's C-order ones) and a struct is a group.
void write_mat73(const fs::path& file, const std::string& hdf5_bytes) {
  std::string header(512, '\0');
  const std::string text = "MATLAB 7.3 MAT-file, Platform: GLNXA64, HDF5 schema 1.00 .";
  header.replace(0, text.size(), text);
  header[124] = 0x00, header[125] = 0x02, header[126] = 'I', header[127] = 'M';
  write_file_atomic(file, header + hdf5_bytes);
}

// v7.3 files are read through io's HDF5 reader (in its worker process), not by matio here.
TEST_F(IoMat, Version73FilesReadThroughTheIsolatedHdf5Reader) {
  Hdf5Array rf{"/rf", "", {2, 2, 3}, {}};  // MATLAB's 3 x 2 x 2
  for (int k = 0; k < 12; ++k) rf.values.push_back(10 + k);
  const Hdf5Array fs_value{"/fs", "", {1, 1}, {40e6}}, field{"/s/data", "", {2, 3}, {1, 2, 3, 4, 5, 6}};
  const Hdf5Array scalar{"/s/gain", "", {}, {7.5}};  // an HDF5 scalar dataspace (MATLAB writes 1 x 1)
  const Hdf5Array nested{"/s/rx/data", "", {2, 1}, {8, 9}};  // s.rx.data, MATLAB's 1 x 2
  // s.sp, a sparse matrix: a group of MATLAB_class double with MATLAB_sparse (its row count) and
  // the arrays data, ir, jc, which are no fields.
  const Hdf5Array sparse_data{"/s/sp/data", "", {1}, {5}}, sparse_ir{"/s/sp/ir", "", {1}, {0}},
      sparse_jc{"/s/sp/jc", "", {2}, {0, 1}};
  const fs::path plain = dir_ / "plain.h5";
  write_hdf5(plain, {rf, fs_value, field, scalar, nested, sparse_data, sparse_ir, sparse_jc},
             {{"/s", {{"MATLAB_class", "struct", {}}}},
              {"/s/rx", {{"MATLAB_class", "struct", {}}}},
              {"/s/sp", {{"MATLAB_class", "double", {}}, {"MATLAB_sparse", "", {1}}}}});
  const fs::path file = dir_ / "v73.mat";
  write_mat73(file, read_file(plain));

  const auto vars = list_mat_variables(file);
  ASSERT_EQ(vars.size(), 3u);
  EXPECT_EQ(vars[0].name, "fs");
  EXPECT_EQ(vars[1].name, "rf");
  EXPECT_EQ(vars[1].matlab_class, "double");
  EXPECT_EQ(vars[1].dims, (std::vector<std::size_t>{3, 2, 2}));
  EXPECT_EQ(vars[2].name, "s");
  EXPECT_EQ(vars[2].matlab_class, "struct");
  const MatArray r = read_mat(file, "rf");
  EXPECT_EQ(r.dims, (std::vector<std::size_t>{3, 2, 2}));
  EXPECT_EQ(r.values, rf.values);  // column-major in MATLAB's dims
  const MatArray f = read_mat(file, "s.data");
  EXPECT_EQ(f.dims, (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(f.values, field.values);
  const MatArray g = read_mat(file, "s.gain");  // one value: 1 x 1, as size() agrees
  EXPECT_EQ(g.values, std::vector<double>{7.5});
  EXPECT_EQ(g.dims, (std::vector<std::size_t>{1, 1}));
  try {
    read_mat(file);
    FAIL() << "two numeric variables, none named";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fs, rf"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_mat(file, "s"), InputError);         // a struct, not a numeric array
  EXPECT_THROW(read_mat(file, "s.missing"), InputError);
  EXPECT_THROW(read_mat(file, "missing"), InputError);
  // Fields of nested structs (s.rx.data was refused: "struct 's' has no field 'rx.data'").
  const MatArray n = read_mat(file, "s.rx.data");
  EXPECT_EQ(n.values, nested.values);
  EXPECT_EQ(n.dims, (std::vector<std::size_t>{1, 2}));
  // A missing field is told the struct's fields (a wrong variable was told the file's variables; a
  // wrong field only that it was missing).
  expect_refused(file, "struct 's.rx' has no field 'dat' (fields here: data)", [&] { (void)read_mat(file, "s.rx.dat"); });
  expect_refused(file, "struct 's.rx' has no field 'Data' (fields here: data; names are case-sensitive: data)",
                 [&] { (void)read_mat(file, "s.rx.Data"); });
  expect_refused(file, "struct 's' has no field 'tx'", [&] { (void)read_mat(file, "s.tx.data"); });
  // Said as a MAT v5 file says them (a review found "struct 's' has no field 'rx'" for both).
  expect_refused(file, "variable 's.rx' is a struct array, not a numeric array", [&] { (void)read_mat(file, "s.rx"); });
  expect_refused(file, "'s.data' is not a struct", [&] { (void)read_mat(file, "s.data.x"); });
  // A sparse matrix in a struct is no struct, and its arrays are no fields (s.sp.data was read).
  expect_refused(file, "variable 's.sp' is a sparse array, not a numeric array", [&] { (void)read_mat(file, "s.sp"); });
  expect_refused(file, "'s.sp' is not a struct", [&] { (void)read_mat(file, "s.sp.data"); });
  expect_refused(file, "'s.sp' is not a struct", [&] { (void)read_mat(file, "s.sp.x"); });
  expect_refused(file, "no variable ''", [&] { (void)read_mat(file, ".rf"); });
  // A wrong name is told the file's variables, and the one that differs only in case.
  expect_refused(file, "no variable 'RF' (variables here: fs, rf, s; names are case-sensitive: rf)",
                 [&] { (void)read_mat(file, "RF"); });

  // A v7.3 header with no HDF5 file behind it (cut short): said as such, by this reader; matio
  // filled stderr with libhdf5's diagnostics and then listed no variables.
  const std::string whole = read_file(file);
  for (const std::size_t cut : {std::size_t{128}, std::size_t{300}, std::size_t{512}}) {
    SCOPED_TRACE(cut);
    const fs::path short_file = dir_ / "cut.mat";
    write_file_atomic(short_file, whole.substr(0, cut));
    expect_refused(short_file, "a MAT v7.3 header, but no HDF5 file behind it", [&] { (void)list_mat_variables(short_file); });
    expect_refused(short_file, "a MAT v7.3 header, but no HDF5 file behind it", [&] { (void)read_mat(short_file, "rf"); });
  }

  // HDF5 bytes on which libhdf5 crashes (tests/corpus/regressions/hdf5): an error naming the
  // file, not the end of this process (matio read them here and crashed it).
  const std::string crash = read_file(fs::path(USRECON_SOURCE_DIR) /
                                      "tests/corpus/regressions/hdf5/libhdf5_segv_in_H5F__accum_read");
  write_mat73(dir_ / "crash.mat", crash);
  try {
    (void)list_mat_variables(dir_ / "crash.mat");
    FAIL() << "the malformed file was listed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("crash.mat"), std::string::npos) << e.what();
  }
}

// One double matrix of a hand-written MAT v5 file: its real part holds `stored` of the values
// (all when stored < 0); a non-empty `imaginary` makes it complex.
struct Mat5Matrix {
  std::string name;
  std::vector<std::int32_t> dims;
  std::vector<double> values;
  int stored = -1;
  std::vector<double> imaginary = {};
};

// MAT v5 bytes, little-endian: the 128-byte header, then uncompressed double matrices.
std::string mat5_file(const std::vector<Mat5Matrix>& vars) {
  std::string out(128, ' ');
  out[124] = 0x00, out[125] = 0x01, out[126] = 'I', out[127] = 'M';
  const auto u32 = [](std::string& s, std::uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  for (const auto& [name, dims, values, stored, imaginary] : vars) {
    std::string m;
    // Array flags: miUINT32, 8 bytes; class double (6), bit 0x0800 when complex.
    u32(m, 6), u32(m, 8), u32(m, 6 | (imaginary.empty() ? 0u : 0x0800u)), u32(m, 0);
    u32(m, 5), u32(m, std::uint32_t(4 * dims.size()));
    for (std::int32_t d : dims) u32(m, std::uint32_t(d));
    if (dims.size() % 2) u32(m, 0);
    u32(m, 1 | std::uint32_t(name.size()) << 16);  // the name: a small miINT8 element (<= 4 bytes)
    m += name + std::string(4 - name.size(), '\0');
    const std::size_t n = stored < 0 ? values.size() : std::size_t(stored);
    u32(m, 9), u32(m, std::uint32_t(8 * n));  // miDOUBLE
    m.append(reinterpret_cast<const char*>(values.data()), 8 * n);
    if (!imaginary.empty()) {
      u32(m, 9), u32(m, std::uint32_t(8 * imaginary.size()));
      m.append(reinterpret_cast<const char*>(imaginary.data()), 8 * imaginary.size());
    }
    u32(out, 14), u32(out, std::uint32_t(m.size()));  // miMATRIX
    out += m;
  }
  return out;
}

// Every numeric MATLAB class of a hand-written MAT v5 file, stored in its own type: its extremes
// come back as those numbers (uint32 above 2^31 and uint64 above 2^63 are not negative, int8 and
// int16 below 0 are), held to std::numeric_limits, not to a file this library wrote.
template <class T>
std::string mat5_typed_row(std::uint32_t array_class, std::uint32_t data_type, const std::string& name,
                           const std::vector<T>& values) {
  const auto u32 = [](std::string& s, std::uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  std::string m;
  u32(m, 6), u32(m, 8), u32(m, array_class), u32(m, 0);  // array flags
  u32(m, 5), u32(m, 8), u32(m, 1), u32(m, std::uint32_t(values.size()));  // dims 1 x n
  u32(m, 1 | std::uint32_t(name.size()) << 16);  // the name: a small miINT8 element
  m += name + std::string(4 - name.size(), '\0');
  const std::size_t bytes = sizeof(T) * values.size();
  u32(m, data_type), u32(m, std::uint32_t(bytes));
  m.append(reinterpret_cast<const char*>(values.data()), bytes);
  m.append((8 - bytes % 8) % 8, '\0');
  std::string out;
  u32(out, 14), u32(out, std::uint32_t(m.size()));  // miMATRIX
  return out + m;
}

TEST_F(IoMat, EveryNumericClassReadsItsExtremes) {
  std::string file(128, ' ');
  file[124] = 0x00, file[125] = 0x01, file[126] = 'I', file[127] = 'M';
  using L8 = std::numeric_limits<std::int8_t>;
  using U8 = std::numeric_limits<std::uint8_t>;
  using L16 = std::numeric_limits<std::int16_t>;
  using U16 = std::numeric_limits<std::uint16_t>;
  using L32 = std::numeric_limits<std::int32_t>;
  using U32 = std::numeric_limits<std::uint32_t>;
  using L64 = std::numeric_limits<std::int64_t>;
  using U64 = std::numeric_limits<std::uint64_t>;
  file += mat5_typed_row<std::int8_t>(8, 1, "i8", {L8::min(), -1, L8::max()});
  file += mat5_typed_row<std::uint8_t>(9, 2, "u8", {0, 1, U8::max()});
  file += mat5_typed_row<std::int16_t>(10, 3, "i16", {L16::min(), -1, L16::max()});
  file += mat5_typed_row<std::uint16_t>(11, 4, "u16", {0, 1, U16::max()});
  file += mat5_typed_row<std::int32_t>(12, 5, "i32", {L32::min(), -1, L32::max()});
  file += mat5_typed_row<std::uint32_t>(13, 6, "u32", {0, 1u << 31, U32::max()});
  file += mat5_typed_row<std::int64_t>(14, 12, "i64", {L64::min(), -1, std::int64_t{1} << 53});
  file += mat5_typed_row<std::uint64_t>(15, 13, "u64", {0, std::uint64_t{1} << 63, U64::max()});
  file += mat5_typed_row<float>(7, 7, "f32", {-1.5f, std::numeric_limits<float>::max(), 0.1f});
  write_file_atomic(dir_ / "types.mat", file);
  const fs::path path = dir_ / "types.mat";
  const auto expect = [&](const char* name, const char* cls, std::vector<double> values) {
    SCOPED_TRACE(name);
    const MatArray a = read_mat(path, name);
    EXPECT_EQ(a.matlab_class, cls);
    EXPECT_EQ(a.dims, (std::vector<std::size_t>{1, 3}));
    EXPECT_EQ(a.values, values);
  };
  expect("i8", "int8", {-128, -1, 127});
  expect("u8", "uint8", {0, 1, 255});
  expect("i16", "int16", {-32768, -1, 32767});
  expect("u16", "uint16", {0, 1, 65535});
  expect("i32", "int32", {-2147483648.0, -1, 2147483647.0});
  expect("u32", "uint32", {0, 2147483648.0, 4294967295.0});
  expect("i64", "int64", {-9223372036854775808.0, -1, 9007199254740992.0});
  expect("u64", "uint64", {0, 9223372036854775808.0, 18446744073709551615.0});
  expect("f32", "single", {-1.5, double(std::numeric_limits<float>::max()), double(0.1f)});
}

// write_mat's uint8 form rounds to the nearest integer (halves away from zero) and clamps to
// 0..255, held to that rule written out, not to the function's own output.
TEST_F(IoMat, Uint8OutputRoundsAndClamps) {
  const MatArray a{"img", "", {1, 9}, {-3, -0.4, 0.4, 0.5, 1.49, 2.5, 254.5, 254.4, 300}};
  write_mat(dir_ / "u8.mat", {a}, true);
  const MatArray r = read_mat(dir_ / "u8.mat", "img");
  EXPECT_EQ(r.matlab_class, "uint8");
  EXPECT_EQ(r.values, (std::vector<double>{0, 0, 0, 1, 1, 3, 255, 254, 255}));
}

// MAT v5 bytes: struct A nested `levels` deep (each a 1 x 1 struct of one field 'a'), the
// innermost field a double of dims rows x cols that stores `stored` values (1.5 each).
std::string mat5_nested_structs(int levels, std::int32_t rows, std::int32_t cols, int stored) {
  const auto u32 = [](std::uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  const auto element = [&](std::uint32_t type, std::string data) {  // tag, data, padding to 8
    const std::size_t size = data.size();
    data.append((8 - size % 8) % 8, '\0');
    return u32(type) + u32(std::uint32_t(size)) + data;
  };
  const auto head = [&](std::uint32_t matlab_class, std::int32_t r, std::int32_t c, const std::string& name) {
    return element(6, u32(matlab_class) + u32(0)) + element(5, u32(std::uint32_t(r)) + u32(std::uint32_t(c))) +
           element(1, name);
  };
  std::string values;
  for (int k = 0; k < stored; ++k) {
    const double v = 1.5;
    values.append(reinterpret_cast<const char*>(&v), 8);
  }
  const std::string innermost = element(14, head(6, rows, cols, "") + element(9, values));  // class double
  // Each struct: its miMATRIX tag, head, field-name length (a small element: 8), the names, then
  // its field. Written outside in, each struct's start before the next: building each around the
  // last copied the whole file at every level.
  std::vector<std::string> starts;  // innermost struct's first
  std::size_t field_bytes = innermost.size();
  for (int k = 0; k < levels; ++k) {
    const std::string start = head(2, 1, 1, k == levels - 1 ? "A" : "") + u32(5 | 4u << 16) + u32(8) +
                              element(1, std::string("a\0\0\0\0\0\0\0", 8));
    starts.push_back(u32(14) + u32(std::uint32_t(start.size() + field_bytes)) + start);
    field_bytes += starts.back().size();
  }
  std::string out(128, ' ');
  out[124] = 0x00, out[125] = 0x01, out[126] = 'I', out[127] = 'M';
  for (auto start = starts.rbegin(); start != starts.rend(); ++start) out += *start;
  return out + innermost;
}

// Matrices nested 16 deep went unchecked (the walk stopped at 16 levels) while matio still read
// them: a double claiming 50000 x 50000 in 56 bytes had matio allocate 20 GB, and one storing 1
// of its 12 values was read on into the next variable's bytes. 60000 nested structs overflowed
// matio's stack in listing the file. Now refused, as the same matrix 15 deep is.
TEST_F(IoMat, MatricesNestedPastTheWalksDepthAreRefused) {
  const auto path_of = [](int levels) {
    std::string name = "A";
    for (int k = 0; k < levels; ++k) name += ".a";
    return name;
  };
  write_file_atomic(dir_ / "d15.mat", mat5_nested_structs(15, 4, 3, 12));
  const MatArray fine = read_mat(dir_ / "d15.mat", path_of(15));
  EXPECT_EQ(fine.dims, (std::vector<std::size_t>{4, 3}));
  EXPECT_EQ(fine.values, std::vector<double>(12, 1.5));
  write_file_atomic(dir_ / "huge15.mat", mat5_nested_structs(15, 50000, 50000, 1));
  expect_refused(dir_ / "huge15.mat", "claims 2500000000 elements", [&] { (void)read_mat(dir_ / "huge15.mat", path_of(15)); });
  for (const auto& [rows, cols, stored] : {std::tuple{4, 3, 12}, std::tuple{4, 3, 1}, std::tuple{50000, 50000, 1}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) + ", " + std::to_string(stored) + " stored");
    write_file_atomic(dir_ / "d16.mat", mat5_nested_structs(16, rows, cols, stored));
    expect_refused(dir_ / "d16.mat", "is nested more than 16 deep in structs or cells",
                   [&] { (void)read_mat(dir_ / "d16.mat", path_of(16)); });
    expect_refused(dir_ / "d16.mat", "is nested more than 16 deep", [&] { (void)list_mat_variables(dir_ / "d16.mat"); });
  }
  write_file_atomic(dir_ / "deep.mat", mat5_nested_structs(60000, 1, 1, 1));
  expect_refused(dir_ / "deep.mat", "is nested more than 16 deep", [&] { (void)list_mat_variables(dir_ / "deep.mat"); });
}

// A numeric array whose data element holds fewer bytes than its dims need: matio read on into the
// next variable's bytes (the 6th value came back as the next variable's 7). Refused.
TEST_F(IoMat, ANumericArrayShorterThanItsDimsIsRefused) {
  const std::vector<double> rf = {1, 2, 3, 4, 5, 6, 7, 8};
  write_file_atomic(dir_ / "ok.mat", mat5_file({{"rf", {4, 2}, rf, -1}, {"fs", {1, 1}, {7}, -1}}));
  EXPECT_EQ(read_mat(dir_ / "ok.mat", "rf").values, rf);
  EXPECT_EQ(read_mat(dir_ / "ok.mat", "fs").values, std::vector<double>{7});
  write_file_atomic(dir_ / "short.mat", mat5_file({{"rf", {4, 2}, rf, 5}, {"fs", {1, 1}, {7}, -1}}));
  try {
    (void)read_mat(dir_ / "short.mat", "rf");
    FAIL() << "8 values were read from 5";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 40 bytes for 8 values of 8 bytes"), std::string::npos) << e.what();
  }
}

// A file whose only numeric arrays are complex: without --var the message says they are complex
// and names them (not "numeric arrays here: none"); named, each is refused as complex. A real
// array beside them is the one read without --var.
TEST_F(IoMat, AFileOfOnlyComplexArraysIsRefusedAsComplex) {
  const std::vector<double> re = {1, 2, 3, 4}, im = {-1, 0.5, 0, 2};
  write_file_atomic(dir_ / "iq.mat", mat5_file({{"iq", {2, 2}, re, -1, im}, {"z", {1, 1}, {3}, -1, {4}}}));
  std::vector<std::string> listed;
  for (const MatVariableInfo& v : list_mat_variables(dir_ / "iq.mat"))
    listed.push_back(v.name + (v.is_complex ? ":complex" : ":real"));
  EXPECT_EQ(listed, (std::vector<std::string>{"iq:complex", "z:complex"}));
  try {
    (void)read_mat(dir_ / "iq.mat");
    ADD_FAILURE() << "a complex array was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("iq.mat: its numeric arrays (iq, z) are complex; only real channel data "
                                         "are read"),
              std::string::npos)
        << e.what();
  }
  try {
    (void)read_mat(dir_ / "iq.mat", "iq");
    ADD_FAILURE() << "a complex array was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("variable 'iq' is complex"), std::string::npos) << e.what();
  }
  write_file_atomic(dir_ / "mixed.mat", mat5_file({{"iq", {2, 2}, re, -1, im}, {"rf", {2, 2}, re}}));
  const MatArray rf = read_mat(dir_ / "mixed.mat");
  EXPECT_EQ(rf.name, "rf");
  EXPECT_EQ(rf.values, re);
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
    // A nested struct's field, and what is missing on the way said where it is missing.
    const MatArray depth = read_mat(file, "params.nested.depth");
    EXPECT_EQ(depth.values, (std::vector<double>{1, 2}));
    EXPECT_EQ(depth.dims, (std::vector<std::size_t>{1, 2}));
    expect_refused(file, "struct 'params.nested' has no field 'deep' (fields here: depth, flag)",
                   [&] { (void)read_mat(file, "params.nested.deep"); });
    expect_refused(file, "'params.fs' is not a struct", [&] { (void)read_mat(file, "params.fs.x"); });
    expect_refused(file, "no variable 'RF' (variables here: rf, params, cells, sparse_m, complex_v, label, empty, "
                         "structarr; names are case-sensitive: rf)",
                   [&] { (void)read_mat(file, "RF"); });
    EXPECT_THROW(read_mat(file, "complex_v"), InputError);  // complex: refused by the reader, not the check
    // A field of a 1 x 2 struct array: refused (matio's first element was read without a word).
    try {
      (void)read_mat(file, "structarr.x");
      ADD_FAILURE() << "a struct array's field was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("'structarr' is a 1 x 2 struct array"), std::string::npos) << e.what();
    }
  }
}

// Channel data kept in a struct: without --var, the struct's numeric fields are offered as --var
// names (it said "numeric arrays here: none"), from SciPy's MAT v5 and from a v7.3 file.
TEST_F(IoMat, ChannelDataInAStructAreOffered) {
  const fs::path v5 = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat/scipy_struct_only.mat";
  expect_refused(v5, "name the variable to read with --var (numeric arrays here: none; in structs and cells: P.rx.data, P.fs)",
                 [&] { (void)read_mat(v5); });
  const MatArray data = read_mat(v5, "P.rx.data");
  EXPECT_EQ(data.dims, (std::vector<std::size_t>{4, 3}));
  EXPECT_EQ(data.values[1], 3.0);  // MATLAB order: row 1 of arange(12).reshape(4, 3)

  const fs::path plain = dir_ / "plain.h5", v73 = dir_ / "struct.mat";
  write_hdf5(plain,
             {{"/P/rx/data", "", {3, 4}, std::vector<double>(12, 1.0)}, {"/P/fs", "", {1, 1}, {20e6}},
              {"/P/sp/data", "", {1}, {5}}},  // a sparse matrix's values: no field to offer
             {{"/P", {{"MATLAB_class", "struct", {}}}},
              {"/P/rx", {{"MATLAB_class", "struct", {}}}},
              {"/P/sp", {{"MATLAB_class", "double", {}}, {"MATLAB_sparse", "", {1}}}}});
  write_mat73(v73, read_file(plain));
  expect_refused(v73, "(numeric arrays here: none; in structs and cells: P.fs, P.rx.data)", [&] { (void)read_mat(v73); });
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
