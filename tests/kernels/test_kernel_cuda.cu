// CUDA backends against the CPU ones and cuBLAS. Tests that need a device skip cleanly without one.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <limits>
#include <string>
#include <vector>

#include "block_emulator.hpp"
#include "kernel_test_util.hpp"
#include "usrecon/kernels/cuda/map.cuh"
#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;
using uk::HostArray;
using uk::MatmulAlgo;
using uk::Shape;
using uk::testing::random_array;

#define REQUIRE_GPU(what) \
  if (usrecon::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: " << what

namespace {

// A user op defined here and instantiated for the GPU through cuda/map.cuh.
struct ScaleShift {
  template <class T>
  USRECON_HD uk::Outputs<T, 2> operator()(T x, T s) const {
    return {{x * s, x - s}};
  }
};
constexpr uk::Ufunc<ScaleShift, 2> scale_shift{"scale_shift"};

/// c = a · b by `algo` into `c`, which is filled with NaN bytes first: every algorithm writes into
/// the same device memory, so an entry an algorithm leaves unwritten reads as NaN (not as the
/// previous algorithm's right answer, which a fresh allocation could also still hold).
template <class T>
HostArray<T> matmul_into_poisoned(const uk::DeviceArray<T>& a, const uk::DeviceArray<T>& b,
                                  uk::DeviceArray<T>& c, MatmulAlgo algo) {
  USRECON_CUDA_CHECK(cudaMemset(c.data(), 0xFF, c.size() * sizeof(T)));  // all ones: a NaN
  uk::matmul(a, b, c, algo);
  return c.copy_to_host();
}

TEST(KernelCuda, BuiltWithCudaReportsIt) { EXPECT_TRUE(usrecon::built_with_cuda()); }

// The check macro's classification (no device needed): what makes the device unusable is
// CudaUnavailable, so that --backend auto falls back to the CPU; anything else is an Error that
// names the statement and where it stands.
TEST(KernelCuda, CheckClassifiesUnusableDevicesAsUnavailable) {
  for (const cudaError_t unusable :
       {cudaErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorMemoryAllocation, cudaErrorInvalidDevice,
        cudaErrorDevicesUnavailable, cudaErrorStubLibrary, cudaErrorNoKernelImageForDevice,
        cudaErrorUnsupportedPtxVersion, cudaErrorSystemDriverMismatch, cudaErrorCompatNotSupportedOnDevice})
    EXPECT_THROW(USRECON_CUDA_CHECK(unusable), usrecon::CudaUnavailable) << cudaGetErrorName(unusable);
  for (const cudaError_t failure : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorInvalidValue}) {
    try {
      USRECON_CUDA_CHECK(failure);
      ADD_FAILURE() << "no exception for " << cudaGetErrorName(failure);
    } catch (const usrecon::CudaUnavailable& e) {
      ADD_FAILURE() << cudaGetErrorName(failure) << " is a failure, not an unusable device: " << e.what();
    } catch (const usrecon::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("CUDA error in failure at "), std::string::npos) << what;  // the statement
      EXPECT_NE(what.find("test_kernel_cuda.cu:"), std::string::npos) << what;
      EXPECT_NE(what.find(cudaGetErrorName(failure)), std::string::npos) << what;
    }
  }
}

// Without any NVIDIA driver (the independent check: libcuda.so.1 cannot be loaded) the runtime
// says "CUDA driver version is insufficient for CUDA runtime version"; require_cuda, which
// --backend cuda's error and auto's notice quote, says what that means.
TEST(KernelCuda, RequireCudaWithoutADriverSaysThereIsNone) {
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(driver);
    GTEST_SKIP() << "an NVIDIA driver (libcuda.so.1) is installed";
  }
  try {
    usrecon::require_cuda("the test's work");
    ADD_FAILURE() << "no exception without a driver";
  } catch (const usrecon::CudaUnavailable& e) {
    EXPECT_STREQ(e.what(),
                 "the test's work: no usable CUDA device (no NVIDIA driver, or one older than this build's CUDA "
                 "runtime needs)");
  }
}

