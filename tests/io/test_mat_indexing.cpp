// --var in MATLAB's syntax: cell elements (RcvData{1}, the cell in which Verasonics scanners save
// their channel data), struct array elements (S(2).data) and chains of both, in MAT v5 and v7.3
// files that matio wrote (an independent writer for v7.3, which io reads through its own HDF5
// walk), and in SciPy's files. Errors name the step where the name stops matching the file.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../test_support.hpp"
#include "expect_refused.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/hdf5.hpp"
#include "usrecon/io/mat.hpp"

namespace fs = std::filesystem;

namespace usrecon::io {
namespace {

using testing::expect_refused;

// What the files hold (tests/corpus/valid/mat/make_matio_indexing.cpp wrote them with matio), in
// MATLAB's words:
//   RcvData = {int16 4 x 3 x 2}                  (a 1 x 1 cell, as Verasonics' RcvData is)
//   C = {[1 2 3], struct('d', [5; 6]); 'x', []}  (2 x 2)
//   S = 1 x 3 struct array, S(k).data = [10k, 10k + 1], S(k).name = 'k'
//   P.rx = 2 x 1 struct array, P.rx(k).data = k x 2 of k; P.c = {[7 8]}; P.fs = 20e6
//   CZ = cell(0, 0); SE0 = 1 x 0 struct array with field data; SNF = 1 x 2 struct array without
//   fields; LC = {logical([1 0 1])}; NC = {{[3 4]}}; SC(k).c = {k} (1 x 2); C3 = 2 x 3 x 2 cell,
//   C3{k} = k; SP = a 3 x 3 sparse matrix
std::vector<std::int16_t> rcv_values() {
  std::vector<std::int16_t> v;
  for (int k = 0; k < 24; ++k) v.push_back(static_cast<std::int16_t>(k - 12));
  return v;
}

class IoMatIndexing : public ::testing::TestWithParam<const char*> {
 protected:
  bool v73() const { return std::string(GetParam()).find("v73") != std::string::npos; }
  const fs::path file_ = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat" / GetParam();
};

TEST_P(IoMatIndexing, CellAndStructArrayElementsRead) {
  // The one channel-data array of a Verasonics-like file, and its dims and values unchanged.
  const MatArray rcv = read_mat(file_, "RcvData{1}");
  EXPECT_EQ(rcv.name, "RcvData{1}");
  EXPECT_EQ(rcv.matlab_class, "int16");
  EXPECT_EQ(rcv.dims, (std::vector<std::size_t>{4, 3, 2}));
  const std::vector<std::int16_t> expected = rcv_values();
  EXPECT_EQ(rcv.values, std::vector<double>(expected.begin(), expected.end()));
  EXPECT_EQ(read_mat(file_, "RcvData{1,1}").values, rcv.values);
  EXPECT_EQ(read_mat(file_, "RcvData{ 1 , 1 , 1 }").values, rcv.values);  // trailing 1s, spaces

  // Linear and (row, column) subscripts, column-major as in MATLAB.
  EXPECT_EQ(read_mat(file_, "C{1}").values, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(read_mat(file_, "C{1,1}").values, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(read_mat(file_, "C{3}.d").values, (std::vector<double>{5, 6}));
  EXPECT_EQ(read_mat(file_, "C{1,2}.d").values, (std::vector<double>{5, 6}));
  EXPECT_EQ(read_mat(file_, "C{1,2}.d").dims, (std::vector<std::size_t>{2, 1}));
  const MatArray empty = read_mat(file_, "C{2,2}");
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_TRUE(empty.values.empty());

  // Each element of a struct array, by one subscript or two.
  for (std::size_t k = 1; k <= 3; ++k) {
    SCOPED_TRACE(k);
    const MatArray d = read_mat(file_, "S(" + std::to_string(k) + ").data");
    EXPECT_EQ(d.dims, (std::vector<std::size_t>{1, 2}));
    EXPECT_EQ(d.values, (std::vector<double>{10.0 * double(k), 10.0 * double(k) + 1}));
    EXPECT_EQ(read_mat(file_, "S(1," + std::to_string(k) + ").data").values, d.values);
  }
  // Through a 1 x 1 struct into a struct array and a cell.
  EXPECT_EQ(read_mat(file_, "P.rx(2).data").values, (std::vector<double>{2, 2, 2, 2}));
  EXPECT_EQ(read_mat(file_, "P.rx(2).data").dims, (std::vector<std::size_t>{2, 2}));
  EXPECT_EQ(read_mat(file_, "P.rx(1).data").values, (std::vector<double>{1, 1}));
  EXPECT_EQ(read_mat(file_, "P.c{1}").values, (std::vector<double>{7, 8}));
  EXPECT_EQ(read_mat(file_, "P(1).fs").values, std::vector<double>{20e6});  // (1) of a 1 x 1 struct
  EXPECT_EQ(read_mat(file_, "P.fs").values, std::vector<double>{20e6});
  // Logical arrays (MATLAB stores uint8), cells in cells, a cell in a struct array's element.
  EXPECT_EQ(read_mat(file_, "LC{1}").values, (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(read_mat(file_, "NC{1}{1}").values, (std::vector<double>{3, 4}));
  EXPECT_EQ(read_mat(file_, "SC(2).c{1}").values, std::vector<double>{2});
  // A 2 x 3 x 2 cell: MATLAB's linear index (column-major) of each subscript form, against the
  // plain formula i + 2 (j - 1) + 6 (k - 1).
  for (int i = 1; i <= 2; ++i)
    for (int j = 1; j <= 3; ++j)
      for (int k = 1; k <= 2; ++k) {
        const double linear = i + 2 * (j - 1) + 6 * (k - 1);
        const std::string ijk = std::to_string(i) + "," + std::to_string(j) + "," + std::to_string(k);
        EXPECT_EQ(read_mat(file_, "C3{" + ijk + "}").values, std::vector<double>{linear}) << ijk;
        EXPECT_EQ(read_mat(file_, "C3{" + ijk + ",1}").values, std::vector<double>{linear}) << ijk;
        // Two subscripts: the second spans the last two dims (3 x 2 = 6 columns).
        EXPECT_EQ(read_mat(file_, "C3{" + std::to_string(i) + "," + std::to_string(j + 3 * (k - 1)) + "}").values,
                  std::vector<double>{linear}) << ijk;
        EXPECT_EQ(read_mat(file_, "C3{" + std::to_string(int(linear)) + "}").values, std::vector<double>{linear});
      }
}

// A scanner's parameter structs (Verasonics' Trans, Receive, TX) read field by field: text and
// numbers of a struct array's elements, a range of them, a 1 x 1 struct's field that is itself a
// struct, fields the struct lacks, and what is not a struct, alike in v5 and v7.3.
TEST_P(IoMatIndexing, StructFieldsReadElementByElement) {
  const MatStruct s = read_mat_struct(file_, "S", {"name", "data", "missing"});
  EXPECT_EQ(s.dims, (std::vector<std::size_t>{1, 3}));
  std::vector<std::string> fields = s.fields;
  std::sort(fields.begin(), fields.end());
  EXPECT_EQ(fields, (std::vector<std::string>{"data", "name"}));
  ASSERT_EQ(s.elements.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    ASSERT_EQ(s.elements[k].size(), 3u);
    ASSERT_TRUE(s.elements[k][0] && s.elements[k][1]);
    EXPECT_EQ(s.elements[k][0]->matlab_class, "char");
    EXPECT_EQ(s.elements[k][0]->text, std::to_string(k + 1));
    EXPECT_FALSE(s.elements[k][0]->numeric());
    EXPECT_EQ(s.elements[k][1]->matlab_class, "double");
    EXPECT_EQ(s.elements[k][1]->dims, (std::vector<std::size_t>{1, 2}));
    EXPECT_EQ(s.elements[k][1]->values, (std::vector<double>{10.0 * double(k + 1), 10.0 * double(k + 1) + 1}));
    EXPECT_FALSE(s.elements[k][2].has_value());
  }
  // A range: elements 2 and 3 (first = 1), the rest past the end left out.
  const MatStruct tail = read_mat_struct(file_, "S", {"data"}, 1, 5);
  EXPECT_EQ(tail.first, 1u);
  ASSERT_EQ(tail.elements.size(), 2u);
  EXPECT_EQ(tail.elements[1][0]->values, (std::vector<double>{30, 31}));
  EXPECT_TRUE(read_mat_struct(file_, "S", {"data"}, 3).elements.empty());
  // A 1 x 1 struct: a number, a struct array and a cell among its fields (said by class).
  const MatStruct p = read_mat_struct(file_, "P", {"fs", "rx", "c"});
  ASSERT_EQ(p.elements.size(), 1u);
  EXPECT_EQ(p.elements[0][0]->values, std::vector<double>{20e6});
  EXPECT_EQ(p.elements[0][1]->matlab_class, "struct");
  EXPECT_TRUE(p.elements[0][1]->values.empty());
  EXPECT_EQ(p.elements[0][2]->matlab_class, "cell");
  // Into it: P.rx is a 2 x 1 struct array.
  const MatStruct rx = read_mat_struct(file_, "P.rx", {"data"});
  EXPECT_EQ(rx.dims, (std::vector<std::size_t>{2, 1}));
  ASSERT_EQ(rx.elements.size(), 2u);
  EXPECT_EQ(rx.elements[1][0]->values, (std::vector<double>{2, 2, 2, 2}));
  EXPECT_EQ(rx.elements[1][0]->dims, (std::vector<std::size_t>{2, 2}));
  // A struct array of none, and one without fields.
  EXPECT_TRUE(read_mat_struct(file_, "SE0", {"data"}).elements.empty());
  const MatStruct snf = read_mat_struct(file_, "SNF", {"data"});
  EXPECT_TRUE(snf.fields.empty());
  ASSERT_EQ(snf.elements.size(), 2u);
  EXPECT_FALSE(snf.elements[0][0].has_value());
  // Refused, naming what is wrong.
  expect_refused(file_, "no variable 'nothing'", [&] { (void)read_mat_struct(file_, "nothing", {"x"}); });
  expect_refused(file_, "not a struct", [&] { (void)read_mat_struct(file_, "C", {"x"}); });
  expect_refused(file_, "'S' is not a 1 x 1 struct", [&] { (void)read_mat_struct(file_, "S.data", {"x"}); });
  expect_refused(file_, "has no field 'none' (fields here: ", [&] { (void)read_mat_struct(file_, "P.none", {"x"}); });
  expect_refused(file_, "not a struct", [&] { (void)read_mat_struct(file_, "P.fs", {"x"}); });
  expect_refused(file_, "without subscripts", [&] { (void)read_mat_struct(file_, "S(1)", {"x"}); });
}

// The variables' classes and dims listed alike from both versions (a v7.3 struct array, empty
// cell or empty struct array was listed as 1 x 1 or as its stored dims' count).
TEST(IoMatIndexingVersions, BothVersionsListTheSameClassesAndDims) {
  const fs::path dir = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat";
  std::map<std::string, std::string> v5, v73;
  for (const MatVariableInfo& v : list_mat_variables(dir / "matio_indexing_v5.mat"))
    v5[v.name] = v.matlab_class + " " + dims_text(v.dims);
  for (const MatVariableInfo& v : list_mat_variables(dir / "matio_indexing_v73.mat"))
    v73[v.name] = v.matlab_class + " " + dims_text(v.dims);
  EXPECT_EQ(v5, v73);
  EXPECT_EQ(v73["S"], "struct 1 x 3");
  EXPECT_EQ(v73["CZ"], "cell 0 x 0");
  EXPECT_EQ(v73["SE0"], "struct 1 x 0");
  EXPECT_EQ(v73["SNF"], "struct 1 x 2");
  EXPECT_EQ(v73["C3"], "cell 2 x 3 x 2");
  EXPECT_EQ(v73["SP"], "sparse 3 x 3");  // matio's v5 sparse indices (miUINT32) were refused
}

// Only the references asked for are resolved (libhdf5 searches the file for each one's name: a
// cell of 8000 took 51 s to read one element when all were resolved).
TEST(IoMatIndexingVersions, ReferencesAreResolvedOnlyAsAskedFor) {
  const fs::path file = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat/matio_indexing_v73.mat";
  const std::vector<std::string> one = hdf5_reference_targets(file, "/C3", 5, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.front().rfind("/#refs#/", 0), 0u) << one.front();
  EXPECT_EQ(hdf5_reference_targets(file, "/C3", 10, 64).size(), 2u);  // 12 in all
  EXPECT_TRUE(hdf5_reference_targets(file, "/C3", 12, 1).empty());
  EXPECT_EQ(hdf5_reference_targets(file, "/C3", 0, 64).size(), 12u);
  EXPECT_EQ(hdf5_reference_targets(file, "/C3", 5, 1), std::vector<std::string>{hdf5_reference_targets(file, "/C3", 0, 12)[5]});
  try {
    (void)hdf5_reference_targets(file, "/P/fs", 0, 1);
    ADD_FAILURE() << "a numeric dataset's references were read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset '/P/fs' is not an array of object references"), std::string::npos)
        << e.what();
  }
}

class IoMatSlabs : public usrecon::testing::TempDir {};

// A little-endian v5 MAT file of one top-level element of `type` holding `bytes`.
void write_mat5_element(const fs::path& path, std::uint32_t type, const std::string& bytes) {
  std::string file = "MATLAB 5.0 MAT-file, written by a test";
  file.resize(116, ' ');
  file.append(8, '\0');
  file += std::string("\x00\x01IM", 4);
  const std::uint32_t tag[2] = {type, std::uint32_t(bytes.size())};
  file.append(reinterpret_cast<const char*>(tag), 8);
  file += bytes;
  write_file_atomic(path, file);
}

// A v5 MAT file written byte by byte, uncompressed: one top-level array `rf` of class double
// (mxDOUBLE_CLASS) whose values are stored as miUINT8, as MATLAB stores small whole numbers.
void write_double_stored_as_uint8(const fs::path& path, const std::vector<std::int32_t>& dims,
                                  const std::vector<std::uint8_t>& values) {
  std::string body;
  const auto u32 = [&](std::uint32_t v) { body.append(reinterpret_cast<const char*>(&v), 4); };
  const auto pad = [&] { body.append((8 - body.size() % 8) % 8, '\0'); };
  u32(6), u32(8), u32(6), u32(0);  // array flags: mxDOUBLE_CLASS
  u32(5), u32(std::uint32_t(4 * dims.size()));
  for (std::int32_t d : dims) u32(std::uint32_t(d));
  pad();
  u32((2u << 16) | 1u), body += std::string("rf\0\0", 4);  // name: a small miINT8 element
  u32(2), u32(std::uint32_t(values.size()));               // miUINT8 data
  body.append(reinterpret_cast<const char*>(values.data()), values.size());
  pad();
  write_mat5_element(path, 14, body);  // miMATRIX
}

// A v5 MAT file written byte by byte with one compressed top-level uint8 array `rf` of zeros of
// these dims (the zeros deflated a megabyte at a time: a large array in a small file).
void write_compressed_zeros(const fs::path& path, const std::vector<std::int32_t>& dims) {
  std::uint64_t values = 1;
  for (std::int32_t d : dims) values *= std::uint64_t(d);
  std::string head;  // the miMATRIX element up to its data's bytes
  const auto u32 = [&](std::uint32_t v) { head.append(reinterpret_cast<const char*>(&v), 4); };
  const std::uint64_t data_bytes = values + (8 - values % 8) % 8;
  const std::uint64_t matrix_bytes = 16 + 8 + 4 * dims.size() + (dims.size() % 2 ? 4 : 0) + 8 + 8 + data_bytes;
  u32(14), u32(std::uint32_t(matrix_bytes));
  u32(6), u32(8), u32(9), u32(0);  // array flags: mxUINT8_CLASS
  u32(5), u32(std::uint32_t(4 * dims.size()));
  for (std::int32_t d : dims) u32(std::uint32_t(d));
  if (dims.size() % 2) u32(0);
  u32((2u << 16) | 1u), head += std::string("rf\0\0", 4);
  u32(2), u32(std::uint32_t(values));  // miUINT8 data
  std::string deflated;
  z_stream z{};
  ASSERT_EQ(deflateInit(&z, 1), Z_OK);
  const std::string zeros(1 << 20, '\0');
  std::string out(1 << 20, '\0');
  const auto feed = [&](const char* bytes, std::size_t n, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes));
    z.avail_in = static_cast<uInt>(n);
    do {
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      deflate(&z, flush);
      deflated.append(out.data(), out.size() - z.avail_out);
    } while (z.avail_out == 0);
  };
  feed(head.data(), head.size(), Z_NO_FLUSH);
  for (std::uint64_t left = data_bytes; left > 0;) {
    const std::size_t n = std::size_t(std::min<std::uint64_t>(left, zeros.size()));
    left -= n;
    feed(zeros.data(), n, left == 0 ? Z_FINISH : Z_NO_FLUSH);
  }
  deflateEnd(&z);
  write_mat5_element(path, 15, deflated);  // miCOMPRESSED
}

// Runs of a v5 top-level array's last axis (a cine's frames), read alone by matio, are the
// whole read's: arrays of two to five axes (matio's per-axis slab read got four and more wrong),
// compressed as write_mat writes them and uncompressed with doubles stored as uint8; refused
// past the axis. Inside a cell, a v5 array is read with it (mat_reads_slabs_alone says so).
TEST_F(IoMatSlabs, RunsOfTheLastAxisOfAV5ArrayAreTheWholeReadsParts) {
  const std::vector<std::vector<std::size_t>> shapes = {{3, 4}, {4, 3, 5}, {2, 3, 2, 4}, {2, 2, 1, 2, 3}};
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const std::vector<std::size_t>& dims = shapes[k];
    MatArray a{"rf", "", dims, {}};
    for (std::size_t i = 0; i < a.size(); ++i) a.values.push_back(double(i) * 1.5 - 7);
    const fs::path file = dir_ / ("shape" + std::to_string(k) + ".mat");
    write_mat(file, {a});
    SCOPED_TRACE(file.filename().string());
    EXPECT_TRUE(mat_reads_slabs_alone(file, "rf"));
    EXPECT_TRUE(mat_reads_slabs_alone(file, ""));  // the only numeric array
    const std::size_t last = dims.back(), slab = a.size() / last;
    for (std::size_t first = 0; first < last; ++first)
      for (std::size_t count = 1; first + count <= last; ++count) {
        const MatArray part = read_mat_slabs(file, "rf", first, count);
        std::vector<std::size_t> part_dims = dims;
        part_dims.back() = count;
        EXPECT_EQ(part.dims, part_dims);
        EXPECT_EQ(part.matlab_class, "double");
        EXPECT_EQ(part.values, std::vector<double>(a.values.begin() + std::ptrdiff_t(first * slab),
                                                   a.values.begin() + std::ptrdiff_t((first + count) * slab)))
            << first << " " << count;
      }
    expect_refused(file, "index " + std::to_string(last + 1) + " of the last axis of a ",
                   [&] { (void)read_mat_slabs(file, "rf", last - 1, 2); });
    expect_refused(file, "no slabs asked for", [&] { (void)read_mat_slabs(file, "rf", 0, 0); });
  }
  std::vector<std::uint8_t> bytes(60);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::uint8_t(i * 4);
  write_double_stored_as_uint8(dir_ / "stored.mat", {4, 3, 5}, bytes);
  EXPECT_EQ(read_mat(dir_ / "stored.mat", "rf").values, std::vector<double>(bytes.begin(), bytes.end()));
  const MatArray part = read_mat_slabs(dir_ / "stored.mat", "rf", 1, 3);
  EXPECT_EQ(part.dims, (std::vector<std::size_t>{4, 3, 3}));
  EXPECT_EQ(part.values, std::vector<double>(bytes.begin() + 12, bytes.begin() + 48));
  EXPECT_EQ(read_mat(dir_ / "stored.mat", "rf", std::size_t{4}).values,
            std::vector<double>(bytes.begin() + 48, bytes.end()));
  const fs::path corpus = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat/matio_indexing_v5.mat";
  EXPECT_FALSE(mat_reads_slabs_alone(corpus, "RcvData{1}"));
  EXPECT_FALSE(mat_reads_slabs_alone(corpus, "P.fs"));
  EXPECT_FALSE(read_mat_slabs_alone(corpus, "RcvData{1}", 0, 1).has_value());
}

// A compressed v5 array of 2^28 values or more is not read in parts: matio 1.5.23 skips to a
// part by an int count of bytes (8 a value at most), and past 2^31 it read the part from the
// array's start, without an error (frames past 2 GiB came back as the first ones). One value
// fewer is read in parts.
TEST_F(IoMatSlabs, ACompressedV5ArrayPastMatiosIntOffsetsIsNotReadInParts) {
  write_compressed_zeros(dir_ / "limit.mat", {1024, 128, 2048});    // 2^28 values
  write_compressed_zeros(dir_ / "under.mat", {1024, 128, 2047});    // fewer
  EXPECT_FALSE(mat_reads_slabs_alone(dir_ / "limit.mat", "rf"));
  EXPECT_FALSE(read_mat_slabs_alone(dir_ / "limit.mat", "rf", 2047, 1).has_value());
  EXPECT_TRUE(mat_reads_slabs_alone(dir_ / "under.mat", "rf"));
  const std::optional<MatArray> last = read_mat_slabs_alone(dir_ / "under.mat", "rf", 2046, 1);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->dims, (std::vector<std::size_t>{1024, 128, 1}));
  EXPECT_EQ(last->matlab_class, "uint8");
  EXPECT_EQ(std::count(last->values.begin(), last->values.end(), 0.0), std::ptrdiff_t(1024 * 128));
}

