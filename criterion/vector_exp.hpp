#pragma once

/// @file
/// exp for arrays of non-positive doubles, in straight-line code the compiler
/// vectorizes (two lanes on the SSE2 baseline): the scaled full-sum's
/// posterior and weight factors exp(y - max), which glibc computes one call at
/// a time. Accuracy: within 2 ulp of exp for normal results (the tests pin
/// it against std::exp), and within 2^-1074 for results below the normal
/// range; 0 for arguments below about -745.2 and for -inf. A pure function:
/// safe to call from any thread.

#include <cstddef>

namespace sprintrt::criterion {

/// out[i] = exp(x[i]) for i < n. Every x[i] must be <= 0 or -inf (not NaN);
/// `x` and `out` must not overlap (in place, the loop would not vectorize).
void exp_nonpositive(const double* x, double* out, size_t n) noexcept;

} // namespace sprintrt::criterion
