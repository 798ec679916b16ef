// HDF5 through libhdf5: arrays written by write_hdf5 and by libhdf5 directly (other types, a
// string, a chunked dataset with nothing stored) read back in C order, the dataset is chosen as
// documented, and every refusal names the file.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <future>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "expect_refused.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/hdf5.hpp"

namespace fs = std::filesystem;

namespace usrecon::io {
namespace {

using testing::expect_refused;


class IoHdf5 : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("usrecon-IoHdf5-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// `body(file)` adds datasets to a new file at dir_/name with plain libhdf5 calls.
  template <class Body>
  fs::path raw_file(const std::string& name, Body body) {
    const fs::path path = dir_ / name;
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(file, 0);
    body(file);
    H5Fclose(file);
    return path;
  }

  fs::path dir_;
};

TEST_F(IoHdf5, WritesAndReadsBackInCOrder) {
  Hdf5Array a{"/group/deeper/rf", "", {2, 3, 4}, {}};
  for (int k = 0; k < 24; ++k) a.values.push_back(k * 0.5 - 3);
  Hdf5Array b{"/scalar_like", "", {1}, {42.25}};
  const fs::path file = dir_ / "data.h5";
  write_hdf5(file, {a, b});
  EXPECT_TRUE(is_hdf5_file(file));
  const Hdf5Array back = read_hdf5(file, "/group/deeper/rf");
  EXPECT_EQ(back.type, "float64");
  EXPECT_EQ(back.dims, a.dims);
  EXPECT_EQ(back.values, a.values);
  EXPECT_EQ(read_hdf5(file, "scalar_like").values, std::vector<double>{42.25});  // leading "/" optional
  // The only array with two or more axes is the default.
  EXPECT_EQ(read_hdf5(file).path, "/group/deeper/rf");
  const std::vector<Hdf5DatasetInfo> listed = list_hdf5_datasets(file);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].path, "/group/deeper/rf");
  EXPECT_EQ(listed[1].path, "/scalar_like");
  EXPECT_EQ(listed[1].dims, std::vector<std::size_t>{1});
}

// A staged HDF5 file is built in memory and written under a hidden name: its target appears (or
// is replaced) only when committed, together with other files, and a dropped one leaves nothing.
TEST_F(IoHdf5, AStagedFileIsPutInPlaceOnlyWhenCommitted) {
  const fs::path file = dir_ / "staged.uff", json = dir_ / "staged.json";
  {
    StagedFile dropped(file);
    write_hdf5(dropped, {{"/a", "", {2}, {1, 2}}});
    EXPECT_FALSE(fs::exists(file));
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "a dropped staged file was left behind";
  std::vector<StagedFile> staged;
  staged.emplace_back(file);
  write_hdf5(staged.back(), {{"/a", "", {2}, {1, 2}}}, {{"/", {{"version", "v1", {}}}}});
  staged.emplace_back(json);
  staged.back().write("{}\n");
  EXPECT_FALSE(fs::exists(file));
  commit_staged(staged);
  EXPECT_EQ(read_hdf5(file, "/a").values, (std::vector<double>{1, 2}));
  bool versioned = false;
  for (const Hdf5Group& g : list_hdf5_groups(file))
    versioned = versioned || (g.path == "/" && g.attribute("version") && g.attribute("version")->text == "v1");
  EXPECT_TRUE(versioned) << "the root group's attribute";
  // In a folder that is not there: refused naming the file, nothing written.
  try {
    write_hdf5(dir_ / "missing" / "x.h5", {{"/a", "", {2}, {1, 2}}});
    ADD_FAILURE() << "written into a missing folder";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "missing" / "x.h5").string()), std::string::npos) << e.what();
  }
}

