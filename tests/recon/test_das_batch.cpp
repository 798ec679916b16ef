// The general models' batch: reader, beamformer and writers on their own threads
// (reconstruct_batch_das) must give exactly what reconstructing each input on its own gives, in
// input order, with a failed input in the middle and a change of problem (which rebuilds the kept
// beamformer). Every test runs with one writer and with three (frames written side by side).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numbers>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../test_support.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/recon/das_simulate.hpp"
#include "usrecon/recon/pipeline.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {
namespace {

class ReconDasBatch : public usrecon::testing::TempDir, public ::testing::WithParamInterface<int> {
 protected:
  // Plane waves on 16 elements, one point at (x_mm, z_mm), as an NPY [transmits][elements][samples].
  fs::path write_acquisition(const std::string& name, double x_mm, double z_mm, int samples) {
    DasSimulationOptions o;
    o.acquisition = acquisition();
    o.samples = samples;
    o.points = {{x_mm * 1e-3, z_mm * 1e-3, 1.0}};
    o.speckle = 40;
    o.seed = std::uint64_t(x_mm * 1000 + z_mm);
    const ChannelData rf = simulate_das_channels(o);
    const std::vector<std::size_t> shape = {std::size_t(rf.transmits), std::size_t(rf.elements),
                                            std::size_t(rf.samples)};
    const fs::path path = dir_ / "in" / name;
    fs::create_directories(path.parent_path());
    io::write_npy(path, std::span<const float>(rf.data), std::span<const std::size_t>(shape));
    return path;
  }
  static Acquisition acquisition() {
    Acquisition acq;
    acq.model = Model::PlaneWave;
    acq.probe = {16, 0.3e-3};
    acq.fs = 20e6;
    for (double deg : {-5.0, 0.0, 5.0}) acq.angles.push_back(deg * std::numbers::pi / 180);
    return acq;
  }
  ReconstructOptions options() const {
    ReconstructOptions o;
    o.writers = GetParam();
    o.model = ReconModel::PlaneWave;
    o.das.acquisition = acquisition();
    o.das.given.fs = o.das.given.pitch = true;  // an NPY file says neither
    o.das.input.layout = "transmits,elements,samples";
    o.das.grid.x_min = -3e-3;
    o.das.grid.x_max = 3e-3;
    o.das.grid.dx = 0.1e-3;
    o.das.grid.z_min = 2e-3;
    o.das.grid.z_max = 12e-3;
    o.das.grid.dz = 0.05e-3;
    o.das.options.fnumber = 1.5;
    o.backend = BackendKind::Cpu;
    o.threads = 2;
    o.save_raw = true;
    return o;
  }
};

TEST_P(ReconDasBatch, OverlappedStagesGiveTheOneByOneOutputsInInputOrder) {
  std::vector<fs::path> inputs = {write_acquisition("a.npy", 0, 5, 400), dir_ / "in" / "b.npy",
                                  write_acquisition("c.npy", 1, 8, 400), write_acquisition("d.npy", -1, 6, 400),
                                  write_acquisition("e.npy", 0.5, 7, 520)};  // e: more samples, another problem
  io::write_file_atomic(inputs[1], "not an NPY file");
  Reconstructor batch(options(), dir_ / "batch");
  std::vector<FrameReport> reports;
  std::vector<std::size_t> indices;
  const std::size_t n = batch.reconstruct_batch(
      inputs,
      [&](std::size_t index, const FrameReport& report) {
        indices.push_back(index);
        reports.push_back(report);
      },
      [] { return false; });
  ASSERT_EQ(n, inputs.size());
  ASSERT_EQ(reports.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(indices[i], i);
    EXPECT_EQ(reports[i].input, inputs[i]) << "reports out of input order";
    EXPECT_EQ(reports[i].ok, i != 1) << reports[i].input << ": " << reports[i].error;
    if (i != 1) {
      EXPECT_TRUE(reports[i].timing_s.contains("analytic")) << reports[i].timing_s.dump();
      EXPECT_TRUE(reports[i].timing_s.contains("beamform")) << reports[i].timing_s.dump();
    }
  }
  EXPECT_NE(reports[1].error.find("b.npy"), std::string::npos) << reports[1].error;
  EXPECT_FALSE(fs::exists(dir_ / "batch" / "b.png"));  // a failed input leaves nothing

  // Each input on its own, in a Reconstructor of its own (a beamformer built for it alone): the
  // same images, bit for bit, as the batch's, whose beamformer served a, c and d.
  for (std::size_t i : {0u, 2u, 3u, 4u}) {
    Reconstructor single(options(), dir_ / "single");
    const FrameReport alone = single.reconstruct(inputs[i]);
    ASSERT_TRUE(alone.ok) << alone.error;
    const std::string stem = inputs[i].stem().string();
    const std::string batch_npy = io::read_file(dir_ / "batch" / (stem + ".npy"));
    EXPECT_FALSE(batch_npy.empty());
    EXPECT_EQ(batch_npy, io::read_file(dir_ / "single" / (stem + ".npy"))) << stem;
    EXPECT_EQ(io::read_file(dir_ / "batch" / (stem + ".png")), io::read_file(dir_ / "single" / (stem + ".png")))
        << stem;
  }
  // The problem changed at e (more samples): its image still has the grid asked for.
  const io::NpyArray e = io::read_npy(dir_ / "batch" / "e.npy");
  const io::NpyArray a = io::read_npy(dir_ / "batch" / "a.npy");
  EXPECT_EQ(e.shape, a.shape);
}

TEST_P(ReconDasBatch, AnErrorFromTheReportCallbackStopsReadingAndPropagates) {
  const fs::path one = write_acquisition("one.npy", 0, 5, 400);
  std::vector<fs::path> inputs;
  for (int i = 0; i < 16; ++i) {
    const fs::path copy = dir_ / "in" / ("copy" + std::to_string(100 + i) + ".npy");
    fs::copy_file(one, copy);
    inputs.push_back(copy);
  }
  Reconstructor batch(options(), dir_ / "out");
  int calls = 0;
  EXPECT_THROW(batch.reconstruct_batch(
                   inputs,
                   [&](std::size_t, const FrameReport&) {
                     ++calls;
                     // Time for the other writers (with three) to write the next frames, which
                     // then must be removed again.
                     std::this_thread::sleep_for(std::chrono::milliseconds(300));
                     throw std::runtime_error("the caller gave up");
                   },
                   [] { return false; }),
               std::runtime_error);
  EXPECT_EQ(calls, 1);
  // Nothing more is read or written, or it is removed again: only the frame that was being
  // reported has outputs, as in a run of one input after the other.
  std::vector<std::string> written;
  for (const fs::directory_entry& f : fs::directory_iterator(dir_ / "out")) written.push_back(f.path().filename());
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, (std::vector<std::string>{"copy100.json", "copy100.npy", "copy100.png"}));
}

