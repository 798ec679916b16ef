// usrecon reconstruct against hostile inputs, end to end: the corpus in tests/corpus/source_txt
// plus cases that cannot live in git (a directory named x.txt, a missing path, a FIFO, a dangling
// symlink, a file over the size limit, a file deleted while the batch runs), all in one batch with
// good files; --report; Ctrl-C and SIGTERM; memory over a 1000-file batch (CliHostileBatch).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "../test_support.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/png.hpp"
#include "usrecon/recon/pipeline.hpp"

extern char** environ;

namespace fs = std::filesystem;
using usrecon::testing::quote;
using usrecon::testing::run_command;

namespace {

const fs::path kCorpus = fs::path(USRECON_SOURCE_DIR) / "tests" / "corpus" / "source_txt";
const std::string kSmall = " reconstruct --channels 2 --samples 3 --backend cpu --threads 1 ";

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Every path below `root`, relative to it.
std::set<std::string> tree(const fs::path& root) {
  std::set<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    names.insert(fs::relative(entry.path(), root).string());
  return names;
}

/// The line of `output` that names `input` in an error, or "".
std::string error_line(const std::string& output, const std::string& input) {
  std::size_t start = 0;
  while (start < output.size()) {
    const std::size_t end = std::min(output.find('\n', start), output.size());
    const std::string line = output.substr(start, end - start);
    if (line.starts_with("usrecon: error: " + input + ": ") ||
        line.starts_with("usrecon: error: input file \"" + input + "\""))
      return line;
    start = end + 1;
  }
  return "";
}

/// usrecon started in the background: stdout through a pipe read line by line, stderr to a file.
class Child {
 public:
  Child(const std::vector<std::string>& args, const fs::path& stderr_file) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    // The smallest pipe (one page), so that usrecon can run at most a few dozen lines ahead of
    // the test reading them: a resident set sampled when a line is read belongs to about that
    // file, and the process cannot have exited while many lines are still unread.
    ::fcntl(fds[0], F_SETPIPE_SZ, 4096);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int error = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out_ = fds[0];
    if (error != 0) throw std::runtime_error("posix_spawn failed");
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
  }
  pid_t pid() const { return pid_; }

  /// The next line of stdout (without '\n'), or nothing at end of file.
  std::optional<std::string> next_line() {
    for (;;) {
      const std::size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        stdout_ += line + "\n";
        return line;
      }
      char chunk[4096];
      const ::ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  /// Reads stdout to its end, then reaps the process: exit code (or -signal) and peak RSS in KiB.
  std::pair<int, long> finish() {
    while (next_line()) {
    }
    int status = 0;
    struct rusage usage {};
    ::wait4(pid_, &status, 0, &usage);
    pid_ = -1;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    return {code, usage.ru_maxrss};
  }
  const std::string& stdout_text() const { return stdout_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_, stdout_;
};

/// A memory figure of a live process in KiB from /proc/<pid>/status: "VmRSS" (resident now) or
/// "VmHWM" (the peak so far); 0 if unreadable (an exited process has neither).
long status_kib(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with(field + ":")) return std::stol(line.substr(field.size() + 1));
  return 0;
}

class CliHostile : public usrecon::testing::CliTempDir {
 protected:
  /// n copies of a valid 2 x 3 input in dir_/in, named f0000.txt ...
  std::vector<fs::path> good_files(std::size_t n) {
    fs::create_directories(dir_ / "in");
    std::vector<fs::path> paths;
    for (std::size_t i = 0; i < n; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "f%04zu.txt", i);
      paths.push_back(dir_ / "in" / name);
      std::ofstream(paths.back()) << i % 7 << " -2 3 4 5 " << -int(i % 11) << "\n";
    }
    return paths;
  }
  /// dir_/in -> dir_/out with raw output and dir_/report.json.
  std::string batch_options() const {
    return (dir_ / "in").string() + " -o " + (dir_ / "out").string() + " --save-raw --report " +
           (dir_ / "report.json").string();
  }
  std::vector<std::string> args(const std::string& options) {
    std::vector<std::string> all = {exe_};
    std::istringstream words(kSmall + options);
    for (std::string w; words >> w;) all.push_back(w);
    return all;
  }
};

