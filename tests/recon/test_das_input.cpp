// Channel data for the general models: axis layouts of NPY (C order) and MAT (column-major)
// arrays, per-channel mean removal, source.txt, option parsing.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "../fuzz/fuzz_checks_uff.hpp"
#include "../test_support.hpp"
#include "usrecon/io/hdf5.hpp"
#include "usrecon/io/mat.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/source_txt.hpp"
#include "usrecon/recon/das_pipeline.hpp"
#include "usrecon/recon/pipeline.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {
namespace {

// value(s, e, t) = 100 t + 10 e + s, for 4 samples, 3 elements, 2 transmits.
double value(int s, int e, int t) { return 100.0 * t + 10.0 * e + s; }

void expect_channels(const ChannelData& rf) {
  ASSERT_EQ(rf.samples, 4);
  ASSERT_EQ(rf.elements, 3);
  ASSERT_EQ(rf.transmits, 2);
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s) EXPECT_EQ(rf.channel(t, e)[s], value(s, e, t));
}

TEST(ReconDasInput, LayoutsInCOrderAndColumnMajor) {
  // C order [transmits][samples][elements]: the last axis is fastest.
  std::vector<double> c_order;
  for (int t = 0; t < 2; ++t)
    for (int s = 0; s < 4; ++s)
      for (int e = 0; e < 3; ++e) c_order.push_back(value(s, e, t));
  expect_channels(arrange_channels(c_order, {2, 4, 3}, false, "transmits,samples,elements", Offset::None, "x"));
  // MATLAB [samples x elements x transmits], column-major: the first axis is fastest.
  std::vector<double> matlab;
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s) matlab.push_back(value(s, e, t));
  expect_channels(arrange_channels(matlab, {4, 3, 2}, true, "samples,elements,transmits", Offset::None, "x"));
  // A 2-D array is one transmit; MATLAB's trailing singleton is dropped.
  const ChannelData one = arrange_channels(std::vector<double>(matlab.begin(), matlab.begin() + 12), {4, 3},
                                           true, "", Offset::None, "x");
  EXPECT_EQ(one.transmits, 1);
  EXPECT_THROW(arrange_channels(matlab, {4, 3, 2}, true, "samples,elements", Offset::None, "x"), Error);
  EXPECT_THROW(arrange_channels(matlab, {4, 3, 2}, true, "samples,samples,transmits", Offset::None, "x"), Error);
  EXPECT_THROW(arrange_channels(matlab, {4, 3, 2}, true, "samples,lines,transmits", Offset::None, "x"), Error);
}

TEST(ReconDasInput, OffsetMeanRemovesEachChannelsMean) {
  std::vector<double> matlab;
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s) matlab.push_back(value(s, e, t));
  const ChannelData rf = arrange_channels(matlab, {4, 3, 2}, true, "", Offset::Mean, "x");
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s) EXPECT_FLOAT_EQ(rf.channel(t, e)[s], s - 1.5f);
}

/// The message of the Error that `call` throws ("" and a failure when it throws none).
template <class Call>
std::string error_of(Call call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// (samples,transmits): one axis holding the transmits one after another, each of --samples
// samples, as Verasonics' RcvData{1} holds its acquisitions in its rows; rows past the last
// transmit (a buffer's padding) are left. Listed in the array's own order: fastest first in
// MATLAB's, slowest first in C order.
TEST(ReconDasInput, ASamplesAndTransmitsAxisIsSplitByTheSamplesOfOneTransmit) {
  constexpr int kPadding = 3;
  // MATLAB's [rows][elements], rows = transmit t's samples at t * 4 + s, then the padding.
  std::vector<double> matlab;
  for (int e = 0; e < 3; ++e) {
    for (int t = 0; t < 2; ++t)
      for (int s = 0; s < 4; ++s) matlab.push_back(value(s, e, t));
    for (int p = 0; p < kPadding; ++p) matlab.push_back(-1);
  }
  const std::vector<std::size_t> rows_by_elements{8 + kPadding, 3};
  const std::string layout = "(samples,transmits),elements";
  expect_channels(arrange_channels(matlab, rows_by_elements, true, layout, Offset::None, "x", 1, nullptr, {4, 0}));
  expect_channels(arrange_channels(matlab, rows_by_elements, true, layout, Offset::None, "x", 1, nullptr, {4, 2}));
  const ChannelData first = arrange_channels(matlab, rows_by_elements, true, layout, Offset::None, "x", 1, nullptr, {4, 1});
  EXPECT_EQ(first.transmits, 1);  // the acquisition's one transmit: the rest is left
  EXPECT_EQ(first.channel(0, 2)[3], value(3, 2, 0));
  // C order [elements][rows]: the same axis, named slowest first.
  std::vector<double> c_order;
  for (int e = 0; e < 3; ++e)
    for (int r = 0; r < 8 + kPadding; ++r) c_order.push_back(matlab[std::size_t(e) * (8 + kPadding) + std::size_t(r)]);
  expect_channels(arrange_channels(c_order, {3, 8 + kPadding}, false, "elements,(transmits,samples)", Offset::None, "x",
                                   1, nullptr, {4, 0}));
  // Interleaved: sample s of transmit t at row s * 2 + t (transmits fastest), with frames.
  std::vector<double> interleaved;  // MATLAB's [rows][elements][frames]
  for (int f = 0; f < 2; ++f)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s)
        for (int t = 0; t < 2; ++t) interleaved.push_back(value(s, e, t) + 1000.0 * f);
  int frames = 0;
  const ChannelData second = arrange_channels(interleaved, {8, 3, 2}, true, "(transmits,samples),elements,frames",
                                              Offset::None, "x", 2, &frames, {4, 0});
  EXPECT_EQ(frames, 2);
  ASSERT_EQ(second.transmits, 2);
  ASSERT_EQ(second.samples, 4);
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s) EXPECT_EQ(second.channel(t, e)[s], value(s, e, t) + 1000.0);
  // Interleaved, the acquisition's transmits must fill the axis: one of the two (the stride would
  // be 2 if the other is left out, 1 if the rows past it were padding) is refused, as are rows
  // that are not whole transmits; both transmits, given, read as above.
  EXPECT_EQ(arrange_channels(interleaved, {8, 3, 2}, true, "(transmits,samples),elements,frames", Offset::None, "x", 2,
                             nullptr, {4, 2}).data,
            second.data);
  EXPECT_EQ(error_of([&] {
              arrange_channels(interleaved, {8, 3, 2}, true, "(transmits,samples),elements,frames", Offset::None, "x",
                               1, nullptr, {4, 1});
            }),
            "x: the interleaved (transmits fastest) axis of the 8 x 3 x 2 array holds 8 rows, not 1 transmit(s) of 4 "
            "samples (--samples): interleaved transmits must fill the axis, with the acquisition listing them all "
            "(transmits one after another are (samples,transmits) in MATLAB's order, (transmits,samples) in C order, "
            "and may have rows to spare)");
  EXPECT_NE(error_of([&] {
              arrange_channels(std::vector<double>(9 * 3 * 2), {9, 3, 2}, true, "(transmits,samples),elements,frames",
                               Offset::None, "x", 1, nullptr, {4, 0});
            }).find("holds 9 rows, not 2 transmit(s) of 4 samples"),
            std::string::npos);
  // Synthetic aperture with the elements from the data: one transmit per element (3), which the
  // rows must hold.
  std::vector<double> three(std::size_t(12 + kPadding) * 3);
  for (int e = 0; e < 3; ++e)
    for (int t = 0; t < 3; ++t)
      for (int s = 0; s < 4; ++s) three[std::size_t(e) * (12 + kPadding) + std::size_t(t * 4 + s)] = value(s, e, t);
  const ChannelData sa = arrange_channels(three, {12 + kPadding, 3}, true, layout, Offset::None, "x", 1, nullptr,
                                          {4, kOneTransmitPerElement});
  ASSERT_EQ(sa.transmits, 3);
  EXPECT_EQ(sa.channel(2, 1)[3], value(3, 1, 2));
  EXPECT_NE(error_of([&] {
              arrange_channels(matlab, rows_by_elements, true, layout, Offset::None, "x", 1, nullptr,
                               {4, kOneTransmitPerElement});
            }).find("fewer than the 3 transmit(s) (synthetic aperture: one per element) of 4 samples"),
            std::string::npos);
  // Refused: no --samples; more transmits than the rows hold; another pair; an axis twice; a
  // parenthesis left open; a source.txt's.
  EXPECT_EQ(error_of([&] { arrange_channels(matlab, rows_by_elements, true, layout, Offset::None, "x"); }),
            "x: --layout '(samples,transmits),elements': give --samples, the samples of one transmit, to split its "
            "(samples,transmits) axis of 11 rows");
  EXPECT_EQ(error_of([&] { arrange_channels(matlab, rows_by_elements, true, layout, Offset::None, "x", 1, nullptr, {4, 3}); }),
            "x: the (samples,transmits) axis of the 11 x 3 array holds 11 rows, fewer than the 3 transmit(s) of 4 "
            "samples (--samples) need");
  EXPECT_EQ(error_of([&] { arrange_channels(matlab, rows_by_elements, true, layout, Offset::None, "x", 1, nullptr, {12, 0}); }),
            "x: the (samples,transmits) axis of the 11 x 3 array holds 11 rows, fewer than the 1 transmit(s) of 12 "
            "samples (--samples) need");
  EXPECT_NE(error_of([&] {
              arrange_channels(matlab, rows_by_elements, true, "(samples,elements),transmits", Offset::None, "x", 1,
                               nullptr, {4, 0});
            }).find("an axis in parentheses is (samples,transmits) or (transmits,samples), not (samples,elements)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              arrange_channels(matlab, rows_by_elements, true, "(samples,transmits),samples", Offset::None, "x", 1,
                               nullptr, {4, 0});
            }).find("names an axis twice"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              arrange_channels(matlab, rows_by_elements, true, "(samples,transmits,elements", Offset::None, "x", 1,
                               nullptr, {4, 0});
            }).find("unknown axis '(samples,transmits,elements'"),
            std::string::npos);
}