TEST_P(ReconDasBatch, AnErrorFromTheStopCallbackReachesTheCaller) {
  std::vector<fs::path> inputs;
  for (int i = 0; i < 8; ++i) {
    std::string name = "f";  // appended: GCC 12 warns (-Wrestrict, a false positive) of "f" + std::string
    name += std::to_string(i) + ".npy";
    inputs.push_back(write_acquisition(name, 0, 4 + i, 400));
  }
  Reconstructor batch(options(), dir_ / "out");
  int asked = 0;
  std::size_t done_calls = 0;
  EXPECT_THROW(batch.reconstruct_batch(
                   inputs, [&](std::size_t, const FrameReport&) { ++done_calls; },
                   [&] {
                     if (++asked == 3) throw std::logic_error("stop() failed");
                     return false;
                   }),
               std::logic_error);
  EXPECT_EQ(done_calls, 2u);  // the two inputs read before stop() failed are finished
}

// A frame whose outputs cannot all be written (its JSON's name is taken by a directory, which
// --overwrite does not remove): the writer stage removes what it had written of that frame, reports
// it as failed naming the file, and goes on; the frame's output name is free again afterwards.
TEST_P(ReconDasBatch, AFrameWhoseOutputCannotBeWrittenLeavesNothingAndTheOthersAreWritten) {
  const std::vector<fs::path> inputs = {write_acquisition("a.npy", 0, 5, 400),
                                        write_acquisition("b.npy", 1, 6, 400),
                                        write_acquisition("c.npy", -1, 7, 400)};
  const fs::path out = dir_ / "out";
  fs::create_directories(out / "b.json");
  // b's outputs of an earlier run: --overwrite replaces them only when b is written whole.
  usrecon::io::write_file_atomic(out / "b.png", "earlier b.png");
  usrecon::io::write_file_atomic(out / "b.npy", "earlier b.npy");
  ReconstructOptions o = options();
  o.overwrite = true;
  Reconstructor batch(o, out);
  std::vector<FrameReport> reports;
  batch.reconstruct_batch(
      inputs, [&](std::size_t, const FrameReport& report) { reports.push_back(report); },
      [] { return false; });
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_TRUE(reports[0].ok) << reports[0].error;
  EXPECT_FALSE(reports[1].ok);
  EXPECT_TRUE(reports[2].ok) << reports[2].error;
  EXPECT_NE(reports[1].error.find((out / "b.json").string()), std::string::npos) << reports[1].error;
  EXPECT_TRUE(reports[1].outputs.empty());
  std::vector<std::string> written;
  for (const fs::directory_entry& f : fs::recursive_directory_iterator(out))
    written.push_back(fs::relative(f.path(), out).string());
  std::sort(written.begin(), written.end());
  // b's new PNG and NPY were staged, then dropped when its JSON could not be put in place; the
  // earlier ones are untouched and no staged file is left.
  EXPECT_EQ(written, (std::vector<std::string>{"a.json", "a.npy", "a.png", "b.json", "b.npy", "b.png",
                                               "c.json", "c.npy", "c.png"}));
  EXPECT_TRUE(fs::is_directory(out / "b.json"));
  EXPECT_EQ(usrecon::io::read_file(out / "b.png"), "earlier b.png");
  EXPECT_EQ(usrecon::io::read_file(out / "b.npy"), "earlier b.npy");
  // The failed frame gave its output name back: once the obstacle is gone it can be written.
  fs::remove(out / "b.json");
  const FrameReport again = batch.reconstruct(inputs[1]);
  EXPECT_TRUE(again.ok) << again.error;
  EXPECT_TRUE(fs::is_regular_file(out / "b.json"));
  EXPECT_TRUE(fs::is_regular_file(out / "b.png"));
}

TEST_P(ReconDasBatch, ACudaKernelAskedForMustFitTheJob) {
  ReconstructOptions o = options();
  o.backend = BackendKind::Auto;
  o.das_cuda_kernel = DasCudaKernel::TransmitBlocked;
  EXPECT_NO_THROW(Reconstructor(o, dir_ / "a"));  // plane waves: any kernel
  o.model = ReconModel::SyntheticAperture;
  EXPECT_THROW(Reconstructor(o, dir_ / "b"), Error);  // the plane-wave kernels take plane waves only
  o.das_cuda_kernel = DasCudaKernel::PixelPerThread;
  EXPECT_NO_THROW(Reconstructor(o, dir_ / "c"));
  o.backend = BackendKind::Cpu;
  EXPECT_THROW(Reconstructor(o, dir_ / "d"), Error);  // no CUDA kernel runs on the CPU backend
  o.backend = BackendKind::Auto;
  o.model = ReconModel::Seed;
  EXPECT_THROW(Reconstructor(o, dir_ / "e"), Error);  // the seed model has its own CUDA kernel
}

INSTANTIATE_TEST_SUITE_P(Writers, ReconDasBatch, ::testing::Values(1, 3),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace usrecon::recon
