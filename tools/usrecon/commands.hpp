// The usrecon subcommands. Each registers its options on the app and returns the callback that
// runs it; the CLI only parses options and drives the library.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <system_error>
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

/// A number from lo to hi, a whole one in decimal when T is an integer type. CLI::Range said
/// "Value abc not in range 0 to 4096" of a word and of 3.5, let NaN through, and CLI11 then read
/// 010 as octal 8 and 08 not at all. Give it with ->transform(), not ->check(): it rewrites a whole
/// number in decimal for CLI11 to convert, which check() would not keep.
template <class T>
CLI::Validator in_range(T lo, T hi) {
  const auto text_of = [](T v) {
    std::ostringstream out;
    out << v;
    return out.str();
  };
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::string range = " from " + text_of(lo) + " to " + text_of(hi) + ", not " + text;
        T value{};
        if constexpr (std::is_integral_v<T>) {
          const char* first = text.data();
          const char* const last = first + text.size();
          if (first != last && *first == '+') ++first;
          const auto [end, error] = std::from_chars(first, last, value);
          if (first == last || end != last) return "must be a whole number" + range;
          if (error == std::errc::result_out_of_range || value < lo || value > hi) return "must be" + range;
          text = std::to_string(value);  // what CLI11 converts next: 010 is ten, not octal eight
        } else {
          if (!CLI::detail::lexical_cast(text, value) || std::isnan(value)) return "must be a number" + range;
          if (!(value >= lo && value <= hi)) return "must be" + range;
        }
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
