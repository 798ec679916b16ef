// read_file and write_file_atomic: contents, error messages naming the file, atomicity.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "io_test_support.hpp"
#include "usrecon/io/file.hpp"

namespace usrecon::io {
namespace {

using testing::contains;
using testing::message_of;

class IoFile : public testing::TempDirTest {};

// One spelling of an array's dims in every reader's messages (MAT, HDF5, --layout's refusals).
TEST(IoDimsText, SaysDimsAsEveryMessageDoes) {
  EXPECT_EQ(dims_text(std::vector<std::size_t>{2688, 128, 7}), "2688 x 128 x 7");
  EXPECT_EQ(dims_text(std::vector<std::size_t>{5}), "5");
  EXPECT_EQ(dims_text(std::vector<std::size_t>{0, 1}), "0 x 1");
  EXPECT_EQ(dims_text(std::vector<std::size_t>{}), "scalar");
}

TEST(IoPrintable, EscapesWhatATerminalOrAMessagesQuotesWouldTakeAndCutsLongText) {
  EXPECT_EQ(printable("RF1 data_(2)"), "RF1 data_(2)");
  EXPECT_EQ(printable(std::string_view("Q\x1B[1m\0\x7F", 7)), "Q\\x1B[1m\\x00\\x7F");
  EXPECT_EQ(printable("say \"x\" \\ y"), "say \\x22x\\x22 \\x5C y");
  EXPECT_EQ(printable("\xC3\xA9t\xC3\xA9"), "\\xC3\\xA9t\\xC3\\xA9");  // UTF-8 bytes one by one
  EXPECT_EQ(printable("abcdef", 4), "abcd...");
  EXPECT_EQ(printable("abcd", 4), "abcd");
  EXPECT_EQ(printable(std::string(100000, 'a')).size(), 100000u);  // no limit unless given
}

TEST_F(IoFile, ReadsBinaryContentsExactly) {
  const std::string contents("a\0b\r\n\xff\x93NUMPY", 12);
  const auto path = make_file("binary.bin", contents);
  EXPECT_EQ(read_file(path), contents);
}

TEST_F(IoFile, ReadsEmptyFile) {
  const auto path = make_file("empty.txt", "");
  EXPECT_EQ(read_file(path), "");
}

TEST_F(IoFile, ReadsMultiMegabyteFile) {
  std::string contents(3 * (1 << 20) + 17, '\0');
  for (std::size_t i = 0; i < contents.size(); ++i) contents[i] = static_cast<char>(i * 31);
  const auto path = make_file("large.bin", contents);
  EXPECT_EQ(read_file(path), contents);
}

// /proc files report size 0 but have contents: reading must go to the end of the file rather
// than trust the reported size, and the size limit must apply to what is really read.
TEST_F(IoFile, ReadsFilesWhoseReportedSizeIsWrong) {
  const std::filesystem::path proc_status = "/proc/self/status";
  if (!std::filesystem::exists(proc_status)) GTEST_SKIP() << "no /proc file system";
  ASSERT_EQ(std::filesystem::file_size(proc_status), 0u);
  EXPECT_TRUE(contains(read_file(proc_status), "Name:"));
  const std::string message = message_of<InputError>([&] { read_file(proc_status, 10); });
  EXPECT_TRUE(contains(message, proc_status.string()));
  EXPECT_TRUE(contains(message, "is larger than 10 bytes"));
}

// What making an output directory would create (reconstruct's -o, simulate's and metrics' outputs):
// the missing directories deepest first, without the "." and ".." names (making them makes
// nothing), and the nearest that exists; a dangling link is one, and a trailing slash no level.
TEST_F(IoFile, DirectoriesToMakeListTheMissingOnesDeepestFirst) {
  namespace fs = std::filesystem;
  const DirectoriesToMake nested = directories_to_make(dir_ / "a" / "." / "b" / ".." / "c" / "");
  EXPECT_EQ(nested.missing, (std::vector<fs::path>{dir_ / "a/./b/../c", dir_ / "a/./b", dir_ / "a"}));
  EXPECT_EQ(nested.nearest_existing, dir_);
  EXPECT_TRUE(directories_to_make(dir_).missing.empty());
  EXPECT_EQ(directories_to_make(dir_).nearest_existing, dir_);
  fs::create_directory_symlink(dir_ / "nowhere", dir_ / "dangling");
  const DirectoriesToMake through_link = directories_to_make(dir_ / "dangling" / "x");
  EXPECT_EQ(through_link.missing, (std::vector<fs::path>{dir_ / "dangling" / "x"}));
  EXPECT_EQ(through_link.nearest_existing, dir_ / "dangling");
  const DirectoriesToMake relative = directories_to_make("usrecon-no-such-directory-here/out");
  EXPECT_EQ(relative.missing,
            (std::vector<fs::path>{"usrecon-no-such-directory-here/out", "usrecon-no-such-directory-here"}));
  EXPECT_EQ(relative.nearest_existing, fs::path("."));
}

TEST_F(IoFile, MissingFileIsNamed) {
  const auto path = dir_ / "no-such-file.txt";
  const std::string message = message_of<InputError>([&] { read_file(path); });
  EXPECT_TRUE(contains(message, path.string()));
  EXPECT_TRUE(contains(message, "does not exist"));
}

TEST_F(IoFile, DirectoryIsRefused) {
  const std::string message = message_of<InputError>([&] { read_file(dir_); });
  EXPECT_TRUE(contains(message, dir_.string()));
  EXPECT_TRUE(contains(message, "is a directory"));
}

TEST_F(IoFile, NonRegularFileIsRefused) {
  const auto fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string message = message_of<InputError>([&] { read_file(fifo); });
  EXPECT_TRUE(contains(message, fifo.string()));
  EXPECT_TRUE(contains(message, "is not a regular file"));
}

/// "InputError: " or "OutputError: " and the message of what `call` throws, run as a user whom
/// file permissions bind: as root (who ignores them) in a child process as nobody (uid and gid
/// 65534), the message coming back through a pipe. "" when nothing was thrown; kNoUnprivilegedUser
/// when root cannot become nobody (a container that maps no such uid), for the test to skip.
const std::string kNoUnprivilegedUser = "setuid failed";

std::string message_without_privileges(const std::function<void()>& call) {
  const auto message_of_call = [&]() -> std::string {
    try {
      call();
    } catch (const InputError& e) {
      return std::string("InputError: ") + e.what();
    } catch (const OutputError& e) {
      return std::string("OutputError: ") + e.what();
    } catch (const std::exception& e) {
      return std::string("another exception: ") + e.what();
    }
    return "";
  };
  if (::geteuid() != 0) return message_of_call();
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    const std::string m = ::setgid(65534) == 0 && ::setuid(65534) == 0 ? message_of_call() : kNoUnprivilegedUser;
    const ssize_t written = ::write(fds[1], m.data(), m.size());
    ::_exit(written == ssize_t(m.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string m;
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) m.append(buffer, std::size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return m;
}

TEST_F(IoFile, UnreadableFileReportsReason) {
  const auto path = make_file("secret.txt", "hidden");
  std::filesystem::permissions(path, std::filesystem::perms::none);
  const std::string message = message_without_privileges([&] { read_file(path); });
  if (message == kNoUnprivilegedUser) GTEST_SKIP() << "running as root, and cannot become nobody (setuid 65534)";
  EXPECT_TRUE(contains(message, "InputError: ")) << message;
  EXPECT_TRUE(contains(message, path.string())) << message;
  EXPECT_TRUE(contains(message, "cannot be read: Permission denied")) << message;
}

TEST_F(IoFile, FileOverLimitIsRefusedWithBothSizes) {
  const auto path = make_file("eleven.txt", "0123456789A");
  EXPECT_EQ(read_file(path, 11), "0123456789A");
  const std::string message = message_of<InputError>([&] { read_file(path, 10); });
  EXPECT_TRUE(contains(message, path.string()));
  EXPECT_TRUE(contains(message, "is larger than 10 bytes"));
  EXPECT_TRUE(contains(message, "it has 11 bytes"));
}

TEST_F(IoFile, AtomicWriteCreatesAndReplaces) {
  const auto path = dir_ / "out.txt";
  write_file_atomic(path, std::string_view("first version, longer"));
  EXPECT_EQ(testing::slurp(path), "first version, longer");
  write_file_atomic(path, std::string_view("second"));
  EXPECT_EQ(testing::slurp(path), "second");
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"out.txt"});  // no temp left
}

// A name near the file system's 255-byte limit still gets its temporary (whose name adds a dot
// and a suffix to the target's): the review found "File name too long" for a 245-byte input.
TEST_F(IoFile, AtomicWriteOfANameNearTheLengthLimit) {
  const auto path = dir_ / (std::string(250, 'n') + ".png");
  write_file_atomic(path, std::string_view("long"));
  EXPECT_EQ(testing::slurp(path), "long");
  StagedFile staged(path);
  staged.write(std::string_view("longer"));
  staged.commit();
  EXPECT_EQ(testing::slurp(path), "longer");
  EXPECT_EQ(directory_listing().size(), 1u);
}

TEST_F(IoFile, AtomicWriteOfBytesAndEmptyContents) {
  const auto path = dir_ / "bytes.bin";
  const std::vector<std::byte> bytes = {std::byte{0}, std::byte{0xFF}, std::byte{0x0A}};
  write_file_atomic(path, bytes);
  EXPECT_EQ(testing::slurp(path), std::string("\0\xff\n", 3));
  write_file_atomic(path, std::span<const std::byte>());
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
}

TEST_F(IoFile, AtomicWriteWithBareFileNameUsesCurrentDirectory) {
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  write_file_atomic("relative.txt", std::string_view("here"));
  std::filesystem::current_path(previous);
  EXPECT_EQ(testing::slurp(dir_ / "relative.txt"), "here");
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"relative.txt"});
}

