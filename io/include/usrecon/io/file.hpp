// Whole-file reading and atomic writing, with errors that name the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

/// An array's dims as every message says them: "2688 x 128 x 7" ("scalar" for none).
std::string dims_text(std::span<const std::size_t> dims);

/// Text from a file (a name, a header's words) as a message or a terminal may show it: at most
/// max_bytes bytes of it (then "..."), every byte that is not printable ASCII, and every double
/// quote and backslash, written as \xNN, so that binary or hostile input cannot corrupt a
/// terminal or a log, nor pass for the message's own quoting.
std::string printable(std::string_view text, std::size_t max_bytes = std::string_view::npos);

/// The status of an input path that is there (a file, a directory, ...). Throws InputError in the
/// words every command uses: 'input file "x" does not exist' (a dangling link included), or the
/// system's reason ('input file "x.npy/" cannot be read: Not a directory').
std::filesystem::file_status existing_input_status(const std::filesystem::path& path);

/// What making directory `dir` would create: the directories on its way that do not exist yet,
/// deepest first ("." and ".." names left out: making them makes nothing), and the nearest that
/// does exist (or "." when none on a relative path does). A dangling link counts as existing:
/// nothing can be made there. "out/" is "out".
struct DirectoriesToMake {
  std::vector<std::filesystem::path> missing;
  std::filesystem::path nearest_existing;
};
DirectoriesToMake directories_to_make(const std::filesystem::path& dir);

/// Reads a whole regular file. Throws InputError for a missing path, a directory, an unreadable
/// file, or one larger than max_bytes.
std::string read_file(const std::filesystem::path& path,
                      std::uintmax_t max_bytes = kDefaultMaxInputBytes);

/// Writes bytes to `path` atomically: a temporary file in the same directory, flushed, then renamed
/// over `path`. A failure (or an interrupted process) never leaves a truncated `path`; the temporary
/// is removed on failure. Throws OutputError.
void write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> bytes);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

/// An output written now and put in place later: path() is a hidden name beside target()
/// (".NAME.tmp-PID-N", unique within a process); write() creates it (never over an existing
/// file), writes all bytes and fsyncs it; commit() or commit_staged() renames it over target(),
/// atomically. Dropped (destroyed or discard()ed) before that, the file write() created is
/// removed (and only that: never a file of that name it did not create) and target() is left
/// as it was. A batch writes a frame's outputs ahead of its turn and commits
/// them only when the frame is reported, so that a frame a sequential run would not have
/// reached never replaces an existing file. Move-only.
class StagedFile {
 public:
  /// Throws OutputError when target names a directory ("dir/").
  explicit StagedFile(std::filesystem::path target);
  StagedFile(StagedFile&& other) noexcept;
  StagedFile& operator=(StagedFile&& other) noexcept;
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile();

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& target() const { return target_; }
  bool committed() const { return committed_; }

  /// Writes the staged file, once. Throws OutputError naming target() (nothing of this write is
  /// left at path() then), also when the file was written, committed or discarded already.
  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  /// commit_staged of this file alone.
  void commit();
  /// Removes the staged file (no error if there is none); target() is untouched.
  void discard() noexcept;

 private:
  friend std::vector<std::filesystem::path> commit_staged(std::span<StagedFile> files);
  void rename_into_place();  // no directory sync: commit_staged syncs once per directory
  std::filesystem::path target_, path_;
  bool written_ = false;  // write() created path_: ours to remove or rename
  bool committed_ = false;
};

/// Puts staged files in place, all or none, in order: renames each over its target, then
/// flushes the directory entries (one fsync per directory). Refuses before any rename when a
/// target is a directory. If a rename fails all the same, the targets already renamed are taken
/// back: the files they replaced come back (kept meanwhile as hard links under hidden names;
/// where the file system has no hard links they are lost), new ones are removed. Throws
/// OutputError naming the target; returns the targets.
std::vector<std::filesystem::path> commit_staged(std::span<StagedFile> files);

}  // namespace usrecon::io
