// The integer means' references: exact sums in GCC's and clang's __int128 (a second, independent
// 128-bit arithmetic beside the library's Int128), and a check that a double is a quotient
// rounded to the nearest (ties to even) by exact integer comparisons, not by another division.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "usrecon/kernels/int128.hpp"

namespace usrecon::kernels::testing {

__extension__ typedef __int128 Exact;  // __extension__: strict -std=c++20 names no such type

inline Exact exact(Int128 v) { return Exact(v.high) * (Exact(1) << 64) + Exact(v.low); }

inline Int128 int128_of(Exact e) {
  Int128 r(0);
  r.low = static_cast<std::uint64_t>(e);
  r.high = static_cast<std::int64_t>(e >> 64);
  return r;
}

inline std::string to_string(Exact e) {
  if (e == 0) return "0";
  const bool negative = e < 0;
  std::string digits;
  for (; e != 0; e /= 10) digits.insert(digits.begin(), char('0' + int(negative ? -(e % 10) : e % 10)));
  return (negative ? "-" : "") + digits;
}

/// Whether d is sum / count rounded to the nearest double, ties to even (|sum| < 2^120,
/// 0 < count < 2^60). With d = m·2^p (|m| < 2^53), 4·(m·count·2^p − sum) is compared with the
/// half ulp 2·count·2^p (a quarter ulp, count·2^p, below a power of two, where the next double
/// down is half an ulp away), all in exact integers.
inline ::testing::AssertionResult is_nearest_double(double d, Exact sum, std::int64_t count) {
  const auto fail = [&](const char* why) {
    return ::testing::AssertionFailure() << "got " << d << " for " << to_string(sum) << " / " << count << ": " << why;
  };
  if (!std::isfinite(d)) return fail("not finite");
  if (sum == 0) return d == 0 ? ::testing::AssertionSuccess() : fail("the sum is 0");
  if ((d < 0) != (sum < 0) || d == 0) return fail("wrong sign");
  if (sum < 0) {
    sum = -sum;
    d = -d;
  }
  int e = 0;
  const double f = std::frexp(d, &e);  // d = f·2^e, 0.5 <= f < 1
  const auto m = static_cast<std::int64_t>(std::ldexp(f, 53));
  const int p = e - 53;
  Exact diff4, half;  // both times 2^-p where p < 0
  if (p >= 0) {
    diff4 = 4 * ((Exact(m) * count << p) - sum);
    half = 2 * (Exact(count) << p);
  } else {
    diff4 = 4 * (Exact(m) * count - (sum << -p));
    half = 2 * Exact(count);
  }
  const bool even = m % 2 == 0;
  if (diff4 > 0 && m == (std::int64_t(1) << 52)) {  // above the quotient at a power of two
    const Exact quarter = half / 2;
    return diff4 <= quarter ? ::testing::AssertionSuccess() : fail("more than a quarter ulp above, at a power of two");
  }
  const Exact distance = diff4 < 0 ? -diff4 : diff4;
  if (distance < half || (distance == half && even)) return ::testing::AssertionSuccess();
  return fail(distance == half ? "a tie not rounded to even" : "more than half an ulp off");
}

}  // namespace usrecon::kernels::testing
