// Runs CUDA block programs on the host, so the CPU suite checks what the GPU kernels run: one
// std::thread per CUDA thread of a block, a barrier for __syncthreads, and a per-warp exchange for
// __shfl_down_sync. Blocks run one after another, so each block's shared memory is the caller's.
// A barrier that not every thread reaches (a __syncthreads in divergent code) aborts with a
// message after 60 s instead of hanging. Under ThreadSanitizer (tools/tsan.sh) a missing barrier
// shows as a data race on the shared memory.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "usrecon/kernels/block_reduce.hpp"
#include "usrecon/kernels/gemm_tiled.hpp"
#include "usrecon/kernels/random.hpp"

namespace usrecon::kernels::testing {

/// A reusable barrier for `count` threads that aborts when it is not completed within 60 s.
class TimedBarrier {
 public:
  explicit TimedBarrier(int count) : count_(count) {}
  void arrive_and_wait() {
    std::unique_lock lock(mutex_);
    const std::uint64_t generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      done_.notify_all();
      return;
    }
    if (!done_.wait_for(lock, std::chrono::seconds(60), [&] { return generation_ != generation; })) {
      std::fprintf(stderr, "block emulator: %d of %d threads reached a barrier within 60 s "
                           "(a barrier in divergent code?)\n", arrived_, count_);
      std::abort();
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  int count_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
};

/// State one block's threads share.
class EmulatedBlock {
 public:
  static constexpr int kWarp = 32;
  explicit EmulatedBlock(int threads) : block_barrier_(threads), lanes_(std::size_t(threads)) {
    if (threads % kWarp != 0) {
      std::fprintf(stderr, "block emulator: %d threads is not whole warps\n", threads);
      std::abort();
    }
    for (int w = 0; w < threads / kWarp; ++w)
      warp_barriers_.push_back(std::make_unique<TimedBarrier>(kWarp));
  }

 private:
  friend class EmulatedThread;
  TimedBarrier block_barrier_;
  std::vector<std::unique_ptr<TimedBarrier>> warp_barriers_;
  struct Slot {
    alignas(8) unsigned char bytes[8];
  };
  std::vector<Slot> lanes_;  // shfl_down's exchange: one 8-byte slot a thread (wider types go word by word)
};

/// What thread `tid`'s program gets for the block intrinsics: sync(), shfl_down(v, offset) and
/// atomic_add(target, v), as cuda::DeviceBlock gives them on the device.
class EmulatedThread {
 public:
  EmulatedThread(EmulatedBlock& block, int tid) : block_(&block), tid_(tid) {}
  void sync() const { block_->block_barrier_.arrive_and_wait(); }
  template <class R>
  void atomic_add(R* target, R v) const {
    std::atomic_ref<R>(*target).fetch_add(v);
  }

  /// The value of lane + offset of this warp (this thread's own past the warp's end). Every lane
  /// of the warp must call it, as with __shfl_down_sync(0xffffffff, …).
  /// A type __shfl_down_sync does not take (Int128) goes as its 8-byte words, by the function
  /// DeviceBlock uses (exchange_by_words).
  template <class R>
  R shfl_down(R v, int offset) const {
    if constexpr (std::is_arithmetic_v<R>) return exchange(v, offset);
    else return exchange_by_words(v, [&](unsigned long long w) { return exchange(w, offset); });
  }

 private:
  template <class R>
  R exchange(R v, int offset) const {
    static_assert(std::is_trivially_copyable_v<R> && sizeof(R) <= sizeof(EmulatedBlock::Slot));
    const int lane = tid_ % EmulatedBlock::kWarp;
    TimedBarrier& warp = *block_->warp_barriers_[std::size_t(tid_ / EmulatedBlock::kWarp)];
    std::memcpy(block_->lanes_[std::size_t(tid_)].bytes, &v, sizeof v);
    warp.arrive_and_wait();  // every lane has written
    R out = v;
    if (lane + offset < EmulatedBlock::kWarp)
      std::memcpy(&out, block_->lanes_[std::size_t(tid_ + offset)].bytes, sizeof out);
    warp.arrive_and_wait();  // every lane has read before the next exchange writes
    return out;
  }