struct Case {
  std::string file, verdict;  // verdict: "same", "valid" or the expected error fragment
};

std::vector<Case> corpus_cases() {
  std::vector<Case> cases;
  std::ifstream in(kCorpus / "expected.tsv");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab != std::string::npos) cases.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return cases;
}

}  // namespace

TEST_F(CliHostile, CorpusInOneBatchEveryBadFileNamedNothingWrittenEveryGoodFileWritten) {
  const fs::path in = dir_ / "in", out = dir_ / "out";
  fs::create_directories(in);
  std::vector<Case> cases = corpus_cases();
  ASSERT_GE(cases.size(), 20u);
  for (const Case& c : cases) fs::copy_file(kCorpus / c.file, in / c.file);

  // Cases git cannot hold, made here.
  fs::create_directories(in / "dir_named_like_file.txt");
  cases.push_back({"dir_named_like_file.txt", "is a directory, not a file"});
  cases.push_back({"does_not_exist.txt", "does not exist"});
  ASSERT_EQ(::mkfifo((in / "fifo.txt").c_str(), 0644), 0);  // reading it would block forever
  cases.push_back({"fifo.txt", "is not a regular file"});
  fs::create_symlink(in / "gone_target.txt", in / "dangling_symlink.txt");
  cases.push_back({"dangling_symlink.txt", "does not exist"});
  // The size limit for 2 x 3 values: 6 * 32 bytes + 1 MiB. One byte over is refused unread (valid
  // values padded with spaces), a file exactly at the limit is read.
  const std::uintmax_t limit = usrecon::recon::input_byte_limit({1200, 762, 2, 3});
  ASSERT_EQ(limit, 6u * 32u + (1u << 20));
  std::string padded = "1 -2 3 4 5 -6";
  padded.resize(limit, ' ');
  std::ofstream(in / "valid_at_size_limit.txt") << padded;
  cases.push_back({"valid_at_size_limit.txt", "same"});
  std::ofstream(in / "over_size_limit.txt") << padded << ' ';
  cases.push_back({"over_size_limit.txt", "is larger than " + std::to_string(limit) +
                                              " bytes (the input size limit): it has " +
                                              std::to_string(limit + 1) + " bytes"});
  // A name that is hostile to shells and file systems: outputs get a sanitised stem.
  const std::string weird = "a b;$(touch pwned)&`x`.txt";
  fs::copy_file(kCorpus / "good_spaces.txt", in / weird);
  cases.push_back({weird, "same"});

  std::string command = exe_ + kSmall + "--save-raw -o " + quote(out) + " --report " + quote(dir_ / "report.json");
  for (const Case& c : cases) command.append(" ").append(quote(in / c.file));
  const std::set<std::string> before = tree(dir_);
  const auto r = run_command("cd " + quote(dir_) + " && " + command);
  EXPECT_EQ(r.exit_code, 1) << r.output;

  std::size_t good = 0, bad = 0;
  std::set<std::string> expected_outputs;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string input = (in / c.file).string();
    const std::string stem = usrecon::recon::output_stem(c.file);
    if (c.verdict == "same" || c.verdict == "valid") {
      ++good;
      for (const char* ext : {".png", ".json", ".npy"}) expected_outputs.insert("out/" + stem + ext);
      EXPECT_EQ(error_line(r.output, input), "");
      if (c.verdict == "same") {  // the same values in any valid layout: byte-identical outputs
        EXPECT_EQ(slurp(out / (stem + ".npy")), slurp(out / "good_spaces.npy"));
        EXPECT_EQ(slurp(out / (stem + ".png")), slurp(out / "good_spaces.png"));
      }
    } else {
      ++bad;
      const std::string line = error_line(r.output, input);
      EXPECT_NE(line, "") << "no error line naming the file in:\n" << r.output;
      EXPECT_NE(line.find(c.verdict), std::string::npos) << line;
      for (const char* ext : {".png", ".json", ".npy"}) EXPECT_FALSE(fs::exists(out / (stem + ext)));
    }
  }
  EXPECT_NE(r.output.find(std::to_string(good) + " of " + std::to_string(good + bad) +
                          " reconstructed, " + std::to_string(bad) + " failed"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(out / (usrecon::recon::output_stem(weird) + ".png")));

  // Nothing written anywhere but the outputs of the good files and the report: no temporaries,
  // nothing for a bad file, nothing outside out/ (and the hostile name ran no shell command).
  std::set<std::string> written;
  for (const std::string& name : tree(dir_))
    if (!before.contains(name)) written.insert(name);
  expected_outputs.insert("out");
  expected_outputs.insert("report.json");
  EXPECT_EQ(written, expected_outputs);

  // The report lists every input, in order, with its status and (when failed) its error.
  const nlohmann::json report = nlohmann::json::parse(slurp(dir_ / "report.json"));
  ASSERT_TRUE(report.is_array());
  ASSERT_EQ(report.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].file);
    const bool ok = cases[i].verdict == "same" || cases[i].verdict == "valid";
    EXPECT_EQ(report[i]["input"], (in / cases[i].file).string());
    EXPECT_EQ(report[i]["status"], ok ? "ok" : "failed");
    EXPECT_EQ(report[i]["outputs"].size(), ok ? 3u : 0u);
    EXPECT_TRUE(report[i]["timing_s"].contains("total"));
    if (ok) {
      EXPECT_TRUE(report[i]["error"].is_null());
    } else {
      EXPECT_NE(report[i]["error"].get<std::string>().find(cases[i].verdict), std::string::npos);
    }
  }
}

