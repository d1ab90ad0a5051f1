#include "criterion/random_posteriors.hpp"

#include <algorithm>
#include <cmath>

namespace sprintrt::criterion {

void store_log_softmax(const double* logits, size_t dim, float* out) {
  // Shifted by the maximum: exp cannot overflow, and the largest term is 1.
  const double max = *std::max_element(logits, logits + dim);
  double sum = 0;
  for (size_t d = 0; d < dim; ++d)
    sum += std::exp(logits[d] - max);
  const double log_z = max + std::log(sum);
  for (size_t d = 0; d < dim; ++d)
    out[d] = static_cast<float>(logits[d] - log_z);
}

void fill_random_log_posteriors(float* data, size_t rows, size_t dim, uint64_t seed, double scale) {
  std::mt19937_64 gen{seed};
  fill_random_log_posteriors(data, rows, dim, gen, scale);
}

std::vector<float> random_log_posteriors(size_t rows, size_t dim, uint64_t seed, double scale) {
  std::vector<float> values(rows * dim);
  fill_random_log_posteriors(values.data(), rows, dim, seed, scale);
  return values;
}

} // namespace sprintrt::criterion
