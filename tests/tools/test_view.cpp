// usrecon view's library: loading a reconstruction's outputs, the annotated picture (pure
// function), the cursor readout and the window's file stepping — all without a display.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "../test_support.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/png.hpp"
#include "usrecon/viewer/frame.hpp"
#include "usrecon/viewer/render.hpp"
#include "usrecon/viewer/window.hpp"

namespace fs = std::filesystem;
namespace viewer = usrecon::viewer;
using usrecon::testing::TempDir;

namespace {

constexpr int kNx = 40, kNz = 60;
constexpr double kStep = 0.1e-3;  // 0.1 mm

viewer::Grid metric_grid(int nx = kNx, int nz = kNz, double dx = kStep, double dz = kStep) {
  return {0.0, dx, nx, 0.0, dz, nz, true};
}

/// A raw image whose envelope is flat along depth: 1.0 in the left half (0 dB), 0.1 in the right
/// half (-20 dB). A constant line is its own envelope (only the DC bin, kept as it is).
std::vector<double> two_level_raw() {
  std::vector<double> raw(std::size_t(kNx) * kNz);
  for (int x = 0; x < kNx; ++x)
    for (int z = 0; z < kNz; ++z) raw[std::size_t(x) * kNz + z] = x < kNx / 2 ? 1.0 : 0.1;
  return raw;
}

viewer::Frame two_level_frame() {
  return viewer::frame_from_raw("two-level.npy", two_level_raw(), metric_grid(), {"model test"});
}

/// Expected gray level of a dB value (before gain) for a dynamic range and gain.
int expected_level(double db, double dr, double gain) {
  return int(std::lround(std::clamp((db + gain + dr) / dr, 0.0, 1.0) * 255.0));
}

cv::Vec3b at(const cv::Mat& m, int x, int y) { return m.at<cv::Vec3b>(y, x); }

bool is_ink(const cv::Vec3b& p) { return p != cv::Vec3b(255, 255, 255); }

/// Pixels that are not the white background inside a rectangle of the canvas.
int ink_in(const cv::Mat& canvas, cv::Rect r) {
  r &= cv::Rect(0, 0, canvas.cols, canvas.rows);
  int n = 0;
  for (int y = r.y; y < r.y + r.height; ++y)
    for (int x = r.x; x < r.x + r.width; ++x) n += is_ink(at(canvas, x, y));
  return n;
}

void write_json(const fs::path& file, const std::string& text) { usrecon::io::write_file_atomic(file, text); }

const char* kGridJson = R"({"model": "seed", "grid": {"x0": 0.0, "dx": 1e-4, "nx": 40, "z0": 0.0,
  "dz": 1e-4, "nz": 60}, "parameters": {"channels": 128, "samples": 2000, "dynamic_range_db": 40.0,
  "sound_speed_m_per_s": 1540.0}})";

}  // namespace

// ---- ticks ----------------------------------------------------------------------------------

TEST(CliViewRender, NiceTickStepsAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(viewer::nice_step(60.0, 12), 5.0);
  EXPECT_DOUBLE_EQ(viewer::nice_step(60.0, 7), 10.0);
  EXPECT_DOUBLE_EQ(viewer::nice_step(38.1, 9), 5.0);
  EXPECT_DOUBLE_EQ(viewer::nice_step(1.0, 5), 0.2);
  EXPECT_NEAR(viewer::nice_step(0.37, 4), 0.1, 1e-15);
  EXPECT_DOUBLE_EQ(viewer::nice_step(255.0, 6), 50.0);
  // Never more intervals than asked for.
  for (double span : {0.013, 0.7, 3.3, 38.1, 60.0, 999.0})
    for (int n = 1; n < 15; ++n) EXPECT_LE(span / viewer::nice_step(span, n), n * (1 + 1e-9)) << span << " " << n;

  const auto ticks = viewer::tick_values(-0.025, 59.975, 5.0);
  ASSERT_EQ(ticks.size(), 12u);
  EXPECT_DOUBLE_EQ(ticks.front(), 0.0);
  EXPECT_DOUBLE_EQ(ticks.back(), 55.0);
  EXPECT_EQ(viewer::tick_values(-60.0, 0.0, 10.0).size(), 7u);

  EXPECT_EQ(viewer::tick_label(-0.0, 0.5), "0.0");
  EXPECT_EQ(viewer::tick_label(-1e-12, 5.0), "0");
  EXPECT_EQ(viewer::tick_label(2.5, 0.5), "2.5");
  EXPECT_EQ(viewer::tick_label(0.15, 0.05), "0.15");
  EXPECT_EQ(viewer::tick_label(-60.0, 10.0), "-60");
}

