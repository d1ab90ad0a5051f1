// dense_product for AVX2 and FMA: compiled with -mavx2 -mfma (see
// criterion/CMakeLists.txt) and called only where the CPU has both.
//
// Eigen's templates instantiated here are compiled for AVX2; the same
// instantiations elsewhere are not. Both are inline functions with the same
// names, so the linker would keep one copy of each for the whole library,
// possibly this one for a caller on a CPU without AVX2. Renaming Eigen's
// namespace in this file alone gives its instantiations names of their own.
// Nothing of Eigen crosses this file's interface: raw pointers only.
#define Eigen sprintrt_eigen_avx2
#include <Eigen/Core>

#include <cstddef>

namespace sprintrt::criterion {

#include "criterion/dense_product_eigen.inc"

void dense_product_avx2(const double* in, std::ptrdiff_t rows, const double* matrix,
                        std::ptrdiff_t n, bool transpose, double* out) {
  eigen_dense_product(in, rows, matrix, n, transpose, out);
}

} // namespace sprintrt::criterion
