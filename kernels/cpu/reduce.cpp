// sum(), min(), max(), mean(): the CPU reductions, over whole arrays and along an axis, and the
// host/device dispatch.
#include "usrecon/kernels/reduce.hpp"

#include <algorithm>
#include <initializer_list>
#include <cstdint>
#include <cstring>
#include <span>
#include <limits>
#include <string>
#include <vector>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/block_reduce.hpp"
#include "usrecon/kernels/parallel.hpp"

namespace usrecon::kernels {
namespace {

constexpr std::size_t leaf = 2048;  // elements one leaf of a CPU reduction takes
constexpr std::size_t lanes = 16;   // accumulators a leaf (the compiler keeps them in vector registers)

// One leaf's sum: 16 independent accumulators, then combined pairwise. Integers accumulate in 64
// bits (unsigned, so int64 wrap-around is defined).
template <class T>
sum_type_t<T> leaf_sum(const T* x, std::size_t n) {
  using R = std::conditional_t<std::is_integral_v<T>, std::uint64_t, T>;
  R acc[lanes] = {};
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::size_t k = 0; k < lanes; ++k) acc[k] += static_cast<R>(x[i + k]);
  for (std::size_t k = 0; i + k < n; ++k) acc[k] += static_cast<R>(x[i + k]);
  for (std::size_t w = lanes / 2; w >= 1; w /= 2)
    for (std::size_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  return static_cast<sum_type_t<T>>(acc[0]);
}

// The sum of n < 2^32 int64 values from the sums of their unsigned bits' low halves, high halves
// and signs (below): high * 2^32 + low - negatives * 2^64.
Int128 split_total(std::uint64_t low, std::uint64_t high, std::uint64_t negatives) {
  Int128 shifted(0), low_part(0);
  shifted.low = high << 32;
  shifted.high = static_cast<std::int64_t>(high >> 32);
  low_part.low = low;  // unsigned: it may pass 2^63
  Int128 total = shifted + low_part;
  total.high = static_cast<std::int64_t>(static_cast<std::uint64_t>(total.high) - negatives);
  return total;
}

// Adds an int64's unsigned bits u to split sums: its low and high 32-bit halves and its sign.
inline void add_split(std::uint64_t u, std::uint64_t& low, std::uint64_t& high, std::uint64_t& negatives) {
  low += u & 0xffffffffu;
  high += u >> 32;
  negatives += u >> 63;
}

// One leaf's exact sum for a mean (integers; n <= leaf). int32: the int64 leaf sum, exact
// (2048 values of 2^31 at most). int64: each value split as its unsigned bits' high and low
// halves (u = high * 2^32 + low) and its sign (x = u - 2^64 when negative), each added in 64-bit
// lanes (at most 2048 * 2^32 = 2^43: no wrap), shifts and adds the vector units do alike.
template <class T>
Int128 leaf_exact_sum(const T* x, std::size_t n) {
  if constexpr (sizeof(T) <= 4) {
    return Int128(leaf_sum(x, n));
  } else {
    std::uint64_t low[lanes] = {}, high[lanes] = {}, negative[lanes] = {};
    const auto add = [&](std::size_t k, T v) { add_split(static_cast<std::uint64_t>(v), low[k], high[k], negative[k]); };
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes)
      for (std::size_t k = 0; k < lanes; ++k) add(k, x[i + k]);
    for (std::size_t k = 0; i + k < n; ++k) add(k, x[i + k]);
    std::uint64_t low_total = 0, high_total = 0, negatives = 0;
    for (std::size_t k = 0; k < lanes; ++k) {
      low_total += low[k];
      high_total += high[k];
      negatives += negative[k];
    }
    return split_total(low_total, high_total, negatives);
  }
}

// 16-byte vectors of T (GCC's and clang's vector extension): the compare, select and NaN test
// of a min or max are then a few SSE instructions a vector, whatever the autovectorizer decides
// (it left the plain loop scalar in the library's build: 7-11 ms for 2^24 floats against this
// loop's 2.5 ms, one thread of the 2-core development machine).
template <class T>
struct Vector16;
template <>
struct Vector16<float> {
  typedef float type __attribute__((vector_size(16)));
};
template <>
struct Vector16<double> {
  typedef double type __attribute__((vector_size(16)));
};
template <>
struct Vector16<std::int32_t> {
  typedef std::int32_t type __attribute__((vector_size(16)));
};
template <>
struct Vector16<std::int64_t> {
  typedef std::int64_t type __attribute__((vector_size(16)));
};

// One leaf's min or max (Op: block_reduce::Min<T> or Max<T>, whose order and NaN rule the GPU
// shares): 16 lanes of compares, which a NaN never wins, and beside them a mask of the lanes that
// met a NaN, which is then the result.
template <class T, class Op>
T leaf_extreme(const T* x, std::size_t n) {
  using V = typename Vector16<T>::type;
  using Mask = decltype(V{} < V{});
  constexpr std::size_t width = sizeof(V) / sizeof(T), vectors = lanes / width;
  V acc[vectors];
  Mask nan[vectors] = {};
  for (V& a : acc)
    for (std::size_t j = 0; j < width; ++j) a[j] = Op::identity();
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::size_t v = 0; v < vectors; ++v) {
      V value;
      std::memcpy(&value, x + i + v * width, sizeof value);  // x need not be 16-byte aligned
      nan[v] |= value != value;                               // all false for integers
      if constexpr (Op::kIsMin) acc[v] = value < acc[v] ? value : acc[v];
      else acc[v] = acc[v] < value ? value : acc[v];
    }
  T kept = Op::identity();
  for (; i < n; ++i) kept = Op::combine(kept, x[i]);  // the tail, a NaN there kept
  for (std::size_t v = 0; v < vectors; ++v)
    for (std::size_t j = 0; j < width; ++j) {
      if (nan[v][j]) return std::numeric_limits<T>::quiet_NaN();
      kept = Op::combine(kept, acc[v][j]);
    }
  return kept;
}

