// RAII types and arrays without a GPU: empty objects are safe, CUDA requests throw
// CudaUnavailable, host arrays behave.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include <type_traits>

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
}

}  // namespace
