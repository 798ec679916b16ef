// The CUDA DAS kernels checked against the CPU beamformer and timed, with nothing but CUDA and
// this project's sources (no Google Benchmark, GTest or OpenCV: the lent GPU machine has none, so
// tools/gpu-check.sh can build this with nvcc alone).
//
// Cases: the real data set's size (128 elements, 7 angles, 2688 samples, 801 x 1701 pixels at
// 0.05 mm), PICMUS's (128 elements, 75 angles, 3328 samples), and the first with 7 diverging
// or 7 focused waves instead of plane waves (pixel-per-thread kernel only), and, only when --cases
// names them, PICMUS's size with 8, 16 or 32 plane waves (pw8, pw16, pw32); F-number 1.5, linear
// interpolation; data are random analytic samples (the kernels' cost does not depend on values).
// For each kernel: relative L2 against DasCpuBeamformer on the same data (must be <= 1e-5, or
// --max-rel-l2, else no time is reported), then the median of --reps kernel times from CUDA events
// after a warm-up.
// Without a usable device it says why and exits 0; with one, any error fails the kernel it hit.
// Prints "RESULT das_<case>_<kernel>[_<label>]_points_per_s=..." lines for the table.
//   das_cuda_check [--reps N] [--cpu-threads N] [--cases A,B] [--kernels K,L] [--label NAME]
//                  [--max-rel-l2 X] [--transmits-per-launch N,M] [--lateral-lanes L,M] [--profile]
// --transmits-per-launch: the transmit-blocked kernel is checked and timed once for each (-1:
// chosen from the device's L2, the default; 0: one launch; else a multiple of 8), its RESULT
// names tagged _tpl<N> (_tplauto for -1) unless the list is the default; each run also prints
// "RESULT das_<case>_transmit-blocked[_tpl<N>]_transmits_per_launch=" with the size it took.
// --lateral-lanes: every kernel is checked and timed once for each (DasCudaTuning::lateral_lanes:
// 1, 2, 4, 8, 16 or 32; default 1), RESULT names tagged _l<L> unless the list is the default.
// Within a case and kernel, each launch size and lane count after the first must give the first's
// image bit for bit (each pixel's program is the same), else it is not timed.
// --profile: one beamform for each selected run and nothing else (no CPU image, no check, no
// timing; every run is checked by gpu-check's other steps): for a profiler (gpu-check's profile
// step runs it under Nsight Compute). It prints the runs in their launch order.
// --cases and --kernels keep only those named (default: all); --label tags the RESULT names, for
// a build of the same check with other compiler flags (gpu-check's fused multiply-add build,
// which gets --max-rel-l2 1e-3: fused multiply-adds move a sample position by a rounding step,
// which on white-noise data changes the image by about 1e-4 in relative L2, as running the
// kernels' programs on the host with FMA contraction showed).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <numbers>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "usrecon/recon/compare.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/das_cuda.hpp"

namespace {

using namespace usrecon::recon;

/// `angles` plane waves evenly over [-max_deg, +max_deg]; for Model::DivergingWave as many
/// diverging waves from sources 10 mm behind the array, 3 mm apart, and for Model::FocusedWave as
/// many focused waves, their focal points 30 mm deep and 3 mm apart, instead.
DasProblem make_problem(int angles, double max_deg, int samples, Model model = Model::PlaneWave) {
  DasProblem p;
  p.acquisition.model = model;
  p.acquisition.probe = {128, 0.298e-3};
  p.acquisition.fs = 20e6;
  for (int k = 0; k < angles; ++k) {
    if (has_virtual_sources(model)) {
      p.acquisition.source_x.push_back((k - 0.5 * (angles - 1)) * 3e-3);
      p.acquisition.source_z.push_back(model == Model::FocusedWave ? 30.0123e-3 : -10e-3);
    } else {
      p.acquisition.angles.push_back((-max_deg + 2 * max_deg * k / (angles - 1)) * std::numbers::pi / 180);
    }
  }
  p.samples = samples;
  p.grid = Grid::from_ranges(-20e-3, 20e-3, 0.05e-3, 5e-3, 90e-3, 0.05e-3);
  p.options.fnumber = 1.5;
  p.options.interp = Interp::Linear;
  return p;
}

AnalyticData random_analytic_data(const DasProblem& p) {
  AnalyticData d = AnalyticData::zeros(p.samples, p.acquisition.probe.elements, p.acquisition.transmits());
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal;
  for (int t = 0; t < d.transmits; ++t)
    for (int e = 0; e < d.elements; ++e) {
      float* i = const_cast<float*>(d.i_channel(t, e));
      float* q = const_cast<float*>(d.q_channel(t, e));
      for (int s = 0; s < d.samples; ++s) i[s] = normal(rng), q[s] = normal(rng);
    }
  return d;
}

}  // namespace