// leaf_of(first, count) for every leaf of x[0, n), in order; n > leaf. 256 leaves (2^19
// elements, some 0.1 ms) a chunk: a thread is started for every call, some 30-40 us each, which
// cost more than it saved below that (2^18 floats took 58 us on 2 threads against 21 us on 1, on
// the 2-core development machine).
template <class R, class T, class LeafOf>
std::vector<R> leaf_results(const T* x, std::size_t n, int threads, LeafOf leaf_of) {
  const std::size_t leaves = (n + leaf - 1) / leaf;
  std::vector<R> partial(leaves);
  parallel_for(leaves, 256, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t l = begin; l < end; ++l) {
      const std::size_t first = l * leaf;
      partial[l] = leaf_of(x + first, (n - first < leaf ? n - first : leaf));
    }
  });
  return partial;
}

template <class R>
R pairwise(const R* p, std::size_t n) {
  if (n == 1) return p[0];
  const std::size_t half = n / 2;
  return pairwise(p, half) + pairwise(p + half, n - half);
}

template <class T, class Op>
T cpu_extreme(const T* x, std::size_t n, int threads) {
  if (n <= leaf) return leaf_extreme<T, Op>(x, n);
  const std::vector<T> partial = leaf_results<T>(x, n, threads, leaf_extreme<T, Op>);
  T kept = partial[0];
  for (std::size_t l = 1; l < partial.size(); ++l) kept = Op::combine(kept, partial[l]);
  return kept;
}

// The exact sum of integers x[0, n) for their mean: leaves as leaf_results', added exactly.
template <class T>
Int128 cpu_exact_sum(const T* x, std::size_t n, int threads) {
  if (n <= leaf) return leaf_exact_sum(x, n);
  const std::vector<Int128> partial = leaf_results<Int128>(x, n, threads, leaf_exact_sum<T>);
  Int128 total(0);
  for (const Int128& p : partial) total = total + p;
  return total;
}

const char* name_of(detail::Extremum which) { return which == detail::Extremum::min ? "min" : "max"; }

[[noreturn]] void throw_empty(detail::Extremum which, const Shape& shape) {
  throw Error(std::string(name_of(which)) + ": the array is empty (shape " + shape.to_string() + "): it has no " +
              (which == detail::Extremum::min ? "least" : "greatest") + " element");
}

// A host output for a host (or scalar) input: every reduction into an output.
template <class T, class R>
void check_output_location(const char* name, const In<T>& x, const Out<R>& out) {
  if (x.location != Location::device && out.location == Location::device)
    throw Error(std::string(name) +
                ": a host input reduces into a host output (copy the input to the device for a device one)");
}

// What a whole-array reduction into `out` needs of it: one element, where the input allows.
template <class T, class R>
void check_output(const char* name, const In<T>& x, const Out<R>& out) {
  if (out.shape.size() != 1)
    throw Error(std::string(name) + ": the output must hold one element; it is " + out.shape.to_string());
  check_output_location(name, x, out);
}