// ---- the picture ----------------------------------------------------------------------------

TEST(CliViewRender, ImageAreaShowsTheLogCompressedDataWithSquarePixels) {
  const viewer::Frame frame = two_level_frame();
  for (const auto& [dr, gain] : {std::pair{60.0, 0.0}, {50.0, 0.0}, {60.0, 5.0}, {30.0, -4.0}}) {
    SCOPED_TRACE(testing::Message() << "DR " << dr << " gain " << gain);
    viewer::ViewSettings settings;
    settings.dynamic_range_db = dr;
    settings.gain_db = gain;
    const cv::Mat view = viewer::render_view(frame, settings);
    const viewer::Layout layout = viewer::compute_layout(frame, settings);
    ASSERT_EQ(view.type(), CV_8UC3);
    EXPECT_EQ(view.size(), layout.canvas);
    EXPECT_GE(view.cols, 300);
    EXPECT_GE(view.rows, 300);
    // 4 mm x 6 mm: the depth side gets max_image_px, pixels stay square.
    EXPECT_EQ(layout.image.height, settings.max_image_px);
    EXPECT_NEAR(double(layout.image.width) / layout.image.height, 4.0 / 6.0, 0.01);
    EXPECT_TRUE(cv::Rect(0, 0, view.cols, view.rows).contains(layout.image.br() - cv::Point(1, 1)));

    const cv::Rect& im = layout.image;
    const int left = expected_level(0.0, dr, gain), right = expected_level(-20.0, dr, gain);
    for (int y : {im.y, im.y + im.height / 2, im.y + im.height - 1}) {
      EXPECT_EQ(at(view, im.x + im.width / 4, y), cv::Vec3b(left, left, left)) << y;
      EXPECT_EQ(at(view, im.x + 3 * im.width / 4, y), cv::Vec3b(right, right, right)) << y;
    }
    // The border between the halves sits in the middle of the image area.
    EXPECT_EQ(at(view, im.x + im.width / 2 - 2, im.y + 10)[0], left);
    EXPECT_EQ(at(view, im.x + im.width / 2 + 2, im.y + 10)[0], right);
  }
}

