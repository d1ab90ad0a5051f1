#include "criterion/vector_exp.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "criterion/avx2_clones.hpp"

namespace sprintrt::criterion {

// exp(x) = 2^n exp(r) with n = round(x / ln 2) and r = x - n ln 2, |r| <= ln 2 / 2
// (Cody and Waite: ln 2 in two parts, the first with trailing zero bits so
// that n * ln2_hi is exact for |n| < 2^11, from fdlibm). exp(r) is its Taylor
// polynomial of degree 13, whose truncation error r^14 / 14! < 4e-18 is far
// below half an ulp; its evaluation adds about an ulp of rounding.
//
// n is taken from the bits of x / ln 2 + 1.5 * 2^52, which rounds to an
// integer in the last place: the double's mantissa then holds n. 2^n is
// built as 2^n1 * 2^n2 with n1 = ceil(n / 2), n2 = floor(n / 2), both normal
// for the n >= -1077 that x >= -746 gives: p * 2^n1 is exact, and the second
// product rounds once, also into the subnormal range. Arguments below -746
// (including -inf) are clamped to it; exp(-746) rounds to 0. Everything is
// integer and floating-point arithmetic without branches, so the loop
// vectorizes: 64-bit adds and logical shifts exist in SSE2, only the
// arithmetic right shift does not, hence ceil(n / 2) as -((-n) >> 1).
SPRINTRT_AVX2_CLONES
void exp_nonpositive(const double* __restrict x, double* __restrict out, size_t n) noexcept {
  constexpr double log2e = 1.44269504088896338700e+00;
  constexpr double shifter = 0x1.8p52;
  constexpr double ln2_hi = 6.93147180369123816490e-01;
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  constexpr double lowest = -746.0;
  int64_t shifter_bits = 0;
  std::memcpy(&shifter_bits, &shifter, sizeof shifter);
  // 1/k! for k = 13 down to 2.
  constexpr double c13 = 1.0 / 6227020800.0;
  constexpr double c12 = 1.0 / 479001600.0;
  constexpr double c11 = 1.0 / 39916800.0;
  constexpr double c10 = 1.0 / 3628800.0;
  constexpr double c9 = 1.0 / 362880.0;
  constexpr double c8 = 1.0 / 40320.0;
  constexpr double c7 = 1.0 / 5040.0;
  constexpr double c6 = 1.0 / 720.0;
  constexpr double c5 = 1.0 / 120.0;
  constexpr double c4 = 1.0 / 24.0;
  constexpr double c3 = 1.0 / 6.0;
  constexpr double c2 = 0.5;
  for (size_t i = 0; i < n; ++i) {
    const double v = std::max(x[i], lowest);
    const double shifted = v * log2e + shifter;
    const double k = shifted - shifter;
    const double r = (v - k * ln2_hi) - k * ln2_lo;
    // exp(r) = 1 + (r + r^2 T(r)), T(r) = sum_{k=2..13} r^(k-2) / k! by
    // Estrin's scheme (a dependency chain of 4 multiply-adds instead of
    // Horner's 12); adding the small terms first and 1 last keeps the
    // rounding error at about an ulp.
    const double r2 = r * r;
    const double r4 = r2 * r2;
    const double r8 = r4 * r4;
    const double t01 = c2 + c3 * r;
    const double t23 = c4 + c5 * r;
    const double t45 = c6 + c7 * r;
    const double t67 = c8 + c9 * r;
    const double t89 = c10 + c11 * r;
    const double t1011 = c12 + c13 * r;
    const double tail = (t01 + t23 * r2) + (t45 + t67 * r2) * r4 + (t89 + t1011 * r2) * r8;
    const double p = 1.0 + (r + r2 * tail);
    int64_t bits = 0;
    std::memcpy(&bits, &shifted, sizeof bits);
    const int64_t exponent = bits - shifter_bits; // n, in [-1077, 0]
    const int64_t half_up = -static_cast<int64_t>(static_cast<uint64_t>(-exponent) >> 1);
    const int64_t half_down = exponent - half_up;
    const int64_t scale1_bits = (half_up + 1023) << 52;
    const int64_t scale2_bits = (half_down + 1023) << 52;
    double scale1 = 0;
    double scale2 = 0;
    std::memcpy(&scale1, &scale1_bits, sizeof scale1);
    std::memcpy(&scale2, &scale2_bits, sizeof scale2);
    out[i] = p * scale1 * scale2;
  }
}

} // namespace sprintrt::criterion
