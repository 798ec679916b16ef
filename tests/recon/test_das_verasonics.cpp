// Verasonics Vantage saves: RcvData{1} with the structs its scanner saves beside it (Trans,
// Receive, TX, TW, Resource, Event), written here by matio (an independent writer) in v5 and v7.3
// around simulated plane-wave and synthetic-aperture data. The acquisition is taken from the
// structs alone: the point targets must come out where they were put, which a wrong t0 (start
// depth, pulse peak, lens), sampling rate, pitch, channel order or transmit timing moves.
#include <gtest/gtest.h>
#include <matio.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <fstream>
#include <numbers>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../test_support.hpp"
#include "usrecon/recon/das_pipeline.hpp"
#include "usrecon/recon/das_simulate.hpp"
#include "usrecon/recon/pipeline.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {
namespace {

// --- A small MAT writer over matio: values, text, structs, struct arrays and cells. ---
struct MatNode {
  enum Kind { Doubles, Int16, Text, Struct, Cell } kind = Doubles;
  std::vector<std::size_t> dims;
  std::vector<double> values;
  std::vector<std::int16_t> int16;
  std::string text;
  std::vector<std::string> fields;           // Struct
  std::vector<std::vector<MatNode>> members;  // Struct: [element][field]; Cell: [element][0]
};
using Fields = std::vector<std::pair<std::string, MatNode>>;

MatNode node(MatNode::Kind kind, std::vector<std::size_t> dims, std::vector<double> values = {}) {
  MatNode n;
  n.kind = kind;
  n.dims = std::move(dims);
  n.values = std::move(values);
  return n;
}

MatNode row(std::vector<double> v) {
  const std::size_t n = v.size();
  return node(MatNode::Doubles, {1, n}, std::move(v));
}
MatNode num(double v) { return row({v}); }
MatNode text(std::string s) {
  MatNode n = node(MatNode::Text, {1, s.size()});
  n.text = std::move(s);
  return n;
}
/// A 1 x n struct array of every field its elements name; an element without one holds [] there,
/// as MATLAB's do.
MatNode struct_array(const std::vector<Fields>& elements) {
  MatNode n = node(MatNode::Struct, {1, elements.size()});
  for (const Fields& e : elements)
    for (const auto& [name, value] : e)
      if (std::find(n.fields.begin(), n.fields.end(), name) == n.fields.end()) n.fields.push_back(name);
  for (const Fields& e : elements) {
    auto& m = n.members.emplace_back();
    for (const std::string& field : n.fields) {
      const auto at = std::find_if(e.begin(), e.end(), [&](const auto& f) { return f.first == field; });
      m.push_back(at != e.end() ? at->second : node(MatNode::Doubles, {0, 0}));
    }
  }
  return n;
}
MatNode structure(const Fields& fields) { return struct_array({fields}); }

matvar_t* to_matvar(const char* name, const MatNode& n) {
  std::vector<std::size_t> dims = n.dims;
  const int rank = static_cast<int>(dims.size());
  switch (n.kind) {
    case MatNode::Doubles:
      return Mat_VarCreate(name, MAT_C_DOUBLE, MAT_T_DOUBLE, rank, dims.data(), const_cast<double*>(n.values.data()), 0);
    case MatNode::Int16:
      return Mat_VarCreate(name, MAT_C_INT16, MAT_T_INT16, rank, dims.data(), const_cast<std::int16_t*>(n.int16.data()), 0);
    case MatNode::Text:
      return Mat_VarCreate(name, MAT_C_CHAR, MAT_T_UINT8, rank, dims.data(), const_cast<char*>(n.text.data()), 0);
    case MatNode::Cell: {
      matvar_t* c = Mat_VarCreate(name, MAT_C_CELL, MAT_T_CELL, rank, dims.data(), nullptr, 0);
      for (std::size_t k = 0; k < n.members.size(); ++k) Mat_VarSetCell(c, static_cast<int>(k), to_matvar(nullptr, n.members[k][0]));
      return c;
    }
    case MatNode::Struct: {
      std::vector<const char*> names;
      for (const std::string& f : n.fields) names.push_back(f.c_str());
      matvar_t* s = Mat_VarCreateStruct(name, rank, dims.data(), names.data(), static_cast<unsigned>(names.size()));
      for (std::size_t k = 0; k < n.members.size(); ++k)
        for (std::size_t f = 0; f < n.fields.size(); ++f)
          Mat_VarSetStructFieldByIndex(s, f, k, to_matvar(nullptr, n.members[k][f]));
      return s;
    }
  }
  return nullptr;
}

void write_mat_file(const fs::path& path, const Fields& variables, bool v73) {
  mat_t* m = Mat_CreateVer(path.c_str(), nullptr, v73 ? MAT_FT_MAT73 : MAT_FT_MAT5);
  ASSERT_NE(m, nullptr) << path;
  for (const auto& [name, value] : variables) {
    matvar_t* v = to_matvar(name.c_str(), value);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_EQ(Mat_VarWrite(m, v, MAT_COMPRESSION_NONE), 0) << name;
    Mat_VarFree(v);
  }
  Mat_Close(m);
}

// --- A save of a simulated acquisition. ---
constexpr double kF0 = 5e6, kC = 1540, kLambda = kC / kF0;
constexpr int kElements = 16, kSamples = 512, kChannels = 20, kPadRows = 32, kFrames = 2;
constexpr double kPitch = 0.3e-3, kStartDepth = 4, kPeak = 1.5, kLensMm = 0.5;
const std::vector<PointTarget> kPoints = {{0.0, 8e-3, 1.0}, {1.5e-3, 12e-3, 1.0}};

/// What the scanner saw: sample 0 comes 2 startDepth wavelengths after the trigger, less the
/// pulse's time to its peak and the lens, crossed twice.
double true_t0() { return 2 * kStartDepth * kLambda / kC - kPeak / kF0 - 2 * kLensMm * 1e-3 / kC; }

/// Element e on channel connector[e] (from 1): every second channel from the top down, and the
/// other channels hold a constant that no element is.
std::vector<int> connector() {
  std::vector<int> c;
  for (int e = 0; e < kElements; ++e) c.push_back(kChannels - 1 - e);
  return c;
}

struct Save {
  Model model = Model::PlaneWave;
  std::vector<double> angles_deg = {-10, 2, 12};
  std::vector<int> tx_elements = {0, 7, 15};  // synthetic aperture
  // Focused and diverging waves: each transmit's focal point or virtual source (mm, x from the
  // array's centre). Their TX gives it as Origin and focus (wavelengths); the first TX's by a
  // steered focus where `steered`, the second's as FocalPtMm where `focal_point_mm`. Apod fires
  // elements apod_from to apod_to (from 0) and Delay is computeTXDelays', normalized over the
  // elements firing, or over all of them (its 'TOAE' mode) where `toae`.
  std::vector<double> sources_x_mm = {-1, 0, 1}, sources_z_mm = {20, 20, 20};
  bool steered = false, focal_point_mm = false, toae = false;
  int apod_from = 0, apod_to = kElements - 1;
  // Changes that make a save usrecon must refuse or note.
  std::string sample_mode = "NS200BW";
  double trans_type = 0;
  bool hvmux = false, event = true, tw = true, delays = true, gap = false;
  // Saves the reader must take as they are: pulse inversion's accumulating receives (mode 1 onto
  // each acquisition's rows), a second waveform (TX 2's, peaking later), a Delay of NaN, an array
  // whose ElementPos is not centred on x = 0, no Resource, a NaN centre frequency.
  bool accumulate = false, nan_delay = false, resource = true, nan_frequency = false;
  double second_peak = 0, offset_mm = 0;
  // Any other change to the structs before they are written: Trans, Receive's entries, TX's.
  std::function<void(Fields& trans, std::vector<Fields>& receive, std::vector<Fields>& tx)> edit;
};

/// Sets field `name` of `fields` (added when missing).
void set(Fields& fields, const std::string& name, MatNode value) {
  for (auto& [n, v] : fields)
    if (n == name) {
      v = std::move(value);
      return;
    }
  fields.emplace_back(name, std::move(value));
}

Acquisition acquisition_of(const Save& s) {
  Acquisition a;
  a.model = s.model;
  a.probe.elements = kElements;
  a.probe.pitch = kPitch;
  a.sound_speed = kC;
  a.fs = 4 * kF0;
  a.t0 = true_t0();
  for (double d : s.angles_deg) a.angles.push_back(d * std::numbers::pi / 180);
  if (s.model == Model::SyntheticAperture) {
    a.angles.clear();
    a.tx_elements = s.tx_elements;
  }
  if (has_virtual_sources(s.model)) {
    a.angles.clear();
    for (double v : s.sources_x_mm) a.source_x.push_back(v * 1e-3);
    for (double v : s.sources_z_mm) a.source_z.push_back(v * 1e-3);
  }
  // A TX delay of 0 fires at t = 0: for spherical waves the first of all the elements to fire
  // (computeTXDelays' normalization of a whole aperture, or of any in 'TOAE' mode).
  a.time_zero = das::TimeZero::FirstElement;
  return a;
}

/// The simulated channel data, and the save written around them: frame 2 is frame 1 negated.
ChannelData write_save(const fs::path& path, const Save& s, bool v73) {
  DasSimulationOptions o;
  o.acquisition = acquisition_of(s);
  o.samples = kSamples;
  o.points = kPoints;
  o.center_frequency = kF0;
  const ChannelData rf = simulate_das_channels(o);
  const int transmits = rf.transmits;
  const std::size_t rows = std::size_t(transmits) * kSamples + kPadRows;
  MatNode data = node(MatNode::Int16, {rows, std::size_t(kChannels), std::size_t(kFrames)});
  data.int16.assign(rows * kChannels * kFrames, 7);  // the unmapped channels' constant
  const std::vector<int> conn = connector();
  // TX 2's pulse peaks later by (second_peak - peak) / f0: its echoes arrive that much later
  // (a whole number of samples here: 2.5 wavelengths at 4 samples a wavelength, 10 samples).
  const auto later = [&](int t) {
    return s.second_peak > 0 && t == 1 ? static_cast<int>(std::lround((s.second_peak - kPeak) * 4)) : 0;
  };
  for (int f = 0; f < kFrames; ++f)
    for (int t = 0; t < transmits; ++t)
      for (int e = 0; e < kElements; ++e)
        for (int k = 0; k < kSamples; ++k) {
          const int from = k - later(t);
          const double v = from < 0 ? 0.0 : std::round(rf.channel(t, e)[from] * 16000.0) * (f == 0 ? 1 : -1);
          data.int16[(std::size_t(f) * kChannels + std::size_t(conn[e] - 1)) * rows + std::size_t(t) * kSamples + k] =
              static_cast<std::int16_t>(v);
        }
  MatNode rcv = node(MatNode::Cell, {1, 1});
  rcv.members.push_back({data});

  std::vector<double> pos(kElements * 5, 0.0), conn_values;
  for (int e = 0; e < kElements; ++e) pos[e] = (e - 0.5 * (kElements - 1)) * kPitch * 1e3 + s.offset_mm;  // mm
  for (int c : conn) conn_values.push_back(c);
  const MatNode element_pos = node(MatNode::Doubles, {kElements, 5}, pos);
  const MatNode connector_column = node(MatNode::Doubles, {kElements, 1}, conn_values);
  Fields trans = {{"name", text("L-test")},        {"units", text("mm")},
                  {"frequency", num(s.nan_frequency ? std::nan("") : kF0 / 1e6)},   {"numelements", num(kElements)},
                  {"spacingMm", num(kPitch * 1e3)}, {"ElementPos", element_pos},
                  {"lensCorrection", num(kLensMm)}, {"Connector", connector_column},
                  {"type", num(s.trans_type)}};
  if (s.hvmux) trans.push_back({"HVMux", structure({{"Aperture", num(1)}})});

  std::vector<Fields> receive, events, txs;
  for (int f = 0; f < kFrames; ++f)
    for (int t = 0; t < transmits; ++t) {
      const double first = 1 + double(t) * kSamples + (s.gap && t == 1 ? 4 : 0);
      receive.push_back({{"Apod", row(std::vector<double>(kElements, 1.0))},
                         {"startDepth", num(kStartDepth)},
                         {"endDepth", num(kStartDepth + kSamples / 8.0)},
                         {"bufnum", num(1)},
                         {"framenum", num(f + 1)},
                         {"acqNum", num(t + 1)},
                         {"samplesPerWave", num(4)},
                         {"sampleMode", text(s.sample_mode)},
                         {"mode", num(0)},
                         {"startSample", num(first)},
                         {"endSample", num(first + kSamples - 1)}});
      events.push_back({{"info", text("acquire")}, {"tx", num(t + 1)}, {"rcv", num(double(receive.size()))}});
      if (s.accumulate) {  // the inverted pulse's receive, added onto the same rows
        Fields inverted = receive.back();
        for (auto& [name, value] : inverted)
          if (name == "mode") value = num(1);
        receive.push_back(inverted);
        events.push_back({{"info", text("invert")}, {"tx", num(t + 1)}, {"rcv", num(double(receive.size()))}});
      }
    }
  // A processing event that pairs nothing, as Verasonics' sequences have.
  events.push_back({{"info", text("recon")}, {"tx", num(0)}, {"rcv", num(0)}});
  for (int t = 0; t < transmits; ++t) {
    std::vector<double> apod(kElements, 1.0), delay(kElements, 0.0);
    double steer = 0;
    MatNode origin = row({0, 0, 0}), focus = num(0);
    std::optional<MatNode> focal_point_mm;
    if (s.model == Model::SyntheticAperture) {
      apod.assign(kElements, 0.0);
      apod[std::size_t(s.tx_elements[std::size_t(t)])] = 1;
    } else if (has_virtual_sources(s.model)) {
      // Trans.ElementPos's x of the source is offset_mm more than the image's.
      const double xs = s.sources_x_mm[std::size_t(t)] * 1e-3, zs = s.sources_z_mm[std::size_t(t)] * 1e-3;
      const double trans_x = xs + s.offset_mm * 1e-3;
      if (s.steered && t == 0) {
        steer = 0.1;
        const double f = zs / std::cos(steer);  // metres along the steered line
        origin = row({(trans_x - f * std::sin(steer)) / kLambda, 0, 0});
        focus = num(f / kLambda);
      } else if (s.focal_point_mm && t == 1) {
        focal_point_mm = row({trans_x * 1e3, 0, zs * 1e3});
        origin = row({-40, 0, 0});  // FocalPtMm wins over Origin and focus
        focus = num(zs > 0 ? 77 : -77);
      } else {
        origin = row({trans_x / kLambda, 0, 0});
        focus = num(zs / kLambda);
      }
      // computeTXDelays (wavelengths): max(D) - D towards a focal point, D - min(D) from a source.
      std::vector<double> distance(kElements);
      for (int e = 0; e < kElements; ++e)
        distance[std::size_t(e)] = std::hypot((e - 0.5 * (kElements - 1)) * kPitch - xs, zs) / kLambda;
      apod.assign(kElements, 0.0);
      double most = -INFINITY, least = INFINITY;
      for (int e = 0; e < kElements; ++e) {
        const bool firing = e >= s.apod_from && e <= s.apod_to;
        if (firing) apod[std::size_t(e)] = 1;
        if (firing || s.toae) most = std::max(most, distance[std::size_t(e)]), least = std::min(least, distance[std::size_t(e)]);
      }
      for (int e = s.apod_from; e <= s.apod_to; ++e)
        delay[std::size_t(e)] = zs > 0 ? most - distance[std::size_t(e)] : distance[std::size_t(e)] - least;
    } else {
      steer = s.angles_deg[std::size_t(t)] * std::numbers::pi / 180;
      // computeTXDelays: the first element to fire at 0, the others later, in wavelengths.
      const double x_first = steer >= 0 ? -0.5 * (kElements - 1) * kPitch : 0.5 * (kElements - 1) * kPitch;
      for (int e = 0; e < kElements; ++e)
        delay[std::size_t(e)] = ((e - 0.5 * (kElements - 1)) * kPitch - x_first) * std::sin(steer) / kLambda;
    }
    if (s.nan_delay && t == 1) delay[3] = std::nan("");
    Fields tx = {{"waveform", num(s.second_peak > 0 && t == 1 ? 2 : 1)}, {"Origin", origin}, {"focus", focus},
                 {"Steer", row({steer, 0})}, {"Apod", row(apod)}};
    if (focal_point_mm) tx.push_back({"FocalPtMm", *focal_point_mm});
    if (s.delays) tx.push_back({"Delay", row(delay)});
    txs.push_back(tx);
  }
  if (s.edit) s.edit(trans, receive, txs);
  Fields vars = {{"RcvData", rcv},
                 {"Trans", structure(trans)},
                 {"Receive", struct_array(receive)},
                 {"TX", struct_array(txs)}};
  if (s.resource)
    vars.push_back({"Resource", structure({{"Parameters", structure({{"speedOfSound", num(kC)}, {"numRcvChannels", num(kChannels)}})},
                                           {"RcvBuffer", structure({{"datatype", text("int16")}, {"numFrames", num(kFrames)}})}})});
  if (s.tw && s.second_peak > 0)
    vars.push_back({"TW", struct_array({{{"type", text("parametric")}, {"peak", num(kPeak)}},
                                        {{"type", text("parametric")}, {"peak", num(s.second_peak)}}})});
  else if (s.tw)
    vars.push_back({"TW", structure({{"type", text("parametric")}, {"peak", num(kPeak)}})});
  if (s.event) vars.push_back({"Event", struct_array(events)});
  write_mat_file(path, vars, v73);
  return rf;
}

/// The brightest pixel within 1 mm of (x, z) and its distance from it (metres).
double peak_error(const Image& image, double x, double z) {
  const Grid& g = image.grid;
  double best = -1, bx = 0, bz = 0;
  for (int i = 0; i < g.nx; ++i)
    for (int j = 0; j < g.nz; ++j) {
      const double px = g.x0 + i * g.dx, pz = g.z0 + j * g.dz;
      if (std::hypot(px - x, pz - z) > 1e-3) continue;
      const double v = std::abs(image.data[std::size_t(i) * g.nz + j]);
      if (v > best) best = v, bx = px, bz = pz;
    }
  return std::hypot(bx - x, bz - z);
}

class ReconVerasonics : public testing::TempDir, public ::testing::WithParamInterface<bool> {
 protected:
  fs::path file(const std::string& stem) const { return dir_ / (stem + (GetParam() ? "_v73.mat" : "_v5.mat")); }
  static DasSetup setup_for(Model model) {
    DasSetup setup;
    setup.acquisition.model = model;
    setup.acquisition.probe.elements = 0;  // from the data, as the CLI leaves it without --elements
    setup.grid.x_min = -2.4e-3;
    setup.grid.x_max = 2.4e-3;
    setup.grid.z_min = 5e-3;
    setup.grid.z_max = 15e-3;
    setup.grid.dx = 0.05e-3;
    setup.grid.dz = 0.02e-3;
    return setup;
  }
};

TEST_P(ReconVerasonics, AnAcquisitionIsTakenFromTheSavesStructs) {
  const fs::path path = file("pw");
  const ChannelData rf = write_save(path, {}, GetParam());

  // The channel data: RcvData{1}'s acquisitions split by Receive's rows, each element read from
  // its Trans.Connector channel, frame by frame.
  for (int frame = 1; frame <= kFrames; ++frame) {
    SCOPED_TRACE(frame);
    ChannelInput in;
    in.frame = frame;
    FileGeometry g;
    const ChannelData read = read_channel_data(path, in, 0, 0, &g);
    ASSERT_EQ(read.samples, kSamples);
    ASSERT_EQ(read.elements, kElements);
    ASSERT_EQ(read.transmits, 3);
    for (int t = 0; t < 3; ++t)
      for (int e = 0; e < kElements; ++e)
        for (int k = 0; k < kSamples; ++k)
          ASSERT_EQ(read.channel(t, e)[k], std::round(rf.channel(t, e)[k] * 16000.0) * (frame == 1 ? 1 : -1))
              << t << " " << e << " " << k;
    EXPECT_EQ(g.frames, kFrames);
    EXPECT_EQ(g.channel_map, connector());
    EXPECT_EQ(g.array_channels, kChannels);
    EXPECT_EQ(g.rows_left, std::size_t(kPadRows));
    // The geometry, from Trans, Receive, TX, TW and Resource.
    EXPECT_NE(g.source.find("Verasonics"), std::string::npos);
    EXPECT_EQ(g.layout, "(samples,transmits),elements,frames");
    EXPECT_EQ(g.fs, 4 * kF0);
    EXPECT_EQ(g.sound_speed, kC);
    ASSERT_TRUE(g.t0);
    EXPECT_NEAR(*g.t0, true_t0(), 1e-15);
    ASSERT_TRUE(g.pitch);
    EXPECT_NEAR(*g.pitch, kPitch, 1e-12);
    EXPECT_EQ(g.elements, kElements);
    ASSERT_EQ(g.angles.size(), 3u);
    EXPECT_NEAR(g.angles[2], 12 * std::numbers::pi / 180, 1e-15);
    EXPECT_EQ(g.model, Model::PlaneWave);
    // Each wave timed from its front crossing the centre: half the array's span later than its
    // first element's firing, for either sign of the angle.
    EXPECT_EQ(g.time_zero, das::TimeZero::Center);
    ASSERT_EQ(g.wave_delays.size(), 3u);
    for (int t = 0; t < 3; ++t)
      EXPECT_NEAR(g.wave_delays[std::size_t(t)], -0.5 * (kElements - 1) * kPitch * std::fabs(std::sin(g.angles[std::size_t(t)])) / kC,
                  1e-15);
    EXPECT_TRUE(g.notes.empty()) << g.notes.front();
  }
  EXPECT_EQ(count_frames(path, {}), kFrames);

  // Beamformed with nothing given: the points where they were put, within a quarter wavelength.
  const DasFrame frame = reconstruct_das(path, setup_for(Model::PlaneWave), BackendKind::Cpu, 2);
  for (const PointTarget& p : kPoints) EXPECT_LE(peak_error(frame.image, p.x, p.z), kLambda / 4) << p.x << " " << p.z;
  // Without TX.Delay: each wave timed from the first element's firing, the same points.
  Save no_delays;
  no_delays.delays = false;
  write_save(file("pw_nodelay"), no_delays, GetParam());
  FileGeometry g;
  (void)read_channel_data(file("pw_nodelay"), {}, 0, 0, &g);
  EXPECT_EQ(g.time_zero, das::TimeZero::FirstElement);
  EXPECT_TRUE(g.wave_delays.empty());
  const DasFrame first = reconstruct_das(file("pw_nodelay"), setup_for(Model::PlaneWave), BackendKind::Cpu, 2);
  for (const PointTarget& p : kPoints) EXPECT_LE(peak_error(first.image, p.x, p.z), kLambda / 4);
}

TEST_P(ReconVerasonics, SyntheticApertureSavesNameTheirElements) {
  Save sa;
  sa.model = Model::SyntheticAperture;
  write_save(file("sa"), sa, GetParam());
  FileGeometry g;
  (void)read_channel_data(file("sa"), {}, 0, 0, &g);
  EXPECT_EQ(g.model, Model::SyntheticAperture);
  EXPECT_EQ(g.tx_elements, sa.tx_elements);
  EXPECT_FALSE(g.time_zero.has_value());
  const DasFrame frame = reconstruct_das(file("sa"), setup_for(Model::SyntheticAperture), BackendKind::Cpu, 2);
  for (const PointTarget& p : kPoints) EXPECT_LE(peak_error(frame.image, p.x, p.z), kLambda / 4);
  // Beamformed as plane waves, it is refused by name.
  try {
    (void)reconstruct_das(file("sa"), setup_for(Model::PlaneWave), BackendKind::Cpu, 1);
    ADD_FAILURE() << "synthetic-aperture data beamformed as plane waves";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--model sa"), std::string::npos) << e.what();
  }
}

TEST_P(ReconVerasonics, WhatTheSaveLeavesOutIsSaidAndGivenValuesWin) {
  // Without TW and Event: t0 without the pulse's peak, said; TX(k) fires acquisition k.
  Save bare;
  bare.tw = false;
  bare.event = false;
  write_save(file("bare"), bare, GetParam());
  FileGeometry g;
  (void)read_channel_data(file("bare"), {}, 0, 0, &g);
  ASSERT_TRUE(g.t0);
  EXPECT_NEAR(*g.t0, true_t0() + kPeak / kF0, 1e-15);
  ASSERT_EQ(g.notes.size(), 1u);
  EXPECT_NE(g.notes[0].find("TW.peak"), std::string::npos) << g.notes[0];
  EXPECT_EQ(g.angles.size(), 3u);
  const PreparedDas prepared = prepare_das(file("bare"), setup_for(Model::PlaneWave), 1);
  ASSERT_FALSE(prepared.warnings.empty());
  EXPECT_NE(prepared.warnings[0].find("TW.peak"), std::string::npos);
  // Without the peak the points lie deeper by its time (0.3 us: 0.23 mm). A --t0 given replaces
  // the file's on its clock (the centre crossing's: the earliest wave's start is added to it, as
  // to the file's; a given t0 taken as the earliest start's moved them by 1 mm), said.
  const DasFrame off = reconstruct_das(file("bare"), setup_for(Model::PlaneWave), BackendKind::Cpu, 2);
  for (const PointTarget& p : kPoints) EXPECT_GT(peak_error(off.image, p.x, p.z), kLambda / 2);
  DasSetup given = setup_for(Model::PlaneWave);
  given.acquisition.t0 = true_t0();
  given.given.t0 = true;
  const PreparedDas with_t0 = prepare_das(file("bare"), given, 1);
  EXPECT_EQ(with_t0.problem.acquisition.t0, true_t0() + *std::min_element(g.wave_delays.begin(), g.wave_delays.end()));
  std::string said;
  for (const std::string& w : with_t0.warnings) said += w + "\n";
  EXPECT_NE(said.find("the file says --t0"), std::string::npos) << said;
  EXPECT_NE(said.find(" is on the file's clock, to which its waves' earliest start ("), std::string::npos) << said;
  const DasFrame right = reconstruct_das(file("bare"), given, BackendKind::Cpu, 2);
  for (const PointTarget& p : kPoints) EXPECT_LE(peak_error(right.image, p.x, p.z), kLambda / 4);
}

TEST_P(ReconVerasonics, SavesUsreconCannotBeamformAreRefusedWithTheReason) {
  const auto refused = [&](const Save& s, const std::string& stem, const std::string& fragment) {
    SCOPED_TRACE(stem);
    write_save(file(stem), s, GetParam());
    for (int round = 0; round < 2; ++round) {  // the refusal kept is the same
      try {
        (void)read_channel_data(file(stem), {}, 0, 0, nullptr);
        ADD_FAILURE() << "read";
      } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind(file(stem).string(), 0), 0u) << what;
        EXPECT_NE(what.find(fragment), std::string::npos) << what;
      }
    }
  };
  Save bandpass;
  bandpass.sample_mode = "BS100BW";
  refused(bandpass, "bs100", "sampleMode is 'BS100BW', which samples in pairs");
  Save curved;
  curved.trans_type = 1;
  refused(curved, "curved", "Trans.type 1 (a curved array)");
  Save mux;
  mux.hvmux = true;
  refused(mux, "hvmux", "Trans.HVMux");
  Save gap;
  gap.gap = true;
  refused(gap, "gap", "Receive(2) reads rows 517 to 1028");
}