TEST_F(IoFile, AtomicWriteIntoMissingDirectoryFailsCleanly) {
  const auto path = dir_ / "missing-dir" / "out.txt";
  const std::string message =
      message_of<OutputError>([&] { write_file_atomic(path, std::string_view("x")); });
  EXPECT_TRUE(contains(message, path.string()));
  EXPECT_TRUE(contains(message, "its directory \"" + (dir_ / "missing-dir").string() + "\" does not exist")) << message;
  EXPECT_FALSE(contains(message, ".tmp")) << "names the temporary file: " << message;
  EXPECT_TRUE(directory_listing().empty());
}

TEST_F(IoFile, AtomicWriteIntoReadOnlyDirectoryLeavesTargetUntouched) {
  const auto path = make_file("kept.txt", "original");
  // Read-only, but open to others (so that the unprivileged writer can reach it): r-x for all.
  std::filesystem::permissions(dir_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                         std::filesystem::perms::others_read | std::filesystem::perms::others_exec |
                                         std::filesystem::perms::group_read | std::filesystem::perms::group_exec);
  const std::string message =
      message_without_privileges([&] { write_file_atomic(path, std::string_view("replacement")); });
  if (message == kNoUnprivilegedUser) GTEST_SKIP() << "running as root, and cannot become nobody (setuid 65534)";
  EXPECT_TRUE(contains(message, "OutputError: ")) << message;
  EXPECT_TRUE(contains(message, path.string())) << message;
  EXPECT_TRUE(contains(message, "Permission denied")) << message;
  EXPECT_EQ(testing::slurp(path), "original");
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"kept.txt"});
}

