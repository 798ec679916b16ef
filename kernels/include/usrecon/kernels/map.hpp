// Elementwise maps: the C++ counterpart of Numba's @vectorize.
//
// Write the scalar function once, USRECON_HD, and wrap it in a Ufunc:
//
//   struct AddTen { template <class T> USRECON_HD T operator()(T x) const { return x + T(10); } };
//   inline constexpr usrecon::kernels::Ufunc<AddTen, 1> add_ten{"add_ten"};
//
//   HostArray<float> b = add_ten(a);               // new array, CPU threads
//   add_ten(a, b);                                 // into a preallocated output (out=)
//   DeviceArray<float> d = add_ten(to_device(a));  // on the GPU (needs cuda/map.cuh, see below)
//
// Calls take NIn inputs (arrays of any shape, broadcast NumPy-style, or scalars), then optionally
// NOut outputs and optionally an Exec (threads, stream). All arrays of a call have one element
// type T (float, double, int32_t, int64_t); scalars are converted to T. An op returning
// Outputs<T, N> gives N outputs. Shapes are checked here, at the call: operands that do not
// broadcast, outputs of the wrong shape and host/device mixes throw usrecon::Error.
//
// Where it runs follows the arrays: host arrays on CPU threads (this header, header-only), device
// arrays with CUDA. The CUDA kernel for an op is instantiated by including
// "usrecon/kernels/cuda/map.cuh" in a .cu file that makes the call; the library does that for its
// ready-made ufuncs (add, hypot, sqrt, gaussian_pdf, polar_to_cartesian, polar_distance), so those
// work on device arrays from any C++ file. A user op called on device arrays from a plain C++
// file throws usrecon::Error saying so, unless has_cuda_instantiation<Op> is specialized true
// (after a .cu file instantiates cuda_map for it). Without CUDA, device calls throw
// CudaUnavailable.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "usrecon/kernels/array.hpp"
#include "usrecon/kernels/math.hpp"
#include "usrecon/kernels/parallel.hpp"

