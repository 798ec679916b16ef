// `usrecon view` in a real window: an X server in memory (Xvfb), the viewer opened on it, the
// screen captured with xwd and searched for the picture the renderer draws; with xdotool the
// cursor readout and the keys n, p, s and q are driven too. Skipped, with the reason, where the
// X tools are missing (Debian packages: xvfb, x11-apps for xwd, x11-utils for xwininfo, xdotool).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <tuple>
#include <optional>
#include <thread>

#include "../test_support.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/viewer/frame.hpp"
#include "usrecon/viewer/render.hpp"
#include "usrecon/viewer/window.hpp"

extern char** environ;

namespace fs = std::filesystem;
namespace viewer = usrecon::viewer;
using namespace std::chrono_literals;
using usrecon::testing::quote;
using usrecon::testing::run_command;
using usrecon::testing::usrecon_exe;

namespace {

using Clock = std::chrono::steady_clock;

bool have_tool(const std::string& tool) {
  return run_command("command -v " + tool + " >/dev/null").exit_code == 0;
}

/// The missing ones of the tools, with their Debian packages ("" when all are there).
std::string missing_tools(const std::vector<std::pair<std::string, std::string>>& tools) {
  std::string missing;
  for (const auto& [tool, package] : tools)
    if (!have_tool(tool)) missing += (missing.empty() ? "" : ", ") + tool + " (Debian package " + package + ")";
  return missing;
}

/// A child process; terminated (TERM, then KILL) when still running at destruction.
class Child {
 public:
  /// Starts argv[0] (searched in PATH) with stdout and stderr to `log`; `pass_fd`, when given,
  /// becomes the child's descriptor `as_fd`.
  Child(const std::vector<std::string>& argv, const fs::path& log, int pass_fd = -1, int as_fd = -1) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    if (pass_fd >= 0) posix_spawn_file_actions_adddup2(&actions, pass_fd, as_fd);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ <= 0 || exit_code_) return;
    ::kill(pid_, SIGTERM);
    if (!wait_exit(5s)) {
      ::kill(pid_, SIGKILL);
      wait_exit(5s);
    }
  }
  bool started() const { return pid_ > 0; }
  /// The exit code (128 + signal when killed) once the process has ended within `timeout`.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    const auto end = Clock::now() + timeout;
    while (pid_ > 0 && !exit_code_) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_)
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      else if (Clock::now() >= end) break;
      else std::this_thread::sleep_for(50ms);
    }
    return exit_code_;
  }
  bool running() { return !wait_exit(0ms); }

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

/// Xvfb on a display number it picks itself (-displayfd), 1280 x 1024, 24-bit.
class VirtualScreen {
 public:
  explicit VirtualScreen(const fs::path& log) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    constexpr int kChildFd = 9;  // where Xvfb writes its display number
    server_.emplace(std::vector<std::string>{"Xvfb", "-displayfd", std::to_string(kChildFd), "-screen", "0",
                                             "1280x1024x24", "-nolisten", "tcp"},
                    log, fds[1], kChildFd);
    ::close(fds[1]);
    std::string number;
    const auto end = Clock::now() + 60s;
    while (Clock::now() < end) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      char c = 0;
      if (::read(fds[0], &c, 1) != 1 || c == '\n') break;
      number += c;
    }
    ::close(fds[0]);
    if (!number.empty()) display_ = ":" + number;
  }
  const std::string& display() const { return display_; }  // "" when it did not start

 private:
  std::optional<Child> server_;
  std::string display_;
};

