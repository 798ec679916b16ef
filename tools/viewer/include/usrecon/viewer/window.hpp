// The interactive side of `usrecon view`: an OpenCV HighGUI window showing render_view's picture
// with trackbars for dynamic range and gain, the value under the cursor, and keys to step through
// files and save the view.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "usrecon/viewer/render.hpp"

namespace usrecon::viewer {

/// Why no window can be opened here, or nullopt when one can: DISPLAY unset (and no
/// WAYLAND_DISPLAY), or an X display that refuses connections. Checked before any HighGUI call,
/// because Qt aborts the process when it cannot connect.
std::optional<std::string> display_problem();

struct WindowOptions {
  ViewSettings settings;
  /// When false and the first file shown is an 8-bit image whose .json gives its dynamic range,
  /// the window starts at that dynamic range (so it is shown as it is).
  bool dynamic_range_given = false;
  std::filesystem::path save_dir = ".";  ///< where 's' writes <stem>.view.png
  int exit_after_ms = 0;                 ///< close by itself after this long (0 = never); for tests
};

/// Trackbar limits of the window.
// The range reconstruct --dynamic-range takes, so that a PNG shows in the window as --export
// shows it (at its own range).
inline constexpr int kMinDynamicRangeDb = 1, kMaxDynamicRangeDb = 300;
inline constexpr int kMinGainDb = -40, kMaxGainDb = 40;

/// The status line when the cursor is not over the image.
std::string key_help(std::size_t index, std::size_t count);

/// The file 'n' (step +1) or 'p' (step -1) moves to from `index` among `count`, wrapping around.
std::size_t step_index(std::size_t index, std::size_t count, int step);

/// Where 's' saves the view of `file`: save_dir/<stem>.view.png.
std::filesystem::path saved_view_path(const std::filesystem::path& file,
                                      const std::filesystem::path& save_dir);

/// Shows files[start] in a window until q/Esc or the window is closed; n/p step through `files`
/// (a file that fails to load is reported on stderr and skipped), s saves the current view.
/// Returns the process exit code: 0, or 1 when no file of the list can be loaded.
int run_window(const std::vector<std::filesystem::path>& files, std::size_t start,
               const WindowOptions& options);

}  // namespace usrecon::viewer