// A 'frames' axis: frame f of value(s, e, t) + 1000 f, wherever --layout puts the axis, in C
// order and column-major; out of range and implausible counts refused.
TEST(ReconDasInput, AFramesAxisSelectsOneFrame) {
  // C order [samples][frames][elements][transmits]: frames neither first nor last.
  std::vector<double> c_order;
  for (int s = 0; s < 4; ++s)
    for (int f = 0; f < 3; ++f)
      for (int e = 0; e < 3; ++e)
        for (int t = 0; t < 2; ++t) c_order.push_back(value(s, e, t) + 1000.0 * f);
  // MATLAB's [samples][elements][transmits][frames], column-major.
  std::vector<double> matlab;
  for (int f = 0; f < 3; ++f)
    for (int t = 0; t < 2; ++t)
      for (int e = 0; e < 3; ++e)
        for (int s = 0; s < 4; ++s) matlab.push_back(value(s, e, t) + 1000.0 * f);
  for (int frame = 1; frame <= 3; ++frame) {
    SCOPED_TRACE(frame);
    int frames = 0;
    const ChannelData a = arrange_channels(c_order, {4, 3, 3, 2}, false, "samples,frames,elements,transmits",
                                           Offset::None, "x", frame, &frames);
    EXPECT_EQ(frames, 3);
    const ChannelData b = arrange_channels(matlab, {4, 3, 2, 3}, true, "samples,elements,transmits,frames",
                                           Offset::None, "x", frame, &frames);
    EXPECT_EQ(frames, 3);
    for (const ChannelData* rf : {&a, &b}) {
      ASSERT_EQ(rf->samples, 4);
      ASSERT_EQ(rf->elements, 3);
      ASSERT_EQ(rf->transmits, 2);
      for (int t = 0; t < 2; ++t)
        for (int e = 0; e < 3; ++e)
          for (int s = 0; s < 4; ++s) EXPECT_EQ(rf->channel(t, e)[s], value(s, e, t) + 1000.0 * (frame - 1));
    }
  }
  // Without a frames axis an array is one frame; a frames axis of MATLAB's dropped trailing 1 too.
  int frames = 0;
  (void)arrange_channels(std::vector<double>(matlab.begin(), matlab.begin() + 24), {4, 3, 2}, true,
                         "samples,elements,transmits,frames", Offset::None, "x", 1, &frames);
  EXPECT_EQ(frames, 1);
  (void)arrange_channels(std::vector<double>(matlab.begin(), matlab.begin() + 24), {4, 3, 2}, true, "",
                         Offset::None, "x", 1, &frames);
  EXPECT_EQ(frames, 1);
  EXPECT_EQ(error_of([&] {
              arrange_channels(matlab, {4, 3, 2, 3}, true, "samples,elements,transmits,frames", Offset::None, "m.mat", 4);
            }),
            "m.mat: --frame 4 is not among its 3 frame(s) (the 'frames' axis of --layout)");
  EXPECT_NE(error_of([&] {
              arrange_channels(matlab, {4, 3, 2, 3}, true, "samples,elements,transmits", Offset::None, "m.mat");
            }).find("the array is 4 x 3 x 2 x 3 but --layout 'samples,elements,transmits' names only 3 axes"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              arrange_channels(matlab, {4, 3, 2, 3}, true, "samples,elements,transmits,frames,x", Offset::None, "m");
            }).find("names more than four axes"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              arrange_channels(matlab, {4, 3, 2, 3}, true, "samples,elements,transmits,frame", Offset::None, "m");
            }).find("unknown axis 'frame' (use samples, elements, transmits, frames, and (samples,transmits) for an "
                  "axis holding the transmits one after another)"),
            std::string::npos);
  const std::vector<double> many(2 * (kMaxFramesInAnArray + 1), 0.0);
  EXPECT_NE(error_of([&] {
              arrange_channels(many, {kMaxFramesInAnArray + 1, 2}, false, "frames,samples", Offset::None, "big.npy");
            }).find("gives 2 samples x 1 elements x 1 transmits x 100001 frames (more than 100000 frames"),
            std::string::npos);
}

class ReconDasInputFiles : public usrecon::testing::TempDir {};

// NPY, MAT and HDF5 arrays with a 'frames' axis: count_frames says how many, read_channel_data
// reads each (the frame and count in its geometry), the same values as the frame's own file; the
// array kept for --frame all is read again when the file changes under it.
TEST_F(ReconDasInputFiles, FramesAlongAnAxisOfNpyMatAndHdf5Arrays) {
  const auto by_name_of = [](const std::string& var) {
    ChannelInput in;
    in.var = var;
    in.layout = "samples,elements,transmits,frames";
    in.all_frames = true;
    return in;
  };
  std::vector<float> npy;  // [frames][samples][elements][transmits]
  io::MatArray mat{"RF", "", {4, 3, 2, 3}, {}};  // MATLAB's [samples][elements][transmits][frames]
  for (int f = 0; f < 3; ++f)
    for (int s = 0; s < 4; ++s)
      for (int e = 0; e < 3; ++e)
        for (int t = 0; t < 2; ++t) npy.push_back(static_cast<float>(value(s, e, t) + 1000.0 * f));
  for (int f = 0; f < 3; ++f)
    for (int t = 0; t < 2; ++t)
      for (int e = 0; e < 3; ++e)
        for (int s = 0; s < 4; ++s) mat.values.push_back(value(s, e, t) + 1000.0 * f);
  const std::size_t shape[4] = {3, 4, 3, 2};
  io::write_npy(dir_ / "cine.npy", io::DType::f32, shape, npy.data());
  io::write_mat(dir_ / "cine.mat", {mat});
  io::write_hdf5(dir_ / "cine.h5", {{"/rf", "", {3, 4, 3, 2}, std::vector<double>(npy.begin(), npy.end())}});
  for (const char* name : {"cine.npy", "cine.mat", "cine.h5"}) {
    SCOPED_TRACE(name);
    ChannelInput in;
    in.layout = std::string(name) == "cine.mat" ? "samples,elements,transmits,frames" : "frames,samples,elements,transmits";
    in.all_frames = true;
    EXPECT_EQ(count_frames(dir_ / name, in), 3);
    for (int frame = 1; frame <= 3; ++frame) {
      in.frame = frame;
      FileGeometry g;
      const ChannelData rf = read_channel_data(dir_ / name, in, 0, 0, &g);
      EXPECT_EQ(g.frame, frame);
      EXPECT_EQ(g.frames, 3);
      ASSERT_EQ(rf.samples, 4);
      ASSERT_EQ(rf.transmits, 2);
      for (int t = 0; t < 2; ++t)
        for (int e = 0; e < 3; ++e)
          for (int s = 0; s < 4; ++s) EXPECT_EQ(rf.channel(t, e)[s], value(s, e, t) + 1000.0 * (frame - 1));
    }
    in.frame = 4;
    EXPECT_THROW(read_channel_data(dir_ / name, in), Error);
    in.layout.clear();  // without the axis: one frame (and the 4-D array refused by its shape)
    in.all_frames = true;
    EXPECT_EQ(count_frames(dir_ / name, in), 1);
  }
  // Kept from the first frame's read for the others, but not past a change to the file.
  ChannelInput in;
  in.layout = "frames,samples,elements,transmits";
  in.all_frames = true;
  ASSERT_EQ(count_frames(dir_ / "cine.npy", in), 3);
  in.frame = 1;
  EXPECT_EQ(read_channel_data(dir_ / "cine.npy", in).channel(1, 2)[3], value(3, 2, 1));
  for (float& v : npy) v = -v;
  const std::size_t four[4] = {4, 4, 3, 2};  // a frame more: another size
  npy.resize(npy.size() + 24, 7.0f);
  io::write_npy(dir_ / "cine.npy", io::DType::f32, four, npy.data());
  in.frame = 2;
  EXPECT_EQ(read_channel_data(dir_ / "cine.npy", in).channel(1, 2)[3], -(value(3, 2, 1) + 1000.0));
  EXPECT_EQ(count_frames(dir_ / "cine.npy", in), 4);

  // Arrays that the read refuses are one frame (refused once, not once a frame): NPY data cut
  // short, a header claiming 5000 frames, complex values; a complex or text MAT variable; a FIFO
  // is refused at once (the header's read would wait for a writer).
  const std::string whole = io::read_file(dir_ / "cine.npy");
  io::write_file_atomic(dir_ / "cut.npy", whole.substr(0, whole.size() - 100));
  EXPECT_THROW(read_channel_data(dir_ / "cut.npy", in), io::InputError);
  const std::size_t claim[4] = {5000, 4, 3, 2};
  const std::vector<float> all_of_them(5000 * 24, 1.0f);  // encoded whole, then cut to 200 bytes
  const std::vector<std::byte> claimed = io::encode_npy(io::DType::f32, claim, all_of_them.data());
  io::write_file_atomic(dir_ / "claim.npy",
                        std::string(reinterpret_cast<const char*>(claimed.data()), 200));  // header and some data
  const std::vector<std::complex<float>> complex_values(4 * 4 * 3 * 2);
  io::write_npy(dir_ / "complex.npy", io::DType::c64, four, complex_values.data());
  std::vector<std::pair<std::string, int>> jobs;  // a batch's: one each
  in.frame = 1;  // --frame all
  for (const BatchInput& job : expand_frames({dir_ / "cut.npy", dir_ / "claim.npy", dir_ / "complex.npy"}, in))
    jobs.emplace_back(job.path.filename().string(), job.frame);
  EXPECT_EQ(jobs, (std::vector<std::pair<std::string, int>>{{"cut.npy", 0}, {"claim.npy", 0}, {"complex.npy", 0}}));
  const fs::path mixed = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat/scipy_mixed_plain.mat";
  EXPECT_EQ(count_frames(mixed, by_name_of("complex_v")), 1);  // 1 x 2 complex
  EXPECT_EQ(count_frames(mixed, by_name_of("label")), 1);      // text, 1 x 12
  EXPECT_THROW(count_frames(mixed, by_name_of("missing")), io::InputError);  // said once by the batch
  ASSERT_EQ(::mkfifo((dir_ / "fifo.npy").c_str(), 0600), 0);
  try {
    (void)count_frames(dir_ / "fifo.npy", in);
    ADD_FAILURE() << "a FIFO's frames were counted";
  } catch (const io::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a regular file"), std::string::npos) << e.what();
  }
  // A MAT variable named by --var, or the only numeric one: from the file's list of variables.
  EXPECT_EQ(count_frames(dir_ / "cine.mat", by_name_of("RF")), 3);
  EXPECT_EQ(count_frames(dir_ / "cine.mat", by_name_of("")), 3);

  // A C-order array has all its axes: a frames axis among more names than it has axes is
  // refused once, not read as 4 frames of 3 samples x 2 elements x 1 transmit each.
  const std::size_t three[3] = {4, 3, 2};
  io::write_npy(dir_ / "plain.npy", io::DType::f32, three, npy.data());
  EXPECT_EQ(count_frames(dir_ / "plain.npy", in), 1);
  in.frame = 1;
  try {
    (void)read_channel_data(dir_ / "plain.npy", in);
    ADD_FAILURE() << "a 3-D array read with four axes named";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plain.npy: the array is 4 x 3 x 2 but --layout "
                                         "'frames,samples,elements,transmits' names 4 axes (an array with a "
                                         "frames axis has one for each name)"),
              std::string::npos)
        << e.what();
  }
  // source.txt holds one frame, whatever --layout names: --frame 2 is refused (it read frame 1).
  const std::vector<std::int32_t> ints(3 * 2 * 4, 1);
  io::write_source_txt(dir_ / "one.txt", ints, 6, 4);
  ChannelInput txt;
  txt.layout = "frames,transmits,elements,samples";
  txt.samples = 4;
  txt.frame = 2;
  try {
    (void)read_channel_data(dir_ / "one.txt", txt, 3, 2);
    ADD_FAILURE() << "a source.txt's frame 2 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one.txt: --frame 2 is not among its 1 frame(s)"), std::string::npos) << e.what();
  }
  txt.frame = 1;
  EXPECT_EQ(read_channel_data(dir_ / "one.txt", txt, 3, 2).transmits, 2);
}