/// An xwd dump (X Window Dump, version 7, ZPixmap, 24 or 32 bits per pixel) as BGR.
cv::Mat read_xwd(const fs::path& file) {
  const std::string d = usrecon::io::read_file(file);
  const auto u32 = [&](std::size_t at) {
    return std::uint32_t(std::uint8_t(d[at])) << 24 | std::uint32_t(std::uint8_t(d[at + 1])) << 16 |
           std::uint32_t(std::uint8_t(d[at + 2])) << 8 | std::uint32_t(std::uint8_t(d[at + 3]));
  };
  if (d.size() < 100 || u32(4) != 7 || u32(8) != 2) return {};
  const std::uint32_t header = u32(0), width = u32(16), height = u32(20), lsb_first = u32(28) == 0;
  const std::uint32_t bytes = u32(44) / 8, stride = u32(48), visual = u32(52), ncolors = u32(76);
  const std::uint32_t masks[3] = {u32(64), u32(60), u32(56)};  // blue, green, red
  const std::size_t data = header + std::size_t(ncolors) * 12;
  if ((bytes != 3 && bytes != 4) || d.size() < data + std::size_t(stride) * height) return {};
  // DirectColor (class 5): each channel indexes the colormap.
  const auto lookup = [&](int channel, std::uint32_t index) -> std::uint8_t {
    if (visual != 5 || index >= ncolors) return std::uint8_t(index);
    const std::size_t entry = header + std::size_t(index) * 12;
    const int offset = channel == 2 ? 4 : channel == 1 ? 6 : 8;  // red, green, blue CARD16
    return std::uint8_t(d[entry + offset]);
  };
  cv::Mat bgr(int(height), int(width), CV_8UC3);
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      const char* p = d.data() + data + std::size_t(y) * stride + std::size_t(x) * bytes;
      std::uint32_t v = 0;
      for (std::uint32_t b = 0; b < bytes; ++b)
        v |= std::uint32_t(std::uint8_t(p[b])) << (8 * (lsb_first ? b : bytes - 1 - b));
      cv::Vec3b& out = bgr.at<cv::Vec3b>(int(y), int(x));
      for (int c = 0; c < 3; ++c)
        out[c] = lookup(c, (v & masks[c]) >> __builtin_ctz(masks[c] ? masks[c] : 1));
    }
  }
  return bgr;
}

/// Waits (up to `timeout`) until `check` holds; true if it did.
bool wait_until(const std::function<bool()>& check, std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  for (;;) {
    if (check()) return true;
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(200ms);
  }
}

class CliViewWindow : public usrecon::testing::TempDir {
 protected:
  void SetUp() override {
    TempDir::SetUp();
    ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set (run the tests with ctest)";
    const std::string missing =
        missing_tools({{"Xvfb", "xvfb"}, {"xwd", "x11-apps"}, {"xwininfo", "x11-utils"}});
    if (!missing.empty()) GTEST_SKIP() << "needs an X server in memory and screen capture; missing: " << missing;
    screen_.emplace(dir_ / "xvfb.log");
    ASSERT_FALSE(screen_->display().empty())
        << "Xvfb did not start: " << usrecon::io::read_file(dir_ / "xvfb.log");
  }
  void TearDown() override {
    viewer_.reset();
    screen_.reset();
    TempDir::TearDown();
  }

  void start_viewer(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "-u", "WAYLAND_DISPLAY", "DISPLAY=" + screen_->display(),
                                     usrecon_exe(), "view"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--exit-after-ms");
    argv.push_back("120000");  // never outlives a broken test for long
    viewer_.emplace(argv, dir_ / "viewer.log");
    ASSERT_TRUE(viewer_->started());
  }
  std::string viewer_log() { return usrecon::io::read_file(dir_ / "viewer.log"); }