// An error that does not stick to the context (out of memory) is also the thread's last error;
// once it has been thrown and caught, the next launch check (which reads cudaGetLastError) must
// not report it again as that launch's: --backend auto's fallback after an out-of-memory, and
// the next frame, depend on it.
TEST(KernelCuda, ACaughtErrorIsNotReportedAgainByTheNextLaunch) {
  REQUIRE_GPU("a caught out-of-memory error, then a kernel launch");
  void* too_much = nullptr;
  // Out of memory in practice (CudaUnavailable); CUDA also allows invalid value here. Either is
  // an error that does not stick, which is what this test is about.
  EXPECT_THROW(USRECON_CUDA_CHECK(cudaMalloc(&too_much, std::size_t(1) << 60)), usrecon::Error);
  const auto a = random_array<float>({1000}, 3);
  const auto da = uk::to_device(a);
  auto out = uk::device_array<float>({1000});
  EXPECT_NO_THROW(uk::add(da, da, out));
  const HostArray<float> c = out.copy_to_host();
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(c[i], a[i] + a[i]);
}

TEST(KernelCuda, DeviceArrayRoundTripAndPreallocatedOutput) {
  REQUIRE_GPU("to_device / copy_to_host round trip, add into a preallocated device array");
  for (std::int64_t n : {1, 255, 256, 257, 1'000'000}) {
    const auto a = random_array<float>({n}, 1), b = random_array<float>({n}, 2);
    const auto da = uk::to_device(a), db = uk::to_device(b);
    EXPECT_EQ(da.copy_to_host().span().size(), a.size());
    auto out = uk::device_array<float>({n});
    uk::add(da, db, out);
    const HostArray<float> c = out.copy_to_host();
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "n=" << n;
  }
}

TEST(KernelCuda, UfuncsMatchCpuWithBroadcasting) {
  REQUIRE_GPU("every ready-made ufunc on device arrays vs the CPU");
  const auto x = random_array<double>({64, 33}, 3, -4.0, 4.0);
  const auto y = random_array<double>({33}, 4, -4.0, 4.0);
  const auto dx = uk::to_device(x), dy = uk::to_device(y);
  const auto check = [](const HostArray<double>& gpu, const HostArray<double>& cpu, double tol) {
    ASSERT_EQ(gpu.shape(), cpu.shape());
    for (std::size_t i = 0; i < cpu.size(); ++i) ASSERT_NEAR(gpu[i], cpu[i], tol * (1 + std::abs(cpu[i])));
  };
  check(uk::add(dx, dy).copy_to_host(), uk::add(x, y), 0);
  check(uk::hypot(dx, dy).copy_to_host(), uk::hypot(x, y), 1e-15);
  check(uk::sqrt(uk::hypot(dx, dy)).copy_to_host(), uk::sqrt(uk::hypot(x, y)), 1e-15);
  check(uk::gaussian_pdf(dx, 0.5, 1.5).copy_to_host(), uk::gaussian_pdf(x, 0.5, 1.5), 1e-14);
  check(uk::polar_distance(dx, dy, dy, dx).copy_to_host(), uk::polar_distance(x, y, y, x), 1e-13);
  auto [gx, gy] = uk::polar_to_cartesian(dx, dy);
  auto [cx, cy] = uk::polar_to_cartesian(x, y);
  check(gx.copy_to_host(), cx, 1e-14);
  check(gy.copy_to_host(), cy, 1e-14);
  const auto i32 = random_array<std::int32_t>({1000, 7}, 5, -100, 100);
  const auto di = uk::to_device(i32);
  const HostArray<std::int32_t> gi = uk::add(di, 10).copy_to_host();
  for (std::size_t i = 0; i < i32.size(); ++i) ASSERT_EQ(gi[i], i32[i] + 10);
}

