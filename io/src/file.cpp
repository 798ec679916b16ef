// Whole-file reading and atomic (temp file + rename) writing. Every error names the file.
#include "usrecon/io/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace usrecon::io {
namespace {

std::string quoted(const std::filesystem::path& path) { return '"' + path.string() + '"'; }

std::string errno_text(int error_number) { return std::strerror(error_number); }

struct FileCloser {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};
using UniqueFile = std::unique_ptr<std::FILE, FileCloser>;

/// Distinguishes temp files of concurrent writers within one process (the pid separates
/// processes), so several threads may write even the same target at once.
std::atomic<std::uint64_t> temp_file_counter{0};

std::filesystem::path temp_path_for(const std::filesystem::path& target) {
  const std::uint64_t serial = temp_file_counter.fetch_add(1, std::memory_order_relaxed);
  // Built by appending: GCC 12 gives a false -Wrestrict warning for "." + std::string.
  std::string temp_name = ".";
  // At most 200 bytes of the name: with the suffix a name near the file system's 255-byte limit
  // would otherwise make the temporary's name too long. Uniqueness comes from the suffix.
  temp_name += target.filename().string().substr(0, 200);
  temp_name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(serial);
  return target.parent_path() / temp_name;
}

/// Writes all bytes to fd, retrying short writes and EINTR. Returns 0 or an errno value.
int write_all(int fd, std::span<const std::byte> bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ::ssize_t result = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (result < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    written += static_cast<std::size_t>(result);
  }
  return 0;
}

/// Flushes the directory entry of a completed rename to disk. Best effort: some file systems
/// refuse fsync on directories, and the data itself is already safe at this point.
void sync_directory(const std::filesystem::path& directory) {
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return;
  ::fsync(dir_fd);
  ::close(dir_fd);
}

}  // namespace

std::string lower_extension(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

std::string printable(std::string_view text, std::size_t max_bytes) {
  constexpr char kHexDigits[] = "0123456789ABCDEF";
  std::string shown;
  for (std::size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7F && byte != '"' && byte != '\\') {
      shown += static_cast<char>(byte);
    } else {
      shown += "\\x";
      shown += kHexDigits[byte >> 4];
      shown += kHexDigits[byte & 0xF];
    }
  }
  if (text.size() > max_bytes) shown += "...";
  return shown;
}

std::string dims_text(std::span<const std::size_t> dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (const std::size_t d : dims) {
    if (!s.empty()) s += " x ";
    s += std::to_string(d);
  }
  return s;
}

std::filesystem::file_status existing_input_status(const std::filesystem::path& path) {
  std::error_code status_error;
  const std::filesystem::file_status status = std::filesystem::status(path, status_error);
  // ENOTDIR ("x.npy/") is reported as not_found with an error: the error says more.
  if (status_error && status_error != std::errc::no_such_file_or_directory)
    throw InputError("input file " + quoted(path) + " cannot be read: " + status_error.message());
  if (status.type() == std::filesystem::file_type::not_found)
    throw InputError("input file " + quoted(path) + " does not exist");
  return status;
}

