#include "usrecon/viewer/render.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "usrecon/kernels/common.hpp"
#include "usrecon/recon/bmode.hpp"

namespace usrecon::viewer {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
constexpr double kTitleScale = 0.65;
constexpr double kTextScale = 0.5;   // details, axis labels, status line
constexpr double kTickScale = 0.45;  // tick labels
constexpr int kPad = 14;             // outer margin
constexpr int kGap = 6;              // between a tick label and its tick, lines of text, ...
constexpr int kTick = 5;             // tick length
constexpr int kBarGap = 24;          // image to colour bar
constexpr int kBarWidth = 18;
constexpr int kMinCanvas = 300;
// A thin image (one row of depths, a shallow strip) is stretched to at least this many pixels a
// side, and the colour bar is at least this tall whatever the image's height, so that both stay
// readable and the bar keeps its -DR and 0 dB labels.
constexpr int kMinImageSide = 48;
constexpr int kMinBarHeight = 160;
const cv::Scalar kBackground(255, 255, 255);
const cv::Scalar kInk(0, 0, 0);
const cv::Scalar kStatusBackground(236, 236, 236);

struct NamedColormap {
  Colormap colormap;
  std::string_view name;
  int opencv;  // cv::ColormapTypes, -1 for gray
};
constexpr std::array<NamedColormap, 6> kColormaps = {{
    {Colormap::gray, "gray", -1},
    {Colormap::bone, "bone", cv::COLORMAP_BONE},
    {Colormap::hot, "hot", cv::COLORMAP_HOT},
    {Colormap::inferno, "inferno", cv::COLORMAP_INFERNO},
    {Colormap::magma, "magma", cv::COLORMAP_MAGMA},
    {Colormap::viridis, "viridis", cv::COLORMAP_VIRIDIS},
}};

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

/// Width and full height (ascent + descent) of a line of text.
cv::Size text_size(const std::string& text, double scale) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize(text, kFont, scale, 1, &baseline);
  return {size.width, size.height + baseline};
}

enum class Align { left, center, right };

/// Draws text whose box has its top at y and its left edge, centre or right edge at x.
void draw_text(cv::Mat& canvas, const std::string& text, int x, int y, double scale,
               Align align = Align::left) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize(text, kFont, scale, 1, &baseline);
  const int left = align == Align::left ? x : align == Align::center ? x - size.width / 2 : x - size.width;
  cv::putText(canvas, text, {left, y + size.height}, kFont, scale, kInk, 1, cv::LINE_AA);
}

/// Draws text turned 90 degrees anticlockwise (reading upwards), centred on `centre`.
void draw_text_vertical(cv::Mat& canvas, const std::string& text, cv::Point centre, double scale) {
  const cv::Size size = text_size(text, scale);
  cv::Mat label(size.height + 2, size.width + 2, CV_8UC3, kBackground);
  draw_text(label, text, 1, 1, scale);
  cv::rotate(label, label, cv::ROTATE_90_COUNTERCLOCKWISE);
  cv::Rect target(centre.x - label.cols / 2, centre.y - label.rows / 2, label.cols, label.rows);
  const cv::Rect clipped = target & cv::Rect(0, 0, canvas.cols, canvas.rows);
  if (clipped.area() == 0) return;
  label(cv::Rect(clipped.tl() - target.tl(), clipped.size())).copyTo(canvas(clipped));
}

cv::Mat apply_colormap(const cv::Mat& gray, Colormap colormap) {
  cv::Mat bgr;
  const auto& entry = *std::find_if(kColormaps.begin(), kColormaps.end(),
                                    [&](const NamedColormap& c) { return c.colormap == colormap; });
  if (entry.opencv < 0) cv::cvtColor(gray, bgr, cv::COLOR_GRAY2BGR);
  else cv::applyColorMap(gray, bgr, entry.opencv);
  return bgr;
}

/// Ticks over [lo, hi] spread over `length` pixels, as many as fit with their labels apart.
struct Axis {
  double lo = 0.0, hi = 1.0, step = 1.0;
  std::vector<double> values;
  std::vector<std::string> labels;
  int widest = 0;  // widest label, pixels
};