// ---- Along an axis: x viewed as [outer][length][inner], row-major; a line is x[o][*][i] ----

struct Lines {
  std::size_t outer = 1, length = 1, inner = 1;
};

constexpr const char* kReductionNames[] = {"sum", "min", "max", "mean"};

int axis_index(const Shape& s, Axis axis, const char* what) {
  const int n = s.ndim();
  if (axis.index < -n || axis.index >= n)
    throw Error(std::string(what) + ": axis " + std::to_string(axis.index) + " is out of range for a " +
                std::to_string(n) + "-dimensional array (shape " + s.to_string() + ")" +
                (n == 0   ? ""
                 : n == 1 ? ": 0, or -1"
                          : ": 0 to " + std::to_string(n - 1) + ", or -" + std::to_string(n) + " to -1"));
  return axis.index < 0 ? axis.index + n : axis.index;
}

Lines lines_of(const Shape& s, int axis) {
  Lines l;
  for (int d = 0; d < s.ndim(); ++d) {
    const auto extent = static_cast<std::size_t>(s[d]);
    if (d < axis) l.outer *= extent;
    else if (d == axis) l.length = extent;
    else l.inner *= extent;
  }
  return l;
}

constexpr std::size_t kRowBlock = 128;  // rows of a strided sum added in order; the blocks pairwise
// Strided lines are taken as slabs: up to kColumns columns (64 KiB of floats: whole rows of most
// arrays, read in one stretch) by kSlabRows rows or more (so that the slabs' partial results
// stay within 8 MiB), each slab a task (a (4096, 4096) array along axis 0: 16), then the slabs
// of a column group combined in a fixed tree. The slabs follow the shape alone, so the result
// does not depend on the thread count. (Groups of 256 columns read a row's 1 KiB and jumped to the next row: a (4096, 4096)
// float sum along axis 0 took 9.5 ms on the 2-core development machine, NumPy's 3.7 ms.)
constexpr std::size_t kColumns = 16384;
constexpr std::size_t kSlabRows = 256;  // two blocks of kRowBlock
constexpr std::size_t kSlabBytes = std::size_t(8) << 20;
// A slab holds at least this many elements (rows enough where the columns are few): a task of
// 256 rows of 2 columns cost more to hand out than to add, and neighbouring slabs' results
// shared cache lines ((3e6, 2) along axis 0 took 11.0 ms on 1 thread and 11.4 on 2).
constexpr std::size_t kSlabElements = std::size_t(1) << 16;
constexpr std::size_t kShortLine = lanes;  // contiguous lines shorter than this: a plain loop

// Rows of fewer than 16 columns, contiguous (x[k * width + j], k < rows): m = 16 / width rows a
// step in m * width independent accumulators (lane t holds column t % width), then each
// column's m lanes added in order. A column's one chain of dependent adds held a (3e6, 2) float
// sum along axis 0 to 1.7 ns an element.
template <class T, class R>
void narrow_sum(const T* x, std::size_t rows, std::size_t width, R* out) {
  const std::size_t m = lanes / width, step = m * width;
  R acc[lanes] = {};
  std::size_t k = 0;
  for (; k + m <= rows; k += m, x += step)
    for (std::size_t t = 0; t < step; ++t) acc[t] = block_reduce::add(acc[t], static_cast<R>(x[t]));
  for (; k < rows; ++k, x += width)  // the last rows, into the first row's lanes
    for (std::size_t j = 0; j < width; ++j) acc[j] = block_reduce::add(acc[j], static_cast<R>(x[j]));
  for (std::size_t j = 0; j < width; ++j) {
    R total = acc[j];
    for (std::size_t r = 1; r < m; ++r) total = block_reduce::add(total, acc[r * width + j]);
    out[j] = total;
  }
}

