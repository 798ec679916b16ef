// The usrecon executable and the file system: directories, links and names given twice or in
// odd spellings, each refused before any work or taken as the user meant it, with messages that
// say what the path is. (One path spelt two ways: CliReconstruct.TwoSpellingsOfOnePathAreOnePath.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../test_support.hpp"

namespace fs = std::filesystem;
using usrecon::testing::quote;
using usrecon::testing::run_command;

namespace {

class CliPaths : public usrecon::testing::CliTempDir {
 protected:
  void SetUp() override {
    CliTempDir::SetUp();
    fs::copy_file(fs::path(USRECON_SOURCE_DIR) / "data" / "example.txt", dir_ / "ex.txt");
    in_dir_ = "cd " + quote(dir_) + " && ";
  }
  // `usrecon ARGS` run in dir_.
  usrecon::testing::CommandResult usrecon(const std::string& args) { return run_command(in_dir_ + exe_ + " " + args); }
  static bool says(const usrecon::testing::CommandResult& r, const std::string& text) {
    return r.output.find(text) != std::string::npos;
  }
  std::string in_dir_;
};

}  // namespace

// simulate makes the directories its outputs go into, as reconstruct makes -o's (it said only
// that "new/sub" did not exist); one it cannot make is said, and nothing is written; a run refused
// before the simulation makes none.
TEST_F(CliPaths, SimulateMakesTheDirectoriesOfItsOutputs) {
  const auto pw = usrecon("simulate --model planewave --point 0,20 --elements 32 --samples 1500 -o new/sub/pw.npy "
                          "--truth other/t.json");
  ASSERT_EQ(pw.exit_code, 0) << pw.output;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "new" / "sub" / "pw.npy"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "other" / "t.json"));
  const auto seed = usrecon("simulate --point 3,10 -o seed/s.txt");
  ASSERT_EQ(seed.exit_code, 0) << seed.output;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "seed" / "s.txt"));
  std::ofstream(dir_ / "blocked") << "a file";
  const auto blocked = usrecon("simulate --point 3,10 -o blocked/s.txt");
  EXPECT_EQ(blocked.exit_code, 1) << blocked.output;
  EXPECT_TRUE(says(blocked, "blocked/s.txt: cannot create its directory blocked: blocked is not a directory"))
      << blocked.output;
  const auto refused = usrecon("simulate --model planewave --point 0,-20 -o never/pw.npy");
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_FALSE(fs::exists(dir_ / "never"));
  // A truth directory that cannot be made, found after the simulation: the data's directories,
  // made first, are removed again (a review found newdir/sub left behind).
  const auto late = usrecon("simulate --model sa --elements 16 --samples 500 --point 0,10 -o newdir/sub/x.npy "
                            "--truth /proc/usrecon-none/t.json");
  EXPECT_EQ(late.exit_code, 1) << late.output;
  EXPECT_TRUE(says(late, "--truth /proc/usrecon-none/t.json: cannot create its directory /proc/usrecon-none: "))
      << late.output;
  EXPECT_FALSE(fs::exists(dir_ / "newdir"));
  // One under a file is refused before the simulation.
  const auto early = usrecon("simulate --model sa --elements 16 --samples 500 --point 0,10 -o x2.npy --truth "
                             "blocked/deeper/t.json");
  EXPECT_EQ(early.exit_code, 1) << early.output;
  EXPECT_TRUE(says(early, "--truth blocked/deeper/t.json: cannot create its directory blocked/deeper: blocked is not "
                          "a directory")) << early.output;
  EXPECT_FALSE(fs::exists(dir_ / "x2.npy"));
  // A link to nowhere on the way is said as one.
  fs::create_symlink(dir_ / "absent", dir_ / "dangling");
  const auto link = usrecon("simulate --point 3,10 -o dangling/s.txt");
  EXPECT_EQ(link.exit_code, 1) << link.output;
  EXPECT_TRUE(says(link, "dangling/s.txt: cannot create its directory dangling: dangling is a link that leads to no "
                         "directory")) << link.output;
}

// A raw image an earlier run wrote beside its inputs is no channel data: a second run into the
// inputs' own directory reconstructs the inputs again (it failed every one: pw.npy was listed as
// an input, and then as an output over an input). Named on the command line it is still read.
TEST_F(CliPaths, ARunIntoItsInputsDirectoryCanBeRepeated) {
  fs::create_directory(dir_ / "d");
  const auto sim = usrecon("simulate --model planewave --point 0,20 -o d/pw.uff --elements 32 --samples 1500");
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const std::string run = "reconstruct d/ -o d/ --model planewave --save-raw --backend cpu";
  const auto first = usrecon(run);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_TRUE(fs::exists(dir_ / "d" / "pw.npy"));
  const auto again = usrecon(run + " --overwrite");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(says(again, "1 of 1 reconstructed, 0 failed")) << again.output;
  // Named, the raw image is read as channel data (and refused here: its outputs would replace it).
  const auto named = usrecon("reconstruct d/pw.npy -o d/ --model planewave --save-raw --backend cpu --overwrite");
  EXPECT_EQ(named.exit_code, 1) << named.output;
  EXPECT_TRUE(says(named, "would overwrite the input (--save-raw's raw image is <stem>.npy): give -o another "
                          "directory")) << named.output;
}