  EmulatedBlock* block_;
  int tid_;
};

/// Runs program(tid, thread) for tid in [0, threads) on that many std::threads, and waits.
template <class Program>
void run_block(int threads, Program&& program) {
  EmulatedBlock block(threads);
  std::vector<std::jthread> pool;
  pool.reserve(std::size_t(threads));
  for (int tid = 0; tid < threads; ++tid)
    pool.emplace_back([&block, &program, tid] { program(tid, EmulatedThread(block, tid)); });
}

/// The tiled GEMM kernel's grid on the host: c[z] = a[z] · b[z] for z < batch (strides in
/// elements, 0 repeats one matrix), every block through gemm::Tiling::block_program. k >= 1.
template <class T>
void emulate_gemm_tiled(const T* a, const T* b, T* c, int batch, int m, int n, int k,
                        std::int64_t stride_a, std::int64_t stride_b, std::int64_t stride_c) {
  using Tiling = gemm::TilingFor<T>;
  const int row_tiles = (m + Tiling::kRows - 1) / Tiling::kRows;
  const int col_tiles = (n + Tiling::kCols - 1) / Tiling::kCols;
  for (int z = 0; z < batch; ++z) {
    const gemm::Operands<T> op{a + z * stride_a, b + z * stride_b, c + z * stride_c, m, n, k};
    for (int row_tile = 0; row_tile < row_tiles; ++row_tile)
      for (int col_tile = 0; col_tile < col_tiles; ++col_tile) {
        struct Shared {
          alignas(16) typename Tiling::SharedA a_t;  // aligned as on the device
          alignas(16) typename Tiling::SharedB b;
        };
        const auto shared = std::make_unique<Shared>();  // 8 KiB, on the heap
        run_block(Tiling::kThreads, [&](int tid, const EmulatedThread& thread) {
          Tiling::block_program(op, row_tile, col_tile, tid, shared->a_t, shared->b, thread);
        });
      }
  }
}

/// A reduction's two kernels (block_reduce::Sum<R>, Min<R> or Max<R>) on the host with `blocks`
/// blocks in pass 1 (the GPU uses block_reduce::blocks_for(n); any count >= 1 is a valid program).
/// n >= 1.
template <class Op, class T, class R>
R emulate_reduce(const T* x, std::int64_t n, int blocks) {
  namespace br = block_reduce;
  std::vector<R> partials(static_cast<std::size_t>(blocks));
  for (int b = 0; b < blocks; ++b) {
    R warp_results[br::kThreads / br::kWarp];
    run_block(br::kThreads, [&](int tid, const EmulatedThread& thread) {
      br::partials_program(x, n, partials.data(), b, blocks, tid, warp_results, thread, Op{});
    });
  }
  R out{};
  R warp_results[br::kThreads / br::kWarp];
  run_block(br::kThreads, [&](int tid, const EmulatedThread& thread) {
    br::final_program(partials.data(), blocks, &out, tid, warp_results, thread, Op{});
  });
  return out;
}

/// What emulate_reduce computes, as a plain loop (no threads: the emulator starts 256 threads a
/// block, about 50 ms for two blocks, and the GPU tests' sizes would take hours): each thread's
/// grid-stride Op::Accumulator (partials_program's unrolled loads fold in the same order), then
/// block_reduce::tree lane by lane: each warp shuffled down (a lane past the warp's end keeps its
/// own value), lane 0 of each warp into warp 0, the rest of warp 0 the identity, warp 0 shuffled
/// down. The CPU suite checks that it equals emulate_reduce bit for bit.
template <class Op, class R>
R model_tree(const std::array<R, block_reduce::kThreads>& values) {
  namespace br = block_reduce;
  const auto shuffle_down = [](R* lanes) {
    for (int offset = br::kWarp / 2; offset > 0; offset /= 2) {
      R next[br::kWarp];  // every lane reads before any writes, as a shuffle does
      for (int l = 0; l < br::kWarp; ++l) next[l] = Op::combine(lanes[l], lanes[l + offset < br::kWarp ? l + offset : l]);
      std::copy(next, next + br::kWarp, lanes);
    }
  };
  std::array<R, br::kThreads> v = values;
  for (int w = 0; w < br::kThreads / br::kWarp; ++w) shuffle_down(v.data() + w * br::kWarp);
  R warp0[br::kWarp];
  for (int l = 0; l < br::kWarp; ++l) warp0[l] = l < br::kThreads / br::kWarp ? v[std::size_t(l * br::kWarp)] : Op::identity();
  shuffle_down(warp0);
  return warp0[0];
}

template <class Op, class T, class R>
R model_reduce(const T* x, std::int64_t n, int blocks) {
  namespace br = block_reduce;
  std::vector<R> partials(static_cast<std::size_t>(blocks));
  const std::int64_t step = std::int64_t(blocks) * br::kThreads;
  std::array<R, br::kThreads> v;
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < br::kThreads; ++t) {
      typename Op::Accumulator acc;
      for (std::int64_t i = std::int64_t(b) * br::kThreads + t; i < n; i += step) acc.add(static_cast<R>(x[i]));
      v[std::size_t(t)] = acc.value();
    }
    partials[std::size_t(b)] = model_tree<Op>(v);
  }
  for (int t = 0; t < br::kThreads; ++t) {
    typename Op::Accumulator acc;
    for (int i = t; i < blocks; i += br::kThreads) acc.add(partials[std::size_t(i)]);
    v[std::size_t(t)] = acc.value();
  }
  return model_tree<Op>(v);
}