TEST(CliViewRender, AxesTitleAndColourBarAreDrawn) {
  const viewer::Frame frame = two_level_frame();
  const viewer::ViewSettings settings;
  const cv::Mat view = viewer::render_view(frame, settings);
  const viewer::Layout layout = viewer::compute_layout(frame, settings);
  const cv::Rect& im = layout.image;
  const cv::Rect& bar = layout.colorbar;

  // Depth tick labels and label left of the image, lateral ones under it, title above, colour bar
  // labels right of the bar: every margin holds text.
  EXPECT_GT(ink_in(view, {0, im.y, im.x - 8, im.height}), 200);                   // depth axis
  EXPECT_GT(ink_in(view, {im.x, im.br().y + 8, im.width, view.rows - im.br().y - 8}), 200);  // lateral
  EXPECT_GT(ink_in(view, {0, 0, view.cols, im.y - 12}), 500);                     // title lines
  EXPECT_GT(ink_in(view, {bar.br().x + 2, bar.y - 8, view.cols - bar.br().x - 2, bar.height + 16}), 200);
  // The frame around the image and the tick marks below it.
  EXPECT_EQ(at(view, im.x - 1, im.y + im.height / 2), cv::Vec3b(0, 0, 0));
  EXPECT_EQ(at(view, im.x + im.width / 2, im.br().y), cv::Vec3b(0, 0, 0));
  int ticks = 0;
  for (int x = im.x; x < im.br().x; ++x) ticks += at(view, x, im.br().y + 3) == cv::Vec3b(0, 0, 0);
  EXPECT_GE(ticks, 3);  // 0, 1, 2, 3 mm at least

  // Colour bar: gray, white (0 dB) at the top down to black (-DR) at the bottom, monotonic.
  const int column = bar.x + bar.width / 2;
  EXPECT_EQ(at(view, column, bar.y), cv::Vec3b(255, 255, 255));
  EXPECT_EQ(at(view, column, bar.br().y - 1), cv::Vec3b(0, 0, 0));
  std::set<int> levels;
  for (int y = bar.y + 1; y < bar.br().y; ++y) {
    const cv::Vec3b p = at(view, column, y);
    EXPECT_LE(p[0], at(view, column, y - 1)[0]) << y;
    EXPECT_TRUE(p[0] == p[1] && p[1] == p[2]) << y;
    levels.insert(p[0]);
  }
  EXPECT_GT(levels.size(), 200u);
  // Nothing of the bar is in the image area and vice versa.
  EXPECT_TRUE((bar & im).empty());
}

TEST(CliViewRender, ColourBarLabelsFollowTheDynamicRangeAndColormapsColourIt) {
  const viewer::Frame frame = two_level_frame();
  viewer::ViewSettings dr60, dr40;
  dr40.dynamic_range_db = 40.0;
  const cv::Mat a = viewer::render_view(frame, dr60), b = viewer::render_view(frame, dr40);
  const viewer::Layout la = viewer::compute_layout(frame, dr60), lb = viewer::compute_layout(frame, dr40);
  ASSERT_EQ(la.colorbar, lb.colorbar);
  // Same bar, different tick labels (0..-60 against 0..-40).
  const cv::Rect labels(la.colorbar.br().x + 2, la.colorbar.y - 8, a.cols - la.colorbar.br().x - 2,
                        la.colorbar.height + 16);
  EXPECT_GT(cv::norm(a(labels), b(labels), cv::NORM_L1), 1000.0);
  EXPECT_EQ(cv::norm(a(la.colorbar), b(lb.colorbar), cv::NORM_INF), 0.0);

  viewer::ViewSettings hot;
  hot.colormap = viewer::parse_colormap("hot");
  const cv::Mat c = viewer::render_view(frame, hot);
  const cv::Rect& bar = viewer::compute_layout(frame, hot).colorbar;
  const cv::Vec3b mid = at(c, bar.x + 2, bar.y + bar.height / 2);
  EXPECT_FALSE(mid[0] == mid[1] && mid[1] == mid[2]) << "the hot colormap is not gray";
  EXPECT_THROW(viewer::parse_colormap("rainbow-unicorn"), usrecon::Error);
  EXPECT_EQ(viewer::colormap_names().front(), "gray");
}

// Values near the top of double's range (finite, 1e307) gave an all-black picture: the analytic
// signal's sums overflowed. The picture is relative to its peak: the same as at 1.
TEST(CliViewRender, HugeFiniteValuesShowAsTheirScaledDown) {
  std::vector<double> huge = two_level_raw();
  for (double& v : huge) v *= 1e307;  // 60 of them summed: past double's range
  const viewer::Frame big = viewer::frame_from_raw("huge.npy", huge, metric_grid(), {"model test"});
  ASSERT_TRUE(std::isfinite(big.envelope_peak)) << big.envelope_peak;
  const cv::Mat a = viewer::render_view(big, {}), b = viewer::render_view(two_level_frame(), {});
  const viewer::Layout la = viewer::compute_layout(big, {});
  EXPECT_EQ(cv::norm(a(la.image), b(viewer::compute_layout(two_level_frame(), {}).image), cv::NORM_INF), 0.0);
}

