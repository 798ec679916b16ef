#include "usrecon/viewer/frame.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>
#include <system_error>

#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/png.hpp"
#include "usrecon/kernels/common.hpp"
#include "usrecon/recon/bmode.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace usrecon::viewer {
namespace {

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

double grid_number(const json& grid, const char* key, const fs::path& file) {
  const auto it = grid.find(key);
  if (it == grid.end() || !it->is_number())
    throw io::InputError(file.string() + ": \"grid\" has no number \"" + key + "\" (" +
                         (it == grid.end()  ? std::string("missing")
                          : it->is_null()   ? std::string("found null")
                                            : "found " + std::string(it->type_name()) + " " + it->dump()) +
                         ")");
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw io::InputError(file.string() + ": \"grid\"." + key + " is not finite");
  return v;
}

}  // namespace

json read_json(const fs::path& file) {
  const std::string text = io::read_file(file);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw io::InputError(file.string() + ": not valid JSON (" + e.what() + ")");
  }
}

json read_raw_image_json(const fs::path& npy, const std::string& command) {
  const fs::path meta_file = sidecar_json(npy);
  std::error_code ec;
  if (!fs::exists(meta_file, ec))
    throw io::InputError(npy.string() + " has no grid JSON beside it (" + meta_file.string() +
                         " is missing), so it is probably not a reconstruct output (a raw image): " + command +
                         " needs the <stem>.npy that usrecon reconstruct --save-raw writes, with its <stem>.json");
  json meta = read_json(meta_file);
  // reconstruct names its outputs there. Without --save-raw it names no raw image: an .npy
  // beside such a JSON is another run's, of another grid perhaps. A JSON naming another raw image
  // that lies beside it is that image's; one naming a file that is not there is this pair renamed
  // or copied elsewhere (run1.npy and run1.json from example.*), and is taken.
  if (meta.is_object() && meta.contains("outputs")) {
    const json& outputs = meta["outputs"];
    const auto raw = outputs.is_object() ? outputs.find("raw") : outputs.end();
    const std::string name = npy.filename().string();
    const bool no_raw = raw == outputs.end() || !raw->is_string();
    std::error_code exists_ec;
    const bool other_raw_beside = !no_raw && raw->get<std::string>() != name &&
                                  fs::exists(npy.parent_path() / raw->get<std::string>(), exists_ec);
    // Channel data reconstructed into its own directory has the run's <stem>.json beside it, and
    // reconstructing again with --save-raw there would be refused for overwriting the input. Where
    // the run's input had this file's name, the advice says so (whether it is that very file, the
    // path recorded relative to that run's directory cannot always tell).
    const bool maybe_the_input = no_raw && meta.contains("input") && meta["input"].is_string() &&
                                 fs::path(meta["input"].get<std::string>()).filename() == npy.filename();
    if (no_raw || other_raw_beside)
      throw io::InputError(meta_file.string() + " describes another run's output, not " + name + ": its \"outputs\" " +
                           (no_raw ? std::string("name no raw image (that reconstruct ran without --save-raw)")
                                   : "name " + raw->dump() + ", beside it, as the raw image") +
                           ", so its grid need not be " + name + "'s; reconstruct again with --save-raw" +
                           (maybe_the_input ? " (into another directory, if " + name + " is the channel data that "
                                              "run read)"
                                            : std::string()) +
                           (command == "metrics" ? ", or name a grid JSON with --grid FILE" : ""));
  }
  return meta;
}

Grid read_grid(const json& meta, const fs::path& file, int nx, int nz) {
  const auto it = meta.find("grid");
  if (it == meta.end() || !it->is_object())
    throw io::InputError(file.string() + ": no \"grid\" object (x0, dx, nx, z0, dz, nz in metres)");
  const json& g = *it;
  Grid grid;
  grid.metric = true;
  grid.x0 = grid_number(g, "x0", file);
  grid.dx = grid_number(g, "dx", file);
  grid.z0 = grid_number(g, "z0", file);
  grid.dz = grid_number(g, "dz", file);
  const double jnx = grid_number(g, "nx", file), jnz = grid_number(g, "nz", file);
  if (!(grid.dx > 0.0) || !(grid.dz > 0.0))
    throw io::InputError(file.string() + ": \"grid\" steps dx and dz must be positive");
  if (jnx != nx || jnz != nz)
    throw io::InputError(file.string() + ": \"grid\" is " + format("%g", jnx) + " x " +
                         format("%g", jnz) + " (nx x nz) but the image is " + std::to_string(nx) +
                         " x " + std::to_string(nz));
  grid.nx = nx;
  grid.nz = nz;
  return grid;
}