TEST_F(IoFile, AtomicWriteOverDirectoryFailsAndRemovesTemp) {
  const auto target = dir_ / "a-directory";
  std::filesystem::create_directory(target);
  const std::string message =
      message_of<OutputError>([&] { write_file_atomic(target, std::string_view("x")); });
  EXPECT_TRUE(contains(message, target.string()));
  EXPECT_TRUE(contains(message, "rename"));
  EXPECT_TRUE(std::filesystem::is_directory(target));
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"a-directory"});
}

// A write that fails halfway (here: the file-size resource limit, which binds root too, standing
// in for a full disk) must leave the old target intact and remove the temporary file.
TEST_F(IoFile, FailedWriteLeavesTargetUntouchedAndNoTemp) {
  const auto path = make_file("target.txt", "old contents");
  rlimit previous_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &previous_limit), 0);
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of a signal
  rlimit small_limit = previous_limit;
  small_limit.rlim_cur = 100;  // bytes
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small_limit), 0);
  std::string message;
  try {
    write_file_atomic(path, std::string(5000, 'n'));
  } catch (const OutputError& error) {
    message = error.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &previous_limit);
  std::signal(SIGXFSZ, previous_handler);

  EXPECT_TRUE(contains(message, path.string()));
  EXPECT_TRUE(contains(message, "File too large"));
  EXPECT_EQ(testing::slurp(path), "old contents");
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"target.txt"});
}