// A frame whose 'frames' axis is the slowest the file stores is read alone (the first axis of a
// C-order NPY or an HDF5 dataset, the last of a Fortran-order NPY or of a MAT v7.3 array), with
// the frames after it for --frame all (kept for them): the same channel data as the frame of the
// whole array, which MAT v5 files and other axis orders still read (and keep). FileGeometry's
// frames_held says which was read. Each file: count_frames, every frame, the frame past the last
// refused.
TEST_F(ReconDasInputFiles, AFrameAlongTheSlowestStoredAxisIsReadAloneAsTheWholeReadGivesIt) {
  constexpr int kFrames = 3;
  const auto cine_value = [](int f, int s, int e, int t) { return value(s, e, t) + 1000.0 * f; };
  // The values of each array, the slowest axis first (C order).
  const auto c_order = [&](std::vector<char> axes) {  // of 'f', 's', 'e', 't'
    const std::map<char, int> extent{{'f', kFrames}, {'s', 4}, {'e', 3}, {'t', 2}};
    std::vector<double> values;
    int at[4];
    const std::function<void(std::size_t)> walk = [&](std::size_t depth) {
      if (depth == axes.size()) {
        std::map<char, int> index;
        for (std::size_t k = 0; k < axes.size(); ++k) index[axes[k]] = at[k];
        values.push_back(cine_value(index['f'], index['s'], index['e'], index['t']));
        return;
      }
      for (at[depth] = 0; at[depth] < extent.at(axes[depth]); ++at[depth]) walk(depth + 1);
    };
    walk(0);
    return values;
  };
  const auto write_npy = [&](const char* name, std::vector<char> axes, std::vector<std::size_t> shape) {
    const std::vector<double> v = c_order(axes);
    const std::vector<float> f(v.begin(), v.end());
    io::write_npy(dir_ / name, io::DType::f32, shape, f.data());
  };
  write_npy("first.npy", {'f', 's', 'e', 't'}, {3, 4, 3, 2});
  write_npy("last.npy", {'s', 'e', 't', 'f'}, {4, 3, 2, 3});
  // A Fortran-order (4, 3, 2, 3) array holds the bytes of the C-order (3, 2, 3, 4) one.
  write_npy("fortran.npy", {'f', 't', 'e', 's'}, {3, 2, 3, 4});
  {
    std::string bytes = io::read_file(dir_ / "fortran.npy");
    const std::string from = "'fortran_order': False, 'shape': (3, 2, 3, 4)", to = "'fortran_order': True, 'shape': (4, 3, 2, 3) ";
    ASSERT_NE(bytes.find(from), std::string::npos) << bytes.substr(0, 128);
    bytes.replace(bytes.find(from), from.size(), to);
    io::write_file_atomic(dir_ / "fortran.npy", bytes);
  }
  io::write_hdf5(dir_ / "first.h5", {{"/rf", "", {3, 4, 3, 2}, c_order({'f', 's', 'e', 't'})}});
  io::write_hdf5(dir_ / "last.h5", {{"/rf", "", {4, 3, 2, 3}, c_order({'s', 'e', 't', 'f'})}});
  io::write_mat(dir_ / "cine.mat", {{"RF", "", {4, 3, 2, 3}, c_order({'f', 't', 'e', 's'})}});  // column-major
  // A PICMUS IQ cine, [frames][angles][channels][samples], Q = -I.
  const std::string g = "/US/US_DATASET0000/";
  io::Hdf5Array real{g + "data/real", "", {3, 2, 3, 4}, c_order({'f', 't', 'e', 's'})};
  io::Hdf5Array imag = real;
  imag.path = g + "data/imag";
  for (double& v : imag.values) v = -v;
  io::write_hdf5(dir_ / "picmus_cine.hdf5",
                 {real, imag, {g + "angles", "", {2}, {-0.1, 0.1}},
                  {g + "probe_geometry", "", {3, 3}, {-0.3e-3, 0, 0.3e-3, 0, 0, 0, 0, 0, 0}},
                  {g + "sampling_frequency", "", {1}, {20.832e6}}, {g + "sound_speed", "", {1}, {1540}},
                  {g + "initial_time", "", {1}, {1e-6}}, {g + "modulation_frequency", "", {1}, {5.208e6}}});

  const std::vector<std::pair<const char*, const char*>> files = {
      {"first.npy", "frames,samples,elements,transmits"},     {"last.npy", "samples,elements,transmits,frames"},
      {"fortran.npy", "samples,elements,transmits,frames"},   {"first.h5", "frames,samples,elements,transmits"},
      {"last.h5", "samples,elements,transmits,frames"},       {"cine.mat", "samples,elements,transmits,frames"},
      {"picmus_cine.hdf5", "frames,transmits,elements,samples"}};
  for (const auto& [name, layout] : files) {
    SCOPED_TRACE(name);
    for (bool all_frames : {false, true}) {  // one frame asked for (read alone), or each of a batch's (whole)
      ChannelInput in;
      in.layout = layout;
      in.all_frames = all_frames;
      ASSERT_EQ(count_frames(dir_ / name, in), kFrames);
      for (int frame = 1; frame <= kFrames; ++frame) {
        in.frame = frame;
        FileGeometry geometry;
        const ChannelData rf = read_channel_data(dir_ / name, in, 0, 0, &geometry);
        EXPECT_EQ(geometry.frame, frame);
        EXPECT_EQ(geometry.frames, kFrames);
        // Read alone: the frame (--frame N), or the frames from it on, which a batch then keeps
        // (--frame all: all three, in one read); read whole: all three.
        // (cine.mat is a v5 file's top-level array, whose frames matio reads alone.)
        const bool alone = std::string(name).find("last") == std::string::npos;
        EXPECT_EQ(geometry.frames_held, alone && !all_frames ? 1 : kFrames);
        ASSERT_EQ(rf.samples, 4);
        ASSERT_EQ(rf.elements, 3);
        ASSERT_EQ(rf.transmits, 2);
        for (int t = 0; t < 2; ++t)
          for (int e = 0; e < 3; ++e)
            for (int s = 0; s < 4; ++s) ASSERT_EQ(rf.channel(t, e)[s], cine_value(frame - 1, s, e, t)) << frame;
        ASSERT_EQ(rf.is_iq(), std::string(name) == "picmus_cine.hdf5");
        for (std::size_t k = 0; k < rf.imag.size(); ++k) ASSERT_EQ(rf.imag[k], -rf.data[k]);
      }
      in.frame = kFrames + 1;
      try {
        (void)read_channel_data(dir_ / name, in);
        ADD_FAILURE() << "frame 4 of 3 read";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(": --frame 4 is not among its 3 frame(s)"), std::string::npos) << e.what();
      }
    }
  }

  // PICMUS IQ whose data/imag has fewer frames than data/real: refused whole, as when the array
  // is read whole, for one frame and for a batch.
  {
    io::Hdf5Array short_imag = imag;
    short_imag.dims = {2, 2, 3, 4};
    short_imag.values.resize(2 * 24);
    io::write_hdf5(dir_ / "picmus_bad.hdf5",
                   {real, short_imag, {g + "angles", "", {2}, {-0.1, 0.1}},
                    {g + "probe_geometry", "", {3, 3}, {-0.3e-3, 0, 0.3e-3, 0, 0, 0, 0, 0, 0}},
                    {g + "sampling_frequency", "", {1}, {20.832e6}}, {g + "sound_speed", "", {1}, {1540}},
                    {g + "initial_time", "", {1}, {1e-6}}, {g + "modulation_frequency", "", {1}, {5.208e6}}});
    for (bool all_frames : {false, true}) {
      ChannelInput in;
      in.layout = "frames,transmits,elements,samples";
      in.all_frames = all_frames;
      try {
        (void)read_channel_data(dir_ / "picmus_bad.hdf5", in);
        ADD_FAILURE() << "Q of 2 frames beside I of 3 read";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("picmus_bad.hdf5: PICMUS IQ data: data/imag is not shaped like data/real"),
                  std::string::npos)
            << e.what();
      }
    }
  }

  // Verasonics' RcvData{1} (int16 4 x 3 x 2, MATLAB's order) as 2 frames of 4 samples x 3
  // elements, from matio's v5 file (read whole) and its v7.3 file (each frame alone, found inside
  // the cell without reading it): the same values.
  for (const char* mat : {"matio_indexing_v5.mat", "matio_indexing_v73.mat"}) {
    SCOPED_TRACE(mat);
    const fs::path path = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat" / mat;
    for (bool all_frames : {false, true}) {
      ChannelInput in;
      in.var = "RcvData{1}";
      in.layout = "samples,elements,frames";
      in.all_frames = all_frames;
      ASSERT_EQ(count_frames(path, in), 2);
      for (int frame = 1; frame <= 2; ++frame) {
        in.frame = frame;
        FileGeometry geometry;
        const ChannelData rf = read_channel_data(path, in, 0, 0, &geometry);
        EXPECT_EQ(geometry.frames_held, std::string(mat).find("v73") != std::string::npos && !all_frames ? 1 : 2);
        ASSERT_EQ(rf.size(), 12u);
        for (int e = 0; e < 3; ++e)
          for (int s = 0; s < 4; ++s) EXPECT_EQ(rf.channel(0, e)[s], 12.0 * (frame - 1) + 4 * e + s - 12);
      }
    }
  }

  // Read alone, the last frames of an NPY cine past a whole read's 4 GiB (and past
  // kMostBytesOfFramesReadAtOnce as doubles): 100 000 frames of 2000 samples x 22 elements of
  // uint8 (4.4e9 bytes), sparse but for the last frame (so last here).
  constexpr std::size_t kLargeFrames = 100000, kFrameBytes = 2000 * 22;
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (100000, 2000, 22), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  const fs::path large = dir_ / "large.npy";
  io::write_file_atomic(large, std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xFF) +
                                   char(header.size() >> 8) + header);
  const std::uintmax_t data_offset = fs::file_size(large);
  fs::resize_file(large, data_offset + kLargeFrames * kFrameBytes);
  {
    std::fstream out(large, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(std::streamoff(data_offset + (kLargeFrames - 1) * kFrameBytes));
    std::string last(kFrameBytes, '\0');
    for (std::size_t k = 0; k < kFrameBytes; ++k) last[k] = char(k % 251);
    out.write(last.data(), std::streamsize(last.size()));
    ASSERT_TRUE(out.good());
  }
  struct stat st {};
  ASSERT_EQ(::stat(large.c_str(), &st), 0);
  if (std::uintmax_t(st.st_blocks) * 512 > (std::uintmax_t{1} << 30))
    GTEST_SKIP() << "the file system did not store the 4.4 GB file sparsely (" << st.st_blocks * 512 << " bytes)";
  ChannelInput in;
  in.layout = "frames,samples,elements";
  in.all_frames = true;
  ASSERT_EQ(count_frames(large, in), 100000);
  // --frame all from frame 99 999 on: a block of the two frames left (at most a GiB of doubles
  // would be 3050 of them), read once; the second frame is taken from it.
  for (int frame : {99999, 100000}) {
    in.frame = frame;
    FileGeometry geometry;
    const ChannelData rf = read_channel_data(large, in, 0, 0, &geometry);
    EXPECT_EQ(geometry.frames_held, 2);
    ASSERT_EQ(rf.samples, 2000);
    ASSERT_EQ(rf.elements, 22);
    for (int e = 0; e < 22; ++e)
      for (int s = 0; s < 2000; ++s)
        ASSERT_EQ(rf.channel(0, e)[s], frame == 99999 ? 0.0f : float((s * 22 + e) % 251)) << s << ", " << e;
  }
  in.all_frames = false;  // --frame N: that frame alone
  FileGeometry alone;
  EXPECT_EQ(read_channel_data(large, in, 0, 0, &alone).channel(0, 21)[1999], float((1999 * 22 + 21) % 251));
  EXPECT_EQ(alone.frames_held, 1);
  in.all_frames = true;
  in.layout = "samples,elements,frames";  // the same file, the frames axis elsewhere: a whole read, refused
  try {
    (void)read_channel_data(large, in);
    ADD_FAILURE() << "a 4.4 GB array read whole";
  } catch (const io::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(the input size limit)"), std::string::npos) << e.what();
  }
}


