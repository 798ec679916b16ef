// The usrecon subcommands. Each registers its options on the app and returns the callback that
// runs it; the CLI only parses options and drives the library.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <functional>
#include <string>

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

Command add_reconstruct(CLI::App& app);
Command add_simulate(CLI::App& app);
Command add_metrics(CLI::App& app);
Command add_view(CLI::App& app);
Command add_info(CLI::App& app);

}  // namespace usrecon::cli
