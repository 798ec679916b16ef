#include "usrecon/viewer/window.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <opencv2/highgui.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "usrecon/io/png.hpp"

namespace fs = std::filesystem;

namespace usrecon::viewer {
namespace {

constexpr const char* kWindow = "usrecon view";
constexpr const char* kDrTrackbar = "dynamic range (dB)";
constexpr const char* kGainTrackbar = "gain (dB)";

bool connect_unix(const std::string& path, bool abstract) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::size_t offset = abstract ? 1 : 0;  // abstract names start with a NUL byte
  if (path.size() + offset >= sizeof addr.sun_path) {
    ::close(fd);
    return false;
  }
  std::memcpy(addr.sun_path + offset, path.data(), path.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + offset + path.size());
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0;
  ::close(fd);
  return ok;
}

bool connect_tcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  bool ok = false;
  for (addrinfo* a = found; a && !ok; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const timeval timeout{3, 0};  // Linux applies the send timeout to connect()
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return ok;
}

/// Whether the X server named by DISPLAY ("[host]:N[.S]") accepts a connection; nullopt when
/// the name is not of that form (left to the toolkit).
std::optional<bool> x_display_reachable(const std::string& display) {
  const std::size_t colon = display.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string host = display.substr(0, colon);
  if (const std::size_t slash = host.rfind('/'); slash != std::string::npos) host.erase(0, slash + 1);
  const std::string rest = display.substr(colon + 1);
  const std::string number = rest.substr(0, rest.find('.'));
  if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos || number.size() > 5)
    return std::nullopt;
  if (host.empty() || host == "unix") {
    const std::string path = "/tmp/.X11-unix/X" + number;
    return connect_unix(path, true) || connect_unix(path, false);
  }
  return connect_tcp(host, 6000 + std::stoi(number));
}

struct WindowState {
  const std::vector<fs::path>* files = nullptr;
  std::size_t index = 0;
  Frame frame;
  ViewSettings settings;
  Layout layout;
  cv::Mat view;  // render_view of frame with settings
  bool view_stale = true;
  cv::Point mouse{-1, -1};
  bool status_stale = true;
  bool trackbars_ready = false;
};

// Each trackbar sets its own value only: reading both (as one callback did) rounded a fractional
// --dynamic-range or --gain to whole dB as soon as the other trackbar moved.
void on_dynamic_range_trackbar(int position, void* userdata) {
  auto& s = *static_cast<WindowState*>(userdata);
  if (!s.trackbars_ready) return;
  s.settings.dynamic_range_db = position;
  s.view_stale = true;
}

void on_gain_trackbar(int position, void* userdata) {
  auto& s = *static_cast<WindowState*>(userdata);
  if (!s.trackbars_ready) return;
  s.settings.gain_db = position;
  s.view_stale = true;
}

void on_mouse(int event, int x, int y, int, void* userdata) {
  auto& s = *static_cast<WindowState*>(userdata);
  if (event != cv::EVENT_MOUSEMOVE && event != cv::EVENT_LBUTTONDOWN) return;
  s.mouse = {x, y};
  s.status_stale = true;
}

/// Loads files[index], or (stepping by `step`, wrapping) the first of the others that loads;
/// failures are reported on stderr. False when none loads.
bool load_from(WindowState& s, std::size_t index, int step) {
  const std::size_t count = s.files->size();
  for (std::size_t tried = 0; tried < count; ++tried) {
    const fs::path& file = (*s.files)[index];
    try {
      s.frame = load_frame(file);
      s.index = index;
      s.view_stale = true;
      cv::setWindowTitle(kWindow, std::string(kWindow) + ": " + s.frame.name + " (" +
                                      std::to_string(index + 1) + "/" + std::to_string(count) + ")");
      return true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "usrecon view: %s\n", e.what());
    }
    index = step_index(index, count, step == 0 ? 1 : step);
  }
  return false;
}

void save_view(const WindowState& s, const fs::path& save_dir) {
  const fs::path out = saved_view_path((*s.files)[s.index], save_dir);
  try {
    std::error_code ec;
    if (!save_dir.empty()) fs::create_directories(save_dir, ec);
    cv::Mat bgr = s.view.isContinuous() ? s.view : s.view.clone();
    io::write_png_bgr8(out, bgr.cols, bgr.rows,
                       std::span<const std::uint8_t>(bgr.data, bgr.total() * bgr.elemSize()));
    std::printf("usrecon view: saved %s\n", out.string().c_str());
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "usrecon view: %s\n", e.what());
  }
}

}  // namespace

namespace detail {
bool x_display_accepts_client(const char* display);  // x11_probe.cpp: XOpenDisplay's handshake
}  // namespace detail

