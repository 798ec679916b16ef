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
#include <vector>

#include "usrecon/recon/pipeline.hpp"

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

/// Any finite number (a time that may be negative, say). CLI11 said "Could not convert: --t0 = abc",
/// and an empty string was read as 0.
inline CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!text.empty() && CLI::detail::lexical_cast(text, value) && std::isfinite(value)) return {};
        return "must be a number, not " + (text.empty() ? std::string("an empty string") : text);
      },
      "NUMBER");
}

/// What an option given "" (a shell variable left unset, say) is told: it was taken for the option
/// not given, its default silently used.
inline constexpr const char* kEmptyValue = "must not be empty (leave the option out for its default)";

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

/// --frame of reconstruct and info: a frame number in decimal from 1 (the first), or all; with
/// `ranges` (reconstruct) also FIRST:LAST, the frames from FIRST to LAST, both included. One
/// validator, so that both commands refuse --frame 0 alike, with CLI11's exit code for a value out
/// of range (reconstruct said it with exit 1, info with 105). Rewritten in decimal.
inline CLI::Validator frame_number_or_all(bool ranges = false) {
  return CLI::Validator(
      [number = in_range(1, 1 << 30), ranges](std::string& text) -> std::string {
        if (text == "all") return {};
        if (text.empty()) return kEmptyValue;
        const auto refused = [&] {
          return std::string("expected a frame number from 1 (the first) to 1073741824") +
                 (ranges ? ", FIRST:LAST (both included)" : "") + ", or all, not " +
                 (text.size() > 40 ? text.substr(0, 40) + "..." : text);  // the value quoted up to 40 characters
        };
        const std::size_t colon = ranges ? text.find(':') : std::string::npos;
        std::string first = text.substr(0, colon), last = colon == std::string::npos ? "" : text.substr(colon + 1);
        if (!number(first).empty() || (colon != std::string::npos && !number(last).empty())) return refused();
        if (colon == std::string::npos) {
          text = first;
          return {};
        }
        if (std::stoi(last) < std::stoi(first))
          return "--frame FIRST:LAST counts up: " + first + ":" + last + " has its last frame before its first";
        text = first + ":" + last;
        return {};
      },
      ranges ? "INT:[1 - 1073741824], FIRST:LAST or all" : "INT:[1 - 1073741824] or all");
}

/// A comma-separated list of whole numbers from lo to hi (--tx-elements 0,5,10), each item a
/// number or START:STEP:STOP (0:8:127, as --angles-deg takes it: STOP included where a step lands
/// on it), each number read as in_range reads one; rewritten as the numbers in decimal. Give it
/// with ->transform() to an option of strings: CLI11's ->delimiter(',') dropped an empty item
/// ("1,,2" was elements 1 and 2). An item that looks like a file name (the option takes the
/// values after it: --tx-elements 0 10 sat.npy) says so.
inline CLI::Validator whole_number_list(int lo, int hi) {
  const CLI::Validator item = in_range(lo, hi);
  const CLI::Validator step_of = in_range(-(hi - lo), hi - lo);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        if (text.empty()) return item(text);
        const std::string whole = text;  // text is rewritten at the end
        std::string canonical;
        std::size_t start = 0, count = 0;
        constexpr std::size_t kMostNumbers = 65536;
        const auto add = [&](int value) {  // false past kMostNumbers
          if (++count > kMostNumbers) return false;
          canonical += (canonical.empty() ? "" : ",") + std::to_string(value);
          return true;
        };
        for (std::size_t i = 0; i <= whole.size(); ++i) {
          if (i < whole.size() && whole[i] != ',') continue;
          std::string part = whole.substr(start, i - start);
          start = i + 1;
          if (part.empty())
            return "has an empty item in " + whole + ": whole numbers from " + std::to_string(lo) + " to " +
                   std::to_string(hi) + " or START:STEP:STOP, one comma between two";
          if (part.find_first_of("./\\") != std::string::npos && part.find(':') == std::string::npos &&
              part.find_first_not_of("+-0123456789.eE") != std::string::npos)
            return "must be whole numbers from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not " + part +
                   " (a file? the option takes the values that follow it: give the inputs before it, or the "
                   "list with commas, 0,10,20, or as START:STEP:STOP, 0:10:20)";
          const std::size_t c1 = part.find(':');
          if (c1 == std::string::npos) {
            if (std::string error = item(part); !error.empty()) return error;
            if (!add(std::stoi(part))) return "lists more than 65536 numbers";
            continue;
          }
          const std::size_t c2 = part.find(':', c1 + 1);
          if (c2 == std::string::npos || part.find(':', c2 + 1) != std::string::npos)
            return "expected a whole number or START:STEP:STOP, not " + part;
          std::string first = part.substr(0, c1), step = part.substr(c1 + 1, c2 - c1 - 1), last = part.substr(c2 + 1);
          if (std::string error = item(first); !error.empty()) return error + " (START of " + part + ")";
          if (std::string error = item(last); !error.empty()) return error + " (STOP of " + part + ")";
          if (std::string error = step_of(step); !error.empty()) return error + " (STEP of " + part + ")";
          const int a = std::stoi(first), d = std::stoi(step), b = std::stoi(last);
          if (d == 0) return "START:STEP:STOP " + part + " has a STEP of 0";
          if ((b > a && d < 0) || (b < a && d > 0)) return "START:STEP:STOP " + part + " never reaches STOP";
          for (long long v = a; d > 0 ? v <= b : v >= b; v += d)  // long long: b + d may pass an int
            if (!add(static_cast<int>(v))) return "lists more than 65536 numbers";
        }
        text = canonical;
        return {};
      },
      "INT,... or START:STEP:STOP:[" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