DirectoriesToMake directories_to_make(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  DirectoriesToMake d;
  std::error_code ec;
  fs::path p = dir.has_filename() ? dir : dir.parent_path();
  for (; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) {
    if (p.filename() != "." && p.filename() != "..") d.missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  d.nearest_existing = p.empty() ? fs::path(".") : p;
  return d;
}

std::string read_file(const std::filesystem::path& path, std::uintmax_t max_bytes) {
  const std::filesystem::file_status status = existing_input_status(path);
  if (status.type() == std::filesystem::file_type::directory) {
    throw InputError("input file " + quoted(path) + " is a directory, not a file");
  }
  if (status.type() != std::filesystem::file_type::regular) {
    throw InputError("input file " + quoted(path) + " is not a regular file");
  }

  UniqueFile file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    throw InputError("input file " + quoted(path) + " cannot be read: " + errno_text(errno));
  }
  const auto too_large = [&](std::uintmax_t size_bytes) {
    return InputError("input file " + quoted(path) + " is larger than " +
                      std::to_string(max_bytes) + " bytes (the input size limit): it has " +
                      std::to_string(size_bytes) + " bytes");
  };
  struct ::stat file_stat {};
  if (::fstat(::fileno(file.get()), &file_stat) == 0 &&
      static_cast<std::uintmax_t>(file_stat.st_size) > max_bytes) {
    throw too_large(static_cast<std::uintmax_t>(file_stat.st_size));
  }

  // Read until end of file rather than trusting the size from fstat: the file may grow or shrink
  // between the two calls, and the limit must hold for what is actually read.
  // The first request asks for one byte more than the expected size, so that an unchanged file
  // is read in one call and its end is detected without a second one.
  std::string contents;
  std::size_t request_bytes = static_cast<std::size_t>(file_stat.st_size) + 1;
  constexpr std::size_t kLaterChunkBytes = std::size_t{1} << 20;
  for (;;) {
    const std::size_t old_size = contents.size();
    contents.resize(old_size + request_bytes);
    const std::size_t got = std::fread(contents.data() + old_size, 1, request_bytes, file.get());
    contents.resize(old_size + got);
    if (contents.size() > max_bytes) throw too_large(contents.size());
    if (got < request_bytes) {
      if (std::ferror(file.get())) {
        throw InputError("input file " + quoted(path) + " cannot be read: " + errno_text(errno));
      }
      break;
    }
    request_bytes = kLaterChunkBytes;
  }
  return contents;
}

namespace {

/// Creates `file` (which must not exist yet: O_EXCL never clobbers a file that happens to have the
/// name), writes all bytes and fsyncs it. On failure the file is removed and OutputError, which
/// names `target`, thrown. The caller renames `file` over `target` (fsync first, so that a crash
/// can never leave `target` naming a file whose data never reached the disk).
void write_synced_new_file(const std::filesystem::path& file, const std::filesystem::path& target,
                           std::span<const std::byte> bytes) {
  const auto failure = [&](const std::string& what, int error_number) {
    return OutputError("output file " + quoted(target) + " cannot be written: " + what + ": " +
                       errno_text(error_number));
  };
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int error_number = errno;
    // A missing directory is the target's problem, not the temporary file's name.
    const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
    std::error_code ec;
    if (error_number == ENOENT && !std::filesystem::exists(dir, ec))
      throw OutputError("output file " + quoted(target) + " cannot be written: its directory " + quoted(dir) +
                        " does not exist");
    throw failure("cannot create temporary file " + quoted(file), error_number);
  }

  const auto discard = [&] { ::unlink(file.c_str()); };
  if (const int error_number = write_all(fd, bytes); error_number != 0) {
    ::close(fd);
    discard();
    throw failure("write failed", error_number);
  }
  if (::fsync(fd) != 0) {
    const int error_number = errno;
    ::close(fd);
    discard();
    throw failure("fsync failed", error_number);
  }
  if (::close(fd) != 0) {
    const int error_number = errno;
    discard();
    throw failure("close failed", error_number);
  }
}

std::filesystem::path directory_of(const std::filesystem::path& path) {
  return path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  if (path.filename().empty()) {
    throw OutputError("output file " + quoted(path) + " cannot be written: it names a directory");
  }
  const std::filesystem::path temp_path = temp_path_for(path);
  write_synced_new_file(temp_path, path, bytes);
  if (::rename(temp_path.c_str(), path.c_str()) != 0) {
    const int error_number = errno;
    ::unlink(temp_path.c_str());
    throw OutputError("output file " + quoted(path) + " cannot be written: rename of the temporary file failed: " +
                      errno_text(error_number));
  }
  sync_directory(directory_of(path));
}