class IoMatIndexingDangling : public usrecon::testing::TempDir {};

// A v7.3 cell whose reference points at an object the file no longer holds (its /#refs# link
// deleted, as a file edited by another tool may leave it): the element is refused as referring
// to nothing, whole or a slab, and has no variable to describe; the file's other names still read.
TEST_F(IoMatIndexingDangling, AReferenceToNothingIsRefusedByItsName) {
  const fs::path source = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat/matio_indexing_v73.mat";
  const fs::path file = dir_ / "dangling.mat";
  fs::copy_file(source, file);
  const std::vector<std::string> target = hdf5_reference_targets(file, "/RcvData", 0, 1);
  ASSERT_EQ(target.size(), 1u);
  ASSERT_EQ(target.front().rfind("/#refs#/", 0), 0u) << target.front();
  {
    const hid_t h = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(h, 0);
    EXPECT_GE(H5Ldelete(h, target.front().c_str(), H5P_DEFAULT), 0);
    EXPECT_GE(H5Fclose(h), 0);
  }
  expect_refused(file, "'RcvData{1}' refers to nothing in the file", [&] { (void)read_mat(file, "RcvData{1}"); });
  expect_refused(file, "'RcvData{1}' refers to nothing in the file",
                 [&] { (void)read_mat(file, "RcvData{1}", std::size_t{0}); });
  EXPECT_FALSE(mat_variable_to_read(file, "RcvData{1}").has_value());
  // The rest of the file reads as before.
  EXPECT_EQ(read_mat(file, "C3{5}").values, std::vector<double>{5});
  EXPECT_EQ(read_mat(file, "C{1}").values, (std::vector<double>{1, 2, 3}));
}

