// A 128-bit integer for exact sums of 64-bit integers (the means of integer arrays), and its
// quotient by a count rounded once to double. Host-device: the CPU's means and the GPU's use the
// same two functions, so they agree bit for bit. Plain C++ (no __int128, which strict -std=c++20
// does not treat as an integer type, and no compiler builtins), the same on every compiler.
#pragma once

#include <cmath>
#include <cstdint>

#include "usrecon/kernels/common.hpp"
#include "usrecon/kernels/math.hpp"

namespace usrecon::kernels {

/// A two's-complement 128-bit integer, high * 2^64 + low. Sums of up to 2^64 int64 values never
/// wrap in it (an int64 sum wraps past 2^63: the mean of six nanosecond timestamps of 2026 did).
struct Int128 {
  std::uint64_t low;  // bits 0-63
  std::int64_t high;  // bits 64-127, the sign's
  /// Trivial (uninitialised), as an int's: CUDA's __shared__ arrays may only hold such types.
  Int128() = default;
  /// Sign-extended; implicit, as an int64's conversion to a wider integer is.
  USRECON_HD constexpr Int128(std::int64_t v) : low(static_cast<std::uint64_t>(v)), high(v < 0 ? -1 : 0) {}

  /// Wraps past 2^127 as an unsigned add does (2^64 int64 values cannot reach it).
  USRECON_HD friend constexpr Int128 operator+(Int128 a, Int128 b) {
    Int128 r(0);
    r.low = a.low + b.low;
    const std::uint64_t carry = r.low < a.low ? 1 : 0;
    r.high = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.high) + static_cast<std::uint64_t>(b.high) + carry);
    return r;
  }
  USRECON_HD friend constexpr bool operator==(Int128 a, Int128 b) { return a.low == b.low && a.high == b.high; }
};

/// sum / count rounded once to the nearest double (ties to even): the mean of `count` integers
/// whose exact sum is `sum`. NaN for a count of 0 (0 / 0, NumPy's mean of nothing), 0 for a sum
/// of 0. A sum and count that double holds exactly (|sum|, count <= 2^53: almost every mean)
/// take one IEEE division; the rest a long division of the magnitude, bit by bit, until it
/// has the 53 bits of a double and the rounding bit (at most 128 + 63 + 54 steps).
USRECON_HD inline double quotient_to_double(Int128 sum, std::int64_t count) {
  if (count <= 0) return math::quiet_nan<double>();
  constexpr std::uint64_t kExact = std::uint64_t(1) << 53;
  const bool sum_fits = (sum.high == 0 && sum.low <= kExact) || (sum.high == -1 && sum.low >= std::uint64_t(0) - kExact);
  if (sum_fits && static_cast<std::uint64_t>(count) <= kExact)
    return static_cast<double>(static_cast<std::int64_t>(sum.low)) / static_cast<double>(count);
  if (sum.low == 0 && sum.high == 0) return 0.0;
  const bool negative = sum.high < 0;
  std::uint64_t high = static_cast<std::uint64_t>(sum.high), low = sum.low;
  if (negative) {  // the magnitude: -sum = ~sum + 1 (|-2^127| = 2^127 fits unsigned)
    low = ~low + 1;
    high = ~high + (low == 0 ? 1 : 0);
  }
  const auto divisor = static_cast<std::uint64_t>(count);  // < 2^63, so 2 * remainder + 1 < 2^64
  std::uint64_t remainder = 0, mantissa = 0;
  int taken = 0;      // quotient bits in mantissa, from its leading 1
  int position = 0;   // the weight 2^position of the last bit taken
  for (int p = 127; taken < 54; --p) {  // the magnitude's bits from the top, then zeros past the point
    const std::uint64_t bit = p >= 64 ? (high >> (p - 64)) & 1 : p >= 0 ? (low >> p) & 1 : 0;
    remainder = (remainder << 1) | bit;
    std::uint64_t q = 0;
    if (remainder >= divisor) {
      remainder -= divisor;
      q = 1;
    }
    if (taken > 0 || q != 0) {
      mantissa = (mantissa << 1) | q;
      ++taken;
    }
    position = p;
  }
  // What lies below the rounding bit: the remainder, and the magnitude's bits not yet brought
  // down (below `position`); the exact quotient exceeds the bits taken iff either is nonzero.
  bool sticky = remainder != 0;
  if (position >= 64) sticky = sticky || low != 0 || (position > 64 && (high & ((std::uint64_t(1) << (position - 64)) - 1)) != 0);
  else if (position > 0) sticky = sticky || (low & ((std::uint64_t(1) << position) - 1)) != 0;
  std::uint64_t rounded = mantissa >> 1;  // 53 bits, the last of weight 2^(position + 1)
  if ((mantissa & 1) != 0 && (sticky || (rounded & 1) != 0)) ++rounded;  // 2^53 stays exact
#if defined(__CUDA_ARCH__)
  const double magnitude = ::ldexp(static_cast<double>(rounded), position + 1);
#else
  const double magnitude = std::ldexp(static_cast<double>(rounded), position + 1);
#endif
  return negative ? -magnitude : magnitude;
}

}  // namespace usrecon::kernels