// The same for min or max (Op: block_reduce::Min<T> or Max<T>): compares that a NaN never wins,
// beside a flag of the lanes that met one, which is then the column's result.
template <class T, class Op>
void narrow_extreme(const T* x, std::size_t rows, std::size_t width, T* out) {
  const std::size_t m = lanes / width, step = m * width;
  T acc[lanes];
  bool nan[lanes] = {};
  for (T& a : acc) a = Op::identity();
  const auto fold = [&](std::size_t t, T v) {
    nan[t] = nan[t] || v != v;  // always false for integers
    if constexpr (Op::kIsMin) acc[t] = v < acc[t] ? v : acc[t];
    else acc[t] = acc[t] < v ? v : acc[t];
  };
  std::size_t k = 0;
  for (; k + m <= rows; k += m, x += step)
    for (std::size_t t = 0; t < step; ++t) fold(t, x[t]);
  for (; k < rows; ++k, x += width)
    for (std::size_t j = 0; j < width; ++j) fold(j, x[j]);
  for (std::size_t j = 0; j < width; ++j) {
    T kept = acc[j];
    bool any_nan = nan[j];
    for (std::size_t r = 1; r < m; ++r) {
      kept = Op::combine(kept, acc[r * width + j]);
      any_nan = any_nan || nan[r * width + j];
    }
    out[j] = any_nan ? std::numeric_limits<T>::quiet_NaN() : kept;
  }
}

// out[j] = the sum over rows k in [k0, k1) of x[k * inner + j], j < width (x already offset to
// the group's first column): blocks of up to kRowBlock rows added in order, the blocks pairwise,
// so the rounding grows as kRowBlock + log2(rows / kRowBlock), not as the rows.
template <class T, class R>
void strided_sum(const T* x, std::size_t k0, std::size_t k1, std::size_t inner, std::size_t width, R* out) {
  if (k1 - k0 <= kRowBlock) {
    if constexpr (std::is_same_v<R, Int128> && sizeof(T) == 8) {  // an int64 mean's: split as leaf_exact_sum's
      std::vector<std::uint64_t> low(width), high(width), negatives(width);
      for (std::size_t k = k0; k < k1; ++k)
        for (std::size_t j = 0; j < width; ++j)
          add_split(static_cast<std::uint64_t>(x[k * inner + j]), low[j], high[j], negatives[j]);
      for (std::size_t j = 0; j < width; ++j) out[j] = split_total(low[j], high[j], negatives[j]);
      return;
    } else if constexpr (std::is_same_v<R, Int128>) {  // int32: 128 rows' int64 sums are exact
      std::vector<std::int64_t> sums(width);
      for (std::size_t k = k0; k < k1; ++k)
        for (std::size_t j = 0; j < width; ++j) sums[j] += x[k * inner + j];
      for (std::size_t j = 0; j < width; ++j) out[j] = Int128(sums[j]);
      return;
    }
    if constexpr (std::is_arithmetic_v<R>) {
      if (width == inner && width < lanes) {  // narrow whole rows: narrow_sum's lanes
        narrow_sum(x + k0 * inner, k1 - k0, width, out);
        return;
      }
    }
    for (std::size_t j = 0; j < width; ++j) out[j] = R(0);
    for (std::size_t k = k0; k < k1; ++k)
      for (std::size_t j = 0; j < width; ++j) out[j] = block_reduce::add(out[j], static_cast<R>(x[k * inner + j]));
    return;
  }
  const std::size_t blocks = (k1 - k0 + kRowBlock - 1) / kRowBlock;
  const std::size_t mid = k0 + blocks / 2 * kRowBlock;
  strided_sum(x, k0, mid, inner, width, out);
  std::vector<R> rest(width);
  strided_sum(x, mid, k1, inner, width, rest.data());
  for (std::size_t j = 0; j < width; ++j) out[j] = block_reduce::add(out[j], rest[j]);
}

