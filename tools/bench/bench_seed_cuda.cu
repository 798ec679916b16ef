// The seed model on the GPU, timed honestly: kernel milliseconds per frame from CUDA events (double
// and single precision, median of repeats after warm-up; for the default work split and for every
// pixels-per-thread count the kernel is compiled for, each checked against the exact image before
// it is timed), the single-precision mismatch against the exact CPU image, and end-to-end batch
// throughput over >= 100 frames from pinned host
// buffers with H2D copy, kernel and D2H copy of consecutive frames overlapped on several streams,
// against the same batch on one stream.
//
// Needs no Google Benchmark, OpenCV or JSON library (tools/gpu-check.sh builds it with nvcc alone
// where those are missing). Prints one `RESULT key=value` line per figure, for gpu-check.sh.
//
//   bench_seed_cuda [--data FILE] [--frames N] [--streams S] [--repeats R] [--verify]
//                   [--profile PRECISION:KEY[,PRECISION:KEY...]]
//
// --verify also checks bit-exactness against the CPU on random data and odd grid sizes (what the
// GTest suite checks; for machines without GTest). --profile runs nothing but one frame for each
// named precision and work split (KEY as WorkSplit::key(): single:px8, double:px8_l2_s2_a1, ...),
// each image checked against the exact one, one seed_kernel launch each in the order given: for
// a profiler (gpu-check's profile step runs it under Nsight Compute). Exit status: 0 ok, 1 a
// check failed, 2 bad arguments, 77 no usable CUDA device (gpu-check.sh: "skipped").
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "usrecon/kernels/common.hpp"
#include "usrecon/kernels/cuda_memory.hpp"
#include "usrecon/recon/seed_cpu.hpp"
#include "usrecon/recon/seed_cuda.hpp"

#ifndef USRECON_SOURCE_DIR
#define USRECON_SOURCE_DIR "."
#endif