// A contiguous map in place (the output is an input): each thread handles map_unroll_v elements
// a grid-stride step, and must read each before writing it and touch each once (a thread that
// stepped by one grid instead of map_unroll_v grids would add some elements several times).
// Sizes: 1, either side of multiples of 4 and of a block's 1024 elements, and a million.
TEST(KernelCuda, ContiguousMapInPlaceAddsEachElementOnce) {
  REQUIRE_GPU("the contiguous map with its output as an input");
  for (std::int64_t n : {1, 3, 4, 5, 1000, 1023, 1024, 1025, 4097, 1'000'003}) {
    const auto x = random_array<double>({n}, 11, -1.0, 1.0);
    auto d = uk::to_device(x);
    uk::add(d, d, d);  // d = d + d
    const HostArray<double> twice = d.copy_to_host();
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(twice[std::size_t(i)], x[std::size_t(i)] + x[std::size_t(i)]) << "n=" << n << " i=" << i;
    const auto i32 = random_array<std::int32_t>({n}, 12, -1000, 1000);
    auto di = uk::to_device(i32);
    uk::add(di, 7, di);  // in place with a scalar
    const HostArray<std::int32_t> plus = di.copy_to_host();
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(plus[std::size_t(i)], i32[std::size_t(i)] + 7) << "n=" << n << " i=" << i;
  }
}

TEST(KernelCuda, UserOpThroughMapCuhWithTwoOutputsOnAStream) {
  REQUIRE_GPU("a user-defined op instantiated by cuda/map.cuh, on a non-default stream");
  uk::Stream stream;
  const auto x = random_array<float>({5, 1000}, 6);
  const auto s = random_array<float>({5, 1}, 7);
  const auto dx = uk::to_device(x, stream), ds = uk::to_device(s, stream);
  auto o1 = uk::device_array<float>({5, 1000}), o2 = uk::device_array<float>({5, 1000});
  scale_shift(dx, ds, o1, o2, uk::Exec{0, stream});
  const HostArray<float> r1 = o1.copy_to_host(stream), r2 = o2.copy_to_host(stream);
  auto [c1, c2] = scale_shift(x, s);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(r1[i], c1[i]);
    ASSERT_EQ(r2[i], c2[i]);
  }
}

TEST(KernelCuda, SumMatchesCpu) {
  REQUIRE_GPU("sum on device arrays (int exact, float within pairwise bound)");
  for (std::int64_t n : {1, 1023, 1024, 1025, 3'000'017}) {
    const auto i = random_array<std::int32_t>({n}, 8, -1'000'000'000, 1'000'000'000);
    EXPECT_EQ(uk::sum(uk::to_device(i)), uk::sum(i)) << "n=" << n;
    const auto f = random_array<float>({n}, 9, 0.0, 1.0);
    const double cpu = uk::sum(f);
    EXPECT_NEAR(uk::sum(uk::to_device(f)), cpu, 1e-6 * cpu + 1e-6) << "n=" << n;
    const auto df = uk::to_device(f);
    EXPECT_EQ(uk::sum(df), uk::sum(df)) << "deterministic";
  }
}

TEST(KernelCuda, SumIntoDeviceOutputStaysOnTheDeviceAndAgrees) {
  REQUIRE_GPU("sum into a preallocated device (and host) output");
  const uk::Stream stream;
  const uk::Exec exec{0, stream};
  for (std::int64_t n : {0, 1, 1025, 3'000'017}) {
    const auto i = random_array<std::int32_t>({n}, 14, -1'000'000'000, 1'000'000'000);
    const auto di = uk::to_device(i, stream);
    uk::DeviceArray<std::int64_t> out(Shape{1});
    uk::sum(di, out, exec);  // enqueued only
    EXPECT_EQ(out.copy_to_host(stream)[0], uk::sum(i)) << "n=" << n;
    HostArray<std::int64_t> host_out(Shape{1}, -1);
    uk::sum(di, host_out, exec);
    EXPECT_EQ(host_out[0], uk::sum(i)) << "n=" << n;
    const auto f = random_array<float>({n}, 15, 0.0, 1.0);
    const auto df = uk::to_device(f, stream);
    uk::DeviceArray<float> f_out(Shape{1, 1});
    for (int repeat = 0; repeat < 3; ++repeat) uk::sum(df, f_out, exec);  // a loop that never waits
    EXPECT_EQ(f_out.copy_to_host(stream)[0], uk::sum(df, exec)) << "n=" << n << ": the same kernels";
  }
  const auto host = random_array<float>({10}, 16, 0.0, 1.0);
  uk::DeviceArray<float> device_out(Shape{1});
  EXPECT_THROW(uk::sum(host, device_out), usrecon::Error);
}