// Whole rows of w, 2w or 4w values (w: a 16-byte vector's), contiguous: one stretch of rows *
// width values, read as a contiguous array is (leaf_extreme), 4 vectors a step into 4
// accumulators with a NaN mask each; value e of vector t of a step is column (t * w + e) % width.
// A row a step (strided_extreme) paid a row's overhead for one to four vectors: (1e6, 8) float
// max took 3.2-3.6 ms on one thread.
template <class T, class Op>
void stream_extreme(const T* x, std::size_t rows, std::size_t width, T* out) {
  using V = typename Vector16<T>::type;
  using Mask = decltype(V{} < V{});
  constexpr std::size_t w = sizeof(V) / sizeof(T), kStep = 4 * w;
  V acc[4];
  Mask nan[4] = {};
  for (V& a : acc)
    for (std::size_t e = 0; e < w; ++e) a[e] = Op::identity();
  const std::size_t n = rows * width, steps = n / kStep;
  for (std::size_t s = 0; s < steps; ++s, x += kStep)
    for (std::size_t t = 0; t < 4; ++t) {
      V value;
      std::memcpy(&value, x + t * w, sizeof value);
      nan[t] |= value != value;
      if constexpr (Op::kIsMin) acc[t] = value < acc[t] ? value : acc[t];
      else acc[t] = acc[t] < value ? value : acc[t];
    }
  T kept[kStep];  // by column, width <= kStep
  bool any_nan[kStep] = {};
  for (T& k : kept) k = Op::identity();
  for (std::size_t t = 0; t < 4; ++t)
    for (std::size_t e = 0; e < w; ++e) {
      const std::size_t j = (t * w + e) % width;
      kept[j] = Op::combine(kept[j], acc[t][e]);  // never NaN: a NaN never wins the compares
      any_nan[j] = any_nan[j] || nan[t][e] != 0;
    }
  for (std::size_t i = 0; i < n - steps * kStep; ++i) {  // the rows after the last whole step
    const T v = x[i];
    const std::size_t j = i % width;
    any_nan[j] = any_nan[j] || v != v;  // always false for integers
    kept[j] = Op::combine(kept[j], v);
  }
  for (std::size_t j = 0; j < width; ++j) out[j] = any_nan[j] ? std::numeric_limits<T>::quiet_NaN() : kept[j];
}

// out[j] = Op over the rows of column j < width, rows in order: 16-byte vectors across the
// columns with a NaN mask each (as leaf_extreme's), the columns past the last whole vector by
// Op::combine.
template <class T, class Op>
void strided_extreme(const T* x, std::size_t length, std::size_t inner, std::size_t width, T* out) {
  using V = typename Vector16<T>::type;
  constexpr std::size_t w = sizeof(V) / sizeof(T);
  // Whole rows narrower than a vector (below: all scalar): narrow_extreme's lanes ((3e6, 2) float
  // along axis 0: 13 ms on one thread before, 6-7 after). Wider ones keep the vectors here,
  // which narrow_extreme's scalar lanes did not beat ((1e6, 8): 3.3 ms against 9.4), or, 1, 2 or
  // 4 vectors wide, stream_extreme's.
  if (width == inner && width < w) return narrow_extreme<T, Op>(x, length, width, out);
  if (width == inner && width % w == 0 && (4 * w) % width == 0) return stream_extreme<T, Op>(x, length, width, out);
  using Mask = decltype(V{} < V{});
  const std::size_t vectors = width / w;
  V start;
  for (std::size_t j = 0; j < w; ++j) start[j] = Op::identity();
  std::vector<V> acc(vectors, start);
  std::vector<Mask> nan(vectors, Mask{});
  for (std::size_t j = vectors * w; j < width; ++j) out[j] = Op::identity();
  for (std::size_t k = 0; k < length; ++k) {
    const T* row = x + k * inner;
    Mask row_nan = {};  // whether the row holds a NaN: kept in a register, the columns' masks
                        // updated only then (a store a vector a row cost the loop 2x)
    for (std::size_t v = 0; v < vectors; ++v) {
      V value;
      std::memcpy(&value, row + v * w, sizeof value);
      row_nan |= value != value;
      if constexpr (Op::kIsMin) acc[v] = value < acc[v] ? value : acc[v];
      else acc[v] = acc[v] < value ? value : acc[v];
    }
    bool any = false;
    for (std::size_t j = 0; j < w; ++j) any |= row_nan[j] != 0;
    if (any)
      for (std::size_t v = 0; v < vectors; ++v) {
        V value;
        std::memcpy(&value, row + v * w, sizeof value);
        nan[v] |= value != value;
      }
    for (std::size_t j = vectors * w; j < width; ++j) out[j] = Op::combine(out[j], row[j]);
  }
  for (std::size_t v = 0; v < vectors; ++v)
    for (std::size_t j = 0; j < w; ++j) out[v * w + j] = nan[v][j] ? std::numeric_limits<T>::quiet_NaN() : acc[v][j];
}