TEST(CliViewRender, IsAPureFunctionOfItsInputs) {
  const viewer::Frame frame = two_level_frame();
  viewer::ViewSettings settings;
  settings.gain_db = 3.0;
  const cv::Mat a = viewer::render_view(frame, settings), b = viewer::render_view(frame, settings);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(cv::norm(a, b, cv::NORM_INF), 0.0);
  // The window's picture is the same with its status line underneath.
  const cv::Mat w = viewer::render_window(frame, settings, "x = 1.00 mm");
  ASSERT_EQ(w.rows, a.rows + viewer::status_height());
  EXPECT_EQ(cv::norm(w(cv::Rect(0, 0, a.cols, a.rows)), a, cv::NORM_INF), 0.0);
  EXPECT_GT(cv::norm(viewer::render_status(a.cols, "x = 1.00 mm"), viewer::render_status(a.cols, ""),
                     cv::NORM_L1), 500.0);
}

TEST(CliViewRender, SmallAndElongatedImagesStillGiveAtLeast300Pixels) {
  for (const auto& [nx, nz] : {std::pair{1, 1}, {3, 200}, {500, 2}}) {
    SCOPED_TRACE(testing::Message() << nx << " x " << nz);
    std::vector<double> raw(std::size_t(nx) * nz, 1.0);
    viewer::ViewSettings settings;
    settings.max_image_px = 100;
    const viewer::Frame frame = viewer::frame_from_raw("small.npy", raw, metric_grid(nx, nz));
    const cv::Mat view = viewer::render_view(frame, settings);
    EXPECT_GE(view.cols, 300);
    EXPECT_GE(view.rows, 300);
    const viewer::Layout layout = viewer::compute_layout(frame, settings);
    EXPECT_EQ(std::max(layout.image.width, layout.image.height), 100);
    EXPECT_TRUE(cv::Rect(0, 0, view.cols, view.rows).contains(layout.colorbar.br() - cv::Point(1, 1)));
    // A thin image is stretched to a readable side (3 x 200 and 500 x 2 were 2 and 1 px), and
    // the colour bar keeps a height of its own whatever the image's.
    EXPECT_GE(std::min(layout.image.width, layout.image.height), 48);
    EXPECT_GE(layout.colorbar.height, 160);
    EXPECT_TRUE(cv::Rect(0, 0, view.cols, view.rows).contains(layout.image.br() - cv::Point(1, 1)));
  }
}

TEST(CliViewRender, EightBitImagesAreShownAsTheyAreOrRemappedInDecibels) {
  std::vector<std::uint8_t> px(std::size_t(kNx) * kNz);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = std::uint8_t(i % 256);
  const viewer::Frame known = viewer::frame_from_bmode("known.png", px, metric_grid(), 60.0);
  const viewer::Frame unknown =
      viewer::frame_from_bmode("plain.png", px, {0, 1, kNx, 0, 1, kNz, false}, 0.0);
  viewer::ViewSettings same;
  EXPECT_EQ(viewer::display_levels(known, same), px);  // DR 60 = its own, no gain: as it is
  viewer::ViewSettings other;
  other.dynamic_range_db = 30.0;
  other.gain_db = 6.0;
  EXPECT_EQ(viewer::display_levels(unknown, other), px);  // unknown dB scale: never remapped
  const auto remapped = viewer::display_levels(known, other);
  for (std::size_t i = 0; i < px.size(); ++i) {
    const int q = px[i];
    const int want = q == 0 ? 0 : expected_level(q / 255.0 * 60.0 - 60.0, 30.0, 6.0);
    ASSERT_EQ(remapped[i], want) << "gray " << q;
  }
  // Pixel units: the axes are labelled in px, the bar in gray levels; both render.
  const cv::Mat view = viewer::render_view(unknown, other);
  EXPECT_GE(view.cols, 300);
}

