#include "criterion/random_posteriors.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

using sprintrt::criterion::fill_random_log_posteriors;
using sprintrt::criterion::random_log_posteriors;

TEST_CASE("random log-posteriors are normalised rows", "[random_posteriors]") {
  const size_t rows = 50;
  const size_t dim = 7;
  const auto lp = random_log_posteriors(rows, dim, 3);
  REQUIRE(lp.size() == rows * dim);
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (size_t d = 0; d < dim; ++d) {
      const float x = lp[r * dim + d];
      CHECK(std::isfinite(x));
      CHECK(x <= 0.0f);
      sum += std::exp(static_cast<double>(x));
    }
    CHECK(sum == Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("random log-posteriors repeat for a seed and differ between seeds",
          "[random_posteriors]") {
  CHECK(random_log_posteriors(4, 5, 11) == random_log_posteriors(4, 5, 11));
  CHECK(random_log_posteriors(4, 5, 11) != random_log_posteriors(4, 5, 12));
}

TEST_CASE("random log-posteriors draw on from a caller's generator", "[random_posteriors]") {
  // Two calls on one generator go on where the first stopped: the second
  // batch is not the first again, and the sequence repeats for an equal seed.
  auto two_calls = [](unsigned seed) {
    std::mt19937 gen{seed};
    std::vector<float> first(4 * 3);
    std::vector<float> second(4 * 3);
    fill_random_log_posteriors(first.data(), 4, 3, gen);
    fill_random_log_posteriors(second.data(), 4, 3, gen);
    return std::pair{first, second};
  };
  const auto [first, second] = two_calls(9);
  CHECK(first != second);
  CHECK(two_calls(9) == std::pair{first, second});
}

TEST_CASE("the scale sets how peaked the rows are", "[random_posteriors]") {
  // Wider logits put more mass on each row's best class.
  auto mean_max = [](double scale) {
    const size_t rows = 400;
    const size_t dim = 10;
    std::vector<float> lp(rows * dim);
    fill_random_log_posteriors(lp.data(), rows, dim, uint64_t{5}, scale);
    double total = 0;
    for (size_t r = 0; r < rows; ++r) {
      float best = lp[r * dim];
      for (size_t d = 1; d < dim; ++d)
        best = std::max(best, lp[r * dim + d]);
      total += std::exp(static_cast<double>(best));
    }
    return total / rows;
  };
  CHECK(mean_max(0.1) < 0.2);
  CHECK(mean_max(4.0) > 0.6);
}
