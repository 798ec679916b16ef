// RAII types and arrays without a GPU: empty objects are safe, CUDA requests throw
// CudaUnavailable, host arrays behave.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;

namespace {

static_assert(!std::is_copy_constructible_v<uk::DeviceBuffer<float>>);
static_assert(std::is_nothrow_move_constructible_v<uk::DeviceBuffer<float>>);
static_assert(!std::is_copy_constructible_v<uk::PinnedBuffer<float>>);
static_assert(!std::is_copy_constructible_v<uk::Stream>);
static_assert(!std::is_copy_constructible_v<uk::Event>);
static_assert(!std::is_copy_constructible_v<uk::DeviceArray<float>>);
static_assert(std::is_nothrow_move_assignable_v<uk::DeviceArray<float>>);

TEST(KernelMemory, EmptyBuffersNeedNoDevice) {
  uk::DeviceBuffer<float> a;
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.data(), nullptr);
  uk::DeviceBuffer<float> b(0);  // zero elements: no allocation
  EXPECT_EQ(b.size(), 0u);
  a = std::move(b);
  uk::PinnedBuffer<double> p;
  EXPECT_EQ(p.size(), 0u);
  uk::DeviceArray<float> d;
  EXPECT_EQ(d.size(), 0u);
  // Copies of nothing, and the sum of nothing, need no device either, with or without CUDA
  // (the copies waited on the default stream; the sum threw in a build without CUDA).
  const uk::DeviceArray<float> copied = uk::to_device(uk::HostArray<float>(uk::Shape{0, 3}));
  EXPECT_EQ(copied.size(), 0u);
  EXPECT_TRUE(copied.shape() == uk::Shape({0, 3}));
  const uk::HostArray<float> back = copied.copy_to_host();
  EXPECT_EQ(back.size(), 0u);
  EXPECT_TRUE(back.shape() == uk::Shape({0, 3}));
  EXPECT_EQ(uk::sum(d), 0.0f);
  EXPECT_EQ(uk::sum(uk::DeviceArray<std::int32_t>()), 0);
  // Setting and copying a buffer of zero elements: nothing to do (the build without CUDA threw),
  // from a span of const or of non-const values (the latter did not compile).
  uk::DeviceBuffer<float> none(0);
  none.zero();
  std::vector<float> host;
  uk::copy(std::span<float>(host), none.cspan());
  uk::copy(none.span(), std::span<float>(host));
  uk::copy(none.span(), std::span<const float>(host));
}

TEST(KernelMemory, AMonteCarloBackendOutsideTheEnumIsRefused) {
  try {
    (void)uk::monte_carlo_pi(1000, 1, static_cast<uk::Backend>(7));
    FAIL() << "no exception";
  } catch (const usrecon::Error& e) {
    EXPECT_NE(std::string(e.what()).find("monte_carlo: backend 7 is neither Backend::cpu nor Backend::cuda"), std::string::npos)
        << e.what();
  }
}