TEST(CliViewRender, TheCursorReadoutGivesPositionInMillimetresAndLevelInDecibels) {
  const viewer::Frame frame = two_level_frame();
  viewer::ViewSettings settings;
  const viewer::Layout layout = viewer::compute_layout(frame, settings);
  const cv::Rect& im = layout.image;
  // Top-left pixel of the image: sample (0, 0), 0 dB.
  EXPECT_EQ(viewer::describe_point(frame, settings, layout, im.tl()).value_or("?"),
            "x = 0.00 mm, z = 0.00 mm, 0.0 dB");
  // Bottom-right: sample (39, 59) at 3.9 mm, 5.9 mm, -20 dB (+ gain).
  settings.gain_db = 2.0;
  EXPECT_EQ(viewer::describe_point(frame, settings, layout, im.br() - cv::Point(1, 1)).value_or("?"),
            "x = 3.90 mm, z = 5.90 mm, -18.0 dB");
  // Middle of the image: sample (20, 30).
  const cv::Point mid(im.x + im.width / 2, im.y + im.height / 2);
  EXPECT_EQ(viewer::describe_point(frame, settings, layout, mid).value_or("?"),
            "x = 2.00 mm, z = 3.00 mm, -18.0 dB");
  EXPECT_FALSE(viewer::describe_point(frame, settings, layout, im.tl() - cv::Point(1, 1)));
  EXPECT_FALSE(viewer::describe_point(frame, settings, layout, layout.colorbar.tl()));

  std::vector<std::uint8_t> px(std::size_t(kNx) * kNz, 7);
  px[5 * kNx + 3] = 200;  // z = 5, x = 3
  const viewer::Frame plain = viewer::frame_from_bmode("plain.png", px, {0, 1, kNx, 0, 1, kNz, false}, 0.0);
  const viewer::Layout pl = viewer::compute_layout(plain, settings);
  const cv::Point p(pl.image.x + int((3.5) * pl.image.width / kNx), pl.image.y + int(5.5 * pl.image.height / kNz));
  EXPECT_EQ(viewer::describe_point(plain, settings, pl, p).value_or("?"), "x = 3 px, z = 5 px, gray 200");
}

TEST(CliViewRender, RejectsSettingsAndFramesThatCannotBeShown) {
  const viewer::Frame frame = two_level_frame();
  viewer::ViewSettings bad;
  bad.dynamic_range_db = 0.0;
  EXPECT_THROW(viewer::render_view(frame, bad), usrecon::Error);
  EXPECT_THROW(viewer::frame_from_raw("x.npy", std::vector<double>(10), metric_grid()), usrecon::Error);
  EXPECT_THROW(viewer::frame_from_bmode("x.png", std::vector<std::uint8_t>(10), metric_grid(), 60.0),
               usrecon::Error);
}

// ---- files ----------------------------------------------------------------------------------

using CliViewFiles = TempDir;

TEST_F(CliViewFiles, LoadsARawReconstructionWithItsGrid) {
  const std::vector<double> raw = two_level_raw();
  const std::size_t shape[2] = {kNx, kNz};
  usrecon::io::write_npy(dir_ / "f.npy", usrecon::io::DType::f64, shape, raw.data());
  write_json(dir_ / "f.json", kGridJson);
  const viewer::Frame frame = viewer::load_frame(dir_ / "f.npy");
  EXPECT_TRUE(frame.is_raw());
  EXPECT_EQ(frame.name, "f.npy");
  EXPECT_TRUE(frame.grid.metric);
  EXPECT_EQ(frame.grid.nx, kNx);
  EXPECT_EQ(frame.grid.nz, kNz);
  EXPECT_DOUBLE_EQ(frame.grid.dx, 1e-4);
  EXPECT_NEAR(frame.envelope_peak, 1.0, 1e-12);
  EXPECT_NEAR(frame.envelope[std::size_t(kNx - 1) * kNz + 7], 0.1, 1e-12);
  std::string details;
  for (const auto& d : frame.details) details += d + "|";
  EXPECT_NE(details.find("model seed"), std::string::npos) << details;
  EXPECT_NE(details.find("128 channels x 2000 samples"), std::string::npos) << details;
  EXPECT_NE(details.find("c = 1540 m/s"), std::string::npos) << details;
  EXPECT_NE(details.find("40 x 60 grid, step 0.1 mm"), std::string::npos) << details;
}

