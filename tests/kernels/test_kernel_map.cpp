// Elementwise maps on the CPU: broadcasting, types, several outputs, errors at the call.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.hpp"
#include "usrecon/kernels/map.hpp"
#include "usrecon/kernels/matmul.hpp"

namespace uk = usrecon::kernels;
using uk::HostArray;
using uk::Shape;
using uk::testing::random_array;

namespace {

struct AddTen {
  template <class T>
  USRECON_HD T operator()(T x) const {
    return x + T(10);
  }
};
constexpr uk::Ufunc<AddTen, 1> add_ten{"add_ten"};

struct Fma3 {  // a user op with three inputs
  template <class T>
  USRECON_HD T operator()(T a, T b, T c) const {
    return a * b + c;
  }
};

TEST(KernelShape, BroadcastFollowsNumPy) {
  EXPECT_EQ(uk::broadcast_shapes(std::vector<Shape>{{4}, {4, 4}}, "t"), (Shape{4, 4}));
  EXPECT_EQ(uk::broadcast_shapes(std::vector<Shape>{{3, 1}, {1, 5}}, "t"), (Shape{3, 5}));
  EXPECT_EQ(uk::broadcast_shapes(std::vector<Shape>{{}, {2, 3}}, "t"), (Shape{2, 3}));
  EXPECT_EQ(uk::broadcast_shapes(std::vector<Shape>{{}, {}}, "t"), Shape{});
  EXPECT_EQ((Shape{3}).to_string(), "(3,)");
  EXPECT_EQ((Shape{4, 4}).to_string(), "(4, 4)");
}

TEST(KernelShape, MismatchNamesTheCallAndTheShapes) {
  try {
    (void)uk::broadcast_shapes(std::vector<Shape>{{3}, {4, 4}}, "add");
    FAIL() << "no exception";
  } catch (const usrecon::Error& e) {
    EXPECT_STREQ(e.what(), "add: operands could not be broadcast together with shapes (3,) (4, 4)");
  }
  EXPECT_THROW(Shape({-1}), usrecon::Error);
}

TEST(KernelMap, AddVectorToMatrixBroadcastsLikeNumPy) {
  HostArray<float> a(Shape{4}, std::vector<float>{0, 1, 2, 3});
  HostArray<float> b(Shape{4, 4});
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(10 * i);
  const HostArray<float> c = uk::add(a, b);
  ASSERT_EQ(c.shape(), (Shape{4, 4}));
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(c.at({i, j}), static_cast<float>(j + 10 * (4 * i + j)));
}

TEST(KernelMap, ScalarOperandsConvertToTheArrayType) {
  HostArray<std::int32_t> a(Shape{5}, std::vector<std::int32_t>{0, 1, 2, 3, 4});
  const HostArray<std::int32_t> b = add_ten(a);
  const HostArray<std::int32_t> c = uk::add(a, 100);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(b[i], i + 10);
    EXPECT_EQ(c[i], i + 100);
  }
  const HostArray<double> s = uk::add(1.5, 2.0);  // scalars only: a 0-d result
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s[0], 3.5);
  // Signed integers wrap around, as NumPy's do (their overflow was undefined behaviour, which
  // UBSan reports in the sanitized suite).
  constexpr std::int32_t kMax32 = std::numeric_limits<std::int32_t>::max();
  constexpr std::int64_t kMax64 = std::numeric_limits<std::int64_t>::max();
  const HostArray<std::int32_t> wrapped = uk::add(HostArray<std::int32_t>(Shape{2}, std::vector<std::int32_t>{kMax32, -kMax32}),
                                                 HostArray<std::int32_t>(Shape{2}, std::vector<std::int32_t>{1, -2}));
  EXPECT_EQ(wrapped[0], std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(wrapped[1], kMax32);
  EXPECT_EQ(uk::add(HostArray<std::int64_t>(Shape{1}, std::vector<std::int64_t>{kMax64}), std::int64_t{1})[0],
            std::numeric_limits<std::int64_t>::min());
}

