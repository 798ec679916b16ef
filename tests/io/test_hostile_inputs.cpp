// Hostile inputs straight into the parsers: the corpus in tests/corpus/source_txt (each case's
// verdict in expected.tsv), and every fuzz seed and saved fuzz crash through the fuzz targets'
// own checks (tests/fuzz/fuzz_checks*.hpp), so a crash once found stays fixed.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../fuzz/fuzz_checks.hpp"
#if __has_include("usrecon/io/mat.hpp")
#include "../fuzz/fuzz_checks_mat.hpp"
#include "../fuzz/fuzz_checks_mat_fields.hpp"
#define USRECON_TEST_MAT 1
#endif
#include "../fuzz/fuzz_checks_hdf5.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/source_txt.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kCorpus = fs::path(USRECON_SOURCE_DIR) / "tests" / "corpus";

struct Case {
  std::string file;
  std::string verdict;  // "same", "valid" or the expected error fragment
};

std::vector<Case> read_expected() {
  std::vector<Case> cases;
  std::ifstream in(kCorpus / "source_txt" / "expected.tsv");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab != std::string::npos) cases.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return cases;
}

std::vector<std::uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(IoHostile, EveryCorpusFileIsListedAndEveryListedFileExists) {
  const std::vector<Case> cases = read_expected();
  ASSERT_GE(cases.size(), 20u);
  std::size_t txt_files = 0;
  for (const auto& entry : fs::directory_iterator(kCorpus / "source_txt")) {
    if (entry.path().extension() != ".txt") continue;
    ++txt_files;
    const auto name = entry.path().filename().string();
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const Case& c) { return c.file == name; }))
        << name << " has no line in expected.tsv";
  }
  EXPECT_EQ(txt_files, cases.size());
}

TEST(IoHostile, CorpusGivesTheStatedVerdictNamingTheFile) {
  const std::vector<std::int32_t> same = {1, -2, 3, 4, 5, -6};
  for (const Case& c : read_expected()) {
    SCOPED_TRACE(c.file);
    const fs::path path = kCorpus / "source_txt" / c.file;
    if (c.verdict == "same" || c.verdict == "valid") {
      std::vector<std::int32_t> rf;
      ASSERT_NO_THROW(rf = usrecon::io::read_source_txt(path, 2, 3));
      if (c.verdict == "same") {
        EXPECT_EQ(rf, same);
      } else {  // "valid": the values the fuzz target's independent reference reader finds
        std::ifstream in(path, std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::vector<std::int32_t> reference;
        ASSERT_TRUE(usrecon::fuzz::reference_source_txt(text, reference));
        EXPECT_EQ(rf, reference);
      }
      continue;
    }
    try {
      usrecon::io::read_source_txt(path, 2, 3);
      ADD_FAILURE() << "accepted";
    } catch (const usrecon::io::InputError& e) {
      EXPECT_EQ(std::string(e.what()), path.string() + ": " + c.verdict);
    }
  }
}

TEST(IoHostile, ReadFileRefusesAFileOverItsLimitNamingTheLimit) {
  const fs::path path = fs::temp_directory_path() / ("usrecon-iohostile-" + std::to_string(::getpid()));
  std::ofstream(path) << std::string(1001, ' ');
  EXPECT_EQ(usrecon::io::read_file(path, 1001).size(), 1001u);
  try {
    usrecon::io::read_file(path, 1000);
    ADD_FAILURE() << "a file over the limit was read";
  } catch (const usrecon::io::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("larger than 1000 bytes"), std::string::npos) << e.what();
  }
  fs::remove(path);
}

/// Every seed of a fuzz target and every saved regression input for it passes the target's checks.
void run_fuzz_inputs(const std::string& target, void (*check)(std::span<const std::uint8_t>)) {
  std::size_t count = 0;
  for (const fs::path& dir : {fs::path(USRECON_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / target,
                              kCorpus / "regressions" / target}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      SCOPED_TRACE(entry.path().string());
      const std::vector<std::uint8_t> bytes = read_bytes(entry.path());
      EXPECT_NO_THROW(check(bytes));
      ++count;
    }
  }
  EXPECT_GT(count, 0u) << "no seeds for " << target;
}

