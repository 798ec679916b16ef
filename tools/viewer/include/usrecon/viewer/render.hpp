// The annotated B-mode picture of `usrecon view`: image with square pixels, lateral and depth axes
// with ticks in mm, a colour bar in dB and a title. Pure functions of (frame, settings), so the
// window, --export and the tests all draw the same picture.
#pragma once

#include <opencv2/core.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "usrecon/viewer/frame.hpp"

namespace usrecon::viewer {

enum class Colormap { gray, bone, hot, inferno, magma, viridis };

/// "gray", "bone", ...; throws usrecon::Error for an unknown name.
Colormap parse_colormap(std::string_view name);
std::string_view colormap_name(Colormap colormap);
std::vector<std::string> colormap_names();

struct ViewSettings {
  double dynamic_range_db = 60.0;  ///< levels below -dynamic_range_db (after gain) are black
  double gain_db = 0.0;            ///< added to every level before clipping at 0 dB
  Colormap colormap = Colormap::gray;
  int max_image_px = 720;  ///< the longer side of the image area, in screen pixels
};

/// Where things are on the canvas (all in canvas pixels).
struct Layout {
  cv::Size canvas;    ///< the whole picture (without the window's status line)
  cv::Rect image;     ///< the image area; depth down, lateral across
  cv::Rect colorbar;  ///< 0 dB (or gray 255) at the top row, -DR (or 0) at the bottom row
};

Layout compute_layout(const Frame& frame, const ViewSettings& settings);

/// The frame's gray levels as displayed, px[z * nx + x]: a raw frame log-compressed with the
/// settings' dynamic range and gain (recon::log_compress); an 8-bit frame with a known dynamic
/// range re-mapped from its dB scale onto the settings' one (unchanged when they are equal and the
/// gain is 0); an 8-bit frame without one as it is.
std::vector<std::uint8_t> display_levels(const Frame& frame, const ViewSettings& settings);

/// The annotated picture, CV_8UC3 (BGR), of size compute_layout(...).canvas, at least 300 x 300.
cv::Mat render_view(const Frame& frame, const ViewSettings& settings);

/// The window's status line: a strip `width` pixels wide holding `text`, put under the picture.
cv::Mat render_status(int width, const std::string& text);
int status_height();

/// What the window shows: render_view with render_status(text) underneath.
cv::Mat render_window(const Frame& frame, const ViewSettings& settings, const std::string& status);

/// "x = 12.35 mm, z = 20.10 mm, -23.4 dB" for the canvas pixel `at` (pixel units and gray levels
/// for a frame without a metric grid or a known dynamic range); nullopt outside the image area.
std::optional<std::string> describe_point(const Frame& frame, const ViewSettings& settings,
                                          const Layout& layout, cv::Point at);

/// A tick step of 1, 2 or 5 times a power of ten giving at most max_ticks intervals over span.
double nice_step(double span, int max_ticks);
/// Multiples of step in [lo, hi].
std::vector<double> tick_values(double lo, double hi, double step);
/// A tick label with as many decimals as the step needs ("-0" written "0").
std::string tick_label(double value, double step);

}  // namespace usrecon::viewer
