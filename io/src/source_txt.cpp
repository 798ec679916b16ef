// source.txt: whitespace-separated decimal int32 values, channel-major (rf[ch * samples + s]).
#include "usrecon/io/source_txt.hpp"

#include <charconv>
#include <limits>
#include <string>
#include <system_error>

#include "printable.hpp"
#include "usrecon/io/file.hpp"

namespace usrecon::io {
namespace {

constexpr bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/// A token as it may safely appear in a message: at most 20 bytes, binary bytes escaped.
std::string printable_token(std::string_view token) { return printable(token, 20); }

/// Multiplies the layout dimensions, refusing an overflow (a caller error, not a file error).
std::size_t value_count(std::size_t channels, std::size_t samples) {
  std::size_t count = 0;
  if (__builtin_mul_overflow(channels, samples, &count)) {
    throw Error("source.txt layout of " + std::to_string(channels) + " channels x " +
                std::to_string(samples) + " samples overflows the value count");
  }
  return count;
}

enum class TokenResult { ok, not_an_integer, out_of_range };

/// Parses one whitespace-free token as a decimal int32 with an optional sign.
TokenResult parse_int32_token(std::string_view token, std::int32_t& value) {
  const char* first = token.data();
  const char* const last = token.data() + token.size();
  // std::from_chars accepts '-' but not '+'; a '+' must be followed directly by a digit so that
  // "+-5" and "++5" are refused like "--5".
  if (first != last && *first == '+') {
    ++first;
    if (first == last || *first < '0' || *first > '9') return TokenResult::not_an_integer;
  }
  std::int64_t wide = 0;
  const auto [end, error] = std::from_chars(first, last, wide, 10);
  if (error == std::errc::result_out_of_range && end == last) return TokenResult::out_of_range;
  if (error != std::errc{} || end != last) return TokenResult::not_an_integer;
  if (wide < std::numeric_limits<std::int32_t>::min() ||
      wide > std::numeric_limits<std::int32_t>::max()) {
    return TokenResult::out_of_range;
  }
  value = static_cast<std::int32_t>(wide);
  return TokenResult::ok;
}

/// The parser: stores the values in rf[0, expected) when rf is not null, and with a null rf only
/// validates and counts them (a text too short for the frame is then refused with the same
/// messages, "found N values" included, without the frame's memory).
void parse_values(std::string_view text, std::int32_t* rf, std::size_t channels, std::size_t samples,
                  const std::string& name) {
  const std::size_t expected = value_count(channels, samples);
  const auto layout = [&] {
    return std::to_string(expected) + " (" + std::to_string(channels) + " channels x " +
           std::to_string(samples) + " samples)";
  };
  std::size_t found = 0;
  std::size_t line = 1;           // 1-based; only '\n' ends a line, so CRLF counts once
  std::size_t line_start = 0;     // byte offset of the current line's first byte
  std::size_t position = 0;
  while (position < text.size()) {
    const char c = text[position];
    if (is_separator(c)) {
      if (c == '\n') {
        ++line;
        line_start = position + 1;
      }
      ++position;
      continue;
    }
    const std::size_t token_start = position;
    while (position < text.size() && !is_separator(text[position])) ++position;
    const std::string_view token = text.substr(token_start, position - token_start);

    std::int32_t value = 0;
    const TokenResult result = parse_int32_token(token, value);
    if (result != TokenResult::ok) {
      // Column in bytes, 1-based; a tab counts as one column.
      const std::string where = " at line " + std::to_string(line) + ", column " +
                                std::to_string(token_start - line_start + 1);
      if (result == TokenResult::out_of_range) {
        throw InputError(name + ": " + printable_token(token) + where +
                         " is outside the 32-bit integer range");
      }
      throw InputError(name + ": \"" + printable_token(token) + "\"" + where +
                       " is not a decimal integer");
    }
    // Past the expected count keep validating and counting, so the message can say how many
    // values the file really holds.
    if (rf != nullptr && found < expected) rf[found] = value;
    ++found;
  }

  if (found == 0 && expected != 0) {
    throw InputError(name + ": contains no values, expected " + layout());
  }
  if (found != expected) {
    throw InputError(name + ": found " + std::to_string(found) + " values, expected " + layout());
  }
}

/// Each value takes at least one byte and every two a separator between them, so a text of b
/// bytes holds at most (b + 1) / 2 values.
bool too_short_for(std::string_view text, std::size_t expected) {
  return text.size() / 2 + text.size() % 2 < expected;
}

}  // namespace

std::vector<std::int32_t> parse_source_txt(std::string_view text, std::size_t channels,
                                           std::size_t samples, const std::string& name) {
  check_source_txt_size(text, channels, samples, name);
  std::vector<std::int32_t> rf(value_count(channels, samples));
  parse_values(text, rf.data(), channels, samples, name);
  return rf;
}

void check_source_txt_size(std::string_view text, std::size_t channels, std::size_t samples,
                           const std::string& name) {
  const std::size_t expected = value_count(channels, samples);
  if (!too_short_for(text, expected)) return;
  parse_values(text, nullptr, channels, samples, name);  // throws: it finds fewer values than expected
  throw Error("check_source_txt_size(" + name + "): a text of " + std::to_string(text.size()) +
              " bytes held " + std::to_string(expected) + " values");  // cannot happen
}

void parse_source_txt_into(std::string_view text, std::span<std::int32_t> rf, std::size_t channels,
                           std::size_t samples, const std::string& name) {
  const std::size_t expected = value_count(channels, samples);
  if (rf.size() != expected)
    throw Error("parse_source_txt_into(" + name + "): destination holds " + std::to_string(rf.size()) +
                " values, expected " + std::to_string(expected) + " (" + std::to_string(channels) +
                " channels x " + std::to_string(samples) + " samples)");
  parse_values(text, rf.data(), channels, samples, name);
}

std::vector<std::int32_t> read_source_txt(const std::filesystem::path& path, std::size_t channels,
                                          std::size_t samples) {
  return parse_source_txt(read_file(path), channels, samples, path.string());
}

std::string encode_source_txt(std::span<const std::int32_t> rf, std::size_t channels, std::size_t samples,
                              const std::string& name) {
  const std::size_t expected = value_count(channels, samples);
  if (rf.size() != expected) {
    throw Error("write_source_txt(" + name + "): rf has " + std::to_string(rf.size()) +
                " values, expected " + std::to_string(expected) + " (" +
                std::to_string(channels) + " channels x " + std::to_string(samples) + " samples)");
  }
  // Up to 11 characters per value ("-2147483648") plus its separator.
  constexpr std::size_t kMaxValueChars = 12;
  // One line, single spaces: the seed's reader splits on " " only, so a newline between two
  // values would glue them into one token it cannot convert.
  std::string text(rf.size() * kMaxValueChars + 1, '\0');
  char* out = text.data();
  char* const end = text.data() + text.size();
  for (std::size_t idx = 0; idx < rf.size(); ++idx) {
    if (idx != 0) *out++ = ' ';
    out = std::to_chars(out, end, rf[idx]).ptr;
  }
  *out++ = '\n';
  text.resize(static_cast<std::size_t>(out - text.data()));
  return text;
}

void write_source_txt(const std::filesystem::path& path, std::span<const std::int32_t> rf,
                      std::size_t channels, std::size_t samples) {
  write_file_atomic(path, encode_source_txt(rf, channels, samples, path.string()));
}

}  // namespace usrecon::io