namespace usrecon::kernels {

/// The arguments of one elementwise launch, after broadcasting and dimension collapsing. Plain
/// data: it is passed by value to the CUDA kernel. Strides are in elements, 0 where broadcast.
template <class T, std::size_t NOut, std::size_t NIn>
struct MapArgs {
  T* out[NOut];
  const T* in[NIn];  ///< nullptr: the input is the scalar `scalar[k]`
  T scalar[NIn];
  std::int64_t n;  ///< number of output elements
  int ndim;        ///< 1 when every operand is contiguous or broadcast from one value
  std::int64_t shape[max_dims];
  std::int64_t stride[NIn][max_dims];
};

// What a CUDA thread does for output element i (cuda/map.cuh), host-device so that CPU tests run
// it too: the inputs' offsets (contiguous calls multiply; broadcast calls unravel i over the
// collapsed shape, last dimension fastest), then the op on those inputs (a null input is its
// scalar) into every output.

/// Input offsets (elements) of output element i of a contiguous call (a.ndim == 1).
template <class T, std::size_t NOut, std::size_t NIn>
USRECON_HD inline void contiguous_offsets(const MapArgs<T, NOut, NIn>& a, std::int64_t i, std::int64_t (&off)[NIn]) {
  USRECON_UNROLL
  for (std::size_t k = 0; k < NIn; ++k) off[k] = i * a.stride[k][0];
}

/// Input offsets (elements) of output element i of a broadcast call (any a.ndim).
template <class T, std::size_t NOut, std::size_t NIn>
USRECON_HD inline void broadcast_offsets(const MapArgs<T, NOut, NIn>& a, std::int64_t i, std::int64_t (&off)[NIn]) {
  USRECON_UNROLL
  for (std::size_t k = 0; k < NIn; ++k) off[k] = 0;
  std::int64_t rem = i;
  for (int d = a.ndim - 1; d >= 0; --d) {
    const std::int64_t idx = rem % a.shape[d];
    rem /= a.shape[d];
    USRECON_UNROLL
    for (std::size_t k = 0; k < NIn; ++k) off[k] += idx * a.stride[k][d];
  }
}

/// The op's result r into output element i of every output.
template <class R, class T, std::size_t NOut, std::size_t NIn>
USRECON_HD inline void store_result(const MapArgs<T, NOut, NIn>& a, std::int64_t i, const R& r) {
  if constexpr (NOut == 1) {
    a.out[0][i] = r;
  } else {
    USRECON_UNROLL
    for (std::size_t j = 0; j < NOut; ++j) a.out[j][i] = r.value[j];
  }
}

/// op on the inputs at `off` into output element i of every output.
template <class Op, class T, std::size_t NOut, std::size_t NIn, std::size_t... K>
USRECON_HD inline void apply_element(const Op& op, const MapArgs<T, NOut, NIn>& a, std::int64_t i,
                                     const std::int64_t (&off)[NIn], std::index_sequence<K...>) {
  store_result(a, i, op((a.in[K] ? a.in[K][off[K]] : a.scalar[K])...));
}

/// Elements a CUDA thread of a contiguous call loads before the op runs on any of them, unless
/// the op says otherwise with a member `static constexpr int map_unroll`. The library's
/// trigonometric ops (polar_to_cartesian, polar_distance) say 1: long instruction sequences, not
/// memory-bound, and four elements at once took 64 and 110 registers in double (ptxas, sm_90),
/// against 40 and 44; every other op stays at or under 48.
inline constexpr int kMapUnroll = 4;
template <class Op>
inline constexpr int map_unroll_v = [] {
  if constexpr (requires { Op::map_unroll; })
    return int(Op::map_unroll);
  else
    return kMapUnroll;
}();

/// What one CUDA thread of a contiguous call (a.ndim == 1) does at grid-stride position i, with
/// `step` threads in the grid: elements i, i + step, ..., i + (map_unroll_v<Op> - 1) step (those
/// below n), every input of all of them loaded first, then the op and the stores, element by
/// element. Why: a memory-bound map needs many bytes in flight; one element a thread leaves NIn
/// loads of 4 or 8 bytes in flight, this map_unroll_v<Op> times as many, each still coalesced
/// across the warp. Each element's inputs are read before its outputs are written, as
/// apply_element does, so an output that is also an input (in place) gives the same result.
template <class Op, class T, std::size_t NOut, std::size_t NIn, std::size_t... K>
USRECON_HD inline void apply_contiguous_unrolled(const Op& op, const MapArgs<T, NOut, NIn>& a, std::int64_t i,
                                                 std::int64_t step, std::index_sequence<K...>) {
  constexpr int kUnroll = map_unroll_v<Op>;
  T v[static_cast<std::size_t>(kUnroll)][NIn] = {};  // zeros never used: only elements below n are loaded and computed
  USRECON_UNROLL
  for (int u = 0; u < kUnroll; ++u) {
    const std::int64_t e = i + u * step;
    if (e < a.n) {
      std::int64_t off[NIn];
      contiguous_offsets(a, e, off);
      ((v[u][K] = a.in[K] ? a.in[K][off[K]] : a.scalar[K]), ...);
    }
  }
  USRECON_UNROLL
  for (int u = 0; u < kUnroll; ++u) {
    const std::int64_t e = i + u * step;
    if (e < a.n) store_result(a, e, op(v[u][K]...));
  }
}

/// Threads a contiguous call needs to cover its n elements in one pass: one per map_unroll_v<Op>.
template <class Op>
inline std::int64_t map_contiguous_threads(std::int64_t n) {
  return (n + map_unroll_v<Op> - 1) / map_unroll_v<Op>;
}

/// Everything thread `thread` of a contiguous call's grid of `threads` threads does (the CUDA
/// kernel's whole body): apply_contiguous_unrolled at thread, thread + map_unroll_v<Op> threads,
/// and so on, so that the grid covers every element once, in one pass when it has
/// map_contiguous_threads(n) threads, in several when fewer.
template <class Op, class T, std::size_t NOut, std::size_t NIn>
USRECON_HD inline void map_contiguous_thread(const Op& op, const MapArgs<T, NOut, NIn>& a, std::int64_t thread,
                                             std::int64_t threads) {
  for (std::int64_t i = thread; i < a.n; i += map_unroll_v<Op> * threads)
    apply_contiguous_unrolled(op, a, i, threads, std::make_index_sequence<NIn>{});
}

namespace detail {

/// What Op returns for NIn arguments of type T (op_result_t), or NotInvocable where it takes no
/// such arguments: then the ufunc's own static_assert says so (an ill-formed invoke_result in the
/// middle of `outputs` gave pages of errors instead).
struct NotInvocable {};
template <class Op, class T, class Indices>
struct op_result {
  using type = NotInvocable;
};
template <class Op, class T, std::size_t... I>
  requires std::is_invocable_v<const Op&, decltype((void)I, std::declval<T>())...>
struct op_result<Op, T, std::index_sequence<I...>> {
  using type = std::invoke_result_t<const Op&, decltype((void)I, std::declval<T>())...>;
};

template <class R, class T>
struct output_count : std::integral_constant<std::size_t, 0> {};
template <class T>
struct output_count<T, T> : std::integral_constant<std::size_t, 1> {};
template <class T, std::size_t N>
struct output_count<Outputs<T, N>, T> : std::integral_constant<std::size_t, N> {};

template <class T, std::size_t NOut, std::size_t NIn>
MapArgs<T, NOut, NIn> make_map_args(const std::string& name, const std::array<Out<T>, NOut>& outs,
                                    const std::array<In<T>, NIn>& ins, Location& where) {
  // Where: every array operand in the same memory.
  bool host = false, device = false;
  for (const In<T>& x : ins) {
    host |= x.location == Location::host;
    device |= x.location == Location::device;
  }
  for (const Out<T>& y : outs) {
    host |= y.location == Location::host;
    device |= y.location == Location::device;
  }
  if (host && device)
    throw Error(name + ": host and device arrays mixed in one call; move them with to_device() "
                       "or copy_to_host() first");
  where = device ? Location::device : Location::host;

  std::array<Shape, NIn> shapes;
  for (std::size_t k = 0; k < NIn; ++k) shapes[k] = ins[k].shape;
  const Shape shape = broadcast_shapes(shapes, name);
  for (std::size_t j = 0; j < NOut; ++j)
    if (!(outs[j].shape == shape))
      throw Error(name + ": output " + std::to_string(j) + " has shape " +
                  outs[j].shape.to_string() + " but the inputs broadcast to " + shape.to_string());
  // An output may be an input element for element (in place: each element's inputs are read
  // before its outputs are written; the same memory with as many elements, (4,) as (1, 4), is
  // that), but no other overlap: a shifted or broadcast view of the output would read elements
  // already written (map_run's loop relies on it).
  for (std::size_t j = 0; j < NOut; ++j) {
    for (std::size_t k = 0; k < NIn; ++k) {
      const In<T>& x = ins[k];
      if (x.location != Location::scalar && detail::overlaps(outs[j].data, shape.size(), x.data, x.shape.size()) &&
          !(x.data == outs[j].data && x.shape.size() == shape.size()))
        throw Error(name + ": output " + std::to_string(j) + " overlaps input " + std::to_string(k) +
                    " other than element for element (in place); write to an array of its own");
    }
    for (std::size_t l = j + 1; l < NOut; ++l)
      if (detail::overlaps(outs[j].data, shape.size(), outs[l].data, shape.size()))
        throw Error(name + ": outputs " + std::to_string(j) + " and " + std::to_string(l) + " overlap");
  }

  MapArgs<T, NOut, NIn> a{};
  a.n = shape.size();
  for (std::size_t j = 0; j < NOut; ++j) a.out[j] = outs[j].data;
  // Full-rank strides, 0 along broadcast dimensions.
  const int nd = shape.ndim();
  std::int64_t stride[NIn][max_dims] = {};
  for (std::size_t k = 0; k < NIn; ++k) {
    a.in[k] = ins[k].location == Location::scalar ? nullptr : ins[k].data;
    a.scalar[k] = ins[k].value;
    const Shape& s = ins[k].shape;
    std::int64_t st = 1;
    for (int d = s.ndim() - 1; d >= 0; --d) {
      stride[k][nd - s.ndim() + d] = s[d] == 1 ? 0 : st;
      st *= s[d];
    }
  }
  // Drop extent-1 dimensions and merge neighbours every operand walks contiguously.
  a.ndim = 0;
  for (int d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    bool merge = a.ndim > 0;
    for (std::size_t k = 0; k < NIn && merge; ++k)
      merge = a.stride[k][a.ndim - 1] == stride[k][d] * shape[d];
    if (merge) {
      a.shape[a.ndim - 1] *= shape[d];
      for (std::size_t k = 0; k < NIn; ++k) a.stride[k][a.ndim - 1] = stride[k][d];
    } else {
      a.shape[a.ndim] = shape[d];
      for (std::size_t k = 0; k < NIn; ++k) a.stride[k][a.ndim] = stride[k][d];
      ++a.ndim;
    }
  }
  if (a.ndim == 0) {  // a single element
    a.ndim = 1;
    a.shape[0] = 1;
    for (std::size_t k = 0; k < NIn; ++k) a.stride[k][0] = 0;
  }
  return a;
}

/// One contiguous run of `len` outputs. Bit k of Mask set: input k is one value along the run.
/// No broadcast index math here, so GCC vectorizes the loop.
template <unsigned Mask, class Op, class T, std::size_t NOut, std::size_t NIn, std::size_t... K>
void map_run(const Op& op, const MapArgs<T, NOut, NIn>& a, std::int64_t out_off,
             const std::int64_t* in_off, std::int64_t len, std::index_sequence<K...>) {
  const T* p[NIn];
  T s[NIn];
  for (std::size_t k = 0; k < NIn; ++k) {
    p[k] = a.in[k] ? a.in[k] + in_off[k] : nullptr;
    s[k] = p[k] ? p[k][0] : a.scalar[k];
  }
  if constexpr (NOut == 1) {
    // No __restrict: in place (map_args's one allowed overlap) an input reads the output's memory,
    // which a __restrict output forbids. GCC versions the loop with a run-time overlap check that
    // passes for separate arrays and for the same one (a distance of 0 is safe: each element is
    // read before it is written), and vectorizes both (bench_kernels_cpu's in-place rows).
    T* o = a.out[0] + out_off;
    for (std::int64_t i = 0; i < len; ++i)
      o[i] = op(((Mask >> K) & 1u ? s[K] : p[K][i])...);
  } else {
    T* o[NOut];
    for (std::size_t j = 0; j < NOut; ++j) o[j] = a.out[j] + out_off;
    for (std::int64_t i = 0; i < len; ++i) {
      const Outputs<T, NOut> r = op(((Mask >> K) & 1u ? s[K] : p[K][i])...);
      for (std::size_t j = 0; j < NOut; ++j) o[j][i] = r.value[j];
    }
  }
}

template <class Op, class T, std::size_t NOut, std::size_t NIn, unsigned... M>
constexpr auto map_run_table(std::integer_sequence<unsigned, M...>) {
  using Fn = void (*)(const Op&, const MapArgs<T, NOut, NIn>&, std::int64_t, const std::int64_t*,
                      std::int64_t);
  return std::array<Fn, sizeof...(M)>{
      +[](const Op& op, const MapArgs<T, NOut, NIn>& a, std::int64_t o, const std::int64_t* i,
          std::int64_t len) {
        map_run<M>(op, a, o, i, len, std::make_index_sequence<NIn>{});
      }...};
}

/// The element type of a ufunc call: the first array's, else the scalars' common type.
template <class... A>
struct first_element {
  using type = void;
};
template <class A, class... R>
struct first_element<A, R...> {
  using type = std::conditional_t<!std::is_void_v<element_type_t<A>>, element_type_t<A>,
                                  typename first_element<R...>::type>;
};
template <class Tuple, class Seq>
struct call_value_type;
template <class Tuple, std::size_t... I>
struct call_value_type<Tuple, std::index_sequence<I...>> {
  using first = typename first_element<std::tuple_element_t<I, Tuple>...>::type;
  using type = typename std::conditional_t<
      std::is_void_v<first>,
      std::common_type<std::remove_cvref_t<std::tuple_element_t<I, Tuple>>...>,
      std::type_identity<first>>::type;
};

/// The element type's name in messages, as NumPy's dtype.
template <class T>
constexpr const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else return "another type";
}

/// A scalar operand converted to the arrays' element type T. Refused where T cannot hold it:
/// the conversion would be undefined behaviour (3e9, NaN or 1e300 into int32, 1e300 into float)
/// or another number (2^40 into int32 wraps). A fraction into an integer type is truncated toward
/// zero, as documented (int32 + 2.9 adds 2).
template <class T, class S>
T scalar_as(S v, const char* name) {
  bool fits = true;
  if constexpr (std::is_integral_v<T> && std::is_floating_point_v<S>) {
    // In S's own type (a long double past int64's range was judged as a double, and taken).
    const S bound = std::ldexp(S(1), std::numeric_limits<T>::digits);  // 2^31 or 2^63, exact
    const S whole = std::trunc(v);
    fits = whole >= -bound && whole < bound;  // false for NaN
  } else if constexpr (std::is_integral_v<T> && sizeof(S) > sizeof(std::intmax_t)) {
    // A wider integer (GNU's __int128): T's bounds converted to S exactly.
    fits = v >= static_cast<S>(std::numeric_limits<T>::min()) && v <= static_cast<S>(std::numeric_limits<T>::max());
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<S>) {
    fits = static_cast<std::intmax_t>(v) >= static_cast<std::intmax_t>(std::numeric_limits<T>::min()) &&
           static_cast<std::intmax_t>(v) <= static_cast<std::intmax_t>(std::numeric_limits<T>::max());
  } else if constexpr (std::is_integral_v<T>) {
    fits = static_cast<std::uintmax_t>(v) <= static_cast<std::uintmax_t>(std::numeric_limits<T>::max());
  } else if constexpr (std::is_floating_point_v<S> && sizeof(S) > sizeof(T)) {
    // What rounds to T's largest finite value fits (3.4028235e38, NumPy's float32 max as printed):
    // refused from there up, the largest plus half its ulp, where rounding gives an infinity.
    const S overflow = static_cast<S>(std::numeric_limits<T>::max()) +
                       std::ldexp(S(1), std::numeric_limits<T>::max_exponent - std::numeric_limits<T>::digits - 1);
    fits = !(std::fabs(v) >= overflow) || std::isinf(v);
  }
  if (!fits) {
    const auto number = [](double d) {
      char buffer[40];
      std::snprintf(buffer, sizeof buffer, "%.17g", d);
      return std::string(buffer);
    };
    std::string shown, range;
    if constexpr (std::is_floating_point_v<S>) shown = number(static_cast<double>(v));
    else if constexpr (sizeof(S) > sizeof(long long)) shown = "(a " + std::to_string(8 * sizeof(S)) + "-bit integer)";
    else if constexpr (std::is_signed_v<S>) shown = std::to_string(static_cast<long long>(v));
    else shown = std::to_string(static_cast<unsigned long long>(v));
    if constexpr (std::is_integral_v<T>)
      range = "its range is " + std::to_string(std::numeric_limits<T>::min()) + " to " +
              std::to_string(std::numeric_limits<T>::max());
    else
      range = "its largest finite value is " + number(static_cast<double>(std::numeric_limits<T>::max()));
    throw Error(std::string(name) + ": the scalar " + shown + " does not fit the arrays' element type " +
                dtype_name<T>() + " (" + range + "); NumPy would promote the arrays: convert them to a wider " +
                "type first");
  }
  return static_cast<T>(v);
}

}  // namespace detail