TEST_F(ReconDasInputFiles, NpyMatAndSourceTxtReadAlike) {
  std::vector<float> npy;  // [samples][elements][transmits]
  for (int s = 0; s < 4; ++s)
    for (int e = 0; e < 3; ++e)
      for (int t = 0; t < 2; ++t) npy.push_back(static_cast<float>(value(s, e, t)));
  const std::size_t shape[3] = {4, 3, 2};
  io::write_npy(dir_ / "rf.npy", io::DType::f32, shape, npy.data());
  expect_channels(read_channel_data(dir_ / "rf.npy", {}));

  io::MatArray m{"RF", "", {4, 3, 2}, {}};
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s) m.values.push_back(value(s, e, t));
  io::write_mat(dir_ / "rf.mat", {m}, true);
  ChannelInput in;
  in.var = "RF";
  expect_channels(read_channel_data(dir_ / "rf.mat", in));
  in.var = "nope";
  EXPECT_THROW(read_channel_data(dir_ / "rf.mat", in), Error);
  // --frame is a USTB file's: for the others it is refused, not ignored.
  for (const char* name : {"rf.mat", "rf.npy"}) {
    ChannelInput frame2;
    frame2.var = std::string(name) == "rf.mat" ? "RF" : "";
    frame2.frame = 2;
    try {
      read_channel_data(dir_ / name, frame2);
      ADD_FAILURE() << name << " accepted --frame 2";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(": --frame 2: the file holds one frame (--frame picks among a USTB UFF file's frames, or along a 'frames' axis that --layout names)"), std::string::npos) << e.what();
    }
  }

  std::vector<std::int32_t> txt;  // channel-major, transmit by transmit
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s) txt.push_back(static_cast<std::int32_t>(value(s, e, t)));
  io::write_source_txt(dir_ / "rf.txt", txt, 6, 4);
  ChannelInput t;
  t.samples = 4;
  expect_channels(read_channel_data(dir_ / "rf.txt", t, 3, 2));
  EXPECT_THROW(read_channel_data(dir_ / "rf.txt", t), Error);  // needs elements and transmits
  // --layout names a source.txt's axes in the order its values come, slowest first (it was
  // ignored, and the JSON recorded it): here samples-major, transmits fastest.
  std::vector<std::int32_t> by_sample;
  for (int s = 0; s < 4; ++s)
    for (int e = 0; e < 3; ++e)
      for (int tx = 0; tx < 2; ++tx) by_sample.push_back(static_cast<std::int32_t>(value(s, e, tx)));
  io::write_source_txt(dir_ / "by_sample.txt", by_sample, 6, 4);
  t.layout = "samples,elements,transmits";
  expect_channels(read_channel_data(dir_ / "by_sample.txt", t, 3, 2));
  t.layout = "transmits,elements,samples";  // the default, named
  expect_channels(read_channel_data(dir_ / "rf.txt", t, 3, 2));
  t.layout.clear();  // unnamed, it is what the frame JSON records (it said samples,elements,transmits)
  FileGeometry txt_geometry;
  expect_channels(read_channel_data(dir_ / "rf.txt", t, 3, 2, &txt_geometry));
  EXPECT_EQ(txt_geometry.layout, "transmits,elements,samples");
  t.layout = "samples,channels";
  try {
    (void)read_channel_data(dir_ / "rf.txt", t, 3, 2);
    ADD_FAILURE() << "an unknown axis was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown axis 'channels'"), std::string::npos) << e.what();
  }
  // An empty item (a doubled or trailing comma) is said as such: it was "names more than three axes".
  for (const char* layout : {"samples,,elements,transmits", "samples,elements,transmits,", "samples,,elements"}) {
    t.layout = layout;
    try {
      (void)read_channel_data(dir_ / "rf.txt", t, 3, 2);
      ADD_FAILURE() << "an empty axis was accepted: " << layout;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("' has an empty axis name"), std::string::npos) << e.what();
    }
  }
}

TEST_F(ReconDasInputFiles, Hdf5DatasetsAndPicmusGeometry) {
  // Any HDF5 dataset by path, C order, --layout as for NPY.
  io::Hdf5Array plain{"/acq/rf", "", {4, 3, 2}, {}};  // [samples][elements][transmits]
  for (int s = 0; s < 4; ++s)
    for (int e = 0; e < 3; ++e)
      for (int t = 0; t < 2; ++t) plain.values.push_back(value(s, e, t));
  io::write_hdf5(dir_ / "rf.h5", {plain});
  ChannelInput in;
  in.var = "/acq/rf";
  FileGeometry none;
  expect_channels(read_channel_data(dir_ / "rf.h5", in, 0, 0, &none));
  EXPECT_TRUE(none.source.empty());  // not a PICMUS file: no geometry

  // PICMUS: [angles][channels][samples], geometry beside it.
  const std::string g = "/US/US_DATASET0000/";
  io::Hdf5Array real{g + "data/real", "", {2, 3, 4}, {}};
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s) real.values.push_back(value(s, e, t));
  std::vector<io::Hdf5Array> picmus = {
      real,
      {g + "angles", "", {2}, {-0.1, 0.1}},
      {g + "probe_geometry", "", {3, 3}, {-0.3e-3, 0, 0.3e-3, 0, 0, 0, 0, 0, 0}},  // x row, y row, z row
      {g + "sampling_frequency", "", {1}, {20.832e6}},
      {g + "sound_speed", "", {1}, {1540}},
      {g + "initial_time", "", {1}, {1e-6}},
      {g + "modulation_frequency", "", {1}, {0}}};
  io::write_hdf5(dir_ / "picmus.hdf5", picmus);
  FileGeometry geometry;
  expect_channels(read_channel_data(dir_ / "picmus.hdf5", {}, 0, 0, &geometry));
  EXPECT_EQ(geometry.source, "PICMUS /US/US_DATASET0000");
  EXPECT_EQ(geometry.fs, 20.832e6);
  EXPECT_EQ(geometry.sound_speed, 1540);
  EXPECT_EQ(geometry.t0, 1e-6);
  EXPECT_EQ(geometry.angles, (std::vector<double>{-0.1, 0.1}));
  EXPECT_EQ(geometry.elements, 3);
  ASSERT_TRUE(geometry.pitch.has_value());
  EXPECT_NEAR(*geometry.pitch, 0.3e-3, 1e-15);
  EXPECT_EQ(geometry.time_zero, das::TimeZero::Center);
  EXPECT_EQ(geometry.layout, "transmits,elements,samples");

  // One angle, written from MATLAB, has lost its angle axis: [channels][samples] (it was read as
  // 3 transmits of 4 elements of 1 sample, and refused).
  std::vector<io::Hdf5Array> one_angle = picmus;
  one_angle[0].dims = {3, 4};
  one_angle[0].values.resize(12);  // angle 0's [channels][samples]
  one_angle[1] = {g + "angles", "", {1}, {-0.1}};
  io::write_hdf5(dir_ / "picmus_one_angle.hdf5", one_angle);
  FileGeometry one;
  const ChannelData single_angle = read_channel_data(dir_ / "picmus_one_angle.hdf5", {}, 0, 0, &one);
  EXPECT_EQ(one.layout, "elements,samples");
  ASSERT_EQ(single_angle.transmits, 1);
  ASSERT_EQ(single_angle.elements, 3);
  ASSERT_EQ(single_angle.samples, 4);
  for (int e = 0; e < 3; ++e)
    for (int k = 0; k < 4; ++k) EXPECT_EQ(single_angle.channel(0, e)[k], value(k, e, 0));

  // Baseband IQ: Q read beside I, arranged alike, with the modulation frequency and the clock.
  std::vector<io::Hdf5Array> with_q = picmus;
  with_q.back().values = {5.208e6};
  io::Hdf5Array imag = real;
  imag.path = g + "data/imag";
  for (double& v : imag.values) v = -v;
  with_q.push_back(imag);
  io::write_hdf5(dir_ / "picmus_iq.hdf5", with_q);
  const ChannelData iq_data = read_channel_data(dir_ / "picmus_iq.hdf5", {}, 0, 0, &geometry);
  expect_channels(iq_data);
  ASSERT_TRUE(iq_data.is_iq());
  for (std::size_t k = 0; k < iq_data.size(); ++k) EXPECT_EQ(iq_data.imag[k], -iq_data.data[k]);
  EXPECT_EQ(iq_data.modulation_frequency, 5.208e6);
  EXPECT_EQ(iq_data.iq_time0, 1e-6);
  EXPECT_EQ(geometry.modulation_frequency, 5.208e6);

  // Arrays this project cannot describe are refused, naming the file.
  const auto expect_refused = [&](std::vector<io::Hdf5Array> arrays, const std::string& fragment) {
    io::write_hdf5(dir_ / "bad.hdf5", arrays);
    FileGeometry ignored;
    try {
      read_channel_data(dir_ / "bad.hdf5", {}, 0, 0, &ignored);
      ADD_FAILURE() << fragment << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find((dir_ / "bad.hdf5").string() + ": " + fragment), std::string::npos)
          << e.what();
    }
  };
  // IQ without its Q part is refused.
  std::vector<io::Hdf5Array> iq = picmus;
  iq.back().values = {5.208e6};
  expect_refused(iq, "dataset '/US/US_DATASET0000/data/imag' does not exist");
  std::vector<io::Hdf5Array> curved = picmus;
  curved[2].values = {-0.3e-3, 0, 0.3e-3, 0, 0, 0, 0.1e-3, 0, 0.1e-3};  // z != 0 at the ends
  expect_refused(curved, "PICMUS probe_geometry is not a uniform linear array centred on x = 0 at z = 0");
  std::vector<io::Hdf5Array> flat = picmus;
  flat[2].dims = {9};
  expect_refused(flat, "PICMUS probe_geometry should be 3 x N or N x 3");
  std::vector<io::Hdf5Array> single = picmus;
  single[2] = {g + "probe_geometry", "", {3, 1}, {0, 0, 0}};
  expect_refused(single, "PICMUS probe_geometry holds fewer than 2 elements");
  std::vector<io::Hdf5Array> two_speeds = picmus;
  two_speeds[4].dims = {2};
  two_speeds[4].values = {1540, 1480};
  expect_refused(two_speeds, "PICMUS '/US/US_DATASET0000/sound_speed' should hold one number");
  // Written by write_picmus, read back with the same geometry (the round trip simulate relies on).
  Acquisition acq;
  acq.probe = {3, 0.3e-3};
  acq.fs = 20.832e6;
  acq.t0 = 1e-6;
  acq.angles = {-0.1, 0.1};
  acq.time_zero = das::TimeZero::Center;
  const ChannelData rf = read_channel_data(dir_ / "picmus.hdf5", {});
  write_picmus(dir_ / "written.hdf5", rf, acq);
  FileGeometry back;
  expect_channels(read_channel_data(dir_ / "written.hdf5", {}, 0, 0, &back));
  EXPECT_EQ(back.fs, acq.fs);
  EXPECT_EQ(back.t0, acq.t0);
  EXPECT_EQ(back.angles, acq.angles);
  EXPECT_EQ(back.elements, 3);
  acq.time_zero = das::TimeZero::FirstElement;
  EXPECT_THROW(write_picmus(dir_ / "wrong.hdf5", rf, acq), Error);
}

