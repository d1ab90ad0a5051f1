#pragma once

/// @file
/// Losses are computed in double and handed to trainers as float32.

#include <cfloat>
#include <cmath>

namespace sprintrt {

/// Returns `loss` as the float32 a result holds: beyond float range is
/// +-inf (converting such a double directly would be undefined behaviour),
/// +inf (a segment Sprint skipped) stays +inf.
inline float to_float_loss(double loss) noexcept {
  if (loss > FLT_MAX)
    return INFINITY;
  if (loss < -FLT_MAX)
    return -INFINITY;
  return static_cast<float>(loss);
}

} // namespace sprintrt
