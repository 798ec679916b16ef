// The seed's channel-data text format: whitespace-separated integers, channel-major.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace usrecon::io {

/// Parses exactly channels * samples integers laid out channel-major, rf[ch * samples + s].
/// Separators: any ASCII whitespace (space, tab, CR, LF, FF, VT). Every token must be a decimal
/// integer with an optional leading '-' or '+' that fits in int32. Throws InputError naming
/// `name` and, for a bad token, the token (shortened if long) with its 1-based line and column;
/// for a wrong count, how many values were found and how many were expected.
std::vector<std::int32_t> parse_source_txt(std::string_view text, std::size_t channels,
                                           std::size_t samples, const std::string& name);

/// The same, into caller-owned memory of exactly channels * samples values (for example a
/// page-locked buffer that a GPU copies from). On error `rf` holds a partial frame.
void parse_source_txt_into(std::string_view text, std::span<std::int32_t> rf, std::size_t channels,
                           std::size_t samples, const std::string& name);

/// Refuses a text too short to hold channels * samples values (each value takes at least one
/// byte, and every two a separator: b bytes hold at most (b + 1) / 2), with parse_source_txt's
/// own message ("found N values, expected ...", or a bad token), counting the values without
/// storing them: a caller checks a text before it allocates the frame (parse_source_txt does).
/// Returns at once for a text long enough; that one may still hold too few values.
void check_source_txt_size(std::string_view text, std::size_t channels, std::size_t samples,
                           const std::string& name);

/// Reads and parses a source.txt file (see parse_source_txt); errors name the path.
std::vector<std::int32_t> read_source_txt(const std::filesystem::path& path, std::size_t channels,
                                          std::size_t samples);

/// rf (channel-major, rf[ch * samples + s]) as source.txt text: all values on one line,
/// separated by single spaces, then a newline — the seed's own reader splits on " " alone, so this
/// is the only layout it reads. Throws Error, naming `name`, when rf does not hold channels x
/// samples values.
std::string encode_source_txt(std::span<const std::int32_t> rf, std::size_t channels, std::size_t samples,
                              const std::string& name);

/// Writes encode_source_txt's text. Atomic (see write_file_atomic).
void write_source_txt(const std::filesystem::path& path, std::span<const std::int32_t> rf,
                      std::size_t channels, std::size_t samples);

}  // namespace usrecon::io