TEST_P(IoMatIndexing, ErrorsNameTheStepThatFails) {
  std::string many_steps = "C";
  for (int k = 0; k < 256; ++k) many_steps += "{1}";
  // {--var, what the refusal says}
  const std::vector<std::pair<std::string, std::string>> refusals = {
    // Past the end, by linear index and by subscripts.
    {"RcvData{2}", "'RcvData{2}' lies past the end of 'RcvData', a 1 x 1 cell array"},
    {"C{3,1}", "'C{3,1}' lies past the end of 'C', a 2 x 2 cell array"},
    {"C{5}", "'C{5}' lies past the end of 'C', a 2 x 2 cell array"},
    {"S(4).data", "'S(4)' lies past the end of 'S', a 1 x 3 struct array"},
    {"S(2,1).data", "'S(2,1)' lies past the end of 'S', a 1 x 3 struct array"},
    {"P.rx(3).data", "'P.rx(3)' lies past the end of 'P.rx', a 2 x 1 struct array"},
    // A struct array's field without an element, and a cell as a whole.
    {"S.data", "'S' is a 1 x 3 struct array; --var S(k).data reads element k's field"},
    {"P.rx.data", "'P.rx' is a 2 x 1 struct array; --var P.rx(k).data reads element k's field"},
    {"RcvData",
     "variable 'RcvData' is a cell array, not a numeric array (--var RcvData{k} reads its element k)"},
    {"P.c", "variable 'P.c' is a cell array, not a numeric array (--var P.c{k} reads its element k)"},
    // The wrong brackets, or brackets on what they cannot index.
    {"RcvData(1)", "'RcvData' is a cell array: --var RcvData{k} names its element k"},
    {"S{1}.data", "'S' is a struct array, not a cell array (braces index cells)"},
    {"S(1).data(2)", "'S(1).data' is a double array; --var names whole arrays, not parts of them"},
    {"C{1}{1}", "'C{1}' is a double array, not a cell array (braces index cells)"},
    {"S(1)(1).data", "'S(1)(1)': one subscript per struct array"},
    // What is at the end is not numeric, or a field is missing.
    {"C{2}", "variable 'C{2}' is a char array, not a numeric array"},
    {"S(2)", "variable 'S(2)' is a struct array, not a numeric array"},
    {"C{3}", "variable 'C{3}' is a struct array, not a numeric array"},
    {"S(2).dat", "struct 'S(2)' has no field 'dat' (fields here: data"},
    {"C{3}.e", "struct 'C{3}' has no field 'e'"},
    {"C{1}.d", "'C{1}' is not a struct"},
    // Syntax, said with the character where it fails.
    {"S(0).data", "--var 'S(0).data': indices count from 1, as MATLAB's do (character 3)"},
    {"S().data", "--var 'S().data': expected an index (1, 2, ...) (character 3)"},
    {"S(1}.data", "--var 'S(1}.data': expected ',' or ')' (character 4)"},
    {"S(1", "--var 'S(1': expected ',' or ')' (character 4)"},
    {"S(end).data", "--var 'S(end).data': expected an index (1, 2, ...) (character 3)"},
    {"S)", "--var 'S)': unexpected ')' (character 2)"},
    {"S(99999999999999999999999)",
     "--var 'S(99999999999999999999999)': an index past any array's end (character 3)"},
    {"S(18446744073709551615).data", "'S(18446744073709551615)' lies past the end of 'S'"},
    {"Rcv{1}", "no variable 'Rcv' (variables here: "},
    // Empty arrays, said alike from both versions.
    {"CZ{1}", "'CZ{1}' lies past the end of 'CZ', a 0 x 0 cell array"},
    {"SE0(1).data", "'SE0(1)' lies past the end of 'SE0', a 1 x 0 struct array"},
    {"SE0.data", "'SE0' is a 1 x 0 struct array; --var SE0(k).data reads element k's field"},
    {"SNF(2).x", "struct 'SNF(2)' has no field 'x'"},
    {"SNF.x", "'SNF' is a 1 x 2 struct array; --var SNF(k).x reads element k's field"},
    {"C3{2,3,3}", "'C3{2,3,3}' lies past the end of 'C3', a 2 x 3 x 2 cell array"},
    {"C3{3,1}", "'C3{3,1}' lies past the end of 'C3', a 2 x 3 x 2 cell array"},
    {"C3{2,7}", "'C3{2,7}' lies past the end of 'C3', a 2 x 3 x 2 cell array"},
    {"C3{13}", "'C3{13}' lies past the end of 'C3', a 2 x 3 x 2 cell array"},
    {"C3{2,3,2,2}", "'C3{2,3,2,2}' lies past the end of 'C3', a 2 x 3 x 2 cell array"},
    // Control characters are shown escaped, from the syntax and from the walk alike.
    {"C3{1}\x01x", "--var 'C3{1}\\x01x': unexpected '\\x01' (character 6)"},
    {"S(1).\x1b[2Jx", "struct 'S(1)' has no field '\\x1B[2Jx'"},
    {"S\x1b", "no variable 'S\\x1B'"},
    // At most 256 steps (a self-referring v7.3 cell costs a reader request per step).
    {many_steps, "more than 256 fields and subscripts"},
  };
  for (const auto& [name, fragment] : refusals) {
    SCOPED_TRACE(name);
    expect_refused(file_, fragment, [&] { (void)read_mat(file_, name); });
  }
}

