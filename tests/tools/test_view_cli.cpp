// `usrecon view` from the command line without a window: --export on the bundled example, errors
// that name the file, and the no-display message.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <complex>
#include <nlohmann/json.hpp>

#include "../test_support.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/viewer/frame.hpp"
#include "usrecon/viewer/render.hpp"

namespace fs = std::filesystem;
namespace viewer = usrecon::viewer;
using usrecon::testing::quote;
using usrecon::testing::run_command;
using usrecon::testing::usrecon_exe;

namespace {

/// Each test gets a directory; the bundled example is reconstructed (once per test process) by the
/// tests that use it.
class CliView : public usrecon::testing::TempDir {
 protected:
  static void TearDownTestSuite() {
    std::error_code ignored;
    if (!example_dir_.empty()) fs::remove_all(example_dir_, ignored);
  }
  void SetUp() override {
    TempDir::SetUp();
    ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set (run the tests with ctest)";
  }
  /// data/example.txt reconstructed with --save-raw: example.{npy,json,png} in example_dir_.
  void require_example() {
    if (example_dir_.empty()) {
      example_dir_ = fs::temp_directory_path() / ("usrecon-CliView-example-" + std::to_string(::getpid()));
      fs::remove_all(example_dir_);
      reconstruct_output_ = run_command(quote(usrecon_exe()) + " reconstruct " +
                                        quote(fs::path(USRECON_SOURCE_DIR) / "data" / "example.txt") +
                                        " -o " + quote(example_dir_) + " --save-raw --backend cpu")
                                .output;
    }
    ASSERT_TRUE(fs::exists(example_dir_ / "example.npy")) << reconstruct_output_;
  }
  std::string view(const std::string& args) { return quote(usrecon_exe()) + " view " + args; }

  static fs::path example_dir_;
  static std::string reconstruct_output_;
};
fs::path CliView::example_dir_;
std::string CliView::reconstruct_output_;

cv::Mat read_bgr(const fs::path& file) { return cv::imread(file.string(), cv::IMREAD_COLOR); }

/// Canvas pixel of a position in metres (the centre of the image pixel holding it).
cv::Point canvas_pixel(const viewer::Frame& frame, const viewer::Layout& layout, double x_m, double z_m) {
  const viewer::Grid& g = frame.grid;
  const double fx = (x_m - (g.x0 - g.dx / 2)) / (g.nx * g.dx);
  const double fz = (z_m - (g.z0 - g.dz / 2)) / (g.nz * g.dz);
  return {layout.image.x + int(fx * layout.image.width), layout.image.y + int(fz * layout.image.height)};
}

/// Brightest gray level (blue channel) within `radius` pixels of p.
int brightest_near(const cv::Mat& bgr, cv::Point p, int radius) {
  int best = 0;
  for (int y = p.y - radius; y <= p.y + radius; ++y)
    for (int x = p.x - radius; x <= p.x + radius; ++x) best = std::max<int>(best, bgr.at<cv::Vec3b>(y, x)[0]);
  return best;
}

}  // namespace