/// A minimal USTB file written with write_hdf5: uff.channel_data at `group` holding value(s, e, t)
/// as {waves, channels, samples}, plane waves at `azimuths` (a wave per entry), probe N and pitch.
struct UstbFile {
  std::string group = "/channel_data";
  std::vector<double> azimuths = {-0.1, 0.1};
  std::vector<double> delays = {2e-7, 2e-7};
  std::vector<double> elevations = {0, 0};
  std::vector<double> wavefronts;  ///< empty: none stored (MATLAB's writer), else one per wave
  std::vector<double> distances = {INFINITY, INFINITY};
  std::size_t data_waves = 2;
  double modulation = 0;
  bool probe = true;
  double probe_n = 3;
  bool with_data = true;
  bool with_sequence = true;
  std::vector<std::size_t> leading_dims;   ///< prepended to data's {waves, channels, samples}
  bool complex_data = false;               ///< data/real and data/imag instead of data
  std::vector<std::size_t> imag_dims;      ///< data/imag's dims when not data/real's
  std::vector<double> wave_speeds;         ///< each wave's sound_speed; empty: none stored
  std::vector<std::string> wave_names = {"sequence_0001", "sequence_0002"};

  void write(const fs::path& path) const {
    std::vector<io::Hdf5Array> arrays;
    std::vector<io::Hdf5Group> groups;
    add_to(arrays, groups);
    io::write_hdf5(path, arrays, groups);
  }
  void add_to(std::vector<io::Hdf5Array>& arrays, std::vector<io::Hdf5Group>& groups) const {
    const std::string& g = group;
    io::Hdf5Array data{g + "/data", "", leading_dims, {}};
    data.dims.insert(data.dims.end(), {data_waves, 3, 4});
    std::size_t repeats = 1;
    for (std::size_t d : leading_dims) repeats *= d;
    for (std::size_t r = 0; r < repeats; ++r)
      for (std::size_t t = 0; t < data_waves; ++t)
        for (int e = 0; e < 3; ++e)
          for (int s = 0; s < 4; ++s) data.values.push_back(value(s, e, int(t)));
    if (complex_data) {
      io::Hdf5Array imag = data;
      imag.path = g + "/data/imag";
      for (double& v : imag.values) v = -2 * v;  // a part of its own: -2 x the real one
      if (!imag_dims.empty()) {
        imag.dims = imag_dims;
        std::size_t count = 1;
        for (std::size_t d : imag_dims) count *= d;
        imag.values.assign(count, 0.5);
      }
      data.path = g + "/data/real";
      arrays.push_back(std::move(imag));
    }
    if (with_data) arrays.push_back(std::move(data));
    arrays.insert(arrays.end(), {{g + "/sampling_frequency", "", {1, 1}, {20e6}},
                                 {g + "/initial_time", "", {1, 1}, {1e-6}},
                                 {g + "/sound_speed", "", {1, 1}, {1540}},
                                 {g + "/modulation_frequency", "", {1, 1}, {modulation}}});
    if (probe) {
      arrays.push_back({g + "/probe/N", "", {1, 1}, {probe_n}});
      arrays.push_back({g + "/probe/pitch", "", {1, 1}, {0.3e-3}});
    }
    groups.push_back({g, {{"class", "uff.channel_data", {}}}});
    if (!with_sequence) return;
    groups.push_back({g + "/sequence", {{"class", "uff.wave", {}}}});
    for (std::size_t k = 0; k < wave_names.size(); ++k) {
      const std::string w = g + "/sequence/" + wave_names[k];
      arrays.push_back({w + "/source/distance", "", {1, 1}, {distances[k]}});
      arrays.push_back({w + "/source/azimuth", "", {1, 1}, {azimuths[k]}});
      arrays.push_back({w + "/source/elevation", "", {1, 1}, {elevations[k]}});
      arrays.push_back({w + "/delay", "", {1, 1}, {delays[k]}});
      if (!wavefronts.empty()) arrays.push_back({w + "/wavefront", "", {1, 1}, {wavefronts[k]}});
      if (!wave_speeds.empty()) arrays.push_back({w + "/sound_speed", "", {1, 1}, {wave_speeds[k]}});
      groups.push_back({w, {{"class", "uff.wave", {}}}});
    }
  }
};

/// Writes `bad` to `path` and expects reading it to fail with "<path>: <fragment>" in the message.
void expect_ustb_refused(const fs::path& path, const UstbFile& bad, const std::string& fragment,
                         const ChannelInput& in) {
  bad.write(path);
  FileGeometry ignored;
  try {
    read_channel_data(path, in, 0, 0, &ignored);
    ADD_FAILURE() << fragment << ": accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ": " + fragment), std::string::npos) << e.what();
  }
}