TEST(KernelCuda, MonteCarloGivesTheCpuCountForTheSameSeed) {
  REQUIRE_GPU("monte_carlo_pi: GPU count equals CPU count");
  for (std::uint64_t n : {1ull, 101ull, 1'000'000ull, 10'000'001ull})
    EXPECT_EQ(uk::monte_carlo_count(n, 1234, uk::Backend::cuda),
              uk::monte_carlo_count(n, 1234, uk::Backend::cpu))
        << "n=" << n;
}

template <class T>
class KernelCudaMatmul : public ::testing::Test {};
using MatmulTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(KernelCudaMatmul, MatmulTypes);

TYPED_TEST(KernelCudaMatmul, TiledAndNaiveAgainstCublas) {
  using T = TypeParam;
  REQUIRE_GPU("tiled and naive CUDA matmul vs cuBLAS (exact on small integers, bounded on random)");
  struct D {
    std::int64_t batch, m, n, k;
  };
  for (const D d : {D{1, 1, 1, 1}, D{2, 7, 9, 5}, D{1, 127, 129, 8}, D{3, 128, 128, 128},
                    D{1, 129, 127, 257}, D{2, 300, 200, 100}, D{1, 64, 64, 7}}) {
    HostArray<T> a = random_array<T>({d.batch, d.m, d.k}, 10, -4.0, 4.0);
    HostArray<T> b = random_array<T>({d.batch, d.k, d.n}, 11, -4.0, 4.0);
    for (T& v : a) v = std::round(v);
    for (T& v : b) v = std::round(v);
    const auto da = uk::to_device(a), db = uk::to_device(b);
    uk::DeviceArray<T> dc({d.batch, d.m, d.n});
    const HostArray<T> ref = matmul_into_poisoned(da, db, dc, MatmulAlgo::blas);
    const HostArray<T> cpu = uk::matmul(a, b, MatmulAlgo::naive);
    for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(ref[i], cpu[i]) << "cuBLAS, m=" << d.m;
    for (MatmulAlgo algo : {MatmulAlgo::tiled, MatmulAlgo::naive}) {
      const HostArray<T> c = matmul_into_poisoned(da, db, dc, algo);
      for (std::size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], ref[i]) << "algo " << static_cast<int>(algo) << " m=" << d.m;
    }
    const auto ra = random_array<T>({d.batch, d.m, d.k}, 12), rb = random_array<T>({d.batch, d.k, d.n}, 13);
    const auto dra = uk::to_device(ra), drb = uk::to_device(rb);
    const HostArray<T> rref = matmul_into_poisoned(dra, drb, dc, MatmulAlgo::blas);
    const HostArray<T> rt = matmul_into_poisoned(dra, drb, dc, MatmulAlgo::tiled);
    const double bound = 4.0 * std::numeric_limits<T>::epsilon() * d.k;
    for (std::size_t i = 0; i < rt.size(); ++i) ASSERT_NEAR(rt[i], rref[i], bound);
  }
}

