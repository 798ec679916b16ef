// matmul(): shape checks, backend dispatch, and the CPU algorithms (naive reference, blocked with
// threads and ISA dispatch, OpenBLAS).
#include "usrecon/kernels/matmul.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>

#include "../internal/cuda_entry.hpp"
#include "../internal/gemm_cpu.hpp"
#include "usrecon/kernels/parallel.hpp"

#if defined(USRECON_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace usrecon::kernels {

bool have_cpu_blas() noexcept {
#if defined(USRECON_HAVE_OPENBLAS)
  return true;
#else
  return false;
#endif
}

namespace detail {
namespace {

struct Mat {
  std::int64_t batch, rows, cols;
  bool batched;
};

Mat as_matrix(const Shape& s, const char* which) {
  if (s.ndim() == 2) return {1, s[0], s[1], false};
  if (s.ndim() == 3) return {s[0], s[1], s[2], true};
  throw Error(std::string("matmul: ") + which + " must be 2-D (rows, cols) or 3-D (batch, rows, "
              "cols), got shape " + s.to_string());
}

struct Plan {
  GemmShape g;
  Shape c;
};

Plan plan(const Shape& a, const Shape& b) {
  const Mat A = as_matrix(a, "a"), B = as_matrix(b, "b");
  if (A.cols != B.rows)
    throw Error("matmul: inner dimensions differ: a is " + a.to_string() + ", b is " +
                b.to_string() + " (" + std::to_string(A.cols) + " != " + std::to_string(B.rows) +
                ")");
  if (A.batch != B.batch && A.batch != 1 && B.batch != 1)
    throw Error("matmul: batch sizes differ: a is " + a.to_string() + ", b is " + b.to_string());
  // A batch of 1 (or a 2-D operand) broadcasts against the other's, 0 included: (0, m, k) @ (k, n)
  // is (0, m, n), as NumPy has it.
  const std::int64_t batch = A.batch == 1 ? B.batch : A.batch;
  Plan p;
  p.g = {batch, A.rows, B.cols, A.cols, A.batch == 1 ? 0 : A.rows * A.cols,
         B.batch == 1 ? 0 : B.rows * B.cols, A.rows * B.cols};
  p.c = (A.batched || B.batched) ? Shape{batch, A.rows, B.cols} : Shape{A.rows, B.cols};
  return p;
}

template <class T>
void cpu_naive(const T* a, const T* b, T* c, const GemmShape& g, int threads) {
  const auto rows = static_cast<std::size_t>(g.batch * g.m);
  const std::size_t grain = std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, g.n * g.k));
  parallel_for(rows, grain, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const std::int64_t bi = static_cast<std::int64_t>(r) / g.m, i = static_cast<std::int64_t>(r) % g.m;
      const T* ar = a + bi * g.stride_a + i * g.k;
      const T* bm = b + bi * g.stride_b;
      T* cr = c + bi * g.stride_c + i * g.n;
      std::fill(cr, cr + g.n, T(0));
      for (std::int64_t p = 0; p < g.k; ++p) {  // c[i][j] accumulates k in ascending order
        const T aip = ar[p];
        const T* br = bm + p * g.n;
        for (std::int64_t j = 0; j < g.n; ++j) cr[j] += aip * br[j];
      }
    }
  });
}

template <class T>
using TileFn = void (*)(const GemmTile<T>&);

template <class T>
TileFn<T> select_tile_fn() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f")) return [](const GemmTile<T>& t) { gemm_tile_avx512(t); };
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return [](const GemmTile<T>& t) { gemm_tile_avx2(t); };
#endif
  return [](const GemmTile<T>& t) { gemm_tile_generic(t); };
}

template <class T>
void cpu_tiled(const T* a, const T* b, T* c, const GemmShape& g, int threads) {
  static const TileFn<T> tile = select_tile_fn<T>();
  const std::int64_t nthreads = threads > 0 ? threads : hardware_threads();
  // Tasks: (batch entry, column panel, row group). Each packs its own panels; row groups are only
  // split when there are too few tasks for the threads, and stay >= 48 rows so packing B stays
  // cheap relative to the work.
  constexpr std::int64_t panel = 2048;
  const std::int64_t col_blocks = std::max<std::int64_t>(1, (g.n + panel - 1) / panel);
  const std::int64_t base = g.batch * col_blocks;
  std::int64_t groups = std::max<std::int64_t>(1, (2 * nthreads + base - 1) / base);
  groups = std::clamp<std::int64_t>(groups, 1, std::max<std::int64_t>(1, g.m / 48));
  std::int64_t rows = (g.m + groups - 1) / groups;
  rows = (rows + 11) / 12 * 12;
  groups = std::max<std::int64_t>(1, (g.m + rows - 1) / rows);
  const auto tasks = static_cast<std::size_t>(base * groups);
  const double flops = 2.0 * static_cast<double>(g.batch * g.m) * static_cast<double>(g.n * g.k);
  parallel_for(tasks, 1, flops < 2e6 ? 1 : static_cast<int>(nthreads),
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t t = begin; t < end; ++t) {
                   const std::int64_t ti = static_cast<std::int64_t>(t);
                   const std::int64_t bi = ti / (col_blocks * groups);
                   const std::int64_t cb = ti / groups % col_blocks, rg = ti % groups;
                   GemmTile<T> tl{a + bi * g.stride_a, b + bi * g.stride_b, c + bi * g.stride_c,
                                  g.k, g.k, g.n, g.n,
                                  rg * rows, std::min(g.m, (rg + 1) * rows),
                                  cb * panel, std::min(g.n, (cb + 1) * panel)};
                   tile(tl);
                 }
               });
}