TEST_P(IoMatIndexing, WhatIsInsideCellsAndStructArraysIsOffered) {
  // A file with no top-level numeric array: --var is told what it can name inside, the cells'
  // elements and a struct array's first element included (not C{4}, which is []).
  // In file order from a v5 file, in name order from a v7.3 one (HDF5 lists its links so); the
  // same 22 names from both, 12 of them listed.
  expect_refused(file_,
                 v73()
                     ? "name the variable to read with --var (numeric arrays here: none; in structs and cells: "
                       "C{1}, C{3}.d, C3{1}, C3{2}, C3{3}, C3{4}, C3{5}, C3{6}, C3{7}, C3{8}, C3{9}, C3{10} and 10 more)"
                     : "name the variable to read with --var (numeric arrays here: none; in structs and cells: "
                       "RcvData{1}, C{1}, C{3}.d, S(1).data, P.rx(1).data, P.c{1}, P.fs, LC{1}, NC{1}{1}, SC(1).c{1}, "
                       "C3{1}, C3{2} and 10 more)",
                 [&] { (void)read_mat(file_); });
}

TEST_P(IoMatIndexing, ASlabOfTheLastAxisIsTheArraysPartAndTheListSaysItsDims) {
  // RcvData{1}, int16 4 x 3 x 2, read as two frames of 4 x 3 (MATLAB's last axis is the slowest:
  // frame k is values [12k, 12k + 12) of the whole array). A v7.3 file reads the part alone (an
  // HDF5 hyperslab of the dataset's first axis), a v5 file takes it from matio's whole read.
  const std::vector<std::int16_t> all = rcv_values();
  for (std::size_t k = 0; k < 2; ++k) {
    SCOPED_TRACE(k);
    const MatArray slab = read_mat(file_, "RcvData{1}", k);
    EXPECT_EQ(slab.dims, (std::vector<std::size_t>{4, 3, 1}));
    EXPECT_EQ(slab.matlab_class, "int16");
    EXPECT_EQ(slab.values, std::vector<double>(all.begin() + std::ptrdiff_t(12 * k), all.begin() + std::ptrdiff_t(12 * k + 12)));
  }
  // A 2-D array's last axis is its columns: S(3).data = [30, 31], column 2 is 31.
  EXPECT_EQ(read_mat(file_, "S(3).data", 1).values, std::vector<double>{31});
  EXPECT_EQ(read_mat(file_, "S(3).data", 1).dims, (std::vector<std::size_t>{1, 1}));
  expect_refused(file_, "variable 'RcvData{1}': index 3 of the last axis of a 4 x 3 x 2 array is past its end",
                 [&] { (void)read_mat(file_, "RcvData{1}", 2); });
  expect_refused(file_, "variable 'C{4}': index 1 of the last axis of a 0 x 0 array is past its end",
                 [&] { (void)read_mat(file_, "C{4}", 0); });
  EXPECT_EQ(mat_reads_slabs_alone(file_, "RcvData{1}"), v73());  // v5: inside a cell, read with it
  // What count_frames learns without reading: a v7.3 file's array inside a cell, by its walk; a
  // v5 file's only by matio's whole read of the cell, so not here. A name that fails: nullopt.
  const std::optional<MatVariableInfo> inside = mat_variable_to_read(file_, "RcvData{1}");
  EXPECT_EQ(inside.has_value(), v73());
  if (inside) {
    EXPECT_EQ(inside->name, "RcvData{1}");
    EXPECT_EQ(inside->matlab_class, "int16");
    EXPECT_EQ(inside->dims, (std::vector<std::size_t>{4, 3, 2}));
    EXPECT_FALSE(inside->is_complex);
    // The dataset holding it, which read_hdf5 reads as MATLAB's dims reversed.
    ASSERT_EQ(inside->hdf5_object.rfind("/#refs#/", 0), 0u) << inside->hdf5_object;
    const std::vector<Hdf5Array> stored = read_hdf5(file_, std::vector<Hdf5Selection>{{inside->hdf5_object, 1, 1}});
    EXPECT_EQ(stored.at(0).dims, (std::vector<std::size_t>{1, 3, 4}));
    EXPECT_EQ(stored.at(0).values, read_mat(file_, "RcvData{1}", 1).values);
  }
  EXPECT_FALSE(mat_variable_to_read(file_, "RcvData{2}"));
  EXPECT_FALSE(mat_variable_to_read(file_, "S(2).name"));  // char: read_mat refuses it
  const std::optional<MatVariableInfo> top = mat_variable_to_read(file_, "RcvData");
  ASSERT_TRUE(top);
  EXPECT_EQ(top->matlab_class, "cell");
  EXPECT_EQ(top->hdf5_object, "");  // a cell holds references, not the values
}