TEST_F(IoFile, ConcurrentAtomicWritesToDifferentFiles) {
  constexpr int kThreads = 8;
  constexpr int kWritesPerThread = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < kWritesPerThread; ++i) {
        write_file_atomic(dir_ / ("thread-" + std::to_string(t) + ".txt"),
                          "thread " + std::to_string(t) + " write " + std::to_string(i));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::string> expected_names;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(testing::slurp(dir_ / ("thread-" + std::to_string(t) + ".txt")),
              "thread " + std::to_string(t) + " write " + std::to_string(kWritesPerThread - 1));
    expected_names.push_back("thread-" + std::to_string(t) + ".txt");
  }
  EXPECT_EQ(directory_listing(), expected_names);
}

// Several threads replacing the same file: each temp name is unique, so every write succeeds and
// the file always holds one complete version, never a mixture.
TEST_F(IoFile, ConcurrentAtomicWritesToSameFileStayWhole) {
  const auto path = dir_ / "shared.txt";
  constexpr int kThreads = 6;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&path, t] {
      for (int i = 0; i < 20; ++i) write_file_atomic(path, std::string(4096, char('a' + t)));
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::string contents = testing::slurp(path);
  ASSERT_EQ(contents.size(), 4096u);
  EXPECT_EQ(contents, std::string(4096, contents[0]));
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"shared.txt"});
}

// A staged file is hidden beside its target until commit(), which replaces the target; dropped
// uncommitted it leaves nothing, and an existing target keeps its contents.
TEST_F(IoFile, StagedFileReplacesTheTargetOnlyWhenCommitted) {
  const auto target = make_file("frame.png", "old contents");
  {
    StagedFile staged(target);
    EXPECT_EQ(staged.target(), target);
    EXPECT_EQ(staged.path().parent_path(), target.parent_path());
    EXPECT_EQ(staged.path().filename().string().rfind(".frame.png.tmp-", 0), 0u) << staged.path();
    staged.write(std::string_view("new contents"));
    EXPECT_EQ(testing::slurp(staged.path()), "new contents");
    EXPECT_EQ(testing::slurp(target), "old contents");
    EXPECT_EQ(directory_listing().size(), 2u);
  }  // dropped uncommitted
  EXPECT_EQ(testing::slurp(target), "old contents");
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"frame.png"});

  StagedFile staged(target);
  staged.write(std::string_view("new contents"));
  EXPECT_TRUE(contains(message_of<OutputError>([&] { staged.write(std::string_view("again")); }),
                       "written already"));  // written once
  EXPECT_EQ(testing::slurp(staged.path()), "new contents");
  staged.commit();
  EXPECT_TRUE(staged.committed());
  staged.commit();  // a second commit does nothing
  EXPECT_TRUE(contains(message_of<OutputError>([&] { staged.write(std::string_view("late")); }),
                       "committed already"));
  EXPECT_EQ(testing::slurp(target), "new contents");
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"frame.png"});
}

// A file already at the staged name is not the object's: its write is refused, and neither the
// failed write nor dropping the object removes that file.
TEST_F(IoFile, StagedFileNeverRemovesAFileItDidNotCreate) {
  std::filesystem::path squatted;
  {
    StagedFile staged(dir_ / "out.json");
    squatted = staged.path();
    write_file_atomic(squatted, std::string_view("someone else's"));  // before the object writes
    const std::string message = message_of<OutputError>([&] { staged.write(std::string_view("{}")); });
    EXPECT_TRUE(contains(message, (dir_ / "out.json").string()));
    EXPECT_TRUE(contains(message, "File exists"));
    EXPECT_TRUE(contains(message_of<OutputError>([&] { staged.commit(); }), "nothing staged"));
  }
  EXPECT_EQ(testing::slurp(squatted), "someone else's");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.json"));
}

TEST_F(IoFile, StagedFileMovesOwnershipAndDiscardsExplicitly) {
  const auto target = dir_ / "out.npy";
  std::vector<StagedFile> staged;
  staged.emplace_back(target);
  staged[0].write(std::string_view("a"));
  for (int i = 0; i < 8; ++i) staged.emplace_back(dir_ / ("other" + std::to_string(i)));  // moves
  StagedFile moved = std::move(staged[0]);
  staged.clear();  // the moved-from object must not remove the file its successor owns
  EXPECT_EQ(directory_listing().size(), 1u);
  StagedFile assigned(dir_ / "x");
  assigned.write(std::string_view("x"));
  assigned = std::move(moved);  // drops x's staged file, takes out.npy's
  EXPECT_EQ(directory_listing().size(), 1u);
  assigned.commit();
  EXPECT_EQ(testing::slurp(target), "a");

  StagedFile dropped(dir_ / "dropped.json");
  dropped.write(std::string_view("{}"));
  dropped.discard();
  EXPECT_FALSE(std::filesystem::exists(dir_ / "dropped.json"));
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"out.npy"});
  EXPECT_TRUE(contains(message_of<OutputError>([&] { dropped.write(std::string_view("{}")); }),
                       "discarded already"));
}