// A scalar the arrays' type cannot hold is refused, naming it and the type (its conversion was
// undefined behaviour: 3e9 or NaN into int32; or another number: 2^40 into int32 added 0); the
// edges of the range and a fraction (truncated toward zero) are taken.
TEST(KernelMap, ScalarsTheArrayTypeCannotHoldAreRefused) {
  const HostArray<std::int32_t> a(Shape{3}, std::vector<std::int32_t>{0, 1, 2});
  const HostArray<std::int64_t> b(Shape{1}, std::vector<std::int64_t>{0});
  const HostArray<float> f(Shape{1}, std::vector<float>{0});
  const auto refused = [](auto&& call, const std::string& words) {
    try {
      call();
      ADD_FAILURE() << "no exception; wanted: " << words;
    } catch (const usrecon::Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused([&] { (void)uk::add(a, 3e9); },
          "add: the scalar 3000000000 does not fit the arrays' element type int32 (its range is -2147483648 to "
          "2147483647); NumPy would promote the arrays: convert them to a wider type first");
  refused([&] { (void)uk::add(a, std::int64_t(1) << 40); }, "the scalar 1099511627776 does not fit");
  refused([&] { (void)uk::add(a, std::numeric_limits<double>::quiet_NaN()); }, "the scalar nan does not fit");
  refused([&] { (void)uk::add(a, -2147483649.0); }, "the scalar -2147483649 does not fit");
  refused([&] { (void)uk::add(a, 4294967295u); }, "the scalar 4294967295 does not fit");
  refused([&] { (void)uk::add(b, 0x1p63); }, "int64 (its range is -9223372036854775808 to 9223372036854775807)");
  refused([&] { (void)uk::add(b, std::numeric_limits<std::uint64_t>::max()); }, "18446744073709551615 does not");
  refused([&] { (void)uk::add(f, 1e300); }, "float32 (its largest finite value is 3.4028234663852886e+38)");
  EXPECT_EQ(uk::add(a, 2147483647.9)[0], 2147483647);  // truncated toward zero: fits
  EXPECT_EQ(uk::add(a, -2147483648.9)[0], -2147483647 - 1);
  EXPECT_EQ(uk::add(a, 2.9)[2], 4);
  EXPECT_EQ(uk::add(b, -0x1p63)[0], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(uk::add(b, std::uint64_t(5))[0], 5);
  EXPECT_EQ(uk::add(f, std::numeric_limits<double>::infinity())[0], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(uk::add(f, std::numeric_limits<double>::quiet_NaN())[0]));
  EXPECT_EQ(uk::add(f, 3.0e38)[0], 3.0e38f);
  // What rounds to float's largest value fits (NumPy prints it 3.4028235e+38); half an ulp more
  // rounds to an infinity and is refused. Wider scalars are judged in their own type.
  EXPECT_EQ(uk::add(f, 3.4028235e38)[0], std::numeric_limits<float>::max());
  EXPECT_EQ(uk::add(f, 0x1.fffffefffffffp+127)[0], std::numeric_limits<float>::max());
  refused([&] { (void)uk::add(f, 0x1.ffffffp+127); }, "the scalar 3.4028235677973366e+38 does not fit");
  refused([&] { (void)uk::add(f, -0x1.ffffffp+127); }, "the scalar -3.4028235677973366e+38 does not fit");
  const HostArray<double> d(Shape{1}, std::vector<double>{0});
  EXPECT_EQ(uk::add(d, 1.7976931348623158e308L)[0], std::numeric_limits<double>::max());
  refused([&] { (void)uk::add(b, -9223372036854775809.0L); }, "the scalar -9.2233720368547758e+18 does not fit");
  EXPECT_EQ(uk::add(b, 9223372036854775807.0L)[0], std::numeric_limits<std::int64_t>::max());
#if defined(__SIZEOF_INT128__) && !defined(__STRICT_ANSI__)  // GNU mode: __int128 is an integer type
  refused([&] { (void)uk::add(a, (static_cast<__int128>(1) << 64) + 5); }, "the scalar (a 128-bit integer) does not fit");
  EXPECT_EQ(uk::add(a, static_cast<__int128>(-7))[0], -7);
#endif
  EXPECT_EQ(uk::add(a, true)[1], 2);
}

// gaussian_pdf is NaN where sigma is not > 0, as scipy.stats.norm.pdf (it gave a negative
// density for sigma < 0).
TEST(KernelMap, GaussianPdfOfANonPositiveSigmaIsNan) {
  for (const double sigma : {-1.0, 0.0, -0.0, std::numeric_limits<double>::quiet_NaN()})
    EXPECT_TRUE(std::isnan(uk::math::gaussian_pdf(0.0, 0.0, sigma))) << sigma;
  EXPECT_TRUE(std::isnan(uk::gaussian_pdf(HostArray<float>(Shape{1}, std::vector<float>{0}), 0.0f, -1.0f)[0]));
  EXPECT_EQ(uk::math::gaussian_pdf(0.0, 0.0, std::numeric_limits<double>::infinity()), 0.0);
  EXPECT_NEAR(uk::math::gaussian_pdf(1.0, 0.0, 2.0), 0.17603266338214976, 1e-16);
}

TEST(KernelMap, GeneralBroadcastMatchesReference) {
  const Shape sa{3, 1, 5}, sb{4, 1}, sc{3, 4, 5};
  const auto a = random_array<double>(sa, 1), b = random_array<double>(sb, 2);
  const HostArray<double> c = uk::add(a, b);
  ASSERT_EQ(c.shape(), sc);
  for (std::int64_t i = 0; i < sc.size(); ++i)
    EXPECT_EQ(c[i], a[uk::testing::broadcast_offset(sa, sc, i)] +
                        b[uk::testing::broadcast_offset(sb, sc, i)]);
}

TEST(KernelMap, PreallocatedOutputIsWrittenInPlace) {
  const auto a = random_array<float>({1000}, 3), b = random_array<float>({1000}, 4);
  HostArray<float> out(Shape{1000}, -1.0f);
  const float* before = out.data();
  uk::add(a, b, out);
  EXPECT_EQ(out.data(), before);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(out[i], a[i] + b[i]);
}

TEST(KernelMap, OutputOfWrongShapeThrowsAtTheCall) {
  const auto a = random_array<float>({4, 4}, 5);
  HostArray<float> out(Shape{4});
  EXPECT_THROW(uk::add(a, a, out), usrecon::Error);
  HostArray<float> bad(Shape{3});
  EXPECT_THROW((void)uk::add(a, bad), usrecon::Error);
}

TEST(KernelMap, HostAndDeviceOperandsMixedThrowBeforeAnyKernel) {
  const auto a = random_array<float>({8}, 6);
  float* fake_device = reinterpret_cast<float*>(std::uintptr_t{0x1000});  // never dereferenced
  HostArray<float> out(Shape{8});
  try {
    uk::add(a, uk::In<float>::device(fake_device, Shape{8}), out);
    FAIL() << "no exception";
  } catch (const usrecon::Error& e) {
    EXPECT_NE(std::string(e.what()).find("host and device arrays mixed"), std::string::npos);
  }
  // The form that returns new arrays says the mix alike (it said that an In<T>::device view needs
  // a DeviceArray among the inputs); a device view alone still gets that sentence.
  const auto refused = [](auto&& call, const std::string& words) {
    try {
      call();
      ADD_FAILURE() << "no exception";
    } catch (const usrecon::Error& e) {
      EXPECT_EQ(std::string(e.what()), words);
    }
  };
  refused([&] { (void)uk::add(a, uk::In<float>::device(fake_device, Shape{8})); },
          "add: host and device arrays mixed in one call; move them with to_device() or copy_to_host() first");
  refused([&] { (void)uk::add(uk::In<float>::device(fake_device, Shape{8}), 1.0f); },
          "add: an In<T>::device view among the inputs and no DeviceArray: this form returns host arrays; pass the "
          "outputs (Out<T>::device) or a DeviceArray");
}

// An output may be an input element for element (in place); any other overlap is refused at the
// call (a view shifted by one smeared v[0] over the whole output), and so are overlapping outputs.
TEST(KernelMap, OutputsOverlappingInputsOtherThanInPlaceAreRefused) {
  for (const int n : {2, 8, 1001}) {  // (at 1 a shift by one does not overlap)
    SCOPED_TRACE(n);
    std::vector<float> v(n + 1);
    for (int i = 0; i <= n; ++i) v[i] = float(i);
    uk::add(uk::In<float>::host(v.data(), Shape{n}), 1.0f, uk::Out<float>::host(v.data(), Shape{n}));
    for (int i = 0; i < n; ++i) EXPECT_EQ(v[i], float(i + 1));
    EXPECT_EQ(v[n], float(n));
    const std::vector<float> before = v;
    for (const int shift : {1, -1}) {
      float* out = shift > 0 ? v.data() + 1 : v.data();
      const float* in = shift > 0 ? v.data() : v.data() + 1;
      EXPECT_THROW(uk::add(uk::In<float>::host(in, Shape{n}), 0.0f, uk::Out<float>::host(out, Shape{n})),
                   usrecon::Error);
    }
    // The output's first element broadcast over it: the same pointer, not element for element.
    EXPECT_THROW(uk::add(uk::In<float>::host(v.data(), Shape{1}), uk::In<float>::host(v.data() + 1, Shape{n}),
                         uk::Out<float>::host(v.data(), Shape{n})),
                 usrecon::Error);
    EXPECT_EQ(v, before) << "a refused call wrote";
    // The same memory with as many elements is in place, whatever the size-1 dimensions: (n,) in
    // and (1, n) out.
    uk::add(uk::In<float>::host(v.data(), Shape{n}), uk::In<float>::host(v.data(), Shape{1, n}),
            uk::Out<float>::host(v.data(), Shape{1, n}));
    for (int i = 0; i < n; ++i) EXPECT_EQ(v[i], 2 * before[i]);
  }
  std::vector<double> rho(8, 1.0), theta(8, 0.5), xy(9);
  EXPECT_THROW(uk::polar_to_cartesian(uk::In<double>::host(rho.data(), Shape{8}),
                                      uk::In<double>::host(theta.data(), Shape{8}),
                                      uk::Out<double>::host(xy.data(), Shape{8}),
                                      uk::Out<double>::host(xy.data() + 1, Shape{8})),
               usrecon::Error);
}

// The forms that return new arrays decide host or device from the argument types at compile
// time: an In<T>::device view among host-typed arguments is said plainly, not as "mixed".
TEST(KernelMap, AllocatingFormWithADeviceViewSaysWhatToPass) {
  const float* fake_device = reinterpret_cast<const float*>(std::uintptr_t{0x1000});  // never dereferenced
  try {
    (void)uk::sqrt(uk::In<float>::device(fake_device, Shape{4}));
    FAIL() << "no exception";
  } catch (const usrecon::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Out<T>::device"), std::string::npos) << e.what();
  }
  const HostArray<float> host(Shape{2, 2}, 1.0f);
  for (const bool a_on_device : {true, false}) {
    try {
      const uk::In<float> device = uk::In<float>::device(fake_device, Shape{2, 2});
      (void)(a_on_device ? uk::matmul(device, device) : uk::matmul(host, device));
      FAIL() << "no exception";
    } catch (const usrecon::Error& e) {
      // A host a with a device b was told of an "In<T>::device view" in a.
      EXPECT_NE(std::string(e.what()).find(a_on_device ? "a is an In<T>::device view, not a DeviceArray"
                                                       : "a is on the host and b on the device"),
                std::string::npos)
          << e.what();
    }
  }
}

// hypot's special values are IEEE 754's, as std::hypot's: an infinity wins over a NaN, a NaN
// otherwise gives NaN, in either argument order (it dropped a NaN in the second argument and gave
// NaN for inf, inf).
template <class T>
void expect_hypot_special_values() {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T values[] = {T(0), T(-0.0), T(3), T(-4), std::numeric_limits<T>::max(), std::numeric_limits<T>::denorm_min(),
                      inf, -inf, nan};
  for (const T x : values)
    for (const T y : values) {
      const T got = uk::math::hypot(x, y), want = std::hypot(x, y);
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << x << ", " << y << ": " << got;
      else if (std::isinf(want))
        EXPECT_EQ(got, want) << x << ", " << y;
      else
        EXPECT_NEAR(got, want, 4 * std::numeric_limits<T>::epsilon() * want) << x << ", " << y;
    }
  const HostArray<T> xs = HostArray<T>::from_vector({T(0), nan, inf, inf, nan});
  const HostArray<T> ys = HostArray<T>::from_vector({nan, T(0), inf, nan, -inf});
  const HostArray<T> h = uk::hypot(xs, ys);
  EXPECT_TRUE(std::isnan(h[0]) && std::isnan(h[1]));
  EXPECT_EQ(h[2], inf);
  EXPECT_EQ(h[3], inf);
  EXPECT_EQ(h[4], inf);
}
TEST(KernelMap, HypotSpecialValuesAreIeees) {
  expect_hypot_special_values<float>();
  expect_hypot_special_values<double>();
}

// hypot within about half an ulp of the exact value (long double), rounded correctly but for a
// few in 10^4 (NumPy's float64 hypot: 1 ulp off in 0.6 %), over the type's whole range
// (subnormal to the largest finite, sides of very different sizes), and exact on right
// triangles with whole sides (hypot(99, 20) was 100.99999999999999), scaled by powers of two as
// far as the range allows.
template <class T>
void expect_hypot_accurate(std::uint64_t seed) {
  using L = long double;
  const auto ulp = [](T v) { return std::nextafter(v, std::numeric_limits<T>::infinity()) - v; };
  std::mt19937_64 gen(seed);
  const int lowest = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;  // subnormals
  const int highest = std::numeric_limits<T>::max_exponent - 1;
  std::uniform_int_distribution<int> exponent(lowest, highest), near(-30, 30);
  std::uniform_real_distribution<double> significand(1.0, 2.0);
  int rounded_correctly = 0, count = 0;
  for (int i = 0; i < 20000; ++i) {
    const int ex = exponent(gen), ey = i % 2 == 0 ? std::clamp(ex + near(gen), lowest, highest) : exponent(gen);
    const T x = static_cast<T>(std::ldexp(significand(gen), ex)) * (i % 3 == 0 ? T(-1) : T(1));
    const T y = static_cast<T>(std::ldexp(significand(gen), ey));
    const T got = uk::math::hypot(x, y);
    const L exact = std::sqrt(L(x) * L(x) + L(y) * L(y));  // long double: 64 bits, no overflow
    if (exact > L(std::numeric_limits<T>::max())) continue;
    ASSERT_TRUE(std::isfinite(got)) << x << ", " << y;
    const L error = std::fabs(L(got) - exact) / L(ulp(got));
    // (double: a subnormal result rounds twice, the root's and the scaling's)
    ASSERT_LE(error, sizeof(T) == sizeof(float) ? 0.5001L : 1.0L) << x << ", " << y << ": " << got;
    rounded_correctly += error <= 0.5L;
    ++count;
  }
  EXPECT_GE(rounded_correctly, count - count / 1000) << "of " << count;  // double: ~99.99 %
  const int scale = sizeof(T) == sizeof(float) ? 100 : 1000;  // powers of two 2^-scale .. 2^scale
  for (int m = 2; m < 64; ++m)
    for (int n = 1; n < m; ++n) {
      const T a = T(m * m - n * n), b = T(2 * m * n), c = T(m * m + n * n);
      for (const int e : {0, -scale, scale, -scale / 2, scale / 2}) {
        const T p = std::ldexp(a, e), q = std::ldexp(b, e), want = std::ldexp(c, e);
        if (!std::isnormal(p) || !std::isnormal(q) || !std::isfinite(want)) continue;
        ASSERT_EQ(uk::math::hypot(p, q), want) << a << ", " << b << " times 2^" << e;
        ASSERT_EQ(uk::math::hypot(-q, p), want);
      }
    }
  const T big = std::numeric_limits<T>::max() / T(2);
  EXPECT_EQ(uk::math::hypot(big, big), std::hypot(big, big));  // no overflow on the way
  const T tiny = std::numeric_limits<T>::denorm_min();
  EXPECT_EQ(uk::math::hypot(tiny, T(0)), tiny);
  EXPECT_EQ(uk::math::hypot(T(3) * tiny, T(4) * tiny), T(5) * tiny);
}
TEST(KernelMap, HypotIsWithinHalfAnUlpAndExactOnWholeTriangles) {
  expect_hypot_accurate<float>(31);
  expect_hypot_accurate<double>(32);
  const auto a = HostArray<double>::from_vector({99, 13, 3e200, 3e-200});
  const auto b = HostArray<double>::from_vector({20, 84, 4e200, 4e-200});
  const auto h = uk::hypot(a, b);
  EXPECT_EQ(h[0], 101.0);
  EXPECT_EQ(h[1], 85.0);
  EXPECT_EQ(h[2], std::hypot(3e200, 4e200));
  EXPECT_EQ(h[3], std::hypot(3e-200, 4e-200));
  EXPECT_EQ(uk::hypot(HostArray<float>::from_vector({13}), HostArray<float>::from_vector({84}))[0], 85.0f);
}

TEST(KernelMap, UserOpOnDeviceArraysFromPlainCppThrowsInsteadOfFailingToLink) {
  // No CUDA kernel for AddTen is instantiated in this (non-nvcc) file: the call must throw a
  // clear error (CudaUnavailable in a build without CUDA), never touch the fake pointers.
  float* fake = reinterpret_cast<float*>(std::uintptr_t{0x1000});
  uk::Out<float> out = uk::Out<float>::device(fake, Shape{4});
  try {
    add_ten(uk::In<float>::device(fake, Shape{4}), out);
    FAIL() << "no exception";
  } catch (const usrecon::CudaUnavailable& e) {
    EXPECT_FALSE(usrecon::built_with_cuda()) << "a CUDA build names the operation instead: " << e.what();
  } catch (const usrecon::Error& e) {
    EXPECT_TRUE(usrecon::built_with_cuda()) << e.what();
    EXPECT_NE(std::string(e.what()).find("add_ten"), std::string::npos) << e.what();
  }
}

TEST(KernelMap, TwoOutputsPolarToCartesian) {
  const auto rho = random_array<double>({257}, 7, 0.0, 2.0);
  const auto theta = random_array<double>({257}, 8, -3.0, 3.0);
  auto [x, y] = uk::polar_to_cartesian(rho, theta);
  HostArray<double> x2(Shape{257}), y2(Shape{257});
  uk::polar_to_cartesian(rho, theta, x2, y2);
  for (int i = 0; i < 257; ++i) {
    EXPECT_EQ(x[i], rho[i] * std::cos(theta[i]));
    EXPECT_EQ(y[i], rho[i] * std::sin(theta[i]));
    EXPECT_EQ(x2[i], x[i]);
    EXPECT_EQ(y2[i], y[i]);
  }
}

TEST(KernelMap, TutorialFunctionsMatchTheirFormulas) {
  const auto x = random_array<float>({1001}, 9, -5.0, 5.0);
  const auto y = random_array<float>({1001}, 10, -5.0, 5.0);
  const HostArray<float> h = uk::hypot(x, y);
  const HostArray<float> g = uk::gaussian_pdf(x, 1.0f, 2.0f);
  const HostArray<float> s = uk::sqrt(uk::hypot(x, y));
  const HostArray<float> d = uk::polar_distance(x, y, y, x);
  for (int i = 0; i < 1001; ++i) {
    EXPECT_NEAR(h[i], std::hypot(x[i], y[i]), 1e-6f * std::hypot(x[i], y[i]));
    const double z = (x[i] - 1.0) / 2.0;
    EXPECT_NEAR(g[i], std::exp(-0.5 * z * z) / (2.0 * std::sqrt(2.0 * M_PI)), 1e-6);
    EXPECT_NEAR(s[i], std::sqrt(std::hypot(x[i], y[i])), 1e-5f);
    const double dx = x[i] * std::cos(y[i]) - y[i] * std::cos(x[i]);
    const double dy = x[i] * std::sin(y[i]) - y[i] * std::sin(x[i]);
    EXPECT_NEAR(d[i], std::hypot(dx, dy), 2e-5);
  }
  EXPECT_EQ(uk::math::hypot(3.0, 4.0), 5.0);
  EXPECT_EQ(uk::math::hypot(0.0f, 0.0f), 0.0f);
}

TEST(KernelMap, UserOpWithThreeInputsAndVectorize) {
  constexpr auto fma3 = uk::vectorize<3>(Fma3{}, "fma3");
  const auto a = random_array<std::int64_t>({6, 7}, 11, -1000, 1000);
  const auto b = random_array<std::int64_t>({7}, 12, -1000, 1000);
  const HostArray<std::int64_t> c = fma3(a, b, std::int64_t{5});
  for (std::int64_t i = 0; i < 6; ++i)
    for (std::int64_t j = 0; j < 7; ++j) EXPECT_EQ(c.at({i, j}), a.at({i, j}) * b[j] + 5);
}

TEST(KernelMap, EmptyArraysAreFine) {
  const HostArray<float> a(Shape{0, 3});
  const HostArray<float> c = uk::add(a, 1.0f);
  EXPECT_EQ(c.shape(), (Shape{0, 3}));
  EXPECT_EQ(c.size(), 0u);
}

// CUB-style: sizes around the CPU chunk (65536) and tiny ones, every type, against a loop.
template <class T>
class KernelMapTyped : public ::testing::Test {};
using MapTypes = ::testing::Types<float, double, std::int32_t, std::int64_t>;
TYPED_TEST_SUITE(KernelMapTyped, MapTypes);

TYPED_TEST(KernelMapTyped, AddMatchesLoopForAwkwardSizes) {
  using T = TypeParam;
  for (std::int64_t n : {1, 3, 17, 65535, 65536, 65537, 131073, (1 << 20) + 3}) {
    const auto a = random_array<T>({n}, 100 + n, -1000, 1000);
    const auto b = random_array<T>({n}, 200 + n, -1000, 1000);
    for (int threads : {1, 3}) {
      const HostArray<T> c = uk::add(a, b, uk::Exec{threads});
      for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "n=" << n << " i=" << i;
    }
  }
}

// A one-element array (not a scalar) against a long contiguous one: the call stays contiguous, and
// every chunk of the CPU loop (65536 elements) reads that one element, not the element at the
// chunk's start.
TYPED_TEST(KernelMapTyped, OneElementArrayBroadcastsOverEveryChunk) {
  using T = TypeParam;
  for (std::int64_t n : {65537, 200'003}) {
    const auto a = random_array<T>({n}, 300 + n, -1000, 1000);
    for (const Shape& one : {Shape{1}, Shape{1, 1}}) {
      const auto b = random_array<T>(one, 400 + n, -1000, 1000);
      for (int threads : {1, 3}) {
        const HostArray<T> ab = uk::add(a, b, uk::Exec{threads}), ba = uk::add(b, a, uk::Exec{threads});
        ASSERT_EQ(ab.size(), static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(ab[i], a[i] + b[0]) << "n=" << n << " i=" << i;
          ASSERT_EQ(ba[i], b[0] + a[i]) << "n=" << n << " i=" << i;
        }
      }
    }
  }
}

TYPED_TEST(KernelMapTyped, RowBroadcastOfManyShortRows) {
  using T = TypeParam;
  const auto a = random_array<T>({100003, 3}, 13, -1000, 1000);
  const auto b = random_array<T>({3}, 14, -1000, 1000);
  const HostArray<T> c = uk::add(a, b);
  for (std::int64_t i = 0; i < 100003; ++i)
    for (std::int64_t j = 0; j < 3; ++j) ASSERT_EQ(c.at({i, j}), a.at({i, j}) + b[j]);
}

}  // namespace

namespace {

// What the CUDA map does, run on the host: make_map_args (shape checks, broadcasting, collapsing),
// then what each thread of the grid runs, thread after thread: for a contiguous call the
// kernel's whole body, map_contiguous_thread (S threads in the grid: by default as many as
// cuda_map launches, map_contiguous_threads(n) rounded up to blocks of 256 as cuda::grid_1d
// does; fewer make the grid-stride loop take several passes), for a broadcast call
// broadcast_offsets then apply_element.
template <class T, std::size_t NOut, std::size_t NIn, class Op>
void run_cuda_element_program(const Op& op, const std::array<uk::Out<T>, NOut>& outs,
                              const std::array<uk::In<T>, NIn>& ins, std::int64_t grid_threads = 0) {
  uk::Location where;
  const uk::MapArgs<T, NOut, NIn> a = uk::detail::make_map_args<T, NOut, NIn>("t", outs, ins, where);
  if (a.ndim == 1) {
    const std::int64_t launched = std::max<std::int64_t>(1, (uk::map_contiguous_threads<Op>(a.n) + 255) / 256) * 256;
    const std::int64_t threads = grid_threads > 0 ? grid_threads : launched;
    for (std::int64_t t = 0; t < threads; ++t) uk::map_contiguous_thread(op, a, t, threads);
    return;
  }
  for (std::int64_t i = 0; i < a.n; ++i) {
    std::int64_t off[NIn];
    uk::broadcast_offsets(a, i, off);
    uk::apply_element(op, a, i, off, std::make_index_sequence<NIn>{});
  }
}

template <class T>
void expect_same(const HostArray<T>& got, const HostArray<T>& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) differ += !(got[i] == want[i]);
  EXPECT_EQ(differ, 0u) << what << ": elements differing from the CPU map";
}

}  // namespace

TEST(KernelMapCudaProgram, ElementProgramOnTheHostGivesTheCpuMapsResult) {
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {{{1000}, {1000}},       {{4}, {4, 4}},          {{3, 1, 5}, {1, 4, 1}},
                        {{2, 1, 3, 1}, {2, 5, 3, 7}}, {{}, {7, 3}},     {{}, {}},
                        {{1, 1}, {1}},          {{257, 129}, {129}},    {{129, 1}, {1, 257}},
                        {{6, 1, 1, 4}, {6, 2, 3, 1}}};
  std::uint64_t seed = 1;
  for (const Case& c : cases) {
    const std::string what = c.a.to_string() + " + " + c.b.to_string();
    const HostArray<double> a = random_array<double>(c.a, seed++), b = random_array<double>(c.b, seed++);
    const HostArray<double> want = uk::add(a, b);
    // The CPU map is the reference here, and shares its shape collapsing (make_map_args) with
    // the element program: it is held first to the plain broadcast loop, which shares nothing.
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(want.size()); ++i)
      ASSERT_EQ(want[i], a[uk::testing::broadcast_offset(c.a, want.shape(), i)] +
                             b[uk::testing::broadcast_offset(c.b, want.shape(), i)])
          << what << " at " << i;
    HostArray<double> got(want.shape());
    for (double& v : got) v = NAN;
    run_cuda_element_program<double, 1, 2>(uk::ops::Add{}, {uk::Out<double>(got)}, {uk::In<double>(a), uk::In<double>(b)});
    expect_same(got, want, what);
    // Grids smaller than cuda_map's: the grid-stride loop takes several passes (contiguous calls).
    for (const std::int64_t threads : {1, 3, 7, 256}) {
      for (double& v : got) v = NAN;
      run_cuda_element_program<double, 1, 2>(uk::ops::Add{}, {uk::Out<double>(got)},
                                             {uk::In<double>(a), uk::In<double>(b)}, threads);
      expect_same(got, want, what + ", " + std::to_string(threads) + " threads");
      // In place (the output is the first input): each element is read before it is written.
      if (a.shape() != want.shape()) continue;
      HostArray<double> in_place = a;
      run_cuda_element_program<double, 1, 2>(uk::ops::Add{}, {uk::Out<double>(in_place)},
                                             {uk::In<double>(in_place), uk::In<double>(b)}, threads);
      expect_same(in_place, want, what + ", in place, " + std::to_string(threads) + " threads");
    }
    // An input as a scalar (its own In, not an array).
    const HostArray<double> want_scalar = uk::add(a, 2.5);
    HostArray<double> got_scalar(want_scalar.shape());
    run_cuda_element_program<double, 1, 2>(uk::ops::Add{}, {uk::Out<double>(got_scalar)},
                                           {uk::In<double>(a), uk::In<double>(2.5)});
    expect_same(got_scalar, want_scalar, what + " (scalar)");
  }
  // Three inputs, integers.
  const HostArray<std::int32_t> x = random_array<std::int32_t>(Shape{2, 3, 1}, 41, -50, 50);
  const HostArray<std::int32_t> y = random_array<std::int32_t>(Shape{3, 4}, 42, -50, 50);
  constexpr uk::Ufunc<Fma3, 3> fma3{"fma3"};
  const HostArray<std::int32_t> want3 = fma3(x, y, std::int32_t(7));
  HostArray<std::int32_t> got3(want3.shape());
  run_cuda_element_program<std::int32_t, 1, 3>(Fma3{}, {uk::Out<std::int32_t>(got3)},
                                               {uk::In<std::int32_t>(x), uk::In<std::int32_t>(y), uk::In<std::int32_t>(7)});
  expect_same(got3, want3, "fma3 (2,3,1) (3,4) scalar");
  // Two outputs: polar to Cartesian, radii (3, 6) against angles (6,).
  const HostArray<float> r = random_array<float>(Shape{3, 6}, 43, 0.0, 2.0);
  const HostArray<float> theta = random_array<float>(Shape{6}, 44, -3.0, 3.0);
  HostArray<float> want_x(Shape{3, 6}), want_y(Shape{3, 6}), got_x(Shape{3, 6}), got_y(Shape{3, 6});
  uk::polar_to_cartesian(r, theta, want_x, want_y);
  run_cuda_element_program<float, 2, 2>(uk::ops::PolarToCartesian{}, {uk::Out<float>(got_x), uk::Out<float>(got_y)},
                                        {uk::In<float>(r), uk::In<float>(theta)});
  expect_same(got_x, want_x, "polar_to_cartesian x");
  expect_same(got_y, want_y, "polar_to_cartesian y");
}