// A path named like an input file is taken as one (a glob such as in/*.txt that matched a
// directory does not ask for its contents), and when it is a directory the message says how to
// have it listed: "frames.txt/". One that cannot be listed is said so, not "not a file".
TEST_F(CliPaths, ADirectoryNamedLikeAnInputIsListedWhenWrittenAsOne) {
  fs::create_directory(dir_ / "frames.txt");
  fs::copy_file(dir_ / "ex.txt", dir_ / "frames.txt" / "a.txt");
  const auto as_file = usrecon("reconstruct frames.txt -o out --backend cpu");
  EXPECT_EQ(as_file.exit_code, 1) << as_file.output;
  EXPECT_TRUE(says(as_file, "frames.txt: is a directory, not a file (one named like an input file is not listed: "
                            "write frames.txt/ to list it)"))
      << as_file.output;
  const auto listed = usrecon("reconstruct frames.txt/ -o out --backend cpu");
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "a.png")) << listed.output;
}

// --report may be neither the output directory nor one above it, nor name a directory: refused
// before any work, also when -o does not exist yet (it was found after the whole batch).
TEST_F(CliPaths, AReportThatIsADirectoryIsRefusedBeforeAnyWork) {
  const struct {
    std::string args, message;
  } cases[] = {
      {"-o out --report out", "is the output directory"},
      {"-o out --report out/", "is a directory"},
      {"-o a/b --report a", "is the output directory"},
      {"-o a/b --report a/b/", "is a directory"},
      {"-o r.json --report r.json", "is the output directory"},
      {"-o out --report .", "is a directory"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const auto r = usrecon("reconstruct ex.txt --backend cpu " + c.args);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_TRUE(says(r, c.message)) << r.output;
    EXPECT_FALSE(says(r, "ex.png")) << "beamformed before refusing: " << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "out") || fs::exists(dir_ / "a") || fs::exists(dir_ / "r.json")) << r.output;
  }
}

// Without --overwrite a name that holds anything is kept, a link too, dangling or not (exists()
// followed the link and the run replaced it); so for view --export and simulate.
TEST_F(CliPaths, ALinkAtAnOutputNameIsKeptWithoutOverwrite) {
  fs::create_directory(dir_ / "out");
  fs::create_symlink(dir_ / "nowhere" / "keep.png", dir_ / "out" / "ex.png");
  const auto r = usrecon("reconstruct ex.txt -o out --backend cpu --save-raw");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(says(r, "already exists (kept")) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir_ / "out" / "ex.png"));
  fs::remove(dir_ / "out" / "ex.png");
  ASSERT_EQ(usrecon("reconstruct ex.txt -o out --backend cpu --save-raw").exit_code, 0);

  fs::create_symlink(dir_ / "nowhere.png", dir_ / "fig.png");
  const auto view = usrecon("view out/ex.npy --export fig.png");
  EXPECT_NE(view.exit_code, 0) << view.output;
  EXPECT_TRUE(says(view, "already exists (kept")) << view.output;
  EXPECT_TRUE(fs::is_symlink(dir_ / "fig.png"));
  fs::create_symlink(dir_ / "nowhere.txt", dir_ / "sim.txt");
  const auto sim = usrecon("simulate -o sim.txt --point 1,2");
  EXPECT_NE(sim.exit_code, 0) << sim.output;
  EXPECT_TRUE(says(sim, "already exists (kept")) << sim.output;
  EXPECT_TRUE(fs::is_symlink(dir_ / "sim.txt"));
}

// One file given twice (two spellings, or a directory and a file in it) is said to be given twice,
// not told to be renamed.
TEST_F(CliPaths, AnInputGivenTwiceIsSaidSo) {
  const auto r = usrecon("reconstruct ex.txt ./ex.txt -o out --backend cpu");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(says(r, "./ex.txt: the same file as the earlier input ex.txt of this run (given twice)")) << r.output;
  EXPECT_TRUE(says(r, "1 of 2 reconstructed, 1 failed")) << r.output;
}