struct Case {
  const char* name;
  int angles;
  double max_deg;
  int samples;
  Model model = Model::PlaneWave;
  bool only_when_named = false;  ///< left out when --cases is not given
};
const Case kCases[] = {{"rfdata1", 7, 1.5, 2688},
                       {"picmus", 75, 16.0, 3328},
                       {"dw7", 7, 0.0, 2688, Model::DivergingWave},
                       {"fw7", 7, 0.0, 2688, Model::FocusedWave},
                       // PICMUS's geometry with fewer plane waves: 28, 56 and 111 MB of (I, Q)
                       // pairs, for where the channel data outgrow the L2 cache (gpu-check's
                       // das-check-l2 step; not run unless --cases names them).
                       {"pw8", 8, 16.0, 3328, Model::PlaneWave, true},
                       {"pw16", 16, 16.0, 3328, Model::PlaneWave, true},
                       {"pw32", 32, 16.0, 3328, Model::PlaneWave, true}};
const DasCudaKernel kKernels[] = {DasCudaKernel::PixelPerThread, DasCudaKernel::ElementOuter,
                                  DasCudaKernel::TransmitBlocked};

/// True when `list` (comma-separated) is empty or names `item`.
bool selected(const std::string& list, const std::string& item) {
  return list.empty() || ("," + list + ",").find("," + item + ",") != std::string::npos;
}

/// The first name in `list` (comma-separated) that is not one of `known`, or "" when all are.
std::string unknown_name(const std::string& list, const std::vector<std::string>& known) {
  std::size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, end - start);
    if (std::find(known.begin(), known.end(), name) == known.end()) return name.empty() ? "(empty)" : name;
    start = end + 1;
  }
  return "";
}