TEST_F(CliViewFiles, LoadsAPngWithOrWithoutItsJson) {
  std::vector<std::uint8_t> px(std::size_t(kNx) * kNz, 99);
  usrecon::io::write_png_gray8(dir_ / "a.png", kNx, kNz, px);
  usrecon::io::write_png_gray8(dir_ / "b.png", kNx, kNz, px);
  write_json(dir_ / "a.json", kGridJson);
  const viewer::Frame a = viewer::load_frame(dir_ / "a.png");
  EXPECT_FALSE(a.is_raw());
  EXPECT_TRUE(a.grid.metric);
  EXPECT_DOUBLE_EQ(a.bmode_dr_db, 40.0);
  EXPECT_EQ(a.bmode, px);
  const viewer::Frame b = viewer::load_frame(dir_ / "b.png");
  EXPECT_FALSE(b.grid.metric);
  EXPECT_DOUBLE_EQ(b.grid.dx, 1.0);
  EXPECT_DOUBLE_EQ(b.bmode_dr_db, 0.0);
  ASSERT_FALSE(b.details.empty());
  EXPECT_NE(b.details.back().find("axes in pixels"), std::string::npos);
}

/// Runs load_frame and returns its error message ("" when it did not throw).
std::string load_error(const fs::path& file) {
  try {
    viewer::load_frame(file);
  } catch (const usrecon::io::InputError& e) {
    return e.what();
  }
  return "";
}

