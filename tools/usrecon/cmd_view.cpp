// usrecon view FILE|DIR [--export OUT.png]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "same_file.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/png.hpp"
#include "usrecon/viewer/window.hpp"

namespace fs = std::filesystem;

namespace usrecon::cli {
namespace {

struct ViewArgs {
  std::string target;
  std::string export_png;
  bool overwrite = false;
  double dynamic_range_db = 60.0;
  bool dynamic_range_given = false;
  double gain_db = 0.0;
  std::string colormap = "gray";
  int max_image_px = 720;
  std::string save_dir = ".";
  int exit_after_ms = 0;
};

viewer::ViewSettings settings_for(const ViewArgs& args, const viewer::Frame* first) {
  viewer::ViewSettings settings;
  settings.dynamic_range_db = args.dynamic_range_db;
  // An 8-bit image is shown as it is unless asked otherwise: at the dynamic range it was made with.
  if (!args.dynamic_range_given && first && !first->is_raw() && first->bmode_dr_db > 0.0)
    settings.dynamic_range_db = first->bmode_dr_db;
  settings.gain_db = args.gain_db;
  settings.colormap = viewer::parse_colormap(args.colormap);
  settings.max_image_px = args.max_image_px;
  return settings;
}

int export_view(const ViewArgs& args, const fs::path& target) {
  const fs::path out = args.export_png;
  if (io::lower_extension(out) != ".png")
    throw Error("--export " + out.string() + ": the output must be a .png file");
  // Rendering a PNG to itself would replace the picture viewed with its annotated view.
  if (same_file(out, target))
    throw Error("--export " + out.string() + " is the file viewed, " + target.string() +
                ": export to a file of its own");
  if (fs::is_directory(target))
    throw Error(target.string() + ": --export renders one FILE, not a directory");
  // Nor over the outputs its reconstruction lists beside it (<stem>.json): --overwrite replaced the
  // B-mode PNG with the annotated view, which view then refused as the image's ("grid mismatch").
  {
    fs::path listing = target;
    listing.replace_extension(".json");
    std::error_code ec;
    if (fs::is_regular_file(listing, ec)) {
      const nlohmann::json meta = nlohmann::json::parse(io::read_file(listing), nullptr, false);
      if (meta.is_object() && meta.contains("outputs") && meta["outputs"].is_object())
        for (const auto& [kind, name] : meta["outputs"].items())
          if (name.is_string() && same_file(out, listing.parent_path() / name.get<std::string>()))
            throw Error("--export " + out.string() + " is the reconstruction's own " + kind + " output (listed in " +
                        listing.string() + "): export to a file of its own");
    }
  }
  // As reconstruct and simulate do: an existing file is kept unless --overwrite.
  check_output_file(out, args.overwrite, "--export " + out.string());
  const viewer::Frame frame = viewer::load_frame(target);
  const cv::Mat view = viewer::render_view(frame, settings_for(args, &frame));
  io::write_png_bgr8(out, view.cols, view.rows,
                     std::span<const std::uint8_t>(view.data, view.total() * view.elemSize()));
  std::printf("usrecon view: wrote %s (%d x %d pixels)\n", out.string().c_str(), view.cols, view.rows);
  return 0;
}

int run(const ViewArgs& args) {
  const fs::path target = args.target;
  // Said as it is ("fig.npy/" is "Not a directory").
  const fs::file_status status = io::existing_input_status(target);
  if (!args.export_png.empty()) return export_view(args, target);

  // The files n/p step through: the directory's, or those beside FILE.
  std::vector<fs::path> files;
  std::size_t start = 0;
  if (fs::is_directory(status)) {
    files = viewer::list_viewable(target);
    if (files.empty())
      throw io::InputError(target.string() + ": no .npy or .png files to view in this directory");
  } else {
    viewer::load_frame(target);  // a bad FILE is an error here, not a file for the window to skip
    const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    files = viewer::list_viewable(parent);
    const auto same = [&](const fs::path& f) { return f.filename() == target.filename(); };
    if (std::find_if(files.begin(), files.end(), same) == files.end()) {
      files.push_back(parent / target.filename());
      std::sort(files.begin(), files.end());
    }
    start = static_cast<std::size_t>(std::find_if(files.begin(), files.end(), same) - files.begin());
  }
  if (const auto problem = viewer::display_problem()) {
    std::fprintf(stderr, "usrecon view: %s; use --export OUT.png to render to a file\n",
                 problem->c_str());
    return 1;
  }
  viewer::WindowOptions options;
  options.settings = settings_for(args, nullptr);  // a PNG's own dynamic range: run_window
  options.dynamic_range_given = args.dynamic_range_given;
  options.save_dir = args.save_dir;
  options.exit_after_ms = args.exit_after_ms;
  return viewer::run_window(files, start, options);
}

}  // namespace

Command add_view(CLI::App& app) {
  auto args = std::make_shared<ViewArgs>();
  app.add_option("target", args->target,
                 "A reconstruction's <stem>.npy (with <stem>.json beside it) or <stem>.png, or a "
                 "directory of them")
      ->required();
  app.add_option("--export", args->export_png,
                 "Render the annotated picture to this PNG instead of opening a window");
  app.add_flag("--overwrite", args->overwrite, "--export: replace the file if it exists (otherwise it is kept)");
  auto* dr = app.add_option("--dynamic-range", args->dynamic_range_db,
                            "Dynamic range in dB: levels below -DR are black (window trackbar: "
                            "1..300, as reconstruct takes; default 60, or a PNG's own from its .json)")
                 ->transform(in_range(1.0, 300.0));
  app.add_option("--gain", args->gain_db, "Gain in dB added before clipping at 0 dB")
      ->transform(in_range(-40.0, 40.0))
      ->capture_default_str();
  app.add_option("--colormap", args->colormap, "Colour map of image and colour bar")
      ->check(CLI::IsMember(viewer::colormap_names()))
      ->capture_default_str();
  app.add_option("--max-image", args->max_image_px,
                 "Size in screen pixels of the image's longer side (pixels stay square)")
      ->transform(in_range(100, 8000))
      ->capture_default_str();
  app.add_option("--save-dir", args->save_dir, "Where the window's 's' key saves <stem>.view.png")
      ->capture_default_str();
  app.add_option("--exit-after-ms", args->exit_after_ms,
                 "Close the window by itself after this many milliseconds (for tests)")
      ->transform(in_range(0, 3600000))
      ->group("");  // hidden
  app.footer(
      "Window: trackbars set dynamic range and gain; the status line gives x, z (mm) and the level "
      "(dB) under the cursor; keys n/p step to the next/previous .npy/.png of the directory, s saves "
      "the view as <stem>.view.png (in --save-dir), q or Esc quits. Without a display use --export.");
  return [args, dr] {
    args->dynamic_range_given = dr->count() > 0;
    return run(*args);
  };
}

}  // namespace usrecon::cli