// Outputs that are directories are refused before the work (view rendered, simulate simulated and
// metrics measured first, and view and simulate advised --overwrite); inputs are said as they are.
TEST_F(CliPaths, PathsThatAreNotWhatTheyShouldBeAreSaidBeforeTheWork) {
  ASSERT_EQ(usrecon("reconstruct ex.txt -o out --backend cpu --save-raw").exit_code, 0);
  fs::create_directory(dir_ / "dir.png");
  fs::create_directory(dir_ / "dir.txt");
  const struct {
    std::string args, message;
  } cases[] = {
      {"view out/ex.npy --export dir.png", "--export dir.png is a directory; give a file name"},
      {"view out/ex.npy --export dir.png --overwrite", "--export dir.png is a directory; give a file name"},
      {"simulate -o dir.txt --point 1,2", "dir.txt is a directory; give a file name"},
      {"simulate -o dir.txt --point 1,2 --overwrite", "dir.txt is a directory; give a file name"},
      {"simulate -o s.txt --truth dir.png --point 1,2", "--truth dir.png is a directory"},
      {"metrics out/ex.npy --point 0.5e-3,1e-3 -o dir.png", "-o dir.png is a directory; give a file name"},
      {"metrics out/ex.npy/ --point 0.5e-3,1e-3", "input file \"out/ex.npy/\" cannot be read: Not a directory"},
      {"view out/ex.npy/ --export v.png", "input file \"out/ex.npy/\" cannot be read: Not a directory"},
      {"metrics absent.npy --point 0,1e-3", "input file \"absent.npy\" does not exist"},
      // Every command says a missing or misnamed input in one wording (info and reconstruct differed).
      {"info absent.npy", "input file \"absent.npy\" does not exist"},
      {"view absent.npy --export v.png", "input file \"absent.npy\" does not exist"},
      {"reconstruct absent.txt -o o3 --backend cpu", "input file \"absent.txt\" does not exist"},
      {"info out/ex.npy/", "input file \"out/ex.npy/\" cannot be read: Not a directory"},
      {"reconstruct out/ex.npy/ -o o3 --backend cpu", "input file \"out/ex.npy/\" cannot be read: Not a directory"},
      // The general models' readers too (a MAT file said "no such file"; a source.txt or a
      // misnamed file was told to give --elements and --samples).
      {"reconstruct absent.mat --model planewave --angles-deg 0 --fs 20e6 --pitch 3e-4 -o o3 --backend cpu",
       "input file \"absent.mat\" does not exist"},
      {"reconstruct absent.h5 --model planewave --angles-deg 0 --fs 20e6 --pitch 3e-4 -o o3 --backend cpu",
       "input file \"absent.h5\" does not exist"},
      {"reconstruct absent.txt --model planewave --angles-deg 0 --fs 20e6 --pitch 3e-4 -o o3 --backend cpu",
       "input file \"absent.txt\" does not exist"},
      {"reconstruct out/ex.npy/ --model planewave --angles-deg 0 --fs 20e6 --pitch 3e-4 -o o3 --backend cpu",
       "input file \"out/ex.npy/\" cannot be read: Not a directory"},
      {"info out", "out: a directory; info lists files"},
      // A missing directory is said as one (the message named a hidden temporary file in it).
      {"view out/ex.npy --export nodir/f.png", "output file \"nodir/f.png\" cannot be written: its directory "
                                               "\"nodir\" does not exist"},
      // A PNG is refused as what it is (it was "out/ex.json describes another run's output").
      {"metrics out/ex.png --point 0.5e-3,1e-3",
       "out/ex.png: metrics measures the raw image <stem>.npy that reconstruct --save-raw writes"},
      // What a source.txt lacks is named, and only that.
      {"reconstruct ex.txt --model planewave --fs 20e6 --pitch 3e-4 --angles-deg 0 --elements 128 -o o2 --backend cpu",
       "ex.txt: a source.txt input says only its values: give --samples (values = elements x transmits x samples)"},
      // A link to nowhere at -o, or on its way, is said as one before the work (it was passed
      // over as missing, and making the directory then failed after the beamforming).
      {"reconstruct ex.txt -o nowhere --backend cpu",
       "cannot create output directory nowhere: a link of that name leads to no directory"},
      {"reconstruct ex.txt -o nowhere/deeper --backend cpu", "nowhere is a link that leads to no directory"},
  };
  fs::create_symlink(dir_ / "absent", dir_ / "nowhere");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const auto r = usrecon(c.args);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_TRUE(says(r, c.message)) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "s.txt"));
  // A run that wrote nothing does not point to the directory it removed.
  const auto none = usrecon("reconstruct absent.txt -o new --backend cpu");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_TRUE(says(none, "no outputs written")) << none.output;
  EXPECT_FALSE(says(none, "outputs in")) << none.output;
  EXPECT_FALSE(says(none, "beamforming")) << "a time per frame of no frame: " << none.output;
}