  /// The window list of the screen (xwininfo -root -tree).
  std::string windows() {
    return run_command("xwininfo -display " + screen_->display() + " -root -tree").output;
  }
  cv::Mat screenshot() {
    const fs::path shot = dir_ / "shot.xwd";
    if (run_command("xwd -root -silent -display " + screen_->display() + " > " + quote(shot)).exit_code != 0)
      return {};
    return read_xwd(shot);
  }
  /// Where `expected` is on the screen, if it is there exactly.
  std::optional<cv::Point> find_on_screen(const cv::Mat& expected) {
    last_shot_ = screenshot();
    if (last_shot_.empty() || last_shot_.cols < expected.cols || last_shot_.rows < expected.rows) return {};
    cv::Mat score;
    cv::matchTemplate(last_shot_, expected, score, cv::TM_SQDIFF);
    cv::Point best;
    cv::minMaxLoc(score, nullptr, nullptr, &best, nullptr);
    const cv::Mat found = last_shot_(cv::Rect(best, expected.size()));
    if (cv::norm(found, expected, cv::NORM_INF) != 0.0) return {};
    return best;
  }
  // Waits are generous (60 s): they end as soon as the picture is there, and Qt starting under
  // ASan on a busy CI machine can be slow.
  std::optional<cv::Point> wait_for_picture(const cv::Mat& expected) {
    std::optional<cv::Point> at;
    wait_until([&] { return (at = find_on_screen(expected)).has_value() || !viewer_->running(); }, 60s);
    if (!at) ADD_FAILURE() << "the expected picture is not on the screen" << keep_last_shot();
    return at;
  }
  /// Saves the last screenshot where it outlives the test; says where.
  std::string keep_last_shot() {
    if (last_shot_.empty()) return " (no screenshot)";
    const fs::path kept = fs::temp_directory_path() / ("usrecon-CliViewWindow-last-shot-" +
                                                       std::to_string(::getpid()) + ".png");
    cv::imwrite(kept.string(), last_shot_);
    return " (last screenshot: " + kept.string() + ")";
  }
  /// Waits until the screen shows one of `pictures` with its top-left corner at `at`; its index.
  std::optional<std::size_t> wait_for_one_of(const std::vector<cv::Mat>& pictures, cv::Point at) {
    std::optional<std::size_t> found;
    wait_until(
        [&] {
          last_shot_ = screenshot();
          for (std::size_t i = 0; i < pictures.size() && !last_shot_.empty(); ++i) {
            const cv::Rect r(at, pictures[i].size());
            if ((r & cv::Rect(0, 0, last_shot_.cols, last_shot_.rows)) == r &&
                cv::norm(last_shot_(r), pictures[i], cv::NORM_INF) == 0.0)
              found = i;
          }
          return found.has_value() || !viewer_->running();
        },
        60s);
    if (!found) ADD_FAILURE() << "none of the expected pictures is on the screen" << keep_last_shot();
    return found;
  }
  void xdotool(const std::string& args) {
    const auto r = run_command("DISPLAY=" + screen_->display() + " xdotool " + args);
    ASSERT_EQ(r.exit_code, 0) << "xdotool " << args << ": " << r.output;
  }

  std::optional<VirtualScreen> screen_;
  std::optional<Child> viewer_;
  cv::Mat last_shot_;
};

/// Rows (centres) in column x from y0 down to the end of the window (where the black of the bare
/// X root starts) in which something other than the column's most common colour (the window
/// background) runs for at least 3 pixels: the trackbars' grooves.
std::vector<int> marked_rows(const cv::Mat& shot, int x, int y0) {
  std::map<std::tuple<int, int, int>, int> counts;
  const auto colour = [&](int y) {
    const cv::Vec3b p = shot.at<cv::Vec3b>(y, x);
    return std::tuple<int, int, int>(p[0], p[1], p[2]);
  };
  const auto black = [&](int y) { return shot.at<cv::Vec3b>(y, x) == cv::Vec3b(0, 0, 0); };
  int y1 = y0;
  while (y1 < shot.rows && !(y1 + 4 < shot.rows && black(y1) && black(y1 + 2) && black(y1 + 4))) ++y1;
  for (int y = y0; y < y1; ++y) ++counts[colour(y)];
  if (counts.empty()) return {};
  const auto background = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) {
                            return a.second < b.second;
                          })->first;
  std::vector<int> rows;
  for (int y = y0; y < y1;) {
    int end = y;
    while (end < y1 && colour(end) != background) ++end;
    if (end - y >= 3) rows.push_back((y + end) / 2);
    y = std::max(end, y + 1);
  }
  return rows;
}