// The lines' reductions into r (R = sum_type_t<T> for sum and mean, T for min and max), each line
// by the whole-array rule. Contiguous lines (inner 1) by cpu_sum or cpu_extreme (shorter than 16:
// a plain loop, in order), tasks of at least 2^16 elements each going to the threads, or, fewer
// lines than threads, one line after another on every thread. Strided lines by slabs (above).
// The result depends on the shape only, never on the thread count.
template <class T, class R>
void cpu_lines(const T* x, const Lines& l, Reduction kind, R* r, int threads) {
  const auto workers = static_cast<std::size_t>(threads > 0 ? threads : hardware_threads());
  const bool sum = kind == Reduction::sum || kind == Reduction::mean;
  // One stretch of one line (contiguous) or of a slab's columns (strided) into `to`.
  const auto reduce_stretch = [&](const T* from, std::size_t rows, std::size_t width, R* to, int inside) {
    if constexpr (std::is_same_v<R, sum_type_t<T>> || std::is_same_v<R, Int128>) {  // Int128: a mean's
      if (sum) {
        if (l.inner != 1) {
          strided_sum(from, 0, rows, l.inner, width, to);
        } else if (rows < kShortLine) {
          R total = R(0);
          for (std::size_t k = 0; k < rows; ++k) total = block_reduce::add(total, static_cast<R>(from[k]));
          *to = total;
        } else if constexpr (std::is_same_v<R, Int128>) {
          *to = cpu_exact_sum(from, rows, inside);
        } else {
          *to = cpu_sum(from, rows, inside);
        }
        return;
      }
    }
    if constexpr (std::is_same_v<R, T>) {
      const auto extreme = [&](auto op) {
        using Op = decltype(op);
        if (l.inner != 1) {
          strided_extreme<T, Op>(from, rows, l.inner, width, to);
        } else if (rows < kShortLine) {
          T kept = Op::identity();
          for (std::size_t k = 0; k < rows; ++k) kept = Op::combine(kept, from[k]);
          *to = kept;
        } else {
          *to = cpu_extreme<T, Op>(from, rows, inside);
        }
      };
      if (kind == Reduction::min) extreme(block_reduce::Min<T>{});
      else extreme(block_reduce::Max<T>{});
    }
  };
  // Two partial results of a line combined (the slabs' tree).
  const auto combine = [&](R a, R b) -> R {
    if (sum) return block_reduce::add(a, b);
    if constexpr (std::is_same_v<R, T>) {
      return kind == Reduction::min ? block_reduce::Min<T>::combine(a, b) : block_reduce::Max<T>::combine(a, b);
    } else {
      return a;  // not reached: R is T for min and max
    }
  };

  if (l.inner == 1) {
    if (l.outer < workers) {
      for (std::size_t o = 0; o < l.outer; ++o) reduce_stretch(x + o * l.length, l.length, 1, r + o, threads);
      return;
    }
    const std::size_t chunk = std::max<std::size_t>(1, (std::size_t(1) << 16) / std::max<std::size_t>(l.length, 1));
    parallel_for(l.outer, chunk, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t o = begin; o < end; ++o) reduce_stretch(x + o * l.length, l.length, 1, r + o, 1);
    });
    return;
  }
  const std::size_t groups = (l.inner + kColumns - 1) / kColumns;
  const std::size_t group_width = std::min(kColumns, l.inner);
  const std::size_t slab_rows =
      std::max({kSlabRows, (kSlabElements + group_width - 1) / group_width,
                l.length / std::max<std::size_t>(1, kSlabBytes / (group_width * sizeof(R))) + 1});
  const std::size_t slabs = std::max<std::size_t>(1, (l.length + slab_rows - 1) / slab_rows);
  // Partial results, [outer][group][slab][width] (a slab of a narrower last group uses the start
  // of its row); one slab's go straight to r.
  std::vector<R> partial(slabs > 1 ? l.outer * groups * slabs * group_width : 0);
  const std::size_t tasks = l.outer * groups * slabs;
  parallel_for(tasks, 1, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t t = begin; t < end; ++t) {
      const std::size_t slab = t % slabs, g = (t / slabs) % groups, o = t / (slabs * groups);
      const std::size_t first = g * kColumns, width = std::min(kColumns, l.inner - first);
      const std::size_t row0 = slab * slab_rows, rows = std::min(slab_rows, l.length - row0);
      const T* from = x + (o * l.length + row0) * l.inner + first;
      R* to = slabs > 1 ? partial.data() + t * group_width : r + o * l.inner + first;
      reduce_stretch(from, rows, width, to, 1);
    }
  });
  if (slabs == 1) return;
  for (std::size_t o = 0; o < l.outer; ++o)
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t first = g * kColumns, width = std::min(kColumns, l.inner - first);
      R* slab0 = partial.data() + (o * groups + g) * slabs * group_width;
      for (std::size_t step = 1; step < slabs; step *= 2)  // a fixed tree: slab s takes s + step
        for (std::size_t s = 0; s + step < slabs; s += 2 * step)
          for (std::size_t j = 0; j < width; ++j)
            slab0[s * group_width + j] = combine(slab0[s * group_width + j], slab0[(s + step) * group_width + j]);
      std::copy(slab0, slab0 + width, r + o * l.inner + first);
    }
}

}  // namespace