/// Runs the map on CPU threads (exec.threads; 0 = all). Header-only.
template <class Op, class T, std::size_t NOut, std::size_t NIn>
void cpu_map(const Op& op, const MapArgs<T, NOut, NIn>& a, int threads = 0) {
  if (a.n == 0) return;
  static constexpr auto table = detail::map_run_table<Op, T, NOut, NIn>(
      std::make_integer_sequence<unsigned, (1u << NIn)>{});
  const int nd = a.ndim;
  const std::int64_t inner = a.shape[nd - 1];
  unsigned mask = 0;
  for (std::size_t k = 0; k < NIn; ++k)
    if (a.stride[k][nd - 1] == 0) mask |= 1u << k;
  const auto run = table[mask];
  constexpr std::int64_t grain = 1 << 16;  // elements per task
  const int nthreads = a.n < 2 * grain ? 1 : threads;

  if (nd == 1) {  // contiguous: one long run, split into chunks
    parallel_for(static_cast<std::size_t>(a.n), grain, nthreads,
                 [&](std::size_t begin, std::size_t end) {
                   std::int64_t off[NIn > 0 ? NIn : 1];
                   for (std::size_t k = 0; k < NIn; ++k)
                     off[k] = static_cast<std::int64_t>(begin) * a.stride[k][0];
                   run(op, a, static_cast<std::int64_t>(begin), off,
                       static_cast<std::int64_t>(end - begin));
                 });
    return;
  }
  // Broadcast: one run per row of the innermost dimension.
  const std::int64_t rows = a.n / inner;
  const std::size_t rows_per_task = static_cast<std::size_t>(std::max<std::int64_t>(1, grain / inner));
  parallel_for(static_cast<std::size_t>(rows), rows_per_task, nthreads,
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t r = begin; r < end; ++r) {
                   std::int64_t off[NIn > 0 ? NIn : 1] = {};
                   std::int64_t rem = static_cast<std::int64_t>(r);
                   for (int d = nd - 2; d >= 0; --d) {
                     const std::int64_t i = rem % a.shape[d];
                     rem /= a.shape[d];
                     for (std::size_t k = 0; k < NIn; ++k) off[k] += i * a.stride[k][d];
                   }
                   run(op, a, static_cast<std::int64_t>(r) * inner, off, inner);
                 }
               });
}

