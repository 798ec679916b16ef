// What `usrecon view` shows: one reconstruction (its raw .npy or its 8-bit .png) with the grid and
// parameters from the .json beside it, and the list of viewable files of a directory.
#pragma once

#include <complex>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace usrecon::viewer {

/// Sample positions: lateral x = x0 + i dx (i < nx), depth z = z0 + k dz (k < nz). In metres when
/// `metric`, else in pixels (an image without a .json: x0 = z0 = 0, dx = dz = 1).
struct Grid {
  double x0 = 0.0, dx = 1.0;
  int nx = 0;
  double z0 = 0.0, dz = 1.0;
  int nz = 0;
  bool metric = false;
};

/// One image ready to display. Exactly one of `envelope` (raw input) and `bmode` (8-bit input) is
/// filled.
struct Frame {
  std::string name;     ///< shown in the title: the file name
  /// Shown under it, joined with " | " and wrapped: model, acquisition parameters, grid.
  std::vector<std::string> details;
  Grid grid;
  /// Raw input: the envelope |analytic signal| along depth, env[x * nz + z] (lateral-major).
  std::vector<double> envelope;
  double envelope_peak = 0.0;  ///< max of envelope: 0 dB
  /// 8-bit input: gray levels with depth down the rows, px[z * nx + x].
  std::vector<std::uint8_t> bmode;
  /// 8-bit input: the dynamic range it was compressed with (0 dB = 255, -bmode_dr_db = 0), from its
  /// .json; 0 when unknown (then gray levels are shown as they are).
  double bmode_dr_db = 0.0;

  bool is_raw() const { return !envelope.empty(); }
};

/// A raw beamformed image raw[x * nz + z] (the reconstruction's .npy): its envelope along depth is
/// computed here. Throws usrecon::Error when raw.size() != nx * nz.
Frame frame_from_raw(std::string name, std::span<const double> raw, const Grid& grid,
                     std::vector<std::string> details = {});

/// A beamformed IQ image iq[x * nz + z] (the general models' raw output): the envelope is |iq|.
Frame frame_from_iq(std::string name, std::span<const std::complex<double>> iq, const Grid& grid,
                    std::vector<std::string> details = {});

/// An 8-bit B-mode picture px[z * nx + x] (the reconstruction's .png). dynamic_range_db as
/// Frame::bmode_dr_db. Throws usrecon::Error when px.size() != nx * nz.
Frame frame_from_bmode(std::string name, std::vector<std::uint8_t> px, const Grid& grid,
                       double dynamic_range_db, std::vector<std::string> details = {});

/// Reads a reconstruction's output for display:
///  - `<stem>.npy`: a 2-D array [nx][nz], real (the seed model's RF image: enveloped along depth)
///    or complex (the general models' IQ image: its modulus); `<stem>.json` beside it is required
///    (its "grid" gives the axes and must match the shape);
///  - `<stem>.png` (or any 8-bit image OpenCV reads): shown as it is; the .json beside it, when
///    there, gives the axes in mm and the dynamic range, otherwise the axes are in pixels.
/// Throws io::InputError naming the file for a missing, unreadable or malformed input or .json.
Frame load_frame(const std::filesystem::path& file);

/// The .json that goes with a reconstruction output: same stem, ".json".
std::filesystem::path sidecar_json(const std::filesystem::path& file);

/// A JSON file. Throws io::InputError naming it when it cannot be read or is not JSON.
nlohmann::json read_json(const std::filesystem::path& file);

/// The frame JSON beside a raw image `npy` (sidecar_json), checked to describe it. Throws
/// io::InputError naming the file when there is none (then `npy` is probably no reconstruct
/// output: `command`, e.g. "metrics", is told that it needs reconstruct --save-raw's), when it is
/// not JSON, and when it lists reconstruct's "outputs" without naming `npy` as the raw one: it
/// then describes another run (one without --save-raw beside an older .npy), whose grid need not
/// be the image's. A JSON without "outputs" (a grid written by hand) is taken as it is.
nlohmann::json read_raw_image_json(const std::filesystem::path& npy, const std::string& command);

/// The "grid" of a reconstruction's JSON `meta` (read from `file`), checked against an image of
/// nx x nz pixels. Throws io::InputError naming `file` and the key that is missing or not a
/// finite number, steps that are not positive, or a size that is not the image's.
Grid read_grid(const nlohmann::json& meta, const std::filesystem::path& file, int nx, int nz);

/// Whether `usrecon view` can show this file name: *.npy or *.png, not a saved view *.view.png.
bool is_viewable(const std::filesystem::path& file);

/// The viewable files of a directory, sorted by name; when <stem>.npy and <stem>.png are both
/// there and <stem>.json names the .npy as the raw output of the same frame, only the .npy (which
/// allows re-compression) is listed. Throws io::InputError naming the
/// directory when it cannot be read.
std::vector<std::filesystem::path> list_viewable(const std::filesystem::path& dir);

}  // namespace usrecon::viewer