TEST(IoFuzzRegression, SourceTxtSeedsAndCrashesPassTheChecks) {
  run_fuzz_inputs("source_txt", usrecon::fuzz::check_source_txt);
}
TEST(IoFuzzRegression, NpySeedsAndCrashesPassTheChecks) {
  run_fuzz_inputs("npy", usrecon::fuzz::check_npy);
}
#ifdef USRECON_TEST_MAT
TEST(IoFuzzRegression, MatSeedsAndCrashesPassTheChecks) {
  run_fuzz_inputs("mat", usrecon::fuzz::check_mat);
}
TEST(IoFuzzRegression, MatFieldsSeedsAndCrashesPassTheChecks) {
  run_fuzz_inputs("mat_fields", usrecon::fuzz::check_mat_fields);
}
TEST(IoFuzzRegression, Mat73FieldsSeedsAndCrashesPassTheChecks) {
  run_fuzz_inputs("mat73_fields", usrecon::fuzz::check_mat_fields);
}
#endif

// The HDF5 regressions are files on which libhdf5 itself crashes: the reads run in a child process
// (io/src/hdf5.cpp), so they must come back as InputErrors naming the file.
TEST(IoFuzzRegression, Hdf5SeedsAndCrashesPassTheChecks) {
  run_fuzz_inputs("hdf5", usrecon::fuzz::check_hdf5);
}

TEST(IoFuzzRegression, ChecksCatchAContractViolation) {
  // The source.txt check compares with a reference reader: feed it the reference's own verdicts.
  std::vector<std::int32_t> values;
  EXPECT_TRUE(usrecon::fuzz::reference_source_txt(" +7\t-0\r\n00012 -2147483648", values));
  EXPECT_EQ(values, (std::vector<std::int32_t>{7, 0, 12, INT32_MIN}));
  for (const char* bad : {"+-5", "-", "1.5", "2147483648", "0x10", "5a"}) {
    values.clear();
    EXPECT_FALSE(usrecon::fuzz::reference_source_txt(bad, values)) << bad;
  }
  EXPECT_THROW(usrecon::fuzz::require(false, "x"), usrecon::fuzz::ContractViolation);
}

#ifdef USRECON_TEST_MAT
/// `read` refuses `path` with an InputError that names it and contains `fragment`.
void expect_mat_refused(const fs::path& path, const std::string& fragment,
                        void (*read)(const fs::path&) = [](const fs::path& p) {
                          (void)usrecon::io::list_mat_variables(p);
                        }) {
  try {
    read(path);
    ADD_FAILURE() << path << " accepted";
  } catch (const usrecon::io::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ": not a MAT file that matio can read: " + fragment),
              std::string::npos)
        << e.what();
  }
}

TEST(IoHostile, MatV4HeaderClaimingMoreThanTheFileHoldsIsRefusedBeforeMatioAllocates) {
  // Found by fuzz_mat: matio allocated what a v4 header claims (2^30 doubles from 40 bytes here).
  const fs::path path = fs::temp_directory_path() / ("usrecon-iohostile-" + std::to_string(::getpid()) + ".mat");
  const std::int32_t header[5] = {0, 1 << 20, 1 << 10, 0, 3};  // double, 2^20 x 2^10, real, "rf\0"
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write("rf\0", 3);
    out.write(std::string(16, '\0').data(), 16);
  }
  const std::string claim = "a MAT v4 header at byte 0 claims 1048576 x 1024 values";
  expect_mat_refused(path, claim);
  expect_mat_refused(path, claim, [](const fs::path& p) { (void)usrecon::io::read_mat(p, "rf"); });
  // The same header with its data present is read (the check refuses only what does not fit).
  const std::int32_t small[5] = {0, 2, 1, 0, 3};
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(small), sizeof small);
    out.write("rf\0", 3);
    const double values[2] = {1.5, -2.0};
    out.write(reinterpret_cast<const char*>(values), sizeof values);
  }
  const usrecon::io::MatArray array = usrecon::io::read_mat(path, "rf");
  EXPECT_EQ(array.values, (std::vector<double>{1.5, -2.0}));
  // An empty matrix of 0 x 2^30: no data to read, but matio still sizes buffers from the columns.
  const std::int32_t empty[5] = {0, 0, 1 << 30, 0, 3};
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(empty), sizeof empty);
    out.write("rf\0", 3);
  }
  expect_mat_refused(path, "a MAT v4 header at byte 0 claims 0 x 1073741824 values");
  fs::remove(path);
}