namespace {

/// The title's second line: model, acquisition parameters and grid, from the .json.
std::vector<std::string> describe(const json& meta, const Grid& grid) {
  std::vector<std::string> parts;
  if (const auto m = meta.find("model"); m != meta.end() && m->is_string())
    parts.push_back("model " + m->get<std::string>());
  const json params = meta.value("parameters", json::object());
  const auto num = [&](const char* key) -> std::optional<double> {
    const auto it = params.find(key);
    if (it == params.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  const auto channels = num("channels"), samples = num("samples");
  if (channels && samples)
    parts.push_back(format("%.0f channels", *channels) + format(" x %.0f samples", *samples));
  if (const auto c = num("sound_speed_m_per_s")) parts.push_back(format("c = %g m/s", *c));
  if (const auto fs_hz = num("sampling_hz")) parts.push_back(format("fs = %g MHz", *fs_hz * 1e-6));
  if (const auto pitch = num("element_pitch_m")) parts.push_back(format("pitch %.3g mm", *pitch * 1e3));
  // Parameters of other models: shown as they are.
  static const char* const known[] = {"channels", "samples", "sound_speed_m_per_s", "sampling_hz",
                                      "element_pitch_m", "dynamic_range_db"};
  for (const auto& [key, value] : params.items()) {
    if (std::find(std::begin(known), std::end(known), key) != std::end(known)) continue;
    if (value.is_number()) parts.push_back(key + " " + format("%g", value.get<double>()));
    else if (value.is_string() || value.is_boolean()) parts.push_back(key + " " + value.dump());
  }
  std::string g = std::to_string(grid.nx) + " x " + std::to_string(grid.nz) + " grid, ";
  g += grid.dx == grid.dz ? format("step %.3g mm", grid.dx * 1e3)
                          : format("dx %.3g mm", grid.dx * 1e3) + format(", dz %.3g mm", grid.dz * 1e3);
  parts.push_back(g);
  return parts;
}

Frame load_npy(const fs::path& file) {
  const io::NpyArray array = io::read_npy(file);
  if (array.shape.size() != 2) {
    std::string shape;
    for (std::size_t d : array.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw io::InputError(file.string() + ": expected a 2-D array [nx][nz] (a reconstruction's raw "
                         "output), got " + std::to_string(array.shape.size()) + "-D shape (" +
                         shape + ")");
  }
  if (array.shape[0] == 0 || array.shape[1] == 0 || array.shape[0] > (1u << 20) ||
      array.shape[1] > (1u << 20))
    throw io::InputError(file.string() + ": unusable image size " + std::to_string(array.shape[0]) +
                         " x " + std::to_string(array.shape[1]));
  // The general models' raw output is the beamformed IQ image (complex): its modulus is the
  // envelope. A real one (the seed model's RF image) is enveloped along depth.
  const bool iq = array.dtype == io::DType::c64 || array.dtype == io::DType::c128;
  std::vector<std::complex<double>> iq_values;
  std::vector<double> raw;
  if (array.dtype == io::DType::c64)
    for (const std::complex<float> v : array.as<std::complex<float>>()) iq_values.emplace_back(v);
  else if (array.dtype == io::DType::c128) {
    const std::span<const std::complex<double>> values = array.as<std::complex<double>>();
    iq_values.assign(values.begin(), values.end());
  }
  else
    raw = array.to_double();
  const bool finite = iq ? std::all_of(iq_values.begin(), iq_values.end(),
                                       [](std::complex<double> v) { return std::isfinite(v.real()) && std::isfinite(v.imag()); })
                         : std::all_of(raw.begin(), raw.end(), [](double v) { return std::isfinite(v); });
  if (!finite) throw io::InputError(file.string() + ": holds NaN or infinite values");
  const int nx = static_cast<int>(array.shape[0]), nz = static_cast<int>(array.shape[1]);
  const json meta = read_raw_image_json(file, "view");
  const Grid grid = read_grid(meta, sidecar_json(file), nx, nz);
  if (iq) return frame_from_iq(file.filename().string(), iq_values, grid, describe(meta, grid));
  return frame_from_raw(file.filename().string(), raw, grid, describe(meta, grid));
}

Frame load_png(const fs::path& file) {
  int width = 0, height = 0;
  std::vector<std::uint8_t> px = io::read_png_gray8(file, width, height);
  Grid grid{0.0, 1.0, width, 0.0, 1.0, height, false};
  double dr = 0.0;
  std::vector<std::string> details;
  const fs::path meta_file = sidecar_json(file);
  std::error_code ec;
  if (fs::exists(meta_file, ec)) {
    const json meta = read_json(meta_file);
    grid = read_grid(meta, meta_file, width, height);
    details = describe(meta, grid);
    const json params = meta.value("parameters", json::object());
    if (const auto it = params.find("dynamic_range_db"); it != params.end() && it->is_number()) {
      dr = it->get<double>();
      if (!(dr > 0.0) || !std::isfinite(dr))
        throw io::InputError(meta_file.string() + ": \"parameters\".dynamic_range_db must be positive");
    }
  } else {
    details.push_back(std::to_string(width) + " x " + std::to_string(height) + " pixels, no " +
                      meta_file.filename().string() + ": axes in pixels");
  }
  return frame_from_bmode(file.filename().string(), std::move(px), grid, dr, std::move(details));
}

}  // namespace

namespace {

/// A frame with its name, details and grid, the grid checked against the `count` values given.
Frame frame_for(std::string name, std::size_t count, const char* values, const Grid& grid,
                std::vector<std::string> details) {
  if (grid.nx <= 0 || grid.nz <= 0 || count != std::size_t(grid.nx) * grid.nz)
    throw Error(name + ": " + std::to_string(count) + " " + values + " for a " +
                std::to_string(grid.nx) + " x " + std::to_string(grid.nz) + " grid");
  Frame frame;
  frame.name = std::move(name);
  frame.details = std::move(details);
  frame.grid = grid;
  return frame;
}

}  // namespace

Frame frame_from_raw(std::string name, std::span<const double> raw, const Grid& grid,
                     std::vector<std::string> details) {
  Frame frame = frame_for(std::move(name), raw.size(), "values", grid, std::move(details));
  // Finite values near the top of double's range overflow the analytic signal's sums to inf (an
  // all-black picture): such an image is scaled by a power of two first, which changes no level
  // (the picture is relative to its peak) and rounds nothing.
  double peak = 0;
  for (double v : raw) peak = std::max(peak, std::fabs(v));
  if (peak > 0x1p500) {
    const double scale = std::ldexp(1.0, -std::ilogb(peak));
    std::vector<double> scaled(raw.begin(), raw.end());
    for (double& v : scaled) v *= scale;
    frame.envelope = recon::envelope_along_depth(scaled, grid.nx, grid.nz);
  } else {
    frame.envelope = recon::envelope_along_depth(raw, grid.nx, grid.nz);
  }
  frame.envelope_peak = *std::max_element(frame.envelope.begin(), frame.envelope.end());
  return frame;
}

Frame frame_from_iq(std::string name, std::span<const std::complex<double>> iq, const Grid& grid,
                    std::vector<std::string> details) {
  Frame frame = frame_for(std::move(name), iq.size(), "values", grid, std::move(details));
  frame.envelope.resize(iq.size());
  for (std::size_t k = 0; k < iq.size(); ++k) frame.envelope[k] = std::abs(iq[k]);
  frame.envelope_peak = *std::max_element(frame.envelope.begin(), frame.envelope.end());
  return frame;
}

Frame frame_from_bmode(std::string name, std::vector<std::uint8_t> px, const Grid& grid,
                       double dynamic_range_db, std::vector<std::string> details) {
  Frame frame = frame_for(std::move(name), px.size(), "pixels", grid, std::move(details));
  frame.bmode = std::move(px);
  frame.bmode_dr_db = dynamic_range_db;
  return frame;
}

fs::path sidecar_json(const fs::path& file) {
  fs::path meta = file;
  meta.replace_extension(".json");
  return meta;
}

bool is_viewable(const fs::path& file) {
  const std::string ext = io::lower_extension(file);
  if (ext == ".npy") return true;
  if (ext != ".png") return false;
  return io::lower_extension(file.stem()) != ".view";
}

Frame load_frame(const fs::path& file) {
  if (fs::is_directory(io::existing_input_status(file)))
    throw io::InputError(file.string() + ": is a directory, not an image file");
  const std::string ext = io::lower_extension(file);
  if (ext == ".npy") return load_npy(file);
  if (ext == ".png") return load_png(file);
  throw io::InputError(file.string() + ": cannot view a '" + ext +
                       "' file; expected a reconstruction's .npy (with its .json) or .png" +
                       (ext == ".txt" ? " (channel data: run usrecon reconstruct on it first)" : ""));
}

std::vector<fs::path> list_viewable(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw io::InputError(dir.string() + ": cannot read the directory (" + ec.message() + ")");
  for (const fs::directory_entry& entry : it) {
    if (entry.is_regular_file(ec) && is_viewable(entry.path())) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  // <stem>.png next to <stem>.npy: the same reconstruction, keep the raw one, when <stem>.json
  // says that .npy is its raw output (--save-raw). Otherwise the .npy may be the channel data the
  // reconstruction was made from (written into its input's folder), and the .png is the picture.
  const auto raw_of_same_frame = [](const fs::path& png, const fs::path& npy) {
    try {
      const json meta = read_json(sidecar_json(png));
      const json outputs = meta.value("outputs", json::object());
      return outputs.value("raw", std::string()) == npy.filename().string();
    } catch (const std::exception&) {
      return false;
    }
  };
  const std::vector<fs::path> all = files;
  std::erase_if(files, [&](const fs::path& f) {
    if (io::lower_extension(f) != ".png") return false;
    fs::path raw = f;
    raw.replace_extension(".npy");
    return std::binary_search(all.begin(), all.end(), raw) && raw_of_same_frame(f, raw);
  });
  return files;
}

}  // namespace usrecon::viewer