INSTANTIATE_TEST_SUITE_P(Versions, IoMatIndexing, ::testing::Values("matio_indexing_v5.mat", "matio_indexing_v73.mat"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).find("v73") != std::string::npos ? std::string("V73")
                                                                                            : std::string("V5");
                         });

// SciPy's MAT v5 files (tests/corpus/valid/mat): a cell's elements and a struct array's fields,
// which were refused ("a 1 x 2 struct array").
TEST(IoMatIndexingScipy, ElementsOfAnIndependentWritersCellsAndStructArrays) {
  for (const char* name : {"scipy_mixed_plain.mat", "scipy_mixed_zlib.mat"}) {
    SCOPED_TRACE(name);
    const fs::path file = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat" / name;
    EXPECT_EQ(read_mat(file, "cells{1}").values, (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(read_mat(file, "cells{1,1}").dims, (std::vector<std::size_t>{1, 3}));
    EXPECT_EQ(read_mat(file, "cells{3}").size(), 0u);  // the empty element
    expect_refused(file, "variable 'cells{2}' is a char array", [&] { (void)read_mat(file, "cells{2}"); });
    EXPECT_EQ(read_mat(file, "structarr(1).x").values, std::vector<double>{1.0});
    EXPECT_EQ(read_mat(file, "structarr(2).x").values, std::vector<double>{2.0});
    EXPECT_EQ(read_mat(file, "structarr(1,2).x").values, std::vector<double>{2.0});
    expect_refused(file, "variable 'structarr(2).y' is a char array", [&] { (void)read_mat(file, "structarr(2).y"); });
    EXPECT_EQ(read_mat(file, "params.nested.depth").values, (std::vector<double>{1, 2}));
  }
}

// A Verasonics-like v5 file from SciPy with nothing numeric at the top: what it offers reads.
TEST(IoMatIndexingScipy, CellsOnlyFileOffersAndReadsItsElements) {
  const fs::path file = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat/scipy_cells_only.mat";
  expect_refused(file,
                 "name the variable to read with --var (numeric arrays here: none; in structs and cells: "
                 "RcvData{1}, S(1).data, P.rx(1).data, P.c{1})",
                 [&] { (void)read_mat(file); });
  const MatArray rcv = read_mat(file, "RcvData{1}");
  EXPECT_EQ(rcv.matlab_class, "int16");
  ASSERT_EQ(rcv.dims, (std::vector<std::size_t>{4, 3, 2}));
  for (std::size_t k = 0; k < 24; ++k) EXPECT_EQ(rcv.values[k], double(k) - 12);  // column-major, as written
  EXPECT_EQ(read_mat(file, "S(3).data").values, (std::vector<double>{30, 31}));
  EXPECT_EQ(read_mat(file, "P.rx(2).data").values, (std::vector<double>{2, 2, 2, 2}));
  EXPECT_EQ(read_mat(file, "P.c{1}").values, (std::vector<double>{7, 8}));
}

// Names that take --var's syntax (SciPy writes them; MATLAB would not): a variable is read by its
// whole name, and what --var could not name inside is not offered.
TEST(IoMatIndexingScipy, NamesThatTakeTheSyntaxOfVar) {
  const fs::path dir = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat";
  const fs::path names = dir / "scipy_odd_names.mat", cells = dir / "scipy_odd_cells.mat";
  const MatArray rf = read_mat(names, "rf(1)");
  EXPECT_EQ(rf.dims, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(rf.values, (std::vector<double>{0, 3, 1, 4, 2, 5}));  // arange(6).reshape(2, 3), column-major
  EXPECT_EQ(read_mat(names).values, rf.values);  // the only numeric array, named by itself
  expect_refused(names, "no variable 'rf' (variables here: rf(1), q(1))", [&] { (void)read_mat(names, "rf(2)"); });
  expect_refused(cells, "(numeric arrays here: none; in structs and cells: ok{1})", [&] { (void)read_mat(cells); });
  EXPECT_EQ(read_mat(cells, "ok{1}").values, (std::vector<double>{5, 6}));
  // A name that is no valid syntax ('rf(0)'), and one that would be another variable's element:
  // the variable of that name is read, found before the syntax is tried.
  EXPECT_EQ(read_mat(dir / "scipy_odd_zero.mat", "rf(0)").values, rf.values);
  EXPECT_EQ(read_mat(dir / "scipy_odd_zero.mat").values, rf.values);
  EXPECT_EQ(read_mat(dir / "scipy_odd_pair.mat", "rf(1)").values, std::vector<double>(6, 2.0));
  EXPECT_EQ(read_mat(dir / "scipy_odd_pair.mat", "rf").values, std::vector<double>(6, 1.0));
  EXPECT_EQ(mat_variable_to_read(dir / "scipy_odd_pair.mat", "rf(1)").value().dims, (std::vector<std::size_t>{2, 3}));
}

}  // namespace
}  // namespace usrecon::io