// A report in an -o the run has not made yet is still written when the run fails before making
// it (here --backend cuda without a device), listing every input as not processed.
TEST_F(CliPaths, AReportInTheOutputDirectoryOutlivesARunThatFailedBeforeMakingIt) {
  const auto r = usrecon("reconstruct ex.txt -o out/ --backend cuda --report out/report.json");
  if (r.exit_code == 0) GTEST_SKIP() << "a CUDA device is present: the run does not fail";
  EXPECT_TRUE(says(r, "--backend cuda")) << r.output;
  std::ifstream file(dir_ / "out" / "report.json");
  const nlohmann::json report = nlohmann::json::parse(file, nullptr, false);
  ASSERT_TRUE(report.is_array() && report.size() == 1) << r.output;
  EXPECT_EQ(report[0].value("status", ""), "not_processed");
  EXPECT_FALSE(says(r, "cannot be written")) << r.output;
}

// A directory the run cannot write into (the report's, an existing -o) is said before any input is
// beamformed (both were found only when writing, after the work). Run as `nobody` when the test
// runs as root, whom permissions do not stop.
TEST_F(CliPaths, AnUnwritableDirectoryIsSaidBeforeAnyWork) {
  std::string as_user;
  if (::geteuid() == 0) {
    // The build may lie where nobody may not go (a checkout under /root): then there is no one to
    // run it as.
    if (run_command("runuser -u nobody -- " + exe_ + " --version").exit_code != 0)
      GTEST_SKIP() << "running as root, and nobody cannot run " << exe_ << " (runuser, or the path's permissions)";
    as_user = "runuser -u nobody -- ";
  }
  fs::permissions(dir_, fs::perms::all);  // others may enter and make out/
  fs::permissions(dir_ / "ex.txt", fs::perms::others_read, fs::perm_options::add);
  fs::create_directory(dir_ / "ro");
  fs::permissions(dir_ / "ro", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                   fs::perms::others_read | fs::perms::others_exec);
  if (::geteuid() != 0) fs::permissions(dir_ / "ro", fs::perms::owner_write, fs::perm_options::remove);
  const auto out = run_command(in_dir_ + as_user + exe_ + " reconstruct ex.txt -o ro --backend cpu");
  EXPECT_EQ(out.exit_code, 1) << out.output;
  EXPECT_TRUE(says(out, "cannot write into output directory ro: Permission denied")) << out.output;
  EXPECT_FALSE(says(out, "ex.png")) << "beamformed before refusing: " << out.output;
  const auto report = run_command(in_dir_ + as_user + exe_ + " reconstruct ex.txt -o out --backend cpu --report ro/r.json");
  EXPECT_NE(report.exit_code, 0) << report.output;
  EXPECT_TRUE(says(report, "--report ro/r.json: its directory ro cannot be written: Permission denied")) << report.output;
  EXPECT_FALSE(says(report, "ex.png")) << "beamformed before refusing: " << report.output;
  // A directory of inputs that cannot be listed is said so (it was "is a directory, not a file").
  fs::create_directory(dir_ / "closed");
  fs::permissions(dir_ / "closed", ::geteuid() == 0 ? fs::perms::owner_all : fs::perms::none);
  const auto closed = run_command(in_dir_ + as_user + exe_ + " reconstruct closed/ -o out --backend cpu");
  EXPECT_EQ(closed.exit_code, 1) << closed.output;
  EXPECT_TRUE(says(closed, "closed/: cannot list this directory: Permission denied")) << closed.output;
  fs::permissions(dir_ / "closed", fs::perms::owner_all);
  if (::geteuid() != 0) fs::permissions(dir_ / "ro", fs::perms::owner_write, fs::perm_options::add);
}

// An output directory whose name the file system cannot hold was found when the first frame was
// written, after every input was beamformed ("File name too long" for each); it is said first.
TEST_F(CliPaths, AnOutputNameTooLongIsSaidBeforeAnyWork) {
  const std::string name(300, 'o');
  const auto r = usrecon("reconstruct ex.txt --backend cpu -o out/" + name + "/images");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(says(r, "cannot create output directory out/" + name + "/images: the name " + std::string(40, 'o') +
                          "... has 300 bytes, more than the file system's 255"))
      << r.output;
  EXPECT_FALSE(says(r, "ex.png")) << "beamformed before refusing: " << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  // 255 bytes is a name the file system holds.
  const auto fits = usrecon("reconstruct ex.txt --backend cpu -o " + std::string(255, 'k'));
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
}
