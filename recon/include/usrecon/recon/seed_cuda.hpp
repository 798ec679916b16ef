// The seed model on a CUDA GPU: the plan and per-thread program the kernel runs (host-device, so
// CPU tests run them too), and the beamformer that owns device tables, streams and buffers.
//
// Work split. One thread computes P pixels of one depth i (P = WorkSplit::pixels, kDefaultPixels
// unless asked otherwise): laterals j, j + 6, ..., j + 6 (P - 1). For pixel m, channel k and element n the distances are those of the
// offsets j - 6 (k - m) and j - 6 (n - m); with q = k - m and r = n - m every pixel of the thread
// reads the same table rows E(q) = dist(i, j - 6 q), so one index computation
// order(q, r) = round(E(q) + E(r)) serves all P pixels, each adding rf[q + m][order] +
// rf[r + m][order] (the (k, n) symmetry: q <= r, the diagonal once). A warp is 32 consecutive
// depths of one lateral (or 16 depths of two neighbouring laterals: WorkSplit::lateral_lanes), so table
// reads and output writes are coalesced and the 32 gathers of one channel lie within ~64 (~32)
// consecutive samples. A column slot's pairs may be split over two warps of the block by q
// (WorkSplit::pair_splits), which add their sums through shared memory: more warps, the same index
// work per pixel. More pixels per thread mean fewer index computations
// per pixel and fewer threads (so fewer waves of blocks) but more registers; which P is fastest
// is measured (bench_seed_cuda times every P of kPixelChoices), not assumed.
//
// Windows: the P samples a thread adds for one (q, order), rf[q + m][order] for m < P, lie side by
// side on the device, so that one to four 16-byte vector loads fetch them (a window is
// P * sizeof(sample) = 16 to 64 bytes):
//   windows[((q + P - 1) * stride + s) * P + m] = rf[q + m][s], zero where q + m is no channel,
// for q in [1 - P, channels) and s < stride (make_windows; window_element is the rule, shared by
// the host and the device). That is P copies of the channels (6.1 MB for the seed's frame in
// int16 at P = 8), built on the device per frame; in exchange a pair (q, r) costs two windows'
// loads for its 2 P points instead of 2 P scalar gathers. 32 neighbouring depths still read neighbouring samples:
// consecutive windows.
//
// Exactness (Precision::Double): as the CPU backend, the index is t' = e_q + e_r with
// e = dist * kScale (< 4e-12 from the seed's t); a lane whose t' is within kMargin of a
// half-integer recomputes the seed's own expression with seed::distance and seed::sample_index.
// Samples are integers (int16 or int32) and so are the sums (int32 when |rf| is small enough,
// int64 otherwise), so
// the order of accumulation does not matter and the result equals the seed's bit for bit.
//
// Precision::Single: float scaled distances and a float sum, rounded half to even. Plain float
// rounding alone is far from the seed (orders within ~2.5e-4 of a half-integer flip; measured on
// the CPU on data/example.txt: relative L2 ~2e-2, hundreds of times the 1e-4 target), so lanes
// within a guard band of a half-integer (~0.1% of them) recompute the seed's expression: the
// single path is exact too, and what it differs by is still measured (compare_images) and
// reported. Accumulation is exact in both.
//
// Sample storage: a frame whose samples all fit 16 bits (|rf| <= 32767, as ADC data of 12 to 16
// bits does) and whose sums fit int32 (always so up to 256 channels) is beamformed from int16
// windows; others from int32. The values, and so the integer sums, are the same; the bytes a
// warp's loads span halve (on an H200 int16 took the kernel from 5.08 to 4.76 ms a frame in
// single precision, before windows).
//
// Channels are zero-padded on the device past the largest order any pixel can reach, which is the
// seed's `order < samples` test without a comparison.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "usrecon/kernels/common.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/delay/seed.hpp"

