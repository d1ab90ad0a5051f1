#pragma once

/// @file
/// The dense product of the scaled forward-backward: a block of vectors
/// [rows, n] times an n x n matrix (or its transpose), all column-major, on
/// the widest vector units the CPU has. Eigen's product, compiled once for
/// the baseline and once for AVX2 with FMA (dense_product_avx2.cpp), chosen
/// at run time: a wheel built on one x86-64 runs on any other.

#include <cstddef>

namespace sprintrt::criterion {

/// out = in * matrix (`transpose`: in * matrix^T), with `in` and `out`
/// [rows, n] and `matrix` [n, n], column-major and not overlapping. The same
/// bits for the same inputs on one machine.
void dense_product(const double* in, std::ptrdiff_t rows, const double* matrix, std::ptrdiff_t n,
                   bool transpose, double* out);

/// Returns which code `dense_product` runs: "avx2+fma" or "baseline".
const char* dense_product_target() noexcept;

} // namespace sprintrt::criterion