#if defined(USRECON_HAVE_CUDA)
/// Runs the map with CUDA on `stream`. Defined in "usrecon/kernels/cuda/map.cuh" (include it in
/// the .cu file that uses a new op on device arrays); the library instantiates its own ufuncs.
template <class Op, class T, std::size_t NOut, std::size_t NIn>
void cuda_map(const Op& op, const MapArgs<T, NOut, NIn>& a, StreamView stream);
#else
template <class Op, class T, std::size_t NOut, std::size_t NIn>
void cuda_map(const Op&, const MapArgs<T, NOut, NIn>&, StreamView) {
  require_cuda("elementwise map on device arrays");
}
#endif

/// True for ops whose CUDA kernels some .cu file of the program instantiates explicitly (the
/// library's ops are). A C++ (not CUDA) file may call a ufunc on device arrays only for such ops;
/// specialize it for your op after instantiating cuda_map for it in a .cu file.
template <class Op>
inline constexpr bool has_cuda_instantiation = false;
template <>
inline constexpr bool has_cuda_instantiation<ops::Add> = true;
template <>
inline constexpr bool has_cuda_instantiation<ops::Hypot> = true;
template <>
inline constexpr bool has_cuda_instantiation<ops::Sqrt> = true;
template <>
inline constexpr bool has_cuda_instantiation<ops::GaussianPdf> = true;
template <>
inline constexpr bool has_cuda_instantiation<ops::PolarToCartesian> = true;
template <>
inline constexpr bool has_cuda_instantiation<ops::PolarDistance> = true;

