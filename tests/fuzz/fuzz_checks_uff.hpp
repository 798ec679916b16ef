// The check of the uff target: HDF5 files that carry their own geometry (USTB UFF, PICMUS) read
// through recon::read_channel_data and then completed and checked by recon::prepare_das, as
// `usrecon reconstruct FILE` does. Kept apart because it needs usrecon::recon.
#pragma once

#include <cmath>

#include "fuzz_checks_files.hpp"
#include "usrecon/recon/das_pipeline.hpp"

namespace usrecon::fuzz {

inline bool finite_all(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

/// The channel data read must be self-consistent and finite; a file whose geometry prepare_das
/// accepts must give a finite, positive geometry. Anything refused must be a usrecon::Error
/// (InputError or Error); any other exception escapes and is a crash.
inline void check_uff(std::span<const std::uint8_t> data) {
  const std::filesystem::path path = write_scratch_file(data, ".h5");
  recon::ChannelInput in;
  int frames = 1;
  try {
    frames = recon::count_frames(path, in);
  } catch (const Error&) {
  }
  require(frames >= 1 && frames <= 100000, "count_frames out of range: " + std::to_string(frames));
  for (int frame : {1, frames}) {
    in.frame = frame;
    recon::FileGeometry g;
    recon::ChannelData rf;
    try {
      rf = recon::read_channel_data(path, in, 0, 0, &g);
    } catch (const Error&) {
      if (frame == frames) return;
      continue;
    }
    require(rf.samples >= 2 && rf.elements >= 1 && rf.transmits >= 1, "channel data of an implausible shape");
    require(rf.data.size() == rf.size(), "channel data size does not match its shape");
    require(rf.imag.empty() || rf.imag.size() == rf.data.size(), "imag size differs from real");
    for (float v : rf.data) require(std::isfinite(v), "a non-finite sample was accepted");
    for (float v : rf.imag) require(std::isfinite(v), "a non-finite Q sample was accepted");
    if (g.source.empty()) continue;
    recon::DasSetup setup;
    setup.input = in;
    setup.acquisition.probe.elements = 0;
    setup.acquisition.model = g.model.value_or(recon::Model::PlaneWave);
    recon::PreparedDas prepared;
    try {
      prepared = recon::prepare_das(path, setup, 1);
    } catch (const Error&) {
      continue;
    }
    const recon::Acquisition& a = prepared.problem.acquisition;
    const std::string what = " accepted from " + g.source;
    require(std::isfinite(a.fs) && a.fs > 0, "fs " + std::to_string(a.fs) + what);
    require(std::isfinite(a.sound_speed) && a.sound_speed > 0, "sound speed " + std::to_string(a.sound_speed) + what);
    require(std::isfinite(a.probe.pitch) && a.probe.pitch > 0, "pitch " + std::to_string(a.probe.pitch) + what);
    require(std::isfinite(a.t0), "t0 " + std::to_string(a.t0) + what);
    require(a.probe.elements == rf.elements, "elements differ from the data's" + what);
    require(finite_all(a.angles) && finite_all(a.source_x) && finite_all(a.source_z),
            "non-finite angles or sources" + what);
    const recon::Grid& grid = prepared.problem.grid;
    require(grid.nx >= 1 && grid.nz >= 1 && std::isfinite(grid.x0) && std::isfinite(grid.z0) &&
                std::isfinite(grid.dx) && std::isfinite(grid.dz) && grid.dx > 0 && grid.dz > 0,
            "a grid that is not finite" + what);
  }
}

}  // namespace usrecon::fuzz
