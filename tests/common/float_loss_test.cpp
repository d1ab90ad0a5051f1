#include "common/float_loss.hpp"

#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>

TEST_CASE("losses become float32, saturating to +-inf beyond float range") {
  CHECK(sprintrt::to_float_loss(1.5) == 1.5f);
  CHECK(sprintrt::to_float_loss(0.1) == 0.1f);
  CHECK(sprintrt::to_float_loss(static_cast<double>(FLT_MAX)) == FLT_MAX);
  CHECK(sprintrt::to_float_loss(1e39) == INFINITY);
  CHECK(sprintrt::to_float_loss(-1e39) == -INFINITY);
  CHECK(sprintrt::to_float_loss(INFINITY) == INFINITY);
}