/// MAT v5 bytes, little-endian, built by hand so that a test can say exactly what each tag claims.
struct Mat5Bytes {
  std::string bytes;
  void u32(std::uint32_t v) { bytes.append(reinterpret_cast<const char*>(&v), 4); }
  void pad() { bytes.append((8 - bytes.size() % 8) % 8, '\0'); }
  /// A tag and its data, padded to 8 bytes.
  void element(std::uint32_t type, const std::string& data) {
    u32(type), u32(static_cast<std::uint32_t>(data.size()));
    bytes += data;
    pad();
  }
};

/// A miMATRIX of class double (6) with the given dims, empty name, and `data_bytes` bytes of data
/// after a miDOUBLE tag (which claims `data_bytes` too).
std::string mat5_double_matrix(const std::vector<std::uint32_t>& dims, const std::string& data) {
  Mat5Bytes m;
  m.element(6, std::string("\x06\0\0\0\0\0\0\0", 8));  // flags: miUINT32, class double
  std::string d;
  for (std::uint32_t v : dims) d.append(reinterpret_cast<const char*>(&v), 4);
  m.element(5, d);            // dims: miINT32
  m.element(1, "");           // name: miINT8, empty (a cell's element)
  m.element(9, data);         // data: miDOUBLE
  Mat5Bytes out;
  out.element(14, m.bytes);
  return out.bytes;
}

/// A 1 x `cells` cell named "c" holding two matrices (so `cells` other than 2 is a lie).
std::string mat5_cell(const std::string& first, const std::string& second, std::uint32_t cells = 2) {
  Mat5Bytes m;
  m.element(6, std::string("\x01\0\0\0\0\0\0\0", 8));  // class cell
  std::string dims("\x01\0\0\0", 4);
  dims.append(reinterpret_cast<const char*>(&cells), 4);
  m.element(5, dims);
  m.element(1, "c");
  m.bytes += first + second;
  Mat5Bytes out;
  out.element(14, m.bytes);
  return out.bytes;
}

/// A MAT v5 file whose one variable is `element`, inside a compressed element (zlib).
std::string mat5_file_compressed(const std::string& element) {
  std::string header(128, ' ');
  std::memcpy(header.data(), "MATLAB 5.0 MAT-file, usrecon test", 33);
  std::memcpy(header.data() + 116, "\0\0\0\0\0\0\0\0\0\x01IM", 12);
  uLongf length = compressBound(element.size());
  std::string z(length, '\0');
  EXPECT_EQ(compress(reinterpret_cast<Bytef*>(z.data()), &length,
                     reinterpret_cast<const Bytef*>(element.data()), element.size()),
            Z_OK);
  z.resize(length);
  Mat5Bytes body;
  body.u32(15), body.u32(static_cast<std::uint32_t>(z.size()));
  return header + body.bytes + z;
}

