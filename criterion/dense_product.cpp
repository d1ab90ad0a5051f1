#include "criterion/dense_product.hpp"

#include <Eigen/Core>

namespace sprintrt::criterion {

#include "criterion/dense_product_eigen.inc"

#ifdef SPRINTRT_DENSE_PRODUCT_AVX2
// dense_product_avx2.cpp: the same product compiled for AVX2 and FMA.
void dense_product_avx2(const double* in, std::ptrdiff_t rows, const double* matrix,
                        std::ptrdiff_t n, bool transpose, double* out);
#endif

namespace {

bool use_avx2() noexcept {
#ifdef SPRINTRT_DENSE_PRODUCT_AVX2
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported;
#else
  return false;
#endif
}

} // namespace

void dense_product(const double* in, std::ptrdiff_t rows, const double* matrix, std::ptrdiff_t n,
                   bool transpose, double* out) {
#ifdef SPRINTRT_DENSE_PRODUCT_AVX2
  if (use_avx2()) {
    dense_product_avx2(in, rows, matrix, n, transpose, out);
    return;
  }
#endif
  eigen_dense_product(in, rows, matrix, n, transpose, out);
}

const char* dense_product_target() noexcept {
  return use_avx2() ? "avx2+fma" : "baseline";
}

} // namespace sprintrt::criterion