namespace usrecon::recon::seed {

/// --precision: `Double` is bit-exact with the seed; `Single` is the float32 index fast path.
enum class Precision { Double, Single };
inline Precision parse_precision(std::string_view name) {
  if (name == "double") return Precision::Double;
  if (name == "single") return Precision::Single;
  throw Error("unknown precision '" + std::string(name) + "' (expected double or single)");
}
inline std::string to_string(Precision precision) {
  return precision == Precision::Double ? "double" : "single";
}

namespace gpu {

/// Pixels per thread (laterals 6 apart) unless asked otherwise. 8: the fastest of 4, 6 and 8 in
/// both precisions on an H200 before windows (bench_seed_cuda in tools/gpu-check.sh, 2026-12-04,
/// int32 samples: single 5.08 ms against 5.33 for 6 and 5.73 for 4; double 5.16 against 6.21 and
/// 5.89). bench_seed_cuda times every choice, in both precisions, on every run.
constexpr int kDefaultPixels = 8;
/// The pixels-per-thread counts the kernel is compiled for: powers of two, so that a window is
/// whole 16-byte vector loads. (4 was compiled until 2026-12-05: 1.3x slower than 8 on the H200
/// with every layout it was timed in, it gave its compile time to the loads-ahead splits.)
inline constexpr int kPixelChoices[] = {8, 16};
constexpr int kBlockDepths = 32;  ///< lanes of a warp (32 depths of one column-thread at 1 lateral lane)
constexpr int kBlockColumns = 4;  ///< warps per block
/// Lateral lanes L of a warp (WorkSplit::lateral_lanes): a warp is 32 / L consecutive depths of L
/// column-threads whose first laterals are neighbours (jj, jj + 1), the lateral fastest across
/// lanes. At L = 1 a warp's 32 depths read windows about 2 samples apart (two-way path: ~1.95
/// samples a grid step), so every other window of the lines they touch goes unused; at L = 2 the
/// neighbouring lateral's orders (within ~2 (sin q + sin r) of the first's) fall in the same
/// lines. Over random (depth, lateral, pair) of the seed's grid, a warp's two window loads touch
/// 7.1 and 4.0 distinct 128-byte lines at L = 1 and 2 (25.4 and 13.1 sectors; a pure-Python count
/// of the addresses, not a GPU measurement). The image is the same at every L; which is faster
/// is measured (bench_seed_cuda times both), not assumed.
inline constexpr int kLateralLaneChoices[] = {1, 2};
/// 1: the layout measured on an H200 (2026-12-04); L = 2 is not yet timed on a GPU.
constexpr int kDefaultLateralLanes = 1;
/// Pair splits S (WorkSplit::pair_splits): S warps of a block share one column slot, each taking the
/// pairs of its own range of q (split_range, about equal work), and the block adds their sums
/// through shared memory. At S = 1 the seed's frame is 912 blocks of 4 warps, 0.86 waves on an
/// H200 (27 warps a multiprocessor where 40 would fit at 48 registers): S = 2 doubles the warps
/// in flight without the registers or the index work per pixel that fewer pixels a thread cost.
/// The sums are integers, so the image is the same; which is faster is measured, not assumed.
inline constexpr int kPairSplitChoices[] = {1, 2};
/// 1: measured on an H200 (2026-12-04); S = 2 is not yet timed on a GPU.
constexpr int kDefaultPairSplits = 1;
/// Pairs a step of the per-thread program's bulk loop (WorkSplit::pair_step): all the step's table
/// loads, then its indices, then its window loads, so that the pairs' latencies overlap. Two
/// measured 9-17% faster than one on an H200 (2026-12-04). Four take more registers (ptxas, 16-bit
/// samples, P = 8: 56 single, with 12 bytes spilled, and 62 double, against 48 and 52 at two); at
/// one pair split the seed's 912 blocks need only 7 a multiprocessor, which up to 72 registers
/// allow, so the ILP would come at no occupancy there.
inline constexpr int kPairStepChoices[] = {2, 4};
/// 2: measured; 4 is not yet timed on a GPU.
constexpr int kDefaultPairStep = 2;
/// Steps of loads issued ahead (WorkSplit::loads_ahead). A bulk-loop step waits for its table
/// entries (distance table, 7-15 MB: L2), then, with the indices they give, for its window loads,
/// and its warps have nothing else to issue meanwhile. At 1, the next step's table loads are issued
/// before this step's indices, so only the windows' latency is waited for; at 2, the next step's
/// windows (and the table entries of the step after) are in flight while this step adds its own,
/// loaded a step before: the loop then waits on loads issued a whole step earlier, at the price
/// of a step's windows more in registers. Read from the SASS (docs/performance.md), the measured
/// default issues 52 instructions a pair, 1.5 ms of the frame's issue slots against 3.3 ms
/// measured, which points at latency; which is faster is for a GPU to say.
inline constexpr int kLoadsAheadChoices[] = {0, 1, 2};
/// 0: measured; 1 and 2 are not yet timed on a GPU.
constexpr int kDefaultLoadsAhead = 0;
/// The seconds-to-sample factor, in the CPU backend's operation order.
constexpr double kScale =
    Problem::kGridStepMm / Problem::kSoundSpeedMmPerUs * Problem::kSamplingMhz;
constexpr double kMagic = 6755399441055744.0;  ///< 1.5 * 2^52: x + kMagic rounds x, ties to even
constexpr float kMagicF = 12582912.0f;         ///< 1.5 * 2^23, the same for float (|x| < 2^22)
constexpr double kMargin = 1e-7;               ///< see the CPU backend: error < 4e-12

namespace detail {
inline int round_up(int x, int to) { return (x + to - 1) / to * to; }

[[noreturn]] inline void not_compiled(int value, const char* what, std::span<const int> compiled) {
  std::string list;
  for (const int c : compiled) list += (list.empty() ? "" : ", ") + std::to_string(c);
  throw Error("seed model (CUDA): " + std::to_string(value) + " " + what +
              " is not one of those compiled (" + list + ")");
}
/// Throws (not_compiled) unless value is one of `choices`, a dimension's choices array: the one
/// list of what is compiled in that dimension.
inline void require_choice(int value, std::span<const int> choices, const char* what) {
  if (std::find(choices.begin(), choices.end(), value) == choices.end()) not_compiled(value, what, choices);
}
}  // namespace detail

/// One way of splitting the work among threads (make_plan's and SeedCudaBeamformer's): the image
/// is the same for each, only the speed differs.
struct WorkSplit {
  int pixels = kDefaultPixels;
  int lateral_lanes = kDefaultLateralLanes;
  int pair_splits = kDefaultPairSplits;
  int pair_step = kDefaultPairStep;
  int loads_ahead = kDefaultLoadsAhead;
  bool operator==(const WorkSplit&) const = default;
  bool is_default() const { return *this == WorkSplit{}; }
  /// "P8 L1 S1 step 2 ahead 0", for messages.
  std::string name() const {
    return "P" + std::to_string(pixels) + " L" + std::to_string(lateral_lanes) + " S" +
           std::to_string(pair_splits) + " step " + std::to_string(pair_step) + " ahead " +
           std::to_string(loads_ahead);
  }
  /// "px8", then "_l<L>", "_s<S>", "_p<step>" and "_a<ahead>" where they are not the defaults: a
  /// benchmark key (so "px<P>" alone is the layout every earlier GPU run timed).
  std::string key() const {
    return "px" + std::to_string(pixels) +
           (lateral_lanes == kDefaultLateralLanes ? "" : "_l" + std::to_string(lateral_lanes)) +
           (pair_splits == kDefaultPairSplits ? "" : "_s" + std::to_string(pair_splits)) +
           (pair_step == kDefaultPairStep ? "" : "_p" + std::to_string(pair_step)) +
           (loads_ahead == kDefaultLoadsAhead ? "" : "_a" + std::to_string(loads_ahead));
  }
};

/// The work splits the kernel is compiled for, each a kernel in every precision and sample type:
/// a chosen list, not every combination of the choices (2 x 2 x 2 x 2 x 3 = 48 would double the
/// build). Every P, L, S and step without loads ahead (what was built to be timed first); a step
/// of table loads ahead at P = 8 with two pairs a step (ptxas, sm_90, 16-bit samples: 46 registers
/// single, 52 double, at one lane and one split, against 48 and 52), and at P = 16 with two pair
/// splits (the warps of P = 8 at half its index work); two steps ahead at P = 8, one pair split
/// (72 registers with 16 bytes spilled single: still 7 blocks a multiprocessor, one wave of the
/// seed's 912 blocks; 80 double and at two lanes: 6 blocks, 1.15 waves, occupancy traded for
/// loads in flight; with two pair splits it took 90 and with P = 16 136, so those are not built).
inline constexpr WorkSplit kCompiledSplits[] = {
    {8, 1, 1, 2, 0},  {16, 1, 1, 2, 0}, {8, 2, 1, 2, 0},  {16, 2, 1, 2, 0}, {8, 1, 2, 2, 0},
    {16, 1, 2, 2, 0}, {8, 2, 2, 2, 0},  {16, 2, 2, 2, 0}, {8, 1, 1, 4, 0},  {16, 1, 1, 4, 0},
    {8, 2, 1, 4, 0},  {16, 2, 1, 4, 0}, {8, 1, 2, 4, 0},  {16, 1, 2, 4, 0}, {8, 2, 2, 4, 0},
    {16, 2, 2, 4, 0}, {8, 1, 1, 2, 1},  {8, 2, 1, 2, 1},  {8, 1, 2, 2, 1},  {8, 2, 2, 2, 1},
    {16, 1, 2, 2, 1}, {8, 1, 1, 2, 2},  {8, 2, 1, 2, 2},
};

namespace detail {
template <std::size_t kIndex, class F>
decltype(auto) dispatch_split(const WorkSplit& split, F&& f) {
  constexpr WorkSplit kSplit = kCompiledSplits[kIndex];
  if (split == kSplit)
    return f(std::integral_constant<int, kSplit.pixels>{}, std::integral_constant<int, kSplit.lateral_lanes>{},
             std::integral_constant<int, kSplit.pair_splits>{}, std::integral_constant<int, kSplit.pair_step>{},
             std::integral_constant<int, kSplit.loads_ahead>{});
  if constexpr (kIndex + 1 < std::size(kCompiledSplits)) return dispatch_split<kIndex + 1>(split, std::forward<F>(f));
  else throw Error("seed model (CUDA): the work split " + split.name() + " is not one of those compiled (gpu::work_splits)");
}
}  // namespace detail

/// f(P, L, S, step, ahead), each a std::integral_constant, for a work split: the one place a
/// run-time split becomes the compile-time constants the per-thread program's registers need.
/// The split must be one of kCompiledSplits, else usrecon::Error, naming the first value outside
/// its dimension's choices if there is one, else the whole split.
template <class F>
decltype(auto) with_split(const WorkSplit& split, F&& f) {
  detail::require_choice(split.pixels, kPixelChoices, "pixels per thread");
  detail::require_choice(split.lateral_lanes, kLateralLaneChoices, "lateral lanes a warp");
  detail::require_choice(split.pair_splits, kPairSplitChoices, "pair splits");
  detail::require_choice(split.pair_step, kPairStepChoices, "pairs a step");
  detail::require_choice(split.loads_ahead, kLoadsAheadChoices, "steps of loads ahead");
  return detail::dispatch_split<0>(split, std::forward<F>(f));
}

/// Every work split the kernel is compiled for (kCompiledSplits), in that order.
inline std::vector<WorkSplit> work_splits() { return {std::begin(kCompiledSplits), std::end(kCompiledSplits)}; }

/// Sizes and layouts of one problem on the device, computed on the host. Column-threads:
/// c in [0, columns) has residue r = c / groups and group g = c % groups (neighbouring warps of a
/// block read neighbouring table rows); its pixels are window laterals 6 P g + r + 6 m, m < P.
/// Which thread of the launch is which (depth, column-thread): thread_position.
struct Plan {
  Problem p;
  Window w;
  WorkSplit split;  ///< pixels per thread P, lateral lanes L, pair splits S, pairs a step
  int q_split = 0;  ///< S = 2: the first q of the second split (split_range); S = 1: channels
  int ni_pad = 0;   ///< depths per table row: window depth rounded up to kBlockDepths
  int groups = 0;   ///< column groups per residue: ceil(nj / (6 P))
  int columns = 0;  ///< 6 * groups column-threads
  int dj_min = 0;   ///< lateral offset of table row 0
  int rows = 0;     ///< table rows: every offset j - 6 q any thread reads
  int stride = 0;   ///< ints per zero-padded channel on the device (> any reachable order)
  int grid_x = 0, grid_y = 0;  ///< launch grid; blocks are kBlockDepths x kBlockColumns threads
  int lane_columns = 0;        ///< column slots: columns / L, each S warps (thread_position)
  std::size_t table_size() const { return std::size_t(rows) * ni_pad; }
  /// ints of the zero-padded channels on the device (rf[k * stride + s]).
  std::size_t rf_size() const { return std::size_t(p.channels) * stride; }
  /// Windows of P samples: (channels + P - 1) * stride (see the header's comment).
  std::size_t window_count() const { return std::size_t(p.channels + split.pixels - 1) * stride; }
  /// Samples of the windowed layout: window_count() * P.
  std::size_t windows_size() const { return window_count() * std::size_t(split.pixels); }
};

/// The plan for a problem and window with a work split (throws usrecon::Error when they are
/// invalid, or the split is not one the kernel is compiled for).
inline Plan make_plan(const Problem& problem, const Window& window, const WorkSplit& split = {}) {
  if (problem.nz <= 0 || problem.nx <= 0 || problem.channels <= 0 || problem.samples <= 0 ||
      problem.nz > 16384 || problem.nx > 16384 || problem.channels > 1024 ||
      problem.samples > (1 << 24))
    throw Error("seed model (CUDA): grid, channel or sample count out of range");
  if (window.ni <= 0 || window.nj <= 0 || window.i0 < 0 || window.j0 < 0 ||
      window.i0 + window.ni > problem.nz || window.j0 + window.nj > problem.nx)
    throw Error("seed model (CUDA): the window is empty or outside the grid");
  const int pixels = split.pixels, lateral_lanes = split.lateral_lanes, pair_splits = split.pair_splits;
  with_split(split, [](auto...) {});  // throws unless compiled for
  constexpr int kStep = Problem::kElementStep;
  Plan plan;
  plan.p = problem;
  plan.w = window;
  plan.split = split;
  plan.ni_pad = detail::round_up(window.ni, kBlockDepths);
  plan.groups = (window.nj + kStep * pixels - 1) / (kStep * pixels);
  plan.columns = kStep * plan.groups;
  // Offsets j - 6 q for window laterals j (padded to whole groups) and q in [1 - P, channels).
  plan.dj_min = window.j0 - kStep * (problem.channels - 1);
  const int dj_max = window.j0 + kStep * pixels * plan.groups - 1;
  plan.rows = dj_max - plan.dj_min + 1;
  // The largest order: the farthest table entry twice, plus rounding (float adds at most one).
  const int i_max = window.i0 + plan.ni_pad - 1;
  const int dj_far = std::max(std::abs(plan.dj_min), std::abs(dj_max));
  const double t_max = 2.0 * distance(i_max, dj_far) * kScale;
  plan.stride = detail::round_up(std::max(problem.samples, int(std::ceil(t_max)) + 3), 32);
  // A warp is 32 / L depths of L column-threads (thread_position): L divides both 32 and the 6
  // residues, and ni_pad is a multiple of 32.
  plan.lane_columns = plan.columns / lateral_lanes;
  plan.grid_x = plan.ni_pad / (kBlockDepths / lateral_lanes);
  const int slots_per_block = kBlockColumns / pair_splits;
  plan.grid_y = (plan.lane_columns + slots_per_block - 1) / slots_per_block;
  // The pairs (q, r >= q), q in [1 - P, channels): q takes channels - q of them. The second split
  // starts at the first q by which the first has at least half.
  plan.q_split = problem.channels;
  if (pair_splits == 2) {
    std::int64_t total = 0, before = 0;
    for (int q = 1 - pixels; q < problem.channels; ++q) total += problem.channels - q;
    int q = 1 - pixels;
    while (q < problem.channels && 2 * before < total) before += problem.channels - q++;
    plan.q_split = q;
  }
  // The per-thread program indexes the table and the windows with 32-bit ints.
  if (plan.table_size() > std::size_t(INT32_MAX) || plan.window_count() > std::size_t(INT32_MAX))
    throw Error("seed model (CUDA): the distance table or the channels' windows are more than 2^31 - 1, "
                "past the kernel's 32-bit index");
  return plan;
}

/// The depth ir (< ni_pad) and column-thread c (< columns) of thread (tx, ty) of block (bx, by),
/// at kLanes lateral lanes a warp; false for the threads past the last column slot. Slot
/// s (kSplits warps; s = by * kBlockColumns + ty at one split) holds the column-threads of residues L (s / groups) + l,
/// l < L, of group s % groups: first laterals jj + l, neighbours (first_lateral); lane tx takes
/// l = tx % L and depth bx * 32 / L + tx / L. At L = 1 this is c = s, the warp 32 depths of it.
/// The kernel finds its pixels here; the CPU tests walk the launch grid with it.
/// With kSplits pair splits a block holds kBlockColumns / kSplits slots: warp ty takes slot
/// by * kBlockColumns / kSplits + ty / kSplits and split ty % kSplits (the q range of split_range).
template <int kLanes, int kSplits = 1>
USRECON_HD inline bool thread_position(int bx, int by, int tx, int ty, int groups, int lane_columns,
                                       int& ir, int& c, int* split = nullptr) {
  static_assert(kBlockDepths % kLanes == 0 && Problem::kElementStep % kLanes == 0);
  static_assert(kBlockColumns % kSplits == 0);
  const int slot = by * (kBlockColumns / kSplits) + ty / kSplits;
  if (split) *split = ty % kSplits;
  if (slot >= lane_columns) return false;
  ir = bx * (kBlockDepths / kLanes) + tx / kLanes;
  const int residue = kLanes * (slot / groups) + tx % kLanes;
  c = residue * groups + slot % groups;
  return true;
}

/// The q range [begin, end) of pair split `split` of `splits` (Plan::q_split divides them).
template <int kPixels>
USRECON_HD inline void split_range(int split, int splits, int channels, int q_split, int& begin, int& end) {
  begin = split == 0 ? 1 - kPixels : q_split;
  end = split == splits - 1 ? channels : q_split;
}

/// Host copies of the tables the device holds: scaled[row * ni_pad + ir] = distance(i0 + ir,
/// dj_min + row) * kScale, in double (Precision::Double) or rounded to float (Single).
template <class Real>
std::vector<Real> make_table(const Plan& plan) {
  std::vector<Real> table(plan.table_size());
  for (int row = 0; row < plan.rows; ++row)
    for (int ir = 0; ir < plan.ni_pad; ++ir)
      table[std::size_t(row) * plan.ni_pad + ir] =
          static_cast<Real>(distance(plan.w.i0 + ir, plan.dj_min + row) * kScale);
  return table;
}

/// How one frame is stored and summed on the device, chosen from its largest |sample|:
/// int32 sums when channels^2 terms cannot overflow them, int16 samples when every sample fits
/// 16 bits and the sums are int32 (the kernels are compiled for int16 samples with int32 sums,
/// int32 samples with int32 sums, and int32 samples with int64 sums).
struct FrameTypes {
  bool int32_sums = true;
  bool int16_samples = true;
};
inline FrameTypes frame_types(int channels, std::span<const std::int32_t> rf) {
  std::int64_t max_abs = 0;
  for (const std::int32_t v : rf) max_abs = std::max<std::int64_t>(max_abs, std::llabs(v));
  FrameTypes types;
  types.int32_sums = max_abs <= std::int64_t{2147483647} / (std::int64_t(channels) * channels);
  types.int16_samples = types.int32_sums && max_abs <= 32767;
  return types;
}

/// The zero-padded device layout of one frame: rf[k * samples + s] -> out[k * stride + s].
inline void pad_channels(const Plan& plan, std::span<const std::int32_t> rf,
                         std::span<std::int32_t> out) {
  if (rf.size() != std::size_t(plan.p.channels) * plan.p.samples || out.size() != plan.rf_size())
    throw Error("seed model (CUDA): pad_channels: wrong sizes");
  std::fill(out.begin(), out.end(), 0);
  for (int k = 0; k < plan.p.channels; ++k)
    std::copy_n(rf.begin() + std::ptrdiff_t(k) * plan.p.samples, plan.p.samples,
                out.begin() + std::ptrdiff_t(k) * plan.stride);
}

/// Element e of the windowed layout (the header's comment) from the zero-padded channels
/// padded[k * stride + s]: window (qi, s) = e / pixels holds channel qi - (pixels - 1) + m,
/// m = e % pixels, at sample s, or zero where that is no channel. The device's make_windows
/// kernel and the host's make_windows both take every element from here.
USRECON_HD inline std::int32_t window_element(const std::int32_t* padded, int channels, int stride,
                                              int pixels, std::int64_t e) {
  const std::int64_t window = e / pixels;
  const int m = static_cast<int>(e % pixels);
  const int qi = static_cast<int>(window / stride), s = static_cast<int>(window % stride);
  const int channel = qi - (pixels - 1) + m;
  return channel >= 0 && channel < channels ? padded[std::int64_t(channel) * stride + s] : 0;
}

/// The windowed layout of one frame (Plan::windows_size() samples) as Sample: int16 only for
/// frames whose frame_types say so (the values must fit).
template <class Sample>
std::vector<Sample> make_windows(const Plan& plan, std::span<const std::int32_t> rf) {
  std::vector<std::int32_t> padded(plan.rf_size());
  pad_channels(plan, rf, padded);
  std::vector<Sample> windows(plan.windows_size());
  for (std::size_t e = 0; e < windows.size(); ++e)
    windows[e] = static_cast<Sample>(
        window_element(padded.data(), plan.p.channels, plan.stride, plan.split.pixels, std::int64_t(e)));
  return windows;
}

template <class T>
USRECON_HD inline T load(const T* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

/// round(e_q + e_r) half to even, exact (the seed's index) in double. `exact` recomputes.
USRECON_HD inline int order_f64(double eq, double er, int i, int dj_q, int dj_r) {
  const double t = eq + er;
  const double y = t + kMagic;
#if defined(__CUDA_ARCH__)
  int order = __double2loint(y);
#else
  int order = static_cast<int>(static_cast<std::uint32_t>(std::bit_cast<std::uint64_t>(y)));
#endif
  const double off = fabs(t - (y - kMagic));
  if (off > 0.5 - kMargin) order = sample_index(distance(i, dj_q), distance(i, dj_r));
  return order;
}

/// The single-precision index: round(e_q + e_r) in float, half to even. With kGuard, a lane
/// whose float sum may round otherwise than the seed's t recomputes the seed's own expression, so
/// the result is still exact: the float sum is within 2^-23 t of the exact one (each scaled
/// distance rounded to float is off by at most 2^-24 of itself, the float addition by 2^-24 t,
/// the double values by < 1e-15 t), and the guard band is twice that.
template <bool kGuard>
USRECON_HD inline int order_f32(float eq, float er, int i, int dj_q, int dj_r) {
  const float t = eq + er;
  const float y = t + kMagicF;
#if defined(__CUDA_ARCH__)
  int order = __float_as_int(y) - __float_as_int(kMagicF);
#else
  int order =
      static_cast<int>(std::bit_cast<std::uint32_t>(y) - std::bit_cast<std::uint32_t>(kMagicF));
#endif
  if constexpr (kGuard) {
    const float off = fabsf(t - (y - kMagicF));  // exact: |t - round(t)| <= 0.5
    if (off > 0.5f - (t * 0x1p-22f + 1e-6f))
      order = sample_index(distance(i, dj_q), distance(i, dj_r));
  }
  return order;
}

/// 32-bit words of a window of kCount samples.
template <int kCount, class Sample>
inline constexpr int kWindowWords = kCount * int(sizeof(Sample)) / 4;

/// The kCount samples of one window at p (kCount * sizeof(Sample) bytes, a multiple of 16, as
/// aligned) as 32-bit words, in one or more 16-byte vector loads on the GPU.
template <int kCount, class Sample>
USRECON_HD inline void load_window_words(const Sample* p, std::uint32_t (&w)[kWindowWords<kCount, Sample>]) {
  constexpr int kBytes = kCount * int(sizeof(Sample));
  static_assert(kBytes % 16 == 0, "windows are whole 16-byte vectors");
#if defined(__CUDA_ARCH__)
  USRECON_UNROLL
  for (int c = 0; c < kBytes / 16; ++c) {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(p) + c);
    w[4 * c] = u.x, w[4 * c + 1] = u.y, w[4 * c + 2] = u.z, w[4 * c + 3] = u.w;
  }
#else
  std::memcpy(w, p, kBytes);
#endif
}

/// A window's words taken apart into its samples (little-endian, as both the GPU and x86-64
/// are): the same code on both sides.
template <int kCount, class Sample>
USRECON_HD inline void unpack_window(const std::uint32_t (&w)[kWindowWords<kCount, Sample>], Sample (&v)[kCount]) {
  USRECON_UNROLL
  for (int m = 0; m < kCount; ++m) {
    if constexpr (sizeof(Sample) == 2)
      v[m] = static_cast<Sample>(static_cast<std::uint16_t>(w[m / 2] >> (16 * (m % 2))));
    else
      v[m] = static_cast<Sample>(w[m]);
  }
}

/// The kCount samples of one window at p: load_window_words, then unpack_window.
template <int kCount, class Sample>
USRECON_HD inline void load_window(const Sample* p, Sample (&v)[kCount]) {
  std::uint32_t w[kWindowWords<kCount, Sample>];
  load_window_words<kCount>(p, w);
  unpack_window<kCount>(w, v);
}

/// Everything one thread reads. Pointers are device pointers on the GPU, host ones on the CPU.
/// Sample: std::int32_t, or std::int16_t for frames that fit (frame_types).
template <class Real, class Sample = std::int32_t>
struct Args {
  const Real* table;        ///< Plan::table_size() scaled distances
  const Sample* windows;    ///< Plan::windows_size() samples, the windowed layout
  int ni_pad, dj_min, stride, channels, i0, j0;
};

/// Column-thread c's first window lateral jj (residue c / groups, group c % groups); its pixels
/// are jj + 6 m, m < kPixels.
template <int kPixels>
USRECON_HD inline int first_lateral(int c, int groups) {
  return Problem::kElementStep * kPixels * (c % groups) + c / groups;
}

/// The per-thread program: pixels (ir, jj + 6 m), m < kPixels, of column-thread c, into acc[m].
/// Real = double is the exact path, float the single-precision one (kGuard: exact too; without
/// it, plain float rounding). Acc is int or long long.
///
/// Shaped for what it costs on the GPU (sm_90 SASS, docs/performance.md): a pair (q, r) is one
/// index computation and two window loads (load_window) for its 2 kPixels points; indices are
/// 32-bit ints (make_plan keeps the table and the windows under 2^31), so that a window's address
/// is one multiply-add; the pairs whose pixels all have both channels (q >= 0, r + kPixels <=
/// channels: nearly all) run without per-pixel checks; and the diagonal r = q (each channel once,
/// the windows' zeros standing for channels that do not exist) is taken apart instead of tested
/// in every pair. The sums are the same integers.
/// The pairs with q in [q_begin, q_end) only (split_range); all of them by default. kPairStep
/// pairs a step of the bulk loop (WorkSplit::pair_step).
template <int kPixels, class Real, bool kGuard, int kPairStep = kDefaultPairStep, int kLoadsAhead = 0, class Sample,
          class Acc>
USRECON_HD inline void thread_pixels(const Args<Real, Sample>& a, int ir, int jj, Acc (&acc)[kPixels],
                                     int q_begin = 1 - kPixels, int q_end = INT32_MAX) {
  for (int m = 0; m < kPixels; ++m) acc[m] = 0;
  constexpr int kStep = Problem::kElementStep;
  const int i = a.i0 + ir;
  const int j = a.j0 + jj;
  // Table entry of offset j - 6 q at depth ir: row0 - q * row_step (q one less: 6 rows up).
  const int row0 = (j - a.dj_min) * a.ni_pad + ir;
  const int row_step = kStep * a.ni_pad;
  const auto order_of = [&](Real eq, Real er, int q, int r) {
    if constexpr (sizeof(Real) == sizeof(double))
      return order_f64(eq, er, i, j - kStep * q, j - kStep * r);
    else
      return order_f32<kGuard>(eq, er, i, j - kStep * q, j - kStep * r);
  };
  const int last_full = a.channels - kPixels;  // the last r for which channel r + m exists for every m
  // Window (q, order) is number (q + kPixels - 1) * stride + order: the channels q + m, m < kPixels.
  const auto window = [&](int first, int order) {
    return a.windows + std::ptrdiff_t(first + order) * kPixels;
  };
  const int q_stop = q_end < a.channels ? q_end : a.channels;
  for (int q = q_begin; q < q_stop; ++q) {
    const Real eq = load(a.table + (row0 - q * row_step));
    const int first_q = (q + kPixels - 1) * a.stride;
    {  // r = q: pixel m adds channel q + m once
      Sample v[kPixels];
      load_window(window(first_q, order_of(eq, eq, q, q)), v);
      USRECON_UNROLL
      for (int m = 0; m < kPixels; ++m) acc[m] += Acc(v[m]);
    }
    int r = q + 1, first_r = first_q + a.stride;
    if (q >= 0) {
      // Channels q + m and r + m exist for every m. kPairStep pairs a step: all their table loads
      // first, then their indices, then all their window loads, so that one pair's latencies
      // (table, then windows) overlap the others' instead of following them. With kLoadsAhead,
      // the loads of the steps after this one are issued before this step waits on its own
      // (WorkSplit::loads_ahead).
      using StepSamples = Sample[kPairStep][kPixels];
      const auto add_samples = [&](const StepSamples& vq, const StepSamples& vr) {
        USRECON_UNROLL
        for (int m = 0; m < kPixels; ++m) {
          Acc step = Acc(vq[0][m]) + Acc(vr[0][m]);
          USRECON_UNROLL
          for (int k = 1; k < kPairStep; ++k) step += Acc(vq[k][m]) + Acc(vr[k][m]);
          acc[m] += step;
        }
      };
      if constexpr (kLoadsAhead == 0) {  // the code measured on the H200 (2026-12-04), as it was
        for (; r + kPairStep - 1 <= last_full; r += kPairStep, first_r += kPairStep * a.stride) {
          Real er[kPairStep];
          USRECON_UNROLL
          for (int k = 0; k < kPairStep; ++k) er[k] = load(a.table + (row0 - (r + k) * row_step));
          int order[kPairStep];
          USRECON_UNROLL
          for (int k = 0; k < kPairStep; ++k) order[k] = order_of(eq, er[k], q, r + k);
          StepSamples vq, vr;
          USRECON_UNROLL
          for (int k = 0; k < kPairStep; ++k) {
            load_window(window(first_q, order[k]), vq[k]);
            load_window(window(first_r + k * a.stride, order[k]), vr[k]);
          }
          add_samples(vq, vr);
        }
      } else {  // loads ahead: the steps' table entries and windows, as words
        const int steps = r + kPairStep - 1 <= last_full ? (last_full - r + 1) / kPairStep : 0;
        // The table entries of pairs (q, r + k), k < kPairStep. A step past the last reads rows of
        // channels past last_full, and the last channel's for any r + k past it (valid rows it
        // never uses): the loads ahead need no test.
        const auto table_step = [&](int first, Real (&er)[kPairStep]) {
          USRECON_UNROLL
          for (int k = 0; k < kPairStep; ++k)
            er[k] = load(a.table + (row0 - (first + k < a.channels ? first + k : a.channels - 1) * row_step));
        };
        // The step's indices, then its windows, as words: q's and those of r + k. A step's
        // windows stay words until they are added: held unpacked across a step, they took twice
        // the registers and a copy. Only two steps ahead are windows loaded for a step past the
        // last: those of the last channel (one step ahead, windows_step loads this step's).
        const auto pair_r = [&](int rk) { return kLoadsAhead == 2 && rk >= a.channels ? a.channels - 1 : rk; };
        constexpr int kWords = kWindowWords<kPixels, Sample>;
        using StepWords = std::uint32_t[kPairStep][2][kWords];  // [pair][q's, r's window][word]
        const auto windows_step = [&](int first, const Real (&er)[kPairStep], StepWords& w) {
          int order[kPairStep];
          USRECON_UNROLL
          for (int k = 0; k < kPairStep; ++k) order[k] = order_of(eq, er[k], q, pair_r(first + k));
          USRECON_UNROLL
          for (int k = 0; k < kPairStep; ++k) {
            load_window_words<kPixels>(window(first_q, order[k]), w[k][0]);
            load_window_words<kPixels>(window((pair_r(first + k) + kPixels - 1) * a.stride, order[k]), w[k][1]);
          }
        };
        const auto add_step = [&](const StepWords& w) {
          StepSamples vq, vr;
          USRECON_UNROLL
          for (int k = 0; k < kPairStep; ++k) {
            unpack_window<kPixels>(w[k][0], vq[k]);
            unpack_window<kPixels>(w[k][1], vr[k]);
          }
          add_samples(vq, vr);
        };
        if constexpr (kLoadsAhead == 1) {
          // The next step's table entries are in flight while this step waits on its windows.
          Real er_next[kPairStep];
          if (steps > 0) table_step(r, er_next);
          for (int s = 0; s < steps; ++s, r += kPairStep) {
            Real er[kPairStep];
            USRECON_UNROLL
            for (int k = 0; k < kPairStep; ++k) er[k] = er_next[k];
            table_step(r + kPairStep, er_next);
            StepWords w;
            windows_step(r, er, w);
            add_step(w);
          }
        } else {
          // The next step's windows and the one after's table entries are in flight while this
          // step adds its own, loaded a step before. Two steps an iteration, their windows in
          // `even` and `odd` by turns, so that no step's words are copied.
          static_assert(kLoadsAhead == 2, "loads ahead: 0, 1 or 2 steps");
          if (steps > 0) {
            Real er[kPairStep];
            StepWords even, odd;
            table_step(r, er);
            windows_step(r, er, even);
            table_step(r + kPairStep, er);
            int s = 0;
            for (; s + 1 < steps; s += 2, r += 2 * kPairStep) {
              windows_step(r + kPairStep, er, odd);  // step s + 1
              table_step(r + 2 * kPairStep, er);     // step s + 2
              add_step(even);                        // step s
              windows_step(r + 2 * kPairStep, er, even);
              table_step(r + 3 * kPairStep, er);
              add_step(odd);
            }
            if (s < steps) {  // the last step, its windows loaded
              add_step(even);
              r += kPairStep;
            }
          }
        }
        first_r = (r + kPixels - 1) * a.stride;
      }
      // The pairs left (fewer than kPairStep, up to r == last_full) go to the loop below, whose
      // checks they pass.
    }
    // Some pixel lacks channel q + m (q < 0) or r + m (the last r): a pair adds for pixel m only
    // when both channels exist (a zero in one window must not let the other's sample in).
    for (; r < a.channels; ++r, first_r += a.stride) {
      const int order = order_of(eq, load(a.table + (row0 - r * row_step)), q, r);
      Sample vq[kPixels], vr[kPixels];
      load_window(window(first_q, order), vq);
      load_window(window(first_r, order), vr);
      USRECON_UNROLL
      for (int m = 0; m < kPixels; ++m)
        if (q + m >= 0 && r + m < a.channels) acc[m] += Acc(vq[m]) + Acc(vr[m]);
    }
  }
}

/// Runs the kernel's per-thread program for every thread of the launch grid on the CPU (threads =
/// 0: all cores), each finding its pixels and its pairs' q range with thread_position and
/// split_range as the kernel does, adds the pair splits' sums as the kernel's blocks do, and
/// writes the image out[jj * ni + ir] exactly as the GPU would. `windows` is make_windows' output.
template <class Real, bool kGuard = true, class Sample>
void run_plan_on_cpu(const Plan& plan, std::span<const Real> table, std::span<const Sample> windows,
                     bool int32_sums, std::span<double> out, int threads = 0) {
  if (windows.size() != plan.windows_size() || table.size() != plan.table_size())
    throw Error("seed model (CUDA): run_plan_on_cpu: wrong table or windows size");
  if (out.size() != std::size_t(plan.w.ni) * plan.w.nj)
    throw Error("seed model (CUDA): run_plan_on_cpu: wrong output size");
  const Args<Real, Sample> a{table.data(), windows.data(), plan.ni_pad, plan.dj_min, plan.stride,
                             plan.p.channels, plan.w.i0, plan.w.j0};
  // Each pixel's sum over its column slot's splits (a pixel belongs to one slot, so to one block
  // row: the block rows below never share one).
  std::vector<long long> sums(out.size(), 0);
  std::vector<unsigned char> written(out.size(), 0);  // pixels no thread writes keep out's values
  // The split's constants, as the kernel takes them (with_split: only the compiled splits).
  with_split(plan.split, [&](auto pixels, auto lanes, auto splits, auto step, auto ahead) {
    constexpr int kPixels = decltype(pixels)::value, kLanes = decltype(lanes)::value;
    constexpr int kSplits = decltype(splits)::value, kPairStep = decltype(step)::value;
    constexpr int kAhead = decltype(ahead)::value;
    // Thread (ir, c) of split `split`: its pairs' sums, added to its pixels'.
    const auto run_thread = [&](int ir, int c, int split) {
      const int jj = first_lateral<kPixels>(c, plan.groups);
      int q_begin, q_end;
      split_range<kPixels>(split, kSplits, plan.p.channels, plan.q_split, q_begin, q_end);
      long long acc64[kPixels];
      if (int32_sums) {
        int acc32[kPixels];
        thread_pixels<kPixels, Real, kGuard, kPairStep, kAhead>(a, ir, jj, acc32, q_begin, q_end);
        for (int m = 0; m < kPixels; ++m) acc64[m] = acc32[m];
      } else {
        thread_pixels<kPixels, Real, kGuard, kPairStep, kAhead>(a, ir, jj, acc64, q_begin, q_end);
      }
      for (int m = 0; m < kPixels; ++m) {
        const int col = jj + Problem::kElementStep * m;
        if (col < plan.w.nj) {
          sums[std::size_t(col) * plan.w.ni + ir] += acc64[m];
          written[std::size_t(col) * plan.w.ni + ir] = 1;
        }
      }
    };
    kernels::parallel_for(std::size_t(plan.grid_y), 1, threads, [&](std::size_t b, std::size_t e) {
      for (int by = int(b); by < int(e); ++by)
        for (int ty = 0; ty < kBlockColumns; ++ty)
          for (int bx = 0; bx < plan.grid_x; ++bx)
            for (int tx = 0; tx < kBlockDepths; ++tx) {
              int ir, c, split;
              // Past the last column slot, or a padding depth (computed there, never written).
              if (thread_position<kLanes, kSplits>(bx, by, tx, ty, plan.groups, plan.lane_columns, ir, c, &split) &&
                  ir < plan.w.ni)
                run_thread(ir, c, split);
            }
    });
  });
  for (std::size_t k = 0; k < out.size(); ++k)
    if (written[k]) out[k] = double(sums[k]);
}

/// The GPU's result for `precision`, computed on the CPU through the same plan, tables and thread
/// program (slow: the reference for GPU tests, and the CPU measurement of the single-precision
/// error).
inline void beamform_gpu_model(std::span<const std::int32_t> rf, const Problem& problem,
                               const Window& window, Precision precision, std::span<double> out,
                               int threads = 0, bool guard = true, const WorkSplit& split = {}) {
  const Plan plan = make_plan(problem, window, split);
  if (out.size() != std::size_t(window.ni) * window.nj)
    throw Error("seed model (CUDA): output has the wrong size");
  // The sample storage and sums the GPU would take for this frame.
  const FrameTypes types = frame_types(problem.channels, rf);
  const auto run = [&]<class Sample>(const std::vector<Sample>& windows) {
    const std::span<const Sample> w(windows);
    if (precision == Precision::Double)
      run_plan_on_cpu<double>(plan, std::span<const double>(make_table<double>(plan)), w,
                              types.int32_sums, out, threads);
    else if (guard)
      run_plan_on_cpu<float, true>(plan, std::span<const float>(make_table<float>(plan)), w,
                                   types.int32_sums, out, threads);
    else
      run_plan_on_cpu<float, false>(plan, std::span<const float>(make_table<float>(plan)), w,
                                    types.int32_sums, out, threads);
  };
  if (types.int16_samples)
    run(make_windows<std::int16_t>(plan, rf));
  else
    run(make_windows<std::int32_t>(plan, rf));
}

}  // namespace gpu

/// How far an image is from a reference: fraction of pixels that differ at all, relative L2
/// error ||a - ref|| / ||ref|| (0 when both are zero) and the largest absolute difference.
struct ImageDiff {
  double fraction_differing = 0.0;
  double relative_l2 = 0.0;
  double max_abs = 0.0;
  std::size_t differing = 0;
};
inline ImageDiff compare_images(std::span<const double> image, std::span<const double> reference) {
  if (image.size() != reference.size()) throw Error("compare_images: the images differ in size");
  ImageDiff d;
  double err2 = 0.0, ref2 = 0.0;
  for (std::size_t p = 0; p < image.size(); ++p) {
    const double e = image[p] - reference[p];
    if (image[p] != reference[p]) ++d.differing;
    err2 += e * e;
    ref2 += reference[p] * reference[p];
    d.max_abs = std::max(d.max_abs, std::abs(e));
  }
  d.fraction_differing = image.empty() ? 0.0 : double(d.differing) / double(image.size());
  d.relative_l2 = ref2 > 0.0 ? std::sqrt(err2 / ref2) : (err2 > 0.0 ? INFINITY : 0.0);
  return d;
}

/// One frame's stages on the GPU in milliseconds, from CUDA events on its slot's stream: start
/// to H2D done, to kernel done (the making of the frame's windows too, a few MB written), to D2H
/// done. With frames of other slots in flight these spans
/// also hold waiting for the copy engine and sharing the GPU with them: in-flight times, not the
/// stages' own cost (a frame beamformed alone measures that).
struct GpuTiming {
  double h2d_ms = 0.0, kernel_ms = 0.0, d2h_ms = 0.0;
};

/// The seed beamformer on the current CUDA device. Construction uploads the distance table once
/// and allocates every device and pinned buffer for `streams` frames in flight; frames then cost
/// only their copies and the kernel. Throws CudaUnavailable when CUDA cannot be used (built
/// without CUDA, no driver or device, out of memory) and usrecon::Error naming the CUDA call on
/// any other CUDA failure.
class SeedCudaBeamformer {
 public:
  /// `split`: the kernel's work split (one of gpu::work_splits(); the image is the same for
  /// every one, only the speed differs).
  SeedCudaBeamformer(const Problem& problem, const Window& window,
                     Precision precision = Precision::Double, int streams = 2,
                     const gpu::WorkSplit& split = {});
  ~SeedCudaBeamformer();
  SeedCudaBeamformer(SeedCudaBeamformer&&) noexcept;
  SeedCudaBeamformer& operator=(SeedCudaBeamformer&&) noexcept;