std::string random_doubles(std::size_t n) {
  std::mt19937_64 rng(7);
  std::string data(n * 8, '\0');
  for (std::size_t k = 0; k < n; ++k) {
    const double v = std::uniform_real_distribution<double>(-1, 1)(rng);
    std::memcpy(data.data() + 8 * k, &v, 8);
  }
  return data;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(IoHostile, MatCompressedElementsAreWalkedInFull) {
  const fs::path path = fs::temp_directory_path() / ("usrecon-iohostile-z-" + std::to_string(::getpid()) + ".mat");
  // 2 MiB of doubles in the first cell, then a second cell claiming 2^40 elements in 48 bytes: the
  // bad claim lies 2 MiB into the inflated stream, beyond any fixed inflate window.
  constexpr std::uint32_t kValues = 1 << 18;
  const std::string big = mat5_double_matrix({1, kValues}, random_doubles(kValues));
  write_bytes(path, mat5_file_compressed(mat5_cell(big, mat5_double_matrix({1 << 20, 1 << 20}, std::string(8, '\0')))));
  expect_mat_refused(path, "the compressed element at byte 128: the matrix at byte " +
                               std::to_string(8 + 48 + big.size()) + " claims 1099511627776 elements in 56 bytes");
  // The same cell with an honest second matrix is accepted and matio lists it.
  write_bytes(path, mat5_file_compressed(mat5_cell(big, mat5_double_matrix({1, 1}, std::string(8, '\0')))));
  const std::vector<usrecon::io::MatVariableInfo> variables = usrecon::io::list_mat_variables(path);
  ASSERT_EQ(variables.size(), 1u);
  EXPECT_EQ(variables[0].name, "c");
  EXPECT_EQ(variables[0].matlab_class, "cell");
  EXPECT_EQ(variables[0].dims, (std::vector<std::size_t>{1, 2}));
  fs::remove(path);
}

TEST(IoHostile, MatPartsNotInMatlabsLayoutAreRefused) {
  const fs::path path = fs::temp_directory_path() / ("usrecon-iohostile-layout-" + std::to_string(::getpid()) + ".mat");
  const std::string one = mat5_double_matrix({1, 1}, std::string(8, '\0'));
  // A cell claiming three cells but holding two: matio would read a third matrix from what follows.
  write_bytes(path, mat5_file_compressed(mat5_cell(one, one, 3)));
  expect_mat_refused(path, "the compressed element at byte 128: the matrix at byte 0 holds 2 matrices where its "
                           "cells need 3");
  // One dimension (MATLAB writes at least two).
  write_bytes(path, mat5_file_compressed(mat5_double_matrix({1}, std::string(8, '\0'))));
  expect_mat_refused(path, "the compressed element at byte 128: the matrix at byte 0 has 4 bytes of dimensions "
                           "(at least 2, of 4 bytes each)");
  fs::remove(path);
}

TEST(IoHostile, MatCompressedStreamsThatAreCutOffOrCorruptAreRefused) {
  const fs::path path = fs::temp_directory_path() / ("usrecon-iohostile-zc-" + std::to_string(::getpid()) + ".mat");
  // A real variable written by matio, 4096 doubles, compressed.
  usrecon::io::MatArray array;
  array.name = "rf";
  array.dims = {64, 64};
  for (int k = 0; k < 64 * 64; ++k) array.values.push_back(std::sin(0.01 * k * k));
  usrecon::io::write_mat(path, {array});
  std::string good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_EQ(good[128], 15) << "write_mat should compress";
  std::uint32_t compressed_bytes;
  std::memcpy(&compressed_bytes, good.data() + 132, 4);
  ASSERT_EQ(good.size(), 136 + compressed_bytes);
  EXPECT_EQ(usrecon::io::read_mat(path, "rf").values, array.values);

  // The element and the file cut to half of the stream: the tag tells the truth, the stream stops.
  std::string cut = good.substr(0, 136 + compressed_bytes / 2);
  const std::uint32_t half = compressed_bytes / 2;
  std::memcpy(cut.data() + 132, &half, 4);
  write_bytes(path, cut);
  // (Byte 48 of the inflated stream is the tag of the matrix's data, 32 KiB of doubles.)
  expect_mat_refused(path, "the compressed element at byte 128: the real part at byte 48 is cut off: its zlib "
                           "stream is cut off before its end");
  expect_mat_refused(path, "the compressed element at byte 128: the real part at byte 48 is cut off",
                     [](const fs::path& p) { (void)usrecon::io::read_mat(p, "rf"); });

  // Garbage in the middle of the stream: zlib says it is corrupt (a bad code, or the checksum).
  std::string corrupt = good;
  for (std::size_t k = 136 + compressed_bytes / 2; k < 136 + compressed_bytes / 2 + 16; ++k) corrupt[k] ^= 0x5A;
  write_bytes(path, corrupt);
  expect_mat_refused(path, "the compressed element at byte 128: ");
  try {
    (void)usrecon::io::list_mat_variables(path);
    ADD_FAILURE() << "corrupt stream accepted";
  } catch (const usrecon::io::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("zlib stream is corrupt"), std::string::npos) << e.what();
  }
  fs::remove(path);
}