/// Two frames of the same size (so the window keeps its place): a ramp across and one along depth.
void write_frame(const fs::path& npy, const std::vector<double>& raw, int nx, int nz) {
  const std::size_t shape[2] = {std::size_t(nx), std::size_t(nz)};
  usrecon::io::write_npy(npy, usrecon::io::DType::f64, shape, raw.data());
  usrecon::io::write_file_atomic(
      viewer::sidecar_json(npy),
      R"({"model": "test", "grid": {"x0": 0.0, "dx": 1e-4, "nx": )" + std::to_string(nx) +
          R"(, "z0": 0.0, "dz": 1e-4, "nz": )" + std::to_string(nz) + "}}");
}

void write_frames(const fs::path& dir) {
  const int nx = 120, nz = 90;
  std::vector<double> across(std::size_t(nx) * nz), along(across.size());
  for (int x = 0; x < nx; ++x)
    for (int z = 0; z < nz; ++z) {
      across[std::size_t(x) * nz + z] = std::pow(10.0, -3.0 * x / nx);
      along[std::size_t(x) * nz + z] = std::pow(10.0, -3.0 * z / nz) * (1.0 + 0.001 * z);
    }
  fs::create_directories(dir);
  write_frame(dir / "a.npy", across, nx, nz);
  write_frame(dir / "b.npy", along, nx, nz);
}

}  // namespace