  /// One frame, synchronously: rf[k * samples + s] (any host memory) -> out[jj * ni + ir].
  GpuTiming beamform(std::span<const std::int32_t> rf, std::span<double> out);

  /// Asynchronous use, one frame per slot in [0, streams()): enqueue copies rf to the device,
  /// runs the kernel and copies the image back into the slot's pinned output, all on the slot's
  /// stream, and returns at once. rf must stay valid and unchanged until finish(slot); when it is
  /// pinned (kernels::PinnedBuffer) the copy is truly asynchronous. A slot must be finished
  /// before it is enqueued again.
  void enqueue(int slot, std::span<const std::int32_t> rf);
  /// Waits for the slot's frame; the image lives in pinned memory until the slot's next enqueue.
  std::span<const double> finish(int slot, GpuTiming* timing = nullptr);
  bool pending(int slot) const;

  int streams() const;
  const gpu::Plan& plan() const;
  Precision precision() const;
  /// The device's name, e.g. "NVIDIA H200".
  const std::string& device_name() const;
  /// The kernel's launch in waves: its blocks over the blocks the device holds at once (CUDA's
  /// occupancy calculator, int16 samples and int32 sums). Just above a whole number, the last wave leaves most of
  /// the device idle.
  double waves() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace usrecon::recon::seed