TEST_F(CliView, ExportOfTheBundledExampleIsTheAnnotatedPictureWithTargetsInPlace) {
  ASSERT_NO_FATAL_FAILURE(require_example());
  const fs::path out = dir_ / "example-view.png";
  const auto r = run_command(view(quote(example_dir_ / "example.npy") + " --export " + quote(out)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote"), std::string::npos) << r.output;
  const cv::Mat exported = read_bgr(out);
  ASSERT_FALSE(exported.empty());
  EXPECT_GE(exported.cols, 300);
  EXPECT_GE(exported.rows, 300);

  // Exactly the library's picture of the same file with the default settings.
  const viewer::Frame frame = viewer::load_frame(example_dir_ / "example.npy");
  const viewer::ViewSettings settings;
  const cv::Mat expected = viewer::render_view(frame, settings);
  ASSERT_EQ(exported.size(), expected.size());
  EXPECT_EQ(cv::norm(exported, expected, cv::NORM_INF), 0.0);
  // A second export to the same file is refused, the file kept, unless --overwrite.
  const auto again = run_command(view(quote(example_dir_ / "example.npy") + " --gain 10 --export " + quote(out)));
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("already exists (kept; use --overwrite to replace it)"), std::string::npos) << again.output;
  EXPECT_EQ(cv::norm(read_bgr(out), expected, cv::NORM_INF), 0.0);
  const auto forced = run_command(view(quote(example_dir_ / "example.npy") + " --gain 10 --overwrite --export " + quote(out)));
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_GT(cv::norm(read_bgr(out), expected, cv::NORM_INF), 0.0);

  // The six point targets are bright (within ~10 dB of the peak after the 1200 -> 720 row
  // downsampling) where the simulator put them, in mm on the axes; the speckle around is darker.
  const viewer::Layout layout = viewer::compute_layout(frame, settings);
  const auto truth = nlohmann::json::parse(
      usrecon::io::read_file(fs::path(USRECON_SOURCE_DIR) / "data" / "example.targets.json"));
  ASSERT_EQ(truth.at("points").size(), 6u);
  for (const auto& point : truth.at("points")) {
    const double x_mm = point.at("x_mm"), z_mm = point.at("z_mm");
    const cv::Point p = canvas_pixel(frame, layout, x_mm * 1e-3, z_mm * 1e-3);
    ASSERT_TRUE(layout.image.contains(p));
    EXPECT_GE(brightest_near(exported, p, 2), 210) << "target at " << x_mm << ", " << z_mm << " mm";
    // ... and not where x and z are swapped (a transposed image would put them there).
    const cv::Point swapped = canvas_pixel(frame, layout, z_mm * 1e-3, x_mm * 1e-3);
    if (layout.image.contains(swapped) && std::abs(x_mm - z_mm) > 3.0) {
      EXPECT_LT(brightest_near(exported, swapped, 2), 180) << "swapped " << x_mm << ", " << z_mm;
    }
  }
}

TEST_F(CliView, ExportOfThePngShowsTheSameImageAsTheRawFile) {
  ASSERT_NO_FATAL_FAILURE(require_example());
  const fs::path from_npy = dir_ / "npy.png", from_png = dir_ / "png.png";
  ASSERT_EQ(run_command(view(quote(example_dir_ / "example.npy") + " --export " + quote(from_npy))).exit_code, 0);
  const auto r = run_command(view(quote(example_dir_ / "example.png") + " --export " + quote(from_png)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const cv::Mat a = read_bgr(from_npy), b = read_bgr(from_png);
  const viewer::Frame png = viewer::load_frame(example_dir_ / "example.png");
  EXPECT_TRUE(png.grid.metric) << "axes in mm from example.json";
  EXPECT_DOUBLE_EQ(png.bmode_dr_db, 60.0);
  const viewer::Layout la = viewer::compute_layout(viewer::load_frame(example_dir_ / "example.npy"), {});
  const viewer::Layout lb = viewer::compute_layout(png, {.dynamic_range_db = 60.0});
  ASSERT_EQ(la.image.size(), lb.image.size());
  // The PNG holds the same log-compressed levels as the raw file gives at 60 dB, 0 dB gain.
  EXPECT_EQ(cv::norm(a(la.image), b(lb.image), cv::NORM_INF), 0.0);
}

// The general models' raw output is complex IQ: the viewer shows its modulus, the picture the
// reconstruction's own PNG holds (it refused complex arrays before).
TEST_F(CliView, ExportOfAGeneralModelsRawIqImageIsItsPng) {
  const fs::path channels = dir_ / "pw.npy", out = dir_ / "out";
  ASSERT_EQ(run_command(quote(usrecon_exe()) + " simulate --model planewave --elements 32 --samples 900 "
                        "--point 0,10 --point 2,15 -o " + quote(channels)).exit_code, 0);
  const auto made = run_command(quote(usrecon_exe()) + " reconstruct " + quote(channels) +
                                " --model planewave --angles-deg 0 --fs 20e6 --pitch 0.3e-3 --save-raw --backend cpu -o " + quote(out));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  ASSERT_EQ(usrecon::io::read_npy(out / "pw.npy").dtype, usrecon::io::DType::c64);
  const fs::path from_npy = dir_ / "npy.png", from_png = dir_ / "png.png";
  const auto a_run = run_command(view(quote(out / "pw.npy") + " --export " + quote(from_npy)));
  ASSERT_EQ(a_run.exit_code, 0) << a_run.output;
  ASSERT_EQ(run_command(view(quote(out / "pw.png") + " --export " + quote(from_png))).exit_code, 0);
  const viewer::Frame frame = viewer::load_frame(out / "pw.npy");
  const usrecon::io::NpyArray iq = usrecon::io::read_npy(out / "pw.npy");
  const auto values = iq.as<std::complex<float>>();
  ASSERT_EQ(frame.envelope.size(), values.size());
  for (std::size_t k = 0; k < values.size(); k += 97) ASSERT_EQ(frame.envelope[k], std::abs(std::complex<double>(values[k]))) << k;
  const viewer::Layout la = viewer::compute_layout(frame, {});
  const viewer::Layout lb = viewer::compute_layout(viewer::load_frame(out / "pw.png"), {.dynamic_range_db = 60.0});
  ASSERT_EQ(la.image.size(), lb.image.size());
  EXPECT_LE(cv::norm(read_bgr(from_npy)(la.image), read_bgr(from_png)(lb.image), cv::NORM_INF), 1.0);
}

TEST_F(CliView, ExportAppliesDynamicRangeGainColormapAndSize) {
  ASSERT_NO_FATAL_FAILURE(require_example());
  const fs::path out = dir_ / "hot.png";
  const auto r = run_command(view(quote(example_dir_ / "example.npy") + " --export " + quote(out) +
                                  " --dynamic-range 40 --gain 5 --colormap hot --max-image 400"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  viewer::ViewSettings settings;
  settings.dynamic_range_db = 40.0;
  settings.gain_db = 5.0;
  settings.colormap = viewer::Colormap::hot;
  settings.max_image_px = 400;
  const viewer::Frame frame = viewer::load_frame(example_dir_ / "example.npy");
  const cv::Mat expected = viewer::render_view(frame, settings);
  const cv::Mat exported = read_bgr(out);
  ASSERT_EQ(exported.size(), expected.size());
  EXPECT_EQ(cv::norm(exported, expected, cv::NORM_INF), 0.0);
  EXPECT_EQ(viewer::compute_layout(frame, settings).image.height, 400);
}

TEST_F(CliView, BadInputsFailWithTheFileNamed) {
  const auto fails_naming = [&](const std::string& args, const std::string& name, const std::string& what) {
    const auto r = run_command("env -u DISPLAY -u WAYLAND_DISPLAY " + view(args));
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(name), std::string::npos) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << args << "\n" << r.output;
  };
  fails_naming(quote(dir_ / "absent.npy"), "absent.npy", "does not exist");
  fails_naming(quote(dir_ / "absent.npy") + " --export " + quote(dir_ / "o.png"), "absent.npy", "does not exist");

  const double values[6] = {1, 2, 3, 4, 5, 6};
  const std::size_t shape3[3] = {1, 2, 3};
  usrecon::io::write_npy(dir_ / "cube.npy", usrecon::io::DType::f64, shape3, values);
  fails_naming(quote(dir_ / "cube.npy") + " --export " + quote(dir_ / "o.png"), "cube.npy", "2-D");
  fails_naming(quote(dir_ / "cube.npy"), "cube.npy", "2-D");  // checked before the display

  const std::size_t shape2[2] = {2, 3};
  usrecon::io::write_npy(dir_ / "alone.npy", usrecon::io::DType::f64, shape2, values);
  fails_naming(quote(dir_ / "alone.npy") + " --export " + quote(dir_ / "o.png"), "alone.json", "missing");

  usrecon::io::write_file_atomic(dir_ / "rf.txt", std::string_view("1 2 3"));
  fails_naming(quote(dir_ / "rf.txt") + " --export " + quote(dir_ / "o.png"), "rf.txt", "reconstruct");

  fails_naming(quote(dir_) + " --export " + quote(dir_ / "o.png"), dir_.string(), "not a directory");
  fs::create_directories(dir_ / "empty");
  fails_naming(quote(dir_ / "empty"), "empty", "no .npy or .png files");
  fails_naming(quote(dir_ / "alone.npy") + " --export " + quote(dir_ / "o.jpg"), "o.jpg", ".png");
  EXPECT_FALSE(fs::exists(dir_ / "o.png"));
}

TEST_F(CliView, WithoutADisplayItSaysSoAndPointsToExport) {
  const std::vector<double> raw(4 * 5, 1.0);
  const std::size_t shape[2] = {4, 5};
  usrecon::io::write_npy(dir_ / "f.npy", usrecon::io::DType::f64, shape, raw.data());
  usrecon::io::write_file_atomic(dir_ / "f.json", std::string_view(
      R"({"grid": {"x0": 0, "dx": 1e-4, "nx": 4, "z0": 0, "dz": 1e-4, "nz": 5}})"));
  auto r = run_command("env -u DISPLAY -u WAYLAND_DISPLAY " + view(quote(dir_ / "f.npy")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("usrecon view: no display (DISPLAY is not set); use --export OUT.png to "
                          "render to a file"),
            std::string::npos)
      << r.output;

  // A display that is set but not there: the same advice, not a toolkit crash.
  int unused = 9876;
  while (fs::exists("/tmp/.X11-unix/X" + std::to_string(unused))) ++unused;
  r = run_command("env -u WAYLAND_DISPLAY DISPLAY=:" + std::to_string(unused) + " " + view(quote(dir_ / "f.npy")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot connect to display ':" + std::to_string(unused) + "'"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("use --export OUT.png"), std::string::npos) << r.output;

  // A display whose socket takes the connection and then refuses the client (here: closes it at
  // once, as a server refusing our authorization ends the handshake): said in words. The socket
  // check alone passed it, and Qt then aborted the process (SIGABRT, exit 134).
  fs::create_directories("/tmp/.X11-unix");
  int refusing = unused + 1;
  while (fs::exists("/tmp/.X11-unix/X" + std::to_string(refusing))) ++refusing;
  const std::string socket_path = "/tmp/.X11-unix/X" + std::to_string(refusing);
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0) << socket_path;
  ASSERT_EQ(::listen(listener, 8), 0);
  std::atomic<bool> done = false;
  std::thread refuser([&] {
    while (!done) {
      pollfd p{listener, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0)
        if (const int client = ::accept(listener, nullptr, nullptr); client >= 0) ::close(client);
    }
  });
  r = run_command("env -u WAYLAND_DISPLAY DISPLAY=:" + std::to_string(refusing) + " " + view(quote(dir_ / "f.npy")));
  done = true;
  refuser.join();
  ::close(listener);
  ::unlink(socket_path.c_str());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("refuses this client"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("use --export OUT.png"), std::string::npos) << r.output;
}

TEST_F(CliView, HelpDescribesEveryOption) {
  const auto r = run_command(view("--help"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected :
       {"target", "<stem>.npy", "--export", "instead of opening a window", "--dynamic-range",
        "levels below -DR are black", "--gain", "added before clipping", "--colormap", "gray,bone,hot",
        "--max-image", "pixels stay square", "--save-dir", "<stem>.view.png", "n/p", "q or Esc"})
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << "\n" << r.output;
  EXPECT_EQ(r.output.find("--exit-after-ms"), std::string::npos) << "a test hook, not for users";
}