TYPED_TEST(KernelCudaMatmul, RowsBeyondTheGridLimit) {
  using T = TypeParam;
  REQUIRE_GPU("matmul taller than 65535 row blocks (tiled: 128 float / 64 double rows a block; naive: 16)");
  // Past 65535 row tiles of the float tiled kernel (and so of the double one and the naive one).
  const std::int64_t m = 65535LL * 128 + 77, k = 3, n = 2;
  HostArray<T> a(Shape{m, k}), b(Shape{k, n});
  for (std::int64_t i = 0; i < m * k; ++i) a[i] = T(i % 7) - T(3);
  for (std::int64_t i = 0; i < k * n; ++i) b[i] = T(i % 5) - T(2);
  const auto da = uk::to_device(a), db = uk::to_device(b);
  uk::DeviceArray<T> dc({m, n});
  const HostArray<T> cpu = uk::matmul(a, b, MatmulAlgo::naive);
  for (MatmulAlgo algo : {MatmulAlgo::tiled, MatmulAlgo::naive, MatmulAlgo::blas}) {
    const HostArray<T> c = matmul_into_poisoned(da, db, dc, algo);
    std::int64_t wrong = 0;
    for (std::size_t i = 0; i < c.size(); ++i) wrong += c[i] != cpu[i];
    EXPECT_EQ(wrong, 0) << "algo " << static_cast<int>(algo) << ", m = " << m;
  }
}

// The GPU runs the same block programs as the host emulation (block_emulator.hpp), with the
// same operations in the same order and no multiply-add left to the compiler: bit for bit equal.
TYPED_TEST(KernelCudaMatmul, TiledEqualsItsHostEmulationBitForBit) {
  using T = TypeParam;
  REQUIRE_GPU("tiled CUDA matmul vs the host emulation of its block program");
  for (const auto& [batch, m, n, k] : {std::array<int, 4>{1, 1, 1, 1}, {2, 129, 127, 9}, {1, 300, 257, 100}}) {
    const auto a = random_array<T>({batch, m, k}, 21), b = random_array<T>({batch, k, n}, 22);
    const HostArray<T> gpu = uk::matmul(uk::to_device(a), uk::to_device(b), MatmulAlgo::tiled).copy_to_host();
    std::vector<T> host(gpu.size());
    uk::testing::emulate_gemm_tiled(a.data(), b.data(), host.data(), batch, m, n, k, std::int64_t(m) * k,
                                    std::int64_t(k) * n, std::int64_t(m) * n);
    for (std::size_t i = 0; i < host.size(); ++i) ASSERT_EQ(gpu[i], host[i]) << "entry " << i << ", m = " << m;
  }
}

