// usrecon info: what a channel-data file holds and how reconstruct reads it, in text and JSON,
// checked against the parameters the fixtures were written with (tests/corpus/valid/uff/
// make_ustb_uff.py, h5py) and against files written here.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../test_support.hpp"
#include "usrecon/io/mat.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/source_txt.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using usrecon::testing::quote;
using usrecon::testing::run_command;

namespace {

class CliInfo : public usrecon::testing::CliTempDir {
 protected:
  /// `info --json` on the files: its standard output alone, parsed, and the exit code.
  std::pair<json, int> info_json(const std::string& files) {
    const auto r = run_command("{ " + exe_ + " info --json " + files + " 2>/dev/null; }");
    return {json::parse(r.output, nullptr, false), r.exit_code};
  }
};

const fs::path kUff = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/uff";

}  // namespace

TEST_F(CliInfo, UstbFileListsItsArraysAndTheGeometryReconstructUses) {
  const auto [all, code] = info_json(quote(kUff / "ustb_planewave.uff"));
  ASSERT_EQ(code, 0);
  ASSERT_TRUE(all.is_array() && all.size() == 1) << all;
  const json& d = all[0];
  EXPECT_EQ(d["format"], "HDF5");
  EXPECT_EQ(d["ustb_channel_data"], json::array({"/channel_data"}));
  bool data_listed = false;
  for (const json& a : d["arrays"])
    if (a["name"] == "/channel_data/data") {
      data_listed = true;
      EXPECT_EQ(a["type"], "float32");
      EXPECT_EQ(a["dims"], json::array({3, 32, 600}));  // MATLAB's 600 x 32 x 3 reversed
    }
  EXPECT_TRUE(data_listed) << d["arrays"];
  // As make_ustb_uff.py wrote it: 32 elements at 0.3 mm, 20 MHz, 1540 m/s, initial time 1 us,
  // three plane waves at -8, 0, 8 degrees each delayed 0.5 us.
  const json& c = d.at("channel_data");
  EXPECT_EQ(c["transmits"], 3);
  EXPECT_EQ(c["elements"], 32);
  EXPECT_EQ(c["samples"], 600);
  EXPECT_EQ(c["iq"], false);
  const json& g = c.at("from_file");
  EXPECT_EQ(g["source"], "USTB UFF /channel_data");
  EXPECT_EQ(g["model"], "planewave");
  EXPECT_NEAR(g["sampling_hz"].get<double>(), 20e6, 1e-3);
  EXPECT_NEAR(g["sound_speed_m_per_s"].get<double>(), 1540, 1e-3);
  EXPECT_NEAR(g["t0_s"].get<double>(), 1e-6, 1e-12);
  EXPECT_NEAR(g["element_pitch_m"].get<double>(), 0.3e-3, 1e-9);
  EXPECT_EQ(g["time_zero"], "center");
  ASSERT_EQ(g["angles_deg"].size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(g["angles_deg"][k].get<double>(), 8.0 * (k - 1), 1e-4);
  ASSERT_EQ(g["wave_delays_s"].size(), 3u);
  for (const json& delay : g["wave_delays_s"]) EXPECT_NEAR(delay.get<double>(), 0.5e-6, 1e-12);
  EXPECT_EQ(g["frames"], 1);

  // The same in words.
  const auto r = run_command(exe_ + " info " + quote(kUff / "ustb_planewave.uff"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"/channel_data/data", "float32     3 x 32 x 600", "USTB uff.channel_data: /channel_data",
                           "reconstruct reads 3 transmit(s) x 32 element(s) x 600 samples, RF",
                           "parameters from USTB UFF /channel_data:", "angles                 -8, 0, 8 deg",
                           "wave delays            0.5 us (all 3)", "frame                  1 of 1"})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  EXPECT_EQ(r.output.find("/channel_data/sampling_frequency"), std::string::npos)  // one-value arrays hidden
      << r.output;
}

TEST_F(CliInfo, IqAndSyntheticApertureAndFramesAreNamed) {
  const auto [all, code] = info_json(quote(kUff / "ustb_iq.uff") + " " + quote(kUff / "ustb_sta.uff") + " " +
                                     quote(kUff / "ustb_one_wave_two_frames.uff"));
  ASSERT_EQ(code, 0);
  ASSERT_EQ(all.size(), 3u) << all;
  EXPECT_EQ(all[0]["channel_data"]["iq"], true);
  EXPECT_NEAR(all[0]["channel_data"]["from_file"]["modulation_frequency_hz"].get<double>(), 5e6, 1e-3);
  const json& sta = all[1]["channel_data"];
  EXPECT_EQ(sta["from_file"]["model"], "sa");
  EXPECT_EQ(sta["from_file"]["tx_elements"], json::array({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(sta["transmits"], 12);
  EXPECT_EQ(all[2]["channel_data"]["from_file"]["frames"], 2);
  // --frame past the end: listed, with reconstruct's reason.
  const auto [past, past_code] = info_json("--frame 3 " + quote(kUff / "ustb_one_wave_two_frames.uff"));
  EXPECT_EQ(past_code, 0);
  EXPECT_FALSE(past[0].contains("channel_data"));
  EXPECT_NE(past[0].value("not_read_because", "").find("--frame 3 is not among its 2 frame(s)"), std::string::npos)
      << past;
  // --frame 0 is no frame: refused by the option's range, before any file is read.
  const auto zero = run_command(exe_ + " info --frame 0 " + quote(kUff / "ustb_one_wave_two_frames.uff") + " 2>&1");
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.output.find("--frame: expected a frame number from 1 (the first) to 1073741824, FIRST:LAST (both "
                             "included), or all, not 0"),
            std::string::npos)
      << zero.output;
  EXPECT_EQ(zero.exit_code, 105) << zero.output;  // as reconstruct --frame 0 exits
  EXPECT_EQ(zero.output.find("channel_data"), std::string::npos) << zero.output;
  // --frame all, as reconstruct takes it (it was refused): the first frame is described, with the count.
  const auto [every, every_code] = info_json("--frame all " + quote(kUff / "ustb_one_wave_two_frames.uff"));
  EXPECT_EQ(every_code, 0);
  EXPECT_EQ(every[0]["channel_data"]["from_file"]["frame"], 1) << every;
  EXPECT_EQ(every[0]["channel_data"]["from_file"]["frames"], 2) << every;
  const auto word = run_command(exe_ + " info --frame some " + quote(kUff / "ustb_one_wave_two_frames.uff") + " 2>&1");
  EXPECT_EQ(word.exit_code, 105) << word.output;
  // --frame FIRST:LAST, as reconstruct takes it (it was refused): FIRST is described.
  const auto [range, range_code] = info_json("--frame 2:5 " + quote(kUff / "ustb_one_wave_two_frames.uff"));
  EXPECT_EQ(range_code, 0);
  EXPECT_EQ(range[0]["channel_data"]["from_file"]["frame"], 2) << range;
  const auto down = run_command(exe_ + " info --frame 2:1 " + quote(kUff / "ustb_one_wave_two_frames.uff") + " 2>&1");
  EXPECT_EQ(down.exit_code, 105) << down.output;
  EXPECT_NE(down.output.find("--frame FIRST:LAST counts up: 2:1 has its last frame before its first"), std::string::npos)
      << down.output;
}

// A raw image that reconstruct wrote reads as channel data of one transmit: info says what it is
// (it said only "reconstruct reads 1 transmit(s) x 1200 element(s) x 762 samples").
TEST_F(CliInfo, ARawImageReconstructWroteIsSaidToBeOne) {
  fs::copy_file(fs::path(USRECON_SOURCE_DIR) / "data" / "example.txt", dir_ / "ex.txt");
  const auto r = run_command(exe_ + " reconstruct " + quote(dir_ / "ex.txt") + " --backend cpu --save-raw -o " +
                             quote(dir_ / "out") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto text = run_command(exe_ + " info " + quote(dir_ / "out" / "ex.npy") + " 2>&1");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("  a raw image that reconstruct wrote (ex.json names it as outputs.raw), not channel data"),
            std::string::npos) << text.output;
  // The same array under another name, which no JSON names, is channel data as far as info knows.
  fs::copy_file(dir_ / "out" / "ex.npy", dir_ / "out" / "copy.npy");
  const auto [copy, code] = info_json(quote(dir_ / "out" / "copy.npy"));
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(copy[0].contains("note")) << copy;
}

// Channel data in a cell, as Verasonics saves them (RcvData{1}), and in a struct array's element:
// info offers the names, and reconstruct reads them and images them as the same values given
// as a top-level variable, bit for bit.
TEST_F(CliInfo, ChannelDataInACellReadAndImagedByTheirMatlabName) {
  const fs::path cells = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat/scipy_cells_only.mat";
  auto [offer, offer_code] = info_json(quote(cells));
  ASSERT_EQ(offer_code, 0);
  EXPECT_NE(offer[0].value("not_read_because", "").find("in structs and cells: RcvData{1}, S(1).data, P.rx(1).data, P.c{1})"),
            std::string::npos)
      << offer;
  auto [mat, code] = info_json("--var 'RcvData{1}' " + quote(cells));
  ASSERT_EQ(code, 0);
  EXPECT_EQ(mat[0]["channel_data"]["samples"], 4);  // int16 4 x 3 x 2: samples, elements, transmits
  EXPECT_EQ(mat[0]["channel_data"]["elements"], 3);
  EXPECT_EQ(mat[0]["channel_data"]["transmits"], 2);
  std::tie(mat, code) = info_json("--var 'P.rx(2).data' --layout samples,elements " + quote(cells));
  EXPECT_EQ(mat[0]["channel_data"]["samples"], 2) << mat;  // the 2 x 2 of P.rx(2); P.rx(1) is 1 x 2
  EXPECT_EQ(mat[0]["channel_data"]["elements"], 2);
#if !defined(__SANITIZE_ADDRESS__)  // AddressSanitizer reserves terabytes of address space, which ulimit -v forbids
  // A --var of 50 000 fields is refused in little memory (each step kept the name up to it:
  // 2.5 GB), past its 256th step.
  std::string deep = "P";
  for (int k = 0; k < 50000; ++k) deep += ".a";
  const auto long_name = run_command("{ ulimit -v 2000000; " + exe_ + " info --json --var '" + deep + "' " + quote(cells) +
                                     " 2>/dev/null; }");
  EXPECT_NE(long_name.output.find("more than 256 fields and subscripts (character 513)"), std::string::npos)
      << long_name.output.substr(0, 400);
#endif
  std::tie(mat, code) = info_json("--var 'RcvData(1)' " + quote(cells));
  EXPECT_NE(mat[0].value("not_read_because", "").find("'RcvData' is a cell array: --var RcvData{k} names its element k"),
            std::string::npos)
      << mat;

  // The same values, column-major, as a top-level double array.
  usrecon::io::MatArray rf{"rf", "", {4, 3, 2}, {}};
  for (int k = 0; k < 24; ++k) rf.values.push_back(k - 12);
  usrecon::io::write_mat(dir_ / "top.mat", {rf}, false);
  const std::string options = " --model planewave --fs 20e6 --pitch 0.3e-3 --angles-deg -1,1 --x-range -0.3e-3:0.3e-3 "
                              "--z-range 10e-6:60e-6 --dx 0.1e-3 --dz 5e-6 --save-raw --backend cpu";
  const auto a = run_command(exe_ + " reconstruct " + quote(cells) + " --var 'RcvData{1}' -o " + quote(dir_ / "a") + options);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const auto b = run_command(exe_ + " reconstruct " + quote(dir_ / "top.mat") + " --var rf -o " + quote(dir_ / "b") + options);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string image = bytes(dir_ / "a" / "scipy_cells_only.npy");
  EXPECT_GT(image.size(), 7u * 11u * 8u);
  EXPECT_EQ(image, bytes(dir_ / "b" / "top.npy"));
  std::ifstream record(dir_ / "a" / "scipy_cells_only.json");
  const json frame = json::parse(record, nullptr, false);
  EXPECT_EQ(frame["parameters"]["var"], "RcvData{1}") << frame;
}

TEST_F(CliInfo, MatNpyAndSourceTxtSayWhatReconstructNeeds) {
  // Two numeric variables: listed in MATLAB's order, and reconstruct needs --var.
  usrecon::io::MatArray rf{"RF", "", {40, 4, 2}, std::vector<double>(320, 1.0)};
  usrecon::io::MatArray other{"gain", "", {1, 3}, {1, 2, 3}};
  usrecon::io::write_mat(dir_ / "two.mat", {rf, other}, false);
  auto [mat, code] = info_json(quote(dir_ / "two.mat"));
  ASSERT_EQ(code, 0);
  EXPECT_EQ(mat[0]["format"], "MAT");
  ASSERT_EQ(mat[0]["arrays"].size(), 2u);
  EXPECT_EQ(mat[0]["arrays"][0]["name"], "RF");
  EXPECT_EQ(mat[0]["arrays"][0]["type"], "double");
  EXPECT_EQ(mat[0]["arrays"][0]["dims"], json::array({40, 4, 2}));
  EXPECT_NE(mat[0].value("not_read_because", "").find("name the variable to read with --var (numeric arrays here: RF, gain"),
            std::string::npos)
      << mat;
  std::tie(mat, code) = info_json("--var RF " + quote(dir_ / "two.mat"));
  EXPECT_EQ(mat[0]["channel_data"]["samples"], 40);  // the default layout: samples,elements,transmits
  EXPECT_EQ(mat[0]["channel_data"]["elements"], 4);
  EXPECT_EQ(mat[0]["channel_data"]["transmits"], 2);
  EXPECT_FALSE(mat[0]["channel_data"].contains("from_file"));

  const std::vector<float> values(5 * 6, 0.5f);
  usrecon::io::write_npy<float>(dir_ / "rf.npy", values, std::vector<std::size_t>{5, 6});
  auto [npy, npy_code] = info_json(quote(dir_ / "rf.npy"));
  ASSERT_EQ(npy_code, 0);
  EXPECT_EQ(npy[0]["format"], "NPY");
  EXPECT_EQ(npy[0]["arrays"][0]["type"], "<f4");
  EXPECT_EQ(npy[0]["arrays"][0]["dims"], json::array({5, 6}));
  EXPECT_EQ(npy[0]["channel_data"]["samples"], 5);

  const std::vector<std::int32_t> seed(128 * 2000, 7), small(3 * 10, -1);
  usrecon::io::write_source_txt(dir_ / "seed.txt", seed, 128, 2000);
  usrecon::io::write_source_txt(dir_ / "small.txt", small, 3, 10);
  const auto r = run_command(exe_ + " info " + quote(dir_ / "seed.txt") + " " + quote(dir_ / "small.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("256000 values\n  reconstruct: the seed model (the default) reads it"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("30 values\n  reconstruct: not the seed's default 128 x 2000 values; the seed model reads it with --channels"), std::string::npos)
      << r.output;
}

// info takes --layout as reconstruct does (it could not describe a file that needs one), says
// what reconstruct warns of (axes likely out of order, data all zero), and lists an NPY's dtype
// and order as the file stores them ('>i2' was listed as '<i2').
TEST_F(CliInfo, LayoutAndWarningsAreReconstructsAndAnNpyIsListedAsStored) {
  std::vector<float> values(32 * 500);
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = float(k % 7) - 3.0f;
  usrecon::io::write_npy<float>(dir_ / "em.npy", values, std::vector<std::size_t>{32, 500});  // elements x samples
  auto [plain, code] = info_json(quote(dir_ / "em.npy"));
  ASSERT_EQ(code, 0);
  EXPECT_EQ(plain[0]["channel_data"]["elements"], 500);
  EXPECT_EQ(plain[0]["channel_data"]["notes"],
            json::array({"more elements than samples per channel: were the axes named in order? (--layout)"}))
      << plain;
  auto [laid, laid_code] = info_json("--layout elements,samples " + quote(dir_ / "em.npy"));
  ASSERT_EQ(laid_code, 0);
  EXPECT_EQ(laid[0]["channel_data"]["samples"], 500);
  EXPECT_EQ(laid[0]["channel_data"]["elements"], 32);
  EXPECT_EQ(laid[0]["channel_data"]["layout"], "elements,samples");
  EXPECT_FALSE(laid[0]["channel_data"].contains("notes")) << laid;
  const auto text = run_command(exe_ + " info --layout elements,samples " + quote(dir_ / "em.npy"));
  EXPECT_NE(text.output.find("(axes as --layout elements,samples; usrecon reads no geometry"), std::string::npos)
      << text.output;

  usrecon::io::write_npy<float>(dir_ / "zero.npy", std::vector<float>(40 * 4, 0.0f), std::vector<std::size_t>{40, 4});
  auto [zero, zero_code] = info_json(quote(dir_ / "zero.npy"));
  ASSERT_EQ(zero_code, 0);
  EXPECT_EQ(zero[0]["channel_data"]["notes"], json::array({"every sample is 0, so the image is black"})) << zero;

  // A big-endian int16 array in Fortran order, hand-written: {'descr': '>i2', ...} then 2 x 3 values.
  std::string header = "{'descr': '>i2', 'fortran_order': True, 'shape': (40, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');  // 10 + header: a multiple of 64
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
  for (int k = 0; k < 120; ++k) bytes += std::string{char(0), char(k % 5 + 1)};
  std::ofstream(dir_ / "big.npy", std::ios::binary) << bytes;
  auto [big, big_code] = info_json(quote(dir_ / "big.npy"));
  ASSERT_EQ(big_code, 0) << big;
  EXPECT_EQ(big[0]["arrays"][0]["type"], ">i2") << big;
  EXPECT_EQ(big[0]["arrays"][0]["fortran_order"], true) << big;
  EXPECT_EQ(big[0]["channel_data"]["samples"], 40) << big;
  const auto big_text = run_command(exe_ + " info " + quote(dir_ / "big.npy"));
  EXPECT_NE(big_text.output.find(">i2         40 x 3 (Fortran order)"), std::string::npos) << big_text.output;
}

TEST_F(CliInfo, AFileThatCannotBeListedFailsTheRunAndTheOthersStillShow) {
  std::ofstream(dir_ / "broken.npy") << "not an npy file";
  std::ofstream(dir_ / "broken.h5") << "not an hdf5 file";
  const auto [all, code] =
      info_json(quote(dir_ / "broken.npy") + " " + quote(kUff / "ustb_sta.uff") + " " + quote(dir_ / "broken.h5"));
  EXPECT_EQ(code, 1);
  ASSERT_EQ(all.size(), 3u) << all;
  EXPECT_NE(all[0].value("error", "").find("broken.npy"), std::string::npos) << all[0];
  EXPECT_EQ(all[1]["channel_data"]["transmits"], 12);
  EXPECT_NE(all[2].value("error", "").find("broken.h5"), std::string::npos) << all[2];
  const auto r = run_command(exe_ + " info " + quote(dir_ / "broken.npy"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("usrecon: error: "), std::string::npos) << r.output;
  // A missing file is one such file: the others still show (the argument check refused them all).
  const auto [with_missing, missing_code] = info_json(quote(dir_ / "missing.mat") + " " + quote(kUff / "ustb_sta.uff"));
  EXPECT_EQ(missing_code, 1);
  ASSERT_EQ(with_missing.size(), 2u) << with_missing;
  EXPECT_NE(with_missing[0].value("error", "").find("does not exist"), std::string::npos) << with_missing[0];
  EXPECT_EQ(with_missing[1]["channel_data"]["transmits"], 12);
  // A file whose name says it is no channel data (an image, a JSON) is refused by name; it was
  // listed as a source.txt of so many "values".
  const auto [other, other_code] = info_json(quote(fs::path(USRECON_SOURCE_DIR) / "data/example.targets.json"));
  EXPECT_EQ(other_code, 1);
  ASSERT_EQ(other.size(), 1u) << other;
  EXPECT_NE(other[0].value("error", "").find("example.targets.json: not a channel-data file by its name (.json)"),
            std::string::npos)
      << other[0];
}