std::optional<std::string> display_problem() {
  const char* display = std::getenv("DISPLAY");
  if (display == nullptr || *display == '\0') {
    const char* wayland = std::getenv("WAYLAND_DISPLAY");
    if (wayland != nullptr && *wayland != '\0') return std::nullopt;
    return std::string("no display (DISPLAY is not set)");
  }
  if (x_display_reachable(display) == false)
    return "cannot connect to display '" + std::string(display) + "' (DISPLAY)";
  // A server that takes the connection may still refuse this client (no or a stale
  // XAUTHORITY: sudo, ssh -X, a container given the socket): the toolkit would then abort the
  // process. Xlib's handshake asks first.
  if (!detail::x_display_accepts_client(display))
    return "display '" + std::string(display) + "' refuses this client (its X authorization: XAUTHORITY, xhost)";
  return std::nullopt;
}

std::string key_help(std::size_t index, std::size_t count) {
  return "file " + std::to_string(index + 1) + "/" + std::to_string(count) +
         " | keys: n/p next/previous, s save, q quit";
}

std::size_t step_index(std::size_t index, std::size_t count, int step) {
  if (count == 0) return 0;
  const long long n = static_cast<long long>(count);
  return static_cast<std::size_t>(((static_cast<long long>(index) + step) % n + n) % n);
}

fs::path saved_view_path(const fs::path& file, const fs::path& save_dir) {
  return save_dir / (file.stem().string() + ".view.png");
}

int run_window(const std::vector<fs::path>& files, std::size_t start, const WindowOptions& options) {
  WindowState s;
  s.files = &files;
  s.settings = options.settings;
  cv::namedWindow(kWindow, cv::WINDOW_AUTOSIZE | cv::WINDOW_KEEPRATIO | cv::WINDOW_GUI_NORMAL);
  if (files.empty() || !load_from(s, std::min(start, files.size() - 1), 1)) {
    cv::destroyAllWindows();
    std::fprintf(stderr, "usrecon view: none of the %zu file(s) could be shown\n", files.size());
    return 1;
  }
  if (!options.dynamic_range_given && !s.frame.is_raw() && s.frame.bmode_dr_db > 0.0)
    s.settings.dynamic_range_db = s.frame.bmode_dr_db;
  s.settings.dynamic_range_db = std::clamp(s.settings.dynamic_range_db, double(kMinDynamicRangeDb),
                                           double(kMaxDynamicRangeDb));
  s.settings.gain_db = std::clamp(s.settings.gain_db, double(kMinGainDb), double(kMaxGainDb));

  cv::createTrackbar(kDrTrackbar, kWindow, nullptr, kMaxDynamicRangeDb, on_dynamic_range_trackbar, &s);
  cv::setTrackbarMin(kDrTrackbar, kWindow, kMinDynamicRangeDb);
  cv::setTrackbarPos(kDrTrackbar, kWindow, static_cast<int>(std::lround(s.settings.dynamic_range_db)));
  cv::createTrackbar(kGainTrackbar, kWindow, nullptr, kMaxGainDb, on_gain_trackbar, &s);
  cv::setTrackbarMin(kGainTrackbar, kWindow, kMinGainDb);
  cv::setTrackbarPos(kGainTrackbar, kWindow, static_cast<int>(std::lround(s.settings.gain_db)));
  s.trackbars_ready = true;
  cv::setMouseCallback(kWindow, on_mouse, &s);

  using Clock = std::chrono::steady_clock;
  const auto opened = Clock::now();
  std::string shown_status;
  for (;;) {
    if (s.view_stale) {
      s.view = render_view(s.frame, s.settings);
      s.layout = compute_layout(s.frame, s.settings);
      s.view_stale = false;
      s.status_stale = true;
      shown_status.clear();
    }
    if (s.status_stale) {
      const std::string status = describe_point(s.frame, s.settings, s.layout, s.mouse)
                                     .value_or(key_help(s.index, files.size()));
      if (status != shown_status) {
        cv::Mat shown;
        cv::vconcat(s.view, render_status(s.view.cols, status), shown);
        cv::imshow(kWindow, shown);
        shown_status = status;
      }
      s.status_stale = false;
    }
    const int key = cv::waitKey(30);
    if (options.exit_after_ms > 0 &&
        Clock::now() - opened >= std::chrono::milliseconds(options.exit_after_ms))
      break;
    if (cv::getWindowProperty(kWindow, cv::WND_PROP_VISIBLE) < 1.0) break;  // closed
    if (key < 0) continue;
    const int c = key & 0xFFFF;
    if (c == 'q' || c == 'Q' || c == 27) break;
    if (c == 'n' || c == 'N' || c == 'p' || c == 'P') {
      const int step = (c == 'n' || c == 'N') ? 1 : -1;
      if (files.size() > 1) load_from(s, step_index(s.index, files.size(), step), step);
      s.status_stale = true;
    } else if (c == 's' || c == 'S') {
      save_view(s, options.save_dir);
    }
  }
  cv::destroyAllWindows();
  return 0;
}

}  // namespace usrecon::viewer
