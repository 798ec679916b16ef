// The consumer's own BLAS (Fortran ddot) next to usrecon's matmul through its OpenBLAS; exits
// non-zero on a mismatch.
#include <cstdio>

#include "usrecon/kernels/kernels.hpp"

extern "C" double ddot_(const int* n, const double* x, const int* incx, const double* y,
                        const int* incy);

int main() {
  namespace uk = usrecon::kernels;
  const double x[3] = {1, 2, 3};
  const int n = 3;
  const int one = 1;
  const double dot = ddot_(&n, x, &one, x, &one);
  const uk::HostArray<double> a(uk::Shape{2, 2}, 3.0);
  const uk::MatmulAlgo algo = uk::have_cpu_blas() ? uk::MatmulAlgo::blas : uk::MatmulAlgo::tiled;
  const uk::HostArray<double> m = uk::matmul(a, a, algo);
  std::printf("ddot %g, matmul[0] %g (cpu blas %d)\n", dot, m[0], uk::have_cpu_blas());
  return dot == 14.0 && m[0] == 18.0 ? 0 : 1;
}