TEST_F(ReconDasInputFiles, UstbChannelDataAndItsRefusals) {
  UstbFile file;
  file.write(dir_ / "ok.uff");
  FileGeometry geometry;
  expect_channels(read_channel_data(dir_ / "ok.uff", {}, 0, 0, &geometry));
  EXPECT_EQ(geometry.source, "USTB UFF /channel_data");
  EXPECT_EQ(geometry.fs, 20e6);
  EXPECT_EQ(geometry.sound_speed, 1540);
  EXPECT_EQ(geometry.t0, 1e-6);  // initial_time; the waves' delays beside it (below)
  EXPECT_EQ(geometry.angles, (std::vector<double>{-0.1, 0.1}));
  EXPECT_EQ(geometry.elements, 3);  // from probe/N and probe/pitch (no geometry dataset)
  EXPECT_EQ(geometry.pitch, 0.3e-3);
  EXPECT_EQ(geometry.time_zero, das::TimeZero::Center);
  EXPECT_EQ(geometry.frames, 1);
  EXPECT_FALSE(geometry.transmit_sound_speed.has_value());
  // pyuff stores the wavefront: 0 = plane, whatever the source distance says.
  UstbFile pyuff = file;
  pyuff.wavefronts = {0, 0};
  pyuff.distances = {0, 0};
  pyuff.write(dir_ / "pyuff.uff");
  expect_channels(read_channel_data(dir_ / "pyuff.uff", {}, 0, 0, &geometry));

  const auto expect_refused = [&](const UstbFile& bad, const std::string& fragment, ChannelInput in = {}) {
    expect_ustb_refused(dir_ / "bad.uff", bad, fragment, in);
  };
  UstbFile gap = file;
  gap.wave_names = {"sequence_0001", "sequence_0003"};
  expect_refused(gap, "USTB /channel_data: its sequence lacks sequence/sequence_0002");
  UstbFile fewer = file;
  fewer.data_waves = 1;
  expect_refused(fewer, "USTB /channel_data: data are 1 waves x 3 channels but the file describes 2 waves and 3 elements");
  EXPECT_EQ(geometry.model, Model::PlaneWave);
  EXPECT_EQ(geometry.wave_delays, (std::vector<double>{2e-7, 2e-7}));
  EXPECT_TRUE(geometry.source_distances.empty());
  UstbFile delays = file;  // waves recorded from different moments: read, aligned by reconstruct_das
  delays.delays = {2e-7, 3e-7};
  delays.write(dir_ / "delays.uff");
  expect_channels(read_channel_data(dir_ / "delays.uff", {}, 0, 0, &geometry));
  EXPECT_EQ(geometry.wave_delays, (std::vector<double>{2e-7, 3e-7}));
  // Transmits are padded to the latest start: starts further apart than 4 records (here 16 samples
  // at 20 MHz) are a wrong delay, refused before any padding. A delay of -5 s padded every channel
  // by 1e8 samples (14 GB and growing), one of 1000 s passed int's range.
  DasSetup setup;
  setup.acquisition.model = Model::PlaneWave;
  EXPECT_NO_THROW((void)prepare_das(dir_ / "delays.uff", setup, 1));  // 2 samples apart
  for (const auto& [late, words] : std::vector<std::pair<double, std::string>>{
           {2e-7 + 15.5 / 20e6, ""},  // 15.5 samples apart: refused only past 16
           {2e-7 + 17 / 20e6, "start up to 8.5e-07 s apart (17 samples at 2e+07 Hz), more than 4 times the 4 samples"},
           {-5.0, "start up to 5 s apart (1e+08 samples at 2e+07 Hz)"},
           {1000.0, "start up to 1000 s apart (2e+10 samples at 2e+07 Hz)"}}) {
    SCOPED_TRACE(late);
    UstbFile far = file;
    far.delays = {2e-7, late};
    far.write(dir_ / "far.uff");
    if (words.empty()) {
      EXPECT_NO_THROW((void)prepare_das(dir_ / "far.uff", setup, 1));
    } else {
      try {
        (void)prepare_das(dir_ / "far.uff", setup, 1);
        ADD_FAILURE() << "accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("the file's wave delays"), std::string::npos) << e.what();
      }
    }
  }
  // Synthetic aperture: a spherical wave from each element (x = -0.3, 0, +0.3 mm here).
  UstbFile sa = file;
  sa.wave_names = {"sequence_0001", "sequence_0002", "sequence_0003"};
  sa.data_waves = 3;
  sa.distances = {0.3e-3, 0, 0.3e-3};
  sa.azimuths = {-M_PI / 2, 0, M_PI / 2};
  sa.delays = {0, 0, 0};
  sa.elevations = {0, 0, 0};
  sa.write(dir_ / "sa.uff");
  const ChannelData sa_data = read_channel_data(dir_ / "sa.uff", {}, 0, 0, &geometry);
  EXPECT_EQ(sa_data.transmits, 3);
  EXPECT_EQ(geometry.model, Model::SyntheticAperture);
  EXPECT_EQ(geometry.tx_elements, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(geometry.source_distances, (std::vector<double>{0.3e-3, 0, 0.3e-3}));
  EXPECT_FALSE(geometry.time_zero.has_value());
  UstbFile mixed = sa;
  mixed.distances = {0.3e-3, INFINITY, 0.3e-3};
  expect_refused(mixed, "USTB /channel_data: its sequence mixes plane waves and spherical waves");
  UstbFile elevated = file;
  elevated.elevations = {0, 0.05};
  expect_refused(elevated, "USTB /channel_data: wave 2 (sequence/sequence_0002) is steered in elevation");
  // Focused waves: spherical waves converging on focal points in front of the array, read with
  // the focal points on USTB's clock.
  UstbFile focused = file;
  focused.wavefronts = {1, 1};
  focused.distances = {20e-3, 20e-3};
  focused.write(dir_ / "fw.uff");
  expect_channels(read_channel_data(dir_ / "fw.uff", {}, 0, 0, &geometry));
  EXPECT_EQ(geometry.model, Model::FocusedWave);
  ASSERT_EQ(geometry.source_x.size(), 2u);
  EXPECT_NEAR(geometry.source_x[0], 20e-3 * std::sin(-0.1), 1e-12);
  EXPECT_NEAR(geometry.source_z[0], 20e-3 * std::cos(-0.1), 1e-12);
  EXPECT_NEAR(geometry.source_z[1], 20e-3 * std::cos(0.1), 1e-12);
  EXPECT_EQ(geometry.time_zero, das::TimeZero::Center);
  EXPECT_TRUE(geometry.source_distances.empty());
  UstbFile focused_and_diverging = focused;
  focused_and_diverging.azimuths = {-0.1, M_PI - 0.1};
  expect_refused(focused_and_diverging,
                 "USTB /channel_data: its sequence mixes focused waves with waves from sources on or behind the array");
  UstbFile negative = focused;
  negative.distances = {20e-3, -1e-3};
  expect_refused(negative, "USTB /channel_data: wave 2 (sequence/sequence_0002): its source distance -0.001 m is "
                           "not a distance");
  // Diverging waves: spherical waves from behind the array (azimuth beyond 90 degrees), read with
  // their virtual sources on USTB's clock (time zero at the origin crossing).
  UstbFile diverging = file;
  diverging.distances = {10e-3, 10e-3};
  diverging.azimuths = {M_PI - 0.1, -M_PI + 0.2};
  diverging.write(dir_ / "dw.uff");
  expect_channels(read_channel_data(dir_ / "dw.uff", {}, 0, 0, &geometry));
  EXPECT_EQ(geometry.model, Model::DivergingWave);
  ASSERT_EQ(geometry.source_x.size(), 2u);
  EXPECT_NEAR(geometry.source_x[0], 10e-3 * std::sin(M_PI - 0.1), 1e-12);
  EXPECT_NEAR(geometry.source_z[0], -10e-3 * std::cos(0.1), 1e-12);
  EXPECT_NEAR(geometry.source_x[1], -10e-3 * std::sin(0.2), 1e-12);
  EXPECT_NEAR(geometry.source_z[1], -10e-3 * std::cos(0.2), 1e-12);
  EXPECT_EQ(geometry.time_zero, das::TimeZero::Center);
  EXPECT_TRUE(geometry.source_distances.empty());  // no firing-time shift: the clock is the origin's
  EXPECT_TRUE(geometry.tx_elements.empty());
  EXPECT_EQ(geometry.wave_delays, (std::vector<double>{2e-7, 2e-7}));
  // A source straight behind the array (azimuth pi): sin(pi) is 1.2e-16 in double, which put the
  // source at x = 1.2e-18 m (info showed 1.22465e-15 mm). It is at x = 0 exactly.
  UstbFile straight_behind = diverging;
  straight_behind.azimuths = {M_PI, -M_PI};
  straight_behind.write(dir_ / "dw_centre.uff");
  expect_channels(read_channel_data(dir_ / "dw_centre.uff", {}, 0, 0, &geometry));
  EXPECT_EQ(geometry.model, Model::DivergingWave);
  EXPECT_EQ(geometry.source_x, (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(geometry.source_z, (std::vector<double>{-10e-3, -10e-3}));
  UstbFile real_iq = file;
  real_iq.modulation = 5e6;
  expect_refused(real_iq, "USTB /channel_data: IQ data (modulation frequency 5e+06 Hz) without an imaginary part");
  UstbFile no_probe = file;
  no_probe.probe = false;
  expect_refused(no_probe, "USTB /channel_data has no probe geometry");
  ChannelInput second_frame;
  second_frame.frame = 2;
  expect_refused(file, "USTB /channel_data: --frame 2 is not among its 1 frame(s)", second_frame);

  // Two channel_data objects: --var chooses (with or without the leading '/').
  UstbFile other = file;
  other.group = "/second";
  other.azimuths = {0.2, 0.3};
  std::vector<io::Hdf5Array> arrays;
  std::vector<io::Hdf5Group> groups;
  file.add_to(arrays, groups);
  other.add_to(arrays, groups);
  io::write_hdf5(dir_ / "two.uff", arrays, groups);
  try {
    read_channel_data(dir_ / "two.uff", {}, 0, 0, &geometry);
    ADD_FAILURE() << "two channel_data objects and no --var: accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("name the USTB channel data to read with --var (uff.channel_data here: "
                                         "/channel_data, /second)"),
              std::string::npos)
        << e.what();
  }
  ChannelInput second;
  second.var = "second";
  expect_channels(read_channel_data(dir_ / "two.uff", second, 0, 0, &geometry));
  EXPECT_EQ(geometry.source, "USTB UFF /second");
  EXPECT_EQ(geometry.angles, (std::vector<double>{0.2, 0.3}));
}

TEST_F(ReconDasInputFiles, UstbMalformedObjectsAreRefusedByName) {
  const UstbFile file;
  const auto expect_refused = [&](const UstbFile& bad, const std::string& fragment, ChannelInput in = {}) {
    expect_ustb_refused(dir_ / "bad.uff", bad, "USTB /channel_data" + fragment, in);
  };
  UstbFile no_sequence = file;
  no_sequence.with_sequence = false;
  expect_refused(no_sequence, " has no sequence (its transmitted waves)");
  UstbFile no_data = file;
  no_data.with_data = false;
  expect_refused(no_data, " has no data");
  ChannelInput layout;
  layout.layout = "samples,elements,transmits";
  expect_refused(file, ": --layout does not apply", layout);
  UstbFile five_d = file;
  five_d.leading_dims = {1, 1};
  expect_refused(five_d, ": data are 5-D; expected up to 4-D");
  UstbFile fractional_n = file;
  fractional_n.probe_n = 2.5;
  expect_refused(fractional_n, ": probe N = 2.5, pitch = 0.0003 make no array");
  UstbFile no_elements = file;
  no_elements.probe_n = 0;
  expect_refused(no_elements, ": probe N = 0, pitch = 0.0003 make no array");
  UstbFile sideways = file;
  sideways.azimuths = {-0.1, M_PI / 2};
  expect_refused(sideways, ": wave 2 (sequence/sequence_0002): its azimuth 1.5708 rad is not a steering angle");
  UstbFile nan_azimuth = file;
  nan_azimuth.azimuths = {NAN, 0.1};
  expect_refused(nan_azimuth, ": '/channel_data/sequence/sequence_0001/source/azimuth' should hold one number");
  UstbFile endless_delay = file;
  endless_delay.delays = {2e-7, INFINITY};
  expect_refused(endless_delay, ": wave 2 (sequence/sequence_0002): its delay is not finite");
  UstbFile two_speeds = file;
  two_speeds.wave_speeds = {1540, 1500};
  expect_refused(two_speeds, ": wave 2 (sequence/sequence_0002): its sound speed differs from the first wave's");
  UstbFile endless_modulation = file;
  endless_modulation.modulation = INFINITY;
  expect_refused(endless_modulation, ": its modulation_frequency is not finite");
  UstbFile iq = file;
  iq.complex_data = true;
  iq.modulation = 5e6;
  UstbFile misshapen_iq = iq;
  misshapen_iq.imag_dims = {2, 3, 5};
  expect_refused(misshapen_iq, ": data/imag is not shaped like data/real");

  // The well-formed neighbours of those files read: IQ with its imaginary part, all waves at one
  // transmit speed that differs from the medium's, and a second frame.
  iq.write(dir_ / "iq.uff");
  FileGeometry geometry;
  const ChannelData iq_data = read_channel_data(dir_ / "iq.uff", {}, 0, 0, &geometry);
  expect_channels(iq_data);
  EXPECT_TRUE(iq_data.is_iq());
  EXPECT_EQ(iq_data.modulation_frequency, 5e6);
  EXPECT_EQ(iq_data.iq_time0, 1e-6);
  ASSERT_EQ(iq_data.imag.size(), iq_data.data.size());
  for (std::size_t k = 0; k < iq_data.size(); ++k)  // the fixture writes -2 x the real part
    ASSERT_EQ(iq_data.imag[k], -2 * iq_data.data[k]) << k;
  UstbFile slower = file;
  slower.wave_speeds = {1500, 1500};
  slower.write(dir_ / "slower.uff");
  expect_channels(read_channel_data(dir_ / "slower.uff", {}, 0, 0, &geometry));
  EXPECT_EQ(geometry.transmit_sound_speed, 1500.0);
  EXPECT_EQ(geometry.sound_speed, 1540.0);
  UstbFile two_frames = file;
  two_frames.leading_dims = {2};
  ChannelInput frame2;
  frame2.frame = 2;
  two_frames.write(dir_ / "frames.uff");
  expect_channels(read_channel_data(dir_ / "frames.uff", frame2, 0, 0, &geometry));
  EXPECT_EQ(geometry.frames, 2);
  EXPECT_EQ(geometry.frame, 2);
  ChannelInput frame3;
  frame3.frame = 3;
  expect_refused(two_frames, ": --frame 3 is not among its 2 frame(s)", frame3);
  // count_frames (for --frame all) from the listing alone: 2 here, 1 for a file of one frame (its
  // frame axis dropped, as MATLAB writes it) and for any other format.
  EXPECT_EQ(count_frames(dir_ / "frames.uff", {}), 2);
  file.write(dir_ / "one_frame.uff");
  EXPECT_EQ(count_frames(dir_ / "one_frame.uff", {}), 1);
  const std::vector<float> ones(24, 1.0f);
  const std::vector<std::size_t> plain_shape = {4, 3, 2};
  io::write_npy(dir_ / "plain.npy", io::DType::f32, plain_shape, ones.data());
  EXPECT_EQ(count_frames(dir_ / "plain.npy", {}), 1);
  // A file claiming more frames than a file may hold here is refused before anything is read.
  UstbFile many = file;
  many.leading_dims = {100001};
  expect_refused(many, ": its data claim 100001 frames, more than the 100000 a file may hold here");
  many.write(dir_ / "many.uff");
  EXPECT_THROW(count_frames(dir_ / "many.uff", {}), Error);
  // At the limit a file is taken, but --frame all stops at a million frames over a whole batch.
  many.leading_dims = {100000};
  many.write(dir_ / "at_limit.uff");
  EXPECT_EQ(count_frames(dir_ / "at_limit.uff", {}), 100000);
  ChannelInput all;
  all.all_frames = true;
  EXPECT_EQ(expand_frames(std::vector<fs::path>(10, dir_ / "at_limit.uff"), all).size(), 1000000u);
  try {
    expand_frames(std::vector<fs::path>(11, dir_ / "at_limit.uff"), all);
    ADD_FAILURE() << "11 x 100000 frames accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--frame all: the inputs hold more than 1000000 frames in all"),
              std::string::npos) << e.what();
  }
}