TEST_F(CliViewWindow, ShowsTheAnnotatedPictureOfTheBundledExample) {
  const auto r = run_command(quote(usrecon_exe()) + " reconstruct " +
                             quote(fs::path(USRECON_SOURCE_DIR) / "data" / "example.txt") + " -o " +
                             quote(dir_ / "out") + " --save-raw --backend cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  start_viewer({(dir_ / "out" / "example.npy").string()});

  // The window appears, titled with the file and its place in the directory.
  const bool shown = wait_until(
      [&] { return windows().find("\"usrecon view: example.npy (1/1)\"") != std::string::npos || !viewer_->running(); },
      60s);
  ASSERT_TRUE(shown && viewer_->running()) << windows() << "\n" << viewer_log();

  // On the screen, pixel for pixel: the picture --export writes (image, axes in mm, colour bar in
  // dB, title) with the window's status line of key help under it.
  const viewer::Frame frame = viewer::load_frame(dir_ / "out" / "example.npy");
  const cv::Mat expected = viewer::render_window(frame, {}, viewer::key_help(0, 1));
  const auto at = wait_for_picture(expected);
  ASSERT_TRUE(at.has_value()) << "picture not found on the screen (last capture: last-shot.png)\n" << viewer_log();

  // The image area on the screen is not blank, and the colour bar runs from white down to black.
  const viewer::Layout layout = viewer::compute_layout(frame, {});
  cv::Scalar mean, stddev;
  cv::meanStdDev(last_shot_(layout.image + *at), mean, stddev);
  EXPECT_GT(stddev[0], 10.0);
  const cv::Rect bar = layout.colorbar + *at;
  EXPECT_EQ(last_shot_.at<cv::Vec3b>(bar.y, bar.x + 5), cv::Vec3b(255, 255, 255));
  EXPECT_EQ(last_shot_.at<cv::Vec3b>(bar.br().y - 1, bar.x + 5), cv::Vec3b(0, 0, 0));

  // The trackbars for dynamic range and gain sit in the window too: it is taller than the picture
  // and the rows under the picture are not empty.
  const int below = at->y + expected.rows;
  ASSERT_LT(below + 20, last_shot_.rows);
  cv::meanStdDev(last_shot_(cv::Rect(at->x, below, expected.cols, 20)), mean, stddev);
  EXPECT_GT(stddev[0], 5.0) << "no trackbars under the picture";
  EXPECT_TRUE(viewer_->running()) << viewer_log();
}

TEST_F(CliViewWindow, CursorReadoutAndKeysStepSaveAndQuit) {
  const std::string missing = missing_tools({{"xdotool", "xdotool"}});
  if (!missing.empty()) GTEST_SKIP() << "needs to move the pointer and type; missing: " << missing;
  write_frames(dir_ / "frames");
  start_viewer({(dir_ / "frames").string(), "--save-dir", (dir_ / "saved").string()});

  const viewer::Frame a = viewer::load_frame(dir_ / "frames" / "a.npy");
  const viewer::Frame b = viewer::load_frame(dir_ / "frames" / "b.npy");
  const viewer::ViewSettings settings;
  const viewer::Layout layout = viewer::compute_layout(a, settings);
  ASSERT_EQ(layout.canvas, viewer::compute_layout(b, settings).canvas);
  xdotool("mousemove 1279 1023");  // out of the way
  auto at = wait_for_picture(viewer::render_window(a, settings, viewer::key_help(0, 2)));
  ASSERT_TRUE(at.has_value()) << viewer_log();

  // The cursor over the image: its position in mm and the level in dB in the status line.
  const cv::Point p(layout.image.x + layout.image.width * 3 / 4, layout.image.y + layout.image.height / 3);
  const std::string readout_a = viewer::describe_point(a, settings, layout, p).value();
  EXPECT_NE(readout_a.find(" mm, z = "), std::string::npos);
  xdotool("mousemove " + std::to_string(at->x + p.x) + " " + std::to_string(at->y + p.y));
  ASSERT_EQ(wait_for_picture(viewer::render_window(a, settings, readout_a)), at) << readout_a << "\n" << viewer_log();

  // n: the next file, with the readout for it under the same cursor.
  xdotool("key n");
  const std::string readout_b = viewer::describe_point(b, settings, layout, p).value();
  ASSERT_NE(readout_a, readout_b);
  ASSERT_EQ(wait_for_picture(viewer::render_window(b, settings, readout_b)), at) << viewer_log();
  EXPECT_NE(windows().find("\"usrecon view: b.npy (2/2)\""), std::string::npos) << windows();

  // s: the view (without the status line) saved as <stem>.view.png in --save-dir. The viewer
  // says "saved" once the file is in place (it is renamed there whole): waited for first, since
  // the file can appear a moment before the line does.
  xdotool("key s");
  const fs::path saved = dir_ / "saved" / "b.view.png";
  ASSERT_TRUE(wait_until([&] { return viewer_log().find("saved " + saved.string()) != std::string::npos; }, 30s))
      << viewer_log();
  const cv::Mat png = cv::imread(saved.string(), cv::IMREAD_COLOR);
  ASSERT_FALSE(png.empty()) << saved;
  const cv::Mat expected_b = viewer::render_view(b, settings);
  ASSERT_EQ(png.size(), expected_b.size());
  EXPECT_EQ(cv::norm(png, expected_b, cv::NORM_INF), 0.0);

  // p: back to the first file (and n from the last wraps around to it as well).
  xdotool("key p");
  ASSERT_EQ(wait_for_picture(viewer::render_window(a, settings, readout_a)), at) << viewer_log();
  xdotool("key n");
  ASSERT_EQ(wait_for_picture(viewer::render_window(b, settings, readout_b)), at) << viewer_log();
  xdotool("key n");
  ASSERT_EQ(wait_for_picture(viewer::render_window(a, settings, readout_a)), at) << viewer_log();

  // q: the viewer closes and exits 0.
  xdotool("key q");
  EXPECT_EQ(viewer_->wait_exit(30s), 0) << viewer_log();
}

// The viewer on a.npy with `options`, its window found on the screen as rendered for (dr, gain),
// and under the picture its two trackbars, dynamic range then gain. A middle click sets a Qt
// slider to the value under the pointer: near_top clicks near the right end, close to the maximum.
class CliViewTrackbars : public CliViewWindow {
 protected:
  cv::Mat picture(double dr, double gain) const {
    viewer::ViewSettings s;
    s.dynamic_range_db = dr;
    s.gain_db = gain;
    return viewer::render_window(frame_, s, viewer::key_help(0, 2));
  }
  void open(const std::vector<std::string>& options, double dr, double gain) {
    const std::string missing = missing_tools({{"xdotool", "xdotool"}});
    if (!missing.empty()) GTEST_SKIP() << "needs to click the trackbars; missing: " << missing;
    write_frames(dir_ / "frames");
    std::vector<std::string> args = {(dir_ / "frames" / "a.npy").string()};
    args.insert(args.end(), options.begin(), options.end());
    start_viewer(args);
    frame_ = viewer::load_frame(dir_ / "frames" / "a.npy");
    xdotool("mousemove 1279 1023");
    const cv::Mat first = picture(dr, gain);
    const auto at = wait_for_picture(first);
    ASSERT_TRUE(at.has_value()) << viewer_log();
    at_ = *at;
    grooves_ = marked_rows(last_shot_, at_.x + first.cols * 45 / 100, at_.y + first.rows);
    ASSERT_GE(grooves_.size(), 2u) << "trackbars not found under the picture" << keep_last_shot();
    right_ = at_.x + first.cols - 12;
  }
  void near_top(int trackbar) {
    xdotool("mousemove " + std::to_string(right_) + " " + std::to_string(grooves_[std::size_t(trackbar)]) + " click 2");
  }
  static constexpr int kDynamicRange = 0, kGain = 1;
  viewer::Frame frame_;
  cv::Point at_;
  std::vector<int> grooves_;
  int right_ = 0;
};

TEST_F(CliViewTrackbars, SetDynamicRangeAndGain) {
  open({}, viewer::ViewSettings{}.dynamic_range_db, viewer::ViewSettings{}.gain_db);
  if (HasFatalFailure() || IsSkipped()) return;
  // The picture follows: it is the one rendered for some dynamic range in the top quarter.
  near_top(kDynamicRange);
  std::vector<cv::Mat> candidates;
  const int lowest = viewer::kMaxDynamicRangeDb * 3 / 4;
  for (int dr = lowest; dr <= viewer::kMaxDynamicRangeDb; ++dr) candidates.push_back(picture(dr, 0.0));
  const auto dr_index = wait_for_one_of(candidates, at_);
  ASSERT_TRUE(dr_index.has_value()) << viewer_log();
  const int dr = lowest + int(*dr_index);

  // And the gain: close to +40 dB.
  near_top(kGain);
  candidates.clear();
  for (int gain = 30; gain <= viewer::kMaxGainDb; ++gain) candidates.push_back(picture(dr, gain));
  const auto gain_index = wait_for_one_of(candidates, at_);
  ASSERT_TRUE(gain_index.has_value()) << "dynamic range " << dr << "\n" << viewer_log();
  EXPECT_TRUE(viewer_->running());
}

// A fractional --dynamic-range or --gain stays as given while the other trackbar moves (one
// callback read both trackbars, so moving the gain made 42.5 dB 43).
TEST_F(CliViewTrackbars, MovingOneKeepsTheOthersFractionalValue) {
  open({"--dynamic-range", "42.5", "--gain", "-7.5"}, 42.5, -7.5);
  if (HasFatalFailure() || IsSkipped()) return;
  // The gain moves near its top; the dynamic range stays 42.5 dB. The 42 and 43 dB pictures are
  // candidates too, so that a rounded range is found, and fails, rather than timing out.
  near_top(kGain);
  std::vector<cv::Mat> candidates;
  std::vector<std::pair<double, int>> settings;
  for (const double dr : {42.5, 42.0, 43.0})
    for (int gain = 30; gain <= viewer::kMaxGainDb; ++gain) {
      candidates.push_back(picture(dr, gain));
      settings.emplace_back(dr, gain);
    }
  const auto gain_index = wait_for_one_of(candidates, at_);
  ASSERT_TRUE(gain_index.has_value()) << viewer_log();
  EXPECT_EQ(settings[*gain_index].first, 42.5) << "gain " << settings[*gain_index].second;
  const int gain = settings[*gain_index].second;

  // And the other way round: the dynamic range moves, the gain (now whole) stays.
  near_top(kDynamicRange);
  candidates.clear();
  const int lowest = viewer::kMaxDynamicRangeDb * 3 / 4;
  for (int dr = lowest; dr <= viewer::kMaxDynamicRangeDb; ++dr) candidates.push_back(picture(dr, gain));
  EXPECT_TRUE(wait_for_one_of(candidates, at_).has_value()) << "gain " << gain << "\n" << viewer_log();
  EXPECT_TRUE(viewer_->running());
}
