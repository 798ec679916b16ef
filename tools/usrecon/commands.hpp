// The usrecon subcommands. Each registers its options on the app and returns the callback that
// runs it; the CLI only parses options and drives the library.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <type_traits>

namespace usrecon::cli {

using Command = std::function<int()>;  // returns the process exit code

/// A finite number > 0 (or, allow_zero, >= 0). CLI::PositiveNumber's and NonNegativeNumber's
/// messages printed double's largest value in full ("Value -1 not in range 0.000000 to
/// 17976931348623157...", 309 digits), and NaN passed the latter.
inline CLI::Validator positive_number(bool allow_zero = false) {
  return CLI::Validator(
      [allow_zero](std::string& text) -> std::string {
        double value = 0;
        if (CLI::detail::lexical_cast(text, value) && (value > 0 || (allow_zero && value == 0)) && std::isfinite(value))
          return {};
        return std::string(allow_zero ? "must be a number >= 0" : "must be a positive number") + ", not " + text;
      },
      allow_zero ? "NONNEGATIVE" : "POSITIVE");
}

/// A number from lo to hi, a whole one when T is an integer type. CLI::Range said "Value abc not
/// in range 0 to 4096" of a value that is no number at all, and "3.5 not in range" of one that is
/// in it but not whole.
template <class T>
CLI::Validator in_range(T lo, T hi) {
  const auto text_of = [](T v) {
    std::ostringstream out;
    out << v;
    return out.str();
  };
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        T value{};
        if (!CLI::detail::lexical_cast(text, value))
          return std::string(std::is_integral_v<T> ? "must be a whole number" : "must be a number") + " from " +
                 text_of(lo) + " to " + text_of(hi) + ", not " + text;
        if (!(value >= lo && value <= hi)) return "must be from " + text_of(lo) + " to " + text_of(hi) + ", not " + text;
        return {};
      },
      "[" + text_of(lo) + " - " + text_of(hi) + "]");
}

Command add_reconstruct(CLI::App& app);
Command add_simulate(CLI::App& app);
Command add_metrics(CLI::App& app);
Command add_view(CLI::App& app);
Command add_info(CLI::App& app);

}  // namespace usrecon::cli
