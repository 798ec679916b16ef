// The stages of a batch around the beamformer, piece by piece. The writer stage: what one frame
// costs after it is beamformed (B-mode: envelope and log compression; the PNG and NPY writes). In
// `usrecon reconstruct DIR` the writer threads (--writers) do this for every frame, so it bounds a
// batch's frames/s whatever the beamformer's speed (on CUDA the beamformer takes ~3 ms a frame).
// The reader's share for the seed's input: parsing a full-size source.txt (128 x 2000 integers)
// already in memory.
//
//   bench_bmode [--out DIR] [google-benchmark flags]
//
// Images: the seed's (762 x 1200 real RF: Hilbert envelope along depth) and the general models'
// at the real data set's size (801 x 1701 complex IQ: the envelope is the modulus), made of
// seeded random values; only the PNG encoder's cost depends on the values, a little.
#include <benchmark/benchmark.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "usrecon/io/npy.hpp"
#include "usrecon/io/png.hpp"
#include "usrecon/io/source_txt.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/bmode.hpp"

namespace fs = std::filesystem;
namespace recon = usrecon::recon;

namespace {

fs::path g_out_dir;

struct Size {
  int nx, nz;
};
constexpr Size kSeed{762, 1200};
constexpr Size kDas{801, 1701};

// A beamformed RF image: a 5 MHz-like oscillation along depth under a random envelope, so the
// B-mode has speckle-like structure (and the PNG encoder sees an image, not noise).
std::vector<double> rf_image(Size s) {
  std::mt19937 gen(7);
  std::normal_distribution<double> amplitude(0.0, 1.0);
  std::vector<double> img(std::size_t(s.nx) * s.nz);
  for (int x = 0; x < s.nx; ++x)
    for (int z = 0; z < s.nz; ++z)
      img[std::size_t(x) * s.nz + z] = amplitude(gen) * 1e6 * std::sin(0.8 * z) / (1.0 + 0.002 * z);
  return img;
}

std::vector<std::complex<float>> iq_image(Size s) {
  std::mt19937 gen(8);
  std::normal_distribution<float> amplitude(0.0f, 1.0f);
  std::vector<std::complex<float>> img(std::size_t(s.nx) * s.nz);
  for (auto& v : img) v = {amplitude(gen), amplitude(gen)};
  return img;
}

int threads_of(const benchmark::State& state) {
  return state.range(0) == 0 ? usrecon::kernels::hardware_threads() : int(state.range(0));
}

void BM_EnvelopeSeed(benchmark::State& state) {
  const std::vector<double> img = rf_image(kSeed);
  const int threads = threads_of(state);
  for (auto _ : state) {
    std::vector<double> env = recon::envelope_along_depth(img, kSeed.nx, kSeed.nz, threads);
    benchmark::DoNotOptimize(env.data());
  }
  state.counters["threads"] = threads;
}

void BM_ModulusDas(benchmark::State& state) {
  const std::vector<std::complex<float>> img = iq_image(kDas);
  const int threads = threads_of(state);
  for (auto _ : state) {
    std::vector<double> env = recon::envelope_of_iq(img, threads);
    benchmark::DoNotOptimize(env.data());
  }
  state.counters["threads"] = threads;
}

template <Size S>
void BM_LogCompress(benchmark::State& state) {
  const std::vector<double> env = recon::envelope_along_depth(rf_image(S), S.nx, S.nz, 0);
  const int threads = threads_of(state);
  for (auto _ : state) {
    std::vector<std::uint8_t> pixels = recon::log_compress(env, S.nx, S.nz, 60.0, 0.0, threads);
    benchmark::DoNotOptimize(pixels.data());
  }
  state.counters["threads"] = threads;
}

template <Size S>
void BM_WritePng(benchmark::State& state) {
  const std::vector<std::uint8_t> pixels =
      recon::log_compress(recon::envelope_along_depth(rf_image(S), S.nx, S.nz, 0), S.nx, S.nz, 60.0, 0.0, 0);
  const fs::path path = g_out_dir / "bench_bmode.png";
  for (auto _ : state) usrecon::io::write_png_gray8(path, S.nx, S.nz, pixels);
  state.counters["bytes"] = double(fs::file_size(path));
}

template <Size S>
void BM_WriteNpy(benchmark::State& state) {
  const std::vector<double> img = rf_image(S);
  const fs::path path = g_out_dir / "bench_bmode.npy";
  const std::size_t shape[2] = {std::size_t(S.nx), std::size_t(S.nz)};
  for (auto _ : state) usrecon::io::write_npy(path, usrecon::io::DType::f64, shape, img.data());
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(img.size() * sizeof(double)));
}

// source.txt's text: 128 channels of 2000 seeded random integers in the data's range (the
// bundled file's are 16-bit), one channel a line.
void BM_ParseSourceTxt(benchmark::State& state) {
  constexpr std::size_t kChannels = 128, kSamples = 2000;
  std::mt19937 gen(9);
  std::uniform_int_distribution<int> value(-32768, 32767);
  std::string text;
  for (std::size_t channel = 0; channel < kChannels; ++channel)
    for (std::size_t sample = 0; sample < kSamples; ++sample) {
      text += std::to_string(value(gen));
      text += sample + 1 < kSamples ? ' ' : '\n';
    }
  for (auto _ : state) {
    std::vector<std::int32_t> rf = usrecon::io::parse_source_txt(text, kChannels, kSamples, "bench");
    benchmark::DoNotOptimize(rf.data());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(text.size()));
}

}  // namespace

BENCHMARK(BM_ParseSourceTxt)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EnvelopeSeed)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ModulusDas)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LogCompress<kSeed>)->Name("BM_LogCompressSeed")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LogCompress<kDas>)->Name("BM_LogCompressDas")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_WritePng<kSeed>)->Name("BM_WritePngSeed")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_WriteNpy<kSeed>)->Name("BM_WriteNpySeed")->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  g_out_dir = fs::temp_directory_path();
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      g_out_dir = argv[++i];
      continue;
    }
    rest.push_back(argv[i]);
  }
  int n = int(rest.size());
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove(g_out_dir / "bench_bmode.png", ec);
  fs::remove(g_out_dir / "bench_bmode.npy", ec);
  return 0;
}