/// The library's CUDA instantiations of its ufuncs, listed once: X(Op, T, NOut, NIn) for each
/// (internal: the macros work inside namespace usrecon::kernels only).
/// kernels/cuda/ufuncs.cu defines them; a CUDA build declares them extern here, so that a
/// consumer's translation units neither look for definitions they cannot see (clang's
/// -Wundefined-func-template) nor, compiled by nvcc, make their own.
#define USRECON_LIBRARY_CUDA_MAPS(X)                                                                \
  X(Add, float, 1, 2) X(Add, double, 1, 2) X(Add, std::int32_t, 1, 2) X(Add, std::int64_t, 1, 2)    \
  X(Hypot, float, 1, 2) X(Hypot, double, 1, 2)                                                      \
  X(Sqrt, float, 1, 1) X(Sqrt, double, 1, 1)                                                        \
  X(GaussianPdf, float, 1, 3) X(GaussianPdf, double, 1, 3)                                          \
  X(PolarToCartesian, float, 2, 2) X(PolarToCartesian, double, 2, 2)                                \
  X(PolarDistance, float, 1, 4) X(PolarDistance, double, 1, 4)
#define USRECON_CUDA_MAP_INSTANTIATION(PREFIX, Op, T, NOut, NIn) \
  PREFIX template void cuda_map<ops::Op, T, NOut, NIn>(const ops::Op&, const MapArgs<T, NOut, NIn>&, StreamView);