Axis make_axis(double lo, double hi, int length, int min_spacing, bool horizontal) {
  Axis axis;
  axis.lo = lo;
  axis.hi = hi;
  const double span = hi - lo;
  for (int n = std::max(1, length / min_spacing); n >= 1; --n) {
    axis.step = nice_step(span, n);
    axis.values = tick_values(lo, hi, axis.step);
    axis.labels.clear();
    axis.widest = 0;
    for (double v : axis.values) {
      axis.labels.push_back(tick_label(v, axis.step));
      axis.widest = std::max(axis.widest, text_size(axis.labels.back(), kTickScale).width);
    }
    const double spacing = axis.step / span * length;
    const int needed = horizontal ? axis.widest + 12 : text_size("0", kTickScale).height + 8;
    if (spacing >= needed) break;
  }
  return axis;
}

/// Splits " | "-joined parts into lines no wider than `width` (a single wider part gets a line).
std::vector<std::string> wrap(const std::vector<std::string>& parts, int width, double scale) {
  std::vector<std::string> lines;
  for (const std::string& part : parts) {
    if (!lines.empty() && text_size(lines.back() + " | " + part, scale).width <= width)
      lines.back() += " | " + part;
    else
      lines.push_back(part);
  }
  return lines;
}

bool has_db_scale(const Frame& frame) { return frame.is_raw() || frame.bmode_dr_db > 0.0; }

/// Everything render_view draws, placed.
struct Plan {
  Layout layout;
  std::string unit;  // "mm" or "px"
  Axis x, z, bar;
  std::string bar_label;
  std::vector<std::pair<std::string, double>> title;  // text, scale
  int title_top = 0;
};

Plan make_plan(const Frame& frame, const ViewSettings& settings) {
  const Grid& g = frame.grid;
  if (g.nx <= 0 || g.nz <= 0 || !(g.dx > 0.0) || !(g.dz > 0.0))
    throw Error(frame.name + ": nothing to show (empty image or non-positive grid step)");
  if (!(settings.dynamic_range_db > 0.0) || !std::isfinite(settings.dynamic_range_db) ||
      !std::isfinite(settings.gain_db))
    throw Error("view: the dynamic range must be a positive number of dB and the gain finite");
  Plan plan;
  const double unit = g.metric ? 1e3 : 1.0;  // metres -> mm
  plan.unit = g.metric ? "mm" : "px";

  // Image area: the longer physical side gets max_image_px, square pixels.
  const double width_m = g.nx * g.dx, height_m = g.nz * g.dz;
  const double px_per_m = std::max(16, settings.max_image_px) / std::max(width_m, height_m);
  const int square_w = static_cast<int>(std::lround(width_m * px_per_m));
  const int square_h = static_cast<int>(std::lround(height_m * px_per_m));
  const int w = std::max(kMinImageSide, square_w), h = std::max(kMinImageSide, square_h);
  const bool stretched = w != square_w || h != square_h;
  const int bar_h = std::max(h, kMinBarHeight);

  plan.x = make_axis((g.x0 - g.dx / 2) * unit, (g.x0 + (g.nx - 0.5) * g.dx) * unit, w, 50, true);
  plan.z = make_axis((g.z0 - g.dz / 2) * unit, (g.z0 + (g.nz - 0.5) * g.dz) * unit, h, 50, false);
  if (has_db_scale(frame)) {
    plan.bar = make_axis(-settings.dynamic_range_db, 0.0, bar_h, 45, false);
    plan.bar_label = "level (dB)";
  } else {
    plan.bar = make_axis(0.0, 255.0, bar_h, 45, false);
    plan.bar_label = "gray level";
  }

  const int label_h = text_size("depth (mm)", kTextScale).height;
  const int tick_h = text_size("0", kTickScale).height;
  const int left = kPad + label_h + kGap + plan.z.widest + kGap + kTick;
  const int right = kBarGap + kBarWidth + kTick + kGap + plan.bar.widest + kGap + label_h + kPad;
  const int bottom = kTick + kGap + tick_h + kGap + label_h + kPad;
  const int content_w = left + w + right;

  // Title: file name, details wrapped to the width, display settings.
  std::string display;
  const std::string gain = format("gain %+.0f dB", settings.gain_db);
  const std::string dr = format("dynamic range %.0f dB", settings.dynamic_range_db);
  if (frame.is_raw()) display = dr + ", " + gain;
  else if (frame.bmode_dr_db > 0.0) display = format("8-bit, stored with %.0f dB; shown with ", frame.bmode_dr_db) + dr + ", " + gain;
  else display = "8-bit gray levels as stored";
  if (settings.colormap != Colormap::gray) display += ", " + std::string(colormap_name(settings.colormap)) + " colormap";
  if (stretched) display += format(", pixels stretched (a side under %.0f px)", double(kMinImageSide));
  int canvas_w = std::max({content_w, kMinCanvas, text_size(frame.name, kTitleScale).width + 2 * kPad,
                           text_size(display, kTextScale).width + 2 * kPad});
  std::vector<std::string> details = wrap(frame.details, canvas_w - 2 * kPad, kTextScale);
  for (const std::string& line : details) canvas_w = std::max(canvas_w, text_size(line, kTextScale).width + 2 * kPad);
  plan.title.emplace_back(frame.name, kTitleScale);
  for (std::string& line : details) plan.title.emplace_back(std::move(line), kTextScale);
  plan.title.emplace_back(display, kTextScale);
  int title_h = 0;
  for (const auto& [text, scale] : plan.title) title_h += text_size(text, scale).height + kGap;

  const int top = kPad + title_h + kGap + tick_h / 2;  // room for the colour bar's top label
  const int content_h = top + std::max(h, bar_h) + bottom;
  const int canvas_h = std::max(content_h, kMinCanvas);
  const int dx = (canvas_w - content_w) / 2, dy = (canvas_h - content_h) / 2;
  plan.title_top = kPad + dy;
  plan.layout.canvas = {canvas_w, canvas_h};
  plan.layout.image = {dx + left, dy + top, w, h};
  plan.layout.colorbar = {dx + left + w + kBarGap, dy + top, kBarWidth, bar_h};
  return plan;
}