namespace seed = usrecon::recon::seed;
namespace kn = usrecon::kernels;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<std::int32_t> read_frame(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::int32_t> rf;
  for (long v; in >> v;) rf.push_back(std::int32_t(v));
  return rf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

void result(const char* key, double value) { std::printf("RESULT %s=%.6g\n", key, value); }

bool verify_random(int& failures) {
  struct Case {
    seed::Problem p;
    seed::Window w;
  };
  const Case cases[] = {{{37, 29, 9, 300}, {0, 37, 0, 29}},
                        {{77, 53, 16, 700}, {0, 77, 0, 53}},
                        {{130, 101, 32, 900}, {7, 100, 13, 77}},
                        {{200, 150, 128, 2000}, {0, 200, 0, 150}}};
  std::mt19937 rng(42);
  for (const Case& c : cases) {
    // int16 samples with int32 sums, int32 samples with int32 sums, int32 samples with int64 sums
    for (const int amplitude : {100, 40000, 2000000000}) {
      std::uniform_int_distribution<std::int32_t> value(-amplitude, amplitude);
      std::vector<std::int32_t> rf(std::size_t(c.p.channels) * c.p.samples);
      for (std::int32_t& v : rf) v = value(rng);
      const std::size_t pixels = std::size_t(c.w.ni) * c.w.nj;
      std::vector<double> cpu(pixels), image(pixels);
      seed::beamform_cpu(rf, c.p, c.w, cpu);
      for (const seed::Precision precision : {seed::Precision::Double, seed::Precision::Single}) {
        for (const seed::gpu::WorkSplit& split : seed::gpu::work_splits()) {
          seed::SeedCudaBeamformer beamformer(c.p, c.w, precision, 1, split);
          std::fill(image.begin(), image.end(), -1.0);
          beamformer.beamform(rf, image);
          const seed::ImageDiff d = seed::compare_images(image, cpu);
          const bool ok = d.differing == 0;
          std::printf("verify %-6s %4dx%-4d ch=%-3d amplitude=%-10d %s: %s (%zu pixels differ)\n",
                      seed::to_string(precision).c_str(), c.p.nz, c.p.nx, c.p.channels, amplitude,
                      split.name().c_str(), ok ? "bit-exact" : "MISMATCH", d.differing);
          if (!ok) ++failures;  // both precisions are exact (the GTest suite's check)
        }
      }
    }
  }
  return failures == 0;
}

/// One profiled frame: "single:px8_l2" -> (Single, that split); false when either is unknown.
bool parse_profile_item(const std::string& item, seed::Precision& precision, seed::gpu::WorkSplit& split) {
  const std::size_t colon = item.find(':');
  if (colon == std::string::npos) return false;
  try {
    precision = seed::parse_precision(item.substr(0, colon));
  } catch (const std::exception&) {
    return false;
  }
  for (const seed::gpu::WorkSplit& ws : seed::gpu::work_splits())
    if (ws.key() == item.substr(colon + 1)) {
      split = ws;
      return true;
    }
  return false;
}

/// --profile: one frame for each (precision, split), one seed_kernel launch each, in order, each
/// image checked against the exact one. Nothing is timed here: the profiler times the launches.
int run_profile(const std::vector<std::pair<seed::Precision, seed::gpu::WorkSplit>>& runs, const seed::Problem& p,
                const seed::Window& w, const std::vector<std::int32_t>& rf, const std::vector<double>& exact) {
  int failures = 0, launch = 0;
  std::vector<double> image(exact.size());
  for (const auto& [precision, split] : runs) {
    const std::string what = seed::to_string(precision) + ", " + split.name();
    try {
      seed::SeedCudaBeamformer beamformer(p, w, precision, 1, split);
      std::fill(image.begin(), image.end(), -1.0);
      beamformer.beamform(rf, image);
      const std::size_t differing = seed::compare_images(image, exact).differing;
      std::printf("profile launch %d: %s (%s_%s), %d blocks = %.2f waves: %s\n", launch++, what.c_str(),
                  seed::to_string(precision).c_str(), split.key().c_str(),
                  beamformer.plan().grid_x * beamformer.plan().grid_y, beamformer.waves(),
                  differing == 0 ? "bit-exact" : "MISMATCH");
      if (differing != 0) ++failures;
    } catch (const std::exception& e) {
      std::printf("profile: %s: FAILED: %s\n", what.c_str(), e.what());
      ++failures;
      cudaGetLastError();
      if (cudaDeviceSynchronize() != cudaSuccess) return 1;
    }
  }
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run killed by gpu-check's timeout keeps its lines
  std::string data = USRECON_SOURCE_DIR "/data/example.txt";
  int frames = 200, streams = 3, repeats = 10;
  bool verify = false;
  std::vector<std::pair<seed::Precision, seed::gpu::WorkSplit>> profile;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto next = [&]() -> const char* {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "bench_seed_cuda: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (arg == "--data") data = next();
    else if (arg == "--frames") frames = std::atoi(next());
    else if (arg == "--streams") streams = std::atoi(next());
    else if (arg == "--repeats") repeats = std::max(1, std::atoi(next()));  // a median needs one
    else if (arg == "--verify") verify = true;
    else if (arg == "--profile") {
      const std::string list = next();
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t end = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, end - start);
        seed::Precision precision{};
        seed::gpu::WorkSplit split;
        if (!parse_profile_item(item, precision, split)) {
          std::fprintf(stderr, "bench_seed_cuda: --profile: '%s' is not PRECISION:KEY (single or double, "
                               "then a compiled split's key: px8, px8_l2, px16_s2_p4, ...)\n", item.c_str());
          return 2;
        }
        profile.emplace_back(precision, split);
        start = end + 1;
      }
    } else {
      std::fprintf(stderr, "usage: bench_seed_cuda [--data FILE] [--frames N] [--streams S] "
                           "[--repeats R] [--verify] [--profile PRECISION:KEY[,...]]\n");
      return 2;
    }
  }
  try {
    usrecon::require_cuda("bench_seed_cuda");
  } catch (const usrecon::CudaUnavailable& e) {  // says why: no device, or a driver too old
    std::fprintf(stderr, "bench_seed_cuda: nothing to measure: %s\n", e.what());
    return 77;  // gpu-check.sh: "skipped: no usable CUDA device", which fails the check
  }
  try {
    const seed::Problem p;
    const seed::Window w = seed::full_window(p);
    const std::vector<std::int32_t> rf = read_frame(data);
    if (rf.size() != std::size_t(p.channels) * p.samples) {
      std::fprintf(stderr, "bench_seed_cuda: %s holds %zu values, expected %d x %d\n", data.c_str(),
                   rf.size(), p.channels, p.samples);
      return 2;
    }
    const std::size_t pixels = std::size_t(p.nz) * p.nx;
    int failures = 0;

    // The CPU's time per frame, as a batch sees it: tables built and threads started beforehand.
    std::vector<double> exact(pixels);
    const seed::SeedCpuBeamformer cpu(p, w);
    cpu.beamform(rf, exact);  // warm-up
    if (!profile.empty()) return run_profile(profile, p, w, rf, exact);
    std::vector<double> cpu_ms;  // the median of 3 frames
    for (int r = 0; r < 3; ++r) {
      const auto t0 = Clock::now();
      cpu.beamform(rf, exact);
      cpu_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(cpu_ms.begin(), cpu_ms.end());
    result("cpu_frame_ms", cpu_ms[1]);

    std::vector<double> image(pixels);
    for (const seed::Precision precision : {seed::Precision::Double, seed::Precision::Single}) {
      const std::string name = seed::to_string(precision);
      seed::SeedCudaBeamformer beamformer(p, w, precision);
      std::fill(image.begin(), image.end(), -1.0);
      beamformer.beamform(rf, image);  // warm-up (module load, first touch), and the image checked
      // Both precisions must give the exact image (single: its guarded index recomputes the seed's
      // own expression where float rounding could differ); checked before anything is timed.
      const seed::ImageDiff d = seed::compare_images(image, exact);
      const std::vector<double> default_image = image;
      if (d.differing != 0) {
        std::printf("%s: MISMATCH with the exact CPU image before timing (%zu pixels differ)\n",
                    name.c_str(), d.differing);
        ++failures;
      }
      std::vector<double> kernel_ms, h2d_ms, d2h_ms;
      for (int r = 0; r < repeats; ++r) {
        std::fill(image.begin(), image.end(), -1.0);
        const seed::GpuTiming t = beamformer.beamform(rf, image);
        kernel_ms.push_back(t.kernel_ms);
        h2d_ms.push_back(t.h2d_ms);
        d2h_ms.push_back(t.d2h_ms);
      }
      const std::size_t changed = seed::compare_images(image, default_image).differing;
      if (changed != 0) {  // the timed repeats must keep giving the checked image
        std::printf("%s: the last timed repeat's image differs from the checked one in %zu pixels\n",
                    name.c_str(), changed);
        ++failures;
      }
      std::printf("%s: kernel %.3f ms (median of %d; min %.3f, max %.3f), H2D %.3f ms, D2H %.3f ms; "
                  "vs exact CPU: %zu pixels differ (%.3g), relative L2 %.3g\n",
                  name.c_str(), median(kernel_ms), repeats,
                  *std::min_element(kernel_ms.begin(), kernel_ms.end()),
                  *std::max_element(kernel_ms.begin(), kernel_ms.end()), median(h2d_ms),
                  median(d2h_ms), d.differing, d.fraction_differing, d.relative_l2);
      std::printf("%s: the kernel's %d blocks make %.2f waves on %s\n", name.c_str(),
                  beamformer.plan().grid_x * beamformer.plan().grid_y, beamformer.waves(),
                  beamformer.device_name().c_str());
      result(("kernel_waves_" + name).c_str(), beamformer.waves());
      // A kernel that gave a wrong image has no time in the table (its rows read n/a, its
      // targets '?'): a fast wrong kernel must not pass them.
      if (d.differing == 0 && changed == 0) result(("kernel_ms_" + name).c_str(), median(kernel_ms));
      result(("h2d_ms_" + name).c_str(), median(h2d_ms));
      result(("d2h_ms_" + name).c_str(), median(d2h_ms));
      result(("fraction_differing_" + name).c_str(), d.fraction_differing);
      result(("relative_l2_" + name).c_str(), d.relative_l2);

      // The work split: every one the kernel is compiled for (gpu::work_splits: pixels a thread,
      // lateral lanes, pair splits, pairs a step, steps of loads ahead), its image first checked to be the default
      // split's bit for bit (the split changes which thread adds what, never the sums; the
      // default's own image was checked against the exact one above, before its timing), then
      // timed the same way. Keys: kernel_ms_<precision>_<WorkSplit::key()>, _px<P> alone for the
      // layout of every earlier run.
      // The fastest is printed; the default changes only when measured. An error fails its split
      // only, unless it leaves the device unusable.
      double best_ms = 0.0;
      seed::gpu::WorkSplit best{};
      bool timed_any = false;
      for (const seed::gpu::WorkSplit& ws : seed::gpu::work_splits()) {
        const std::string key = name + "_" + ws.key();
        const std::string what = name + ", " + ws.name();
        try {
          seed::SeedCudaBeamformer split(p, w, precision, 1, ws);
          std::fill(image.begin(), image.end(), -1.0);
          split.beamform(rf, image);  // warm-up, and the image checked
          const std::size_t differing = seed::compare_images(image, default_image).differing;
          if (differing != 0) {
            std::printf("%s: MISMATCH with the default split (%zu pixels); not timed\n", what.c_str(), differing);
            ++failures;
            continue;
          }
          std::vector<double> ms;
          for (int r = 0; r < repeats; ++r) ms.push_back(split.beamform(rf, image).kernel_ms);
          const double split_ms = median(ms);
          std::printf("%s: kernel %.3f ms (median of %d), %d blocks = %.2f waves; %zu pixels differ from "
                      "the exact image\n",
                      what.c_str(), split_ms, repeats, split.plan().grid_x * split.plan().grid_y, split.waves(),
                      seed::compare_images(image, exact).differing);
          result(("kernel_ms_" + key).c_str(), split_ms);
          result(("kernel_waves_" + key).c_str(), split.waves());
          if (!timed_any || split_ms < best_ms) {
            best_ms = split_ms;
            best = ws;
            timed_any = true;
          }
        } catch (const std::exception& e) {
          std::printf("%s: FAILED: %s\n", what.c_str(), e.what());
          ++failures;
          cudaGetLastError();  // clears an error that does not stick (out of memory)
          if (cudaDeviceSynchronize() != cudaSuccess) throw;  // the context is unusable: stop
        }
      }
      if (timed_any) {
        std::printf("%s: fastest work split %s, %.3f ms (default %s)\n", name.c_str(), best.name().c_str(),
                    best_ms, seed::gpu::WorkSplit{}.name().c_str());
        result(("best_pixels_" + name).c_str(), best.pixels);
        result(("best_lanes_" + name).c_str(), best.lateral_lanes);
        result(("best_splits_" + name).c_str(), best.pair_splits);
        result(("best_step_" + name).c_str(), best.pair_step);
        result(("best_ahead_" + name).c_str(), best.loads_ahead);
        std::printf("RESULT best_key_%s=%s\n", name.c_str(), best.key().c_str());  // for --profile
        result(("kernel_ms_best_split_" + name).c_str(), best_ms);
      }
    }

    // Batch: `frames` frames from pinned buffers, `streams` in flight, and the same on one stream
    // (each frame's copies and kernel one after the other): the ratio of the two rates is what
    // overlapping gains. (Per-frame event times cannot show it: with frames in flight, a frame's
    // H2D-to-D2H span includes waiting for the copy engine and sharing the GPU with its
    // neighbours.) Eight distinct inputs (the example plus noise) rotate, so copies are real and
    // no two neighbours share a buffer.
    constexpr int kInputs = 8;
    std::vector<kn::PinnedBuffer<std::int32_t>> inputs;
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> noise(-3, 3);
    for (int f = 0; f < kInputs; ++f) {
      inputs.emplace_back(rf.size());
      for (std::size_t s = 0; s < rf.size(); ++s) inputs.back()[s] = rf[s] + (f ? noise(rng) : 0);
    }
    for (const seed::Precision precision : {seed::Precision::Double, seed::Precision::Single}) {
      const std::string name = seed::to_string(precision);
      double fps[2] = {0, 0};  // on one stream, on `streams`
      for (int overlapped = 0; overlapped < 2; ++overlapped) {
        seed::SeedCudaBeamformer beamformer(p, w, precision, overlapped ? streams : 1);
        // With `check`, the frame of input 0 (the example itself) is compared with the exact
        // CPU image when it comes back: its pixels that differ.
        auto run_batch = [&](int n, std::size_t* differing) {
          double checksum = 0.0;
          std::vector<int> held(std::size_t(beamformer.streams()), -1);  // input index per slot
          for (int f = 0; f < n + beamformer.streams(); ++f) {
            const int slot = f % beamformer.streams();
            if (beamformer.pending(slot)) {
              const std::span<const double> out = beamformer.finish(slot);
              checksum += out[out.size() / 2];
              if (differing && held[std::size_t(slot)] == 0)
                *differing = seed::compare_images(out, exact).differing;
            }
            if (f < n) {
              beamformer.enqueue(slot, inputs[std::size_t(f % kInputs)].cspan());
              held[std::size_t(slot)] = f % kInputs;
            }
          }
          return checksum;
        };
        // Warm-up, its frames in flight on every stream: the overlapped path's image checked
        // before it is timed.
        std::size_t differing = SIZE_MAX;
        run_batch(beamformer.streams(), &differing);
        if (differing != 0) {
          std::printf("%s batch on %d stream(s): MISMATCH with the exact CPU image (%s); not timed\n", name.c_str(),
                      beamformer.streams(), differing == SIZE_MAX ? "no image" : std::to_string(differing).c_str());
          ++failures;
          fps[overlapped] = 0.0;
          continue;
        }
        const auto start = Clock::now();
        const double checksum = run_batch(frames, nullptr);
        const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
        fps[overlapped] = frames / wall_s;
        std::printf("%s batch: %d frames on %d stream(s) in %.3f s = %.1f frames/s (checksum %.0f)\n",
                    name.c_str(), frames, beamformer.streams(), wall_s, fps[overlapped], checksum);
      }
      if (fps[0] <= 0.0 || fps[1] <= 0.0) continue;  // a batch gave a wrong image: no figures
      std::printf("%s batch: %.2fx the frames/s of one stream\n", name.c_str(), fps[1] / fps[0]);
      result(("batch_fps_" + name).c_str(), fps[1]);
      result(("batch_fps_one_stream_" + name).c_str(), fps[0]);
      result(("batch_overlap_" + name).c_str(), fps[1] / fps[0]);
    }
    result("frames", frames);

    if (verify) {
      verify_random(failures);
      result("verify_failures", failures);
    }
    std::printf("%s\n", failures ? "bench_seed_cuda: CHECKS FAILED" : "bench_seed_cuda: checks passed");
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_seed_cuda: error: %s\n", e.what());
    return 1;
  }
}