#if defined(USRECON_HAVE_CUDA)
#define USRECON_EXTERN_CUDA_MAP(Op, T, NOut, NIn) USRECON_CUDA_MAP_INSTANTIATION(extern, Op, T, NOut, NIn)
USRECON_LIBRARY_CUDA_MAPS(USRECON_EXTERN_CUDA_MAP)
#undef USRECON_EXTERN_CUDA_MAP
#endif

// In a file compiled by nvcc every op may run on the device (cuda/map.cuh defines the kernel);
// elsewhere only ops with has_cuda_instantiation. The flag is a template argument, so the CUDA
// and the C++ instantiations are distinct functions.
#if defined(__CUDACC__) || !defined(USRECON_HAVE_CUDA)
#define USRECON_MAP_DEVICE_CALLS true
#else
#define USRECON_MAP_DEVICE_CALLS false
#endif

/// Checks the operands and runs op elementwise where they live.
template <class Op, class T, std::size_t NOut, std::size_t NIn, bool DeviceCalls = USRECON_MAP_DEVICE_CALLS>
void run_map(const std::string& name, const Op& op, const std::array<Out<T>, NOut>& outs,
             const std::array<In<T>, NIn>& ins, const Exec& exec = {}) {
  static_assert(is_supported_type_v<T>, "element types: float, double, int32_t, int64_t");
  Location where{};
  const MapArgs<T, NOut, NIn> a = detail::make_map_args<T, NOut, NIn>(name, outs, ins, where);
  if (a.n == 0) return;
  if (where == Location::device) {
    if constexpr (DeviceCalls || has_cuda_instantiation<Op>)
      cuda_map<Op, T, NOut, NIn>(op, a, exec.stream);
    else
      throw Error(name + ": no CUDA kernel for this op in this file: call it on device arrays "
                         "from a .cu file that includes usrecon/kernels/cuda/map.cuh");
  } else {
    cpu_map<Op, T, NOut, NIn>(op, a, exec.threads);
  }
}