/// Pixel position of value v on an axis drawn from `start` over `length` pixels (lo at start,
/// or at the far end when `reversed`).
int axis_pixel(const Axis& axis, double v, int start, int length, bool reversed) {
  double f = (v - axis.lo) / (axis.hi - axis.lo);
  if (reversed) f = 1.0 - f;
  return start + std::clamp(static_cast<int>(std::lround(f * (length - 1))), 0, length - 1);
}

}  // namespace

Colormap parse_colormap(std::string_view name) {
  for (const NamedColormap& c : kColormaps)
    if (c.name == name) return c.colormap;
  std::string known;
  for (const NamedColormap& c : kColormaps) known += (known.empty() ? "" : ", ") + std::string(c.name);
  throw Error("unknown colormap '" + std::string(name) + "' (known: " + known + ")");
}

std::string_view colormap_name(Colormap colormap) {
  for (const NamedColormap& c : kColormaps)
    if (c.colormap == colormap) return c.name;
  return "?";
}

std::vector<std::string> colormap_names() {
  std::vector<std::string> names;
  for (const NamedColormap& c : kColormaps) names.emplace_back(c.name);
  return names;
}

double nice_step(double span, int max_ticks) {
  const double raw = std::abs(span) / std::max(1, max_ticks);
  if (!(raw > 0.0) || !std::isfinite(raw)) return 1.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw * (1.0 - 1e-9)) return m * magnitude;
  return 10.0 * magnitude;
}

std::vector<double> tick_values(double lo, double hi, double step) {
  std::vector<double> values;
  if (!(step > 0.0) || !(hi >= lo)) return values;
  const long long first = static_cast<long long>(std::ceil(lo / step - 1e-9));
  const long long last = static_cast<long long>(std::floor(hi / step + 1e-9));
  for (long long k = first; k <= last && values.size() < 1000; ++k) values.push_back(double(k) * step);
  return values;
}