void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  write_file_atomic(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

StagedFile::StagedFile(std::filesystem::path target)
    : target_(std::move(target)), path_(temp_path_for(target_)) {
  if (target_.filename().empty()) {
    throw OutputError("output file " + quoted(target_) + " cannot be written: it names a directory");
  }
}

StagedFile::StagedFile(StagedFile&& other) noexcept
    : target_(std::move(other.target_)),
      path_(std::move(other.path_)),
      written_(other.written_),
      committed_(other.committed_) {
  other.path_.clear();  // the moved-from object owns no staged file
  other.written_ = false;
}

StagedFile& StagedFile::operator=(StagedFile&& other) noexcept {
  if (this != &other) {
    discard();
    target_ = std::move(other.target_);
    path_ = std::move(other.path_);
    written_ = other.written_;
    committed_ = other.committed_;
    other.path_.clear();
    other.written_ = false;
  }
  return *this;
}

StagedFile::~StagedFile() { discard(); }

void StagedFile::write(std::span<const std::byte> bytes) {
  if (path_.empty() || written_)
    throw OutputError("output file " + quoted(target_) + " cannot be written: its staged file is " +
                      (committed_ ? "committed" : written_ ? "written" : "discarded") + " already");
  // A file of that name that is not ours (EEXIST) is refused by the create and never unlinked.
  write_synced_new_file(path_, target_, bytes);
  written_ = true;
}

void StagedFile::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void StagedFile::rename_into_place() {
  if (committed_) return;
  if (!written_) throw OutputError("output file " + quoted(target_) + " has nothing staged to commit");
  if (::rename(path_.c_str(), target_.c_str()) != 0) {
    const int error_number = errno;
    const OutputError error("output file " + quoted(target_) + " cannot be put in place: rename of " +
                            quoted(path_) + " failed: " + errno_text(error_number));
    discard();
    throw error;
  }
  committed_ = true;
}

void StagedFile::commit() { commit_staged(std::span<StagedFile>(this, 1)); }

void StagedFile::discard() noexcept {
  if (committed_ || path_.empty()) return;
  if (written_) ::unlink(path_.c_str());  // only a file this object created
  path_.clear();
  written_ = false;
}

std::vector<std::filesystem::path> commit_staged(std::span<StagedFile> files) {
  // A file cannot be renamed over a directory: refused before anything is put in place.
  for (const StagedFile& file : files) {
    std::error_code ec;
    if (!file.committed() && std::filesystem::is_directory(file.target(), ec))
      throw OutputError("output file " + quoted(file.target()) +
                        " cannot be written: a directory of that name is in the way");
  }
  // The files about to be replaced, kept under a second, hidden name (a hard link) until every
  // rename is done, so that a rename failing after others restores them. Best effort: where the
  // file system has no hard links, a failed rename loses the files replaced before it.
  std::vector<std::filesystem::path> backups(files.size());
  for (std::size_t k = 0; k < files.size(); ++k) {
    if (files[k].committed()) continue;
    const std::filesystem::path backup = temp_path_for(files[k].target());
    if (::link(files[k].target().c_str(), backup.c_str()) == 0) backups[k] = backup;
  }
  const auto drop_backups = [&] {
    for (const std::filesystem::path& backup : backups)
      if (!backup.empty()) ::unlink(backup.c_str());
  };
  std::vector<std::filesystem::path> committed;
  committed.reserve(files.size());  // no allocation between a rename and its record
  std::size_t k = 0;
  try {
    for (; k < files.size(); ++k) {
      if (files[k].committed()) continue;
      files[k].rename_into_place();
      committed.push_back(files[k].target());
    }
  } catch (...) {
    // A rename failed otherwise (in practice: the directory went away). All or none: what was
    // put in place is taken back, the file it replaced restored where there is one; the rest is
    // dropped by its owner.
    for (std::size_t done = 0; done < k; ++done) {
      if (!files[done].committed()) continue;
      const std::filesystem::path& target = files[done].target();
      if (backups[done].empty() || ::rename(backups[done].c_str(), target.c_str()) != 0) {
        std::error_code ec;
        std::filesystem::remove(target, ec);
      } else {
        backups[done].clear();  // renamed back: nothing left to drop
      }
    }
    drop_backups();
    throw;
  }
  drop_backups();
  // The renames' directory entries to disk: once per directory, not once per file.
  std::vector<std::filesystem::path> directories;
  for (const std::filesystem::path& target : committed) {
    const std::filesystem::path directory = directory_of(target);
    if (std::find(directories.begin(), directories.end(), directory) == directories.end()) {
      directories.push_back(directory);
      sync_directory(directory);
    }
  }
  return committed;
}

}  // namespace usrecon::io