// OpenBLAS takes m, n, k and the leading dimensions as blasint (32 bits in Debian's build).
bool fits_blas(const GemmShape& g) {
#if defined(USRECON_HAVE_OPENBLAS)
  constexpr std::int64_t most = std::numeric_limits<blasint>::max();
  return g.m <= most && g.n <= most && g.k <= most;
#else
  (void)g;
  return false;
#endif
}

template <class T>
void cpu_blas(const T* a, const T* b, T* c, const GemmShape& g, int threads) {
#if defined(USRECON_HAVE_OPENBLAS)
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    std::fill(c, c + g.batch * g.stride_c, T(0));
    return;
  }
  if (!fits_blas(g))
    throw Error("matmul: MatmulAlgo::blas takes dimensions up to " +
                std::to_string(std::numeric_limits<blasint>::max()) + " (OpenBLAS's int); use tiled");
  // OpenBLAS's thread count is the process's: set, used and put back under one lock, so that
  // concurrent calls (which then run one after another) cannot leave another's count behind.
  static std::mutex blas_threads;
  const std::lock_guard lock(blas_threads);
  const int previous = openblas_get_num_threads();
  openblas_set_num_threads(threads > 0 ? threads : hardware_threads());
  for (std::int64_t bi = 0; bi < g.batch; ++bi) {
    const T* ab = a + bi * g.stride_a;
    const T* bb = b + bi * g.stride_b;
    T* cb = c + bi * g.stride_c;
    const auto m = static_cast<blasint>(g.m), n = static_cast<blasint>(g.n),
               k = static_cast<blasint>(g.k);
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, ab, k, bb, n, 0.0f, cb, n);
    else
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, ab, k, bb, n, 0.0, cb, n);
  }
  openblas_set_num_threads(previous);
#else
  (void)a, (void)b, (void)c, (void)g, (void)threads;
  throw Error("matmul: MatmulAlgo::blas on the CPU needs OpenBLAS, and usrecon was built without it");
#endif
}

}  // namespace

Shape matmul_shape(const Shape& a, const Shape& b) { return plan(a, b).c; }

template <class T>
void matmul(const In<T>& a, const In<T>& b, const Out<T>& c, MatmulAlgo algo, const Exec& exec) {
  if (algo != MatmulAlgo::naive && algo != MatmulAlgo::tiled && algo != MatmulAlgo::blas &&
      algo != MatmulAlgo::automatic)
    throw Error("matmul: unknown MatmulAlgo " + std::to_string(static_cast<int>(algo)));
  if (a.location == Location::scalar || b.location == Location::scalar)
    throw Error("matmul: operands must be arrays, not scalars");
  const Plan p = plan(a.shape, b.shape);
  if (!(c.shape == p.c))
    throw Error("matmul: output has shape " + c.shape.to_string() + ", expected " +
                p.c.to_string() + " for a " + a.shape.to_string() + " and b " +
                b.shape.to_string());
  const bool device = c.location == Location::device;
  if ((a.location == Location::device) != device || (b.location == Location::device) != device)
    throw Error("matmul: host and device arrays mixed in one call");
  if (p.g.batch * p.g.m * p.g.n == 0) return;
  // The algorithms read a and b while they write c (row by row, or through restrict pointers):
  // an output over an operand would read what it has already written.
  const auto overlaps_c = [&](const In<T>& in) { return overlaps(c.data, c.shape.size(), in.data, in.shape.size()); };
  if (overlaps_c(a) || overlaps_c(b))
    throw Error("matmul: the output overlaps an operand; write the product to an array of its own");
  if (device) {
    cuda_gemm<T>(a.data, b.data, c.data, p.g, algo, exec.stream);
    return;
  }
  switch (algo) {
    case MatmulAlgo::naive:
      return cpu_naive(a.data, b.data, c.data, p.g, exec.threads);
    case MatmulAlgo::tiled:
      return cpu_tiled(a.data, b.data, c.data, p.g, exec.threads);
    case MatmulAlgo::blas:
      return cpu_blas(a.data, b.data, c.data, p.g, exec.threads);
    case MatmulAlgo::automatic:
      if (have_cpu_blas() && fits_blas(p.g)) return cpu_blas(a.data, b.data, c.data, p.g, exec.threads);
      return cpu_tiled(a.data, b.data, c.data, p.g, exec.threads);
  }
}

template void matmul<float>(const In<float>&, const In<float>&, const Out<float>&, MatmulAlgo,
                            const Exec&);
template void matmul<double>(const In<double>&, const In<double>&, const Out<double>&, MatmulAlgo,
                             const Exec&);

}  // namespace detail
}  // namespace usrecon::kernels