TEST(KernelMemory, CudaResourcesWithoutDeviceThrowCudaUnavailable) {
  if (usrecon::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_THROW(uk::DeviceBuffer<float>(16), usrecon::CudaUnavailable);
  EXPECT_THROW(uk::PinnedBuffer<float>(16), usrecon::CudaUnavailable);
  EXPECT_THROW(uk::Stream(), usrecon::CudaUnavailable);
  EXPECT_THROW(uk::Event(), usrecon::CudaUnavailable);
  EXPECT_THROW(uk::CublasHandle(), usrecon::CudaUnavailable);
  uk::HostArray<float> h(uk::Shape{4}, 1.0f);
  EXPECT_THROW((void)uk::to_device(h), usrecon::CudaUnavailable);
  EXPECT_THROW((void)uk::device_array<float>({4}), usrecon::CudaUnavailable);
  // Said in words first, as require_cuda says it (it was "CUDA error in cudaMalloc(&p, bytes) at
  // ...: cudaErrorInsufficientDriver"), in a build with CUDA; without, "built without CUDA".
  try {
    uk::DeviceBuffer<float> buffer(16);
    FAIL() << "no exception";
  } catch (const usrecon::CudaUnavailable& e) {
    const std::string message = e.what();
    EXPECT_TRUE(message.find("no usable CUDA device") != std::string::npos ||
                message.find("no CUDA device found") != std::string::npos ||
                message.find("built without CUDA") != std::string::npos)
        << message;
    // The call's place is named in the source tree ("at kernels/cuda/...cu:42"), not by the
    // path this machine built it in (unless that path holds a space or a comma, which nvcc's
    // -Xcompiler cannot pass on: see usrecon_relative_file_names).
    if (message.find("CUDA error in") != std::string::npos &&
        std::string_view(USRECON_SOURCE_DIR).find_first_of(" ,") == std::string_view::npos) {
      EXPECT_NE(message.find(" at kernels/"), std::string::npos) << message;
      EXPECT_EQ(message.find(USRECON_SOURCE_DIR), std::string::npos) << message;
    }
  }
}

// Sizes whose element count or bytes do not fit are refused, not wrapped round to a small
// allocation that later reads and writes overrun.
TEST(KernelMemory, SizesThatOverflowAreRefused) {
  EXPECT_THROW((uk::Shape{std::int64_t(1) << 32, std::int64_t(1) << 32}), usrecon::Error);
  EXPECT_THROW((uk::Shape{std::int64_t(1) << 62, 2, 0}), usrecon::Error);  // empty, but its strides overflow
  EXPECT_EQ((uk::Shape{std::int64_t(1) << 62, 0}).size(), 0);
  EXPECT_EQ((uk::Shape{std::int64_t(1) << 31, std::int64_t(1) << 31}).size(), std::int64_t(1) << 62);
  const std::size_t too_many = std::numeric_limits<std::size_t>::max() / 4;
  try {
    uk::DeviceBuffer<double> d(too_many);
    ADD_FAILURE() << "a buffer of 2^62 doubles was made";
  } catch (const usrecon::CudaUnavailable&) {
    ADD_FAILURE() << "the size was not checked before the device was asked";
  } catch (const usrecon::Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceed the address space"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)uk::PinnedBuffer<double>{too_many}, usrecon::Error);
}

// A host array the machine has no memory for is refused as a usrecon::Error naming its shape
// and bytes (it was std::bad_alloc, "std::bad_alloc"). 4 TiB: more than this machine's memory
// and swap, so the kernel refuses the mapping (overcommit's heuristic).
TEST(KernelMemory, AHostArrayWithoutTheMemoryIsRefusedByShape) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on an allocation this large instead of failing it";
#else
  std::ifstream policy("/proc/sys/vm/overcommit_memory");
  int overcommit = 0;
  if (policy >> overcommit && overcommit == 1)
    GTEST_SKIP() << "vm.overcommit_memory is 1: the kernel grants any mapping, and filling it would exhaust memory";
  try {
    uk::HostArray<float> huge(uk::Shape{std::int64_t(1) << 40});
    ADD_FAILURE() << "4 TiB were allocated";
  } catch (const usrecon::Error& e) {
    EXPECT_EQ(std::string(e.what()), "HostArray: no host memory for shape (1099511627776,) (4398046511104 bytes)");
  }
#endif
}

TEST(KernelMemory, HostArrayShapesAndIndexing) {
  uk::HostArray<int> a(uk::Shape{2, 3}, std::vector<int>{0, 1, 2, 3, 4, 5});
  EXPECT_EQ(a.at({1, 2}), 5);
  EXPECT_THROW((void)a.at({2, 0}), usrecon::Error);
  EXPECT_THROW((void)a.at({1}), usrecon::Error);
  a.reshape({3, 2});
  EXPECT_EQ(a.at({2, 1}), 5);
  EXPECT_THROW(a.reshape({4}), usrecon::Error);
  EXPECT_THROW((uk::HostArray<int>(uk::Shape{2}, std::vector<int>{1, 2, 3})), usrecon::Error);
  EXPECT_EQ(uk::HostArray<float>::from_vector({1, 2, 3}).shape(), (uk::Shape{3}));
  // More elements than a host vector can hold: the library's error, not std::length_error.
  EXPECT_THROW((uk::HostArray<double>(uk::Shape{std::int64_t(1) << 62})), usrecon::Error);
}

// A default-constructed or moved-from array is empty, shape (0,), and every operation sees it so
// (it kept the scalar shape () with no element, and sum, at({}) and matmul read through null).
TEST(KernelMemory, DefaultAndMovedFromArraysAreEmpty) {
  const uk::Shape empty{0};
  uk::HostArray<float> a;
  EXPECT_EQ(a.shape(), empty);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(uk::sum(a), 0.0f);
  EXPECT_THROW((void)a.at({}), usrecon::Error);
  EXPECT_EQ(uk::add(a, 1.0f).size(), 0u);

  uk::HostArray<float> b(uk::Shape{4, 4}, 1.0f);
  uk::HostArray<float> c = std::move(b);
  EXPECT_EQ(c.size(), 16u);
  EXPECT_EQ(b.shape(), empty);  // NOLINT(bugprone-use-after-move): what a moved-from array holds
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(uk::sum(b), 0.0f);
  EXPECT_THROW((void)uk::matmul(c, b), usrecon::Error);
  uk::HostArray<float> d(uk::Shape{2}, 3.0f);
  d = std::move(c);
  EXPECT_EQ(d.shape(), (uk::Shape{4, 4}));
  EXPECT_EQ(c.shape(), empty);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(uk::sum(d), 16.0f);

  uk::DeviceArray<float> e;  // needs no device
  EXPECT_EQ(e.shape(), empty);
  EXPECT_EQ(e.size(), 0u);
  uk::DeviceArray<float> f = std::move(e);
  EXPECT_EQ(e.shape(), empty);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(f.shape(), empty);
}

// A view of raw memory with no pointer but elements to hold is the caller's mistake, said at the
// view; an empty one may have none. (A null input was taken as the scalar 0.)
TEST(KernelMemory, NullViewsOfElementsAreRefused) {
  EXPECT_THROW((void)uk::In<float>::host(nullptr, uk::Shape{4}), usrecon::Error);
  EXPECT_THROW((void)uk::In<float>::device(nullptr, uk::Shape{4}), usrecon::Error);
  float* null = nullptr;
  EXPECT_THROW((void)uk::Out<float>::host(null, uk::Shape{2, 2}), usrecon::Error);
  EXPECT_EQ(uk::In<float>::host(nullptr, uk::Shape{0}).shape.size(), 0);
  EXPECT_EQ(uk::Out<float>::host(null, uk::Shape{3, 0}).shape.size(), 0);
}

}  // namespace