TEST_F(IoFile, StagedFileCommitWithoutContentsFailsNamingTheTarget) {
  const auto target = make_file("kept.json", "kept");
  StagedFile never_written(target);
  const std::string message = message_of<OutputError>([&] { never_written.commit(); });
  EXPECT_TRUE(contains(message, target.string()));
  EXPECT_TRUE(contains(message, "nothing staged to commit"));
  EXPECT_FALSE(never_written.committed());
  EXPECT_EQ(testing::slurp(target), "kept");
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"kept.json"});

  StagedFile discarded(target);
  discarded.write(std::string_view("new"));
  discarded.discard();
  EXPECT_TRUE(contains(message_of<OutputError>([&] { discarded.commit(); }), "nothing staged"));
  EXPECT_EQ(testing::slurp(target), "kept");
  EXPECT_THROW(StagedFile(dir_ / ""), OutputError);  // a directory is no target
}

// commit_staged puts a set in place in order, all or none: a directory squatting on any target
// stops it before the first rename; a rename that fails after others succeeded takes those away
// again.
TEST_F(IoFile, CommitStagedIsAllOrNone) {
  make_file("a.png", "old a.png");
  make_file("a.npy", "old a.npy");
  std::filesystem::create_directory(dir_ / "a.json");
  std::vector<StagedFile> frame;
  for (const char* name : {"a.png", "a.npy", "a.json"}) {
    frame.emplace_back(dir_ / name);
    frame.back().write("new " + std::string(name));
  }
  const std::string squatted = message_of<OutputError>([&] { commit_staged(frame); });
  EXPECT_TRUE(contains(squatted, (dir_ / "a.json").string()));
  EXPECT_TRUE(contains(squatted, "a directory of that name is in the way"));
  EXPECT_EQ(testing::slurp(dir_ / "a.png"), "old a.png");
  EXPECT_EQ(testing::slurp(dir_ / "a.npy"), "old a.npy");
  frame.clear();
  EXPECT_EQ(directory_listing(), (std::vector<std::string>{"a.json", "a.npy", "a.png"}));

  // Two directories; the second vanishes (with its staged file) before the commit. The first
  // rename is taken back: a new file removed, a replaced one restored with its contents.
  const auto first = dir_ / "first", second = dir_ / "second";
  std::filesystem::create_directories(first);
  std::filesystem::create_directories(second);
  write_file_atomic(first / "older.png", std::string_view("older"));
  std::vector<StagedFile> spread;
  spread.emplace_back(first / "b.png");
  spread.back().write(std::string_view("b"));
  spread.emplace_back(first / "older.png");
  spread.back().write(std::string_view("newer"));
  spread.emplace_back(second / "b.json");
  spread.back().write(std::string_view("{}"));
  std::filesystem::remove_all(second);
  const std::string vanished = message_of<OutputError>([&] { commit_staged(spread); });
  EXPECT_TRUE(contains(vanished, (second / "b.json").string()));
  EXPECT_FALSE(std::filesystem::exists(first / "b.png")) << "the first rename was not taken back";
  EXPECT_EQ(testing::slurp(first / "older.png"), "older") << "the replaced file was not restored";
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(first)) left.push_back(entry.path().filename());
  EXPECT_EQ(left, std::vector<std::string>{"older.png"});  // no backup or staged file left
  std::filesystem::remove(first / "older.png");

  std::vector<StagedFile> fine;
  for (const char* name : {"c.png", "c.json"}) {
    fine.emplace_back(first / name);
    fine.back().write(std::string(name));
  }
  EXPECT_EQ(commit_staged(fine), (std::vector<std::filesystem::path>{first / "c.png", first / "c.json"}));
  EXPECT_EQ(testing::slurp(first / "c.json"), "c.json");
  EXPECT_TRUE(commit_staged(fine).empty());  // committed already: nothing more to do
}

}  // namespace
}  // namespace usrecon::io