/// `names`, comma-separated, for messages.
std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run killed by gpu-check's timeout keeps its lines
  int reps = 10, cpu_threads = 0;
  double max_rel_l2 = 1e-5;
  std::string cases, kernels, label;
  std::vector<int> launch_sizes = {-1}, lane_counts = {1};
  bool profile = false;
  for (int k = 1; k < argc; k += 2) {
    if (!std::strcmp(argv[k], "--profile")) {  // the one option without a value
      profile = true;
      --k;
      continue;
    }
    if (k + 1 >= argc) {
      std::fprintf(stderr, "das_cuda_check: %s needs a value\n", argv[k]);
      return 2;
    }
    if (!std::strcmp(argv[k], "--reps")) reps = std::max(1, std::atoi(argv[k + 1]));
    else if (!std::strcmp(argv[k], "--cpu-threads")) cpu_threads = std::atoi(argv[k + 1]);
    else if (!std::strcmp(argv[k], "--cases")) cases = argv[k + 1];
    else if (!std::strcmp(argv[k], "--kernels")) kernels = argv[k + 1];
    else if (!std::strcmp(argv[k], "--label")) label = std::string("_") + argv[k + 1];
    else if (!std::strcmp(argv[k], "--max-rel-l2")) max_rel_l2 = std::atof(argv[k + 1]);
    else if (!std::strcmp(argv[k], "--transmits-per-launch")) {
      launch_sizes.clear();
      for (const char* at = argv[k + 1]; *at;) {
        char* end = nullptr;
        const long n = std::strtol(at, &end, 10);
        if (end == at || (*end != ',' && *end != '\0') || n < -1 || n > 100000 || (n > 0 && n % 8 != 0)) {
          std::fprintf(stderr, "das_cuda_check: --transmits-per-launch takes -1, 0 or multiples of 8, "
                               "comma-separated\n");
          return 2;
        }
        launch_sizes.push_back(int(n));
        at = *end ? end + 1 : end;
      }
      if (launch_sizes.empty()) launch_sizes = {-1};
    } else if (!std::strcmp(argv[k], "--lateral-lanes")) {
      lane_counts.clear();
      for (const char* at = argv[k + 1]; *at;) {
        char* end = nullptr;
        const long n = std::strtol(at, &end, 10);
        namespace g = usrecon::recon::das::gpu;
        if (end == at || (*end != ',' && *end != '\0') ||
            std::find(std::begin(g::kLateralLaneChoices), std::end(g::kLateralLaneChoices), n) ==
                std::end(g::kLateralLaneChoices)) {
          std::fprintf(stderr, "das_cuda_check: --lateral-lanes takes 1, 2, 4, 8, 16 or 32, comma-separated\n");
          return 2;
        }
        lane_counts.push_back(int(n));
        at = *end ? end + 1 : end;
      }
      if (lane_counts.empty()) lane_counts = {1};
    } else {
      std::fprintf(stderr, "usage: das_cuda_check [--reps N] [--cpu-threads N] [--cases A,B] "
                           "[--kernels K,L] [--label NAME] [--max-rel-l2 X] [--transmits-per-launch N,M] "
                           "[--lateral-lanes L,M] [--profile]\n");
      return 2;
    }
  }
  if (!(max_rel_l2 > 0 && max_rel_l2 <= 0.1)) {
    std::fprintf(stderr, "das_cuda_check: --max-rel-l2 takes a bound in (0, 0.1]\n");
    return 2;
  }
  // Checked before the device is looked for, so that a typo is caught on any machine.
  std::vector<std::string> case_names, kernel_names;
  for (const Case& c : kCases) case_names.push_back(c.name);
  for (const DasCudaKernel k : kKernels) kernel_names.push_back(to_string(k));
  for (const auto& [list, known, what] : {std::tuple{&cases, &case_names, "case"},
                                          std::tuple{&kernels, &kernel_names, "kernel"}}) {
    if (const std::string bad = unknown_name(*list, *known); !bad.empty()) {
      std::fprintf(stderr, "das_cuda_check: unknown %s '%s' (%s)\n", what, bad.c_str(), joined(*known).c_str());
      return 2;
    }
  }
  // The label becomes part of RESULT names, which gpu-check.sh reads with sed.
  if (label.find_first_not_of("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != std::string::npos) {
    std::fprintf(stderr, "das_cuda_check: --label takes letters, digits, '-' and '_' only\n");
    return 2;
  }
  try {
    usrecon::require_cuda("das_cuda_check");
  } catch (const usrecon::CudaUnavailable& e) {  // nothing to check here: exit 77, "skipped"
    std::printf("das_cuda_check: skipped: %s\n", e.what());
    return 77;  // nothing was checked: gpu-check.sh's steps say "skipped", never "ok"
  }
  int failures = 0, selected_runs = 0;
  for (const Case& c : kCases) {
    if (!selected(cases, c.name) || (cases.empty() && c.only_when_named)) continue;
    const DasProblem p = make_problem(c.angles, c.max_deg, c.samples, c.model);
    const AnalyticData data = random_analytic_data(p);
    std::vector<std::complex<float>> cpu;
    // points/s counts every (pixel, element, transmit), the issue's and mach's unit; the triples
    // whose weight is not zero (the work done: the kernels skip zero weights) are this fraction.
    const double weighted_fraction = p.weighted_points() / p.points();
    if (!profile) std::printf("RESULT das_%s_weighted_fraction=%.4g\n", c.name, weighted_fraction);
    if (c.model == Model::PlaneWave && selected(kernels, "transmit-blocked") && !profile) {
      // Which kernel --cuda-kernel auto takes here (it compares the data with this device's L2).
      try {
        const DasCudaBeamformer automatic(p, DasCudaKernel::Auto);
        std::printf("RESULT das_%s_auto_kernel=%s\n", c.name, to_string(automatic.kernel()).c_str());
      } catch (const std::exception& e) {
        std::printf("das_%s: auto: FAILED: %s\n", c.name, e.what());
        ++failures;
      }
    }
    for (const DasCudaKernel kernel : kKernels) {
      if (c.model != Model::PlaneWave && kernel != DasCudaKernel::PixelPerThread) continue;  // plane waves only
      if (!selected(kernels, to_string(kernel))) continue;
      // This kernel's image at the first launch size and lane count: every other must give it bit
      // for bit (launches of whole transmit blocks add in the one launch's order; lanes only move
      // pixels between threads).
      std::vector<std::complex<float>> first_image;
      const std::vector<int> sizes = kernel == DasCudaKernel::TransmitBlocked ? launch_sizes : std::vector<int>{-1};
      std::vector<std::pair<int, int>> runs;  // (transmits a launch, lateral lanes)
      for (const int size : sizes)
        for (const int lanes : lane_counts) runs.emplace_back(size, lanes);
      for (const auto& [launch_size, lanes] : runs) {
        const bool tagged = kernel == DasCudaKernel::TransmitBlocked && launch_sizes != std::vector<int>{-1};
        const std::string split =
            tagged ? "_tpl" + (launch_size < 0 ? std::string("auto") : std::to_string(launch_size)) : std::string();
        const std::string lane_tag = lane_counts != std::vector<int>{1} ? "_l" + std::to_string(lanes) : std::string();
        const std::string name = std::string("das_") + c.name + "_" + to_string(kernel) + split + lane_tag + label;
        ++selected_runs;
        try {
          DasCudaBeamformer gpu(p, kernel, {.transmits_per_launch = launch_size, .lateral_lanes = lanes});
          if (kernel == DasCudaKernel::TransmitBlocked)
            std::printf("RESULT %s_transmits_per_launch=%d\n", name.c_str(), gpu.transmits_per_launch());
          std::vector<std::complex<float>> out(p.grid.pixels());
          gpu.beamform(data, out.data());  // warm-up, and the image to check
          if (profile) {
            std::printf("profile: %s, %s, %d transmits a launch\n", name.c_str(), gpu.device().c_str(),
                        gpu.transmits_per_launch());
            continue;
          }
          if (cpu.empty()) cpu = DasCpuBeamformer(p, cpu_threads).beamform(data).data;
          const double err = relative_l2(out, cpu);
          std::printf("RESULT %s_rel_l2_vs_cpu=%.3g\n", name.c_str(), err);
          if (first_image.empty()) {
            first_image = out;
          } else {
            std::size_t differing = 0;
            for (std::size_t k = 0; k < out.size(); ++k) differing += out[k] != first_image[k];
            std::printf("RESULT %s_pixels_differing_from_first_split=%zu\n", name.c_str(), differing);
            if (differing != 0) {
              std::printf("%s: %zu pixels differ from the first launch size's and lane count's image: not timed\n",
                          name.c_str(), differing);
              ++failures;
              continue;
            }
          }
          if (!(err <= max_rel_l2)) {
            std::printf("%s: disagrees with the CPU (relative L2 %.3g > %.3g): not timed\n", name.c_str(), err,
                        max_rel_l2);
            ++failures;
            continue;
          }
          std::vector<double> seconds;
          for (int r = 0; r < reps; ++r) {
            gpu.beamform(data, out.data());
            seconds.push_back(gpu.last_kernel_seconds());
          }
          std::sort(seconds.begin(), seconds.end());
          const double median = seconds[seconds.size() / 2];
          std::printf("%s on %s: median kernel %.3f ms over %d runs (min %.3f), %.3g points/s (%.3g of them "
                      "weighted, not zero)\n",
                      name.c_str(), gpu.device().c_str(), median * 1e3, reps, seconds.front() * 1e3,
                      p.points() / median, weighted_fraction * p.points() / median);
          std::printf("RESULT %s_points_per_s=%.6g\n", name.c_str(), p.points() / median);
        } catch (const std::exception& e) {
          // With a device there, any error (out of memory too) fails this kernel; the others still
          // run, unless the error sticks to the context (a fault in a kernel), which ends the check.
          std::printf("%s: FAILED: %s\n", name.c_str(), e.what());
          ++failures;
          cudaGetLastError();  // clears an error that does not stick (out of memory) for later checks
          if (cudaDeviceSynchronize() != cudaSuccess) {
            std::printf("das_cuda_check: the CUDA context is unusable after that error; stopping\n");
            return 1;
          }
        }
      }
    }
  }
  if (selected_runs == 0) {
    std::fprintf(stderr, "das_cuda_check: --cases '%s' --kernels '%s' select nothing\n", cases.c_str(),
                 kernels.c_str());
    return 2;
  }
  return failures == 0 ? 0 : 1;
}