// --channel-map: each element is read from the array's channel the map names (from 1), listed
// or read from a variable of the same MAT or HDF5 file (Verasonics' Trans.Connector); channels
// left out are not read. Element e's samples are compared with the channel's own values.
TEST_F(ReconDasInputFiles, AChannelMapReadsEachElementFromItsChannel) {
  std::vector<float> npy;  // [samples][elements][transmits]: value(s, e, t)
  for (int s = 0; s < 4; ++s)
    for (int e = 0; e < 3; ++e)
      for (int t = 0; t < 2; ++t) npy.push_back(static_cast<float>(value(s, e, t)));
  const std::size_t shape[3] = {4, 3, 2};
  io::write_npy(dir_ / "rf.npy", io::DType::f32, shape, npy.data());
  io::MatArray m{"RF", "", {4, 3, 2}, {}};
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < 4; ++s) m.values.push_back(value(s, e, t));
  io::write_mat(dir_ / "rf.mat", {m,
                                  {"Connector", "", {3, 1}, {2, 3, 1}},
                                  {"Row", "", {1, 2}, {3, 2}},
                                  {"Rounded", "", {2, 1}, {1, 3.0000000000000013}},
                                  {"Big", "", {65537, 1}, std::vector<double>(65537, 1.0)}});
  io::write_hdf5(dir_ / "rf.h5", {{"/rf", "", {4, 3, 2}, std::vector<double>(npy.begin(), npy.end())},
                                  {"/Trans/Connector", "", {1, 3}, {3, 1, 2}}});
  struct Case {
    const char* file;
    const char* var;
    const char* map;
    std::vector<int> channels;  // from 1
  };
  for (const Case& c : {Case{"rf.npy", "", "3:1", {3, 2, 1}}, Case{"rf.npy", "", "2", {2}},
                        Case{"rf.npy", "", " 1, 3", {1, 3}}, Case{"rf.npy", "", "2:3,1", {2, 3, 1}},
                        Case{"rf.mat", "RF", "Connector", {2, 3, 1}}, Case{"rf.mat", "RF", " Row ", {3, 2}},
                        Case{"rf.h5", "/rf", "/Trans/Connector", {3, 1, 2}},
                        Case{"rf.h5", "/rf", "Trans/Connector", {3, 1, 2}}}) {
    SCOPED_TRACE(std::string(c.file) + " --channel-map " + c.map);
    ChannelInput in;
    in.var = c.var;
    in.channel_map = c.map;
    FileGeometry g;
    const ChannelData rf = read_channel_data(dir_ / c.file, in, 0, 0, &g);
    EXPECT_EQ(g.channel_map, c.channels);
    EXPECT_EQ(g.array_channels, 3);
    ASSERT_EQ(rf.elements, static_cast<int>(c.channels.size()));
    ASSERT_EQ(rf.samples, 4);
    ASSERT_EQ(rf.transmits, 2);
    ASSERT_EQ(rf.data.size(), rf.size());
    for (int t = 0; t < 2; ++t)
      for (int e = 0; e < rf.elements; ++e)
        for (int s = 0; s < 4; ++s) EXPECT_EQ(rf.channel(t, e)[s], value(s, c.channels[std::size_t(e)] - 1, t));
  }
  {  // without a map: the array's channels, and no map said
    FileGeometry g;
    expect_channels(read_channel_data(dir_ / "rf.npy", {}, 0, 0, &g));
    EXPECT_TRUE(g.channel_map.empty());
    EXPECT_EQ(g.array_channels, 0);
  }
  // Verasonics' RcvData{1} inside a cell, in matio's v5 and v7.3 files (int16 4 x 3 x 2: 2 frames
  // of 4 samples x 3 channels, value 12 f + 4 c + s - 12 from 0), mapped by vectors of the same
  // file: SC(2).c{1} = 2 (one element, channel 2) and C{1} = [1 2 3]; the others are refused.
  for (const char* mat : {"matio_indexing_v5.mat", "matio_indexing_v73.mat"}) {
    SCOPED_TRACE(mat);
    const fs::path path = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/mat" / mat;
    ChannelInput in;
    in.var = "RcvData{1}";
    in.layout = "samples,elements,frames";
    in.all_frames = true;
    for (const auto& [map, channels] : {std::pair<const char*, std::vector<int>>{"SC(2).c{1}", {2}},
                                        std::pair<const char*, std::vector<int>>{"C{1}", {1, 2, 3}}}) {
      in.channel_map = map;
      for (int frame = 1; frame <= 2; ++frame) {
        in.frame = frame;
        FileGeometry g;
        const ChannelData rf = read_channel_data(path, in, 0, 0, &g);
        EXPECT_EQ(g.channel_map, channels) << map;
        ASSERT_EQ(rf.elements, static_cast<int>(channels.size())) << map;
        for (int e = 0; e < rf.elements; ++e)
          for (int s = 0; s < 4; ++s)
            EXPECT_EQ(rf.channel(0, e)[s], 12.0 * (frame - 1) + 4 * (channels[std::size_t(e)] - 1) + s - 12) << map;
      }
    }
    in.frame = 1;
    for (const auto& [map, why] : std::vector<std::pair<std::string, std::string>>{
             {"P.rx(1).data", ": --channel-map P.rx(1).data: channel 1 is listed for elements 1 and 2: each element is "
                              "read from a channel of its own"},
             {"P.c{1}", ": --channel-map reads element 1 from channel 7, but the array holds 3 channels"},
             {"P.rx(2).data", ": --channel-map P.rx(2).data: the array is not a vector"},
             {"C{4}", ": --channel-map C{4}: the array is empty"},
             {"P.fs", ": --channel-map P.fs: element 1's channel 2e+07 is not a channel number from 1 to 65536"},
             {"C{2}", ": --channel-map C{2}: "},      // text, refused by the reader
             {"P.nope", ": --channel-map P.nope: "},  // no such field
             {"RcvData{1}", ": --channel-map RcvData{1}: the array is not a vector"}}) {
      in.channel_map = map;
      const std::string error = error_of([&] { (void)read_channel_data(path, in); });
      EXPECT_NE(error.find(why), std::string::npos) << map << ": " << error;
      EXPECT_EQ(error_of([&] { (void)read_channel_data(path, in); }), error) << map;  // refused alike again
    }
  }
  // Synthetic aperture's one transmit per element counts the map's elements: 2 transmits of 4
  // samples one after another in a (transmits,samples) axis of 8 rows (C order), 3 channels.
  std::vector<float> stacked;  // [rows][channels]: row t * 4 + s holds value(s, channel, t)
  for (int t = 0; t < 2; ++t)
    for (int s = 0; s < 4; ++s)
      for (int e = 0; e < 3; ++e) stacked.push_back(static_cast<float>(value(s, e, t)));
  const std::size_t rows_shape[2] = {8, 3};
  io::write_npy(dir_ / "stacked.npy", io::DType::f32, rows_shape, stacked.data());
  {
    ChannelInput in;
    in.layout = "(transmits,samples),elements";
    in.samples = 4;
    in.channel_map = "3,1";
    const ChannelData rf = read_channel_data(dir_ / "stacked.npy", in, 0, kOneTransmitPerElement);
    ASSERT_EQ(rf.transmits, 2);
    ASSERT_EQ(rf.elements, 2);
    for (int t = 0; t < 2; ++t)
      for (int s = 0; s < 4; ++s) {
        EXPECT_EQ(rf.channel(t, 0)[s], value(s, 2, t));
        EXPECT_EQ(rf.channel(t, 1)[s], value(s, 0, t));
      }
  }
  // Synthetic aperture's transmits counted by the map for a cine read a block of frames at a
  // time too (frames-first NPY: the block reads plan the axis; they counted the array's 3
  // channels as transmits, which 8 rows cannot hold, and refused it).
  std::vector<float> stacked_cine;  // [frames][rows][channels]: frame f adds 1000 f
  for (int f = 0; f < 2; ++f)
    for (float v : stacked) stacked_cine.push_back(v + 1000.0f * f);
  const std::size_t cine_shape[3] = {2, 8, 3};
  io::write_npy(dir_ / "stacked_cine.npy", io::DType::f32, cine_shape, stacked_cine.data());
  for (bool all_frames : {false, true}) {
    ChannelInput in;
    in.layout = "frames,(transmits,samples),elements";
    in.samples = 4;
    in.channel_map = "3,1";
    in.all_frames = all_frames;
    for (int frame = 1; frame <= 2; ++frame) {
      in.frame = frame;
      FileGeometry g;
      const ChannelData rf = read_channel_data(dir_ / "stacked_cine.npy", in, 0, kOneTransmitPerElement, &g);
      EXPECT_EQ(g.frames_held, all_frames ? 2 : 1);
      ASSERT_EQ(rf.transmits, 2);
      ASSERT_EQ(rf.elements, 2);
      for (int t = 0; t < 2; ++t)
        for (int s = 0; s < 4; ++s) {
          EXPECT_EQ(rf.channel(t, 0)[s], value(s, 2, t) + 1000.0 * (frame - 1));
          EXPECT_EQ(rf.channel(t, 1)[s], value(s, 0, t) + 1000.0 * (frame - 1));
        }
    }
  }
  // Channels the map leaves out are not read: a NaN in one is no refusal; one in a mapped channel
  // is said as the element's, with its channel.
  {
    std::vector<float> holed = npy;  // [samples][elements][transmits]
    holed[(2 * 3 + 1) * 2 + 0] = std::nanf("");  // sample 2 of channel 2 (from 1), transmit 0
    io::write_npy(dir_ / "holed.npy", io::DType::f32, shape, holed.data());
    ChannelInput in;
    in.channel_map = "3,1";
    const ChannelData rf = read_channel_data(dir_ / "holed.npy", in);
    EXPECT_EQ(rf.channel(1, 1)[3], value(3, 0, 1));
    in.channel_map = "1,2";
    EXPECT_NE(error_of([&] { (void)read_channel_data(dir_ / "holed.npy", in); })
                  .find("1 of 16 samples are not finite (NaN, infinite, or past float's range); the first is sample 2 "
                        "of element 1 (the array's channel 2, from 1) in transmit 0 (0-based)"),
              std::string::npos);
  }
  // A value a rounding away from a whole number is shown with every digit; a variable too large
  // for a map is refused before it is read, said once.
  {
    ChannelInput in;
    in.var = "RF";
    in.channel_map = "Rounded";
    EXPECT_NE(error_of([&] { (void)read_channel_data(dir_ / "rf.mat", in); })
                  .find("rf.mat: --channel-map Rounded: element 2's channel 3.0000000000000013 is not a whole number"),
              std::string::npos);
    in.channel_map = "Big";
    const std::string big = error_of([&] { (void)read_channel_data(dir_ / "rf.mat", in); });
    EXPECT_NE(big.find("rf.mat: --channel-map Big: holds more than 65536 values"), std::string::npos) << big;
    EXPECT_EQ(big.find("--channel-map Big: --channel-map"), std::string::npos) << big;
    // A named map's count against the acquisition's elements (--elements), said as such before the
    // array's axes are counted.
    in.channel_map = "Connector";
    EXPECT_NE(error_of([&] { (void)read_channel_data(dir_ / "rf.mat", in, 2, 2); })
                  .find("rf.mat: --channel-map Connector lists 3 element(s) but --elements says 2"),
              std::string::npos);
  }
  // Refused: a name for an NPY file, channels past the array's, a source.txt's channels.
  ChannelInput in;
  in.channel_map = "Trans.Connector";
  EXPECT_NE(error_of([&] { (void)read_channel_data(dir_ / "rf.npy", in); })
                .find("rf.npy: --channel-map Trans.Connector: a name is read from a MAT or HDF5 input; list the "
                      "channels instead"),
            std::string::npos);
  in.channel_map = "1,4";
  EXPECT_NE(error_of([&] { (void)read_channel_data(dir_ / "rf.npy", in); })
                .find("rf.npy: --channel-map reads element 2 from channel 4, but the array holds 3 channels"),
            std::string::npos);
  std::vector<std::int32_t> txt(24, 1);
  io::write_source_txt(dir_ / "rf.txt", txt, 6, 4);
  in.samples = 4;
  in.channel_map = "1:3";
  EXPECT_NE(error_of([&] { (void)read_channel_data(dir_ / "rf.txt", in, 3, 2); })
                .find("--channel-map applies to NPY, MAT and HDF5 arrays"),
            std::string::npos);
}