// The references are model_reduce's plain loops, which the CPU suite holds equal to the emulated
// block programs bit for bit (PlainLoopModelEqualsTheEmulatedKernels): the emulator starts 256
// threads a block, and these sizes' 300-odd blocks, and the axis test's 130,000 lines, would
// have taken the step's whole time limit.
TEST(KernelCuda, SumEqualsItsHostEmulationBitForBit) {
  REQUIRE_GPU("sum on the GPU vs the host emulation of its block programs");
  for (const std::int64_t n : {1, 1025, 300'007}) {
    const auto f = random_array<float>({n}, 23, 0.0, 1.0);
    const auto d = random_array<double>({n}, 24);
    const auto i = random_array<std::int32_t>({n}, 25, -2'000'000'000, 2'000'000'000);
    const int blocks = uk::block_reduce::blocks_for(n);
    EXPECT_EQ(uk::sum(uk::to_device(f)), (uk::testing::model_sum<float, float>(f.data(), n, blocks))) << n;
    EXPECT_EQ(uk::sum(uk::to_device(d)), (uk::testing::model_sum<double, double>(d.data(), n, blocks))) << n;
    EXPECT_EQ(uk::sum(uk::to_device(i)), (uk::testing::model_sum<std::int32_t, std::int64_t>(i.data(), n, blocks)))
        << n;
    // An infinity stays one (the Kahan carry of an infinite sum was a NaN), as on the CPU.
    auto with_inf = f;
    with_inf[static_cast<std::size_t>(n / 2)] = std::numeric_limits<float>::infinity();
    EXPECT_EQ(uk::sum(uk::to_device(with_inf)), std::numeric_limits<float>::infinity()) << n;
    EXPECT_EQ(uk::sum(uk::to_device(with_inf)), uk::sum(with_inf)) << n;
  }
}

// min and max on the GPU: the host emulation's result (model_reduce) bit for bit (and so the CPU's), NaN where
// there is one, into device and host outputs; an empty device array refused before any launch.
template <class T>
void expect_gpu_extremes(std::uint64_t seed) {
  const uk::Stream stream;
  const uk::Exec exec{0, stream};
  for (const std::int64_t n : {1, 1025, 300'007, 3'000'017}) {
    auto x = random_array<T>({n}, seed + std::uint64_t(n), -1e6, 1e6);
    x[n - 1] = std::numeric_limits<T>::lowest();
    const int blocks = uk::block_reduce::blocks_for(n);
    const auto dx = uk::to_device(x, stream);
    EXPECT_EQ(uk::min(dx, exec), (uk::testing::model_reduce<uk::block_reduce::Min<T>, T, T>(x.data(), n, blocks))) << n;
    EXPECT_EQ(uk::max(dx, exec), (uk::testing::model_reduce<uk::block_reduce::Max<T>, T, T>(x.data(), n, blocks))) << n;
    EXPECT_EQ(uk::min(dx, exec), uk::min(x)) << n;
    EXPECT_EQ(uk::max(dx, exec), uk::max(x)) << n;
    uk::DeviceArray<T> out(Shape{1});
    uk::max(dx, out, exec);  // enqueued only
    EXPECT_EQ(out.copy_to_host(stream)[0], uk::max(x)) << n;
    HostArray<T> host_out(Shape{1});
    uk::min(dx, host_out, exec);
    EXPECT_EQ(host_out[0], std::numeric_limits<T>::lowest()) << n;
    if constexpr (!std::is_integral_v<T>) {
      x[n / 2] = std::numeric_limits<T>::quiet_NaN();
      const auto with_nan = uk::to_device(x, stream);
      EXPECT_TRUE(std::isnan(uk::min(with_nan, exec))) << n;
      EXPECT_TRUE(std::isnan(uk::max(with_nan, exec))) << n;
    }
  }
  EXPECT_THROW((void)uk::min(uk::DeviceArray<T>(Shape{0})), usrecon::Error);
  uk::DeviceArray<T> out(Shape{1});
  EXPECT_THROW(uk::max(uk::DeviceArray<T>(Shape{0}), out), usrecon::Error);
}

TEST(KernelCuda, MinAndMaxEqualTheirHostEmulationAndTheCpu) {
  REQUIRE_GPU("min and max on device arrays vs the host emulation of their block programs");
  expect_gpu_extremes<float>(100);
  expect_gpu_extremes<double>(101);
  expect_gpu_extremes<std::int32_t>(102);
  expect_gpu_extremes<std::int64_t>(103);
  const auto f = random_array<float>({100'003}, 104, 0.0, 1.0);
  const auto df = uk::to_device(f);
  EXPECT_EQ(uk::mean(df), uk::sum(df) / 100'003.0f);
  uk::DeviceArray<float> mean_out(Shape{1});
  uk::mean(df, mean_out);  // enqueued: the same sum, divided on the device
  EXPECT_EQ(mean_out.copy_to_host()[0], uk::mean(df));
  const auto i = random_array<std::int32_t>({5}, 105, -9, 9);
  uk::DeviceArray<double> int_mean(Shape{1});
  uk::mean(uk::to_device(i), int_mean);
  EXPECT_EQ(int_mean.copy_to_host()[0], uk::mean(i));
  uk::mean(uk::DeviceArray<std::int32_t>(Shape{0}), int_mean);
  EXPECT_TRUE(std::isnan(int_mean.copy_to_host()[0])) << "0 / 0";
}

// Along an axis on the GPU: contiguous lines (a block each, pass 1's program) equal the host
// emulation of that program (model_reduce with one block: the CPU suite checks it equals pass 1
// alone) over each line bit for bit, strided lines (tiles of 32 columns by
// chunks of rows; (4096, 7, 3) along axis 1: a thread a line) the plain-loop model of
// reduce_columns, fold_column_chunks and reduce_column_lines (which the CPU suite checks against
// their emulation); min, max and integer sums equal the CPU's exactly, float means
// within rounding; into device and host outputs, with the axis kept.
template <class T>
void expect_gpu_axis_reductions(std::uint64_t seed) {
  namespace br = uk::block_reduce;
  using S = uk::sum_type_t<T>;
  const uk::Stream stream;
  const uk::Exec exec{0, stream};
  for (const Shape shape : {Shape{5, 3001}, Shape{3001, 5}, Shape{2, 700, 300}, Shape{1, 1}, Shape{4096, 7, 3}}) {
    const auto x = random_array<T>(shape, seed++, -1000, 1000);
    const auto dx = uk::to_device(x, stream);
    for (int axis = 0; axis < shape.ndim(); ++axis) {
      SCOPED_TRACE("shape " + shape.to_string() + ", axis " + std::to_string(axis));
      std::int64_t outer = 1, length = shape[axis], inner = 1;
      for (int d = 0; d < axis; ++d) outer *= shape[d];
      for (int d = axis + 1; d < shape.ndim(); ++d) inner *= shape[d];
      const HostArray<S> sums = uk::sum(dx, uk::Axis{axis}, exec).copy_to_host(stream);
      const HostArray<T> least = uk::min(dx, uk::Axis{axis}, exec).copy_to_host(stream);
      HostArray<T> greatest(uk::Shape{outer * inner});  // a host output: waits
      uk::max(dx, uk::Axis{axis}, uk::Out<T>::host(greatest.data(), uk::sum(x, uk::Axis{axis}).shape()), exec);
      const auto means = uk::mean(dx, uk::Axis{axis}, exec).copy_to_host(stream);
      const auto cpu_min = uk::min(x, uk::Axis{axis}), cpu_max = uk::max(x, uk::Axis{axis});
      const auto cpu_mean = uk::mean(x, uk::Axis{axis});
      std::vector<S> strided_sums(static_cast<std::size_t>(outer * inner));
      if (inner > 1) uk::testing::model_columns<br::Sum<S>>(x.data(), outer, length, inner, strided_sums.data());
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) {
          const std::int64_t line = o * inner + i;
          std::vector<T> values(static_cast<std::size_t>(length));
          for (std::int64_t k = 0; k < length; ++k) values[std::size_t(k)] = x[(o * length + k) * inner + i];
          S want;
          if (inner == 1) {
            want = uk::testing::model_reduce<br::Sum<S>, T, S>(values.data(), length, 1);
          } else {
            want = strided_sums[static_cast<std::size_t>(line)];
          }
          ASSERT_EQ(sums[line], want) << "line " << line;
          ASSERT_EQ(least[line], cpu_min[line]) << "line " << line;
          ASSERT_EQ(greatest[line], cpu_max[line]) << "line " << line;
          if constexpr (std::is_integral_v<T>)  // exact sums rounded once by the same function
            ASSERT_EQ(means[line], cpu_mean[line]) << "line " << line;
          else
            ASSERT_NEAR(double(means[line]), double(cpu_mean[line]), 1e-5 * 1000) << "line " << line;
        }
    }
  }
  uk::DeviceArray<S> kept(Shape{2, 1, 300});
  const auto x = random_array<T>(Shape{2, 700, 300}, seed, -1000, 1000);
  uk::sum(uk::to_device(x, stream), uk::Axis{1}, kept, exec);  // enqueued only
  const auto back = kept.copy_to_host(stream);
  const auto cpu = uk::sum(x, uk::Axis{1});
  for (std::int64_t i = 0; i < 600; ++i)
    if constexpr (std::is_integral_v<T>) ASSERT_EQ(back[i], cpu[i]) << i;
    else ASSERT_NEAR(back[i], cpu[i], 1e-3 * 700) << i;
}

TEST(KernelCuda, AxisReductionsEqualTheirEmulationAndTheCpu) {
  REQUIRE_GPU("sum, min, max and mean along an axis of device arrays");
  expect_gpu_axis_reductions<float>(400);
  expect_gpu_axis_reductions<double>(410);
  expect_gpu_axis_reductions<std::int32_t>(420);
  expect_gpu_axis_reductions<std::int64_t>(430);
}

// Means of int64 values near the type's ends, whose sums pass 2^63: the GPU's exact Int128 sums
// (pass 1 and 2, the strided tiles and chunks, a thread a line) divided by quotient_to_double
// equal the CPU's bit for bit (the CPU suite checks those against __int128 sums and exact
// rounding), to a host result and into device outputs.
TEST(KernelCuda, IntegerMeansAreExactAndEqualTheCpus) {
  REQUIRE_GPU("int64 means on device arrays vs the CPU's");
  std::mt19937_64 gen(77);
  const auto large_values = [&](const Shape& shape) {
    HostArray<std::int64_t> x(shape);
    for (std::int64_t& v : x) {
      const auto r = static_cast<std::int64_t>(gen() >> 2);
      v = gen() % 4 == 0 ? -r : (gen() % 2 ? std::numeric_limits<std::int64_t>::max() - r / 1024 : r);
    }
    return x;
  };
  const uk::Stream stream;
  const uk::Exec exec{0, stream};
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(2049), std::int64_t(1'000'003)}) {
    const auto x = large_values(Shape{n});
    const auto dx = uk::to_device(x, stream);
    EXPECT_EQ(uk::mean(dx, exec), uk::mean(x)) << n;
    uk::DeviceArray<double> out(Shape{1});
    uk::mean(dx, out, exec);
    EXPECT_EQ(out.copy_to_host(stream)[0], uk::mean(x)) << n;
  }
  for (const Shape& shape : {Shape{5, 2049, 3}, Shape{40'000, 2}, Shape{2, 3, 3000}, Shape{4096, 7, 3}}) {
    const auto x = large_values(shape);
    const auto dx = uk::to_device(x, stream);
    for (int axis = 0; axis < shape.ndim(); ++axis) {
      const auto gpu = uk::mean(dx, uk::Axis{axis}, exec).copy_to_host(stream);
      const auto cpu = uk::mean(x, uk::Axis{axis});
      for (std::size_t line = 0; line < cpu.size(); ++line)
        ASSERT_EQ(gpu[line], cpu[line]) << shape.to_string() << " along axis " << axis << ", line " << line;
    }
  }
}

TEST(KernelCuda, StreamsEventsPinnedBuffersAndAsyncCopies) {
  REQUIRE_GPU("Stream, Event timing, PinnedBuffer, copy_async, DeviceBuffer::reserve_discard");
  const std::size_t n = 1 << 20;
  uk::Stream stream;
  uk::PinnedBuffer<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  uk::DeviceBuffer<float> dev(n);
  uk::Event start, stop;
  start.record(stream);
  uk::copy_async(dev.span(), host.cspan(), stream);
  uk::DeviceBuffer<float> dev2(n);
  uk::copy_async(dev2.span(), dev.cspan(), stream);
  stream.synchronize();
  for (float& v : host) v = -1.0f;  // safe now: the stream has finished reading it
  uk::copy_async(host.span(), dev2.cspan(), stream);
  stop.record(stream);
  stop.synchronize();
  EXPECT_TRUE(stop.ready());
  EXPECT_GE(uk::Event::elapsed_ms(start, stop), 0.0f);
  for (std::size_t i = 0; i < n; i += 4097) ASSERT_EQ(host[i], static_cast<float>(i));
  const float* before = dev.data();
  dev.reserve_discard(n / 2);
  EXPECT_EQ(dev.data(), before);
  EXPECT_EQ(dev.size(), n / 2);
  dev.reserve_discard(2 * n);
  EXPECT_EQ(dev.size(), 2 * n);
  dev.zero(stream);
  stream.synchronize();
  EXPECT_EQ(uk::sum(uk::In<float>::device(dev.data(), Shape{static_cast<std::int64_t>(2 * n)})), 0.0f);
  uk::DeviceBuffer<float> moved = std::move(dev);
  EXPECT_TRUE(dev.empty());
  EXPECT_EQ(moved.size(), 2 * n);
  EXPECT_THROW(uk::copy(moved.span(), host.cspan()), usrecon::Error);  // sizes differ
}

}  // namespace
