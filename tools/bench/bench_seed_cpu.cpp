// Seed model on the CPU: seconds per full 1200 x 762 frame for each kernel and thread count
// (each kernel's image first checked bit for bit against the plain reference loop on 9 columns),
// then, side by side in the same run, the whole `usrecon reconstruct` process and the seed's own
// Numba code (../shared/bench/seed_numba_cpu.py, loaded unchanged by numba_seed_runs.py: one
// compiling call, then N timed ones) on the same input, with the ratio of the medians and a
// bit-exact comparison of the two images.
//
//   bench_seed_cpu [--input FILE] [--numba SCRIPT] [--no-numba] [--runs N] [google-benchmark flags]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "usrecon/io/npy.hpp"
#include "usrecon/io/source_txt.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/seed_cpu.hpp"

namespace fs = std::filesystem;
namespace seed = usrecon::recon::seed;

namespace {

std::vector<std::int32_t> g_rf;

// The first of 9 lateral columns j (out[j * nz + i], the whole grid) that is not bit for bit the
// plain reference loop's (seed::beamform_reference on the one-column window; the whole frame
// would take minutes), or -1.
int first_column_differing(const seed::Problem& p, const std::vector<double>& out) {
  std::vector<double> want(std::size_t(p.nz));
  for (int k = 0; k < 9; ++k) {
    const int j = k * (p.nx - 1) / 8;
    seed::beamform_reference(g_rf, p, seed::Window{0, p.nz, j, 1}, want);
    if (std::memcmp(want.data(), out.data() + std::size_t(j) * p.nz, want.size() * sizeof(double)) != 0) return j;
  }
  return -1;
}

void BM_SeedFrame(benchmark::State& state, seed::CpuKernel kernel) {
  if (!seed::cpu_supports(kernel)) {
    state.SkipWithError("kernel not supported by this CPU");
    return;
  }
  const int threads = state.range(0) == 0 ? usrecon::kernels::hardware_threads() : int(state.range(0));
  const seed::Problem p;
  const seed::SeedCpuBeamformer beamformer(p, seed::full_window(p), kernel);
  std::vector<double> out(std::size_t(p.nx) * p.nz);
  beamformer.beamform(g_rf, out, threads);
  if (const int column = first_column_differing(p, out); column >= 0) {
    state.SkipWithError(("column " + std::to_string(column) + " differs from the reference loop's").c_str());
    return;
  }
  for (auto _ : state) {
    beamformer.beamform(g_rf, out, threads);
    benchmark::DoNotOptimize(out.data());
  }
  // Pair evaluations: every (pixel, k, n) of the seed's loop, 1.49e10 per frame.
  const double pairs = double(p.nx) * p.nz * p.channels * p.channels;
  state.counters["pairs_per_s_per_core"] =
      benchmark::Counter(pairs / threads, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double time_command(const std::string& command) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(command.c_str());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0) {
    std::fprintf(stderr, "command failed (%d): %s\n", rc, command.c_str());
    std::exit(1);
  }
  return s;
}

std::string run_capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input = std::string(USRECON_SOURCE_DIR) + "/data/example.txt";
  std::string numba = std::string(USRECON_SOURCE_DIR) + "/../shared/bench/seed_numba_cpu.py";
  std::string usrecon_exe = USRECON_EXE_PATH;
  bool with_numba = true;
  int runs = 3;
  std::vector<char*> rest = {argv[0]};
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--input" && a + 1 < argc) input = argv[++a];
    else if (arg == "--numba" && a + 1 < argc) numba = argv[++a];
    else if (arg == "--no-numba") with_numba = false;
    else if (arg == "--runs" && a + 1 < argc) runs = std::max(1, std::atoi(argv[++a]));
    else {
      // Google Benchmark's --help lists only its own flags; this program's come first.
      if (arg == "--help" || arg == "-h")
        std::printf("usage: %s [--input FILE] [--numba SCRIPT] [--no-numba] [--runs N] [google-benchmark flags]\n"
                    "  --input FILE     source.txt to time (default: data/example.txt)\n"
                    "  --numba SCRIPT   the seed's Numba program run side by side (default: "
                    "../shared/bench/seed_numba_cpu.py)\n"
                    "  --no-numba       skip the Numba comparison\n"
                    "  --runs N         repetitions of each timing, Numba's too (default 3; Numba's\n"
                    "                   take some 50 s each on a 2-core machine)\n\n",
                    argv[0]);
      rest.push_back(argv[a]);
    }
  }
  g_rf = usrecon::io::read_source_txt(input, 128, 2000);

  for (auto kernel : {seed::CpuKernel::Avx512, seed::CpuKernel::Avx2, seed::CpuKernel::Scalar}) {
    auto* b = benchmark::RegisterBenchmark(("seed_frame/" + seed::to_string(kernel)).c_str(),
                                           BM_SeedFrame, kernel);
    b->Arg(1)->Arg(0)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1)->Repetitions(runs)
        ->ReportAggregatesOnly(true);
    if (kernel == seed::CpuKernel::Scalar) b->Repetitions(1);  // ~15 s a frame: once is enough
  }
  int bench_argc = int(rest.size());
  benchmark::Initialize(&bench_argc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  // The whole process, as a user runs it: read, beamform, B-mode, write.
  const fs::path tmp = fs::temp_directory_path() / ("usrecon-bench-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::vector<double> process_s;
  for (int r = 0; r < runs; ++r)
    process_s.push_back(time_command(usrecon_exe + " reconstruct '" + input + "' -o '" + tmp.string() +
                                     "' --save-raw --overwrite --backend cpu > /dev/null"));
  const double ours = median(process_s);
  std::printf("\nusrecon reconstruct, whole process (median of %d): %.3f s per frame\n", runs, ours);

  if (with_numba) {
    const std::string runner = std::string(USRECON_SOURCE_DIR) + "/tools/bench/numba_seed_runs.py";
    if (std::system("/usr/bin/python3 -c 'import numba' 2>/dev/null") != 0 || !fs::exists(numba)) {
      std::printf("seed's Numba: not run (python3-numba or %s missing)\n", numba.c_str());
    } else {
      const fs::path numba_npy = tmp / "numba.npy";
      std::printf("running the seed's Numba code (%s: a compiling call, then %d timed); this takes minutes...\n",
                  numba.c_str(), runs);
      std::fflush(stdout);
      const std::string log = run_capture("/usr/bin/python3 '" + runner + "' '" + numba + "' '" + input + "' '" +
                                          numba_npy.string() + "' " + std::to_string(runs) + " 2>&1");
      std::smatch m;
      double numba_run = 0.0, numba_first = 0.0;
      if (std::regex_search(log, m, std::regex("median run seconds ([0-9.]+) over"))) numba_run = std::stod(m[1]);
      if (std::regex_search(log, m, std::regex("compile\\+run seconds ([0-9.]+)"))) numba_first = std::stod(m[1]);
      if (!(numba_run > 0) || !fs::exists(numba_npy)) {
        std::printf("seed's Numba: its runner failed:\n%s\n", log.c_str());
        return 1;
      }
      const auto a = usrecon::io::read_npy(numba_npy).as<double>();
      const auto b = usrecon::io::read_npy(tmp / (fs::path(input).stem().string() + ".npy")).as<double>();
      const bool exact = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
      std::printf("seed's Numba (1 core): compile+run %.2f s, compiled run %.2f s (median of %d)\n", numba_first,
                  numba_run, runs);
      std::printf("ratio, Numba compiled run / usrecon whole process (medians): %.1fx\n", numba_run / ours);
      std::printf("usrecon raw output vs Numba's out[762][1200]: %s\n", exact ? "bit-exact" : "DIFFERENT");
      if (!exact) return 1;
    }
  }
  fs::remove_all(tmp);
  return 0;
}