// --channel-map's list: numbers from 1, ranges both ways, spaces around them; refused with the
// item that fails.
TEST(ReconDasInput, ChannelNumbersListAndRanges) {
  EXPECT_EQ(parse_channel_numbers("1:4", "m"), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(parse_channel_numbers("4:1", "m"), (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(parse_channel_numbers("7", "m"), (std::vector<int>{7}));
  EXPECT_EQ(parse_channel_numbers(" 1:2 , 5, 4 ", "m"), (std::vector<int>{1, 2, 5, 4}));
  EXPECT_EQ(parse_channel_numbers("1:65536", "m").size(), 65536u);
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"", "m: '' is not a channel number from 1 to 65536"},
           {"0", "m: '0' is not a channel number from 1 to 65536"},
           {"65537", "m: '65537' is not a channel number from 1 to 65536"},
           {"-1", "m: '-1' is not a channel number"},
           {"1.5", "m: '1.5' is not a channel number"},
           {"1,", "m: '' is not a channel number"},
           {"1:3:5", "m: '1:3:5': a range is FIRST:LAST (both included)"},
           {"2:", "m: '' is not a channel number"},
           {"1:3,2", "m: channel 2 is listed for elements 2 and 4: each element is read from a channel of its own"},
           {"1:65536,1", "m: lists more than 65536 elements"},
           {"99999999999", "m: '99999999999' is not a channel number"}}) {
    EXPECT_EQ(error_of([&] { (void)parse_channel_numbers(text, "m"); }).rfind(why, 0), 0u) << text;
  }
  EXPECT_FALSE(channel_map_names_variable("128:1"));
  EXPECT_FALSE(channel_map_names_variable(" 1"));
  EXPECT_TRUE(channel_map_names_variable("Trans.Connector"));
  EXPECT_TRUE(channel_map_names_variable("/Trans/Connector"));
  EXPECT_FALSE(channel_map_names_variable(""));
  // A sign is a list's mistake, not a name (it was read as a variable '-1:3').
  EXPECT_FALSE(channel_map_names_variable("-1:3"));
  EXPECT_FALSE(channel_map_names_variable("+1"));
  EXPECT_FALSE(channel_map_names_variable("\t1"));
  EXPECT_TRUE(channel_map_names_variable(" Trans.Connector"));
  EXPECT_TRUE(channel_map_names_variable("_map"));
  EXPECT_EQ(parse_channel_numbers("\t2 ,1", "m"), (std::vector<int>{2, 1}));
}

TEST(ReconDasInput, RangesAndLists) {
  EXPECT_EQ(parse_range("-20e-3:20e-3", "--x-range"), (std::pair<double, double>{-20e-3, 20e-3}));
  EXPECT_THROW(parse_range("5:1", "--z-range"), Error);
  EXPECT_THROW(parse_range("5", "--z-range"), Error);
  const std::vector<double> angles = parse_number_list("-1.5:0.5:1.5", "--angles-deg");
  ASSERT_EQ(angles.size(), 7u);
  EXPECT_DOUBLE_EQ(angles.front(), -1.5);
  EXPECT_DOUBLE_EQ(angles.back(), 1.5);
  EXPECT_EQ(parse_number_list("-2, 0,3", "--angles-deg"), (std::vector<double>{-2, 0, 3}));
  EXPECT_EQ(parse_number_list("4", "--angles-deg"), (std::vector<double>{4}));
  EXPECT_THROW(parse_number_list("1:0:2", "--angles-deg"), Error);
  EXPECT_THROW(parse_number_list("1,x", "--angles-deg"), Error);
  // Grid defaults: the array's span, zero to the last sample's depth (sample 3: 1.5 m, not the
  // 2 m of a sample past the record).
  Acquisition acq;
  acq.probe = {11, 1e-3};
  acq.fs = 1540;  // one sample = 1 m of round trip = 0.5 m of depth
  const Grid g = GridRequest{}.resolve(acq, 4);
  EXPECT_DOUBLE_EQ(g.x0, -5e-3);
  EXPECT_EQ(g.nx, 11 * 2 - 1);
  EXPECT_DOUBLE_EQ(g.z0, 0.0);
  EXPECT_EQ(g.nz, 7);  // dz = c / (4 fs) = 0.25 m
  EXPECT_DOUBLE_EQ(g.z(g.nz - 1), 1.5);
}

// Every seed of the uff fuzz target passes its checks (tools/fuzz.sh runs the target itself with
// clang; its seeds run here in every suite, as IoFuzzRegression runs the io targets').
TEST(ReconFuzzRegression, UffSeedsPassTheChecks) {
  std::size_t count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(USRECON_SOURCE_DIR) / "tests/fuzz/corpus/uff")) {
    SCOPED_TRACE(entry.path().string());
    const std::string bytes = io::read_file(entry.path());
    EXPECT_NO_THROW(fuzz::check_uff({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}));
    ++count;
  }
  EXPECT_GE(count, 7u);
}

}  // namespace
}  // namespace usrecon::recon