TEST_F(CliHostile, ExistingOutputIsKeptAndReportedWithoutOverwrite) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  std::ofstream(out / "good_spaces.png") << "precious";
  const auto r = run_command(exe_ + kSmall + quote(kCorpus / "good_spaces.txt") + " -o " + quote(out));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("already exists (kept; use --overwrite to replace it)"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(out / "good_spaces.png"), "precious");
  EXPECT_FALSE(fs::exists(out / "good_spaces.json"));
  const auto forced = run_command(exe_ + kSmall + quote(kCorpus / "good_spaces.txt") + " -o " +
                                  quote(out) + " --overwrite");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_NE(slurp(out / "good_spaces.png"), "precious");
}

TEST_F(CliHostile, OutputThatCannotBeWrittenLeavesNothingOfItsFrameAndTheRestAreWritten) {
  // f0001's JSON name is taken by a directory, which --overwrite does not remove: its PNG and NPY
  // are staged, then dropped when the JSON cannot be put in place; the frames around it are
  // written.
  const std::vector<fs::path> inputs = good_files(3);
  fs::create_directories(dir_ / "out" / "f0001.json");
  const auto r = run_command(exe_ + kSmall + batch_options() + " --overwrite");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string line = error_line(r.output, inputs[1].string());
  EXPECT_NE(line.find((dir_ / "out" / "f0001.json").string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 of 3 reconstructed, 1 failed"), std::string::npos) << r.output;
  EXPECT_EQ(tree(dir_ / "out"), (std::set<std::string>{"f0000.json", "f0000.npy", "f0000.png",
                                                       "f0001.json", "f0002.json", "f0002.npy",
                                                       "f0002.png"}));
  EXPECT_TRUE(fs::is_directory(dir_ / "out" / "f0001.json"));
  const nlohmann::json report = nlohmann::json::parse(slurp(dir_ / "report.json"));
  ASSERT_EQ(report.size(), 3u);
  EXPECT_EQ(report[1]["status"], "failed") << report.dump(2);
  EXPECT_EQ(report[0]["status"], "ok");
  EXPECT_EQ(report[2]["status"], "ok");
}

TEST_F(CliHostile, ReportThatWouldOverwriteAnInputIsRefused) {
  const std::vector<fs::path> inputs = good_files(1);
  const std::string before = slurp(inputs[0]);
  const auto r = run_command(exe_ + kSmall + quote(inputs[0]) + " -o " + quote(dir_ / "out") +
                             " --report " + quote(inputs[0]));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("is one of the inputs"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(inputs[0]), before);
  EXPECT_FALSE(fs::exists(dir_ / "out" / "f0000.png"));
}

TEST_F(CliHostile, FileDeletedWhileTheBatchRunsIsReportedAndTheRestWritten) {
  // The batch is listed (directory scan) at the start; the victim is deleted once the first frame
  // is reported, long before the batch reaches it, so it is gone when its turn comes.
  const std::vector<fs::path> inputs = good_files(40);
  const fs::path victim = inputs[30];
  Child child(args((dir_ / "in").string() + " -o " + (dir_ / "out").string()), dir_ / "stderr.txt");
  const auto first = child.next_line();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(first->starts_with("[1/40]")) << *first;
  ::kill(child.pid(), SIGSTOP);  // no progress while we delete
  fs::remove(victim);
  ::kill(child.pid(), SIGCONT);
  const int code = child.finish().first;
  const std::string err = slurp(dir_ / "stderr.txt");
  ASSERT_EQ(child.stdout_text().find("[31/40] " + victim.string()), std::string::npos)
      << "the batch reached the victim before it was deleted (machine far too slow?)";
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("input file \"" + victim.string() + "\" does not exist"), std::string::npos) << err;
  EXPECT_NE(child.stdout_text().find("39 of 40 reconstructed, 1 failed"), std::string::npos)
      << child.stdout_text();
  for (const fs::path& input : inputs) {
    const fs::path png = dir_ / "out" / (input.stem().string() + ".png");
    EXPECT_EQ(fs::exists(png), input != victim) << png;
  }
}

namespace {

/// Starts a 60-file batch, sends `signal_number` once the first frame is reported, and checks the
/// stop: exit code 128 + signal, a message, a report of what was done, only whole outputs.
void interrupt_batch(const fs::path& dir, const std::vector<fs::path>& inputs,
                     const std::vector<std::string>& args, int signal_number) {
  const std::size_t total = inputs.size();
  Child child(args, dir / "stderr.txt");
  const auto first = child.next_line();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(first->starts_with("[1/" + std::to_string(total) + "]")) << *first;
  ::kill(child.pid(), signal_number);
  const int code = child.finish().first;
  const std::string err = slurp(dir / "stderr.txt");
  EXPECT_EQ(code, 128 + signal_number) << err;

  const nlohmann::json report = nlohmann::json::parse(slurp(dir / "report.json"));
  ASSERT_EQ(report.size(), total);
  std::size_t done = 0;
  while (done < total && report[done]["status"] == "ok") ++done;
  EXPECT_GE(done, 1u);
  EXPECT_LT(done, total) << "the whole batch ran before the signal arrived";
  for (std::size_t i = done; i < total; ++i) EXPECT_EQ(report[i]["status"], "not_processed") << i;
  EXPECT_NE(err.find("interrupted after " + std::to_string(done) + " of " + std::to_string(total)),
            std::string::npos)
      << err;
  EXPECT_NE(child.stdout_text().find(std::to_string(done) + " of " + std::to_string(total) +
                                     " reconstructed, 0 failed"),
            std::string::npos)
      << child.stdout_text();

  // Exactly the outputs of the files done, each complete; no temporaries left.
  std::set<std::string> expected;
  for (std::size_t i = 0; i < done; ++i)
    for (const char* ext : {".png", ".json", ".npy"}) expected.insert(inputs[i].stem().string() + ext);
  EXPECT_EQ(tree(dir / "out"), expected);
  for (std::size_t i = 0; i < done; ++i) {
    const fs::path stem = dir / "out" / inputs[i].stem();
    const usrecon::io::NpyArray raw = usrecon::io::read_npy(stem.string() + ".npy");
    EXPECT_EQ(raw.shape, (std::vector<std::size_t>{762, 1200}));
    int width = 0, height = 0;
    EXPECT_EQ(usrecon::io::read_png_gray8(stem.string() + ".png", width, height).size(), 762u * 1200u);
    EXPECT_TRUE(nlohmann::json::accept(slurp(stem.string() + ".json")));
  }
}

}  // namespace

TEST_F(CliHostile, CtrlCStopsAfterTheCurrentFrameWithTheReportAndOnlyWholeOutputs) {
  interrupt_batch(dir_, good_files(60), args(batch_options()), SIGINT);
}

TEST_F(CliHostile, SigtermStopsLikeCtrlC) {
  interrupt_batch(dir_, good_files(60), args(batch_options()), SIGTERM);
}

// A signal once the last input has been read stops nothing: the run ends as it would have (exit
// 0, no "interrupted", every input ok in the report). The signal is sent when the last input's
// line is printed, while the process still writes its summary and report, or already returns
// from main (the moment the next test makes certain).
TEST_F(CliHostile, SignalAfterTheLastInputChangesNothing) {
  const std::vector<fs::path> inputs = good_files(1);
  Child child(args(batch_options()), dir_ / "stderr.txt");
  const auto line = child.next_line();
  ASSERT_TRUE(line.has_value());
  ASSERT_TRUE(line->starts_with("[1/1]")) << *line;
  ::kill(child.pid(), SIGINT);
  const int code = child.finish().first;
  const std::string err = slurp(dir_ / "stderr.txt");
  EXPECT_EQ(code, 0) << err;
  EXPECT_EQ(err.find("interrupted"), std::string::npos) << err;
  const nlohmann::json report = nlohmann::json::parse(slurp(dir_ / "report.json"));
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0]["status"], "ok");
}