TEST(IoHostile, MatSizeFieldsLargerThanTheFileAreRefusedBeforeMatioAllocates) {
  const fs::path regressions = kCorpus / "regressions" / "mat";
  // Found by fuzz_mat: a v5 dims tag of 0xFFFF0008 bytes made matio malloc 8 GiB.
  expect_mat_refused(regressions / "v5_dims_tag_claims_2pow30_dims",
                     "the element at byte 152 claims 4294901768 bytes, more than the 40 left in its matrix");
  // A name tag claiming 4 GiB inside a matrix (matio malloc'ed and memset 600 MB for 200 bytes).
  expect_mat_refused(regressions / "v5_name_tag_claims_4gib",
                     "the name at byte 168 claims 4294836227 bytes, more than the 24 left in its matrix");
  // Dims 3 x 2936012801 with 6 bytes of data: matio malloc'ed 17.6 GB before reading them.
  expect_mat_refused(regressions / "v5_dims_product_exceeds_data",
                     "the matrix at byte 128 claims 8808038403 elements in 64 bytes");
  // The same inside a compressed element (matio malloc'ed 805 MB for 175 bytes).
  expect_mat_refused(regressions / "v5_compressed_dims_product_exceeds_data",
                     "the compressed element at byte 128: the matrix at byte 0 claims");
  // A v5 header with version 0x4100 (matio malloc'ed 1.4 GB for 149 bytes).
  expect_mat_refused(regressions / "v5_header_version_4100", "header version 0x4100 (expected 0100 or 0200)");
  // A top-level matrix of 0 bytes followed by garbage (matio malloc'ed 512 MiB for 160 bytes).
  expect_mat_refused(regressions / "v5_zero_byte_top_level_matrix",
                     "the matrix at byte 128 claims 0 bytes, too few for its flags, dimensions and name (40)");
  // "Small" elements claiming 254 (flags) and 50207 (dims) bytes: matio malloc'ed 805 MB for 200
  // bytes. matio reads a matrix's parts by position, so every part must have MATLAB's layout.
  expect_mat_refused(regressions / "v5_small_element_too_big",
                     "the matrix at byte 128 has array flags that are not 8 bytes of miUINT32");
  // A compressed element whose zlib stream breaks after a bad small element (matio calloc'ed 400 MB).
  expect_mat_refused(regressions / "v5_compressed_stream_error_after_bad_element",
                     "the compressed element at byte 128: the element at byte 24 is a small data element");
  // A compressed element whose zlib stream breaks 33 bytes in, after flags of 12 bytes and a dims
  // tag that is a "small" element of 3072 bytes (matio calloc'ed 384 MiB for 183 bytes). The walk
  // used to inflate only the start of a compressed element and leave what it could not see to
  // matio; it now reads each compressed element in full, and each matrix part by MATLAB's layout.
  expect_mat_refused(regressions / "v5_compressed_element_matio_allocates",
                     "the compressed element at byte 128: the matrix at byte 0 has array flags that are not 8 bytes");
  // Dims whose tag is not miINT32: matio then reads no dims and takes the next tag for the name,
  // 2^31 bytes long (a 2 GiB malloc for 200 bytes).
  expect_mat_refused(regressions / "v5_dims_not_int32_name_claims_2gib",
                     "the matrix at byte 128 has dimensions that are not an miINT32 element");
  // A "sparse" 2 x 3 x 4 matrix holding only its row indices: matio read the missing column starts
  // from beyond the file and calloc'ed 2.8 GB (found in a 600 s run, read_mat's Mat_VarRead).
  expect_mat_refused(regressions / "v5_sparse_without_column_starts",
                     "the matrix at byte 128 is sparse with 3 dimensions (sparse arrays have 2)");
  // matio malloc'ed 1.7 GB for these 36 bytes. Its type word 0x0A000000 is byte-swapped to 10,
  // whose M digit 0 says little-endian, so matio reads the other words unswapped: 0 x 1984776513
  // and a name of 2^28 bytes. (The first version of the check swapped them all and refused the
  // "0 x 1095322998" that matio never sees.)
  expect_mat_refused(regressions / "v4_empty_matrix_with_huge_column_count",
                     "a MAT v4 header at byte 0 claims a name of 268435456 bytes, more than the 16 left");
  // The same confusion the other way round, found by the fuzzer once the walk was fixed for v5:
  // a swapped type word 1 and a native name length of 2^28 + 2^25 (matio malloc'ed 587 MB).
  expect_mat_refused(regressions / "v4_type_word_swapped_but_little_endian",
                     "a MAT v4 header at byte 0 claims a name of 318767104 bytes, more than the 19 left");
  // A sparse v4 matrix of 285212674 x 0: matio sized its buffers from the rows alone (1.1 GB).
  expect_mat_refused(regressions / "v4_sparse_without_triplet_columns",
                     "the sparse MAT v4 matrix at byte 0 has 0 columns, not 3 or 4");
  // Minimised from the first: a v4 header with a negative column count (2 GB memset for 44 bytes).
  expect_mat_refused(regressions / "v4_negative_column_count", "a MAT v4 header at byte 0 has a negative size");
}
#endif