std::string tick_label(double value, double step) {
  const int decimals = step >= 1.0 - 1e-9 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string label = buf;
  if (label.front() == '-' && label.find_first_not_of("-0.") == std::string::npos) label.erase(0, 1);
  return label;
}

Layout compute_layout(const Frame& frame, const ViewSettings& settings) {
  return make_plan(frame, settings).layout;
}

std::vector<std::uint8_t> display_levels(const Frame& frame, const ViewSettings& settings) {
  const Grid& g = frame.grid;
  if (frame.is_raw())
    return recon::log_compress(frame.envelope, g.nx, g.nz, settings.dynamic_range_db, settings.gain_db);
  if (!(frame.bmode_dr_db > 0.0)) return frame.bmode;
  // Gray level q stands for q / 255 * DR0 - DR0 dB (0 for anything at or below -DR0).
  std::array<std::uint8_t, 256> lut{};
  const double dr = settings.dynamic_range_db, dr0 = frame.bmode_dr_db;
  for (int q = 1; q < 256; ++q) {
    const double db = q / 255.0 * dr0 - dr0 + settings.gain_db;
    lut[q] = static_cast<std::uint8_t>(std::lround(std::clamp((db + dr) / dr, 0.0, 1.0) * 255.0));
  }
  std::vector<std::uint8_t> out(frame.bmode.size());
  std::transform(frame.bmode.begin(), frame.bmode.end(), out.begin(), [&](std::uint8_t q) { return lut[q]; });
  return out;
}

cv::Mat render_view(const Frame& frame, const ViewSettings& settings) {
  const Plan plan = make_plan(frame, settings);
  const Layout& L = plan.layout;
  cv::Mat canvas(L.canvas, CV_8UC3, kBackground);

  int y = plan.title_top;
  for (const auto& [text, scale] : plan.title) {
    draw_text(canvas, text, L.canvas.width / 2, y, scale, Align::center);
    y += text_size(text, scale).height + kGap;
  }

  // The image, square pixels, depth down.
  std::vector<std::uint8_t> levels = display_levels(frame, settings);
  const cv::Mat gray(frame.grid.nz, frame.grid.nx, CV_8U, levels.data());
  cv::Mat scaled;
  const bool enlarge = L.image.width >= gray.cols && L.image.height >= gray.rows;
  cv::resize(gray, scaled, L.image.size(), 0, 0, enlarge ? cv::INTER_NEAREST : cv::INTER_AREA);
  apply_colormap(scaled, settings.colormap).copyTo(canvas(L.image));
  const cv::Rect frame_box(L.image.x - 1, L.image.y - 1, L.image.width + 2, L.image.height + 2);
  cv::rectangle(canvas, frame_box, kInk, 1);

  const int tick_h = text_size("0", kTickScale).height;
  // Lateral axis under the image.
  const int x_axis_y = frame_box.br().y;
  for (std::size_t i = 0; i < plan.x.values.size(); ++i) {
    const int u = axis_pixel(plan.x, plan.x.values[i], L.image.x, L.image.width, false);
    cv::line(canvas, {u, x_axis_y}, {u, x_axis_y + kTick}, kInk, 1);
    draw_text(canvas, plan.x.labels[i], u, x_axis_y + kTick + kGap, kTickScale, Align::center);
  }
  draw_text(canvas, "lateral (" + plan.unit + ")", L.image.x + L.image.width / 2,
            x_axis_y + kTick + kGap + tick_h + kGap, kTextScale, Align::center);

  // Depth axis left of the image.
  const int z_axis_x = frame_box.x;
  for (std::size_t i = 0; i < plan.z.values.size(); ++i) {
    const int v = axis_pixel(plan.z, plan.z.values[i], L.image.y, L.image.height, false);
    cv::line(canvas, {z_axis_x - kTick, v}, {z_axis_x, v}, kInk, 1);
    draw_text(canvas, plan.z.labels[i], z_axis_x - kTick - kGap, v - tick_h / 2, kTickScale, Align::right);
  }
  const int label_h = text_size("depth (mm)", kTextScale).height;
  draw_text_vertical(canvas, "depth (" + plan.unit + ")",
                     {z_axis_x - kTick - kGap - plan.z.widest - kGap - label_h / 2,
                      L.image.y + L.image.height / 2},
                     kTextScale);

  // Colour bar: top row the highest level, bottom row the lowest.
  const cv::Rect& bar = L.colorbar;
  cv::Mat ramp(bar.height, 1, CV_8U);
  for (int r = 0; r < bar.height; ++r)
    ramp.at<std::uint8_t>(r) = static_cast<std::uint8_t>(
        bar.height == 1 ? 255 : std::lround(255.0 * (1.0 - double(r) / (bar.height - 1))));
  cv::Mat ramp_wide;
  cv::repeat(ramp, 1, bar.width, ramp_wide);
  apply_colormap(ramp_wide, settings.colormap).copyTo(canvas(bar));
  cv::rectangle(canvas, cv::Rect(bar.x - 1, bar.y - 1, bar.width + 2, bar.height + 2), kInk, 1);
  const int bar_right = bar.x + bar.width;
  for (std::size_t i = 0; i < plan.bar.values.size(); ++i) {
    const int v = axis_pixel(plan.bar, plan.bar.values[i], bar.y, bar.height, true);
    cv::line(canvas, {bar_right, v}, {bar_right + kTick, v}, kInk, 1);
    draw_text(canvas, plan.bar.labels[i], bar_right + kTick + kGap, v - tick_h / 2, kTickScale);
  }
  draw_text_vertical(canvas, plan.bar_label,
                     {bar_right + kTick + kGap + plan.bar.widest + kGap + label_h / 2, bar.y + bar.height / 2},
                     kTextScale);
  return canvas;
}