// Saves from the review: each read as it is, its points where they were put, or said by name.
TEST_P(ReconVerasonics, SavesOfOtherShapesAreReadAndTimedRight) {
  const auto points_in_place = [&](const fs::path& path, DasSetup setup) {
    const DasFrame frame = reconstruct_das(path, setup, BackendKind::Cpu, 2);
    for (const PointTarget& p : kPoints) EXPECT_LE(peak_error(frame.image, p.x, p.z), kLambda / 4) << path;
  };
  const auto notes_of = [&](const fs::path& path) {
    FileGeometry g;
    (void)read_channel_data(path, {}, 0, 0, &g);
    std::string all;
    for (const std::string& n : g.notes) all += n + "\n";
    return std::pair(g, all);
  };
  // Pulse inversion: the accumulating receives are no acquisitions of their own.
  Save accumulate;
  accumulate.accumulate = true;
  write_save(file("acc"), accumulate, GetParam());
  EXPECT_EQ(notes_of(file("acc")).first.angles.size(), 3u);
  points_in_place(file("acc"), setup_for(Model::PlaneWave));
  // TX 2's waveform peaks 2.5 wavelengths later (TW(2).peak): its samples start later.
  Save peaks;
  peaks.second_peak = kPeak + 2.5;
  write_save(file("peaks"), peaks, GetParam());
  const auto [pg, pnotes] = notes_of(file("peaks"));
  ASSERT_EQ(pg.wave_delays.size(), 3u);
  // Each wave's start: minus its centre crossing, (N - 1) / 2 pitch sin(angle) / c after its first
  // element fires; TX 2's 2.5 / f0 more for its later peak.
  const auto crossing = [](double deg) { return 0.5 * (kElements - 1) * kPitch * std::sin(deg * std::numbers::pi / 180) / kC; };
  EXPECT_NEAR(pg.wave_delays[1], -crossing(2) - 2.5 / kF0, 1e-15);
  EXPECT_NEAR(pg.wave_delays[2], -crossing(12), 1e-15);
  points_in_place(file("peaks"), setup_for(Model::PlaneWave));
  // --time-zero first-element, Verasonics' own clock: the waves' delays are not counted twice.
  DasSetup first = setup_for(Model::PlaneWave);
  first.acquisition.time_zero = das::TimeZero::FirstElement;
  first.given.time_zero = true;
  points_in_place(file("peaks"), first);  // (TX 2's later peak is then not honoured: its 10 samples blur)
  points_in_place(file("acc"), first);
  // A NaN among TX 2's delays: timed from the first element's firing, said.
  Save nan_delay;
  nan_delay.nan_delay = true;
  write_save(file("nan_delay"), nan_delay, GetParam());
  const auto [ng, nnotes] = notes_of(file("nan_delay"));
  EXPECT_EQ(ng.time_zero, das::TimeZero::FirstElement);
  EXPECT_NE(nnotes.find("TX(2).Delay holds values that are not finite"), std::string::npos) << nnotes;
  points_in_place(file("nan_delay"), setup_for(Model::PlaneWave));
  // An array centred at x = 9 mm in Trans.ElementPos: the image counts x from its centre, said.
  Save offset;
  offset.offset_mm = 9;
  write_save(file("offset"), offset, GetParam());
  EXPECT_NE(notes_of(file("offset")).second.find("centres the array at x = 9 mm"), std::string::npos);
  points_in_place(file("offset"), setup_for(Model::PlaneWave));
  // Without Resource: no speed of sound, so nothing in wavelengths (t0); said.
  Save no_resource;
  no_resource.resource = false;
  write_save(file("nores"), no_resource, GetParam());
  const auto [rg, rnotes] = notes_of(file("nores"));
  EXPECT_FALSE(rg.t0.has_value());
  EXPECT_NE(rnotes.find("Resource.Parameters.speedOfSound is not in the file"), std::string::npos) << rnotes;
  // Without the wavelength the TX delays are not read either: each wave is timed from its first
  // element's firing, Verasonics' own clock, on which the true t0 is given.
  EXPECT_EQ(rg.time_zero, das::TimeZero::FirstElement);
  EXPECT_TRUE(rg.wave_delays.empty());
  DasSetup given = setup_for(Model::PlaneWave);
  given.acquisition.t0 = true_t0();
  given.given.t0 = true;
  given.given.sound_speed = true;  // 1540 m/s, as the acquisition's
  const PreparedDas answered = prepare_das(file("nores"), given, 1);
  std::string said;
  for (const std::string& w : answered.warnings) said += w + "\n";
  EXPECT_EQ(said.find("give --sound-speed"), std::string::npos) << said;  // asked no more once given
  EXPECT_EQ(said.find("give --t0"), std::string::npos) << said;
  const PreparedDas unanswered = prepare_das(file("nores"), setup_for(Model::PlaneWave), 1);
  said.clear();
  for (const std::string& w : unanswered.warnings) said += w + "\n";
  EXPECT_NE(said.find("give --sound-speed"), std::string::npos) << said;
  points_in_place(file("nores"), given);
  // A NaN centre frequency is refused by name; a save refused is read as --layout describes it.
  Save nan_frequency;
  nan_frequency.nan_frequency = true;
  write_save(file("nan_f"), nan_frequency, GetParam());
  try {
    (void)read_channel_data(file("nan_f"), {}, 0, 0, nullptr);
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Trans.frequency is nan, not a number usrecon can use; to read its array as a "
                                         "plain MAT array, give --var, --layout"),
              std::string::npos)
        << e.what();
  }
  ChannelInput described;
  described.var = "RcvData{1}";
  described.layout = "(samples,transmits),elements,frames";
  described.samples = kSamples;
  described.channel_map = "Trans.Connector";
  FileGeometry dg;
  const ChannelData plain = read_channel_data(file("nan_f"), described, 0, 3, &dg);
  EXPECT_EQ(plain.elements, kElements);
  EXPECT_TRUE(dg.source.empty());
  ASSERT_EQ(dg.notes.size(), 1u);
  EXPECT_NE(dg.notes[0].find("its Verasonics parameters are not used (Trans.frequency is nan"), std::string::npos)
      << dg.notes[0];
}