/// A vectorized function: Op's scalar operator() (NIn arguments of one type T, returning T or
/// Outputs<T, N>) applied elementwise with broadcasting. See the top of this header.
template <class Op, std::size_t NIn>
class Ufunc {
 public:
  static_assert(NIn >= 1 && NIn <= 6, "1 to 6 inputs");

  constexpr explicit Ufunc(const char* name, Op op = {}) : name_(name), op_(op) {}

  [[nodiscard]] const char* name() const noexcept { return name_; }
  [[nodiscard]] const Op& op() const noexcept { return op_; }

  /// Number of outputs for element type T.
  template <class T>
  static constexpr std::size_t outputs =
      detail::output_count<typename detail::op_result<Op, T, std::make_index_sequence<NIn>>::type, T>::value;

  template <bool DeviceCalls = USRECON_MAP_DEVICE_CALLS, class... Args>
  auto operator()(Args&&... args) const {
    constexpr std::size_t n = sizeof...(Args);
    constexpr bool has_exec = n > 0 && is_exec<Args...>();
    constexpr std::size_t m = has_exec ? n - 1 : n;
    static_assert(m >= NIn, "too few arguments for this ufunc");
    auto all = std::forward_as_tuple(std::forward<Args>(args)...);
    using T = typename detail::call_value_type<std::tuple<Args...>,
                                               std::make_index_sequence<m>>::type;
    static_assert(is_supported_type_v<T>, "element types: float, double, int32_t, int64_t");
    constexpr std::size_t nout = outputs<T>;
    static_assert(nout > 0, "the op is not defined for this element type (or does not return T "
                            "or Outputs<T, N>)");
    static_assert(m == NIn || m == NIn + nout,
                  "a ufunc call takes its inputs, then optionally all its outputs, then "
                  "optionally an Exec");
    Exec exec{};
    if constexpr (has_exec) exec = std::get<n - 1>(all);
    const auto ins = inputs<T>(all, name_, std::make_index_sequence<NIn>{});
    if constexpr (m == NIn + nout) {
      run_map<Op, T, nout, NIn, DeviceCalls>(name_, op_, outputs_of<T>(all, std::make_index_sequence<nout>{}),
                                ins, exec);
    } else {
      std::array<Shape, NIn> shapes;
      for (std::size_t k = 0; k < NIn; ++k) shapes[k] = ins[k].shape;
      const Shape shape = broadcast_shapes(shapes, name_);
      using A = std::conditional_t<any_device<std::tuple<Args...>>(std::make_index_sequence<NIn>{}),
                                   DeviceArray<T>, HostArray<T>>;
      // Where the new outputs live is decided here, at compile time, by the argument types: an
      // In<T>::device view says it only at run time.
      if constexpr (std::is_same_v<A, HostArray<T>>) {
        bool host = false, device = false;
        for (const In<T>& x : ins) {
          host |= x.location == Location::host;
          device |= x.location == Location::device;
        }
        if (host && device)  // said as the forms with outputs say it (it was the sentence below)
          throw Error(std::string(name_) + ": host and device arrays mixed in one call; move them with to_device() "
                                           "or copy_to_host() first");
        if (device)
          throw Error(std::string(name_) + ": an In<T>::device view among the inputs and no DeviceArray: "
                      "this form returns host arrays; pass the outputs (Out<T>::device) or a DeviceArray");
      }
      std::array<A, nout> result;
      std::array<Out<T>, nout> outs = make_outs<A, T>(result, std::make_index_sequence<nout>{},
                                                      shape);
      run_map<Op, T, nout, NIn, DeviceCalls>(name_, op_, outs, ins, exec);
      if constexpr (nout == 1)
        return std::move(result[0]);
      else
        return result;
    }
  }

