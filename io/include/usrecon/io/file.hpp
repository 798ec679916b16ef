// Whole-file reading and atomic writing, with errors that name the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "usrecon/kernels/common.hpp"

namespace usrecon::io {

/// A file that cannot be read or parsed. what() names the file and the problem.
class InputError : public Error {
 public:
  using Error::Error;
};

/// A file that cannot be written. what() names the file and the problem.
class OutputError : public Error {
 public:
  using Error::Error;
};

/// Largest input file read by default (bytes); bigger files are refused with a clear message.
inline constexpr std::uintmax_t kDefaultMaxInputBytes = std::uintmax_t{4} << 30;  // 4 GiB

/// The file name's extension in lower case, with its dot (".uff" for "scan.UFF"; "" for none).
std::string lower_extension(const std::filesystem::path& path);

/// Reads a whole regular file. Throws InputError for a missing path, a directory, an unreadable
/// file, or one larger than max_bytes.
std::string read_file(const std::filesystem::path& path,
                      std::uintmax_t max_bytes = kDefaultMaxInputBytes);

/// Writes bytes to `path` atomically: a temporary file in the same directory, flushed, then renamed
/// over `path`. A failure (or an interrupted process) never leaves a truncated `path`; the temporary
/// is removed on failure. Throws OutputError.
void write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> bytes);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

}  // namespace usrecon::io