int status_height() { return text_size("Ag", kTextScale).height + 2 * kGap + 1; }

cv::Mat render_status(int width, const std::string& text) {
  cv::Mat strip(status_height(), std::max(1, width), CV_8UC3, kStatusBackground);
  cv::line(strip, {0, 0}, {strip.cols - 1, 0}, cv::Scalar(170, 170, 170), 1);
  draw_text(strip, text, kPad, kGap + 1, kTextScale);
  return strip;
}

cv::Mat render_window(const Frame& frame, const ViewSettings& settings, const std::string& status) {
  const cv::Mat view = render_view(frame, settings);
  cv::Mat out;
  cv::vconcat(view, render_status(view.cols, status), out);
  return out;
}

std::optional<std::string> describe_point(const Frame& frame, const ViewSettings& settings,
                                          const Layout& layout, cv::Point at) {
  if (!layout.image.contains(at)) return std::nullopt;
  const Grid& g = frame.grid;
  const int ix = std::clamp(int((at.x - layout.image.x + 0.5) * g.nx / layout.image.width), 0, g.nx - 1);
  const int iz = std::clamp(int((at.y - layout.image.y + 0.5) * g.nz / layout.image.height), 0, g.nz - 1);
  std::string text;
  if (g.metric) {
    text = format("x = %.2f mm", (g.x0 + ix * g.dx) * 1e3) + format(", z = %.2f mm", (g.z0 + iz * g.dz) * 1e3);
  } else {
    text = "x = " + std::to_string(ix) + " px, z = " + std::to_string(iz) + " px";
  }
  if (frame.is_raw()) {
    const double v = frame.envelope[std::size_t(ix) * g.nz + iz];
    text += v > 0.0 && frame.envelope_peak > 0.0
                ? format(", %.1f dB", 20.0 * std::log10(v / frame.envelope_peak) + settings.gain_db)
                : std::string(", -inf dB");
  } else {
    const int q = frame.bmode[std::size_t(iz) * g.nx + ix];
    if (!(frame.bmode_dr_db > 0.0)) text += ", gray " + std::to_string(q);
    else if (q == 0) text += format(", below %.1f dB", -frame.bmode_dr_db + settings.gain_db);
    else text += format(", %.1f dB", q / 255.0 * frame.bmode_dr_db - frame.bmode_dr_db + settings.gain_db);
  }
  return text;
}

}  // namespace usrecon::viewer
