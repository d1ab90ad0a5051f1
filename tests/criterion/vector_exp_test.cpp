#include "criterion/vector_exp.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

using namespace sprintrt::criterion;

namespace {

/// The error of `got` against std::exp(x): in ulps of the exact result when
/// that is normal, in units of 2^-1074 (the smallest subnormal) below.
double error_units(double x, double got) {
  const double expected = std::exp(x);
  if (expected >= std::numeric_limits<double>::min())
    return std::abs(got - expected) / (std::nextafter(expected, 2.0) - expected);
  return std::abs(got - expected) / std::numeric_limits<double>::denorm_min();
}

} // namespace

TEST_CASE("exp_nonpositive is within an ulp or two of std::exp over its whole range") {
  std::mt19937_64 rng{1};
  std::uniform_real_distribution<double> wide{-750.0, 0.0};
  std::uniform_real_distribution<double> narrow{-2.0, 0.0};
  std::uniform_real_distribution<double> subnormal{-745.2, -708.0};
  // An odd length: the vector loop's tail too.
  std::vector<double> x(300001);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = i % 3 == 0 ? wide(rng) : i % 3 == 1 ? narrow(rng) : subnormal(rng);
  std::vector<double> y(x.size());
  exp_nonpositive(x.data(), y.data(), x.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, error_units(x[i], y[i]));
  CHECK(worst <= 2.0);
}

TEST_CASE("exp_nonpositive's special and boundary values") {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x = {0.0,    -0.0,   -inf,    -1e300, -746.0, -745.1,
                                 -745.0, -708.4, -1e-300, -0.5,   -1.0};
  std::vector<double> y(x.size(), 7.0);
  exp_nonpositive(x.data(), y.data(), x.size());
  CHECK(y[0] == 1.0);
  CHECK(y[1] == 1.0);
  CHECK(y[2] == 0.0);
  CHECK(y[3] == 0.0);
  CHECK(y[4] == 0.0);
  for (size_t i = 5; i < x.size(); ++i) {
    INFO("x = " << x[i]);
    CHECK(error_units(x[i], y[i]) <= 2.0);
  }
  CHECK(y[5] == std::numeric_limits<double>::denorm_min()); // exp(-745.1) rounds up to it
  // Nothing beyond n is touched.
  std::vector<double> short_out(3, 7.0);
  exp_nonpositive(x.data(), short_out.data(), 2);
  CHECK(short_out[2] == 7.0);
  exp_nonpositive(x.data(), short_out.data(), 0);
}
