// The tutorial's ufunc section: np.add on (4,), a scalar, and (4, 4) with broadcasting, then the
// same through @vectorize-style ufuncs (add_ten, add_ufunc).
//   example_ufunc_broadcast [--cuda]
#include "example_common.hpp"

namespace uk = usrecon::kernels;

struct AddTen {
  template <class T>
  USRECON_HD T operator()(T num) const {
    return num + T(10);
  }
};
constexpr uk::Ufunc<AddTen, 1> add_ten{"add_ten"};

static void print_matrix(const char* label, const uk::HostArray<std::int64_t>& m) {
  std::printf("%s", label);
  const std::int64_t rows = m.shape()[0], cols = m.shape()[1];
  for (std::int64_t i = 0; i < rows; ++i) {
    std::printf("%s[", i == 0 ? "[" : " ");
    for (std::int64_t j = 0; j < cols; ++j) std::printf(j ? " %2lld" : "%2lld", (long long)m.at({i, j}));
    std::printf("]%s\n", i + 1 == rows ? "]" : "");
  }
}

int main(int argc, char** argv) {
  const bool cuda = example::want_cuda(argc, argv);
  using A = uk::HostArray<std::int64_t>;
  const A a(uk::Shape{4}, std::vector<std::int64_t>{1, 2, 3, 4});
  const A b(uk::Shape{4}, std::vector<std::int64_t>{10, 20, 30, 40});
  A c(uk::Shape{4, 4});
  for (std::int64_t i = 0; i < 16; ++i) c[i] = i;
  auto add = [&](const A& x, const auto& y) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(y)>>)
      return cuda ? uk::add(uk::to_device(x), y).copy_to_host() : uk::add(x, y);
    else
      return cuda ? uk::add(uk::to_device(x), uk::to_device(y)).copy_to_host() : uk::add(x, y);
  };
  std::printf("a: ");
  example::print_array(a);
  std::printf("b: ");
  example::print_array(b);
  std::printf("a+b: ");
  example::print_array(add(a, b));
  std::printf("a+100: ");
  example::print_array(add(a, std::int64_t{100}));
  print_matrix("c:\n", c);
  const A ac = add(a, c);
  print_matrix("a+c: ", ac);

  A nums(uk::Shape{10});
  for (std::int64_t i = 0; i < 10; ++i) nums[i] = i;
  std::printf("add_ten(nums): ");
  example::print_array(add_ten(nums));  // a user ufunc: CPU here (it is not instantiated for CUDA)
  return ac.at({3, 3}) == 19 ? 0 : 1;
}