TEST_F(CliViewFiles, BadInputsAreRefusedWithTheFileNamed) {
  const auto has = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  std::string e = load_error(dir_ / "missing.npy");
  EXPECT_TRUE(has(e, "input file \"" + (dir_ / "missing.npy").string() + "\" does not exist")) << e;

  const double three[3] = {1, 2, 3};
  const std::size_t shape1[1] = {3};
  usrecon::io::write_npy(dir_ / "flat.npy", usrecon::io::DType::f64, shape1, three);
  e = load_error(dir_ / "flat.npy");
  EXPECT_TRUE(has(e, "flat.npy") && has(e, "2-D") && has(e, "(3)")) << e;

  const std::vector<double> raw = two_level_raw();
  const std::size_t shape[2] = {kNx, kNz};
  usrecon::io::write_npy(dir_ / "nojson.npy", usrecon::io::DType::f64, shape, raw.data());
  e = load_error(dir_ / "nojson.npy");
  EXPECT_TRUE(has(e, "nojson.npy") && has(e, "nojson.json") && has(e, "missing")) << e;

  usrecon::io::write_npy(dir_ / "badjson.npy", usrecon::io::DType::f64, shape, raw.data());
  write_json(dir_ / "badjson.json", "{\"grid\": ");
  e = load_error(dir_ / "badjson.npy");
  EXPECT_TRUE(has(e, "badjson.json") && has(e, "not valid JSON")) << e;

  usrecon::io::write_npy(dir_ / "nogrid.npy", usrecon::io::DType::f64, shape, raw.data());
  write_json(dir_ / "nogrid.json", R"({"model": "seed"})");
  e = load_error(dir_ / "nogrid.npy");
  EXPECT_TRUE(has(e, "nogrid.json") && has(e, "\"grid\"")) << e;

  usrecon::io::write_npy(dir_ / "nodx.npy", usrecon::io::DType::f64, shape, raw.data());
  write_json(dir_ / "nodx.json", R"({"grid": {"x0": 0, "nx": 40, "z0": 0, "dz": 1e-4, "nz": 60}})");
  e = load_error(dir_ / "nodx.npy");
  EXPECT_TRUE(has(e, "nodx.json") && has(e, "\"dx\"")) << e;

  usrecon::io::write_npy(dir_ / "other.npy", usrecon::io::DType::f64, shape, raw.data());
  write_json(dir_ / "other.json", R"({"grid": {"x0": 0, "dx": 1e-4, "nx": 41, "z0": 0, "dz": 1e-4, "nz": 60}})");
  e = load_error(dir_ / "other.npy");
  EXPECT_TRUE(has(e, "other.json") && has(e, "41 x 60") && has(e, "40 x 60")) << e;

  // reconstruct's JSON of a run that wrote no raw image, or another one: not this .npy's grid.
  usrecon::io::write_npy(dir_ / "stale.npy", usrecon::io::DType::f64, shape, raw.data());
  write_json(dir_ / "stale.json", R"({"grid": {"x0": 0, "dx": 1e-4, "nx": 40, "z0": 0, "dz": 1e-4, "nz": 60},
    "outputs": {"png": "stale.png"}})");
  e = load_error(dir_ / "stale.npy");
  EXPECT_TRUE(has(e, "stale.json describes another run's output, not stale.npy")) << e;

  usrecon::io::write_file_atomic(dir_ / "junk.png", std::string_view("not a png"));
  e = load_error(dir_ / "junk.png");
  EXPECT_TRUE(has(e, "junk.png")) << e;

  usrecon::io::write_file_atomic(dir_ / "rf.txt", std::string_view("1 2 3"));
  e = load_error(dir_ / "rf.txt");
  EXPECT_TRUE(has(e, "rf.txt") && has(e, "usrecon reconstruct")) << e;

  e = load_error(dir_);
  EXPECT_TRUE(has(e, "directory")) << e;
}

TEST_F(CliViewFiles, DirectoryListingSkipsDuplicatesSavedViewsAndOtherFiles) {
  for (const char* name : {"b.png", "a.npy", "a.png", "c.view.png", "d.txt", "e.NPY", "f.npy", "f.png", "f.json"})
    usrecon::io::write_file_atomic(dir_ / name, std::string_view("x"));
  // a.npy is a.png's raw output (a.json says so); f.npy is not (the channel data f.png was
  // reconstructed from, in the same folder), so f.png stays, the only picture of it.
  usrecon::io::write_file_atomic(dir_ / "a.json", std::string_view(R"({"outputs": {"png": "a.png", "raw": "a.npy"}})"));
  usrecon::io::write_file_atomic(dir_ / "f.json", std::string_view(R"({"outputs": {"png": "f.png"}})"));
  fs::create_directories(dir_ / "sub.npy");
  const std::vector<fs::path> files = viewer::list_viewable(dir_);
  ASSERT_EQ(files.size(), 5u);
  EXPECT_EQ(files[0].filename(), "a.npy");
  EXPECT_EQ(files[1].filename(), "b.png");
  EXPECT_EQ(files[2].filename(), "e.NPY");
  EXPECT_EQ(files[3].filename(), "f.npy");
  EXPECT_EQ(files[4].filename(), "f.png");
  EXPECT_THROW(viewer::list_viewable(dir_ / "nope"), usrecon::io::InputError);

  EXPECT_EQ(viewer::step_index(0, 3, 1), 1u);
  EXPECT_EQ(viewer::step_index(2, 3, 1), 0u);
  EXPECT_EQ(viewer::step_index(0, 3, -1), 2u);
  EXPECT_EQ(viewer::step_index(0, 1, 1), 0u);
  EXPECT_EQ(viewer::saved_view_path("/data/run/frame7.npy", "/out"), fs::path("/out/frame7.view.png"));
}
