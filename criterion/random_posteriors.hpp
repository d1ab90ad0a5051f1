#pragma once

/// @file
/// Random normalised log-posteriors: every row is the log_softmax of normally
/// distributed logits, so that it is a valid input to a Sprint criterion
/// (finite, each row's exp summing to 1). The one generator of the tests and
/// the benchmarks: seeded, so that a run can be repeated bit for bit.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace sprintrt::criterion {

/// Writes log_softmax(`logits`) ([`dim`] values, computed in double) to
/// `out` as float.
void store_log_softmax(const double* logits, size_t dim, float* out);

/// Fills `rows` rows of `dim` floats at `data` (contiguous) with log_softmax
/// of logits drawn from N(0, `scale`) by `gen`, row after row.
template <class Generator>
void fill_random_log_posteriors(float* data, size_t rows, size_t dim, Generator& gen,
                                double scale = 2.0) {
  std::normal_distribution<double> logit{0.0, scale};
  std::vector<double> row(dim);
  for (size_t r = 0; r < rows; ++r) {
    for (auto& x : row)
      x = logit(gen);
    store_log_softmax(row.data(), dim, data + r * dim);
  }
}

/// The same from a std::mt19937_64 seeded with `seed`.
void fill_random_log_posteriors(float* data, size_t rows, size_t dim, uint64_t seed,
                                double scale = 2.0);

/// Returns `rows` x `dim` random log-posteriors (row-major) from `seed`.
std::vector<float> random_log_posteriors(size_t rows, size_t dim, uint64_t seed,
                                         double scale = 2.0);

} // namespace sprintrt::criterion