/// The strided lines' kernels (reduce_columns, then fold_column_chunks where the grid has more
/// than one chunk) on the host, for each of the reductions Ops... into its output out[outer *
/// inner]: Op along the middle axis of x as [outer][length][inner], inner >= 1, on `grid`
/// (block_reduce::columns_grid's, or any grid whose chunks cover the length). The reductions
/// run one after another in each emulated block (its 256 threads are started once for all).
template <class... Ops, class T, class... R>
void emulate_columns(const T* x, std::int64_t outer, std::int64_t length, std::int64_t inner,
                     const block_reduce::ColumnsGrid& grid, R*... outs) {
  static_assert(sizeof...(Ops) == sizeof...(R), "an output for each reduction");
  namespace br = block_reduce;
  const std::int64_t lines = outer * inner;
  const auto partial_size = static_cast<std::size_t>(grid.chunks > 1 ? grid.chunks * lines : 0);
  std::tuple<std::vector<R>...> partials{std::vector<R>(partial_size)...};
  if (grid.line_per_thread) {  // a thread a line: no block to emulate
    for (std::int64_t line = 0; line < lines; ++line)
      ((outs[line] = br::column_line<T, R>(x, length, inner, line, Ops{})), ...);
    return;
  }
  const auto run = [&]<std::size_t... I>(std::index_sequence<I...>) {
    for (std::int64_t tile = 0; tile < grid.tiles; ++tile)
      for (std::int64_t chunk = 0; chunk < grid.chunks; ++chunk) {
        std::tuple<std::array<R, br::kThreads>...> shared;  // each reduction's own
        run_block(br::kThreads, [&](int tid, const EmulatedThread& thread) {
          (br::columns_program(x, length, inner, lines, grid, tile, chunk,
                               grid.chunks == 1 ? outs : std::get<I>(partials).data(), tid,
                               std::get<I>(shared).data(), thread, Ops{}),
           ...);
        });
      }
    if (grid.chunks > 1)
      for (std::int64_t line = 0; line < lines; ++line)
        ((outs[line] = br::columns_final(std::get<I>(partials).data(), grid.chunks, lines, line, Ops{})), ...);
  };
  run(std::index_sequence_for<Ops...>{});
}