// A signal as the process exits, after reconstruct has returned (sent by a preloaded library's
// destructor: tests/tools/preload/signal_at_exit.cpp), changes nothing either: exit 0, a whole
// report. The default action was restored there once, and such a Ctrl-C killed a complete run
// (the test above saw exit by SIGINT in CI, once).
TEST_F(CliHostile, ASignalWhileTheProcessExitsChangesNothing) {
  good_files(2);
  // The library is loaded and signals: a command that installs no handler dies of it.
  const auto version = run_command("USRECON_TEST_SIGNAL_AT_EXIT=" + std::to_string(SIGINT) + " " +
                                   usrecon::testing::preload(USRECON_SIGNAL_AT_EXIT_SO) + exe_ + " --version");
  ASSERT_EQ(version.exit_code, 128 + SIGINT) << version.output;
  for (const int signal_number : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(signal_number);
    fs::remove_all(dir_ / "out");
    fs::remove(dir_ / "report.json");
    const auto r = run_command("USRECON_TEST_SIGNAL_AT_EXIT=" + std::to_string(signal_number) + " " +
                               usrecon::testing::preload(USRECON_SIGNAL_AT_EXIT_SO) + exe_ + kSmall +
                               batch_options() + " --overwrite");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("interrupted"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("2 of 2 reconstructed, 0 failed"), std::string::npos) << r.output;
    const nlohmann::json report = nlohmann::json::parse(slurp(dir_ / "report.json"));
    ASSERT_EQ(report.size(), 2u);
    for (const auto& entry : report) EXPECT_EQ(entry["status"], "ok") << entry.dump();
  }
}

