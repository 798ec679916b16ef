// usrecon metrics IMAGE.npy [--point X,Z]... [--cyst X,Z,R]... [--truth FILE] [-o FILE]
#include <cmath>
#include <complex>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "commands.hpp"
#include "number_fields.hpp"
#include "same_file.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/recon/bmode.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/metrics.hpp"
#include "usrecon/viewer/frame.hpp"

namespace fs = std::filesystem;

namespace usrecon::cli {
namespace {

struct MetricsArgs {
  std::string image, grid, truth, output;
  std::vector<std::string> points, cysts;
  double search_radius = 1e-3;
};

std::vector<double> numbers(const std::string& text, const std::string& option, std::size_t n) {
  const std::vector<double> v = number_fields(text, option);
  if (v.size() != n) throw Error(option + " '" + text + "': expected " + std::to_string(n) + " numbers (metres)");
  return v;
}

// A truth point or cyst coordinate in metres: "x" as written by the general models' simulate
// --truth, or "x_mm" in millimetres as the seed model's writes it.
double metres(const nlohmann::json& item, const std::string& key, const std::string& file) {
  if (item.contains(key) && item[key].is_number()) return item[key].get<double>();
  if (item.contains(key + "_mm") && item[key + "_mm"].is_number()) return item[key + "_mm"].get<double>() * 1e-3;
  throw Error(file + ": a point or cyst has no number \"" + key + "\" (metres) or \"" + key + "_mm\" (millimetres)");
}

int run(const MetricsArgs& args) {
  const fs::path image_path = args.image;
  // Said as it is ("pw.npy/" is "Not a directory", not a missing "pw.npy/.json").
  (void)io::existing_input_status(image_path);
  // A PNG is a picture of the envelope, log-compressed to 8 bits: nothing to measure in.
  if (const std::string ext = io::lower_extension(image_path); ext != ".npy")
    throw io::InputError(image_path.string() + ": metrics measures the raw image <stem>.npy that reconstruct "
                         "--save-raw writes (beside its <stem>.json), not a " +
                         (ext.empty() ? std::string("file without the .npy extension") : ext + " file"));
  const fs::path grid_path = args.grid.empty() ? fs::path(image_path).replace_extension(".json") : fs::path(args.grid);
  // The JSON written at the end would replace an input (the image, its grid, or the truth).
  if (!args.output.empty())
    for (const fs::path& input : {image_path, grid_path, fs::path(args.truth)})
      if (!input.empty() && same_file(args.output, input))
        throw Error("-o " + args.output + " is the input " + input.string() +
                    ": write the metrics to a file of their own");
  if (!args.output.empty()) check_output_file(args.output, true, "-o " + args.output);  // replaced, unless a directory
  // The grid: from the JSON beside the image, which must be its own reconstruction's (none there:
  // not a reconstruct output; another run's: refused), or --grid's, taken as it is.
  const nlohmann::json meta = args.grid.empty() ? viewer::read_raw_image_json(image_path, "metrics")
                                                : viewer::read_json(grid_path);
  const io::NpyArray a = io::read_npy(image_path);
  if (a.shape.size() != 2 || a.shape[0] > (1u << 20) || a.shape[1] > (1u << 20))
    throw Error(image_path.string() + ": not a 2-D image [nx][nz] (a reconstruction's raw output, as the grid of " +
                grid_path.string() + " describes)");
  const viewer::Grid vg = viewer::read_grid(meta, grid_path, int(a.shape[0]), int(a.shape[1]));
  const recon::Grid g{vg.x0, vg.dx, vg.nx, vg.z0, vg.dz, vg.nz};
  std::vector<double> env;
  // The modulus of IQ in double: a finite complex64 pixel near float's largest value has a
  // modulus past it, and complex128 keeps its own range.
  if (a.dtype == io::DType::c64) {
    for (std::complex<float> c : a.as<std::complex<float>>()) env.push_back(std::abs(std::complex<double>(c)));
  } else if (a.dtype == io::DType::c128) {
    for (std::complex<double> c : a.as<std::complex<double>>()) env.push_back(std::abs(c));
  } else {
    env = recon::envelope_along_depth(a.to_double(), g.nx, g.nz);  // real RF image: Hilbert along depth
  }

  std::vector<std::array<double, 2>> points;
  std::vector<std::array<double, 3>> cysts;
  for (const std::string& p : args.points) {
    const auto v = numbers(p, "--point", 2);
    points.push_back({v[0], v[1]});
  }
  for (const std::string& c : args.cysts) {
    const auto v = numbers(c, "--cyst", 3);
    cysts.push_back({v[0], v[1], v[2]});
  }
  if (!args.truth.empty()) {
    const nlohmann::json truth = nlohmann::json::parse(io::read_file(args.truth), nullptr, false);
    if (truth.is_discarded()) throw Error(args.truth + ": not valid JSON");
    if (!truth.is_object()) throw Error(args.truth + ": not a JSON object with \"points\" and/or \"cysts\"");
    // The seed model's x counts from its first element, the general models' from the array centre:
    // a truth of the one measured on an image of the other looked at the wrong spots (0.5 to 1 mm
    // off) without a word. A seed truth is the one written in millimetres.
    const auto is_seed_truth = [&] {
      for (const char* list : {"points", "cysts"})
        for (const auto& item : truth.value(list, nlohmann::json::array()))
          if (item.is_object() && item.contains("x_mm")) return true;
      return truth.value("model", "") == "seed";
    };
    const std::string image_model = meta.is_object() ? meta.value("model", "") : "";
    if (!image_model.empty() && (image_model == "seed") != is_seed_truth())
      throw Error(args.truth + ": a " + (is_seed_truth() ? std::string("seed model's") : "general model's") +
                  " truth, but " + image_path.string() + " is a " + image_model +
                  " reconstruction: the seed model's x counts from its first element, the general models' from the "
                  "array centre, so its points and cysts would be looked for in the wrong places");
    for (const auto& p : truth.value("points", nlohmann::json::array()))
      points.push_back({metres(p, "x", args.truth), metres(p, "z", args.truth)});
    for (const auto& c : truth.value("cysts", nlohmann::json::array()))
      cysts.push_back({metres(c, "x", args.truth), metres(c, "z", args.truth), metres(c, "radius", args.truth)});
  }
  if (points.empty() && cysts.empty()) throw Error("nothing to measure: give --point, --cyst or --truth");
  // Interpolation between samples a quarter cycle apart: linear dips a channel's envelope by up to
  // 3 dB midway between them (one channel's axial width narrows, 0.23 for 0.31 mm; an array's
  // image loses amplitude unevenly, 1.8 to 4.4 dB over 64 elements, and its profiles scallop);
  // nearest misplaces its phase by up to 45 degrees.
  if (!points.empty() && meta.is_object() && meta.contains("parameters") && meta["parameters"].is_object()) {
    const nlohmann::json& p = meta["parameters"];
    const std::string interp = p.value("interp", "");
    if ((interp == "linear" || interp == "nearest") && p.contains("samples_per_cycle") &&
        p["samples_per_cycle"].is_number()) {
      const int upsampled = p.contains("upsample") && p["upsample"].is_number_integer() ? p["upsample"].get<int>() : 1;
      if (const auto loss = recon::interpolation_loss(interp == "linear" ? recon::Interp::Linear : recon::Interp::Nearest,
                                                      p["samples_per_cycle"].get<double>(), upsampled))
        std::fprintf(stderr, "usrecon: metrics: warning: in this image, %s: reconstruct --upsample %d gives at least 8\n",
                     loss->what.c_str(), loss->upsample);
    }
  }

  nlohmann::json out = {{"image", image_path.string()}, {"search_radius", args.search_radius},
                        {"units", "metres"}, {"points", nlohmann::json::array()},
                        {"cysts", nlohmann::json::array()}};
  // A target that cannot be measured (outside the image, too few pixels with data) is listed with
  // the reason, the others are still measured; the command then exits 1.
  std::size_t not_measured = 0;
  const auto measure = [&](nlohmann::json entry, auto&& measure_it) {
    try {
      return measure_it();
    } catch (const Error& e) {
      ++not_measured;
      std::fprintf(stderr, "usrecon: %s\n", e.what());  // the message starts "metrics: "
      entry["not_measured"] = e.what();
      return entry;
    }
  };
  for (const auto& p : points)
    out["points"].push_back(measure({{"true_x", p[0]}, {"true_z", p[1]}}, [&] {
      const recon::PointMetrics m = recon::measure_point(env, g, p[0], p[1], args.search_radius);
      if (m.at_region_edge)
        std::fprintf(stderr, "usrecon: metrics: warning: the maximum near (%g, %g) lies on the edge of the search "
                     "region (at_region_edge): it may not be the target's\n", p[0], p[1]);
      for (const auto& [coarse, which, width, step, option] :
           {std::tuple{m.fwhm_axial_coarse, "axial", m.fwhm_axial, g.dz, "--dz"},
            {m.fwhm_lateral_coarse, "lateral", m.fwhm_lateral, g.dx, "--dx"}})
        if (coarse) {
          // The advice depends on who made the grid: the seed model's is fixed.
          const std::string model = meta.value("model", "");
          const std::string advice = model == "seed" ? "the seed model's grid is fixed"
                                     : model.empty() ? "a finer grid measures it"
                                                     : std::string("reconstruct ") + option + " gives a finer grid";
          // Steps rounded down, so that a flagged width never reads as 2.00 steps.
          std::fprintf(stderr, "usrecon: metrics: warning: the %s width at (%g, %g) is %g m, %.2f grid steps of %g m: "
                       "under %g steps the grid decides it (fwhm_%s_coarse); %s\n", which, p[0], p[1], width,
                       std::floor(width / step * 100) / 100, step, recon::kFinestWidthSteps, which, advice.c_str());
        }
      return recon::to_json(m);
    }));
  // A maximum nearer another listed point than its own is most likely that one's (two targets
  // closer than the search radius): measured with PICMUS's formulas, and flagged.
  for (std::size_t i = 0; i < points.size(); ++i) {
    nlohmann::json& entry = out["points"][i];
    if (!entry.contains("x") || !entry.contains("z")) continue;  // not measured
    const double x = entry["x"].get<double>(), z = entry["z"].get<double>();
    const double own = std::hypot(x - points[i][0], z - points[i][1]);
    for (std::size_t j = 0; j < points.size(); ++j)
      if (j != i && std::hypot(x - points[j][0], z - points[j][1]) < own) {
        entry["nearer_another_point"] = {points[j][0], points[j][1]};
        std::fprintf(stderr, "usrecon: metrics: warning: the maximum found for (%g, %g) lies nearer the point (%g, %g): "
                     "it is most likely that one's (nearer_another_point)\n", points[i][0], points[i][1], points[j][0],
                     points[j][1]);
        break;
      }
  }
  for (const auto& c : cysts)
    out["cysts"].push_back(measure({{"x", c[0]}, {"z", c[1]}, {"radius", c[2]}},
                                   [&] { return recon::to_json(recon::measure_cyst(env, g, c[0], c[1], c[2])); }));
  const std::string text = out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (args.output.empty()) std::fputs(text.c_str(), stdout);
  else io::write_file_atomic(args.output, text);
  return not_measured == 0 ? 0 : 1;
}

}  // namespace

Command add_metrics(CLI::App& app) {
  auto args = std::make_shared<MetricsArgs>();
  app.add_option("image", args->image, "Raw image written by reconstruct --save-raw (<stem>.npy)")->required();
  app.add_option("--grid", args->grid, "JSON with the image's \"grid\", taken as it is (default: <stem>.json beside the image, refused when it "
                 "lists reconstruct's outputs but no raw image, or names another raw image lying beside it)");
  app.add_option("--point", args->points, "Point target X,Z in metres (repeatable)");
  app.add_option("--cyst", args->cysts, "Cyst X,Z,RADIUS in metres (repeatable)");
  app.add_option("--truth", args->truth, "JSON with \"points\" [{x, z}] and \"cysts\" [{x, z, radius}] in metres, or x_mm, z_mm in millimetres "
                 "(as written by simulate --truth, any --model)");
  app.add_option("--search-radius", args->search_radius, "Where to look for each point's maximum, metres")
      ->check(positive_number())->capture_default_str();
  app.add_option("-o,--output", args->output, "Write the JSON here instead of standard output (replaced if it exists)");
  app.footer("Points: position of the envelope maximum within the search radius (at_region_edge when it lies on "
             "the region's edge, nearer_another_point when another --point lies nearer it), its distance from the "
             "truth, axial and lateral -6 dB widths on the dB profiles through it, linearly interpolated (null, "
             "with the reason, when a profile does not fall 6 dB; fwhm_axial_coarse or fwhm_lateral_coarse when a width "
             "spans under 2 grid steps, where the grid decides it). Cysts: CNR on the dB image (inside 0.8 R, "
             "background ring 1.25-1.6 R, cut_by_image_edge when the ring reaches past the image) and gCNR "
             "(256-bin histograms of the dB image). Pixels without data (envelope 0, NaN or infinite) are never "
             "a maximum and are left out of cysts, counted. As PICMUS. A target that cannot be measured is listed with \"not_measured\" and the "
             "reason; the others are measured, and the command exits 1.");
  return [args] { return run(*args); };
}

}  // namespace usrecon::cli