/// The same on block_reduce::columns_grid's grid, the GPU's.
template <class... Ops, class T, class... R>
void emulate_columns(const T* x, std::int64_t outer, std::int64_t length, std::int64_t inner, R*... outs) {
  emulate_columns<Ops...>(x, outer, length, inner, block_reduce::columns_grid(outer, length, inner), outs...);
}

/// What the strided lines' kernels compute, written as a plain loop (no threads: fast enough for
/// the GPU tests' large shapes): for each line (a grid with line_per_thread: its rows in order),
/// each chunk's warps fold their rows (warp w: rows
/// w, w + kRowsAtOnce, ... of the chunk) by Op::Accumulator, the warps' results are combined in
/// warp order, the chunks' folded by Op::Accumulator. The CPU suite checks that it equals
/// emulate_columns bit for bit.
template <class Op, class T, class R>
void model_columns(const T* x, std::int64_t outer, std::int64_t length, std::int64_t inner, R* out,
                   const block_reduce::ColumnsGrid& grid) {
  namespace br = block_reduce;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < inner; ++j) {
      if (grid.line_per_thread) {  // the rows in order
        typename Op::Accumulator rows;
        for (std::int64_t k = 0; k < length; ++k) rows.add(static_cast<R>(x[(o * length + k) * inner + j]));
        out[o * inner + j] = rows.value();
        continue;
      }
      typename Op::Accumulator chunks;
      for (std::int64_t c = 0; c < grid.chunks; ++c) {
        const std::int64_t first = c * grid.chunk_rows, end = std::min(length, first + grid.chunk_rows);
        R warps{};
        for (int w = 0; w < br::kRowsAtOnce; ++w) {
          typename Op::Accumulator rows;
          for (std::int64_t k = first + w; k < end; k += br::kRowsAtOnce)
            rows.add(static_cast<R>(x[(o * length + k) * inner + j]));
          warps = w == 0 ? rows.value() : Op::combine(warps, rows.value());
        }
        if (grid.chunks == 1) {
          out[o * inner + j] = warps;  // no second pass
        } else {
          chunks.add(warps);
        }
      }
      if (grid.chunks > 1) out[o * inner + j] = chunks.value();
    }
}

template <class Op, class T, class R>
void model_columns(const T* x, std::int64_t outer, std::int64_t length, std::int64_t inner, R* out) {
  model_columns<Op>(x, outer, length, inner, out, block_reduce::columns_grid(outer, length, inner));
}

/// sum()'s two kernels on the host.
template <class T, class R>
R emulate_sum(const T* x, std::int64_t n, int blocks) {
  return emulate_reduce<block_reduce::Sum<R>, T, R>(x, n, blocks);
}
/// The same by model_reduce.
template <class T, class R>
R model_sum(const T* x, std::int64_t n, int blocks) {
  return model_reduce<block_reduce::Sum<R>, T, R>(x, n, blocks);
}

/// The Monte-Carlo kernel's grid on the host: `blocks` blocks of `threads`, every thread through
/// monte_carlo_block_program. The count of the first n samples for `seed`.
inline std::uint64_t emulate_monte_carlo_count(std::uint64_t n, std::uint64_t seed, unsigned blocks,
                                               int threads) {
  unsigned long long inside = 0;
  for (unsigned b = 0; b < blocks; ++b)
    run_block(threads, [&](int tid, const EmulatedThread& thread) {
      monte_carlo_block_program(n, seed, b, blocks, threads, tid, &inside, thread);
    });
  return inside;
}

}  // namespace usrecon::kernels::testing