template <class T>
sum_type_t<T> cpu_sum(const T* x, std::size_t n, int threads) {
  using R = sum_type_t<T>;
  if (n == 0) return R(0);
  if (n <= leaf) return leaf_sum(x, n);
  const std::vector<R> partial = leaf_results<R>(x, n, threads, leaf_sum<T>);
  if constexpr (std::is_integral_v<T>) {
    std::uint64_t total = 0;  // exact in any order
    for (R v : partial) total += static_cast<std::uint64_t>(v);
    return static_cast<R>(total);
  } else {
    return pairwise(partial.data(), partial.size());
  }
}

namespace detail {
template <class T>
sum_type_t<T> sum(const In<T>& x, const Exec& exec) {
  const auto n = static_cast<std::size_t>(x.shape.size());
  switch (x.location) {
    case Location::scalar:
      return static_cast<sum_type_t<T>>(x.value);
    case Location::host:
      return cpu_sum(x.data, n, exec.threads);
    case Location::device:
      // An empty array holds nothing on a device and needs none, with or without CUDA.
      return n == 0 ? sum_type_t<T>(0) : cuda_sum(x.data, n, exec.stream);
  }
  return {};
}

template <class T>
void sum(const In<T>& x, const Out<sum_type_t<T>>& out, const Exec& exec) {
  check_output("sum", x, out);
  if (x.location == Location::device && out.location == Location::device) {
    cuda_sum_to_device(x.data, static_cast<std::size_t>(x.shape.size()), out.data, exec.stream);
    return;
  }
  *out.data = sum(x, exec);
}

template <class T>
T extreme(const In<T>& x, Extremum which, const Exec& exec) {
  const auto n = static_cast<std::size_t>(x.shape.size());
  if (x.location == Location::scalar) return x.value;
  if (n == 0) throw_empty(which, x.shape);
  if (x.location == Location::device) return cuda_extreme(x.data, n, which, exec.stream);
  return which == Extremum::min ? cpu_extreme<T, block_reduce::Min<T>>(x.data, n, exec.threads)
                                : cpu_extreme<T, block_reduce::Max<T>>(x.data, n, exec.threads);
}

template <class T>
void extreme(const In<T>& x, const Out<T>& out, Extremum which, const Exec& exec) {
  check_output(name_of(which), x, out);
  if (x.location == Location::device && out.location == Location::device) {
    if (x.shape.size() == 0) throw_empty(which, x.shape);
    cuda_extreme_to_device(x.data, static_cast<std::size_t>(x.shape.size()), out.data, which, exec.stream);
    return;
  }
  *out.data = extreme(x, which, exec);
}

template <class T>
mean_type_t<T> mean(const In<T>& x, const Exec& exec) {
  using M = mean_type_t<T>;
  const std::int64_t n = x.location == Location::scalar ? 1 : x.shape.size();
  if (n == 0) return std::numeric_limits<M>::quiet_NaN();
  if constexpr (std::is_integral_v<T>) {  // the exact sum, divided and rounded once
    switch (x.location) {
      case Location::scalar:
        return static_cast<M>(x.value);
      case Location::host:
        return block_reduce::mean_from_sum<M>(cpu_exact_sum(x.data, static_cast<std::size_t>(n), exec.threads), n);
      case Location::device: {
        DeviceArray<M> result(Shape{1});  // the device's own division (the same function)
        cuda_mean_to_device(x.data, static_cast<std::size_t>(n), result.data(), exec.stream);
        return result.copy_to_host(exec.stream)[0];
      }
    }
    return M(0);
  } else {
    return static_cast<M>(static_cast<M>(sum(x, exec)) / static_cast<M>(n));
  }
}

template <class T>
void mean(const In<T>& x, const Out<mean_type_t<T>>& out, const Exec& exec) {
  check_output("mean", x, out);
  if (x.location == Location::device && out.location == Location::device) {
    cuda_mean_to_device(x.data, static_cast<std::size_t>(x.shape.size()), out.data, exec.stream);
    return;
  }
  *out.data = mean(x, exec);
}

Shape reduced_shape(const Shape& x, Axis axis, Reduction kind) {
  const char* what = kReductionNames[static_cast<int>(kind)];
  const int a = axis_index(x, axis, what);
  // As NumPy: min and max along an axis of length 0 are refused, even where there are no lines.
  if (x[a] == 0 && (kind == Reduction::min || kind == Reduction::max))
    throw Error(std::string(what) + ": axis " + std::to_string(axis.index) + " of " + x.to_string() +
                " has length 0: its lines have no " + (kind == Reduction::min ? "least" : "greatest") + " element");
  std::vector<std::int64_t> dims;
  for (int d = 0; d < x.ndim(); ++d)
    if (d != a) dims.push_back(x[d]);
  return Shape(std::span<const std::int64_t>(dims));
}

template <class T, class R>
void reduce_axis(const In<T>& x, Axis axis, const Out<R>& out, Reduction kind, const Exec& exec) {
  const char* what = kReductionNames[static_cast<int>(kind)];
  const bool fits = kind == Reduction::sum    ? std::is_same_v<R, sum_type_t<T>>
                    : kind == Reduction::mean ? std::is_same_v<R, mean_type_t<T>>
                                              : std::is_same_v<R, T>;
  if (!fits)  // reduce() asserts it at compile time
    throw Error(std::string(what) + ": the output's element type is not this reduction's");
  if (x.location == Location::scalar)
    throw Error(std::string(what) + ": a scalar has no axis to reduce along (give an array)");
  const int a = axis_index(x.shape, axis, what);
  const Shape reduced = reduced_shape(x.shape, axis, kind);
  Shape kept = x.shape;  // NumPy's keepdims
  kept[a] = 1;
  if (!(out.shape == reduced) && !(out.shape == kept))
    throw Error(std::string(what) + ": the output's shape is " + out.shape.to_string() + "; along axis " +
                std::to_string(axis.index) + " of " + x.shape.to_string() + " it is " + reduced.to_string() +
                " (or " + kept.to_string() + ", the axis kept)");
  check_output_location(what, x, out);
  const Lines l = lines_of(x.shape, a);
  const std::size_t results = l.outer * l.inner;
  if (results == 0) return;
  // The lines are read while the results are written (a strided group's start from 0 or the
  // identity; other threads' lines meanwhile): an output within the input would be read back.
  if (detail::overlaps(reinterpret_cast<const unsigned char*>(out.data), std::int64_t(results * sizeof(R)),
                       reinterpret_cast<const unsigned char*>(x.data), x.shape.size() * std::int64_t(sizeof(T))))
    throw Error(std::string(what) + ": the output overlaps the input, which is read while the output is written: "
                                    "write to an array of its own");
  if (x.location == Location::device) {
    if (out.location == Location::device) {
      cuda_reduce_axis(x.data, l.outer, l.length, l.inner, out.data, kind, exec.stream);
      return;
    }
    DeviceArray<R> on_device(Shape{static_cast<std::int64_t>(results)});  // then copied back: waits
    cuda_reduce_axis(x.data, l.outer, l.length, l.inner, on_device.data(), kind, exec.stream);
    HostArray<R> back = on_device.copy_to_host(exec.stream);
    std::copy(back.begin(), back.end(), out.data);
    return;
  }
  if (kind != Reduction::mean) {
    cpu_lines(x.data, l, kind, out.data, exec.threads);
    return;
  }
  std::vector<block_reduce::mean_sum_t<T>> sums(results);  // exact (Int128) for integers
  cpu_lines(x.data, l, Reduction::sum, sums.data(), exec.threads);
  for (std::size_t i = 0; i < results; ++i)
    out.data[i] = block_reduce::mean_from_sum<R>(sums[i], static_cast<std::int64_t>(l.length));
}
}  // namespace detail

// Listed once in reduce.hpp, which also declares them extern.
#define USRECON_INSTANTIATE_AXIS(T, R) USRECON_AXIS_REDUCTION_INSTANTIATION(, T, R)
USRECON_AXIS_REDUCTION_TYPES(USRECON_INSTANTIATE_AXIS)
#undef USRECON_INSTANTIATE_AXIS
USRECON_REDUCTION_INSTANTIATIONS(, float)
USRECON_REDUCTION_INSTANTIATIONS(, double)
USRECON_REDUCTION_INSTANTIATIONS(, std::int32_t)
USRECON_REDUCTION_INSTANTIATIONS(, std::int64_t)

}  // namespace usrecon::kernels