/// Memory over a long batch: the peak RSS of a 1000-file batch at its end must be what it was at
/// file 100, and the resident set sampled after each file must not grow from file 100 on (each
/// within the slack of a frame in flight, below).
/// The figures are printed (docs/reliability.md quotes them).
class CliHostileBatch : public CliHostile {};

TEST_F(CliHostileBatch, MemoryStaysFlatOver1000Files) {
  good_files(1000);
  Child batch(args((dir_ / "in").string() + " -o " + (dir_ / "out").string() + " --report " +
                   (dir_ / "report.json").string()),
              dir_ / "err.txt");
  // rss_after[i]: VmRSS when file i + 1's line is read (0 if the process had already exited);
  // peak_at_100: the peak resident set (VmHWM) then, at file 100.
  std::vector<long> rss_after;
  long peak_at_100 = 0;
  while (const auto line = batch.next_line()) {
    if (!line->starts_with("[")) continue;
    rss_after.push_back(status_kib(batch.pid(), "VmRSS"));
    if (rss_after.size() == 100) peak_at_100 = status_kib(batch.pid(), "VmHWM");
  }
  const auto [code, peak_at_1000] = batch.finish();
  ASSERT_EQ(code, 0) << slurp(dir_ / "err.txt");
  ASSERT_EQ(rss_after.size(), 1000u);
  ASSERT_GT(peak_at_100, 0) << "the process had exited at file 100";
  const nlohmann::json report = nlohmann::json::parse(slurp(dir_ / "report.json"));
  ASSERT_EQ(report.size(), 1000u);
  EXPECT_TRUE(std::all_of(report.begin(), report.end(), [](const auto& e) { return e["status"] == "ok"; }));

  // Medians over files 51-100 and 951-1000: one sample taken while an extra frame happened to be
  // in flight (about 7 MB) must not decide it; a leak moves the whole window. Samples read after
  // the process exited (0; the pipe lets it be a few dozen lines ahead at most) are left out.
  const auto median = [](std::vector<long>::const_iterator first, std::vector<long>::const_iterator last) {
    std::vector<long> v;
    std::copy_if(first, last, std::back_inserter(v), [](long kib) { return kib > 0; });
    if (v.size() < 10) return 0L;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const long at_100 = median(rss_after.begin() + 50, rss_after.begin() + 100);
  const long at_1000 = median(rss_after.begin() + 950, rss_after.end());
  ASSERT_GT(at_100, 0) << "fewer than 10 samples of files 51-100 taken while the process ran";
  ASSERT_GT(at_1000, 0) << "fewer than 10 samples of files 951-1000 taken while the process ran";
  std::printf("CliHostileBatch: peak RSS at file 100 %ld KiB, at file 1000 %ld KiB; median VmRSS over files "
              "51-100 %ld KiB, 951-1000 %ld KiB\n",
              peak_at_100, peak_at_1000, at_100, at_1000);
  RecordProperty("peak_rss_kib_100", std::to_string(peak_at_100));
  RecordProperty("peak_rss_kib_1000", std::to_string(peak_at_1000));
  // Both peaks come from one run (they were two runs' once, which a neighbour's load could set
  // apart by more than a frame). The peak may still grow by one frame in flight (the reader
  // thread can be a frame further ahead later in the run): 8 MiB of that, plus 4 MiB. A leak of
  // 14 KB a file over the 900 files after the 100th exceeds it. The medians too can sit a part of
  // a frame apart when the reader thread runs further ahead in one window (measured once on a
  // busy machine: 261 116 vs 265 248 KiB): one frame of slack there, which a leak of 9 KB a file
  // exceeds. Smaller true leaks are LeakSanitizer's to find (tools/sanitize.sh runs the other CLI
  // batches under it).
  EXPECT_LE(peak_at_1000, peak_at_100 + 4096 + 8192);
  EXPECT_LE(at_1000, at_100 + 8192);
}