// Focused and diverging waves: each TX's focal point or virtual source (Origin and focus,
// steered, or FocalPtMm) and its timing (Delay fitted over the elements that fire, or computed as
// computeTXDelays computes it where the save has none) place the points where they were put.
TEST_P(ReconVerasonics, FocusedAndDivergingWavesAreTakenFromTheirTX) {
  struct Case {
    std::string stem;
    Save save;
  };
  std::vector<Case> cases(5);
  cases[0].stem = "fw";
  cases[0].save.model = Model::FocusedWave;
  cases[1].stem = "fw_steered_subaperture";  // elements 3 to 12 fire, delays normalized over all
  cases[1].save.model = Model::FocusedWave;
  cases[1].save.steered = cases[1].save.focal_point_mm = cases[1].save.toae = true;
  cases[1].save.apod_from = 3;
  cases[1].save.apod_to = 12;
  cases[1].save.sources_x_mm = {-1.5, 0.5, 2};
  cases[1].save.sources_z_mm = {9, 10, 25};
  cases[2].stem = "dw";
  cases[2].save.model = Model::DivergingWave;
  cases[2].save.sources_x_mm = {-2, 0, 2};
  cases[2].save.sources_z_mm = {-10, -6, -10};
  cases[3].stem = "dw_off_centre_no_delay";  // no TX.Delay: timed as computeTXDelays times it
  cases[3].save = cases[2].save;
  cases[3].save.offset_mm = 9;
  cases[3].save.delays = false;
  cases[3].save.focal_point_mm = cases[3].save.steered = true;
  cases[4].stem = "dw_pulse_inversion";
  cases[4].save = cases[2].save;
  cases[4].save.accumulate = true;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.stem);
    write_save(file(c.stem), c.save, GetParam());
    FileGeometry g;
    (void)read_channel_data(file(c.stem), {}, 0, 0, &g);
    std::string notes;
    for (const std::string& n : g.notes) notes += n + "\n";
    EXPECT_EQ(notes.find("TX"), std::string::npos) << notes;
    ASSERT_EQ(g.model, c.save.model) << notes;
    ASSERT_EQ(g.source_x.size(), 3u);
    ASSERT_EQ(g.wave_delays.size(), 3u);
    EXPECT_EQ(g.time_zero, das::TimeZero::Center);
    EXPECT_TRUE(g.angles.empty());
    for (std::size_t t = 0; t < 3; ++t) {
      const double xs = c.save.sources_x_mm[t] * 1e-3, zs = c.save.sources_z_mm[t] * 1e-3;
      EXPECT_NEAR(g.source_x[t], xs, 1e-12) << t;
      EXPECT_NEAR(g.source_z[t], zs, 1e-12) << t;
      // Time zero of the simulation is the first of all the elements' firings; the wave crosses
      // the centre |s| / c after it reaches its focal point (|s| / c before, from behind).
      double most = 0, least = INFINITY;
      for (int e = 0; e < kElements; ++e) {
        const double d = std::hypot((e - 0.5 * (kElements - 1)) * kPitch - xs, zs);
        most = std::max(most, d);
        least = std::min(least, d);
      }
      const double r = std::hypot(xs, zs);
      EXPECT_NEAR(g.wave_delays[t], zs > 0 ? (r - most) / kC : (least - r) / kC, 1e-15) << t;
    }
    EXPECT_NEAR(*g.t0, true_t0(), 1e-15);
    // At 16 samples a cycle: linear interpolation at the data's 4 moves the peak of a point seen
    // by three diverging waves by up to 0.1 mm (the envelope dips between samples, differently
    // on each clock), more than the lambda / 4 asked.
    DasSetup setup = setup_for(c.save.model);
    setup.upsample = 4;
    const DasFrame frame = reconstruct_das(file(c.stem), setup, BackendKind::Cpu, 2);
    for (const PointTarget& p : kPoints) EXPECT_LE(peak_error(frame.image, p.x, p.z), kLambda / 4) << p.x;
  }

  // computeTXDelays' own normalization over the elements that fire: the focal point's time is
  // the farthest firing element's path, the data's time zero their first firing.
  Save sub;
  sub.model = Model::FocusedWave;
  sub.apod_from = 2;
  sub.apod_to = 9;
  write_save(file("fw_active"), sub, GetParam());
  sub.delays = false;
  write_save(file("fw_active_computed"), sub, GetParam());
  for (const char* stem : {"fw_active", "fw_active_computed"}) {
    SCOPED_TRACE(stem);
    FileGeometry g;
    (void)read_channel_data(file(stem), {}, 0, 0, &g);
    ASSERT_EQ(g.wave_delays.size(), 3u);
    for (std::size_t t = 0; t < 3; ++t) {
      const double xs = sub.sources_x_mm[t] * 1e-3, zs = sub.sources_z_mm[t] * 1e-3;
      double most = 0;
      for (int e = sub.apod_from; e <= sub.apod_to; ++e)
        most = std::max(most, std::hypot((e - 0.5 * (kElements - 1)) * kPitch - xs, zs));
      EXPECT_NEAR(g.wave_delays[t], (std::hypot(xs, zs) - most) / kC, 1e-15) << t;
    }
  }

  // What cannot be read is said: a Delay that is no wave through its focal point (timed as
  // computeTXDelays times it), a focus in wavelengths without a wavelength, a focal point off
  // the image plane, focused with diverging waves.
  const auto read_save = [&](const std::string& stem, const Save& s) {
    write_save(file(stem), s, GetParam());
    FileGeometry g;
    (void)read_channel_data(file(stem), {}, 0, 0, &g);
    std::string notes;
    for (const std::string& n : g.notes) notes += n + "\n";
    return std::pair(g, notes);
  };
  Save bent = cases[0].save;
  bent.edit = [](auto&, auto&, std::vector<Fields>& x) {
    for (auto& [name, value] : x[1])
      if (name == "Delay") value.values[15] += 1;
  };
  const auto [bent_g, bent_notes] = read_save("fw_bent", bent);
  EXPECT_NE(bent_notes.find("TX(2).Delay is not a wave focused on (0, 20) mm (0.9375 periods off): it is timed as "
                            "computeTXDelays times that wave"),
            std::string::npos)
      << bent_notes;
  EXPECT_EQ(bent_g.model, Model::FocusedWave);
  EXPECT_EQ(bent_g.time_zero, das::TimeZero::Center);

  // A save whose transmits are not taken, and the note that says why.
  const auto expect_untaken = [&](const std::string& stem, const Save& s, const std::string& said) {
    SCOPED_TRACE(stem);
    const auto [g, notes] = read_save(stem, s);
    EXPECT_FALSE(g.model.has_value());
    EXPECT_NE(notes.find(said), std::string::npos) << notes;
  };
  Save no_speed = cases[2].save;
  no_speed.resource = false;
  expect_untaken("dw_no_speed", no_speed,
                 "TX(1).focus is in wavelengths, which need Trans.frequency and the speed of sound: give the transmits");

  Save mixed = cases[2].save;
  mixed.edit = [](auto&, auto&, std::vector<Fields>& x) { set(x[1], "focus", num(50)); };
  expect_untaken("mixed_sources", mixed, "it mixes focused waves with diverging waves: give the transmits");

  // As computeTXDelays reads a TX: a FocalPt's y is left out on a linear array, and its focus is
  // not read beside it (a NaN there is no refusal).
  Save off_plane = cases[0].save;
  off_plane.edit = [](auto&, auto&, std::vector<Fields>& x) {
    set(x[2], "FocalPt", row({1e-3 / kLambda, 3, 20e-3 / kLambda}));
    set(x[2], "focus", num(std::nan("")));
    set(x[2], "Origin", row({-40, 0, 0}));
  };
  const auto [off_g, off_notes] = read_save("off_plane", off_plane);
  EXPECT_EQ(off_notes, "");
  ASSERT_EQ(off_g.source_x.size(), 3u);
  EXPECT_NEAR(off_g.source_x[2], 1e-3, 1e-12);
  EXPECT_NEAR(off_g.source_z[2], 20e-3, 1e-12);
  // [TX.Delay, TX.FocalPt] = computeTXDelays(TX) saves [0 0 0] for a plane wave: still one.
  Save returned;
  returned.edit = [](auto&, auto&, std::vector<Fields>& x) {
    for (Fields& t : x) set(t, "FocalPt", row({0, 0, 0}));
  };
  const auto [returned_g, returned_notes] = read_save("plane_focal_point", returned);
  EXPECT_EQ(returned_notes, "");
  EXPECT_EQ(returned_g.model, Model::PlaneWave);
  EXPECT_EQ(returned_g.angles.size(), 3u);
  EXPECT_EQ(returned_g.time_zero, das::TimeZero::Center);

  // An Apod of the active elements only: Trans.ConnectorES places them (elements 4 to 13 here,
  // the others unconnected), giving the same transmits as the array's Apod and Delay.
  Save short_apod = cases[1].save;
  short_apod.edit = [](Fields& t, auto&, std::vector<Fields>& x) {
    std::vector<double> es(kElements, 0.0);
    for (int e = 3; e <= 12; ++e) es[std::size_t(e)] = e + 1;
    set(t, "ConnectorES", node(MatNode::Doubles, {kElements, 1}, es));
    for (Fields& tx : x)
      for (auto& [name, value] : tx)
        if (name == "Apod" || name == "Delay") {
          value.values.assign(value.values.begin() + 3, value.values.begin() + 13);
          value.dims = {1, 10};
        }
  };
  const auto [short_g, short_notes] = read_save("short_apod", short_apod);
  EXPECT_EQ(short_notes, "");
  FileGeometry whole;
  (void)read_channel_data(file(cases[1].stem), {}, 0, 0, &whole);
  ASSERT_EQ(short_g.wave_delays.size(), 3u);
  for (std::size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(short_g.wave_delays[t], whole.wave_delays[t]) << t;
    EXPECT_EQ(short_g.source_x[t], whole.source_x[t]) << t;
  }
  // Without Trans.ConnectorES which elements fire is not known, nor the wave's timing: said.
  Save unplaced = short_apod;
  unplaced.edit = [edit = short_apod.edit](Fields& t, std::vector<Fields>& r, std::vector<Fields>& x) {
    edit(t, r, x);
    t.erase(std::remove_if(t.begin(), t.end(), [](const auto& f) { return f.first == "ConnectorES"; }), t.end());
  };
  expect_untaken("unplaced_apod", unplaced,
                 "TX(1).Apod lists 10 elements of the 16 and no Trans.ConnectorES says which: its wave's timing is not "
                 "known; give the transmits");
  // A TX that fires no element.
  Save silent = cases[0].save;
  silent.edit = [](auto&, auto&, std::vector<Fields>& x) { set(x[1], "Apod", row(std::vector<double>(kElements, 0.0))); };
  expect_untaken("silent", silent, "TX(2).Apod fires no element: give the transmits");

  // From the command line, with --model alone; --model seed names the save's.
  ASSERT_FALSE(testing::usrecon_exe().empty()) << "USRECON_EXE is not set";
  const auto usrecon = [&](const std::string& args) {
    return testing::run_command(testing::quote(testing::usrecon_exe()) + " " + args + " 2>&1");
  };
  auto r = usrecon("reconstruct " + testing::quote(file("dw")) + " --model dw --backend cpu -o " +
                   testing::quote(dir_ / "dw_out") + " --x-range -2.4e-3:2.4e-3 --z-range 5e-3:15e-3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir_ / "dw_out" / (file("dw").stem().string() + ".json"));
  ASSERT_TRUE(in) << r.output;
  const nlohmann::json p = nlohmann::json::parse(in)["parameters"];
  EXPECT_EQ(p["from_file"]["parameters"],
            (nlohmann::json{"fs", "sound_speed", "t0", "pitch", "elements", "time_zero", "sources"}))
      << p.dump();
  r = usrecon("reconstruct " + testing::quote(file("fw")) + " --model dw --backend cpu -o " + testing::quote(dir_ / "fw_out"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("the file holds focused waves (focal points in front of the array): use --model fw"),
            std::string::npos)
      << r.output;
  r = usrecon("reconstruct " + testing::quote(file("fw")) + " -o " + testing::quote(dir_ / "seed"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("this Verasonics save's TX describes --model fw"), std::string::npos) << r.output;
}

// Each refusal and note of the reader, from a save changed in one place.
TEST_P(ReconVerasonics, EachRefusalAndNoteNamesItsField) {
  using Edit = std::function<void(Fields&, std::vector<Fields>&, std::vector<Fields>&)>;
  const auto read = [&](const std::string& stem, Edit change) {
    Save s;
    s.edit = std::move(change);
    write_save(file(stem), s, GetParam());
    FileGeometry g;
    (void)read_channel_data(file(stem), {}, 0, 0, &g);
    return g;
  };
  const std::vector<std::pair<Edit, std::string>> refused = {
      {[](Fields& t, auto&, auto&) { set(t, "units", text("inches")); }, "Trans.units is 'inches', neither"},
      {[](Fields& t, auto&, auto&) { set(t, "ElementPos", node(MatNode::Doubles, {kElements, 2}, std::vector<double>(2 * kElements))); },
       "Trans.ElementPos is not [elements x 3 or more]"},
      {[](Fields& t, auto&, auto&) {
         std::vector<double> pos(kElements * 5, 0.0);
         for (int e = 0; e < kElements; ++e) pos[std::size_t(e)] = (e - 0.5 * (kElements - 1)) * kPitch * 1e3;
         pos[3 * kElements + 2] = 0.1;
         set(t, "ElementPos", node(MatNode::Doubles, {kElements, 5}, pos));
       },
       "Trans.ElementPos: element 3 faces 0.1 rad off the array's axis"},
      {[](Fields& t, auto&, auto&) { set(t, "Connector", node(MatNode::Doubles, {kElements, 1}, std::vector<double>(kElements, 2.5))); },
       "Trans.Connector(1) is 2.5, not a channel number"},
      {[](Fields& t, auto&, auto&) {
         std::vector<double> past(kElements);
         std::iota(past.begin(), past.end(), double(kChannels - kElements + 2));
         set(t, "Connector", node(MatNode::Doubles, {kElements, 1}, past));
       },
       "the save's Trans.Connector (--channel-map replaces it) reads element 16 from channel 21, but the array holds "
       "20 channels (its elements axis)"},
      {[](auto&, std::vector<Fields>& r, auto&) {
         set(r[0], "startSample", num(3));
         set(r[0], "endSample", num(kSamples + 2));
       },
       "usrecon reads a frame's acquisitions from its first row on"},
      {[](auto&, std::vector<Fields>& r, auto&) { set(r[1], "aperture", num(65)); },
       "Receive(2).aperture is 65: a multiplexed aperture is not read"},
      {[](auto&, std::vector<Fields>& r, auto&) { set(r[1], "startDepth", num(kStartDepth + 1)); },
       "Receive(2) is sampled or started unlike Receive(1)"},
      {[](auto&, std::vector<Fields>& r, auto&) { set(r[0], "mode", num(1)); },
       "Receive(1).mode accumulates onto rows no acquisition has filled"},
      {[](auto&, auto&, std::vector<Fields>& x) { set(x[1], "Steer", row({0.1, 0.2})); }, "TX(2) is steered in elevation"},
      {[](auto&, auto&, std::vector<Fields>& x) { set(x[0], "Steer", row({2.0, 0})); },
       "TX(1).Steer(1) 2 rad is not a steering angle"},
      {[](auto&, auto&, std::vector<Fields>& x) { set(x[1], "FocalPtMm", row({1, 20})); },
       "TX(2).FocalPtMm is not a point (x, y, z)"},
      {[](auto&, auto&, std::vector<Fields>& x) {
         set(x[2], "focus", num(60));
         set(x[2], "Origin", row({std::nan(""), 0, 0}));
       },
       "TX(3).Origin is not a point"},
  };
  for (std::size_t k = 0; k < refused.size(); ++k) {
    SCOPED_TRACE(refused[k].second);
    try {
      (void)read("refused" + std::to_string(k), refused[k].first);
      ADD_FAILURE() << "read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(refused[k].second), std::string::npos) << e.what();
    }
  }
  const auto notes = [](const FileGeometry& g) {
    std::string all;
    for (const std::string& n : g.notes) all += n + "\n";
    return all;
  };
  // A focused TX among plane waves: its transmits and t0 are left, and said.
  FileGeometry g = read("focused", [](auto&, auto&, std::vector<Fields>& x) { set(x[0], "focus", num(50)); });
  EXPECT_FALSE(g.model.has_value());
  EXPECT_FALSE(g.t0.has_value());
  EXPECT_NE(notes(g).find("it mixes plane waves with focused waves: give the transmits"), std::string::npos) << notes(g);
  EXPECT_NE(notes(g).find("its t0 is not taken without its transmits: give --t0"), std::string::npos) << notes(g);
  // One TX firing one element among plane waves.
  g = read("mixed", [](auto&, auto&, std::vector<Fields>& x) {
    std::vector<double> one(kElements, 0.0);
    one[4] = 1;
    set(x[1], "Apod", row(one));
  });
  EXPECT_FALSE(g.model.has_value());
  EXPECT_NE(notes(g).find("it mixes single-element transmits with plane waves"), std::string::npos) << notes(g);
  // Apod and Delay of half the array: timed from the first element's firing.
  g = read("half", [](auto&, auto&, std::vector<Fields>& x) {
    set(x[0], "Apod", row(std::vector<double>(kElements / 2, 1.0)));
    set(x[0], "Delay", row(std::vector<double>(kElements / 2, 0.0)));
  });
  EXPECT_EQ(g.time_zero, das::TimeZero::FirstElement);
  EXPECT_NE(notes(g).find("TX(1).Apod and Delay list 8 elements of the 16"), std::string::npos) << notes(g);
  // A Delay a wavelength off a plane wave at one element (15/16 of it off the fitted crossing).
  g = read("bent", [](auto&, auto&, std::vector<Fields>& x) {
    for (auto& [name, value] : x[2])
      if (name == "Delay") value.values[0] += 1;
  });
  EXPECT_EQ(g.time_zero, das::TimeZero::FirstElement);
  EXPECT_NE(notes(g).find("TX(3).Delay is not a plane wave steered at its Steer(1) (0.9375 periods off)"), std::string::npos)
      << notes(g);
  // Four TX for three acquisitions and no Event: not paired.
  Save unpaired;
  unpaired.event = false;
  unpaired.edit = [](auto&, auto&, std::vector<Fields>& x) { x.push_back(x.back()); };
  write_save(file("unpaired"), unpaired, GetParam());
  g = FileGeometry{};
  (void)read_channel_data(file("unpaired"), {}, 0, 0, &g);
  EXPECT_TRUE(g.angles.empty());
  EXPECT_NE(notes(g).find("it pairs its 4 TX with its 3 acquisitions a frame by no Event"), std::string::npos) << notes(g);
}

// From the command line: a save reconstructs with --model alone, and says where its parameters
// came from (the frame's JSON, info); --model seed names the model the save describes.
TEST_P(ReconVerasonics, TheCommandLineTakesTheSave) {
  ASSERT_FALSE(testing::usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path path = file("cli");
  write_save(path, {}, GetParam());
  const auto usrecon = [&](const std::string& args) {
    return testing::run_command(testing::quote(testing::usrecon_exe()) + " " + args + " 2>&1");
  };
  auto r = usrecon("reconstruct " + testing::quote(path) + " --model planewave --backend cpu --frame 2 --save-raw -o " +
                   testing::quote(dir_ / "out") + " --x-range -2.4e-3:2.4e-3 --z-range 5e-3:15e-3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir_ / "out" / (path.stem().string() + "_frame0002.json"));
  ASSERT_TRUE(in) << r.output;
  const nlohmann::json j = nlohmann::json::parse(in);
  const nlohmann::json& p = j["parameters"];
  EXPECT_NE(p["from_file"]["source"].get<std::string>().find("Verasonics"), std::string::npos) << p.dump();
  EXPECT_EQ(p["from_file"]["parameters"],
            (nlohmann::json{"fs", "sound_speed", "t0", "pitch", "elements", "time_zero", "angles"}));
  EXPECT_EQ(p["channel_map"]["from_file"], "Trans.Connector");
  EXPECT_EQ(p["channel_map"]["channels"].get<std::vector<int>>(), connector());
  EXPECT_EQ(p["layout"], "(samples,transmits),elements,frames");
  EXPECT_EQ(p["frame"], 2);
  r = usrecon("info " + testing::quote(path));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("reconstruct reads 3 transmit(s) x 16 element(s) x 512 samples"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("read from channels 19, 18, 17, 16, ..., 5, 4 of the array's 20 (Trans.Connector, the file's"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("parameters from Verasonics"), std::string::npos) << r.output;
  r = usrecon("reconstruct " + testing::quote(path) + " -o " + testing::quote(dir_ / "seed"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("this Verasonics save's TX describes --model planewave"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Versions, ReconVerasonics, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "V73" : "V5"; });

}  // namespace
}  // namespace usrecon::recon