 private:
  template <class... Args>
  static constexpr bool is_exec() {
    using Last = std::tuple_element_t<sizeof...(Args) - 1, std::tuple<Args...>>;
    return std::is_same_v<std::remove_cvref_t<Last>, Exec>;
  }

  template <class T, class A>
  static In<T> to_in(const A& x, const char* name) {
    using E = element_type_t<A>;
    if constexpr (std::is_void_v<E>) {
      static_assert(std::is_arithmetic_v<std::remove_cvref_t<A>>,
                    "ufunc inputs are HostArray, DeviceArray, In<T> or arithmetic scalars");
      return In<T>(detail::scalar_as<T>(x, name));
    } else {
      static_assert(std::is_same_v<E, T>, "all arrays of a ufunc call need the same element type");
      return In<T>(x);
    }
  }
  template <class T, class A>
  static Out<T> to_out(A&& y) {
    static_assert(std::is_same_v<element_type_t<A>, T>,
                  "outputs must be arrays of the inputs' element type");
    static_assert(!std::is_const_v<std::remove_reference_t<A>>, "outputs must be writable");
    return Out<T>(y);
  }
  template <class T, class Tuple, std::size_t... I>
  static std::array<In<T>, NIn> inputs(Tuple& t, const char* name, std::index_sequence<I...>) {
    return {to_in<T>(std::get<I>(t), name)...};
  }
  template <class T, class Tuple, std::size_t... J>
  static std::array<Out<T>, sizeof...(J)> outputs_of(Tuple& t, std::index_sequence<J...>) {
    return {to_out<T>(std::get<NIn + J>(t))...};
  }
  template <class Tuple, std::size_t... I>
  static constexpr bool any_device(std::index_sequence<I...>) {
    return (is_device_array_v<std::remove_cvref_t<std::tuple_element_t<I, Tuple>>> || ...);
  }
  template <class A, class T, std::size_t N, std::size_t... J>
  static std::array<Out<T>, N> make_outs(std::array<A, N>& r, std::index_sequence<J...>,
                                         const Shape& shape) {
    ((r[J] = A(shape)), ...);
    return {Out<T>(r[J])...};
  }

  const char* name_;
  Op op_;
};

/// Makes a Ufunc from an op object: vectorize<2>(MyOp{}, "my_op").
template <std::size_t NIn, class Op>
constexpr Ufunc<Op, NIn> vectorize(Op op, const char* name) {
  return Ufunc<Op, NIn>(name, op);
}

// The tutorial's ufuncs, ready-made (CPU and CUDA).
inline constexpr Ufunc<ops::Add, 2> add{"add"};
inline constexpr Ufunc<ops::Hypot, 2> hypot{"hypot"};
inline constexpr Ufunc<ops::Sqrt, 1> sqrt{"sqrt"};
inline constexpr Ufunc<ops::GaussianPdf, 3> gaussian_pdf{"gaussian_pdf"};
inline constexpr Ufunc<ops::PolarToCartesian, 2> polar_to_cartesian{"polar_to_cartesian"};
inline constexpr Ufunc<ops::PolarDistance, 4> polar_distance{"polar_distance"};

}  // namespace usrecon::kernels