/// The numbers of the lists that whole_number_list accepted, in order (an option may take several:
/// --tx-elements 0 5 10, 0,5,10, or given twice).
inline std::vector<int> whole_numbers(const std::vector<std::string>& lists) {
  std::vector<int> values;
  for (const std::string& list : lists) {
    std::size_t start = 0;
    for (std::size_t i = 0; i <= list.size() && !list.empty(); ++i) {
      if (i < list.size() && list[i] != ',') continue;
      int value = 0;
      std::from_chars(list.data() + start, list.data() + i, value);
      values.push_back(value);
      start = i + 1;
    }
  }
  return values;
}

/// A value that `parse(text, name)` accepts: one of recon's parsers of ranges and lists, which
/// throw "NAME: why". Checked where the options are read, so that a list that is no list exits as
/// CLI11's own refusals do (105; it was 1, after the other checks), said as "NAME: why".
template <class Parse>
CLI::Validator parsed_by(const std::string& name, Parse parse, const std::string& description) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        if (text.empty()) return kEmptyValue;
        try {
          (void)parse(text, name);
        } catch (const std::exception& e) {
          std::string why = e.what();
          if (why.rfind(name + ": ", 0) == 0) why.erase(0, name.size() + 2);
          return why;
        }
        return {};
      },
      description);
}

/// Refuses an option given an empty value ("--x-range ''", a shell variable left unset): it was
/// taken for the option not given, and its default silently used. Flags carry no value, and an
/// empty positional argument is a file name the command says it cannot find.
inline void refuse_empty_values(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    for (const CLI::Option* opt : sub->get_options())
      if (opt->nonpositional() && opt->get_type_size() != 0 && opt->count() > 0)
        for (const std::string& value : opt->results())
          if (value.empty())
            throw CLI::ValidationError(opt->get_name(), kEmptyValue);
}

/// reconstruct's run, and the part of it that only reads the options: --config applied, every
/// option checked and the unit warnings made (kept in option_warnings, not printed), as run does
/// before it lists any input or writes anything. `options` throws usrecon::Error (a bad value) or
/// CLI::ParseError for a refusal; the fuzz_config target runs it, and never `run`, on every input.
struct ReconstructCommand {
  Command run;
  std::function<recon::ReconstructOptions()> options;
};

ReconstructCommand add_reconstruct(CLI::App& app);
Command add_simulate(CLI::App& app);
Command add_metrics(CLI::App& app);
Command add_view(CLI::App& app);
Command add_info(CLI::App& app);

/// usrecon's five commands, each with --version (as the app itself), registered on `app` as main
/// runs them; the fuzz_config target registers them the same way.
struct Commands {
  CLI::App* reconstruct = nullptr;
  CLI::App* simulate = nullptr;
  CLI::App* metrics = nullptr;
  CLI::App* view = nullptr;
  CLI::App* info = nullptr;
  ReconstructCommand run_reconstruct;
  Command run_simulate, run_metrics, run_view, run_info;
};

Commands add_commands(CLI::App& app);

}  // namespace usrecon::cli
