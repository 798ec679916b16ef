// The usrecon subcommands. Each registers its options on the app and returns the callback that
// runs it; the CLI only parses options and drives the library.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <functional>
#include <string>

namespace usrecon::cli {

using Command = std::function<int()>;  // returns the process exit code

/// A finite number > 0. CLI::PositiveNumber's message printed double's largest value in full
/// ("Value -1 not in range 0.000000 to 17976931348623157...", 309 digits).
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (CLI::detail::lexical_cast(text, value) && value > 0 && std::isfinite(value)) return {};
        return "must be a positive number, not " + text;
      },
      "POSITIVE");
}

Command add_reconstruct(CLI::App& app);
Command add_simulate(CLI::App& app);
Command add_metrics(CLI::App& app);
Command add_view(CLI::App& app);
Command add_info(CLI::App& app);

}  // namespace usrecon::cli
