// Xlib's connection handshake, apart from the rest of the viewer: Xlib.h defines macros (None,
// Status, Bool, Success, ...) that must not meet OpenCV's or the standard library's headers.
#include <X11/Xlib.h>

#include <signal.h>

#include <chrono>
#include <thread>

namespace usrecon::viewer::detail {

// A few tries, 0.1 s apart: a server that has just started, or is resetting because its last
// client left (an X server's default), may turn a connection away for a moment; one that
// refuses this client's authorization refuses every try.
// A server that hangs up mid-handshake would end this process with SIGPIPE on Xlib's next
// write: ignored while probing, then put back.
bool x_display_accepts_client(const char* display) {
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &previous);
  bool accepted = false;
  for (int attempt = 0; attempt < 8 && !accepted; ++attempt) {
    if (Display* x = XOpenDisplay(display)) {
      XCloseDisplay(x);
      accepted = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  sigaction(SIGPIPE, &previous, nullptr);
  return accepted;
}

}  // namespace usrecon::viewer::detail