TEST_F(IoHdf5, ReadsSeveralDatasetsInOneGoAndKnowsItsExtensions) {
  const fs::path file = dir_ / "several.h5";
  write_hdf5(file, {{"/a", "", {2}, {1, 2}}, {"/g/b", "", {1, 3}, {3, 4, 5}}});
  const std::vector<Hdf5Array> both = read_hdf5(file, std::vector<std::string>{"/g/b", "a"});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].path, "/g/b");
  EXPECT_EQ(both[0].values, (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(both[1].path, "/a");
  EXPECT_EQ(both[1].dims, std::vector<std::size_t>{2});
  // A wrong name is told the datasets there (it was told nothing more), and a slip of case.
  expect_refused(file, "dataset '/missing' does not exist or is not a dataset (datasets here: /a, /g/b)",
                 [&] { read_hdf5(file, std::vector<std::string>{"/a", "/missing"}); });
  expect_refused(file, "(datasets here: /a, /g/b; names are case-sensitive: /g/b)",
                 [&] { read_hdf5(file, "/G/B"); });
  for (const char* name : {"x.h5", "x.HDF5", "dir/x.uff"}) EXPECT_TRUE(has_hdf5_extension(name)) << name;
  for (const char* name : {"x.mat", "x.h5.npy", "h5"}) EXPECT_FALSE(has_hdf5_extension(name)) << name;
  EXPECT_EQ(lower_extension("dir.D/Scan.UFF"), ".uff");
  EXPECT_EQ(lower_extension("dir.d/noext"), "");
}

// Rows of the first axis (a frame of [frames][...] data) read alone equal the same slice of the
// whole array, from a contiguous float64 dataset and from a chunked, deflated int16 one whose
// chunks straddle the rows asked for.
TEST_F(IoHdf5, ReadsRowsOfTheFirstAxisAlone) {
  Hdf5Array a{"/frames", "", {5, 3, 4}, {}};
  for (int k = 0; k < 60; ++k) a.values.push_back(std::sin(k * 1.7) * 100);
  const fs::path file = dir_ / "frames.h5";
  write_hdf5(file, {a});
  const fs::path chunked = raw_file("chunked.h5", [](hid_t f) {
    const hsize_t dims[2] = {7, 5}, chunk[2] = {3, 5};
    std::vector<std::int16_t> v;
    for (int k = 0; k < 35; ++k) v.push_back(std::int16_t(k * 37 - 600));
    const hid_t space = H5Screate_simple(2, dims, nullptr), plist = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(plist, 2, chunk);
    H5Pset_deflate(plist, 6);
    const hid_t d = H5Dcreate2(f, "ints", H5T_STD_I16LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(d);
    H5Pclose(plist);
    H5Sclose(space);
  });
  const Hdf5Array ints = read_hdf5(chunked, "/ints");
  ASSERT_EQ(ints.dims, (std::vector<std::size_t>{7, 5}));
  using Case = std::pair<const Hdf5Array*, fs::path>;
  for (const auto& [whole, path] : {Case{&a, file}, Case{&ints, chunked}}) {
    const std::size_t n_rows = whole->dims[0], per_row = whole->values.size() / n_rows;
    for (std::size_t first = 0; first <= n_rows; ++first)
      for (std::size_t rows = 0; first + rows <= n_rows; ++rows) {
        const std::vector<Hdf5Array> part = read_hdf5(path, std::vector<Hdf5Selection>{{whole->path, first, rows}});
        ASSERT_EQ(part.size(), 1u);
        std::vector<std::size_t> dims = whole->dims;
        dims[0] = rows;
        EXPECT_EQ(part[0].dims, dims) << first << " " << rows;
        EXPECT_EQ(part[0].values, std::vector<double>(whole->values.begin() + std::ptrdiff_t(first * per_row),
                                                      whole->values.begin() + std::ptrdiff_t((first + rows) * per_row)))
            << path << " rows " << first << " + " << rows;
      }
  }
  // Several at once, a part and a whole dataset, in the order asked.
  const std::vector<Hdf5Array> mixed =
      read_hdf5(chunked, std::vector<Hdf5Selection>{{"/ints", 6, 1}, {"/ints"}});
  ASSERT_EQ(mixed.size(), 2u);
  EXPECT_EQ(mixed[0].values, std::vector<double>(ints.values.end() - 5, ints.values.end()));
  EXPECT_EQ(mixed[1].values, ints.values);
  for (const auto& [first, rows] : {std::pair<std::size_t, std::size_t>{4, 2}, {6, 0}, {0, 6}})
    expect_refused(file, "lie past its first axis", [&, first = first, rows = rows] {
      read_hdf5(file, std::vector<Hdf5Selection>{{"/frames", first, rows}});
    });
}

TEST_F(IoHdf5, ConvertsIntegerTypesAndScalars) {
  const fs::path file = raw_file("ints.h5", [](hid_t f) {
    const hsize_t dims[2] = {2, 3};
    const std::int16_t values[6] = {-32768, -1, 0, 1, 2, 32767};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t d = H5Dcreate2(f, "i16", H5T_STD_I16BE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);  // big-endian on disk
    H5Dclose(d);
    H5Sclose(space);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const std::uint8_t byte = 200;
    const hid_t s = H5Dcreate2(f, "u8", H5T_STD_U8LE, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(s, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, &byte);
    H5Dclose(s);
    H5Sclose(scalar);
  });
  const Hdf5Array a = read_hdf5(file, "i16");
  EXPECT_EQ(a.type, "int16");
  EXPECT_EQ(a.dims, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(a.values, (std::vector<double>{-32768, -1, 0, 1, 2, 32767}));
  const Hdf5Array u = read_hdf5(file, "u8");
  EXPECT_EQ(u.type, "uint8");
  EXPECT_TRUE(u.dims.empty());
  EXPECT_EQ(u.values, std::vector<double>{200});
}

TEST_F(IoHdf5, APicmusFileDefaultsToItsRealData) {
  const fs::path file = dir_ / "picmus.hdf5";
  write_hdf5(file, {{"/US/US_DATASET0000/data/imag", "", {1, 2, 3}, std::vector<double>(6, 0.0)},
                    {"/US/US_DATASET0000/data/real", "", {1, 2, 3}, {1, 2, 3, 4, 5, 6}},
                    {"/US/US_DATASET0000/probe_geometry", "", {3, 2}, std::vector<double>(6, 0.0)}});
  const Hdf5Array a = read_hdf5(file);
  EXPECT_EQ(a.path, "/US/US_DATASET0000/data/real");
  EXPECT_EQ(a.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST_F(IoHdf5, RefusalsNameTheFileAndSayWhy) {
  const fs::path two = dir_ / "two.h5";
  write_hdf5(two, {{"/a", "", {2, 2}, {1, 2, 3, 4}}, {"/b", "", {2, 2}, {1, 2, 3, 4}}});
  expect_refused(two, "name the dataset to read with --var (numeric arrays here: /a, /b)", [&] { read_hdf5(two); });
  expect_refused(two, "dataset '/c' does not exist", [&] { read_hdf5(two, "/c"); });
  expect_refused(two, "dataset '/' does not exist or is not a dataset", [&] { read_hdf5(two, "/"); });

  const fs::path text = dir_ / "text.h5";
  write_file_atomic(text, "not an HDF5 file, just text");
  EXPECT_FALSE(is_hdf5_file(text));
  expect_refused(text, "not an HDF5 file", [&] { read_hdf5(text, "/a"); });
  // A missing file in the words every reader uses (io::existing_input_status).
  try {
    (void)list_hdf5_datasets(dir_ / "missing.h5");
    ADD_FAILURE() << "a missing file was listed";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "input file \"" + (dir_ / "missing.h5").string() + "\" does not exist");
  }
  expect_refused(dir_, "not a regular file", [&] { list_hdf5_datasets(dir_); });

  const fs::path strings = raw_file("strings.h5", [](hid_t f) {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 6);
    const hsize_t one = 1;
    const hid_t space = H5Screate_simple(1, &one, nullptr);
    const hid_t d = H5Dcreate2(f, "name", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, "L11-4");
    H5Dclose(d);
    H5Sclose(space);
    H5Tclose(type);
  });
  expect_refused(strings, "dataset '/name' is a string array, not a real integer or 32/64-bit float one",
                 [&] { read_hdf5(strings, "name"); });
  EXPECT_EQ(list_hdf5_datasets(strings).at(0).type, "");
  // A float16 array, the file's only one with two axes, is named with its type when --var is not
  // given (it was "numeric arrays here: none").
  const fs::path half = raw_file("half.h5", [](hid_t f) {
    const hid_t type = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(type, 15, 10, 5, 0, 10);
    H5Tset_size(type, 2);
    H5Tset_ebias(type, 15);
    const hsize_t dims[2] = {2, 3};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t d = H5Dcreate2(f, "rf", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(space);
    H5Tclose(type);
  });
  expect_refused(half, "dataset '/rf' is a 16-bit float array", [&] { read_hdf5(half); });
  // h5py's bool (an int8 enum FALSE/TRUE) and its complex128 (a compound {r, i}) are named too.
  const fs::path typed = raw_file("typed.h5", [](hid_t f) {
    const hid_t flag = H5Tenum_create(H5T_NATIVE_INT8);
    const std::int8_t no = 0, yes = 1;
    H5Tenum_insert(flag, "FALSE", &no);
    H5Tenum_insert(flag, "TRUE", &yes);
    const hid_t pair = H5Tcreate(H5T_COMPOUND, 16);
    H5Tinsert(pair, "r", 0, H5T_NATIVE_DOUBLE);
    H5Tinsert(pair, "i", 8, H5T_NATIVE_DOUBLE);
    const hsize_t dims[2] = {4, 2};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    for (const auto& [name, type] : {std::pair{"mask", flag}, std::pair{"iq", pair}})
      H5Dclose(H5Dcreate2(f, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Sclose(space);
    H5Tclose(pair);
    H5Tclose(flag);
  });
  expect_refused(typed, "dataset '/mask' is an enum (as h5py stores bool) array", [&] { read_hdf5(typed, "mask"); });
  expect_refused(typed, "dataset '/iq' is a compound (as complex numbers are stored) array, not a real integer",
                 [&] { read_hdf5(typed, "/iq"); });
  expect_refused(typed, "(complex channel data are read as two real datasets", [&] { read_hdf5(typed, "/iq"); });
}

TEST_F(IoHdf5, GroupsListWithTheirAttributes) {
  // Written by write_hdf5 (USTB's style: fixed-length strings, numeric vectors) ...
  const fs::path file = dir_ / "attributes.uff";
  write_hdf5(file, {{"/channel_data/sampling_frequency", "", {1, 1}, {20e6}}},
             {{"/", {{"version", "v1.2.0", {}}}},
              {"/channel_data", {{"class", "uff.channel_data", {}}, {"size", "", {1, 1}}}},
              {"/channel_data/sequence", {{"class", "uff.wave", {}}, {"array", "", {1}}}}});
  const std::vector<Hdf5Group> groups = list_hdf5_groups(file);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].path, "/");
  ASSERT_NE(groups[0].attribute("version"), nullptr);
  EXPECT_EQ(groups[0].attribute("version")->text, "v1.2.0");
  EXPECT_EQ(groups[1].path, "/channel_data");
  EXPECT_EQ(groups[1].attribute("class")->text, "uff.channel_data");
  EXPECT_EQ(groups[1].attribute("size")->values, (std::vector<double>{1, 1}));
  EXPECT_EQ(groups[1].attribute("missing"), nullptr);
  EXPECT_EQ(groups[2].path, "/channel_data/sequence");  // a group holding no dataset is created
  EXPECT_EQ(groups[2].attribute("array")->values, std::vector<double>{1});
  EXPECT_EQ(read_hdf5(file, "/channel_data/sampling_frequency").values, std::vector<double>{20e6});

  // ... and by libhdf5 directly: a variable-length string, a space-padded fixed string, a
  // null-padded one that fills its size, int32
  // values, a compound attribute (listed with neither text nor values) and 5000 values, over the
  // 4096-value limit (listed without its values).
  const fs::path raw = raw_file("raw.h5", [](hid_t f) {
    const hid_t g = H5Gcreate2(f, "obj", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t vlen = H5Tcopy(H5T_C_S1);
    H5Tset_size(vlen, H5T_VARIABLE);
    const char* text = "uff.linear_array";
    hid_t a = H5Acreate2(g, "class", vlen, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, vlen, &text);
    H5Aclose(a);
    const hid_t padded = H5Tcopy(H5T_C_S1);
    H5Tset_size(padded, 8);
    H5Tset_strpad(padded, H5T_STR_SPACEPAD);
    a = H5Acreate2(g, "name", padded, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, padded, "probe   ");
    H5Aclose(a);
    const hid_t exact = H5Tcopy(H5T_C_S1);  // h5py's and MATLAB's way: no room for a terminator
    H5Tset_size(exact, 16);
    H5Tset_strpad(exact, H5T_STR_NULLPAD);
    a = H5Acreate2(g, "exact", exact, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, exact, "uff.channel_data");
    H5Aclose(a);
    const hsize_t three = 3;
    const hid_t vector = H5Screate_simple(1, &three, nullptr);
    const std::int32_t ints[3] = {-7, 0, 128};
    a = H5Acreate2(g, "ints", H5T_STD_I32BE, vector, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT32, ints);
    H5Aclose(a);
    const hid_t compound = H5Tcreate(H5T_COMPOUND, 16);
    H5Tinsert(compound, "r", 0, H5T_NATIVE_DOUBLE);
    H5Tinsert(compound, "i", 8, H5T_NATIVE_DOUBLE);
    const double complex_value[2] = {1, 2};
    a = H5Acreate2(g, "z", compound, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, compound, complex_value);
    H5Aclose(a);
    const hsize_t many = 5000;  // over the 4096-value limit, within an object header's 64 KiB
    const hid_t long_vector = H5Screate_simple(1, &many, nullptr);
    const std::vector<double> values(many, 1.5);
    a = H5Acreate2(g, "big", H5T_IEEE_F64LE, long_vector, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_DOUBLE, values.data());
    H5Aclose(a);
    for (hid_t id : {vlen, padded, exact, compound}) H5Tclose(id);
    for (hid_t id : {scalar, vector, long_vector}) H5Sclose(id);
    H5Gclose(g);
  });
  const std::vector<Hdf5Group> listed = list_hdf5_groups(raw);
  ASSERT_EQ(listed.size(), 2u);
  const Hdf5Group& obj = listed[1];
  EXPECT_EQ(obj.path, "/obj");
  ASSERT_NE(obj.attribute("class"), nullptr);
  EXPECT_EQ(obj.attribute("class")->text, "uff.linear_array");
  EXPECT_EQ(obj.attribute("name")->text, "probe");
  EXPECT_EQ(obj.attribute("exact")->text, "uff.channel_data");
  EXPECT_EQ(obj.attribute("ints")->values, (std::vector<double>{-7, 0, 128}));
  ASSERT_NE(obj.attribute("z"), nullptr);
  EXPECT_TRUE(obj.attribute("z")->text.empty() && obj.attribute("z")->values.empty());
  ASSERT_NE(obj.attribute("big"), nullptr);
  EXPECT_TRUE(obj.attribute("big")->values.empty());
}

TEST_F(IoHdf5, ADatasetClaimingMoreThanItStoresIsRefusedBeforeAllocating) {
  // A chunked 2^20 x 2^12 float64 dataset with no chunk written: 32 GiB claimed, 0 bytes stored.
  const fs::path file = raw_file("sparse.h5", [](hid_t f) {
    const hsize_t dims[2] = {hsize_t(1) << 20, hsize_t(1) << 12}, chunk[2] = {64, 64};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t props = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(props, 2, chunk);
    const hid_t d = H5Dcreate2(f, "huge", H5T_IEEE_F64LE, space, H5P_DEFAULT, props, H5P_DEFAULT);
    H5Dclose(d);
    H5Pclose(props);
    H5Sclose(space);
  });
  expect_refused(file, "dataset '/huge' claims 1048576 x 4096 values in 0 stored bytes",
                 [&] { read_hdf5(file, "huge"); });
}

TEST_F(IoHdf5, AFileThatCrashesLibhdf5IsAnErrorNotACrash) {
  // Found by tools/fuzz.sh hdf5 in 30 s: libhdf5 1.10.8 dereferences NULL (a memcpy in
  // H5F__accum_read) while listing this 4 KiB file. The read runs in a child process, so the
  // crash is the child's, and the caller gets an InputError naming the file (a signal, or under
  // AddressSanitizer, whose SEGV handler exits instead, a failed exit status).
  const fs::path file = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/regressions/hdf5/libhdf5_segv_in_H5F__accum_read";
  for (int attempt = 0; attempt < 2; ++attempt)  // and the process goes on working after it
    expect_refused(file, "the file is", [&] { list_hdf5_datasets(file); });
  const fs::path good = dir_ / "good.h5";
  write_hdf5(good, {{"/x", "", {2, 2}, {1, 2, 3, 4}}});
  EXPECT_EQ(read_hdf5(good).values, (std::vector<double>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace usrecon::io

namespace usrecon::io {
namespace {

TEST_F(IoHdf5, ReadsWhileOtherThreadsAllocateAndThrow) {
  // The batch pipeline reads on one thread while others beamform and write (allocating, throwing).
  // A reader forked from such a process inherited whatever locks those threads held at that
  // instant (the allocator's, the unwinder's) and could wait for ever on one: CI hung so, and
  // this test hung within 20 repetitions under AddressSanitizer. The workers are now forked by a
  // single-threaded reader server (io/src/hdf5.cpp).
  const fs::path file = dir_ / "busy.h5";
  write_hdf5(file, {{"/x", "", {2, 2}, {1, 2, 3, 4}}});
  std::atomic<bool> done = false;
  std::vector<std::jthread> busy;
  for (int t = 0; t < 3; ++t)
    busy.emplace_back([&, t] {
      std::size_t size = 16 + t;
      while (!done) {
        std::vector<std::unique_ptr<char[]>> blocks;
        for (int k = 0; k < 64; ++k) blocks.emplace_back(new char[size = size * 7 % 100003 + 16]);
        try {
          throw std::runtime_error("busy");
        } catch (const std::exception&) {
        }
      }
    });
  auto reads = std::async(std::launch::async, [&] {
    for (int k = 0; k < 200; ++k) EXPECT_EQ(read_hdf5(file).values, (std::vector<double>{1, 2, 3, 4}));
  });
  if (reads.wait_for(std::chrono::seconds(120)) == std::future_status::timeout) {
    std::fprintf(stderr, "200 reads did not end within 120 s: a reader process is stuck\n");
    std::abort();
  }
  done = true;
  reads.get();
}


/// The pids of this process's reader servers (children whose argv[0] is usrecon-hdf5-reader).
std::vector<pid_t> reader_servers() {
  std::vector<pid_t> found;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat, cmdline;
    try {
      stat = read_file(entry.path() / "stat");
      cmdline = read_file(entry.path() / "cmdline");
    } catch (const std::exception&) {
      continue;  // ended meanwhile
    }
    // stat: "pid (comm) state ppid ...": the ppid is the second field after the last ')'.
    std::istringstream after(stat.substr(stat.rfind(')') + 1));
    std::string state;
    pid_t ppid = 0;
    after >> state >> ppid;
    if (ppid == ::getpid() && cmdline.rfind("usrecon-hdf5-reader", 0) == 0) found.push_back(std::stoi(name));
  }
  return found;
}

TEST_F(IoHdf5, OneReaderServerServesEveryReadAndComesBackWhenKilled) {
  const fs::path file = dir_ / "x.h5";
  write_hdf5(file, {{"/x", "", {1, 3}, {1, 2, 3}}});
  EXPECT_EQ(read_hdf5(file).values, (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(is_hdf5_file(file));
  const std::vector<pid_t> servers = reader_servers();
  ASSERT_EQ(servers.size(), 1u) << "expected one reader server, a child of this process";
  EXPECT_EQ(list_hdf5_datasets(file).size(), 1u);
  EXPECT_EQ(reader_servers(), servers) << "a read started another server";
  // Killed from outside: the next read starts a new server and succeeds.
  ASSERT_EQ(::kill(servers.front(), SIGKILL), 0);
  EXPECT_EQ(read_hdf5(file).values, (std::vector<double>{1, 2, 3}));
  const std::vector<pid_t> again = reader_servers();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again.front(), servers.front());
}

TEST_F(IoHdf5, AForkedChildReadsThroughAServerOfItsOwn) {
  // A child forked (without exec) after the parent's first read must not talk on the parent's
  // socket: the two conversations would interleave.
  const fs::path file = dir_ / "x.h5";
  write_hdf5(file, {{"/x", "", {1, 3}, {1, 2, 3}}});
  ASSERT_EQ(read_hdf5(file).values, (std::vector<double>{1, 2, 3}));
  const std::vector<pid_t> servers = reader_servers();
  ASSERT_EQ(servers.size(), 1u);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int ok = 0;
    try {
      for (int k = 0; k < 20; ++k) ok += read_hdf5(file).values == std::vector<double>{1, 2, 3};
      ok = ok == 20 && reader_servers().size() == 1 && reader_servers() != servers;
    } catch (...) {
      ok = 0;
    }
    ::_exit(ok ? 0 : 1);
  }
  for (int k = 0; k < 20; ++k) EXPECT_EQ(read_hdf5(file).values, (std::vector<double>{1, 2, 3}));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's reads failed (status " << status << ")";
  EXPECT_EQ(reader_servers(), servers) << "the parent's server changed";
}

}  // namespace
}  // namespace usrecon::io
